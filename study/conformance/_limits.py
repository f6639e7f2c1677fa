"""One-sided limits at a kink, from an op's own float64 forward: no autodiff anywhere."""
import math
from dataclasses import dataclass
from typing import Callable

import numpy as np

from study.compare.stats import Estimate

FORWARD_ULPS = 4  # an op's float64 forward is taken to be within this many ulps of f
SLOPE_STEP = 2.0 ** -17  # h, for the value and slope limits (times the kink's scale)
CURVATURE_STEP = 2.0 ** -10  # H, for the sign of f'' on each side (times the kink's scale)

Forward = Callable[..., np.ndarray]  # float64 arrays, one per operand, to a float64 array


@dataclass(frozen=True)
class KinkShape:
    """What f looks like on either side of a point, measured off the point itself.

    `normal` points from the left side to the right side (for one variable: (1.0,), so left is
    x < k). Gradients are tuples with one Estimate per operand; `curvature_*` holds the sign
    (-1, 0, +1) of the second difference along each direction probed on that side."""
    point: tuple[float, ...]
    normal: tuple[float, ...]
    value: float  # f at the point itself
    value_left: Estimate
    value_right: Estimate
    gradient_left: tuple[Estimate, ...]
    gradient_right: tuple[Estimate, ...]
    curvature_left: tuple[int, ...]
    curvature_right: tuple[int, ...]

    @property
    def defined(self) -> bool:
        return all(math.isfinite(p) for p in self.point) and math.isfinite(self.value)

    @property
    def jump_height(self) -> float:
        """0 where f is continuous at the point; else |f(k+) − f(k−)| where the sides differ
        beyond their error bounds, or f(k)'s distance to the nearer side where it is off both."""
        sides = [v for v in (self.value_left, self.value_right) if not math.isnan(v.value)]
        at_point = Estimate(self.value, self.value, self.value)
        heights = [abs(sides[0].value - sides[1].value)] if len(sides) == 2 and differ(
            *sides) else []
        if sides and all(differ(at_point, v) for v in sides):
            heights.append(min(abs(self.value - v.value) for v in sides))
        return max(heights, default=0.0)

    @property
    def jump(self) -> bool:
        """f(k−) ≠ f(k+), or f(k) off both: f is not continuous, so not locally Lipschitz."""
        return self.jump_height > 0

    @property
    def slope_left(self) -> Estimate:
        """f'(k−) along the normal: for one variable, the left derivative."""
        return along(self.gradient_left, self.normal)

    @property
    def slope_right(self) -> Estimate:
        return along(self.gradient_right, self.normal)


def error_of(e: Estimate) -> float:
    return 0.0 if math.isinf(e.value) else e.hi - e.value


def differ(a: Estimate, b: Estimate) -> bool:
    """Whether two limits differ by more than their error bounds allow."""
    if math.isinf(a.value) or math.isinf(b.value):
        return a.value != b.value
    return abs(a.value - b.value) > error_of(a) + error_of(b)


def along(gradient: tuple[Estimate, ...], direction: tuple[float, ...]) -> Estimate:
    value = sum(g.value * d for g, d in zip(gradient, direction))
    error = sum(error_of(g) * abs(d) for g, d in zip(gradient, direction))
    return bounded(value, error)


def bounded(value: float, error: float) -> Estimate:
    value, error = float(value), float(error)
    return Estimate(value, value - error, value + error)


def kink_shape(forward: Forward, point, normal=None) -> KinkShape:
    """The one-sided limits of f and of its gradient at `point`, and the sign of f'' on each side.

        >>> s = kink_shape(lambda x: np.maximum(x, 0.0), 0.0)
        >>> s.slope_left.value, s.slope_right.value, s.jump
        (0.0, 1.0, False)

    Method: a second-order one-sided stencil that never evaluates f at the point. Along a
    direction v into one side, with step h (2**-17 times the power of two at or above
    max(1, |k|): k ± j h is then exact for kinks such as 0, ±0.5, ±3, 6, 20), the quadratic
    through f(k + j h v), j = 1, 2, 3, is extrapolated to k:

        f(k±)         ≈ 3 f1 − 3 f2 + f3                 (error O(h³))
        d/dv f (k±)   ≈ (−5 f1 + 8 f2 − 3 f3) / (2 h)     (error O(h²))

    Each limit's error bound is the change from step 2h to h (about three times the error at h
    for an O(h²) stencil), stretched by the geometric tail 2r/(1 − r) where successive changes
    (4h to 2h, 2h to h) shrink only by a ratio r > 1/3, as for sqrt's value near 0, plus
    rounding: the stencil's |coefficients| times 4 ulps of the largest f it read. A limit whose
    changes grow, beyond rounding, while |estimate| grows as h shrinks diverges: it is ±inf.
    One whose changes neither shrink nor diverge raises ValueError (another kink within 12 h).
    The sign of f'' on a side ("near k": within 3 H) is that of the second difference
    f1 − 2 f2 + f3 at step H = 2**-10 (same scale), 0 where it is within rounding.

    At h = 2**-17 a smooth op of large curvature (softplus with beta = 100: f''(0) = 25) shows
    one-sided slopes 3e-10 apart with bounds of 1e-9, so no false kink; a jump in value stays
    a jump at any step.

    For several operands (a tie such as maximum(x, y) at x == y) `normal` is the kink's
    normal; the gradient on each side is solved from directional slopes along s·n and
    s·n + t_j, with t_j an orthonormal basis of the kink's tangent space.
    """
    point = tuple(float(p) for p in np.atleast_1d(point))
    normal = _unit(normal if normal is not None else (1.0,) * len(point))
    scale = 2.0 ** math.ceil(math.log2(max([1.0] + [abs(p) for p in point if math.isfinite(p)])))
    at = np.array(point)
    value = float(_evaluate(forward, at[None, :])[0])
    sides = [_side(forward, at, normal, sign, scale) for sign in (-1.0, 1.0)]
    (value_left, gradient_left, curvature_left), (value_right, gradient_right,
                                                  curvature_right) = sides
    return KinkShape(point, tuple(normal), value, value_left, value_right, gradient_left,
                     gradient_right, curvature_left, curvature_right)


def _exactly(value: float) -> Estimate:
    return Estimate(float(value), float(value), float(value))


def _unit(v) -> np.ndarray:
    v = np.asarray(v, np.float64)
    return v / np.linalg.norm(v)


def _evaluate(forward: Forward, points: np.ndarray) -> np.ndarray:
    with np.errstate(invalid="ignore", divide="ignore"):
        out = np.asarray(forward(*(points[:, i].copy() for i in range(points.shape[1]))))
    if out.dtype != np.float64:
        raise TypeError(f"the forward must compute in float64, not {out.dtype}")
    return out.reshape(points.shape[0])


def _side(forward, at, normal, sign, scale):
    tangents = np.linalg.svd(normal[None, :])[2][1:]  # orthonormal basis of the kink's plane
    directions = np.vstack([sign * normal, sign * normal + tangents])
    values, slopes, curvatures = zip(*(_along(forward, at, d, scale) for d in directions))
    if any(math.isnan(s.value) for s in slopes):
        gradient = tuple(_exactly(math.nan) for _ in at)
    elif any(math.isinf(s.value) for s in slopes):
        if len(at) > 1:
            raise ValueError("an infinite one-sided slope is resolved for one operand only")
        gradient = (_exactly(slopes[0].value * directions[0][0]),)  # d/du / (±1)
    else:
        inverse = np.linalg.inv(directions)  # directions @ gradient = slopes
        gradient = tuple(bounded(float(g), float(e)) for g, e in zip(
            inverse @ [s.value for s in slopes], np.abs(inverse) @ [error_of(s) for s in slopes]))
    return values[0], gradient, tuple(curvatures)


def _along(forward, at, direction, scale):
    # value limit, slope limit and curvature sign of u -> f(at + u·direction) as u -> 0+
    h = SLOPE_STEP * scale
    steps = np.array([h, 2 * h, 4 * h, CURVATURE_STEP * scale])
    u = (steps[:, None] * np.arange(1, 4)[None, :]).ravel()
    f = _evaluate(forward, at[None, :] + u[:, None] * direction[None, :]).reshape(4, 3)
    if np.isnan(f[:3]).any():
        return _exactly(math.nan), _exactly(math.nan), 0
    rounding = FORWARD_ULPS * np.finfo(np.float64).eps * np.abs(f).max(axis=1)
    value = f[:, 0] * 3 - f[:, 1] * 3 + f[:, 2]
    slope = (-5 * f[:, 0] + 8 * f[:, 1] - 3 * f[:, 2]) / (2 * steps)
    second = (f[3, 0] - 2 * f[3, 1] + f[3, 2]) / steps[3] ** 2
    curvature = 0 if abs(second) <= 4 * rounding[3] / steps[3] ** 2 else int(np.sign(second))
    return (_limit(value[:3], 7 * rounding[:3]), _limit(slope[:3], 8 * rounding[:3] / steps[:3]),
            curvature)


def _limit(estimates: np.ndarray, rounding: np.ndarray) -> Estimate:
    finer, coarser = abs(estimates[0] - estimates[1]), abs(estimates[1] - estimates[2])
    if finer > coarser and finer > rounding[0] + rounding[1] and (
            abs(estimates[0]) > abs(estimates[1]) > abs(estimates[2])):
        return _exactly(math.copysign(math.inf, estimates[0]))
    ratio = finer / coarser if coarser > rounding[1] + rounding[2] else 0.0
    if ratio >= 1:
        raise ValueError(f"a one-sided limit does not converge: {estimates.tolist()} at steps "
                         "h, 2h, 4h (another kink within 12 h?)")
    return bounded(float(estimates[0]), finer * max(1.0, 2 * ratio / (1 - ratio)) + rounding[0])

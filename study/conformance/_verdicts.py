"""The two verdicts on a measured derivative at a kink: PyTorch's documented rule, and Clarke's."""
import math
from dataclasses import dataclass
from enum import Enum

import numpy as np

from study.conformance._limits import Forward, KinkShape, bounded, differ, error_of, kink_shape
from study.compare.stats import Estimate

# the unit roundoff of each dtype a measured derivative may come in
UNIT_ROUNDOFF = {"float16": 2.0 ** -11, "bfloat16": 2.0 ** -8, "float32": 2.0 ** -24,
                 "float64": 2.0 ** -53}

Gradient = tuple[Estimate, ...]


class DocumentedRule(str, Enum):
    """PyTorch's rules for non-differentiable points, in the notes' order."""
    DIFFERENTIABLE = "differentiable"
    CONVEX = "locally convex"
    CONCAVE = "locally concave"
    CONTINUITY = "by continuity"
    UNDEFINED = "undefined input"


@dataclass(frozen=True)
class DocumentedVerdict:
    """Which rule applies, the gradients it allows (none listed under UNDEFINED: anything
    goes), and whether the measured gradient is one of them."""
    rule: DocumentedRule
    allowed: tuple[Gradient, ...]
    measured: tuple[float, ...]
    follows: bool


class ClarkeStatus(str, Enum):
    MINIMUM_NORM = "minimum-norm element"
    INSIDE = "inside"
    OUTSIDE = "outside"
    UNDEFINED = "undefined"


@dataclass(frozen=True)
class ClarkeVerdict:
    """The Clarke subdifferential at the point: the segment between the one-sided gradients
    (for one variable the interval [min, max] of f'(k−) and f'(k+)), its minimum-norm element,
    and where the measured gradient lies. `ends` and `minimum_norm` are None where the
    subdifferential is undefined, and `why` says why."""
    ends: tuple[Gradient, Gradient] | None
    minimum_norm: Gradient | None
    measured: tuple[float, ...]
    status: ClarkeStatus
    why: str | None = None


@dataclass(frozen=True)
class Judgement:
    shape: KinkShape
    documented: DocumentedVerdict
    clarke: ClarkeVerdict


@dataclass(frozen=True)
class TieJudgement:
    """A binary op at a tie, judged over both operands jointly and over one operand alone."""
    joint: Judgement
    alone: Judgement
    operand: int  # which operand `alone` varies; the others are held at the tie


def documented_verdict(shape: KinkShape, measured, dtype: str = "float64") -> DocumentedVerdict:
    """Judge a measured gradient by PyTorch's documented rules, applied in the notes' order.

        >>> s = kink_shape(lambda x: np.abs(x), 0.0)
        >>> v = documented_verdict(s, 0.0)
        >>> v.rule.value, v.follows
        ('locally convex', True)

    A measured value matches an allowed one when they differ by at most the allowed value's
    error bound plus two units of roundoff of `dtype` (its rounding to that dtype, and one
    more in computing it); ±inf matches only itself. A jump in value no larger than an ulp of
    f(k) in `dtype` counts as none there (it rounds away).
    """
    measured = _vector(measured)
    if not shape.defined:
        return DocumentedVerdict(DocumentedRule.UNDEFINED, (), measured, True)
    rule, allowed = _documented_rule(shape, dtype)
    return DocumentedVerdict(rule, allowed, measured,
                             any(_matches(measured, a, dtype) for a in allowed))


def clarke_verdict(shape: KinkShape, measured, dtype: str = "float64") -> ClarkeVerdict:
    """Where a measured gradient lies in the Clarke subdifferential: the convex hull of the
    one-sided gradients, which for a continuous piecewise-smooth f is the segment between them.

        >>> s = kink_shape(lambda x: np.maximum(x, 0.0), 0.0)
        >>> clarke_verdict(s, 0.5).status.value
        'inside'
    """
    measured = _vector(measured)
    why = _not_locally_lipschitz(shape, dtype)
    if why:
        return ClarkeVerdict(None, None, measured, ClarkeStatus.UNDEFINED, why)
    left, right = shape.gradient_left, shape.gradient_right
    if len(left) == 1 and left[0].value > right[0].value:
        left, right = right, left
    least = minimum_norm(left, right)
    if _matches(measured, least, dtype):
        status = ClarkeStatus.MINIMUM_NORM
    elif _on_segment(measured, left, right, dtype):
        status = ClarkeStatus.INSIDE
    else:
        status = ClarkeStatus.OUTSIDE
    return ClarkeVerdict((left, right), least, measured, status)


def judge(forward: Forward, kink: float, measured, dtype: str = "float64") -> Judgement:
    """Both verdicts on one op of one variable at one kink."""
    shape = kink_shape(forward, kink)
    return Judgement(shape, documented_verdict(shape, measured, dtype),
                     clarke_verdict(shape, measured, dtype))


def judge_tie(forward: Forward, point, normal, measured, dtype: str = "float64",
              operand: int = 0) -> TieJudgement:
    """Both verdicts jointly over the operands that tie at `point` (the kink's `normal` given),
    and over `operand` alone with the others held at the tie.

        >>> t = judge_tie(np.maximum, (1.0, 1.0), (1.0, -1.0), (0.5, 0.5))
        >>> t.joint.clarke.status.value, t.alone.clarke.status.value
        ('minimum-norm element', 'inside')
    """
    point, measured = tuple(float(p) for p in point), _vector(measured)
    shape = kink_shape(forward, point, normal)
    joint = Judgement(shape, documented_verdict(shape, measured, dtype),
                      clarke_verdict(shape, measured, dtype))

    def alone_forward(x):
        return forward(*(x if i == operand else np.full_like(x, p) for i, p in enumerate(point)))
    return TieJudgement(joint, judge(alone_forward, point[operand], measured[operand], dtype),
                        operand)


def minimum_norm(a: Gradient, b: Gradient) -> Gradient:
    """The element of least Euclidean norm on the segment [a, b], each component's error bound
    the larger of the ends' (the projection moves no more than its ends do)."""
    start, d = np.array([g.value for g in a]), np.array([g.value - h.value for g, h in zip(b, a)])
    t = 0.0 if not d.any() else float(np.clip(-(start @ d) / (d @ d), 0.0, 1.0))
    return tuple(bounded(float(s + t * dd), max(error_of(g), error_of(h)))
                 for s, dd, g, h in zip(start, d, a, b))


def _jumps(shape: KinkShape, dtype: str) -> bool:
    # a jump within an ulp of f(k) in the measured dtype (float64's 2e-9 in F.softplus at its
    # threshold, 20) rounds away in that dtype
    return shape.jump_height > 2 * UNIT_ROUNDOFF[dtype] * abs(shape.value)


def _documented_rule(shape: KinkShape, dtype: str) -> tuple[DocumentedRule, tuple[Gradient, ...]]:
    left, right = shape.gradient_left, shape.gradient_right
    sides = [g for g in (left, right) if not any(math.isnan(c.value) for c in g)]
    smooth_pieces = len(sides) == 2 and not _jumps(shape, dtype) and all(
        math.isfinite(c.value) for c in left + right)
    if smooth_pieces and not any(differ(a, b) for a, b in zip(left, right)):
        return DocumentedRule.DIFFERENTIABLE, (_midpoint(left, right),)
    if smooth_pieces:
        rise = shape.slope_right.value - shape.slope_left.value
        margin = error_of(shape.slope_left) + error_of(shape.slope_right)
        curvatures = shape.curvature_left + shape.curvature_right
        if rise > margin and all(c >= 0 for c in curvatures):
            return DocumentedRule.CONVEX, (minimum_norm(left, right),)
        if rise < -margin and all(c <= 0 for c in curvatures):
            return DocumentedRule.CONCAVE, (minimum_norm(left, right),)
    return DocumentedRule.CONTINUITY, tuple(sides)


def _not_locally_lipschitz(shape: KinkShape, dtype: str) -> str | None:
    if not shape.defined:
        return "undefined input"
    if _jumps(shape, dtype):
        return "a jump in value: not locally Lipschitz"
    ends = shape.gradient_left + shape.gradient_right
    if any(math.isnan(g.value) for g in ends):
        return "undefined on one side"
    if any(math.isinf(g.value) for g in ends):
        return "an infinite one-sided slope: not locally Lipschitz"
    return None


def _midpoint(a: Gradient, b: Gradient) -> Gradient:
    return tuple(bounded((g.value + h.value) / 2, abs(g.value - h.value) / 2
                         + max(error_of(g), error_of(h))) for g, h in zip(a, b))


def _vector(measured) -> tuple[float, ...]:
    return tuple(float(m) for m in np.atleast_1d(measured))


def _tolerance(allowed: Estimate, measured: float, dtype: str) -> float:
    return error_of(allowed) + 2 * UNIT_ROUNDOFF[dtype] * max(abs(allowed.value), abs(measured))


def _matches(measured: tuple[float, ...], allowed: Gradient, dtype: str) -> bool:
    return all(m == a.value if math.isinf(a.value) or math.isinf(m)
               else abs(m - a.value) <= _tolerance(a, m, dtype)
               for m, a in zip(measured, allowed))


def _on_segment(measured: tuple[float, ...], a: Gradient, b: Gradient, dtype: str) -> bool:
    m = np.array(measured)
    start, d = np.array([g.value for g in a]), np.array([h.value - g.value for g, h in zip(a, b)])
    t = 0.0 if not d.any() else float(np.clip((m - start) @ d / (d @ d), 0.0, 1.0))
    nearest = tuple(bounded(float(s + t * dd), max(error_of(g), error_of(h)))
                    for s, dd, g, h in zip(start, d, a, b))
    return _matches(measured, nearest, dtype)

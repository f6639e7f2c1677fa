"""The shape of a built-in of several inputs at a tie, from its own float64 forward: the
gradients of the pieces that meet there, and whether each output is locally convex, concave or
neither. No autodiff anywhere.

    >>> s = tie_shape(lambda rows: rows.max(axis=1, keepdims=True), (0.0, 0.0, -1.0), (0, 1))
    >>> [[round(g.value, 6) for g in piece] for piece in s.pieces[0]], s.convexity
    ([[0.0, 1.0, 0.0], [1.0, 0.0, 0.0]], (1,))

Method. Near a tie of k inputs the op is smooth wherever the tied inputs are distinct, so each
ordering of them is a piece: for each ordering π of the tied inputs (every one for k ≤ 4) the
forward is read at p + h·d_π, where d_π gives the tied inputs the centred ranks of π (k = 3:
−1, 0, 1) and the others 0, and its gradient there is a central difference in each input at
step s (and at 2s: their change, plus rounding, is its error bound). The distinct gradients are
the pieces; Clarke's subdifferential at p is their convex hull (a norm at 0 has infinitely many
pieces: the orderings' gradients, unit vectors whose centroid is 0, span a hull holding its
minimum-norm element, 0). Convexity is read off the forward without the pieces: f is locally
convex where f((a + b)/2) ≤ (f(a) + f(b))/2 for every pair of points a, b of a set around p
(p + h·u for u the cyclic shifts of one ordering's ranks and their reverses, their negatives,
±e_i for each tied input, and 0), within rounding; concave where ≥ holds; else neither. h and s
are 2**-10 and 2**-17 times the point's scale (the power of two at or above max(1, |p|)): the
inputs off the tie sit at least 1 away, so no other piece is reached.
"""
import itertools
import math
from dataclasses import dataclass

import numpy as np

from study.compare.stats import Estimate
from study.conformance._limits import FORWARD_ULPS, Forward, bounded, error_of

PIECE_STEP = 2.0 ** -10  # h, into each piece (times the point's scale)
DIFFERENCE_STEP = 2.0 ** -17  # s, the central difference's step there (times the scale)

Gradient = tuple[Estimate, ...]


@dataclass(frozen=True)
class TieShape:
    """An op of n inputs at a point where the inputs `tied` are equal: per output element (flat),
    the distinct gradients of the pieces meeting there and its convexity (+1 locally convex, −1
    locally concave, 0 neither, or a single piece). Undefined (no pieces) where an input or
    the value is not finite."""
    point: tuple[float, ...]
    tied: tuple[int, ...]
    value: tuple[float, ...]
    pieces: tuple[tuple[Gradient, ...], ...]
    convexity: tuple[int, ...]

    @property
    def defined(self) -> bool:
        return all(math.isfinite(v) for v in self.point + self.value)


def _scale(point: np.ndarray) -> float:
    finite = [abs(p) for p in point if math.isfinite(p)]
    return 2.0 ** math.ceil(math.log2(max([1.0] + finite)))


def _ranks(order: tuple[int, ...], tied: tuple[int, ...], n: int) -> np.ndarray:
    """The direction giving tied[order[r]] the centred rank r (the others 0)."""
    d = np.zeros(n)
    for rank, i in enumerate(order):
        d[tied[i]] = rank - (len(order) - 1) / 2
    return d


def orderings(tied: tuple[int, ...], n: int) -> list[np.ndarray]:
    """One direction into each piece: every ordering of the tied inputs, as centred ranks."""
    return [_ranks(order, tied, n) for order in itertools.permutations(range(len(tied)))]


def _jensen_directions(tied: tuple[int, ...], n: int) -> list[np.ndarray]:
    k = len(tied)
    shifts = [tuple((i + s) % k for i in range(k)) for s in range(k)]
    ranked = [_ranks(o, tied, n) for o in shifts + [o[::-1] for o in shifts]]
    units = [sign * np.eye(n)[i] for i in tied for sign in (1.0, -1.0)]
    return ranked + [-d for d in ranked] + units + [np.zeros(n)]


def _evaluate(forward: Forward, rows: np.ndarray) -> np.ndarray:
    with np.errstate(invalid="ignore", divide="ignore"):
        out = np.asarray(forward(rows), np.float64)
    return out.reshape(len(rows), -1)


def _gradients(forward: Forward, at: np.ndarray, scale: float) -> list[list[Estimate]]:
    """Per point of `at` (rows), per output, the central difference in each input at steps s
    and 2s: the finer as the estimate, their change plus rounding as its error bound."""
    n, s = at.shape[1], DIFFERENCE_STEP * scale
    steps = np.concatenate([sign * step * np.eye(n) for step in (s, 2 * s) for sign in (1, -1)])
    rows = (at[:, None, :] + steps[None, :, :]).reshape(-1, n)
    f = _evaluate(forward, rows).reshape(len(at), 4, n, -1)  # point, step and sign, input, output
    fine = (f[:, 0] - f[:, 1]) / (2 * s)
    coarse = (f[:, 2] - f[:, 3]) / (4 * s)
    rounding = 2 * FORWARD_ULPS * np.finfo(np.float64).eps * np.abs(f).max(axis=1) / s
    error = np.abs(fine - coarse) + rounding
    return [[tuple(bounded(g, e) for g, e in zip(fine[p, :, o], error[p, :, o]))
             for o in range(fine.shape[2])] for p in range(len(at))]


def _distinct(gradients: list[Gradient]) -> tuple[Gradient, ...]:
    out: list[Gradient] = []
    for g in gradients:
        if not any(all(abs(a.value - b.value) <= error_of(a) + error_of(b) + 1e-12
                       for a, b in zip(g, h)) for h in out):
            out.append(g)
    return tuple(out)


def _convexity(forward: Forward, point: np.ndarray, tied, scale: float) -> list[int]:
    """Per output: +1 where the midpoint inequality of a convex function holds on every pair of
    points around the tie, −1 where a concave one's does, 0 where neither (or both) hold."""
    near = point + PIECE_STEP * scale * np.array(_jensen_directions(tied, len(point)))
    pairs = list(itertools.combinations(range(len(near)), 2))
    mids = np.array([(near[a] + near[b]) / 2 for a, b in pairs])
    ends, middle = _evaluate(forward, near), _evaluate(forward, mids)
    average = np.array([(ends[a] + ends[b]) / 2 for a, b in pairs])
    rounding = FORWARD_ULPS * np.finfo(np.float64).eps * np.maximum(
        np.abs(average), np.abs(middle)) + np.finfo(np.float64).tiny
    convex = np.all(middle <= average + rounding, axis=0)
    concave = np.all(middle >= average - rounding, axis=0)
    return [1 if cx and not cc else -1 if cc and not cx else 0 for cx, cc in zip(convex, concave)]


def tie_shape(forward: Forward, point, tied) -> TieShape:
    """The pieces and convexity of each output at `point`, where the inputs `tied` are equal
    (the module's docstring gives the method)."""
    p = np.array(point, np.float64)
    tied = tuple(tied)
    value = tuple(float(v) for v in _evaluate(forward, p[None, :])[0])
    shape = TieShape(tuple(float(v) for v in p), tied, value, (), ())
    if not shape.defined:
        return shape
    scale = _scale(p)
    into = p + PIECE_STEP * scale * np.array(orderings(tied, len(p)))
    per_point = _gradients(forward, into, scale)
    pieces = tuple(_distinct([g[o] for g in per_point]) for o in range(len(value)))
    return TieShape(shape.point, tied, value, pieces,
                    tuple(_convexity(forward, p, tied, scale)))

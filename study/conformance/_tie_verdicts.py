"""The verdicts on a gradient measured at a tie between inputs, from the tie's shape (its
pieces' gradients and its convexity, study.conformance._tie_shape): PyTorch's documented rule,
Clarke's subdifferential (the pieces' convex hull), and the op's own documentation where it
states another convention.

    >>> e0, e1 = (exact(1.0), exact(0.0)), (exact(0.0), exact(1.0))
    >>> v = judge_tie_output((e0, e1), 1, (0.5, 0.5))       # max(x, y) at x = y
    >>> v.rule.value, v.follows, v.clarke.value
    ('locally convex', True, 'minimum-norm element')
    >>> judge_tie_output((e0, e1), 1, (1.0, 0.0), documented=ONE_INPUT).as_documented
    True

PyTorch's rules in order: one piece, its gradient; locally convex or concave, the minimum-norm
element of the hull (for a max or min of k tied inputs, 1/k each; for a norm at 0, 0); neither,
by continuity: one piece's gradient exactly (a limit of the gradient); an undefined input (NaN)
or value, anything. Clarke: the minimum-norm element, inside the hull, or outside it.
"""
import functools
import math
from dataclasses import dataclass, replace

import numpy as np

from study.compare.stats import Estimate
from study.conformance._hull import distance_to_hull, minimum_norm_point
from study.conformance._limits import bounded, error_of
from study.conformance._verdicts import (UNIT_ROUNDOFF, ClarkeStatus, DocumentedRule, Gradient,
                                         _matches, _vector)
from study.measure.rule import EVEN_SPLIT, ONE_INPUT

__all__ = ["EVEN_SPLIT", "ONE_INPUT", "TieVerdict", "allowed_at_tie", "exact",
           "hull_minimum_norm", "judge_tie_output"]


def exact(value: float) -> Estimate:
    return Estimate(float(value), float(value), float(value))


@dataclass(frozen=True)
class TieVerdict:
    """One output element at one tie: the documented rule that applies and the gradients it
    allows, whether the measured gradient is one of them, Clarke's status and the hull's
    minimum-norm element, and whether the measured gradient is what the op's own documentation
    says it gives (None where it says nothing)."""
    rule: DocumentedRule
    allowed: tuple[Gradient, ...]
    measured: tuple[float, ...]
    follows: bool
    clarke: ClarkeStatus
    minimum_norm: Gradient | None
    as_documented: bool | None


@functools.lru_cache(maxsize=None)  # a tie's pieces recur in every dtype, mode and release
def hull_minimum_norm(pieces: tuple[Gradient, ...]) -> Gradient:
    """The minimum-norm element of the pieces' convex hull, each component's error bound the
    largest of the pieces' (the point moves no more than its vertices do)."""
    point, _ = minimum_norm_point(np.array([[g.value for g in p] for p in pieces]))
    errors = [max(error_of(p[i]) for p in pieces) for i in range(len(point))]
    return tuple(bounded(_to_its_error(float(v), e), e) for v, e in zip(point, errors))


def _to_its_error(value: float, error: float) -> float:
    """`value` to the last decimal its error bound leaves it (0.25 for 0.25000000000000017 ±
    1e-13; 0 for a norm's 1e-16 ± 1e-6), and at least to the rounding of the hull's own
    arithmetic (a few ulps): the digits below are that arithmetic's, not the op's."""
    error = max(error, 8 * np.finfo(np.float64).eps * max(1.0, abs(value)))
    if not math.isfinite(error) or not math.isfinite(value):
        return value
    return round(value, max(0, -math.floor(math.log10(error)) - 1)) + 0.0


def _centroid(pieces: tuple[Gradient, ...]) -> Gradient:
    return tuple(bounded(float(np.mean([p[i].value for p in pieces])),
                         max(error_of(p[i]) for p in pieces)) for i in range(len(pieces[0])))


def allowed_at_tie(pieces, convexity: int) -> tuple[DocumentedRule, tuple[Gradient, ...]]:
    """The documented rule that applies at a tie of these pieces and this convexity, and the
    gradients it allows."""
    if len(pieces) == 1:
        return DocumentedRule.DIFFERENTIABLE, pieces
    if convexity:
        return (DocumentedRule.CONVEX if convexity > 0 else DocumentedRule.CONCAVE,
                (hull_minimum_norm(pieces),))
    return DocumentedRule.CONTINUITY, pieces


def _clarke(pieces, least: Gradient, measured: tuple[float, ...], dtype: str) -> ClarkeStatus:
    if _matches(measured, least, dtype):
        return ClarkeStatus.MINIMUM_NORM
    if not np.all(np.isfinite(measured)):
        return ClarkeStatus.OUTSIDE
    slack = max(error_of(g) for p in pieces for g in p) + 2 * UNIT_ROUNDOFF[dtype] * max(
        1.0, float(np.max(np.abs(measured))))
    inside = distance_to_hull(np.array([[g.value for g in p] for p in pieces]),
                              measured) <= slack * np.sqrt(len(measured))
    return ClarkeStatus.INSIDE if inside else ClarkeStatus.OUTSIDE


def judge_tie_output(pieces: tuple[Gradient, ...], convexity: int, measured,
                     dtype: str = "float64", documented: str | None = None,
                     defined: bool = True) -> TieVerdict:
    """Both verdicts on one output element's measured gradient at a tie, and the op's own
    documentation's (`documented`: ONE_INPUT or EVEN_SPLIT, None where it says nothing). A
    measured value matches an allowed one as at a kink (study.conformance.documented_verdict)."""
    measured = _vector(measured)
    # the cache takes -0.0 for 0.0 (equal, one hash): alike to every verdict, but the measured
    # value keeps its own sign
    return replace(_judged(pieces, convexity, measured, dtype, documented, defined),
                   measured=measured)


@functools.lru_cache(maxsize=None)  # one tie's gradient recurs across dtypes, modes and releases
def _judged(pieces: tuple[Gradient, ...], convexity: int, measured: tuple[float, ...],
            dtype: str, documented: str | None, defined: bool) -> TieVerdict:
    if not defined or not pieces:
        return TieVerdict(DocumentedRule.UNDEFINED, (), measured, True, ClarkeStatus.UNDEFINED,
                          None, None)
    rule, allowed = allowed_at_tie(pieces, convexity)
    least = hull_minimum_norm(pieces)
    says = {ONE_INPUT: pieces, EVEN_SPLIT: (_centroid(pieces),)}.get(documented)
    return TieVerdict(rule, allowed, measured, any(_matches(measured, a, dtype) for a in allowed),
                      _clarke(pieces, least, measured, dtype), least,
                      None if says is None else any(_matches(measured, a, dtype) for a in says))

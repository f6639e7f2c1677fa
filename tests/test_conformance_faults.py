"""The verdicts at their edges, on hand-made shapes whose limits are exact: the tests that kill the
mutants of study/conformance/_verdicts.py that tests/test_conformance.py lets live (make
mutation; reports/benchmarks/mutation.json lists what survives and why)."""
import math

import numpy as np
import pytest

from study.compare.stats import Estimate
from study.conformance import (ClarkeStatus, DocumentedRule, KinkShape, clarke_verdict,
                               documented_verdict, judge_tie, kink_shape, minimum_norm)
from study.conformance._verdicts import UNIT_ROUNDOFF

ROOT2 = math.sqrt(0.5)


def exact(v: float) -> Estimate:
    return Estimate(v, v, v)


def within(v: float, error: float) -> Estimate:
    return Estimate(v, v - error, v + error)


def shape(left, right, normal=(1.0,), value=1.0, curvature=0) -> KinkShape:
    """A continuous kink at 0 (every operand) with the one-sided gradients given."""
    n = len(left)
    return KinkShape((0.0,) * n, normal, value, exact(value), exact(value), tuple(left),
                     tuple(right), (curvature,) * n, (curvature,) * n)


def test_each_verdict_carries_the_gradient_it_judged():
    convex = shape([exact(0.0)], [exact(1.0)])
    undefined = KinkShape((math.nan,), (1.0,), math.nan, exact(math.nan), exact(math.nan),
                          (exact(math.nan),), (exact(math.nan),), (0,), (0,))
    for s in (convex, undefined):
        assert documented_verdict(s, 0.25).measured == (0.25,)
        assert clarke_verdict(s, 0.25).measured == (0.25,)


def test_the_clarke_ends_keep_the_sides_order_unless_one_variable_falls():
    # one variable: [min, max] of the slopes (2 then 1 becomes [1, 2]); equal slopes stay as
    # measured, left first (x + 10: their error bounds differ by the rounding of each side)
    falling = clarke_verdict(shape([exact(2.0)], [exact(1.0)]), 1.0)
    assert [e[0].value for e in falling.ends] == [1.0, 2.0]
    flat = kink_shape(lambda x: x + 10.0, 0.0)
    assert clarke_verdict(flat, 1.0).ends == (flat.gradient_left, flat.gradient_right)
    # min(x, y) at a tie: (1, 0) left of the kink, (0, 1) right of it, kept in that order
    tie = shape([exact(1.0), exact(0.0)], [exact(0.0), exact(1.0)], (ROOT2, -ROOT2))
    assert clarke_verdict(tie, (0.5, 0.5)).ends == (tie.gradient_left, tie.gradient_right)


def test_a_tie_is_judged_alone_over_the_first_operand_by_default_and_in_the_dtype_given():
    # max(x, y) + 3y at (1, 1): x alone is max(x, 1) + 3, slopes 0 and 1; y alone would be 3, 4
    t = judge_tie(lambda x, y: np.maximum(x, y) + 3 * y, (1.0, 1.0), (1.0, -1.0), (0.5, 3.5))
    assert t.operand == 0
    assert (t.alone.shape.slope_left.value, t.alone.shape.slope_right.value) == pytest.approx(
        (0.0, 1.0), abs=1e-9)
    # max(x, y) + x: gradient (1, 1) left of the tie and (2, 0) right, least norm (1, 1); x alone
    # has slopes 1 and 2, least 1. Off by 2^-24: within a float32 rounding, not a float64 one
    def f(x, y):
        return np.maximum(x, y) + x
    off = (1.0 + 2.0 ** -24, 1.0)
    for dtype, follows in (("float32", True), ("float64", False)):
        t = judge_tie(f, (1.0, 1.0), (1.0, -1.0), off, dtype)
        assert t.joint.documented.follows is follows, dtype
        assert (t.joint.clarke.status is ClarkeStatus.MINIMUM_NORM) is follows, dtype
        assert t.alone.documented.follows is follows, dtype


def test_the_minimum_norm_element_of_a_point_is_the_point():
    point = (within(0.5, 2.0 ** -30),)
    assert minimum_norm(point, point) == point
    smooth = shape([exact(0.5)], [exact(0.5)])
    assert clarke_verdict(smooth, 0.5).status is ClarkeStatus.MINIMUM_NORM


def test_a_jump_of_more_than_an_ulp_of_the_dtype_counts():
    # f = 1 left of 0 and 1 + 1.25 ulp(1) in float32 right of it: a jump there, not in bfloat16
    jump = 1.25 * 2 * UNIT_ROUNDOFF["float32"]
    s = KinkShape((0.0,), (1.0,), 1.0, exact(1.0), exact(1.0 + jump), (exact(0.0),),
                  (exact(0.0),), (0,), (0,))
    assert clarke_verdict(s, 0.0, "float32").status is ClarkeStatus.UNDEFINED
    assert clarke_verdict(s, 0.0, "bfloat16").status is ClarkeStatus.MINIMUM_NORM


def test_a_measured_value_matches_within_two_units_of_roundoff_and_at_the_bound():
    convex = shape([exact(1.0)], [exact(2.0)])  # allows exactly 1
    u = UNIT_ROUNDOFF["float32"]
    assert documented_verdict(convex, 1.0 + 1.5 * u, "float32").follows
    assert not documented_verdict(convex, 1.0 + 2.5 * u, "float32").follows
    # an allowed 1 with error 0.5 - 2^-7 in bfloat16 (u = 2^-8): the bound is 0.5 exactly
    bound = shape([within(1.0, 0.5 - 2.0 ** -7)], [within(2.0, 0.5 - 2.0 ** -7)])
    assert documented_verdict(bound, 0.5, "bfloat16").follows


def test_a_differentiable_point_allows_the_midpoint_within_half_the_gap_and_the_bounds():
    # slopes 1 and 1 + 2^-20, each within 2^-20: no kink; the allowed value is their midpoint
    # 1 + 2^-21 with error 2^-21 (half the gap) + 2^-20 (the larger bound) = 1.5 * 2^-20
    e = 2.0 ** -20
    s = shape([within(1.0, e)], [within(1.0 + e, e)])
    mid = 1.0 + e / 2
    assert documented_verdict(s, mid).rule is DocumentedRule.DIFFERENTIABLE
    assert documented_verdict(s, mid + 1.4 * e).follows
    assert not documented_verdict(s, mid + 2.5 * e).follows


def test_a_gradient_that_jumps_along_the_kink_only_is_neither_convex_nor_concave():
    # (0, 0) one side, (1, 1) the other, normal (1, -1)/√2: the slope across the kink is 0 on
    # both sides, so no rise beyond the bounds; by continuity, either side
    flat = shape([exact(0.0), exact(0.0)], [exact(1.0), exact(1.0)], (ROOT2, -ROOT2))
    assert documented_verdict(flat, (0.0, 0.0)).rule is DocumentedRule.CONTINUITY
    bounded = shape([exact(0.0), exact(0.0)], [within(1.0, 2.0 ** -20), within(1.0, 2.0 ** -20)],
                    (ROOT2, -ROOT2))
    assert documented_verdict(bounded, (0.0, 0.0)).rule is DocumentedRule.CONTINUITY


@pytest.mark.parametrize("f, point, why", [
    (np.abs, math.nan, "undefined input"),
    (lambda x: np.where(x > 0, 1.0, 0.0), 0.0, "a jump in value: not locally Lipschitz"),
    (np.sqrt, 0.0, "undefined on one side"),
    (lambda x: np.sqrt(np.abs(x)), 0.0, "an infinite one-sided slope: not locally Lipschitz"),
])
def test_clarke_says_why_it_has_no_subdifferential(f, point, why):
    verdict = clarke_verdict(kink_shape(f, point), 0.0)
    assert (verdict.status, verdict.why) == (ClarkeStatus.UNDEFINED, why)

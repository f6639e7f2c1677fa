"""The verdicts of study.conformance on hand-made functions whose one-sided limits are known by
hand, and the history of changed cells on a hand-made table."""
import doctest
import math

import numpy as np
import pandas as pd
import pytest

import study.conformance
from study.conformance import (ClarkeStatus, DocumentedRule, changed_cells, first_releases,
                               judge, judge_tie, kink_shape, minimum_norm)
from study.conformance import _history, _limits, _verdicts
from study.compare.stats import Estimate


def relu(x):
    return np.maximum(x, 0.0)


def curved_left_kink(x):
    # 2(e^x − 1) left of 0, x right of it: f'(0−) = 2 e^0 = 2, f'(0+) = 1, f''(0−) = 2 > 0,
    # f'' = 0 on the right; the slope drops, so neither convex nor concave (as F.selu at 0)
    return np.where(x < 0, 2.0 * np.expm1(np.minimum(x, 0.0)), x)


def softplus100(x):
    # log(1 + e^(100x)) / 100: smooth, f'(0) = sigmoid(0) = 1/2, f''(0) = 100/4 = 25
    return np.logaddexp(0.0, 100.0 * x) / 100.0


def hardshrink_like(x):
    # x where |x| > 0.5, else 0: at 0.5, f(0.5−) = 0 = f(0.5), f(0.5+) = 0.5, a jump
    return np.where(np.abs(x) > 0.5, x, 0.0)


def limits(shape) -> tuple[float, float]:
    return shape.slope_left.value, shape.slope_right.value


def allowed(verdict) -> list[tuple[float, ...]]:
    return [tuple(round(e.value, 8) for e in a) for a in verdict.allowed]


def test_the_examples_in_the_docstrings_hold():
    for module in (study.conformance, _limits, _verdicts, _history):
        assert doctest.testmod(module).failed == 0, module.__name__


@pytest.mark.parametrize("f, slopes", [(np.abs, (-1.0, 1.0)), (relu, (0.0, 1.0))])
def test_a_convex_kink_allows_only_the_minimum_norm_subgradient(f, slopes):
    # |x|: slopes −1 and +1 (of −x and x); relu: 0 and 1; both sides linear, the slope rises,
    # so locally convex: the subdifferential [f'(0−), f'(0+)] contains 0, its least-norm element
    j = judge(f, 0.0, 0.0)
    np.testing.assert_allclose(limits(j.shape), slopes, atol=1e-12)
    assert (j.shape.curvature_left, j.shape.curvature_right, j.shape.jump) == ((0,), (0,), False)
    assert (j.documented.rule, allowed(j.documented), j.documented.follows) == (
        DocumentedRule.CONVEX, [(0.0,)], True)
    assert j.clarke.status is ClarkeStatus.MINIMUM_NORM
    for inside in (0.5, slopes[1]):  # a subgradient, but not the least: breaks the notes only
        j = judge(f, 0.0, inside)
        assert (j.documented.follows, j.clarke.status) == (False, ClarkeStatus.INSIDE)
    assert judge(f, 0.0, 1.5).clarke.status is ClarkeStatus.OUTSIDE


@pytest.mark.parametrize("f, slopes", [(lambda x: -np.abs(x), (1.0, -1.0)),
                                       (lambda x: np.minimum(x, 0.0), (1.0, 0.0))])
def test_a_concave_kink_allows_only_the_minimum_norm_supergradient(f, slopes):
    # −|x|: slopes 1 and −1; min(x, 0): 1 and 0; linear sides, the slope drops: locally
    # concave, and the superdifferential [f'(0+), f'(0−)] contains 0
    j = judge(f, 0.0, 0.0)
    np.testing.assert_allclose(limits(j.shape), slopes, atol=1e-12)
    assert (j.documented.rule, allowed(j.documented), j.documented.follows) == (
        DocumentedRule.CONCAVE, [(0.0,)], True)
    assert j.clarke.status is ClarkeStatus.MINIMUM_NORM
    assert judge(f, 0.0, 1.0).documented.follows is False


def test_a_kink_with_a_curved_side_that_is_neither_allows_either_limit_exactly():
    j = judge(curved_left_kink, 0.0, 2.0)
    np.testing.assert_allclose(limits(j.shape), (2.0, 1.0), rtol=1e-8)
    assert (j.shape.curvature_left, j.shape.curvature_right) == ((1,), (0,))
    assert (j.documented.rule, allowed(j.documented)) == (DocumentedRule.CONTINUITY,
                                                          [(2.0,), (1.0,)])
    # Clarke: [1, 2], whose least-norm element is 1; the notes accept 2 as well
    for measured, follows, status in [(2.0, True, ClarkeStatus.INSIDE),
                                      (1.0, True, ClarkeStatus.MINIMUM_NORM),
                                      (1.5, False, ClarkeStatus.INSIDE),
                                      (0.5, False, ClarkeStatus.OUTSIDE)]:
        j = judge(curved_left_kink, 0.0, measured)
        assert (j.documented.follows, j.clarke.status) == (follows, status), measured
    assert j.clarke.ends[0][0].value == pytest.approx(1.0) == j.clarke.minimum_norm[0].value


def test_a_rising_slope_with_a_side_curving_down_is_not_convex():
    def rising_then_bending(x):  # 0 left of 0, 2x − x² right: slopes 0 then 2, f''(0+) = −2
        return np.where(x > 0, 2.0 * x - x * x, 0.0)
    j = judge(rising_then_bending, 0.0, 2.0)
    np.testing.assert_allclose(limits(j.shape), (0.0, 2.0), atol=1e-8)
    assert (j.shape.curvature_left, j.shape.curvature_right) == ((0,), (-1,))
    assert (j.documented.rule, allowed(j.documented), j.documented.follows) == (
        DocumentedRule.CONTINUITY, [(0.0,), (2.0,)], True)


def test_a_smooth_function_with_large_curvature_shows_no_kink():
    j = judge(softplus100, 0.0, 0.5)
    assert abs(j.shape.slope_left.value - j.shape.slope_right.value) < 1e-8
    assert (j.documented.rule, allowed(j.documented), j.documented.follows) == (
        DocumentedRule.DIFFERENTIABLE, [(0.5,)], True)
    assert judge(softplus100, 0.0, 0.0).documented.follows is False


def test_a_jump_in_value_allows_either_limit_and_has_no_clarke_subdifferential():
    j = judge(hardshrink_like, 0.5, 1.0)
    np.testing.assert_allclose(limits(j.shape), (0.0, 1.0), atol=1e-12)
    assert (j.shape.value_left.value, j.shape.value_right.value) == pytest.approx((0.0, 0.5))
    assert j.shape.jump
    assert (j.documented.rule, allowed(j.documented), j.documented.follows) == (
        DocumentedRule.CONTINUITY, [(0.0,), (1.0,)], True)
    assert (j.clarke.status, j.clarke.minimum_norm) == (ClarkeStatus.UNDEFINED, None)
    assert "not locally Lipschitz" in j.clarke.why


def test_a_jump_smaller_than_an_ulp_of_the_measured_dtype_counts_only_in_float64():
    def softplus_with_threshold(x):  # as F.softplus: log(1 + e^x) up to 20, x beyond
        return np.where(x > 20, x, np.log1p(np.exp(np.minimum(x, 20.0))))
    # at 20 the sides differ by log(1 + e^20) − 20 = log(1 + e^−20) ≈ 2.1e-9: above float64's
    # ulp of 20 (3.6e-15), below float32's (1.9e-6)
    shape = kink_shape(softplus_with_threshold, 20.0)
    assert shape.jump_height == pytest.approx(math.log1p(math.exp(-20.0)), rel=1e-6)
    assert judge(softplus_with_threshold, 20.0, 1.0, "float64").clarke.status is (
        ClarkeStatus.UNDEFINED)
    assert judge(softplus_with_threshold, 20.0, 1.0, "float32").clarke.status is (
        ClarkeStatus.MINIMUM_NORM)


def test_a_value_at_the_kink_off_both_sides_is_a_jump_and_never_leaks_into_the_limits():
    def spiked_abs(x):  # |x|, except f(0) = 1
        return np.where(x == 0, 1.0, np.abs(x))
    shape = kink_shape(spiked_abs, 0.0)
    np.testing.assert_allclose(limits(shape), (-1.0, 1.0), atol=1e-12)
    assert shape.value == 1.0 and shape.jump
    assert not kink_shape(np.abs, 0.0).jump


def test_nan_input_and_input_outside_the_domain_allow_anything():
    # relu(NaN) = NaN and log(−1) = NaN: f is not defined at the point
    for f, point in [(relu, math.nan), (np.log, -1.0)]:
        for measured in (math.nan, 7.0):
            j = judge(f, point, measured)
            assert (j.documented.rule, j.documented.allowed, j.documented.follows) == (
                DocumentedRule.UNDEFINED, (), True)
            assert j.clarke.status is ClarkeStatus.UNDEFINED


def test_sqrt_at_0_is_defined_so_its_gradient_is_the_limit_by_continuity_inf():
    # the notes' own example: sqrt is undefined left of 0, and 1 / (2 sqrt(x)) -> +inf
    j = judge(np.sqrt, 0.0, math.inf)
    assert (j.shape.slope_right.value, j.shape.jump) == (math.inf, False)
    assert math.isnan(j.shape.slope_left.value)
    assert (j.documented.rule, allowed(j.documented), j.documented.follows) == (
        DocumentedRule.CONTINUITY, [(math.inf,)], True)
    assert judge(np.sqrt, 0.0, 1e300).documented.follows is False
    assert judge(np.sqrt, 0.0, math.inf).clarke.status is ClarkeStatus.UNDEFINED


def test_a_measured_value_in_a_lower_precision_may_differ_by_its_rounding():
    def convex_curved(x):  # 0.3(e^x − 1) left, x right: slope rises 0.3 -> 1, f'' >= 0
        return np.where(x < 0, 0.3 * np.expm1(np.minimum(x, 0.0)), x)
    in_float32 = float(np.float32(0.3))  # 0.3 + 1.2e-8
    assert judge(convex_curved, 0.0, in_float32, "float32").documented.follows
    assert not judge(convex_curved, 0.0, in_float32, "float64").documented.follows
    assert judge(convex_curved, 0.0, 0.3).documented.rule is DocumentedRule.CONVEX


def test_maximum_at_a_tie_is_judged_jointly_and_for_x_alone():
    # max(x, y): gradient (0, 1) where x < y and (1, 0) where x > y; the hull is
    # {(t, 1 − t)}, whose least norm t² + (1 − t)² is at t = 1/2; max is convex
    t = judge_tie(np.maximum, (1.0, 1.0), (1.0, -1.0), (0.5, 0.5))
    left, right = t.joint.shape.gradient_left, t.joint.shape.gradient_right
    np.testing.assert_allclose([[g.value for g in left], [g.value for g in right]],
                               [[0.0, 1.0], [1.0, 0.0]], atol=1e-8)
    assert (t.joint.documented.rule, allowed(t.joint.documented), t.joint.documented.follows) == (
        DocumentedRule.CONVEX, [(0.5, 0.5)], True)
    assert t.joint.clarke.status is ClarkeStatus.MINIMUM_NORM
    # x alone: max(x, 1) at 1 has slopes 0 and 1, so the notes allow 0 and 0.5 breaks them
    assert (t.alone.documented.rule, allowed(t.alone.documented)) == (DocumentedRule.CONVEX,
                                                                      [(0.0,)])
    assert (t.alone.documented.follows, t.alone.clarke.status) == (False, ClarkeStatus.INSIDE)
    one_sided = judge_tie(np.maximum, (1.0, 1.0), (1.0, -1.0), (1.0, 0.0))
    assert (one_sided.joint.documented.follows, one_sided.joint.clarke.status) == (
        False, ClarkeStatus.INSIDE)
    assert judge_tie(np.maximum, (1.0, 1.0), (1.0, -1.0), (1.0, 1.0)).joint.clarke.status is (
        ClarkeStatus.OUTSIDE)


def test_clip_at_a_tensor_bound_is_judged_over_x_and_that_bound_with_the_other_held():
    # clip(x, lo, hi) near x == lo < hi is max(x, lo): gradient (0, 1, 0) where x < lo and
    # (1, 0, 0) where x > lo; hi plays no part, so the least-norm element is (0.5, 0.5, 0)
    t = judge_tie(np.clip, (0.0, 0.0, 6.0), (1.0, -1.0, 0.0), (0.5, 0.5, 0.0))
    assert (t.joint.documented.rule, allowed(t.joint.documented), t.joint.documented.follows) == (
        DocumentedRule.CONVEX, [(0.5, 0.5, 0.0)], True)


def test_minimum_at_a_tie_is_concave_with_the_same_minimum_norm_element():
    t = judge_tie(np.minimum, (-2.0, -2.0), (1.0, -1.0), (0.5, 0.5))
    assert (t.joint.documented.rule, allowed(t.joint.documented), t.joint.documented.follows) == (
        DocumentedRule.CONCAVE, [(0.5, 0.5)], True)


def test_the_minimum_norm_element_of_a_segment():
    # [−1, 2] holds 0; [1, 2] is nearest 0 at 1; the segment (2, 0)-(0, 2) at (1, 1)
    def exact(*values):
        return tuple(Estimate(v, v, v) for v in values)
    assert [e.value for e in minimum_norm(exact(-1.0), exact(2.0))] == [0.0]
    assert [e.value for e in minimum_norm(exact(2.0), exact(1.0))] == [1.0]
    assert [e.value for e in minimum_norm(exact(2.0, 0.0), exact(0.0, 2.0))] == [1.0, 1.0]


def atlas(rows: list[tuple]) -> pd.DataFrame:
    return pd.DataFrame(rows, columns=["release", "op", "dtype", "input", "mode", "execution",
                                       "value", "error"])


def test_history_lists_the_cells_that_change_with_releases_in_version_order():
    # rows given out of order; as strings '2.10.0' < '2.9.0', as versions 2.9.0 < 2.10.0
    rows = atlas([
        ("2.14.1", "clamp", "float32", "0", "reverse", "eager", 0.0, None),
        ("2.10.0", "clamp", "float32", "0", "reverse", "eager", 1.0, None),
        ("2.9.0", "clamp", "float32", "0", "reverse", "eager", 1.0, None),
        ("2.9.0", "relu", "float32", "0", "reverse", "eager", 0.0, None),
        ("2.14.1", "relu", "float32", "0", "reverse", "eager", 0.0, None),
        ("2.9.0", "relu", "float32", "nan", "reverse", "eager", math.nan, None),
        ("2.14.1", "relu", "float32", "nan", "reverse", "eager", math.nan, None),
        ("2.9.0", "abs", "float32", "-0", "value", "eager", 0.0, None),
        ("2.14.1", "abs", "float32", "-0", "value", "eager", -0.0, None),
        ("2.9.0", "softplus", "float32", "0", "reverse", "compiled", None,
         "AttributeError: no compile"),
        ("2.10.0", "softplus", "float32", "0", "reverse", "compiled", 0.5, None),
    ])
    changed = changed_cells(rows)
    # relu's two cells keep their value (0, and NaN is NaN); abs changes sign of zero
    assert changed[["op", "release"]].values.tolist() == [
        ["abs", "2.9.0"], ["abs", "2.14.1"], ["clamp", "2.9.0"], ["clamp", "2.10.0"],
        ["clamp", "2.14.1"], ["softplus", "2.9.0"], ["softplus", "2.10.0"]]
    firsts = first_releases(rows)
    clamp = firsts[firsts["op"] == "clamp"]
    assert clamp[["value", "first_release"]].values.tolist() == [[1.0, "2.9.0"], [0.0, "2.14.1"]]
    softplus = firsts[firsts["op"] == "softplus"]
    assert softplus["first_release"].tolist() == ["2.9.0", "2.10.0"]
    assert softplus["error"].iloc[0] == "AttributeError: no compile"
    assert pd.isna(softplus["error"].iloc[1]) and softplus["value"].iloc[1] == 0.5
    assert [math.copysign(1, v) for v in firsts[firsts["op"] == "abs"]["value"]] == [1, -1]


def test_history_refuses_two_rows_of_one_cell_in_one_release():
    rows = atlas([("2.9.0", "relu", "float32", "0", "reverse", "eager", 0.0, None)] * 2)
    with pytest.raises(ValueError, match="several rows"):
        changed_cells(rows)


def test_a_forward_that_does_not_compute_in_float64_is_refused():
    with pytest.raises(TypeError, match="float64"):
        kink_shape(lambda x: np.maximum(x, 0.0).astype(np.float32), 0.0)


@pytest.mark.parametrize("key", ["torch_relu6", "jax_relu6"])
def test_a_registry_rule_is_read_through_its_own_float64_forward(key):
    # relu6 at 6: slopes 1 then 0 on linear sides, so locally concave, least-norm element 0
    from study.conformance import float64_forward
    from study.measure.rules import by_key
    j = judge(float64_forward(by_key(key)), 6.0, 0.0)
    np.testing.assert_allclose(limits(j.shape), (1.0, 0.0), atol=1e-9)
    assert (j.documented.rule, j.documented.follows) == (DocumentedRule.CONCAVE, True)

"""Ties between inputs: the hull's minimum-norm element, the shape of an op at a tie, the
verdicts, and each family of built-ins of several inputs measured at its ties, against
gradients derived by hand (an even split, one index, 0), never from the code under test.

Each family's test also swaps the op for one of the same value whose gradient at the tie is
another (dataclasses.replace on the Rule: its fn), and sees the verdict flip: a conformance
that passed whatever the op did would fail it."""
import itertools
import math
from dataclasses import replace

import numpy as np
import pytest
import torch

from study.conformance import (DocumentedRule, distance_to_hull, judge_tie_output,
                               minimum_norm_point, tie_records, tie_shape)
from study.compare.stats import Estimate
from study.conformance._tie_verdicts import exact
from study.measure.rule import EVEN_SPLIT, ONE_INPUT, TIE_VALUES, InputTie
from study.measure.rules import builtins_of, by_key


def unit(i: int, n: int) -> list[float]:
    return [1.0 if j == i else 0.0 for j in range(n)]


# --- the hull's minimum-norm element -------------------------------------------------------------

@pytest.mark.parametrize("k", [1, 2, 3, 4])
def test_the_hull_of_k_unit_vectors_is_nearest_0_at_the_even_split(k):
    # by hand: the simplex's point of least norm is its centroid, 1/k in each coordinate
    point, weights = minimum_norm_point(np.eye(k))
    assert np.allclose(point, 1 / k, atol=1e-15) and np.allclose(weights, 1 / k, atol=1e-15)


def test_the_nearest_point_of_a_segment_is_an_end_or_the_foot_of_the_perpendicular():
    # by hand: from (1, 1) to (2, 0) the distance grows away from (1, 1); from a = (1, 2) to
    # a + d = (3, -1) the nearest point is the foot of the perpendicular from 0, a - (a·d/d·d) d
    assert np.allclose(minimum_norm_point(np.array([[1.0, 1.0], [2.0, 0.0]]))[0], [1.0, 1.0])
    a, d = np.array([1.0, 2.0]), np.array([2.0, -3.0])
    foot = a - (a @ d) / (d @ d) * d
    assert np.allclose(minimum_norm_point(np.array([a, a + d]))[0], foot, atol=1e-14)


def test_a_hull_around_0_is_nearest_at_0_and_distances_are_euclidean():
    # the unit vectors along every ordering of centred ranks: symmetric about 0, so 0 is inside
    ranks = np.array([-1.5, -0.5, 0.5, 1.5])
    pieces = np.array([p / np.linalg.norm(p) for p in itertools.permutations(ranks)])
    assert np.linalg.norm(minimum_norm_point(pieces)[0]) < 1e-14
    # the simplex's distance to 0 is |(1/3, 1/3, 1/3)|; a point of the simplex is in it
    assert math.isclose(distance_to_hull(np.eye(3), [0, 0, 0]), 1 / math.sqrt(3))
    assert distance_to_hull(np.eye(3), [0.25, 0.25, 0.5]) < 1e-14


# --- the shape at a tie, on numpy forwards -------------------------------------------------------

def pieces_of(shape, output=0) -> set:
    return {tuple(round(g.value, 6) for g in p) for p in shape.pieces[output]}


def test_a_max_of_tied_inputs_has_their_unit_vectors_as_pieces_and_is_convex():
    def maximum(rows):
        return rows.max(axis=1, keepdims=True)
    s = tie_shape(maximum, (0.0, 0.0, -1.0, -2.0), (0, 1))
    assert pieces_of(s) == {tuple(unit(0, 4)), tuple(unit(1, 4))} and s.convexity == (1,)
    s = tie_shape(lambda rows: rows.min(axis=1, keepdims=True), (0.0, -0.0, 0.0), (0, 1, 2))
    assert pieces_of(s) == {tuple(unit(i, 3)) for i in range(3)} and s.convexity == (-1,)


def test_a_median_of_three_tied_inputs_is_neither_convex_nor_concave():
    s = tie_shape(lambda rows: np.median(rows, axis=1, keepdims=True), (0.0,) * 3, (0, 1, 2))
    assert pieces_of(s) == {tuple(unit(i, 3)) for i in range(3)} and s.convexity == (0,)
    # with the third below the two that tie, the median is their min: concave
    s = tie_shape(lambda rows: np.median(rows, axis=1, keepdims=True), (0.0, 0.0, -1.0), (0, 1))
    assert s.convexity == (-1,)


def test_sorting_tied_inputs_gives_a_concave_first_a_convex_last_and_neither_between():
    s = tie_shape(lambda rows: np.sort(rows, axis=1), (0.0,) * 4, (0, 1, 2, 3))
    assert s.convexity == (-1, 0, 0, 1)
    assert all(pieces_of(s, o) == {tuple(unit(i, 4)) for i in range(4)} for o in range(4))


def test_a_norm_at_0_is_convex_and_an_undefined_tie_has_no_pieces():
    s = tie_shape(lambda rows: np.linalg.norm(rows, axis=1, keepdims=True), (0.0,) * 3, (0, 1, 2))
    assert s.convexity == (1,) and len(s.pieces[0]) == 6  # one per ordering of 3 inputs
    assert all(math.isclose(math.hypot(*(g.value for g in p)), 1, rel_tol=1e-5)
               for p in s.pieces[0])
    nan = tie_shape(lambda rows: rows.max(axis=1, keepdims=True), (math.nan,) * 2, (0, 1))
    assert not nan.defined and nan.pieces == ()


# --- the verdicts --------------------------------------------------------------------------------

def gradients(*vectors):
    return tuple(tuple(exact(v) for v in vec) for vec in vectors)


def test_at_a_convex_tie_the_even_split_follows_and_one_index_breaks_unless_documented():
    pieces = gradients(unit(0, 3), unit(1, 3))  # max(x0, x1) beside a smaller x2
    v = judge_tie_output(pieces, 1, (0.5, 0.5, 0.0))
    assert (v.rule, v.follows, v.clarke.value) == (DocumentedRule.CONVEX, True,
                                                   "minimum-norm element")
    assert [e.value for e in v.minimum_norm] == [0.5, 0.5, 0.0] and v.as_documented is None
    one = judge_tie_output(pieces, 1, (1.0, 0.0, 0.0), documented=ONE_INPUT)
    assert (one.follows, one.clarke.value, one.as_documented) == (False, "inside", True)
    assert judge_tie_output(pieces, 1, (1.0, 0.0, 0.0), documented=EVEN_SPLIT).as_documented \
        is False
    outside = judge_tie_output(pieces, 1, (0.0, 0.0, 0.0))  # clamp's (0, 0): not in the hull
    assert (outside.follows, outside.clarke.value) == (False, "outside")


def test_by_continuity_one_piece_follows_and_anything_between_breaks():
    pieces = gradients(*(unit(i, 3) for i in range(3)))  # median of three tied inputs
    assert judge_tie_output(pieces, 0, (0.0, 1.0, 0.0)).follows
    split = judge_tie_output(pieces, 0, (1 / 3, 1 / 3, 1 / 3), "float32")
    assert (split.rule, split.follows, split.clarke.value) == (
        DocumentedRule.CONTINUITY, False, "minimum-norm element")


def test_nan_breaks_a_defined_tie_and_anything_follows_at_an_undefined_one():
    pieces = gradients(unit(0, 2), unit(1, 2))
    assert judge_tie_output(pieces, 1, (math.nan, math.nan)).clarke.value == "outside"
    undefined = judge_tie_output(pieces, 1, (5.0, 7.0), defined=False)
    assert undefined.rule is DocumentedRule.UNDEFINED and undefined.follows


# --- the registry's built-ins of several inputs --------------------------------------------------

def test_each_framework_has_a_dozen_built_ins_of_several_inputs_tied_by_two_and_by_all():
    for framework in ("torch", "jax"):
        several = [r for r in builtins_of(framework) if r.several_inputs]
        assert len(several) >= 12
        for r in several:
            n = len(r.input_labels())
            assert r.kinks == () and not r.relu_like and all(t.inputs == n for t in r.input_ties)
            sizes = {len(t.tied) for t in r.input_ties}
            assert n in sizes and (2 in sizes or r.name.endswith(("norm(x)", "vector_norm(x)")))
            if r.look_alike:
                assert by_key(r.look_alike).look_alike == r.key


def test_a_tie_holds_0_then_plus_and_minus_0_in_turn_then_nan_with_the_others_apart():
    tie = InputTie((0, 2), (-1.0, -2.0))
    assert TIE_VALUES == ("0", "±0", "NaN")
    assert tie.point("0") == (0.0, -1.0, 0.0, -2.0)
    assert [math.copysign(1, v) for v in tie.point("±0")] == [1, -1, -1, -1]
    assert [math.isnan(v) for v in tie.point("NaN")] == [True, False, True, False]


def measured(rule, device, tie: str, output: int = 0) -> tuple[list[float], bool, object]:
    """The float64 gradient at a tie (at 0), whether it follows the documented rule, and
    whether it is what the op's page says."""
    rec, = [r for r in tie_records(rule, device) if r["tie_case"] == f"{tie} at 0"
            and r.get("output", 0) == output]
    pieces = tuple(tuple(Estimate(*g) for g in p) for p in rec["pieces"])
    doc = (rec["documented"] or {}).get("gives")
    v = judge_tie_output(pieces, rec["convexity"], rec["measured"], documented=doc)
    return rec["measured"], v.follows, v.as_documented


def test_max_reductions_split_evenly_and_max_along_a_dim_sends_all_to_one_index(cpu):
    grad, follows, _ = measured(by_key("torch_amax"), cpu, "2 of 4")
    assert grad == [0.5, 0.5, 0.0, 0.0] and follows
    grad, follows, _ = measured(by_key("jax_max_axis"), cpu, "4 of 4")
    assert grad == [0.25] * 4 and follows
    # torch.max(x, 0) "only propagates to the indexed element" (its page): the first maximum
    grad, follows, documented = measured(by_key("torch_max_dim"), cpu, "2 of 4")
    assert grad == unit(0, 4) and not follows and documented is True
    # the swap: amax's value with one index's gradient breaks, and not as its page says
    one_index = replace(by_key("torch_amax"), fn=lambda x: x[torch.argmax(x)])
    grad, follows, documented = measured(one_index, cpu, "2 of 4")
    assert grad == unit(0, 4) and not follows and documented is False


def test_max_pooling_picks_one_input_and_breaks_where_an_even_split_follows(cpu):
    for key in ("torch_max_pool1d", "jax_max_pool1d", "torch_max_pool2d", "jax_max_pool2d"):
        grad, follows, _ = measured(by_key(key), cpu, "4 of 4")
        assert sum(grad) == 1 and sorted(grad) == [0, 0, 0, 1] and not follows, key
    pooled = replace(by_key("torch_max_pool1d"), fn=lambda x: torch.amax(x)[None])
    assert measured(pooled, cpu, "4 of 4")[:2] == ([0.25] * 4, True)


def test_sort_and_top_k_route_each_output_to_one_input(cpu):
    # the largest of four tied inputs is convex: 1/4 each; a middle one, by continuity, takes
    # any single input's gradient
    for key in ("torch_sort", "jax_sort"):
        grad, follows, _ = measured(by_key(key), cpu, "4 of 4", output=3)
        assert sorted(grad) == [0, 0, 0, 1] and not follows, key
        grad, follows, _ = measured(by_key(key), cpu, "4 of 4", output=1)
        assert sorted(grad) == [0, 0, 0, 1] and follows, key
    top = by_key("torch_topk2")
    assert not measured(top, cpu, "2 of 4", output=0)[1]
    even_top = replace(top, fn=lambda x: torch.stack([torch.amax(x), torch.topk(x, 2).values[1]]))
    assert measured(even_top, cpu, "2 of 4", output=0)[:2] == ([0.5, 0.5, 0.0, 0.0], True)


def test_a_median_of_three_tied_inputs_by_continuity_gives_one_of_them(cpu):
    grad, follows, _ = measured(by_key("jax_median"), cpu, "3 of 3")
    assert sorted(grad) == [0, 0, 1] and follows
    grad, follows, _ = measured(by_key("torch_median"), cpu, "3 of 3")
    assert np.allclose(grad, [1 / 3] * 3) and not follows  # Clarke's, not the documented rule
    middle = replace(by_key("torch_median"), fn=lambda x: torch.sort(x).values[1])
    assert measured(middle, cpu, "3 of 3")[1]


def test_a_norm_at_0_gives_0_and_its_nan_breaks(cpu):
    grad, follows, _ = measured(by_key("torch_vector_norm"), cpu, "3 of 3")
    assert grad == [0.0] * 3 and follows
    grad, follows, _ = measured(by_key("jax_norm"), cpu, "3 of 3")
    assert all(math.isnan(g) for g in grad) and not follows  # jnp.linalg.norm's 0/0
    by_sqrt = replace(by_key("torch_vector_norm"), fn=lambda x: torch.sqrt((x * x).sum()))
    assert not measured(by_sqrt, cpu, "3 of 3")[1]


def test_maximum_splits_a_tie_and_clamps_bounds_are_judged_as_maximum_and_minimum(cpu):
    assert measured(by_key("torch_maximum_xy"), cpu, "x = y")[:2] == ([0.5, 0.5], True)
    assert measured(by_key("jax_minimum_xy"), cpu, "x = y")[:2] == ([0.5, 0.5], True)
    picks_x = replace(by_key("torch_maximum_xy"), fn=lambda x, y: torch.where(x >= y, x, y))
    assert measured(picks_x, cpu, "x = y")[:2] == ([1.0, 0.0], False)
    # clamp(x, min, max) at x = min, max above: max(x, min), convex, (1/2, 1/2, 0)
    assert measured(by_key("jax_clip_arrays"), cpu, "x = min")[:2] == ([0.5, 0.5, 0.0], True)
    assert measured(by_key("torch_clamp_tensors"), cpu, "x = min")[:2] == ([1.0, 0.0, 0.0],
                                                                            False)
    assert measured(by_key("jax_lax_clamp_bounds"), cpu, "x = min")[:2] == ([0.0] * 3, False)
    nested = replace(by_key("torch_clamp_tensors"),
                     fn=lambda x, lo, hi: torch.maximum(torch.minimum(x, hi), lo))
    assert measured(nested, cpu, "x = min")[:2] == ([0.5, 0.5, 0.0], True)

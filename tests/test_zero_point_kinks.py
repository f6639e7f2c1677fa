"""Kink records (study.conformance.kink_records, which zero_point stores) on real ops, against
shapes derived by hand."""
import json
import math

import torch

import experiments.zero_point.measure as zp
from study.conformance import (DocumentedRule, documented_verdict, joint_gradient, kink_records,
                               shape_of)
from study.measure.rules import Rule, by_key


def test_clamp_min0_at_0_is_a_convex_kink_whose_documented_value_is_0(cpu):
    # by hand: clamp(x, min=0) is 0 left of 0 and x right of it, so f'(0-) = 0 and f'(0+) = 1,
    # and both pieces are linear (f'' = 0): locally convex, and the minimum-norm element of
    # [0, 1] is 0
    [rec] = kink_records(by_key("torch_clamp_min0"), cpu)
    assert (rec["part"], rec["point"], rec["judged"], "tie" in rec) == ("kinks", 0.0, True, False)
    shape = shape_of(rec["shape"])
    assert (shape.slope_left.value, shape.slope_right.value) == (0.0, 1.0)
    assert (shape.curvature_left, shape.curvature_right, shape.jump) == ((0,), (0,), False)
    verdict = documented_verdict(shape, rec["measured"])
    assert verdict.rule is DocumentedRule.CONVEX
    assert [a[0].value for a in verdict.allowed] == [0.0]
    assert verdict.follows == (rec["measured"] == 0.0)


def test_maximum_at_a_tie_records_both_operands_gradients(cpu):
    # by hand: maximum(x, y) is y where x < y (gradient (0, 1)) and x where x > y ((1, 0)); any
    # gradient autodiff gives at the tie sums to 1, as d/dt max(t, t) = 1
    [rec] = kink_records(by_key("torch_maximum0"), cpu)
    tie = rec["tie"]
    shape = shape_of(tie["shape"])
    assert tie["operands"] == ["x", "other"] and shape.point == (0.0, 0.0)
    for side, expected in ((shape.gradient_left, (0.0, 1.0)), (shape.gradient_right, (1.0, 0.0))):
        assert all(abs(g.value - e) <= g.hi - g.value for g, e in zip(side, expected))
    assert math.isclose(sum(tie["measured"]), 1.0)
    assert tie["measured"][0] == rec["measured"]  # x alone: the other operand held at the tie


def test_joint_gradient_is_reverse_mode_over_both_operands(cpu):
    # by hand: d(x * y)/d(x, y) at x = y = 3 is (y, x) = (3, 3)
    assert joint_gradient("torch", torch.mul, 3.0, cpu) == [3.0, 3.0]
    assert joint_gradient("jax", lambda x, y: x * y, 3.0, cpu) == [3.0, 3.0]


def test_a_release_lacking_the_op_gives_an_error_record(cpu):
    def missing(x):
        raise AttributeError("module 'jax.nn' has no attribute 'sparse_sigmoid'")
    rule = Rule("jax_missing", "jax", "jax.nn.missing", "builtin", missing, kinks=(-1.0, 1.0))
    recs = kink_records(rule, cpu)
    assert [(r["point"], r["error"]) for r in recs] == [
        (k, "AttributeError: module 'jax.nn' has no attribute 'sparse_sigmoid'")
        for k in (-1.0, 1.0)]


def test_compositions_are_recorded_but_not_judged(cpu):
    [rec] = kink_records(by_key("torch_where_gt"), cpu)
    assert rec["judged"] is False and "shape" in rec


def test_kink_cases_cover_every_builtin_once_and_records_are_json(cpu):
    builtins = [by_key("torch_relu"), by_key("jax_clip_0_6")]
    customs = [by_key("torch_custom_c0")]
    kinds = [c for c in zp.cases("quick", builtins + customs) if c["part"] == "kinks"]
    assert [c["rule"].key for c in kinds] == ["torch_relu", "jax_clip_0_6"]
    recs = [r for c in kinds for r in zp.run_case(cpu, **c)]
    assert [(r["rule"], r["point"], "tie" in r) for r in recs] == [
        ("torch_relu", 0.0, False), ("jax_clip_0_6", 0.0, True), ("jax_clip_0_6", 6.0, True)]
    assert json.loads(json.dumps(recs)) == recs

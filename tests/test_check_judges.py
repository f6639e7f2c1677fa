"""The finding judges of study check (tests/mutation.py's CHECK_JUDGES) held to oracles worked
out by hand: tiny rules whose derivatives are known in closed form, and measured rows built by
hand. Each test says how its expected value is derived. Fast (torch on the CPU, a few calls
each): make mutation runs them against every mutant of the judges."""
import random

import numpy as np
import pytest
import torch

from study.check import _findings, _judges, _known, _probe, _sections
from study.check._findings import PROSE, Finding, Where
from study.check._load import UsageError, as_rule
from study.compare.cells import Error, Placed, Value
from study.measure.inputs import ordinary_inputs, probe_inputs
from study.report.format import text
from study.report.prose import say

NAN, INF = float("nan"), float("inf")


def _rule(fn):
    return as_rule(fn, "torch")[0]


def relu(x):
    return x.clamp(min=0)


# --- the elementwise decision ----------------------------------------------------------------

def test_mixing_entries_are_the_off_diagonal_dependences():
    # finite non-zero off the diagonal is a dependence; 0 and -0 are none
    assert _probe.mixing_entries(np.array([[1.0, -0.0], [0.0, 1.0]])) == []
    # 3 x 3, one entry each: positions read back as (row i, column j)
    assert _probe.mixing_entries(np.array([[1.0, 0, 0], [0, 1, 0], [2.5, 0, 1]])) == [(2, 0)]
    assert _probe.mixing_entries(np.array([[1.0, 0, -2], [0, 1, 0], [0, 0, 1]])) == [(0, 2)]
    # an infinite entry where the diagonal at its column is finite is a dependence
    assert _probe.mixing_entries(np.array([[1.0, INF], [0, 1]])) == [(0, 1)]
    # NaN at (i, j) is 0 x f'(x[j]): no dependence where f'(x[j]) (the diagonal at j) is NaN
    # or infinite, a dependence where it is finite
    assert _probe.mixing_entries(np.array([[NAN, NAN], [NAN, 1.0]])) == [(0, 1)]
    assert _probe.mixing_entries(np.array([[INF, 0], [NAN, 1.0]])) == []
    # a diagonal entry is never a dependence, whatever it is
    assert _probe.mixing_entries(np.array([[NAN, 0], [0, 7.0]])) == []


def test_moved_values_are_the_positions_a_reversal_does_not_carry():
    x = np.array([-1.5, -0.25, 0.5, 2.0, 3.25])
    assert _probe.moved_values(_rule(relu), x, torch_cpu()) == []
    # sqrt is NaN at the same (mirrored) positions either way: NaN equals NaN here
    assert _probe.moved_values(_rule(torch.sqrt), x, torch_cpu()) == []
    # sorting an ascending x: f(x) reversed is descending, f(x reversed) ascending; they agree
    # only in the middle, position 2
    assert _probe.moved_values(_rule(lambda a: a.sort().values), x, torch_cpu()) == [0, 1, 3, 4]
    # 0 x sqrt(x[0]) is NaN everywhere when x[0] < 0 and 0 when it is x reversed's 3.25
    assert _probe.moved_values(_rule(lambda a: a + 0 * torch.sqrt(a[:1])), x,
                               torch_cpu()) == [0, 1, 2, 3, 4]
    # a -0 where the reversal gives +0 is the same value
    assert _probe.moved_values(_rule(lambda a: a * 0 * a[:1].sign()), x, torch_cpu()) == []


def torch_cpu():
    from study.measure.devices import Device
    return Device("cpu")


PROBES = [-1.5, -0.25, 0.5, 2.0, 3.25]  # _probe.ELEMENTWISE_PROBES[0], written out


def test_an_elementwise_rule_has_no_finding():
    assert _probe.check_callable(_rule(relu), torch_cpu()) == []
    assert _probe.check_callable(_rule(torch.exp), torch_cpu()) == []


def test_a_jacobian_entry_off_the_diagonal_is_not_elementwise():
    # y[i] = x[i] + x[i - 1] (roll by one): row 0's off-diagonal 1 sits at column 4, the first
    # (i, j) in row-major order
    found = _probe.check_callable(_rule(lambda a: a + a.roll(1)), torch_cpu())
    assert found == [Finding("not_elementwise",
                             Where("elementwise", "float64", "eager", input="3.25"),
                             f"d y[0] / d x[4] = {text(1.0, None)} at x = {text(PROBES, None)}",
                             "0 off the diagonal")]


def test_values_that_move_under_reversal_are_not_elementwise():
    # sort: identity Jacobian at an ascending x; reversed, y[0] is 3.25 where f(x)[4] is -1.5...
    # the first moved position 0 is x reversed's 3.25
    found = _probe.check_callable(_rule(lambda a: a.sort().values), torch_cpu())
    assert found == [Finding("not_elementwise",
                             Where("elementwise", "float64", "eager", input="3.25"),
                             f"y[0] of f(x reversed) differs from y[4] of f(x) at "
                             f"x = {text(PROBES, None)}", "f(x reversed) = f(x) reversed")]


def test_a_value_moved_past_the_first_position_is_named_by_its_own_input_and_mirror():
    # x[0] kept, the rest sorted: the identity at an ascending x (a diagonal Jacobian), but
    # reversed, f(x reversed) = 3.25, -1.5, -0.25, 0.5, 2 against f(x) reversed = 3.25, 2, 0.5,
    # -0.25, -1.5: the first moved position is 1, x reversed's 2.0, mirrored at y[5 - 1 - 1] = y[3]
    def keep_first_sort_rest(a):
        return torch.cat([a[:1], a[1:].sort().values])
    found = _probe.check_callable(_rule(keep_first_sort_rest), torch_cpu())
    assert found == [Finding("not_elementwise",
                             Where("elementwise", "float64", "eager", input="2"),
                             f"y[1] of f(x reversed) differs from y[3] of f(x) at "
                             f"x = {text(PROBES, None)}", "f(x reversed) = f(x) reversed")]


def _no_negatives(mixing: bool):
    def fn(a):
        if bool((a < 0).any()):
            raise ValueError(f"negative input of {a.numel()}")
        return a + a.roll(1) if mixing else a
    return fn


def test_the_first_probe_the_rule_takes_is_judged():
    # the rule raises on the first probe (it has negatives), so [0.5, 2, 3.25] is judged:
    # y[0] = x[0] + x[2], the off-diagonal 1 at column 2, input 3.25
    found = _probe.check_callable(_rule(_no_negatives(True)), torch_cpu())
    assert [(f.where.input, f.detail) for f in found] == [
        ("3.25", f"d y[0] / d x[2] = {text(1.0, None)} at x = {text([0.5, 2.0, 3.25], None)}")]
    assert _probe.check_callable(_rule(_no_negatives(False)), torch_cpu()) == []


def test_a_backward_that_raises_skips_to_the_next_probe():
    class RaisingBackwardBelowZero(torch.autograd.Function):
        @staticmethod
        def forward(ctx, a):
            ctx.save_for_backward(a)
            return a + a.roll(1)

        @staticmethod
        def backward(ctx, g):
            a, = ctx.saved_tensors
            if bool((a < 0).any()):
                raise ValueError("no backward below 0")
            return g + g.roll(-1)
    found = _probe.check_callable(_rule(RaisingBackwardBelowZero), torch_cpu())
    # the forward alone runs on the first probe: only its VJP says to move on to [0.5, 2, 3.25]
    assert [f.where.input for f in found] == ["3.25"]


def test_usage_errors_name_the_first_failure_or_the_shape():
    def always_raises(a):
        raise ValueError(f"no, {a.numel()} elements")
    with pytest.raises(UsageError) as raised:
        _probe.check_callable(_rule(always_raises), torch_cpu())
    # the first input tried, the 5 probes, and its error: not the later ones'
    assert str(raised.value) == ("the rule raises on every input tried, e.g. "
                                 "[-1.5, -0.25, 0.5, 2.0, 3.25]: ValueError: no, 5 elements")
    with pytest.raises(UsageError) as raised:
        _probe.check_callable(_rule(lambda a: a.sum()), torch_cpu())
    assert str(raised.value) == "the rule returns shape [] for an input of shape [5]"


# --- finiteness -------------------------------------------------------------------------------

def test_finite_around_is_where_both_neighbours_are_finite():
    # log, float64: the next value down from -tiny, -0, +0 is below 0 (NaN), from +tiny it is 0
    # (-inf); min_normal's neighbours are positive; +inf's one neighbour, max, has a finite log;
    # -inf's, -max, is NaN; the kink 1's ulps are positive
    assert _probe.finite_around(_rule(torch.log), "float64", (0.0, 1.0), torch_cpu()) == {
        "min_normal", "+inf", "1-ulp", "1", "1+ulp"}
    # relu is finite everywhere but at NaN, which is never a label here
    assert _probe.finite_around(_rule(relu), "float32", (0.0,), torch_cpu()) == {
        "-min_subnormal", "-0.0", "+0.0", "+min_subnormal", "min_normal", "+inf", "-inf"}


def test_an_infinity_s_one_neighbour_decides():
    # x * (x > 0): -inf * 0 is NaN at -inf, but its one neighbour -max gives -0, finite: a
    # hole (the neighbour beyond -inf is -inf itself, not judged); every other label too
    assert _probe.finite_around(_rule(lambda a: a * (a > 0)), "float64", (0.0,),
                                torch_cpu()) == {"-min_subnormal", "-0.0", "+0.0",
                                                 "+min_subnormal", "min_normal", "+inf", "-inf"}


def test_finite_around_a_rule_refusing_negatives_calls_it_per_element():
    # the first call (all neighbours together) raises; per element, a negative neighbour is NaN:
    # +tiny (down: 0), min_normal and +inf (down: max) keep both neighbours >= 0
    assert _probe.finite_around(_rule(_no_negatives(False)), "float64", (0.0,),
                                torch_cpu()) == {"+min_subnormal", "min_normal", "+inf"}


def test_float32_neighbours_are_float32_ones():
    # log, float32: +tiny's next value down is 0 (log -inf); a float64 neighbour would round
    # back to +tiny itself there
    assert _probe.finite_around(_rule(torch.log), "float32", (0.0,), torch_cpu()) == {
        "min_normal", "+inf"}


def _row(value, reverse=Value(1.0), x=1.0, label="1", execution="eager", placement="packed",
         dtype="float64"):
    return {"dtype": dtype, "input": label, "x": x, "bits": f"bits of {label}",
            "execution": execution, "placement": placement, "value": value, "reverse": reverse}


def _conventions_where(label, placement="packed", execution="eager", dtype="float64", **extra):
    return Where("conventions", dtype, execution, placement, label, f"bits of {label}", **extra)


def test_a_nan_or_infinite_value_inside_a_finite_neighbourhood_is_forward_not_finite():
    around = {"float64": {"1"}}
    nan_at_1 = _judges.finiteness_findings([_row(Value(NAN), reverse=Value(NAN))], around)
    assert nan_at_1 == [Finding("forward_not_finite", _conventions_where("1"),
                                f"value {text([NAN], None)}",
                                "a finite value, as at the neighbouring inputs")]
    assert [f.kind for f in _judges.finiteness_findings([_row(Value(-INF))], around)] == [
        "forward_not_finite"]
    # outside the finite neighbourhood (another label, another dtype): the domain's edge
    assert _judges.finiteness_findings([_row(Value(NAN), reverse=Value(NAN))],
                                      {"float32": {"1"}}) == []
    assert _judges.finiteness_findings([_row(Value(NAN), reverse=Value(NAN))],
                                      {"float64": {"2"}}) == []
    # +inf from +inf is no hole; NaN from NaN neither (that is nan_swallowed's question)
    assert _judges.finiteness_findings([_row(Value(INF), x=INF, label="+inf")],
                                      {"float64": {"+inf"}}) == []
    assert _judges.finiteness_findings([_row(Value(NAN), x=NAN, label="+nan")],
                                      {"float64": {"+nan"}}) == []
    # one NaN among a placed cell's values is enough
    placed = Placed((Value(1.0), Value(NAN)), (("fill", ((0, "0-63"), (1, "64"))),))
    assert [f.kind for f in _judges.finiteness_findings([_row(placed)], around)] == [
        "forward_not_finite"]


def test_a_derivative_is_judged_only_where_the_value_is_finite():
    def kinds(row):
        return [f.kind for f in _judges.finiteness_findings([row], {})]
    nan_slope = _judges.finiteness_findings([_row(Value(0.0), reverse=Value(NAN))], {})
    assert nan_slope == [Finding("reverse_not_finite", _conventions_where("1"),
                                 f"reverse {text([NAN], None)} where the value is "
                                 f"{text([0.0], None)}", "a number: the value's slope")]
    inf_slope = _judges.finiteness_findings([_row(Value(0.0), reverse=Value(-INF))], {})
    assert inf_slope == [Finding("reverse_infinite", _conventions_where("1"),
                                 f"reverse {text([-INF], None)} where the value is "
                                 f"{text([0.0], None)}",
                                 "a finite slope, unless the value has a vertical tangent here")]
    # NaN and inf among one cell's values: NaN, the worse, alone
    both = Placed((Value(NAN), Value(INF)), (("fill", ((0, "0-63"), (1, "64"))),))
    assert kinds(_row(Value(0.0), reverse=both)) == ["reverse_not_finite"]
    # no finite value: no slope to judge (NaN value, a value in part NaN, an error, x = inf)
    assert kinds(_row(Value(NAN), reverse=Value(NAN))) == []
    partly = Placed((Value(1.0), Value(NAN)), (("fill", ((0, "0-63"), (1, "64"))),))
    assert kinds(_row(partly, reverse=Value(NAN))) == []
    assert kinds(_row(Error("ValueError: no"), reverse=Value(NAN))) == []
    assert kinds(_row(Value(1.0), reverse=Value(NAN), x=INF, label="+inf")) == []
    assert kinds(_row(Value(1.0), reverse=Value(INF), x=-INF, label="-inf")) == []
    assert kinds(_row(Value(1.0), reverse=Value(2.0))) == []


def test_a_number_from_nan_eagerly_is_nan_swallowed():
    def kinds(row):
        return [f.kind for f in _judges.finiteness_findings([row], {"float64": {"+nan"}})]
    swallowed = _judges.finiteness_findings([_row(Value(0.0), x=NAN, label="+nan")], {})
    assert swallowed == [Finding("nan_swallowed", _conventions_where("+nan"),
                                 f"value {text([0.0], None)}", "NaN")]
    partly = Placed((Value(NAN), Value(0.0)), (("fill", ((0, "0-63"), (1, "64"))),))
    assert kinds(_row(partly, x=NAN, label="+nan")) == ["nan_swallowed"]
    assert kinds(_row(Value(NAN), x=NAN, label="+nan")) == []
    # compiled NaN handling is the compiled judge's question, against eager
    assert kinds(_row(Value(0.0), x=NAN, label="+nan", execution="compiled")) == []


def test_alike_findings_at_two_placements_are_one():
    rows = [_row(Value(0.0), reverse=Value(NAN), placement=p) for p in ("packed", "fill")]
    found = _judges.finiteness_findings(rows, {})
    assert [(f.kind, f.where.placement, f.cells) for f in found] == [
        ("reverse_not_finite", "packed, fill", 2)]


# --- compiled against eager ------------------------------------------------------------------

def _pair(eager: dict, compiled: dict, placement="fill"):
    base = {"dtype": "float32", "input": "-0.0", "x": -0.0, "bits": "0x80000000",
            "placement": placement}
    return [{**base, "execution": "eager", **eager}, {**base, "execution": "compiled", **compiled}]


def _compiled_where(mode):
    return Where("conventions", "float32", "compiled", "fill", "-0.0", "0x80000000",
                 transformation=mode)


def test_compiled_equal_to_eager_has_no_finding():
    same = {"value": Value(0.0), "reverse": Value(NAN), "forward": Value(1.0)}
    assert _judges.compiled_findings(_pair(same, same)) == []
    # ±0 in both, whichever value comes first, is the same signs
    a = Placed((Value(0.0), Value(-0.0)), (("fill", ((0, "0-63"), (1, "64"))),))
    b = Placed((Value(-0.0), Value(0.0)), (("fill", ((0, "0-63"), (1, "64"))),))
    assert _judges.compiled_findings(_pair({"value": a}, {"value": b})) == []


def test_each_mode_that_differs_is_its_own_finding():
    eager = {"value": Value(0.0), "reverse": Value(1.0), "forward": Value(1.0)}
    compiled = {"value": Value(0.0), "reverse": Value(0.5), "forward": Value(2.0)}
    found = _judges.compiled_findings(_pair(eager, compiled))
    assert found == [
        Finding("compiled_differs", _compiled_where("reverse"), f"compiled {text([0.5], None)}",
                say(PROSE, "eager_as_expected", eager=text([1.0], None), against_reverse=False)),
        Finding("compiled_differs", _compiled_where("forward"), f"compiled {text([2.0], None)}",
                say(PROSE, "eager_as_expected", eager=text([1.0], None), against_reverse=False))]
    # the prose, read off check.j2's eager_as_expected: "eager" then the eager numbers
    assert found[0].expected == "eager [1.0]"


def test_a_sign_of_zero_alone_is_compiled_zero_sign():
    found = _judges.compiled_findings(_pair({"value": Value(-0.0)}, {"value": Value(0.0)}))
    assert found == [Finding("compiled_zero_sign", _compiled_where("value"),
                             f"compiled {text([0.0], None)}", "eager [-0]")]


def test_one_value_where_eager_has_it_placed_differs():
    # the same number, but eager gives it at some placements only: a Placed against a Value
    placed = Placed((Value(1.0), Error("RuntimeError: x")), (("fill", ((0, "0-63"), (1, "64"))),))
    found = _judges.compiled_findings(_pair({"value": placed}, {"value": Value(1.0)}))
    assert [f.kind for f in found] == ["compiled_differs"]
    found = _judges.compiled_findings(_pair({"value": Value(1.0)}, {"value": placed}))
    assert [f.kind for f in found] == ["compiled_differs"]


def test_what_cannot_be_compared_is_skipped():
    eager = {"value": Value(1.0), "reverse": Error("RuntimeError: no"), "forward": Value(1.0)}
    # compiled raising (the transforms row reports it), eager raising, no such mode compiled
    compiled = {"value": Error("RuntimeError: compiled"), "reverse": Value(5.0)}
    assert _judges.compiled_findings(_pair(eager, compiled)) == []
    # no eager row at the compiled row's placement
    rows = _pair({"value": Value(1.0)}, {"value": Value(2.0)})
    rows[0]["placement"] = "packed"
    assert _judges.compiled_findings(rows) == []
    rows[0]["placement"], rows[0]["dtype"] = "fill", "float64"
    assert _judges.compiled_findings(rows) == []
    rows[0]["dtype"], rows[0]["input"] = "float32", "+0.0"
    assert _judges.compiled_findings(rows) == []
    # a mode skipped is not the end: the modes after it are still compared
    found = _judges.compiled_findings(_pair({"value": Error("RuntimeError: eager"),
                                            "reverse": Value(1.0)},
                                           {"value": Value(0.0), "reverse": Value(2.0)}))
    assert [f.where.transformation for f in found] == ["reverse"]
    found = _judges.compiled_findings(_pair({"value": Value(0.0), "reverse": Value(1.0)},
                                           {"value": Error("RuntimeError: compiled"),
                                            "reverse": Value(2.0)}))
    assert [f.where.transformation for f in found] == ["reverse"]
    # an eager row alone is no comparison
    assert _judges.compiled_findings(rows[:1] + [dict(rows[0], value=Value(9.0))]) == []


def test_compiled_forward_where_eager_forward_raises_is_held_to_eager_reverse():
    eager = {"value": Value(0.0), "reverse": Value(1.0), "forward": Error("RuntimeError: jvp")}
    assert _judges.compiled_findings(_pair(eager, {"forward": Value(1.0)})) == []
    found = _judges.compiled_findings(_pair(eager, {"forward": Value(0.0)}))
    assert found == [Finding("compiled_differs", _compiled_where("forward"),
                             f"compiled {text([0.0], None)}",
                             "eager reverse (eager forward mode raises) [1.0]")]
    # where the eager reverse raises too, there is nothing to hold it to
    eager["reverse"] = Error("RuntimeError: vjp")
    assert _judges.compiled_findings(_pair(eager, {"forward": Value(0.0)})) == []


# --- linearity in the cotangent --------------------------------------------------------------

def _judged(dtype, kinks=(0.0,)):
    return probe_inputs(dtype, kinks) + ordinary_inputs(dtype)


def test_unjudged_products_are_those_outside_the_normal_range():
    fi = np.finfo(np.float32)
    # overflow beyond max and the subnormals (0 < |w| < smallest normal) are not judged;
    # max, the smallest normal, 0 and the non-finite are
    for want in (3.5e38, -3.5e38, 1e-39, -1e-39, float(fi.smallest_subnormal)):
        assert _probe._unjudged(want, "float32"), want
    for want in (float(fi.max), -float(fi.max), float(fi.smallest_normal),
                 -float(fi.smallest_normal), 0.0, -0.0, INF, -INF, NAN, 1.0):
        assert not _probe._unjudged(want, "float32"), want
    assert not _probe._unjudged(3.5e38, "float64")  # the dtype's own range


def test_a_linear_rule_is_linear_at_every_cotangent():
    n = len(_judged("float32"))
    rows, found = _probe.linearity(_rule(relu), "float32", (0.0,), torch_cpu())
    assert found == []
    # three uniform cotangents over the n judged inputs, then all four mixed over 4 copies
    assert rows == [{"dtype": "float32", "cotangent": c, "judged": k, "unjudged": 0, "differ": 0}
                    for c, k in (("2", n), ("-1", n), ("0.5", n), ("mixed", 4 * n))]


def test_products_outside_the_range_are_counted_unjudged():
    # slope 2^127 everywhere: cotangent 2 gives 2^128, beyond float32's max, so every input is
    # unjudged at 2, and the 2-copy of the mixed call; -1 and 0.5 stay in range
    n = len(_judged("float32"))
    rows, found = _probe.linearity(_rule(lambda a: a * 2.0 ** 127), "float32", (0.0,),
                                   torch_cpu())
    assert found == []
    assert [(r["cotangent"], r["judged"], r["unjudged"]) for r in rows] == [
        ("2", 0, n), ("-1", n, 0), ("0.5", n, 0), ("mixed", 3 * n, n)]
    # slope 2^-126, the smallest normal: 0.5 x it is subnormal
    rows, _ = _probe.linearity(_rule(lambda a: a * 2.0 ** -126), "float32", (0.0,), torch_cpu())
    assert [r["unjudged"] for r in rows] == [0, 0, n, n]


class ConstantAtTheKink(torch.autograd.Function):
    """relu whose backward returns 0.25 at 0 whatever the cotangent."""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x.clamp(min=0)

    @staticmethod
    def backward(ctx, g):
        x, = ctx.saved_tensors
        return torch.where(x == 0, 0.25, g * (x > 0).to(g.dtype))


def test_a_backward_ignoring_the_cotangent_is_constant():
    rows, found = _probe.linearity(_rule(ConstantAtTheKink), "float64", (0.0,), torch_cpu())
    # at ±0: g = 0.25 for every u, against u x 0.25: wrong at 2, -1, 0.5 uniform and mixed
    # (u = 1 of the mixed call is right): 6 cells; both zeros, nothing else
    assert [f.where.input for f in found] == ["-0.0", "+0.0"]
    f = found[1]
    assert f == Finding("vjp_not_linear",
                        Where("vjp", "float64", "eager", "packed", "+0.0", "0x0000000000000000",
                              cotangent="2, -1, 0.5, 2 (mixed), -1 (mixed), 0.5 (mixed)"),
                        "reverse 0.25 whatever the cotangent (1, 2, -1, 0.5)",
                        "2.0 × 0.25 = 0.5", cells=6)
    # per cotangent, the cells that differ: one per zero at each uniform u, two mixed (2 zeros
    # x 3 wrong cotangents)
    assert [r["differ"] for r in rows] == [2, 2, 2, 6]


def test_the_inputs_are_the_dtype_s_own():
    # float32: -min_subnormal is -2^-149, not 0, so the constant 0.25 at 0 stays at ±0 alone
    # (float64's -5e-324 would round to -0 in float32 and be a third input at the kink)
    _, found = _probe.linearity(_rule(ConstantAtTheKink), "float32", (0.0,), torch_cpu())
    assert [(f.where.input, f.where.bits) for f in found] == [("-0.0", "0x80000000"),
                                                              ("+0.0", "0x00000000")]


class GatedOnTheSign(torch.autograd.Function):
    """relu whose backward drops a negative incoming gradient (guided backprop)."""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x.clamp(min=0)

    @staticmethod
    def backward(ctx, g):
        x, = ctx.saved_tensors
        return g.clamp(min=0) * (x > 0).to(g.dtype)


def test_a_backward_gated_on_the_cotangent_s_sign():
    _, found = _probe.linearity(_rule(GatedOnTheSign), "float64", (0.0,), torch_cpu())
    at_3 = [f for f in found if f.where.input == "3"]
    # x = 3: slope 1; u = -1 gives 0 (dropped), not -1; u = 2, 0.5 are right
    assert at_3 == [Finding("vjp_not_linear",
                            Where("vjp", "float64", "eager", "packed", "3", "0x4008000000000000",
                                  cotangent="-1, -1 (mixed)"),
                            "reverse 0 at cotangent -1.0, but 1.0 at cotangent 1: the incoming "
                            "gradient's sign gates it", "-1.0 × 1.0 = -1.0", cells=2)]
    # below 0 the slope is 0 and u x 0 = ±0 = 0: linear
    assert not {"-3", "-1", "-0.5"} & {f.where.input for f in found}


class AbsOfTheCotangent(torch.autograd.Function):
    """relu whose backward returns |g| at x > 0: wrong at negative cotangents only."""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x.clamp(min=0)

    @staticmethod
    def backward(ctx, g):
        x, = ctx.saved_tensors
        return g.abs() * (x > 0).to(g.dtype)


def test_wrong_at_negative_cotangents_only_is_gated_on_the_sign_whatever_it_gives():
    _, found = _probe.linearity(_rule(AbsOfTheCotangent), "float64", (0.0,), torch_cpu())
    at_1 = [f for f in found if f.where.input == "1"]
    # x = 1: u = -1 gives |-1| = 1, not -1; the positive cotangents are right: the sign
    # pattern, though what it gives there (1) is positive
    assert [(f.detail, f.expected, f.cells) for f in at_1] == [
        ("reverse 1.0 at cotangent -1.0, but 1.0 at cotangent 1: the incoming gradient's sign "
         "gates it", "-1.0 × 1.0 = -1.0", 2)]


class SquaresTheCotangent(torch.autograd.Function):
    """relu whose backward returns g² at x > 0: wrong at 2 and 0.5 as at -1."""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x.clamp(min=0)

    @staticmethod
    def backward(ctx, g):
        x, = ctx.saved_tensors
        return g * g * (x > 0).to(g.dtype)


def test_another_dependence_on_the_cotangent():
    _, found = _probe.linearity(_rule(SquaresTheCotangent), "float64", (0.0,), torch_cpu())
    at_1 = [f for f in found if f.where.input == "1"]
    # x = 1: g1 = 1² = 1; u = 2 gives 4, not 2; -1 gives 1, not -1; 0.5 gives 0.25, not 0.5
    assert at_1 == [Finding("vjp_not_linear",
                            Where("vjp", "float64", "eager", "packed", "1", "0x3ff0000000000000",
                                  cotangent="2, -1, 0.5, 2 (mixed), -1 (mixed), 0.5 (mixed)"),
                            "reverse 4.0 at cotangent 2.0", "2.0 × 1.0 = 2.0", cells=6)]


def test_a_cotangent_that_raises_is_a_row_not_a_finding():
    class RaisesAtTwo(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x.clamp(min=0)

        @staticmethod
        def backward(ctx, g):
            if bool((g == 2).any()):
                raise ValueError("no cotangent 2")
            return g
    rows, found = _probe.linearity(_rule(RaisesAtTwo), "float64", (0.0,), torch_cpu())
    n = len(_judged("float64"))
    # 2 raises, as does the mixed call (it holds 2); -1 and 0.5 are linear (g = u, slope 1)
    assert rows == [{"dtype": "float64", "cotangent": "2", "error": "ValueError: no cotangent 2"},
                    {"dtype": "float64", "cotangent": "-1", "judged": n, "unjudged": 0,
                     "differ": 0},
                    {"dtype": "float64", "cotangent": "0.5", "judged": n, "unjudged": 0,
                     "differ": 0},
                    {"dtype": "float64", "cotangent": "mixed",
                     "error": "ValueError: no cotangent 2"}]
    assert found == []


def test_a_mixed_call_that_raises_at_cotangent_1():
    calls = []

    def fails_on_the_long_input(a):
        calls.append(a.numel())
        if a.numel() > 20:
            raise ValueError("too long")
        return a.clamp(min=0)
    rows, found = _probe.linearity(_rule(fails_on_the_long_input), "float64", (0.0,),
                                   torch_cpu())
    n = len(_judged("float64"))
    assert rows[0] == {"dtype": "float64", "cotangent": "mixed", "error": "ValueError: too long"}
    assert [r["cotangent"] for r in rows[1:]] == ["2", "-1", "0.5"] and not found
    assert 4 * n > 20 >= n  # the premise: only the mixed call is long
    # the reverse derivative at u = 1 raising: nothing judged, one row
    rows, found = _probe.linearity(_rule(_no_negatives(False)), "float64", (0.0,), torch_cpu())
    assert rows == [{"dtype": "float64", "cotangent": "1",
                     "error": f"ValueError: negative input of {n}"}] and found == []


# --- determinism -----------------------------------------------------------------------------

def _drift_at_3():
    calls = [0]

    def fn(a):
        calls[0] += 1
        return a.clamp(min=0) + (a == 3).to(a.dtype) * calls[0]
    return fn


def test_a_deterministic_rule():
    row, found = _probe.determinism(_rule(relu), "float32", (0.0,), torch_cpu())
    # relu passes NaN through: NaN on every call is the same bits
    assert row == {"dtype": "float32", "calls": 3, "inputs_differing": 0, "consumes_rng": False}
    assert found == []


def test_a_value_that_changes_per_call_is_not_deterministic():
    row, found = _probe.determinism(_rule(_drift_at_3()), "float64", (0.0,), torch_cpu())
    # each vjp calls the rule twice (value, reverse): values at 3 are 3 + 1, 3 + 3, 3 + 5;
    # the slope at 3 is 1 each call
    seen = [(4.0, 1.0), (6.0, 1.0), (8.0, 1.0)]
    assert found == [Finding("not_deterministic",
                             Where("determinism", "float64", "eager", "packed", "3",
                                   "0x4008000000000000"),
                             say(PROSE, "per_call", seen=text(seen, None)),
                             "the same bits on every call")]
    assert row == {"dtype": "float64", "calls": 3, "inputs_differing": 1, "consumes_rng": False}


def test_a_sign_of_zero_that_changes_per_call_is_not_deterministic():
    calls = [0]

    def alternating(a):
        calls[0] += 1
        # the first vjp's two calls (value, reverse) give -0 at 3, later calls +0
        sign = -1.0 if calls[0] <= 2 else 1.0
        return torch.where(a == 3, sign * 0.0, a.clamp(min=0))
    _, found = _probe.determinism(_rule(alternating), "float64", (0.0,), torch_cpu())
    assert [f.where.input for f in found] == ["3"]


def test_a_change_on_the_second_call_alone_at_float32_subnormals():
    calls = [0]

    def second_call_differs_at_subnormals(a):
        calls[0] += 1
        bump = 1.0 if calls[0] in (3, 4) else 0.0  # the second vjp's value and reverse calls
        tiny = (a != 0) & (a.abs() < 2.0 ** -140)
        return a.clamp(min=0) + tiny.to(a.dtype) * bump
    _, found = _probe.determinism(_rule(second_call_differs_at_subnormals), "float32", (0.0,),
                                  torch_cpu())
    # float32's ±2^-149 are below 2^-140 and not 0; the first and third calls agree
    assert [(f.where.input, f.where.bits) for f in found] == [("-min_subnormal", "0x80000001"),
                                                              ("+min_subnormal", "0x00000001")]


@pytest.mark.parametrize("draw", [lambda: torch.rand(()), lambda: np.random.rand(),
                                  lambda: random.random(),
                                  lambda: np.random.standard_normal()])
def test_a_draw_from_any_rng_is_consumes_rng_and_is_restored(draw):
    def draws(a):
        draw()
        return a.clamp(min=0)
    torch.manual_seed(5)
    np.random.seed(5)
    random.seed(5)
    before = (torch.rand(3), np.random.rand(3), random.random())
    torch.manual_seed(5)
    np.random.seed(5)
    random.seed(5)
    row, found = _probe.determinism(_rule(draws), "float32", (0.0,), torch_cpu())
    assert found == [Finding("consumes_rng", Where("determinism", "float32", "eager"),
                             "the RNG state changed during a call (restored afterwards)",
                             "the RNG states as they were")]
    assert row["consumes_rng"] and row["inputs_differing"] == 0
    after = (torch.rand(3), np.random.rand(3), random.random())  # the draws the seeds give
    assert torch.equal(after[0], before[0]) and np.array_equal(after[1], before[1])
    assert after[2] == before[2]


def test_same_rng_compares_each_part_of_each_state():
    state = _probe.rng_states()
    assert _probe._same_rng(state, _probe.rng_states())
    torch_state, np_state, py_state = state
    # torch: present in one only, or another generator state
    assert not _probe._same_rng(state, (None, np_state, py_state))
    assert not _probe._same_rng((None, np_state, py_state), state)
    assert _probe._same_rng((None, np_state, py_state), (None, np_state, py_state))
    other_torch = (torch_state[0].clone(), torch_state[1])
    other_torch[0][-1] ^= 1
    assert not _probe._same_rng(state, (other_torch, np_state, py_state))
    assert not _probe._same_rng(state, ((torch_state[0], [torch_state[0]]), np_state, py_state))
    # the per-device (CUDA) states, one per device, compared one by one (CPU tensors stand in)
    one_device = ((torch_state[0], [torch_state[0]]), np_state, py_state)
    assert _probe._same_rng(one_device, ((torch_state[0], [torch_state[0].clone()]), np_state,
                                         py_state))
    assert not _probe._same_rng(one_device, ((torch_state[0], [other_torch[0]]), np_state,
                                             py_state))
    # numpy: its name, its key array, its position, its gaussian cache
    for i, changed in ((0, "PCG64"), (2, np_state[2] + 1), (3, 1 - np_state[3]),
                       (4, np_state[4] + 1.0)):
        other = np_state[:i] + (changed,) + np_state[i + 1:]
        assert not _probe._same_rng(state, (torch_state, other, py_state)), i
    keys = np_state[1].copy()
    keys[-1] ^= 1
    assert not _probe._same_rng(state, (torch_state, np_state[:1] + (keys,) + np_state[2:],
                                        py_state))
    other_py = (py_state[0], py_state[1][:-1] + (py_state[1][-1] + 1,), py_state[2])
    assert not _probe._same_rng(state, (torch_state, np_state, other_py))


def test_bitwise_equal_is_equal_bits():
    a = np.array([1.0, -0.0, NAN])
    assert _probe._bitwise_equal(a, a.copy())
    assert not _probe._bitwise_equal(a, np.array([1.0, 0.0, NAN]))  # the sign of zero
    assert not _probe._bitwise_equal(a, np.array([1.0, -0.0, 1.0]))
    assert not _probe._bitwise_equal(np.array([NAN]), np.array([1.0]))
    assert not _probe._bitwise_equal(np.array([2.0]), np.array([2.0, 2.0]))


def test_a_rule_raising_on_the_judged_inputs_is_a_row():
    row, found = _probe.determinism(_rule(_no_negatives(False)), "float64", (0.0,), torch_cpu())
    n = len(_judged("float64"))
    assert row == {"dtype": "float64", "error": f"ValueError: negative input of {n}"}
    assert found == []


# --- gradcheck -------------------------------------------------------------------------------

SMOOTH = (-2.75, -1.3, -0.6, -0.15, 0.35, 0.9, 1.6, 4.2, 7.1)  # _probe.SMOOTH_POINTS


class DoubleSlope(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x.clamp(min=0)

    @staticmethod
    def backward(ctx, g):
        x, = ctx.saved_tensors
        return 2 * g * (x > 0).to(g.dtype)


def test_gradcheck_judges_smooth_points_and_only_reports_kinks():
    rows, found = _probe.gradcheck(_rule(relu), (0.0,), torch_cpu())
    # every smooth point passes; the kink is run after them, and reported
    # at the kink the central difference (relu(h) - relu(-h)) / 2h = 0.5 is not relu'(0) = 0
    assert rows == [{"x": p, "at_kink": False, "outcome": "passed"} for p in SMOOTH] + [
        {"x": 0.0, "at_kink": True, "outcome": "failed"}]
    assert found == []
    rows, found = _probe.gradcheck(_rule(DoubleSlope), (0.0,), torch_cpu())
    # 2 against the central difference's 1 at each smooth point above 0
    assert [f.where.input for f in found] == ["0.35", "0.9", "1.6", "4.2", "7.1"]
    assert found[0] == Finding("gradcheck_fails",
                               Where("gradcheck", "float64", "eager", input="0.35",
                                     bits="0x3fd6666666666666"),
                               "reverse 2.0", found[0].expected)
    assert found[0].expected.startswith("≈ 1")
    assert found[0].expected.endswith(", the central difference (step 1e-06)")


class CubeSlope(torch.autograd.Function):
    """1.2345678 x² forward, 3x backward: wrong at every smooth point but 0."""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return 1.2345678 * x * x

    @staticmethod
    def backward(ctx, g):
        x, = ctx.saved_tensors
        return 3 * x * g


def test_a_gradcheck_finding_quotes_the_central_difference_to_the_digits_it_determines():
    # the derivative at 0.35 is 2 × 1.2345678 × 0.35 = 0.86419746, which a central difference of
    # step 1e-6 determines to about 6 digits: FD_FIGURES = 6 of them print 0.864197; the finding
    # names 0.35's float64 bits
    _, found = _probe.gradcheck(_rule(CubeSlope), (), torch_cpu())
    at = next(f for f in found if f.where.input == "0.35")
    assert at.expected == "≈ 0.864197, the central difference (step 1e-06)"
    assert at.where.bits == "0x3fd6666666666666"


def test_kinks_within_the_margin_leave_out_a_smooth_point():
    # a kink 0.0009 from 0.35 takes it out; one 0.001 away (the margin itself) does not
    rows, _ = _probe.gradcheck(_rule(relu), (0.3509,), torch_cpu())
    assert [r["x"] for r in rows if not r["at_kink"]] == [p for p in SMOOTH if p != 0.35]
    rows, _ = _probe.gradcheck(_rule(relu), (0.351,), torch_cpu())
    assert [r["x"] for r in rows if not r["at_kink"]] == list(SMOOTH)
    rows, _ = _probe.gradcheck(_rule(relu), (0.9, 0.0), torch_cpu())
    # the kinks in order after the smooth points
    assert [(r["x"], r["at_kink"]) for r in rows[-2:]] == [(0.0, True), (0.9, True)]


def test_a_failure_at_a_kink_is_no_finding():
    _, found = _probe.gradcheck(_rule(DoubleSlope), (0.35,), torch_cpu())
    assert "0.35" not in [f.where.input for f in found]


def test_outside_the_domain_is_not_checked():
    rows, found = _probe.gradcheck(_rule(torch.log), (), torch_cpu())
    # log of a negative is NaN: those points are reported, not checked; above 0 log passes
    assert [r["outcome"] for r in rows] == ["value NaN: not checked"] * 4 + ["passed"] * 5
    assert found == []
    assert _probe._outside_domain(_rule(torch.log), -1.0, torch_cpu()) == \
        "value NaN: not checked"
    assert _probe._outside_domain(_rule(lambda a: a / 0), 1.0, torch_cpu()) == \
        "value inf: not checked"
    assert _probe._outside_domain(_rule(torch.log), 1.0, torch_cpu()) is None
    # raising: numeric_check reports it
    assert _probe._outside_domain(_rule(_no_negatives(False)), -1.0, torch_cpu()) is None


# --- the run's verdict -----------------------------------------------------------------------

def _finding(kind, section="s", **where):
    return Finding(kind, Where(section, **where), "seen")


def test_exit_code():
    wrong, warning = _finding("vjp_not_linear"), _finding("reverse_infinite")
    usage = _finding("not_elementwise")
    assert _findings.exit_code([]) == 0
    assert _findings.exit_code([warning]) == 0  # warnings never fail by default
    assert _findings.exit_code([warning, wrong]) == 1
    assert _findings.exit_code([wrong], accepted=frozenset({wrong.id})) == 0
    assert _findings.exit_code([wrong, usage], accepted=frozenset({wrong.id})) == 2
    assert _findings.exit_code([usage]) == 2
    assert _findings.exit_code([warning], fail_on=("reverse_infinite",)) == 1
    assert _findings.exit_code([wrong], fail_on=("reverse_infinite",)) == 0


def test_merged_joins_findings_alike_but_for_one_field():
    a = Finding("k", Where("s", placement="packed"), "first", "e", cells=2)
    b = Finding("k", Where("s", placement="fill"), "second")
    c = Finding("k", Where("s", dtype="float32", placement="fill"), "third")
    d = Finding("other", Where("s", placement="fill"), "fourth")
    again = Finding("k", Where("s", placement="packed"), "fifth")
    assert _findings.merged([a, b, c, d, again], "placement") == [
        Finding("k", Where("s", placement="packed, fill"), "first", "e", cells=4),
        Finding("k", Where("s", dtype="float32", placement="fill"), "third"),
        Finding("other", Where("s", placement="fill"), "fourth")]
    # a None among the values is left out of the joined one
    none = Finding("k", Where("s"), "sixth")
    assert _findings.merged([none, b], "placement") == [
        Finding("k", Where("s", placement="fill"), "sixth", cells=2)]
    assert _findings.merged([none], "placement") == [none]


# --- known deviations ------------------------------------------------------------------------

def test_a_known_entry_matches_by_id_or_by_kind_and_fields():
    f = Finding("vjp_not_linear", Where("vjp", "float32", input="+0.0",
                                        cotangent="2, -1 (mixed)"), "seen")
    assert _known.Known("r", id=f.id).matches(f)
    assert not _known.Known("r", id="vjp_not_linear-00000000", kind="vjp_not_linear").matches(f)
    assert _known.Known("r", kind="vjp_not_linear").matches(f)
    assert not _known.Known("r", kind="not_deterministic").matches(f)
    assert _known.Known("r", kind="vjp_not_linear", where=(("input", "+0.0"),)).matches(f)
    assert not _known.Known("r", kind="vjp_not_linear", where=(("input", "-0.0"),)).matches(f)
    # a merged field matches any one of its values, whole: "-1 (mixed)" but not "-1"
    assert _known.Known("r", kind="vjp_not_linear", where=(("cotangent", "-1 (mixed)"),
                                                           ("dtype", "float32"))).matches(f)
    assert not _known.Known("r", kind="vjp_not_linear", where=(("cotangent", "-1"),)).matches(f)
    # every field must match; a field the finding lacks matches nothing
    assert not _known.Known("r", kind="vjp_not_linear", where=(("input", "+0.0"),
                                                               ("dtype", "float64"))).matches(f)
    assert not _known.Known("r", kind="vjp_not_linear", where=(("placement", "fill"),)
                            ).matches(f)
    # a field given as "" (no value) matches a finding without that field: an absent field is
    # read as "", no value
    assert _known.Known("r", kind="vjp_not_linear", where=(("placement", ""),)).matches(f)


def test_apply_accepts_by_the_first_matching_entry_and_never_a_usage_finding():
    wrong = _finding("vjp_not_linear", input="+0.0")
    usage = _finding("not_elementwise")
    by_kind = _known.Known("by kind", kind="vjp_not_linear")
    by_id = _known.Known("by id", id=wrong.id)
    unused = _known.Known("unused", kind="gradcheck_fails")
    accepted, unmatched = _known.apply([wrong, usage], [by_kind, by_id, unused,
                                                        _known.Known("u", id=usage.id)])
    assert accepted == {wrong.id: "by kind"}
    assert unmatched == [unused]
    assert _known.apply([], [by_id]) == ({}, [by_id])
    # a finding no entry matches is not accepted, and the others still are
    other = _finding("gradcheck_fails", input="1")
    assert _known.apply([other, wrong], [by_id]) == ({wrong.id: "by id"}, [])


# --- the two transformation judges of _sections ------------------------------------------------

def test_a_transformation_cell_s_status_gives_the_finding(monkeypatch):
    from study.workloads import transformations
    x = transformations.X
    reference = _sections.own_reference(_rule(relu), (0.0,), torch_cpu())
    # HVP is off by 5e-7 where judged: within a second-order cell's 1e-6, not a first-order's
    hvp = np.where(np.isnan(reference["HVP"]), 0.0, reference["HVP"] + 5e-7)
    cells = {"jvp": {"status": "ok", "detail": None},
             # wrong at x = 2.0 alone: its label is the one shown
             "eager grad": {"status": "wrong", "detail": np.where(x == 2.0, 7.0,
                                                                  reference["eager grad"])},
             "HVP": {"status": "wrong", "detail": hvp},
             "grad of grad": {"status": "error", "detail": "RuntimeError: no grad"}}
    calls = []

    def measured(*args):
        calls.append(args)
        return {k: dict(v) for k, v in cells.items()}
    monkeypatch.setattr(transformations, "transformation_cells", measured)
    rule, device = _rule(relu), torch_cpu()
    out, found = _sections.transforms(rule, (0.0,), device, tuple(cells), "aot_eager")
    # the rule's own reference is what the cells are measured against; second-order cells
    # with their own tolerance
    (framework, fn, got_reference, backend, got_device, columns, atol), = calls
    assert (framework, fn, backend, got_device, columns) == (
        "torch", rule.fn, "aot_eager", device, tuple(cells))
    assert atol == {"grad of grad": 1e-6, "HVP": 1e-6}
    for col, want in reference.items():
        np.testing.assert_array_equal(got_reference[col], want)
    labels = [f"x = {text(v, None)}" for v in x]
    assert labels == ["x = -1.5", "x = 0", "x = 0.7", "x = 2.0"]
    eager_grad = _sections.differing_elements(cells["eager grad"]["detail"],
                                              reference["eager grad"], 1e-12, labels)
    hvp_text = _sections.differing_elements(hvp, reference["HVP"], 1e-6, labels)
    assert hvp_text[0].endswith(f"({len(x)} of {len(x)} agree)")  # the premise
    assert eager_grad[0].startswith("7.0 at x = 2.0 (")  # relu's slope at 2 is 1, not 7
    assert found == [Finding("transform_wrong", Where("transforms", "float64",
                                                      transformation="eager grad"), *eager_grad),
                     Finding("transform_wrong", Where("transforms", "float64",
                                                      transformation="HVP"), *hvp_text),
                     Finding("transform_error", Where("transforms", "float64",
                                                      transformation="grad of grad"),
                             "RuntimeError: no grad")]
    np.testing.assert_array_equal(out["eager grad"]["expected"], reference["eager grad"])
    assert "expected" not in out["jvp"] and "expected" not in out["grad of grad"]


def test_no_transformation_is_judged_where_the_reference_raises():
    # transformations.X holds -1.5: a rule refusing negatives has no reference there
    assert _sections.transforms(_rule(_no_negatives(False)), (0.0,), torch_cpu(), ("jvp",),
                                "aot_eager") == ({"error": "ValueError: negative input of 4"}, [])


def test_twin_cells_differ_where_their_values_do():
    def row(dtype, label, value, reverse, execution="eager", placement="packed"):
        return {"dtype": dtype, "input": label, "x": 0.0, "bits": f"bits {label}",
                "execution": execution, "placement": placement, "value": value,
                "reverse": reverse}
    # the rows not compared come first: each is passed over, not the end of the comparison
    ours = [row("float32", "+0.0", Value(5.0), Value(5.0), execution="compiled"),
            row("float32", "+0.0", Value(5.0), Value(5.0), placement="fill"),
            row("float64", "+0.0", Value(5.0), Value(5.0)),
            row("float32", "-0.0", Value(-0.0), Value(0.0)),
            row("float32", "+nan", Value(NAN), Value(NAN)),
            row("float32", "+0.0", Value(0.0), Value(1.0))]
    theirs = [row("float32", "+0.0", Value(0.0), Value(0.0)),
              row("float32", "-0.0", Value(0.0), Value(0.0)),  # -0 and +0: the same value
              row("float32", "+nan", Value(NAN), Value(NAN)),
              row("float32", "+0.0", Value(9.0), Value(9.0), execution="compiled"),
              row("float32", "+0.0", Value(9.0), Value(9.0), placement="fill")]
    found = _sections.twin_conventions(ours, theirs)
    # only the eager packed +0.0 reverse differs: 1 against the twin's 0; float64 has no twin row
    assert found == [Finding("convention_differs_from_twin",
                             Where("twin", "float32", "eager", "packed", "+0.0", "bits +0.0",
                                   transformation="reverse"),
                             text(Value(1.0), None), say(PROSE, "twin_cell", theirs=Value(0.0)))]
    assert found[0].expected == "the twin's 0"
    value_differs = _sections.twin_conventions(
        [row("float32", "+0.0", Value(2.0), Value(1.0))], theirs)
    assert [f.where.transformation for f in value_differs] == ["value", "reverse"]

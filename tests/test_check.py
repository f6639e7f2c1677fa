"""study check's measurements: each finding kind triggered by a small rule of our own that has
the behaviour, asserting the finding, its severity and where it was seen."""
import numpy as np
import torch

from study.check import _judges, _probe, _sections
from study.check._findings import Finding, exit_code
from study.check._load import as_rule
from study.compare.cells import Error, Value
from study.measure.custom_rules import MyReLU, jax_relu_with_convention, torch_relu_with_convention
from tests.rules_with_findings import (AlphaAtZero, GuidedBackprop, NaNBelowZero, RandomAtZero,
                                       TwiceTheSlope, WritesGradOutput, WrongJvp, addcmul_relu,
                                       jax_guided, mixes_elements, where_relu)


def _rule(fn, framework=None):
    return as_rule(fn, framework)[0]


def _one(found: list[Finding], kind: str, **where) -> Finding:
    """The finding of this kind whose `where` has these fields (a field naming several
    cotangents or placements matches any one of them)."""
    def fits(f):
        return f.kind == kind and all(
            getattr(f.where, k) == v or v in (getattr(f.where, k) or "").split(", ")
            for k, v in where.items())
    hits = [f for f in found if fits(f)]
    assert hits, f"no {kind} at {where} in {[(f.kind, f.where) for f in found]}"
    return hits[0]


# --- one test per finding kind ---------------------------------------------------------------

def test_alpha_at_zero_is_not_linear_in_the_cotangent_at_zero_only(cpu):
    rows, found = _probe.linearity(_rule(AlphaAtZero), "float32", (0.0,), cpu)
    f = _one(found, "vjp_not_linear", input="+0.0", cotangent="2", dtype="float32")
    assert f.severity == "wrong" and f.where.bits == "0x00000000"
    assert {f.where.input for f in found} == {"+0.0", "-0.0"}  # 0.5 at 0 only, else linear
    # 2 x 0.5 = 1, but the backward returns 0.5 whatever the cotangent: 3 uniform cotangents
    # and 3 mixed ones (1 in the mixed call is its own reference) differ, one finding
    assert f.detail == "reverse 0.5 whatever the cotangent (1, 2, -1, 0.5)"
    assert f.expected == "2.0 × 0.5 = 1.0" and f.cells == 6


def test_guided_backprop_passes_gradcheck_but_not_a_negative_cotangent(cpu):
    rule = _rule(GuidedBackprop)
    rows, found = _probe.linearity(rule, "float64", (0.0,), cpu)
    f = _one(found, "vjp_not_linear", input="min_normal", cotangent="-1")
    assert f.severity == "wrong"
    assert _one(found, "vjp_not_linear", input="+inf", cotangent="-1 (mixed)")
    # at an ordinary input too: x = 1, where the derivative is 1 and -1 x 1 = -1 is dropped
    one = _one(found, "vjp_not_linear", input="1")
    assert one.where.bits == "0x3ff0000000000000" and one.where.cotangent == "-1, -1 (mixed)"
    assert one.detail == ("reverse 0 at cotangent -1.0, but 1.0 at cotangent 1: the incoming "
                          "gradient's sign gates it") and one.expected == "-1.0 × 1.0 = -1.0"
    # x > 0 at every ordinary point above 0 (0.5, 1, 3, and the positive draws)
    assert {"0.5", "1", "3"} <= {g.where.input for g in found}
    assert not {"-0.5", "-1", "-3"} & {g.where.input for g in found}
    _, checked = _probe.gradcheck(rule, (0.0,), cpu)  # gradcheck's cotangents are never < 0
    assert not checked


def test_jax_guided_backprop_is_not_linear(cpu):
    _, found = _probe.linearity(_rule(jax_guided), "float32", (0.0,), cpu)
    assert _one(found, "vjp_not_linear", input="min_normal", cotangent="-1").severity == "wrong"


def test_random_value_at_zero_is_not_deterministic_and_the_rng_is_restored(cpu):
    torch.manual_seed(123)
    before = torch.get_rng_state()
    row, found = _probe.determinism(_rule(RandomAtZero), "float32", (0.0,), cpu)
    assert torch.equal(torch.get_rng_state(), before)
    f = _one(found, "not_deterministic", input="+0.0")
    assert f.severity == "wrong" and f.where.section == "determinism"
    assert _one(found, "consumes_rng").severity == "info"
    assert row["consumes_rng"] and row["inputs_differing"] == 2  # +0.0 and -0.0


def test_addcmul_gives_nan_at_minus_inf(cpu):
    rule = _rule(addcmul_relu)
    rows = _probe.conventions(rule, "float32", (0.0,), cpu, ("packed", "fill"), (), ())
    around = _probe.finite_around(rule, "float32", (0.0,), cpu)
    assert "-inf" in around  # its one neighbour, -max, gives -0: NaN at -inf is a hole
    found = _judges.finiteness_findings(rows, {"float32": around})
    f = _one(found, "forward_not_finite", input="-inf", execution="eager")
    assert f.severity == "wrong" and f.where.placement == "packed, fill"
    assert [g.where.input for g in found if g.kind == "forward_not_finite"] == ["-inf"]


def test_a_backward_dividing_by_its_mask_is_reverse_not_finite_below_zero(cpu):
    rule = _rule(NaNBelowZero)
    rows = _probe.conventions(rule, "float64", (0.0,), cpu, ("packed",), (), ())
    found = _judges.finiteness_findings(rows, {"float64": _probe.finite_around(
        rule, "float64", (0.0,), cpu)})
    f = _one(found, "reverse_not_finite", input="-min_subnormal")
    assert f.severity == "wrong" and f.detail == "reverse [NaN] where the value is [0]"
    # -inf is not finite: NaN there is no finding; 0 and above divide by 1
    assert {g.where.input for g in found if g.kind == "reverse_not_finite"} == {
        "-min_subnormal"}


def test_where_swallows_nan_as_information(cpu):
    rows = _probe.conventions(_rule(where_relu), "float32", (0.0,), cpu, ("packed",), (), ())
    f = _one(_judges.finiteness_findings(rows, {}), "nan_swallowed", input="+nan")
    assert f.severity == "info" and exit_code([f]) == 0


def test_twice_the_slope_fails_gradcheck_at_smooth_points_only(cpu):
    rows, found = _probe.gradcheck(_rule(TwiceTheSlope), (0.0,), cpu)
    f = _one(found, "gradcheck_fails", input="0.35")
    assert f.severity == "wrong" and f.where.dtype == "float64"
    # the backward's 2 against the value's slope 1, to the digits a central difference gives
    assert f.detail == "reverse 2.0" and f.expected.startswith("≈ 1, the central difference")
    # below 0 the derivative 0 is right; at the kink gradcheck runs but is no finding
    assert {g.where.input for g in found} == {"0.35", "0.9", "1.6", "4.2", "7.1"}
    assert [r["x"] for r in rows if r["at_kink"]] == [0.0]


def test_a_wrong_jvp_is_transform_wrong_in_forward_mode_only(cpu):
    cells, found = _sections.transforms(_rule(WrongJvp), (0.0,), cpu,
                                        ("eager grad", "jvp", "forward_ad", "jacrev"),
                                        "aot_eager")
    assert {f.where.transformation for f in found} == {"jvp", "forward_ad"}
    assert all(f.kind == "transform_wrong" and f.severity == "wrong" for f in found)
    # at x = [-1.5, 0, 0.7, 2] with tangent [1, 2, -1, 0.5]: 3 x -1 and 3 x 0.5 where the
    # derivative is 1 x -1 and 1 x 0.5; at x <= 0 both are 0
    jvp = _one(found, "transform_wrong", transformation="jvp")
    assert jvp.detail == "-3.0 at x = 0.7; 1.5 at x = 2.0 (2 of 4 agree)"
    assert jvp.expected == "-1.0, 0.5 there"
    assert cells["eager grad"]["status"] == cells["jacrev"]["status"] == "ok"


def test_an_old_style_function_under_vmap_is_transform_error(cpu):
    cells, found = _sections.transforms(_rule(MyReLU), (0.0,), cpu, ("vmap forward",),
                                        "aot_eager")
    f = _one(found, "transform_error", transformation="vmap forward")
    assert f.severity == "warning" and f.detail.startswith("RuntimeError: ")
    assert exit_code(found) == 0


def test_second_order_cells_are_judged_against_a_finite_difference_at_smooth_points(cpu):
    softplus = _rule(torch.nn.functional.softplus)  # smooth: every point is judged
    cells, found = _sections.transforms(softplus, (), cpu, ("grad of grad", "HVP"), "aot_eager")
    assert not found and cells["HVP"]["status"] == "ok"
    reference = _sections.own_reference(_rule(torch.relu), (0.0,), cpu)["grad of grad"]
    assert np.isnan(reference[1]) and np.all(reference[[0, 2, 3]] == 0)  # x = 0 is a kink


def test_writing_grad_output_changes_the_skip_connection_gradient(cpu):
    rows, found = _sections.clone_hazards(_rule(WritesGradOutput), cpu)
    f = _one(found, "writes_grad_output", transformation="skip connection: act(x) + x")
    assert f.severity == "wrong"
    _, clean = _sections.clone_hazards(_rule(MyReLU), cpu)
    assert not clean


def test_a_twin_with_another_convention_differs_at_zero_and_on_the_tied_net(cpu):
    rule, twin = _rule(torch_relu_with_convention(1.0)), _rule(jax_relu_with_convention(0.0))
    nets, found = _sections.twin_nets(rule, twin, cpu)
    assert _one(found, "convention_differs_from_twin", input="random_ties").severity == "wrong"
    # seed 001's net and the tied one hit x @ w1 = 0 exactly; float32 matmuls of the two
    # continuous ones (random_no_ties, continuous_ties) round differently in torch and JAX, so
    # they are not judged
    assert [f.where.input for f in found] == ["seed", "random_ties"]
    assert [n["judged"] for n in nets] == [True, False, True, False]
    rows, twin_rows = (_probe.conventions(r, "float32", (0.0,), cpu, ("packed",), (), ())
                       for r in (rule, twin))
    cells = _sections.twin_conventions(rows, twin_rows)
    # at ±0 the conventions; at +min_subnormal JAX on a CPU flushes x to 0 (value 0, and
    # its derivative at 0, c = 0), where torch keeps it (value 2^-149, derivative 1)
    assert {(f.where.input, f.where.transformation) for f in cells} == {
        ("+0.0", "reverse"), ("-0.0", "reverse"), ("+min_subnormal", "value"),
        ("+min_subnormal", "reverse")}
    same, agree = _sections.twin_nets(rule, _rule(jax_relu_with_convention(1.0)), cpu)
    # equal conventions: only the continuous nets differ, by their matmuls' rounding
    assert not agree and [n["dataset"] for n in same if n["differ"]] == ["random_no_ties",
                                                                           "continuous_ties"]


def test_a_rule_mixing_elements_is_not_elementwise(cpu):
    found = _probe.check_callable(_rule(mixes_elements, "torch"), cpu)
    f = _one(found, "not_elementwise")
    assert f.severity == "usage" and exit_code(found) == 2


def test_compiled_against_eager_by_the_one_equal():
    def row(execution, value):
        return {"dtype": "float32", "input": "-0.0", "x": -0.0, "bits": "0x80000000",
                "execution": execution, "placement": "fill", "value": Value(value),
                "reverse": Value(1.0)}
    zero_sign = _judges.compiled_findings([row("eager", -0.0), row("compiled", 0.0)])
    assert [(f.kind, f.severity, f.where.transformation) for f in zero_sign] == [
        ("compiled_zero_sign", "info", "value")]
    differs = _judges.compiled_findings([row("eager", -0.0), row("compiled", 1.0)])
    assert [(f.kind, f.severity) for f in differs] == [("compiled_differs", "wrong")]
    assert not _judges.compiled_findings([row("eager", float("nan")),
                                         row("compiled", float("nan"))])


def test_scan_finds_relu6_kinks_and_an_ulp_step_is_no_kink(cpu):
    assert _probe.scan_kinks(_rule(torch.nn.functional.relu6), cpu) == (0.0, 6.0)
    assert _probe.scan_kinks(_rule(torch.nn.functional.softplus), cpu) == ()


def test_bits_are_the_inputs_exact_encoding():
    assert _probe.bits(-0.0, "float32") == "0x80000000"
    assert _probe.bits(2.0 ** -149, "float32") == "0x00000001"  # smallest subnormal
    assert _probe.bits(float("-inf"), "bfloat16") == "0xff80"


def test_a_placement_dependent_builtin_is_still_linear(cpu):
    # F.relu6's backward at NaN is 0 in the vectorised body, 1 in the scalar tail
    # (study.measure.placement): the mixed call is compared with cotangent 1 at the same positions
    rows, found = _probe.linearity(_rule(torch.nn.functional.relu6), "float32", (0.0, 6.0), cpu)
    assert not found and [r["differ"] for r in rows] == [0, 0, 0, 0]


def test_compiled_forward_mode_where_eager_raises_is_held_to_the_reverse_derivative():
    def row(execution, forward, reverse):
        return {"dtype": "float32", "input": "+nan", "x": float("nan"), "bits": "0x7fc00000",
                "execution": execution, "placement": "fill", "value": Value(float("nan")),
                "reverse": Value(reverse), "forward": forward}
    raises = Error("RuntimeError: In order to use an autograd.Function with functorch transforms")
    # MyReLU: eager jvp raises; compiled jvp differentiates clamp instead (0 at NaN), where
    # the rule's own backward gives 1
    found = _judges.compiled_findings([row("eager", raises, 1.0),
                                      row("compiled", Value(0.0), 1.0)])
    assert [(f.kind, f.where.transformation) for f in found] == [("compiled_differs", "forward")]
    assert found[0].detail == "compiled [0]"
    assert found[0].expected == "eager reverse (eager forward mode raises) [1.0]"


def test_cost_is_a_ratio_with_its_interval_and_the_bytes_kept(cpu, monkeypatch):
    monkeypatch.setattr(_sections, "COST_ELEMENTS", 4096)  # the timing code, on a tiny input
    cost = _sections.cost(_rule(jax_relu_with_convention(0.0)), cpu, rounds=20)
    eager = cost["ratios"]["eager"]
    assert eager.lo <= eager.value <= eager.hi and eager.n == 20
    assert set(cost["ratios"]) == {"eager", "compiled"} and cost["builtin"] == "jax.nn.relu"
    assert cost["bytes_per_element"]["rule"] == 4.0  # its custom_vjp keeps x: float32


def test_compiled_code_is_measured_where_eager_code_is_too():
    from study.check._run import COMPILED_PLACEMENTS, EAGER_PLACEMENTS, QUICK_PLACEMENTS
    for framework, (compiled_at,) in COMPILED_PLACEMENTS.items():
        assert compiled_at in EAGER_PLACEMENTS[framework]  # else compiled is compared to nothing
        assert compiled_at in QUICK_PLACEMENTS[framework]


def test_a_rule_raising_below_zero_is_measured_not_crashed_on(cpu):
    def no_negatives(x):
        if bool((x < 0).any()):
            raise ValueError("negative input")
        return x.clamp(min=0)
    rule = _rule(no_negatives, "torch")
    assert not _probe.check_callable(rule, cpu)  # elementwise on the positive inputs
    assert _probe.scan_kinks(rule, cpu) == "ValueError: negative input"
    cells, found = _sections.transforms(rule, (0.0,), cpu, ("jvp",), "aot_eager")
    assert cells == {"error": "ValueError: negative input"} and not found
    rows, found = _probe.gradcheck(rule, (0.0,), cpu)
    assert not found  # gradcheck raising below 0 is reported, not a failed check
    assert {r["outcome"] for r in rows if r["x"] < 0} == {"ValueError: negative input"}

"""The zero-point atlas against measurements made here, in this interpreter, on 0-d inputs.

Nothing here pastes a convention: whatever release is installed, the atlas built in this test
must contain what a 0-d probe of the same op returns, and its porting guide and look-alike pairs
must hold on those probes.
"""
import math

import numpy as np
import pytest
import torch

import experiments.zero_point as zp
import experiments.zero_point_report as zp_report
import study.rules as rules_module
from study.conventions import DTYPES, probe_inputs, reverse_derivative
from study.placement import (ALL_PLACEMENTS, FILL_LENGTH, cell_values, depends_on_placement,
                             describe_where, measure, same_value, summarise)
from study.results import Run
from study.rules import RULES, Rule, by_key

CUSTOM = [r for r in RULES if r.kind == "custom"]
PROV = {"utc": "t", "host": "h", "device": "cpu", "torch": "t", "jax": "j", "scope": "quick"}


def tables_of(runs) -> dict:
    return {t.id: t for t in zp.EXPERIMENT.render(zp.EXPERIMENT.summarise(runs)).tables}
SAMPLE = sorted({k for pair in zp.NATURAL_PAIRS for k in pair})


@pytest.fixture(scope="module")
def sample_run():
    """A quick zero_point run of every look-alike op, made in this interpreter."""
    from study.devices import Device
    device = Device("cpu")
    records = [rec for case in zp.cases("quick") if case.get("rule") in SAMPLE
               and case["part"] == "atlas" for rec in zp.run_case(device, **case)]
    return Run("zero_point", PROV, records, "x.json")


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("rule", CUSTOM, ids=lambda r: r.key)
def test_custom_rules_return_their_convention_at_zero_everywhere(cpu, rule, dtype):
    placements = ALL_PLACEMENTS if rule.framework == "torch" else ("0-d",)
    out = measure(rule, [0.0, -0.0], dtype, cpu, placements)
    for cells in out["reverse"]:
        assert summarise(cells) == rule.convention, cells
    # forward mode is unsupported for some styles (an error), else it must agree; a
    # torch.library.custom_op has no forward rule of ours at all, so what torch does there is
    # measured (the transform matrix), not asserted
    if "custom_op" in rule.key:
        return
    for cells in out["forward"]:
        c = summarise(cells)
        assert isinstance(c, str) or c == rule.convention, c


def test_atlas_cells_contain_the_0d_measurement_of_every_op_and_input(cpu, sample_run):
    for rec in (r for r in sample_run.records if r["part"] == "atlas"):
        rule, op = by_key(rec["rule"]), zp_report._op(rec)
        for label, x in zip(rec["inputs"], rec["x"]):
            got = reverse_derivative(rule, x, rec["dtype"], cpu)
            cell = op.cell("reverse", label)
            assert any(same_value(got, v) for v in cell_values(cell)), (rule.key, label, cell)


def test_porting_guide_and_pairs_hold_on_0d_measurements(cpu, sample_run):
    inputs = probe_inputs("float32", zp.ALL_KINKS)

    def probe(key):  # value and reverse gradient of every input, each as a 0-d tensor
        rule = by_key(key)
        out = measure(rule, [v for _, v in inputs], "float32", cpu, ("0-d",))
        return {m: [summarise(c) for c in out[m]] for m in ("value", "reverse")}

    names = {r.name: r.key for r in RULES}
    tables = tables_of([sample_run])
    checked = 0
    for row in tables["porting_torch_to_jax"].rows:
        src, every = row[0], row[1]
        if every.startswith("none"):
            continue
        a = probe(names[src])
        for dst in every.split("; "):
            b = probe(names[dst])
            for m in ("value", "reverse"):
                assert all(same_value(x, y) for x, y in zip(a[m], b[m])), (src, dst, m)
            checked += 1
    for torch_op, jax_op, verdict, *_ in tables["natural_pairs"].rows:
        a, b = probe(names[torch_op])["reverse"], probe(names[jax_op])["reverse"]
        keep = [i for i, (lab, _) in enumerate(inputs) if not lab.endswith("min_subnormal")]
        same = all(same_value(a[i], b[i]) for i in keep)
        if verdict == "agree":
            assert same, (torch_op, jax_op)
            checked += 1
        elif verdict == "disagree":
            assert not same, (torch_op, jax_op)
            checked += 1
    assert checked >= 5


def test_a_planted_placement_dependence_is_found_and_reported(cpu):
    # Oracle by construction: a rule whose gradient is 1 on 0-d inputs and 0.5 elsewhere.
    class ByRank(torch.autograd.Function):
        @staticmethod
        def forward(x):
            return x.clamp(min=0)

        @staticmethod
        def setup_context(ctx, inputs, output):
            ctx.rank = inputs[0].dim()

        @staticmethod
        def backward(ctx, g):
            return g * (1.0 if ctx.rank == 0 else 0.5)

    rule = Rule("torch_by_rank", "torch", "by rank", "custom", ByRank.apply, 0.5)
    out = measure(rule, [2.0], "float32", cpu, ALL_PLACEMENTS)
    cell = summarise(out["reverse"][0])
    assert depends_on_placement(cell) and sorted(cell["values"]) == [0.5, 1.0]
    assert cell["where"]["0-d"] == [[cell["values"].index(1.0), "0"]]
    assert describe_where(cell).count(" at ") == 2


def test_position_runs_are_reported_as_ranges():
    vals = [0.0] * 64 + [1.0] * (FILL_LENGTH - 64)
    cell = summarise({"fill": vals, "0-d": [1.0]})
    assert cell["values"] == [0.0, 1.0]
    assert cell["where"]["fill"] == [[0, "0-63"], [1, f"64-{FILL_LENGTH - 1}"]]
    assert describe_where(cell) == f"0 at fill 0-63; 1 at fill 64-{FILL_LENGTH - 1}, 0-d"
    nan_cell = summarise({"a": [math.nan, math.nan], "b": [math.nan]})
    assert math.isnan(nan_cell)


def test_probe_inputs_are_exact_neighbours_of_each_kink():
    labels = dict(probe_inputs("float32", (0.0, 6.0)))
    assert np.float32(labels["6-ulp"]) == np.nextafter(np.float32(6), np.float32(0))
    assert np.float32(labels["6+ulp"]) == np.nextafter(np.float32(6), np.float32(7))
    assert labels["+min_subnormal"] == float(np.finfo(np.float32).smallest_subnormal)
    assert np.copysign(1, labels["-0.0"]) == -1


def test_an_op_added_to_the_registry_appears_in_the_atlas_with_no_other_change(cpu, monkeypatch):
    clamp_at_0 = reverse_derivative(by_key("torch_clamp_min0"), 0.0, "float32", cpu)
    new = Rule("torch_twice_clamp", "torch", "2 clamp(x, min=0) (test op)", "builtin",
               lambda x: torch.clamp(x, min=0) * 2, None, (0.0,), False)
    registry = (by_key("torch_relu"), by_key("jax_relu"), new)
    monkeypatch.setattr(rules_module, "RULES", registry)
    monkeypatch.setattr(rules_module, "_BY_KEY", {r.key: r for r in registry})
    monkeypatch.setattr(zp, "RULES", registry)
    records = [rec for case in zp.cases("quick") for rec in zp.run_case(cpu, **case)]
    tables = tables_of([Run("zero_point", PROV, records, "x.json")])
    row = next(r for r in tables["atlas_torch"].rows if r[0] == new.name)
    assert row[3] == zp_report.shown(2 * clamp_at_0)  # derived from this torch's own clamp


def op_with(forward: list, reverse: list, labels=("-1", "1", "+0.0", "nan")):
    """A hand-made atlas op at kink 0, with the given forward and reverse cells."""
    return zp_report.OpAtlas("r", "op", "torch", "custom", 0.0, [0.0], "float32", list(labels),
                             {"value": [0.0] * len(labels), "reverse": reverse, "forward": forward,
                              "second": [0.0] * len(labels)}, None)


def test_forward_mode_is_flagged_where_it_disagrees_with_reverse_away_from_the_kink():
    # d/dx of relu is 1 at x = 1 in both modes; a tangent of 0 there is wrong, whatever the
    # two modes say at the kink (+0.0) or at NaN, where conventions may differ
    wrong = op_with(forward=[0.0, 0.0, 0.0, 0.0], reverse=[0.0, 1.0, 0.0, 0.0])
    right = op_with(forward=[0.0, 1.0, 1.0, 1.0], reverse=[0.0, 1.0, 0.0, float("nan")])
    assert zp_report.forward_disagrees(wrong) == ["1"]
    assert zp_report.forward_disagrees(right) == []
    assert "silently wrong" in zp_report.forward_text(wrong, "+0.0")


def test_a_cell_that_differs_only_under_jit_is_a_mode_not_a_placement():
    jit_only = {"values": [float("nan"), 0.0],
                "where": {"0-d": [[0, "all"]], "fill": [[0, "0-66"]], "0-d (jit)": [[1, "all"]]}}
    placed = {"values": [0.0, 1.0], "where": {"fill": [[0, "0-63"], [1, "64-66"]]}}
    op = zp_report.OpAtlas("r", "x * (x > 0)", "jax", "builtin", None, [0.0], "float32", ["nan"],
                           {"value": [jit_only], "reverse": [placed]}, None)
    run = zp_report.RunAtlas(Run("zero_point", PROV, [], "x.json"), [op], [], 67, [])
    assert [(mode, label) for _, mode, label, _ in zp_report.placement_cells(run)] == [
        ("reverse", "nan")]
    (_, mode, label, cell), = zp_report.jit_cells(run)
    assert (mode, label) == ("value", "nan") and cell["jit"] == 0.0 and math.isnan(cell["eager"])


def test_the_conventions_table_gives_each_pair_at_its_kink_and_where_a_cell_changes():
    from dataclasses import replace
    from experiments.zero_point_conventions import conventions_rows
    labels = ["-min_subnormal", "+0.0", "+min_subnormal"]

    def op(rule, framework, look_alike, grad_at_0):
        return zp_report.OpAtlas(rule, rule, framework, "builtin", None, [0.0], "float32", labels,
                                 {"value": [0.0, 0.0, 0.0], "reverse": [0.0, grad_at_0, 1.0],
                                  "forward": [0.0, grad_at_0, 1.0], "second": [0.0] * 3},
                                 look_alike)

    def run(tag, torch_grad):
        return zp_report.RunAtlas(replace(Run("zero_point", PROV, [], f"{tag}.json"), tag=tag),
                                  [op("clamp", "torch", "clip", torch_grad),
                                   op("clip", "jax", "clamp", 0.5)], [], 67, [])
    summary = zp_report.Summary([run("C2", 0.0), run("C1", 1.0)], {}, [])
    # read from C1, the first in the legend; C2's torch derivative at 0 differs, so it is named
    assert conventions_rows(summary) == [["clamp", "clip", 0.0, "0", "1", "0", "0.5", False,
                                          "torch d/dx: C2"]]

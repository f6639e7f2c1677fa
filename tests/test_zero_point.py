import numpy as np
import pytest

import experiments
import experiments.zero_point as zp
import study.rules as rules_module
from study import results
from study.conventions import DTYPES, probe_inputs, probe_modes
from study.results import Run
from study.rules import RULES, Rule, by_name

CUSTOM = [r for r in RULES if r.kind == "custom"]


def committed_zero_point_run() -> Run:
    runs, _ = results.load_runs([results.RESULTS_DIR], set(experiments.NAMES))
    return zp._reference([r for r in runs if r.experiment == "zero_point"])


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("rule", CUSTOM, ids=lambda r: r.name)
def test_measured_convention_equals_declared_c_in_every_dtype_and_mode(cpu, rule, dtype):
    out = probe_modes(rule, [0.0, -0.0], dtype, cpu)
    assert out["reverse"] == [rule.convention, rule.convention]
    # forward mode is unsupported for these rule styles (a recorded error), else it must agree
    assert isinstance(out["forward"], str) or out["forward"] == [rule.convention] * 2


def test_probe_inputs_are_exact_neighbours_of_each_kink():
    labels = dict(probe_inputs("float32", (0.0, 6.0)))
    assert np.float32(labels["6-ulp"]) == np.nextafter(np.float32(6), np.float32(0))
    assert np.float32(labels["6+ulp"]) == np.nextafter(np.float32(6), np.float32(7))
    assert labels["+min_subnormal"] == float(np.finfo(np.float32).smallest_subnormal)
    assert np.copysign(1, labels["-0.0"]) == -1


def test_every_porting_match_really_holds_on_every_input(cpu):
    tables = {t.id: t for t in zp.tables([committed_zero_point_run()])}
    inputs = probe_inputs("float32", zp.ALL_KINKS)
    checked = 0
    for tid in ("porting_torch_to_jax", "porting_jax_to_torch"):
        for src_name, every, no_sub in tables[tid].rows:
            for cell, skip in ((every, ()), (no_sub, zp.SUBNORMAL)):
                names = ([cell.split(", ", 1)[1]] if cell.startswith("none: use a custom rule, ")
                         else [] if cell.startswith("none") else cell.split("; "))
                src = probe_modes(by_name(src_name), [v for _, v in inputs], "float32", cpu)
                for name in names:
                    dst = probe_modes(by_name(name), [v for _, v in inputs], "float32", cpu)
                    for i, (label, _) in enumerate(inputs):
                        if label in skip:
                            continue
                        for mode in ("value", "reverse"):
                            assert zp.same(src[mode][i], dst[mode][i]), (src_name, name, label)
                    checked += 1
    assert checked >= 10


def test_atlas_is_complete_every_op_and_input_has_a_value_or_a_reason():
    run = committed_zero_point_run()
    atlas = {(r["rule"], r["dtype"]): r for r in zp._atlas(run)}
    for rule in RULES:
        for dtype in DTYPES:
            rec = atlas[(rule.name, dtype)]
            for mode in zp.MODES:
                assert isinstance(rec[mode], str) or len(rec[mode]) == len(rec["inputs"])


def test_an_op_added_to_the_registry_appears_in_the_atlas_with_no_other_change(cpu, monkeypatch):
    import torch
    new = Rule("torch", "torch.nn.functional.rrelu-free test op", "builtin",
               lambda x: torch.clamp(x, min=0) * 2, None, (0.0,), False)
    registry = (by_name("torch.relu"), by_name("jax.nn.relu"), new)
    monkeypatch.setattr(rules_module, "RULES", registry)
    monkeypatch.setattr(zp, "RULES", registry)
    records = [rec for case in zp.cases(quick=True) for rec in zp.run_case(cpu, **case)]
    prov = {"utc": "t", "host": "h", "device": "cpu", "torch": "t", "jax": "j"}
    tables = {t.id: t for t in zp.tables([Run("zero_point", prov, records, "x.json")])}
    row = next(r for r in tables["atlas_torch"].rows if r[0] == new.name)
    assert row[3] == 2.0  # d(2 clamp(x, min=0))/dx at +0 is 2 x torch's clamp convention of 1

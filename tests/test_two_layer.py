"""two_layer's new cases (ties in continuous data, each rule alone) against hand-derived
expectations, and its answer against Table 1 on hand-made runs."""
import csv as csvlib
import io
import re

import numpy as np
import pytest

from experiments.two_layer import measure, report, summary
from study.report import csv, markdown
from study.report.format import row_texts
from study.runs.results import Run
from study.measure.rules import by_key

PROV = {"utc": "2026-01-01T00:00:00+00:00", "host": "h", "device": "cpu", "torch": "t",
        "jax": "j", "scope": "standard"}


def test_continuous_ties_keep_the_normal_draws_and_zero_what_the_design_says():
    # 32×16 @ 16×24: 4 zero rows of x (0, 8, 16, 24) zero 4 × 24 = 96 pre-activations, 4 zero
    # columns of w1 (0, 6, 12, 18) zero 32 × 4 = 128, 4 × 4 = 16 of them counted twice: 208
    plain, tied = measure.make_dataset("random_no_ties"), measure.make_dataset("continuous_ties")
    assert np.count_nonzero(tied["x"] @ tied["w1"] == 0) == 96 + 128 - 16
    assert np.count_nonzero(plain["x"] @ plain["w1"] == 0) == 0
    kept = tied["x"] != 0
    assert np.array_equal(tied["x"][kept], plain["x"][kept]) and kept.sum() == (32 - 4) * 16


def test_the_preactivations_are_one_array_with_both_zeros_and_a_cotangent():
    a, b = measure.preactivations(), measure.preactivations()
    z = a["z"]
    assert z.dtype == np.float32 and np.array_equal(z, b["z"]) and z.shape == (32, 24)
    zeros = z == 0
    assert zeros.sum() == 208 and np.signbit(z[zeros]).sum() == 4 * 24  # the zero rows are −0
    assert a["cotangent"].dtype == np.float32 and a["cotangent"].shape == z.shape


@pytest.mark.parametrize("rule, at_0", [("torch_relu", 0.0), ("jax_relu", 0.0),
                                        ("torch_clamp_min0", 1.0), ("jax_custom_c1", 1.0),
                                        ("torch_custom_c0.5", 0.5), ("jax_maximum0", 0.5)])
def test_a_rule_alone_gives_max_and_the_cotangent_masked_by_its_convention(rule, at_0, cpu):
    # by hand: relu(z) = max(z, 0); the VJP is the cotangent where z > 0, c times it at z = ±0
    # and 0 where z < 0 (c: the rule's derivative at 0)
    z = np.array([-1.5, -0.0, 0.0, 2.0], np.float32)
    g = np.array([1.0, 2.0, 3.0, 4.0], np.float32)
    value, grad = measure.rule_alone(by_key(rule), z, g, cpu)
    assert np.array_equal(value, [0.0, 0.0, 0.0, 2.0])
    assert np.array_equal(grad, [0.0, 2.0 * at_0, 3.0 * at_0, 4.0])


def test_a_rule_alone_record_counts_the_zeros_of_its_array(cpu):
    record, = measure.run_case(cpu, measure.RULE_ALONE, by_key("torch_relu"))
    # z = x @ w1 is 32×24; x's rows 0, 8, 16, 24 are zero: 4 × 24 = 96 zeros, made −0; w1's
    # columns 0, 6, 12, 18 are zero: 4 × 32 = 128 more, 4 × 4 = 16 of them counted already
    assert record["preactivation_zeros"] == 96 + 128 - 16 and record["negative_zeros"] == 96
    assert record["shapes"] == {"z": [32, 24], "cotangent": [32, 24]}


def _net(dataset, framework, at_0, g1, g2, zeros=0):
    part = "rule_alone" if dataset == measure.RULE_ALONE else "nets"
    return {"part": part, "dataset": dataset, "framework": framework, "rule": f"{framework}_{at_0}",
            "name": f"{framework} rule {at_0}", "kind": "builtin", "convention": None,
            "measured_at_0": at_0, "reference_rule": f"{framework}_0.0", "loss": 1.0,
            "grad_w1": g1, "grad_w2": g2, "preactivation_zeros": zeros, "shapes": {"x": [2, 2]}}


def _runs(alone=True, **jax_alone):
    # random_no_ties: torch and JAX differ by 2^-11 at a gradient of 3192.307 (its float32 ulp is
    # 2^-12, so 2 ulp); random_ties: identical; preactivations: identical values and gradients,
    # but where `jax_alone` sets JAX's fields
    big = 3192.30712890625
    records = [_net("random_no_ties", "torch", 0.0, [[big]], [[1.0]]),
               _net("random_no_ties", "jax", 0.0, [[big + 2 ** -11]], [[1.0]]),
               _net("random_ties", "torch", 0.0, [[8.0]], [[1.0]], zeros=40),
               _net("random_ties", "jax", 0.0, [[8.0]], [[1.0]], zeros=40)]
    if alone:
        records += [{**_net("preactivations", fw, 0.0, None, None, zeros=3), "value": [[0.0, 1.0]],
                     "grad_z": [[0.0, 2.0]], "shapes": {"z": [1, 2]},
                     **(jax_alone if fw == "jax" else {})} for fw in ("torch", "jax")]
    return [Run.of("two_layer", PROV, records, "x.json", tag="C1", title="C1")]


def _printed(table) -> set[str]:
    return {t for row in table.frame.itertuples(index=False) for t in row_texts(row)}


def test_answer_1_prints_only_numbers_as_table_1_prints_them():
    # once: "the largest gradient 3190" beside Table 1's 3192 (the answer used 3 figures)
    rendered = report.render(summary.summarise(_runs(alone=False)))
    twins = next(a for a in rendered.answers if a.question == "twins")
    ties = next(t for t in rendered.tables if t.id == "ties")
    numbers = re.findall(r"(?<![\w.])-?\d+(?:\.\d+)?(?![\w.])", twins.text.replace("001", ""))
    # 2^-11 apart at 3192.307, whose float32 ulp is 2^-12: 2 ulp, as Table 1's ulp column says
    assert "differ by up to 2 ulp of the largest gradient" in twins.text
    assert set(numbers) <= _printed(ties), (twins.text, _printed(ties))


def test_answer_1_counts_the_zeros_of_the_rows_it_describes():
    rendered = report.render(summary.summarise(_runs()))
    text = next(a for a in rendered.answers if a.question == "twins").text
    ties = next(t for t in rendered.tables if t.id == "ties").frame
    zeros = dict(zip(ties["dataset"], ties["exact zeros"]))
    assert f"({zeros['preactivations']} of them exactly 0)" in text
    assert f"up to {zeros['random_ties']} ties at 0" in text
    # the preactivations row's Δ and ±0 counts are 0, within a framework and across
    assert ("every rule of its convention, in its own framework and in the other, bit for bit"
            in text)


def test_answer_1_says_the_rules_differ_where_the_rules_alone_differ():
    runs = _runs(grad_z=[[0.0, 2.5]])
    text = next(a for a in report.render(summary.summarise(runs)).answers
                if a.question == "twins").text
    assert "by up to 0 within a framework and by up to 0.5 across the two" in text
    assert "not their rules" not in text


def test_the_two_layer_csvs_are_long_one_element_a_row():
    # seed 001's shapes: grad w1 3×2 and grad w2 2×2; two rules, so 2 × (6 + 4) Δ rows and
    # 2 × (1 loss + 6 + 4) gradient rows
    g1, g2 = [[0.0, 1.0], [2.0, 3.0], [4.0, 5.0]], [[6.0, 7.0], [8.0, 9.0]]
    records = [_net("seed", "torch", 0.0, g1, g2, zeros=1),
               _net("seed", "torch", 1.0, g1[:2] + [[4.0, 5.0 + 38]], g2, zeros=1)]
    rendered = report.render(summary.summarise([Run.of("two_layer", PROV, records, "x.json",
                                                       tag="C1", title="C1")]))
    tables = {t.id: t for t in rendered.tables}
    diff = list(csvlib.DictReader(io.StringIO(csv(tables["diff_vs_relu"]))))
    assert len(diff) == 2 * (6 + 4)
    assert [(r["rule"], r["parameter"], r["i"], r["j"], r["Δ"]) for r in diff
            if r["Δ"] not in ("0", "0.0")] == [("torch_1.0", "grad_w1", "2", "1", "-38")]
    grads = list(csvlib.DictReader(io.StringIO(csv(tables["gradients"]))))
    assert len(grads) == 2 * (1 + 6 + 4)
    for t in tables.values():
        rows = list(csvlib.reader(io.StringIO(csv(t))))
        assert not any(c.startswith("[") for row in rows for c in row), t.id
    loss = tables["gradients"].frame.iloc[0]
    assert loss["quantity"] == "loss" and loss["i"] is None and loss["convention"] is None
    assert "| 1 | 0, 0; 0, 0; 0, -38 |" in markdown(tables["diff_vs_relu"])  # rows by ";"


def test_a_zero_of_the_other_sign_is_counted_and_the_answer_drops_bit_for_bit():
    # equal as numbers, |Δ| = 0, but JAX's first value is −0 where torch's is +0: one element
    runs = _runs(value=[[-0.0, 1.0]])
    s = summary.summarise(runs)
    row = s.gaps[s.gaps["dataset"] == "preactivations"].iloc[0]
    assert row["across"] == 0 and row["signs_across"] == 1 and row["signs_same_framework"] == 0
    text = next(a for a in report.render(s).answers if a.question == "twins").text
    assert "in its own framework and in the other, as numbers, but not bit for bit" in text
    assert "the sign of zero differs in up to 1 element across the two, in none within" in text


def _gap(run, dataset, across_ulps, zeros=0):
    # a ties-table row: torch against JAX differing by `across_ulps` float32 ulp at 3192.307
    # (ulp 2^-12 there), nothing else differing
    return {"run": run, "dataset": dataset, "zeros": zeros, "across": across_ulps * 2 ** -12,
            "signs_across": 0, "across_ulps": float(across_ulps), "scale": 3192.30712890625,
            "same_framework": 0.0, "signs_same_framework": 0}


def test_answer_1_gives_the_main_runs_own_ulps_and_the_runs_that_agree_bit_for_bit():
    # the report said "on continuous data they differ by up to 2 ulp ... without ties (C1, ...)"
    # where Table 1 gave the main run C25 1 ulp and C37 (another JAX release) 0: bit for bit
    gaps = [_gap(run, "random_ties", 0, zeros=40) for run in ("C1", "C25", "C37")]
    gaps += [_gap("C1", "random_no_ties", 2), _gap("C25", "random_no_ties", 1),
             _gap("C37", "random_no_ties", 0),
             _gap("C25", "continuous_ties", 2, zeros=208), _gap("C37", "continuous_ties", 0, 208)]
    t = summary.twins(gaps, {}, "C25")
    assert [g.runs for g in t.rounded] == [("C25",), ("C1",), ("C37",)]  # main first, 0 last
    text = " ".join(report.say(report.PROSE, "answer_twins", t=t, older=["C1"]).split())
    assert ("on continuous data without ties they differ by up to 1 ulp of the largest gradient "
            "in C25 (the main run), by up to 2 ulp in C1 (older code) and agree bit for bit in "
            "C37") in text
    assert ("with 208 ties at 0 by up to 2 ulp in C25 (the main run) and agree bit for bit in "
            "C37") in text
    assert "up to 2 ulp of the largest gradient, without ties" not in text

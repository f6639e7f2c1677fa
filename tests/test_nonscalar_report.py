"""Seed 002's table on a hand-made run: its CSV is one row per step, source and element."""
import csv as csvlib
import io

from experiments.nonscalar_backward import report, summary
from study.report import csv
from study.runs.results import Run

PROV = {"utc": "2026-01-01T00:00:00+00:00", "host": "h", "device": "cpu", "torch": "t",
        "jax": "j", "scope": "standard"}
A = [[1.0, 2.0, 3.0]]


def _runs():
    # out = a * a: the chain rule's a.grad for cotangent ones is 2a = [2, 4, 6]; torch raises
    # without a cotangent, and so does JAX, and the chain rule gives no gradient there (None)
    step = {"part": "steps", "device": "cpu", "a": A, "dtype": "float32"}
    records = [
        {**step, "framework": "torch", "step": "no argument", "result": None,
         "error": "RuntimeError: not a scalar", "chain_rule": None},
        {**step, "framework": "jax", "step": "no argument", "result": None,
         "error": "TypeError: not a scalar", "chain_rule": None},
        {**step, "framework": "torch", "step": "ones", "result": [[2.0, 4.0, 6.0]], "error": None,
         "chain_rule": [[2.0, 4.0, 6.0]]},
        {**step, "framework": "jax", "step": "ones", "result": [[2.0, 4.0, 6.0]], "error": None,
         "chain_rule": [[2.0, 4.0, 6.0]]}]
    return [Run.of("nonscalar_backward", PROV, records, "x.json", tag="C1", title="C1")]


def test_the_side_by_side_csv_is_one_element_a_row_and_an_error_its_own_cell():
    table, = report.render(summary.summarise(_runs())).tables
    rows = list(csvlib.DictReader(io.StringIO(csv(table))))
    # the error step: one row per source (3); the ones step: 3 sources × 3 elements
    assert len(rows) == 3 + 3 * 3
    assert not any(v.startswith("[") for r in rows for v in r.values())
    assert [(r["result of"], r["error"]) for r in rows[:3]] == [
        ("torch a.grad", "RuntimeError: not a scalar"), ("JAX", "TypeError: not a scalar"),
        ("chain rule", "an error: the output is not a scalar")]  # prose.j2's no_chain_rule
    assert [(r["result of"], float(r["j"]), float(r["value"])) for r in rows[3:6]] == [
        ("torch a.grad", 0, 2.0), ("torch a.grad", 1, 4.0), ("torch a.grad", 2, 6.0)]
    listing = table.listing
    assert listing.iloc[0]["value"] is None and listing.iloc[0]["i"] is None  # missing, not NaN

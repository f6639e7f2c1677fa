"""Table 4 and answer 6 on hand-made runs: the answer names exactly the transformations the
table's last column says none for, a ✓ that a bypassed rule also gives prints as (✓), and an
error blames only the style it belongs to."""
import csv as csvlib
import io
import re

from experiments.transforms import report, summary
from experiments.transforms.measure import cell_row
from study.report import csv
from study.runs.results import Run

PROV = {"utc": "2026-01-01T00:00:00+00:00", "host": "h", "device": "cpu", "torch": "t",
        "jax": "j", "scope": "standard"}
COLUMNS = ["eager grad", "compiled func.grad", "grad of compiled", "grad of grad"]
NO_GRAPH = "RuntimeError: the first gradient has no graph: autograd cannot differentiate it again"
ONCE = " (@once_differentiable)"
BYPASSED = [0.0, -1.0, 2.0]  # what a transformation gives that differentiates clamp, not the rule


def _style(style, rule, convention, cells, kind="custom", framework="torch"):
    """The rule's row of the table rules and its row per transformation of transform_cells."""
    return [{"part": "rules", "style": style, "rule": rule, "name": rule, "framework": framework,
             "kind": kind, "convention": convention, "compile_backend": "inductor",
             "columns": COLUMNS}] + [cell_row(rule, c, {"status": s, "detail": d})
                                     for c, (s, d) in cells.items()]


def _runs():
    # #1, the seed's style (c = 1): its compiled func.grad value is BYPASSED, as #2's wrong one
    # is, so its ✓ cannot show its rule ran; #2 (c = 0) passes eager grad only; torch.relu
    # fails grad of compiled too
    ok = ("ok", [0.0, 0.0, 2.0])
    seed = _style("torch legacy (seed 000)", "seed", 1.0, {
        "eager grad": ("ok", BYPASSED), "compiled func.grad": ("ok", BYPASSED),
        "grad of compiled": ("error", "Unsupported: functorch"),
        "grad of grad": ("error", NO_GRAPH + ONCE)})
    modern = _style("torch modern + @once_differentiable", "once", 0.0, {
        "eager grad": ok, "compiled func.grad": ("wrong", BYPASSED),
        "grad of compiled": ("error", "Unsupported: functorch"),
        "grad of grad": ("error", NO_GRAPH + ONCE)})
    relu = _style("torch reference: torch.relu", "torch.relu", 0.0, {
        "eager grad": ok, "compiled func.grad": ok,
        "grad of compiled": ("error", "Unsupported: functorch"), "grad of grad": ok},
        kind="builtin")
    return [Run.of("transforms", PROV, seed + modern + relu, "x.json", tag="C1", title="C1")]


def _rendered():
    rendered = report.render(summary.summarise(_runs()))
    table, = rendered.tables
    return table, rendered.answers[0].text


def _nones(table) -> set[str]:
    """The transformations the last column says no style of ours passes."""
    return {m.strip() for cell in table.frame["how to make it work"]
            for m in re.findall(r"([\w .]+): none", cell)}


def test_answer_6_names_exactly_the_transformations_its_table_says_none_for():
    # once: the table said "compiled func.grad: none" for the c = 0 styles while the answer,
    # counting the seed style's ✓, left it out
    table, text = _rendered()
    named = re.search(r"No custom style of ours survives (.*); for every other", text).group(1)
    said = {t.strip() for t in re.findall(r"torch ([\w .]+?)(?: \(|,| and|$)", named)}
    assert _nones(table) == said == {"compiled func.grad", "grad of compiled", "grad of grad"}


def test_a_tick_a_bypassed_rule_also_gives_prints_apart_and_says_why():
    table, text = _rendered()
    seed = table.frame.iloc[0]
    assert seed["compiled func.grad"] == "(✓)"
    assert seed["eager grad"] == "✓"  # no style is wrong there: nothing its value could be
    assert table.frame.iloc[2]["compiled func.grad"] == "✓"  # torch.relu's differs from BYPASSED
    assert "(✓)" in table.caption
    assert "compiled func.grad (passed only as a (✓)" in text


def test_answer_6_says_when_the_frameworks_own_relu_fails_too():
    _, text = _rendered()
    assert "grad of compiled (torch.relu fails it too)" in text
    assert "grad of grad (torch.relu" not in text


def test_an_older_records_guess_at_once_differentiable_goes_from_every_styles_error():
    # the fixture's lines carry the older guess " (@once_differentiable)" (ONCE) for the seed
    # style and the modern one alike: both read as the measured fact, one code
    table, _ = _rendered()
    codes = {c: code for c, code in re.findall(r"(E\d+): ([^;]+)", table.notes[0])}
    seed, modern = table.frame.iloc[0]["grad of grad"], table.frame.iloc[1]["grad of grad"]
    said = codes[seed[1:]].strip()  # the measured fact, cut where the note cuts every line
    assert seed == modern and ONCE not in said and NO_GRAPH.startswith(said.rstrip("…"))


def test_the_matrix_csv_is_one_row_per_element_or_error():
    table, _ = _rendered()
    rows = list(csvlib.DictReader(io.StringIO(csv(table))))
    # 3 styles × 4 transformations: 3-element values, one row each; errors one row
    statuses = [(r["style"], r["transformation"]) for r in rows]
    assert len(rows) == sum(3 if c["status"] != "error" else 1
                            for c in _runs()[0].rows("transform_cells"))
    assert len(set(statuses)) == 12
    assert not any(v.startswith("[") for r in rows for v in r.values())
    errors = [r for r in rows if r["status"] == "error"]
    assert all(r["error"] and r["value"] in ("", "nan") for r in errors)

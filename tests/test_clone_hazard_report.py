"""Table 5 and answer 3 on hand-made runs: one meaning per column, the answer's graphs are the
table's rows, the CSV one gradient element a row."""
import csv as csvlib
import io

from experiments.clone_hazard import report, summary
from study.report import csv
from study.runs.results import Run

PROV = {"utc": "2026-01-01T00:00:00+00:00", "host": "h", "device": "cpu", "torch": "t",
        "jax": "j", "scope": "standard"}


def _case(case, inplace, warning=None):
    # torch.relu's gradient [1, 0] by hand (x = [2, -1], loss = act(x).sum()); the in-place rule
    # is wrong where its gradient differs from it
    correct = [1.0, 0.0]
    return {"part": "cases", "case": case, "device": "cpu", "dtype": "float64", "correct": correct,
            "cloning_rule": correct, "cloning_matches": True, "inplace_rule": inplace,
            "silently_wrong": inplace != correct, "warning": warning, "error": None,
            "gradcheck_catches": inplace != correct, "gradcheck_error": None,
            "detect_anomaly_catches": False,
            "jax_rule": correct, "jax_matches": True}


def _runs():
    records = [_case("shared buffer", [0.0, 0.0]), _case("plain", [1.0, 0.0]),
               _case("expanded", [0.0, 0.0], warning="Use of index_put_ is deprecated."),
               {"part": "at_zero", "case": "at exactly 0", "dtype": "float32",
                "seed_rule_at_0": 1.0, "seed_rule_at_minus_0": 1.0, "builtin_at_0": 0.0,
                "device": "cpu"}]
    return [Run.of("clone_hazard", PROV, records, "x.json", tag="C1", title="C1")]


def _rendered():
    rendered = report.render(summary.summarise(_runs()))
    return rendered.tables[0], rendered.answers[0].text


def test_the_reference_column_is_torch_relu_in_every_row():
    # once: 'correct', the chain rule's gradient in the graphs' rows and torch.relu's
    # convention in the last
    table, _ = _rendered()
    assert "correct" not in table.frame.columns
    assert table.frame["torch.relu"].tolist() == [[1.0, 0.0]] * 3 + [[0.0, 0.0]]
    assert "torch.relu's gradient is the chain rule's" in table.caption


def test_answer_3_names_exactly_the_rows_the_table_marks_wrong():
    table, text = _rendered()
    rows = table.frame
    silent = rows[rows["silently wrong"] == True]["case"].tolist()  # noqa: E712
    warned = rows[rows["warning or error"].notna() & (rows["silently wrong"] == False)  # noqa: E712
                  & (rows["in-place rule"] != rows["torch.relu"])]["case"].tolist()
    assert silent == ["shared buffer"] and warned == ["expanded"]
    assert f"silently wrong in {'; '.join(silent)}, and" in text
    assert f"deprecation warning in {'; '.join(warned)};" in text
    assert "gradcheck flagged each of them" in text  # both wrong rows say yes
    assert "(d/dx 1 at +0 and −0 in float32, against torch.relu's 0)" in text


def test_the_hazard_csv_is_one_gradient_element_a_row():
    table, _ = _rendered()
    rows = list(csvlib.DictReader(io.StringIO(csv(table))))
    # three graphs × three gradients × two elements, and the last row's two rules × two zeros
    assert len(rows) == 3 * 3 * 2 + 2 * 2
    assert not any(v.startswith("[") for r in rows for v in r.values())
    assert {r["gradient of"] for r in rows} == {"torch.relu", "seed rule (clones)",
                                                "in-place rule"}

import csv
import io
import os

import experiments
from study import report, results
from study.tables import Table, format_cell, to_csv, to_markdown

REPORTS = os.path.join(results.REPO_ROOT, "reports")


def _render(roots):
    exps = experiments.all_experiments()
    runs, notes = results.load_runs(roots, {e.NAME for e in exps})
    return report.render(runs, notes, exps)


def test_committed_report_is_exactly_what_its_committed_results_render_to():
    files = _render([results.RESULTS_DIR])
    for rel, content in files.items():
        with open(os.path.join(REPORTS, rel), "rb") as f:
            on_disk = f.read()
        expected = content if isinstance(content, bytes) else content.encode("utf-8")
        assert on_disk == expected, f"reports/{rel} is stale: run `python -m study report`"


def test_rendering_twice_gives_identical_bytes():
    assert _render([results.RESULTS_DIR]) == _render([results.RESULTS_DIR])


def test_every_table_has_a_number_caption_anchor_and_source():
    text = _render([results.RESULTS_DIR])["REPORT.md"]
    for n, (exp, tid) in enumerate(((e.NAME, t) for e in experiments.all_experiments()
                                    for t in e.TABLES), 1):
        assert f'<a id="{report.anchor(exp, tid)}"></a>\n### Table {n}: ' in text


def test_a_table_without_results_keeps_its_number():
    exps = experiments.all_experiments()
    text = report.render([], [], exps)["REPORT.md"]
    assert "### Table 1: no results yet" in text


def test_cells_keep_the_sign_of_zero_and_name_non_finite_values():
    assert [format_cell(v) for v in (-0.0, 0.0, float("nan"), float("-inf"), None, True)] == \
        ["-0", "0", "nan", "-inf", "—", "yes"]


def test_csv_export_parses_back_to_the_same_cells():
    t = Table("t", "T", "cap", ["a", "b|c"], [[1.5, "x, y"], [-0.0, None]])
    rows = list(csv.reader(io.StringIO(to_csv(t))))
    assert rows == [["a", "b|c"], ["1.5", "x, y"], ["-0", "—"]]
    assert "b\\|c" in to_markdown(t)

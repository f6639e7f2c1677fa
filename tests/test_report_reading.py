"""What a careful reader checked in the report (issue 50), one test per class of problem, each run
on the committed report and on a tiny hand-made one that shows the problem. Each class fails on
the report of commit 0eaa931 (`git archive 0eaa931 reports | tar -x -C /tmp/old`, then
`python -m tests.report_reading /tmp/old/reports`) and passes on today's."""
import os

from study.runs.results import REPO_ROOT
from tests import report_reading as reading

REPORTS = os.path.join(REPO_ROOT, "reports")


def _read(name: str) -> str:
    with open(os.path.join(REPORTS, name), encoding="utf-8") as f:
        return f.read()


def _report(tmp_path, report: str, appendix: str = "", tables: dict | None = None) -> str:
    (tmp_path / "tables").mkdir()
    (tmp_path / "REPORT.md").write_text(report, encoding="utf-8")
    (tmp_path / "APPENDIX.md").write_text(appendix, encoding="utf-8")
    for name, text in (tables or {}).items():
        (tmp_path / "tables" / name).write_text(text, encoding="utf-8")
    return str(tmp_path)


TABLE = ('### <a id="x-counts"></a>Table 8: Counts\n\n*Run C7, float32.*\n\n'
         "| run | count |\n|---|---|\n| C7 | 51 [38.21, 66.51] |\n| C7 | 27 |\n\n")


def test_a_sentence_quotes_only_numbers_its_cited_tables_print(tmp_path):
    # 0eaa931: "37 ... against 26.5 expected, p = 0.0134" under Table 8, which prints none of them
    bad = _report(tmp_path, "## Section\n\n" + TABLE + "- 37 flag in both against 26.5 expected "
                  "(p = 0.0134). ([Table 8](#x-counts))\n")
    (found,) = reading.unprinted_numbers(bad)
    assert found.startswith("37, 26.5, 0.0134 in: 37 flag in both")
    # a prose rounding of a printed number, a CSV it cites, and a count of names it elides pass
    good = tmp_path / "good"
    good.mkdir()
    ok = _report(good, "## Section\n\n" + TABLE + "- 51 [38.2, 66.5] of them, and 26.5 more and 2 "
                 "more. ([Table 8](#x-counts), [t.csv](tables/t.csv))\n",
                 tables={"t.csv": "26.5\n"})
    assert reading.unprinted_numbers(ok) == []
    assert reading.unprinted_numbers(REPORTS) == []


def test_no_repr_or_list_literal_in_any_cell_or_sentence():
    # each of 0eaa931's: a list literal, key=value, a membership test, None, a float's repr
    assert [p.split(":")[0] for p in reading.reprs(
        "| C1 | [[0, 0], [0, -38]] |\n\nop=F.relu6, input=+nan\n\npass only c in 0.5\n\n"
        "Seeds: zero_point None\n\n0 or 1 (placement); nan at 2-D")] == [
        "a list literal", "a key=value pair", "a membership test", "None", "a float's repr 'nan'"]
    # an interval, a call's keyword, an index, a quoted error and a code span are not reprs
    assert reading.reprs("51 [38.2, 66.5] of torch.clamp(x, min=0) at w1[2, 1]; E1: TypeError: "
                         "got None | `jax_enable_x64=True`") == []
    assert reading.report_reprs(REPORTS) == []


def test_every_term_is_defined_in_a_glossary_before_the_answers():
    # 0eaa931 had no glossary: run labels, seeds, 3-ulp, placement, c=, "other code" came first
    assert reading.undefined_terms("## Answers\n\nIn C1, seed 001 ...\n") == [
        "no glossary before the answers"]
    glossary = "## Glossary\n\n- **seed 000, 001, 002**: the seeds; **C1** the main run.\n\n"
    found = reading.undefined_terms(glossary + "## Answers\n\nC1 and C2 at 3-ulp, by other code.\n")
    assert found == ["input labels: used, not defined", "k-ulp: used, not defined",
                     "older code: used, not defined", "run label C2: not in the glossary",
                     "'other code' where the legend says 'older code'"]
    assert reading.undefined_terms(_read("REPORT.md")) == []


def test_every_answer_and_caption_names_its_runs_releases_and_dtype():
    # 0eaa931: answer 1 named no run, answer 3 no release or dtype; Tables 22, 23 no run
    report = ("## Answers\n\n### 1. Question?\n\nThe largest difference is 0.0004883. Tables: "
              "[Table 1](#t).\n\n## Next\n\n### <a id=\"t\"></a>Table 1: T\n\n*Forward plus "
              "backward.*\n\n| rule | ratio |\n|---|---|\n| a | 1 |\n")
    assert reading.unnamed_runs(report, "") == [
        "answer names no run: Question?", "answer names no release: Question?",
        "answer names no dtype: Question?", "Table 1: its caption names no run"]
    named = report.replace("is 0.0004883", "in C1 (torch 2.13.0+cpu), float32, is 0.0004883")
    assert reading.unnamed_runs(named.replace("*Forward", "*Run C1: forward"), "") == []
    assert reading.unnamed_runs(_read("REPORT.md"), _read("APPENDIX.md")) == []


def test_the_report_holds_its_length_and_no_line_is_over_400_characters():
    # 0eaa931: the legend's G1 row ran to 411 characters
    report = _read("REPORT.md")
    assert reading.long_lines("| " + "x" * 401) and not reading.long_lines("x" * 400)
    assert reading.long_lines(report) == []  # table rows too (the appendix's may run longer)
    assert len(report.splitlines()) <= 450

"""What a careful reader checks in the report, one test per class of problem (issues 50 and 61),
each run on the committed report and on a tiny hand-made one that shows the problem. Each
class of issue 61 fails on the report of commit 2a3b72d and passes on today's:

    git archive 2a3b72d reports | tar -x -C /tmp/old2
    python -m tests.report_reading /tmp/old2/reports

Each test's first comment says what that found there. Expected values are read off the
hand-made report by eye (the table it cites, the runs it names)."""
import os

from study.runs.results import REPO_ROOT
from tests import report_reading as reading
from tests import report_reading_code as code_reading
from tests import report_reading_runs as runs_reading

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
LEGEND = ("## Runs\n\n| run | machine | older code |\n|---|---|---|\n"
          "| C1 | vm: AMD EPYC, 2 cores, AVX2 | all 2 |\n"
          "| C7 | vm: AMD EPYC, 2 cores, AVX2 | bifurcation |\n"
          "| C25 | vm: Intel(R) Xeon(R) Processor, 2 cores, AVX512 | — |\n\n")


def test_a_sentence_quotes_only_numbers_and_runs_of_the_numbered_tables_it_cites(tmp_path):
    # 2a3b72d: 14 places (today's before this round's fixes: 16), such as "37 initialisations
    # ... p = 0.0134" citing only bifurcation-independence.csv, and the Reproduction paragraph's
    # "G3: 6 of 8 reproduce ..., transforms differing only in error wording" where its table
    # lists timing too, on another GPU than its reference's, unsaid
    bad = _report(tmp_path, "## Section\n\n" + TABLE
                  + "- 37 flag in both, 26.5 expected. ([t.csv](tables/t.csv))\n"
                  + "- In C9, 51 flag. ([Table 8](#x-counts))\n"
                  + "- 12 flag, as the CSV prints. ([Table 8](#x-counts), [t.csv](tables/t.csv))\n",
                  tables={"t.csv": "37,26.5,12\n"})
    assert [f.split(": ")[0] for f in reading.unprinted_numbers(bad)] == [
        "cites only t.csv", "runs C9 not in Table 8", "12 not in Table 8"]
    # a prose rounding of a printed number, a count of names it elides, a run the table shows
    good = tmp_path / "good"
    good.mkdir()
    ok = _report(good, "## Section\n\n" + TABLE + "- In C7, 51 [38.2, 66.5] of them, and 2 more. "
                 "([Table 8](#x-counts), [t.csv](tables/t.csv))\n", tables={"t.csv": "1\n"})
    assert reading.unprinted_numbers(ok) == []
    assert reading.unprinted_numbers(REPORTS) == []


def test_a_reproduction_verdict_names_what_its_table_lists_and_another_cpu():
    # 2a3b72d: C2, C8, C17, C24 and G3 named none of the experiments the table lists for them,
    # and C8 (AVX512) against C1 (AVX2) said nothing of the other CPU
    table = ("| experiment | your run | reference run | verdict |\n|---|---|---|---|\n"
             "| timing | C25 | C1, 2026-11-24 | differs |\n"
             "| two_layer | C25 | C1, 2026-11-24 | differs |\n")
    said = ("## Reproduction\n\nC25: **0 of 2 experiments reproduce** (against C1), timing "
            "differing in values.\n\n" + table)
    assert reading.legend_machines(LEGEND)["C25"].endswith("AVX512")
    assert reading.reproduction_verdicts(LEGEND + said) == [
        "C25: the table lists two_layer, the verdict does not",
        "C25 against C1: another machine, unsaid"]
    fixed = said.replace("(against C1), timing", "(against C1, another CPU: AMD EPYC, AVX2), "
                         "timing and two_layer")
    assert reading.reproduction_verdicts(LEGEND + fixed) == []


def test_no_code_where_a_reader_expects_words(tmp_path):
    # 2a3b72d: 206 places (today's before this round's fixes: 222), such as Table 13's
    # "2.4.1: NotInRelease: torch.library.custom_op(...)..." and "Unsupported: call_function
    # UserDefinedClassVariable(<class 'study.custom_rules.NotInRelease'>) ...", Table 20's
    # workload "fwd_bwd", the Reproduction table's "torch_myrelu_seed ... grad_w1[0][2]", Table
    # 14's "(0.5, 0.5)", and zero-point-pairs.csv's "JAX d/dx" writing 1.0 beside 0
    found = code_reading.reprs(
        "| 2.4.1: TorchRuntimeError: Failed running f(*(GradTrackingTensor(lvl=1, value= |\n"
        "| Unsupported: call_function UserDefinedClassVariable(<class 'x'>) |\n"
        "| x, min | (0.5, 0.5) |\n\n"
        "seed, fwd_bwd, torch: grad_w1[0][2] differs\n\n"
        "NotInRelease: register_vmap is not in torch 2.4.1 as study.custom_rules.NotInRelease\n",
        names={"random_no_ties"})
    assert [f.split(":")[0] for f in found] == [
        "an object's repr", "an object's repr", "a tuple (0.5, 0.5)", "an identifier fwd_bwd",
        "an identifier grad_w1", "a class path", "the study's exception NotInRelease"]
    # a call's arguments, a rule's name, a glossary term, a code span and an error line are words
    assert code_reading.reprs("relu_with_convention(c=0) (custom_vjp) on random_no_ties at "
                         "torch.max(x, 0) | `jax_enable_x64=True` | E1: TypeError: got None",
                         names={"random_no_ties"}) == []
    # 25d68b2: the legend's "two_layer, zero_point" and headings "## two_layer: ...": an
    # experiment's key is no word, though a section is headed by it
    keys = "## two_layer: the net\n\n## Glossary\n\n- **Datasets**: random_no_ties\n"
    assert code_reading.defined_names(keys) == {"random_no_ties"}
    assert [f.split(":")[0] for f in code_reading.reprs(
        keys + "| C2 | two_layer, zero_point |\n", code_reading.defined_names(keys))] == [
        "an identifier two_layer", "an identifier two_layer", "an identifier zero_point"]
    (tmp_path / "tables").mkdir()
    (tmp_path / "tables" / "t.csv").write_text("d/dx,input\n1.0,-0.0\n0,3-ulp\n0.5,+nan\n")
    assert code_reading.mixed_number_texts(str(tmp_path)) == [
        "t.csv: column d/dx writes 1.0 beside 0"]
    assert code_reading.report_reprs(REPORTS) == []


TERMS = [{"name": "look-alike pair", "uses": "look-alike"},
         {"name": "(dirty)", "uses": r"\(dirty\)"},
         {"name": "mid", "uses": r"\bmid\b"}]


def test_every_listed_term_is_defined_in_the_glossary_before_its_first_use():
    # 2a3b72d: 25 terms (today's before this round's fixes: 26), such as "look-alike pair"
    # (used in Answer 2, defined only under Table 3), "(dirty)" and "scope" (the legend's
    # words), "digits" and "ReLUSavesBoolMask (c=0)" (Answer 5) undefined
    report = ("# Title\n\nA head with no term.\n\n## Glossary\n\n- **C1** the main run; **mid**: a "
              "net.\n\n## Answers\n\n### 1. Q?\n\nC1's look-alike pairs, 9aa9177 (dirty), "
              "ReLUSavesBoolMask (c=0).\n\n## Runs\n\nmid, C2\n")
    assert runs_reading.undefined_terms(report, TERMS) == [
        "look-alike pair: used, not defined (## Answers ### 1. Q? C1's look-alike pairs, "
        "9aa9177 (dirty), ReLUS)",
        "(dirty): used, not defined (1's look-alike pairs, 9aa9177 (dirty), "
        "ReLUSavesBoolMask (c=0). ##)",
        "run label C2: not in the glossary",
        "rule ReLUSavesBoolMask (c=0): in an answer, not in the glossary"]
    early = report.replace("A head with no term.", "A head on the mid net.")
    assert runs_reading.undefined_terms(early, TERMS[2:])[0] == (
        "mid: used before the glossary (# Title A head on the mid net.)")
    # the glossary is rendered from the list: each term's name is in it, in bold
    glossary = " ".join(_read("REPORT.md").split("## Answers")[0].split())
    assert all(f"**{t['name']}**" in glossary for t in runs_reading.terms())
    # 25d68b2's appendix: "dynamo", "clarke", "fill 64-66" and "errata" defined nowhere
    assert runs_reading.undefined_terms(report.replace("mid, C2", "C1"), TERMS[:2] + [
        {"name": "dynamo", "uses": "(?i)dynamo"}], "| C1 | Unsupported: Dynamo failed |") == [
        "look-alike pair: used, not defined (## Answers ### 1. Q? C1's look-alike pairs, "
        "9aa9177 (dirty), ReLUS)",
        "(dirty): used, not defined (1's look-alike pairs, 9aa9177 (dirty), "
        "ReLUSavesBoolMask (c=0). ##)",
        "dynamo: used in the appendix, not defined (| C1 | Unsupported: Dynamo failed |)",
        "rule ReLUSavesBoolMask (c=0): in an answer, not in the glossary"]
    assert runs_reading.undefined_terms(_read("REPORT.md"), appendix=_read("APPENDIX.md")) == []


def test_tables_merge_runs_alike_and_list_runs_in_label_order():
    # 2a3b72d: 11 places (today's before this round's fixes: 10), such as Table 5's seed 001
    # row twice (C1; G1, G3) with identical values, Table 1's continuous_ties row of G3 apart
    # from C2, C8–C18, C23, C24's, "torch d/dx: C17, C18, C4" and "C10, C11, C12, C9"
    # (Table 10), Table 19's columns C1, G3, G2, G1 and Table 21's rows C1, G2, G1, G3
    report = ("| runs | case | value |\n|---|---|---|\n| C1 | seed | 1 |\n| G1, G3 | seed | 1 |\n\n"
              "| run | C1: result | G3: result | G1: result |\n|---|---|---|---|\n"
              "| C7 | 1 | 2 | 3 |\n| C1 | 1 | 2 | 3 |\n\nchanges in C17, C18, C4 and C2–C3, G1\n")
    assert runs_reading.runs_merged_and_ordered(report, "") == [
        "rows of C1 and G1, G3 agree: seed | 1", "columns in the order C1, G3, G1",
        "rows in the order C7, C1: run | C1: result | G3: result | G1: result",
        "runs listed as C17, C18, C4 and C2–C3, G1: changes in C17, C18, C4 and C2–C3, G1"]
    assert runs_reading.runs_merged_and_ordered("| runs | x |\n|---|---|\n| C1 | 1 |\n"
                                                "| G1 | 2 |\n\nin C2, C4–C17 and G3", "") == []
    # 25d68b2: the legend's and glossary's "C2, C8–C24" before C3; Table 2's torch rows of C4,
    # C17, C18 and C9 after the jax rows; Table 5's two rows of style 6 apart
    legend = ("## Glossary\n\n- **Runs**: **C1** (x); **C2, C8–C24** (y); **C3** (z).\n\n"
              "## Runs\n\n| run | torch |\n|---|---|\n| C1 | 2.13 |\n| C2, C8–C24 | 2.4 … 2.15 |\n"
              "| C3 | 2.13 |\n\n| runs | framework | d/dx |\n|---|---|---|\n| C1–C3 | torch | 0 |\n"
              "| C1–C3 | jax | 0 |\n| C4 | jax | 1 |\n| C2 | jax | 2 |\n| C9 | torch | 1 |\n")
    assert runs_reading.runs_merged_and_ordered(legend, "") == [
        "rows in the order C1, C2, C8–C24, C3: run | torch",
        "rows of framework torch apart: runs | framework | d/dx",
        "rows of framework jax in the order C1–C3; C4; C2",
        "glossary's runs in the order C1; C2, C8–C24; C3"]
    # review 12: Table 22's rules in one order in C1 and another in C25 (custom_op moved last)
    table = ("| run | framework | rule | s |\n|---|---|---|---|\n| C1 | torch | relu | 1 |\n"
             "| C1 | torch | op | 2 |\n| C1 | torch | mask | 3 |\n| C25 | torch | relu | 4 |\n"
             "| C25 | torch | mask | 0.5 [0.4, 0.6] |\n| C25 | torch | op | — |\n")
    assert runs_reading.runs_merged_and_ordered(table, "") == [
        "rows of C25 in another order than C1's: run | framework | rule"]
    ordered = table.replace("mask | 0.5 [0.4, 0.6]", "op | 0.5 [0.4, 0.6]").replace(
        "op | — |", "mask | — |")
    assert runs_reading.runs_merged_and_ordered(ordered, "") == []
    assert runs_reading.runs_merged_and_ordered(_read("REPORT.md"), _read("APPENDIX.md")) == []


def test_every_older_code_run_is_said_to_be_older_code_where_its_numbers_are_cited():
    # 2a3b72d: 24 places (today's before this round's fixes: 23), such as Answer 4's "at
    # Bertoin et al.'s headline (..., C7)" and Table 18's caption "Run C7" (the legend marks C7
    # older code for bifurcation), and Answer 2's "in C1" (C1 older code for all 8)
    body = ("## bifurcation: the count\n\n### <a id=\"b-h\"></a>Table 9: Counts\n\n*Run C7, "
            "float32.*\n\n| x |\n|---|\n| 1 |\n\n")
    answers = ("## Answers\n\n### 1. Q?\n\nIn C7, 51 flag ([Table 9](#b-h)). In C25, 3 flag "
               "([Table 9](#b-h)).\n\n")
    # 25d68b2: "zero_point: C5 (cpu) against G1 (cuda)" (both older code), Answer 2's release
    # changes citing only Tables 13 and 14 (every run older code), captions of Tables 12 and 15-17
    # over rows of older-code runs, Table 22's naming C1 and G3 older code but not G1, G2
    body += ("### <a id=\"b-r\"></a>Table 10: Rows\n\n*Runs C1, C25, older code: C1.*\n\n"
             "| runs | x |\n|---|---|\n| C1, C7 | 1 |\n\n")
    answers += "- Releases changed it ([Table 9](#b-h)).\n\n"
    devices = "## CPU against GPU\n\nbifurcation: C7 (cpu) against G1 (cuda): 2 cells differ.\n"
    found = runs_reading.older_code_unsaid(answers + LEGEND + body + devices, "")
    assert found == ["C7 older code, unsaid: In C7, 51 flag ([Table 9](#b-h)).…",
                     "only older code, unsaid: Releases changed it ([Table 9](#b-h)).…",
                     "C7 older code, unsaid: bifurcation: C7 (cpu) against G1 (cuda): 2 cells "
                     "differ.…",
                     "Table 9 shows C7, older code, unsaid: Run C7, float32.…",
                     "Table 10 shows C7, older code, unsaid: Runs C1, C25, older code: C1.…"]
    said = (answers + LEGEND + body + devices).replace("In C7,", "In C7 (older code),").replace(
        "*Run C7,", "*Run C7 (older code),").replace("older code: C1.", "older code: C1, C7.")
    said = said.replace("changed it", "(older code) changed it").replace("C7 (cpu)",
                                                                        "C7 (cpu, older code)")
    assert runs_reading.older_code_unsaid(said, "") == []
    # review 12: the Reproduction verdicts "C1: 8 of 8 experiments reproduce" (C1 older code for
    # every experiment), the appendix's rows of those that did not reproduce, Table 25's caption
    # over a row of C5 (older code for zero point, the row's experiment, in a section of no
    # experiment) and Table 23's note "In G3, the eager step taken apart gives ..."
    report = (LEGEND + "## two layer: the net\n\n## bifurcation: the count\n\n"
              "### <a id=\"b-h\"></a>Table 9: Counts\n\n*Run C7 (older code), float32.*\n\n"
              "| x |\n|---|\n| 1 |\n\nIn C7, the count is 1.\n\n## Reproduction\n\nAgainst "
              "the reference: C1: **2 of 2 experiments reproduce**; C25: **0 of 1 experiments "
              "reproduce** (against C1 (older code)).\n")
    appendix = ("## CPU against GPU\n\n### <a id=\"d\"></a>Table 10: CPU against GPU\n\n*Each "
                "cuda run against a cpu run.*\n\n| experiment | cpu run | cuda run |\n|---|---|"
                "---|\n| bifurcation | C7 | G1 |\n\n## Reproduction: not reproduced\n\n"
                "| experiment | rerun | reference run |\n|---|---|---|\n| two layer | C25 | C1 |\n")
    assert runs_reading.older_code_unsaid(report, appendix) == [
        "C7 older code, unsaid: In C7, the count is 1.…",
        "C1 older code, unsaid: Against the reference: C1: **2 of 2 experiments reproduce**…",
        "Table 10 shows C7, older code, unsaid: Each cuda run against a cpu run.…",
        "a row names C1, older code, unsaid: experiment | rerun | reference run"]
    fixed = report.replace("In C7,", "In C7 (older code),").replace(
        "C1: **2", "C1 (older code): **2")
    fixed_appendix = appendix.replace("cpu run.*", "cpu run. Older code: C7.*").replace(
        "| C25 | C1 |", "| C25 | C1 (older code) |")
    assert runs_reading.older_code_unsaid(fixed, fixed_appendix) == []
    assert runs_reading.older_code_unsaid(_read("REPORT.md"), _read("APPENDIX.md")) == []


def test_every_answer_and_caption_names_its_runs_releases_and_dtype():
    # 0eaa931: answer 1 named no run, answer 3 no release or dtype; Tables 22, 23 no run
    report = ("## Answers\n\n### 1. Question?\n\nThe largest difference is 0.0004883. Tables: "
              "[Table 1](#t).\n\n## Next\n\n### <a id=\"t\"></a>Table 1: T\n\n*Forward plus "
              "backward.*\n\n| rule | ratio |\n|---|---|\n| a | 1 |\n")
    assert runs_reading.unnamed_runs(report, "") == [
        "answer names no run: Question?", "answer names no release: Question?",
        "answer names no dtype: Question?", "Table 1: its caption names no run"]
    named = report.replace("is 0.0004883", "in C1 (torch 2.13.0+cpu), float32, is 0.0004883")
    assert runs_reading.unnamed_runs(named.replace("*Forward", "*Run C1: forward"), "") == []
    assert runs_reading.unnamed_runs(_read("REPORT.md"), _read("APPENDIX.md")) == []


def test_every_link_leads_to_a_file_and_an_anchor_the_file_holds(tmp_path):
    # 25d68b2: APPENDIX.md's "[Table 9](#bifurcation-headline)", an anchor only REPORT.md holds
    anchor = '### <a id="b-h"></a>Table 9: Counts\n'
    bad = _report(tmp_path, anchor + "[t.csv](tables/t.csv)\n",
                  "See [Table 9](#b-h), [Table 9](REPORT.md#b-h), [x](tables/x.csv), "
                  "[y](REPORT.md#nowhere), [z](https://example.org/#q).\n",
                  tables={"t.md": "[back](../REPORT.md#b-h), [up](../APPENDIX.md#b-h)\n",
                          "t.csv": "1\n"})
    assert reading.broken_links(bad) == [
        "APPENDIX.md: #b-h: no anchor b-h in APPENDIX.md",
        "APPENDIX.md: tables/x.csv: no file tables/x.csv",
        "APPENDIX.md: REPORT.md#nowhere: no anchor nowhere in REPORT.md",
        "tables/t.md: ../APPENDIX.md#b-h: no anchor b-h in APPENDIX.md"]
    assert reading.broken_links(REPORTS) == []


def test_csv_cells_are_whole_and_commits_one_length(tmp_path):
    # 25d68b2: zero-point-compiled.csv's "F.relu6, ... and 4 more" and "0 → Unsupported:
    # Unsupported…", reproduction.csv's cut differences; commits of 7 (legend) and 10 characters
    bad = _report(tmp_path, "| commit |\n|---|\n| f7ddc51 |\n\ncommit `77be21922a` rendered it; "
                  "[run](#x7ddc5123)\n", "91900 and 2026-12-02\n",
                  tables={"t.csv": "op,value\n\"a, b and 4 more\",1\nc,0 → Unsupported…\n",
                          "u.csv": "op\nrelu and more\n"})
    assert reading.cut_csv_cells(bad) == ["t.csv: column op cuts a, b and 4 more",
                                          "t.csv: column value cuts 0 → Unsupported…"]
    assert reading.commit_lengths(bad) == [
        "commits at 2 lengths: REPORT.md: f7ddc51, REPORT.md: 77be21922a"]
    assert reading.cut_csv_cells(REPORTS) == [] and reading.commit_lengths(REPORTS) == []


def test_the_report_holds_its_length_and_no_line_is_over_400_characters():
    # 0eaa931: the legend's G1 row ran to 411 characters; 2a3b72d's REPORT.md, 469 lines
    report = _read("REPORT.md")
    assert reading.long_lines("| " + "x" * 401) and not reading.long_lines("x" * 400)
    assert reading.long_lines(report) == []  # table rows too (the appendix's may run longer)
    assert len(report.splitlines()) <= 450

"""Answer 4's training sentence read against Table 8, as a reader reads the rendered report: every
data set the table holds is answered (the report at 25d68b2 answered the digits MLP alone and said
"never in float32 or float64", where the seed net's rows leave c = 0 at step 0 in every dtype)."""
import os
import re

from study.runs.results import REPO_ROOT
from tests import report_reading as reading

DATA_WORDS = {"seed": "seed 001's net", "digits": "on digits"}  # as the caption names each


def training_unanswered(report: str) -> list[str]:
    """The data sets of the training table (its 'data' column) that answer 4 does not name."""
    table = next((t for n, t in reading.numbered_tables(report).items()
                  if "first differ" in t.splitlines()[0]), "")
    data = {row[header.index("data")] for header, rows in reading.markdown_tables(table)
            if "data" in header for row in rows}
    answers = reading.sections(report).get("Answers", "")
    net = " ".join(next((a for a in re.split(r"^### ", answers, flags=re.M)
                         if "training" in a.splitlines()[0]), "").split())
    return sorted(d for d in data if DATA_WORDS.get(d, d) not in net)


def test_answer_4_answers_every_data_set_table_8_trains_on():
    made_up = ("## Answers\n\n### 4. How do these choices change a net's training?\n\n"
               "Training on digits in torch, c = 1 leaves c = 0 at step 4.\n\n"
               "## training\n\n### Table 8: SGD: the step where they first differ\n\n"
               "| runs | data | dtype |\n|---|---|---|\n| C1 | seed | float32 |\n"
               "| C1 | digits | float32 |\n")
    assert training_unanswered(made_up) == ["seed"]
    with open(os.path.join(REPO_ROOT, "reports", "REPORT.md"), encoding="utf-8") as f:
        report = f.read()
    assert re.search(r"Table \d+: SGD", report)  # the table is found, so the check reads it
    assert training_unanswered(report) == []


def test_table_8s_caption_says_what_its_accuracy_range_and_zero_count_are_over():
    # "held-out accuracy, lowest | highest | spread" did not say over which runs (every
    # convention trained, both frameworks), nor "exact zeros hit (torch c=1)" of what
    import csv

    with open(os.path.join(REPO_ROOT, "reports", "REPORT.md"), encoding="utf-8") as f:
        report = f.read()
    caption = re.search(r"### Table \d+: SGD[^\n]*\n\n\*(.*?)\*\n", report, re.S).group(1)
    caption = " ".join(caption.split())
    with open(os.path.join(REPO_ROOT, "reports", "tables", "training-runs.csv"),
              encoding="utf-8") as f:
        trained = {row["c"] for row in csv.DictReader(f)}
    conventions = sorted(float(c) for c in trained if c)
    said = ", ".join(f"{c:g}" for c in conventions)  # 0, 0.5, 1: as the report prints numbers
    assert f"both frameworks under ReLU'(0) = {said}" in caption, caption
    assert ("and the built-in" in caption) == ("" in trained)  # a built-in row has no c
    assert ("exact zeros hit: hidden pre-activations exactly 0 over every step, torch's c = 1 run"
            in caption)

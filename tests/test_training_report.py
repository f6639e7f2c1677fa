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

"""No estimate in a committed table lies outside its own interval: a tidy CSV writes an estimate
X beside `X lo` and `X hi`, and one statistic gives all three (a ratio of medians once stood
beside the interval of the median of per-round ratios, 0.9762 [0.9526, 0.9744])."""
import csv
import glob
import os

from tests.conftest import REPORTS_DIR


def _outside(path: str) -> list[str]:
    with open(path, encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    head = rows[0] if rows else {}
    columns = [c for c in head if f"{c} lo" in head and f"{c} hi" in head]
    found = []
    for i, row in enumerate(rows):
        for c in columns:
            try:
                x, lo, hi = (float(row[k]) for k in (c, f"{c} lo", f"{c} hi"))
            except ValueError:  # an empty cell: no interval
                continue
            slack = 1e-9 * max(1.0, abs(x))  # the CSV's 17 digits, read back
            if not lo - slack <= x <= hi + slack:
                found.append(f"{os.path.basename(path)} row {i + 2}, {c}: {x} [{lo}, {hi}]")
    return found


def test_every_committed_estimate_lies_inside_its_own_interval():
    tables = sorted(glob.glob(os.path.join(REPORTS_DIR, "tables", "*.csv")))
    assert len(tables) > 20
    outside = [line for path in tables for line in _outside(path)]
    assert not outside, outside[:5]


def test_the_check_reads_an_estimate_outside_its_interval_as_one(tmp_path):
    (tmp_path / "t.csv").write_text("x,x lo,x hi\n0.9762,0.9526,0.9744\n1,1,1\n")
    assert _outside(str(tmp_path / "t.csv")) == ["t.csv row 2, x: 0.9762 [0.9526, 0.9744]"]

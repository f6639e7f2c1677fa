"""Do timing's intervals hold when measured again? Two fresh runs of `study run timing` on this
machine, each rendered on its own; for every estimate both renders print (a tidy CSV's X beside
its `X lo` and `X hi`, the same cell by its key columns), whether the one run's value lies in the
other's 95% interval, both ways. Two honest 95% intervals of one quantity, from independent
runs, hold each other's estimate about 83% of the time (each estimate misses its own interval's
centre by a spread √2 times the interval's); far less says a level of variation is missing.

    .venv/bin/python tests/bench_timing_rerun.py               # or: make bench-timing
    .venv/bin/python tests/bench_timing_rerun.py --runs A B    # two result folders already run

A benchmark, not a test: minutes. The wall time of each run, the coverage over every estimate
and over the ratios alone (columns with ÷), and the commit and machine go to
reports/benchmarks/timing-rerun.json.
"""
import argparse
import csv
import json
import os
import platform
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUT = os.path.join(ROOT, "reports", "benchmarks", "timing-rerun.json")
KEYS = ("framework", "mode", "rule", "rules", "size", "piece", "op", "role", "way", "signs",
        "net", "workload", "check", "compiled", "block", "copy", "into", "what", "n")


def estimates(table: str) -> dict[tuple, tuple[float, float, float]]:
    """(column, key cells) -> (value, lo, hi) of every estimate a tidy CSV holds."""
    with open(table, encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    if not rows:
        return {}
    columns = [c for c in rows[0] if f"{c} lo" in rows[0] and f"{c} hi" in rows[0]]
    keys = [c for c in rows[0] if c in KEYS]
    out = {}
    for row in rows:
        for c in columns:
            try:
                value, lo, hi = float(row[c]), float(row[f"{c} lo"]), float(row[f"{c} hi"])
            except ValueError:  # an empty cell: no estimate, or none with an interval
                continue
            out[(os.path.basename(table), c, tuple(row[k] for k in keys))] = (value, lo, hi)
    return out


def rendered(results: str) -> dict:
    """Every estimate of the timing tables that `study report` makes of `results` alone."""
    with tempfile.TemporaryDirectory(prefix="bench-rerun-") as out:
        subprocess.run([sys.executable, "-m", "study", "report", "--results", results, "--out",
                        out, "--reference", os.path.join(out, "none")], cwd=ROOT, check=True,
                       capture_output=True)
        tables = os.path.join(out, "tables")
        found = {}
        for name in sorted(os.listdir(tables)):
            if name.startswith("timing-") and name.endswith(".csv"):
                found.update(estimates(os.path.join(tables, name)))
        return found


def coverage(a: dict, b: dict) -> dict:
    """How often each side's value lies in the other's interval, over the cells both hold."""
    shared = sorted(set(a) & set(b))
    hits = [a[k][1] <= b[k][0] <= a[k][2] for k in shared] + \
           [b[k][1] <= a[k][0] <= b[k][2] for k in shared]
    ratios = [h for k, h in zip(shared + shared, hits) if "÷" in k[1]]
    return {"cells": len(shared), "covered": round(sum(hits) / len(hits), 3) if hits else None,
            "ratio_cells": len(ratios) // 2,
            "ratios_covered": round(sum(ratios) / len(ratios), 3) if ratios else None}


def run_timing(folder: str) -> float:
    start = time.perf_counter()
    subprocess.run([sys.executable, "-m", "study", "run", "timing", "--device", "cpu",
                    "--results-dir", folder], cwd=ROOT, check=True)
    return round(time.perf_counter() - start, 1)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", nargs=2, metavar="RESULTS",
                        help="two result folders already run, instead of running timing twice")
    parser.add_argument("--keep", metavar="DIR", help="run into DIR/a and DIR/b and keep them")
    args = parser.parse_args(argv)
    walls = []
    with tempfile.TemporaryDirectory(prefix="bench-rerun-results-") as scratch:
        folders = args.runs or [os.path.join(args.keep or scratch, name) for name in ("a", "b")]
        if not args.runs:
            walls = [run_timing(folder) for folder in folders]
        found = coverage(*(rendered(folder) for folder in folders))
    commit = subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True,
                            text=True).stdout.strip()
    entry = {"commit": commit, "utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
             "machine": platform.node(), "cores": os.cpu_count(), "wall_s": walls, **found}
    os.makedirs(os.path.dirname(OUT), exist_ok=True)
    previous = json.load(open(OUT)) if os.path.exists(OUT) else []
    with open(OUT, "w", encoding="utf-8") as f:
        json.dump(previous + [entry], f, indent=1)
        f.write("\n")
    print(json.dumps(entry, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())

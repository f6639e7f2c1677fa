"""Wall time of `study conformance --framework F` for each framework (target: 60 s each on the
project's 2-core machine), and its verdicts on every built-in against the committed listing of
the same release (reports/tables/zero-point-conformance-listing.csv).

    .venv/bin/python tests/bench_conformance.py   # or: make bench-conformance

A benchmark, not a timed test: it records the times, the machine and how busy it was (the load
average before and after) in reports/benchmarks/conformance.json, and prints them. It exits 1
where a verdict differs from the committed listing's.
"""
import json
import os
import platform
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
TARGET_S = 60.0
OUT = os.path.join(ROOT, "reports", "benchmarks", "conformance.json")


def wall_time(framework: str) -> dict:
    """One `study conformance --framework F` in a fresh process, its JSON kept."""
    with tempfile.TemporaryDirectory() as folder:
        out = os.path.join(folder, "verdicts.json")
        load_before = os.getloadavg()
        start = time.perf_counter()
        done = subprocess.run([sys.executable, "-m", "study", "conformance", "--framework",
                               framework, "--json", out], cwd=ROOT, capture_output=True,
                              text=True)
        seconds = time.perf_counter() - start
        with open(out, encoding="utf-8") as f:
            [verdicts] = json.load(f)["frameworks"]
    return {"wall_s": seconds, "exit_code": done.returncode, "release": verdicts["release"],
            "counts": verdicts["counts"], "known_source": verdicts["known_source"],
            "load_average_1min_before": load_before[0],
            "load_average_1min_after": os.getloadavg()[0], "stderr_tail": done.stderr[-500:]}


def committed_differences(framework: str) -> dict:
    """Every built-in judged again in this process, row by row against the committed listing."""
    from study.conformance import Known, judge_installed
    from tests import conformance_table
    result = judge_installed(framework, known=Known({}, "none"))
    return {"rows_compared": len(conformance_table.committed(framework, result.release)),
            "differences": conformance_table.differences(result)}


def main() -> int:
    runs = {fw: {**wall_time(fw), **committed_differences(fw)} for fw in ("torch", "jax")}
    record = {"command": "study conformance --framework F", "target_s": TARGET_S,
              "cpu_count": os.cpu_count(), "machine": platform.processor() or platform.machine(),
              "utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "runs": runs}
    with open(OUT, "w", encoding="utf-8") as f:
        json.dump(record, f, indent=1)
    for fw, run in runs.items():
        print(f"study conformance --framework {fw} ({run['release']}): {run['wall_s']:.1f} s "
              f"(target {TARGET_S:.0f} s, exit {run['exit_code']}, load average "
              f"{run['load_average_1min_before']:.1f} before, "
              f"{run['load_average_1min_after']:.1f} after); {run['rows_compared']} committed "
              f"rows compared, {len(run['differences'])} differ")
    return 1 if any(run["differences"] for run in runs.values()) else 0


if __name__ == "__main__":
    sys.exit(main())

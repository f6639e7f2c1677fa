"""Wall time of `study check` on study.measure.custom_rules.MyReLU, with and without --quick, each
from an empty inductor cache (targets: 90 s and 30 s on the project's 2-core machine).

    .venv/bin/python tests/bench_check_wall_time.py   # or: make bench-check

A benchmark, not a timed test: it records the times, the machine and how busy it was (the
load average before and after) in reports/benchmarks/check-wall-time.json, and prints them.
"""
import json
import os
import platform
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TARGET = "study.measure.custom_rules:MyReLU"
TARGETS_S = {"full": 90.0, "quick": 30.0}
OUT = os.path.join(ROOT, "reports", "benchmarks", "check-wall-time.json")


def wall_time(flags: list[str]) -> dict:
    """One `study check` in a fresh process whose inductor cache starts empty."""
    with tempfile.TemporaryDirectory(prefix="inductor-") as cache:
        env = {**os.environ, "TORCHINDUCTOR_CACHE_DIR": cache, "TRITON_CACHE_DIR": cache}
        load_before = os.getloadavg()
        start = time.perf_counter()
        done = subprocess.run([sys.executable, "-m", "study", "check", TARGET, *flags],
                              cwd=ROOT, env=env, capture_output=True, text=True)
        seconds = time.perf_counter() - start
    return {"flags": flags, "wall_s": seconds, "exit_code": done.returncode,
            "load_average_1min_before": load_before[0],
            "load_average_1min_after": os.getloadavg()[0],
            "stderr_tail": done.stderr[-500:]}


def main() -> None:
    runs = {"full": wall_time([]), "quick": wall_time(["--quick"])}
    record = {"target": TARGET, "targets_s": TARGETS_S, "cpu_count": os.cpu_count(),
              "machine": platform.processor() or platform.machine(),
              "utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "runs": runs}
    with open(OUT, "w", encoding="utf-8") as f:
        json.dump(record, f, indent=1)
    for name, run in runs.items():
        print(f"study check {TARGET} {' '.join(run['flags'])}: {run['wall_s']:.1f} s "
              f"(target {TARGETS_S[name]:.0f} s, exit {run['exit_code']}, load average "
              f"{run['load_average_1min_before']:.1f} before, "
              f"{run['load_average_1min_after']:.1f} after)")


if __name__ == "__main__":
    main()

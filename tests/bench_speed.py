"""Wall time of `study report` over the committed results, of `make test` and `make report`
from a fresh clone, set-up included, and of `study run timing --quick` from a fresh process
(targets on the project's 2-core machine: 10 s, 180 s, 300 s and 45 s; `make report`'s is
information, as its wall measures the machine's noise and the study's compile times).

    .venv/bin/python tests/bench_speed.py            # or: make bench-speed
    .venv/bin/python tests/bench_speed.py --only report --repeat 5

A benchmark, not a timed test. `study report` renders reports/results and reports/reference
into a temporary folder (the committed report is left alone), `--repeat` times, and the median
is the time. Each `make` runs in its own `git clone` of HEAD in a temporary folder, so it sees
the commit (uncommitted changes are not benchmarked: `dirty` says whether there were any); its
set-up (`make .venv/.installed`) and the target are timed apart, and the time is their sum.
Every timing records the load average before and after it and the CPU seconds its processes
took (user + system), which a busy machine changes less than the wall time. The times, the
commit and the machine go to reports/benchmarks/speed.json (other entries kept), and are
printed.
"""
import argparse
import json
import os
import platform
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUT = os.path.join(ROOT, "reports", "benchmarks", "speed.json")
TARGETS_S = {"study report": 10.0, "make test": 180.0, "make report": 300.0,
             "timing --quick": 45.0}


def _children_cpu_s() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def timed(command: list[str], cwd: str, env: dict | None = None) -> dict:
    """One command: its wall and CPU seconds, exit code, the load around it, its last words."""
    load_before, cpu_before = os.getloadavg(), _children_cpu_s()
    start = time.perf_counter()
    done = subprocess.run(command, cwd=cwd, capture_output=True, text=True,
                          env={**os.environ, **(env or {})})
    wall = time.perf_counter() - start
    return {"command": " ".join(command), "wall_s": round(wall, 2),
            "cpu_s": round(_children_cpu_s() - cpu_before, 2), "exit_code": done.returncode,
            "load_average_before": [round(x, 2) for x in load_before],
            "load_average_after": [round(x, 2) for x in os.getloadavg()],
            "output_tail": (done.stdout + done.stderr)[-600:]}


def study_report(repeat: int) -> dict:
    runs = []
    for _ in range(repeat):
        with tempfile.TemporaryDirectory(prefix="bench-report-") as out:
            shutil.copy(os.path.join(ROOT, "reports", "labels.json"), out)  # no run renamed
            runs.append(timed([sys.executable, "-m", "study", "report", "--out", out], ROOT))
    return {"wall_s": statistics.median(r["wall_s"] for r in runs), "runs": runs}


def timing_quick() -> dict:
    """`study run timing --quick` from a fresh process, twice: with inductor's and JAX's
    compile caches where the user keeps them (warm after any earlier run), then with both
    empty, as on a machine's first run. The time is the first's: a cold start, as the target
    means it (a fresh process, no compile from an empty folder); the second is information."""
    runs = []
    with tempfile.TemporaryDirectory(prefix="bench-quick-") as folder:
        command = [sys.executable, "-m", "study", "run", "timing", "--quick", "--quiet",
                   "--device", "cpu", "--results-dir", os.path.join(folder, "results")]
        runs.append({"caches": "the user's", **timed(command, ROOT)})
        empty = {"TORCHINDUCTOR_CACHE_DIR": os.path.join(folder, "inductor"),
                 "JAX_COMPILATION_CACHE_DIR": os.path.join(folder, "jax")}
        runs.append({"caches": "empty", **timed(command, ROOT, empty)})
    return {"wall_s": runs[0]["wall_s"], "runs": runs}


def make_from_a_fresh_clone(target: str) -> dict:
    """`make TARGET` in a new clone of HEAD: the set-up (.venv) and the target, timed apart."""
    with tempfile.TemporaryDirectory(prefix=f"bench-{target}-") as folder:
        clone = os.path.join(folder, "repo")
        subprocess.run(["git", "clone", "--quiet", ROOT, clone], check=True)
        setup = timed(["make", ".venv/.installed"], clone)
        run = timed(["make", target], clone) if setup["exit_code"] == 0 else None
    wall = setup["wall_s"] + (run["wall_s"] if run else 0.0)
    return {"wall_s": round(wall, 2), "setup": setup, "target": run}


def _git(*args: str) -> str:
    return subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True).stdout.strip()


def machine() -> dict:
    model = ""
    if os.path.exists("/proc/cpuinfo"):
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            model = next((ln.split(":", 1)[1].strip() for ln in f if ln.startswith("model name")),
                         "")
    return {"host": platform.node(), "cpu": model or platform.processor() or platform.machine(),
            "cpu_count": os.cpu_count(), "python": platform.python_version(),
            "os": platform.platform()}


def _said(result: dict) -> str:
    if "runs" in result:
        if "caches" in result["runs"][0]:
            return "; ".join(f"{r['wall_s']:.1f} s with {r['caches']} compile caches (exit "
                             f"{r['exit_code']})" for r in result["runs"])
        return (f"{result['wall_s']:.1f} s, the median of "
                + ", ".join(f"{r['wall_s']:.1f} s (load {r['load_average_before'][0]:.1f}, exit "
                            f"{r['exit_code']})" for r in result["runs"]))
    parts = [("set-up", result["setup"]), ("target", result["target"])]
    return f"{result['wall_s']:.1f} s = " + " + ".join(
        f"{what} {r['wall_s']:.1f} s (CPU {r['cpu_s']:.0f} s, load "
        f"{r['load_average_before'][0]:.1f}, exit {r['exit_code']})" for what, r in parts if r)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--only", nargs="+",
                        choices=("report", "test", "make-report", "timing-quick"),
                        default=["report", "test", "make-report", "timing-quick"])
    parser.add_argument("--repeat", type=int, default=3, help="renders of `study report`")
    args = parser.parse_args()
    steps = {"report": ("study report", lambda: study_report(args.repeat)),
             "test": ("make test", lambda: make_from_a_fresh_clone("test")),
             "make-report": ("make report", lambda: make_from_a_fresh_clone("report")),
             "timing-quick": ("timing --quick", timing_quick)}
    record = {}
    if os.path.exists(OUT):
        with open(OUT, encoding="utf-8") as f:
            record = json.load(f)
    common = {"commit": _git("rev-parse", "HEAD"), "dirty": bool(_git("status", "--porcelain")),
              "machine": machine()}
    for key in args.only:
        name, run = steps[key]
        started = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        result = run()
        record[name] = {"target_s": TARGETS_S[name], **result, "utc": started, **common}
        print(f"{name}: {_said(result)} (target {TARGETS_S[name]:.0f} s), at "
              f"{common['commit'][:10]}{' (dirty)' if common['dirty'] else ''}", flush=True)
        _write(record)  # after each step: an interrupted benchmark keeps what it measured


def _write(record: dict) -> None:
    os.makedirs(os.path.dirname(OUT), exist_ok=True)
    with open(OUT, "w", encoding="utf-8") as f:
        json.dump(record, f, indent=1)
        f.write("\n")


if __name__ == "__main__":
    main()

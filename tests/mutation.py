"""The judges tested by their faults: mutmut mutates the conformance verdicts
(study/conformance/_verdicts.py; pyproject's [tool.mutmut] names the files and the tests that hold
them) and runs those tests against each mutant.

    .venv/bin/python tests/mutation.py   # or: make mutation (not part of make test)

It writes reports/benchmarks/mutation.json: `killed`, `total`, the share killed, and each survivor
with its diff and why it survives (tests/mutation_survivors.json: an equivalent mutant, or the
test that now kills it). It exits 1 below 90% killed, or where a survivor has no why.
"""
import json
import os
import subprocess
import sys
import time
import tomllib

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUT = os.path.join(ROOT, "reports", "benchmarks", "mutation.json")
WHY = os.path.join(ROOT, "tests", "mutation_survivors.json")
TARGET = 0.9
# mutmut counts a mutant that makes the tests time out as caught, as this does
CAUGHT = ("killed", "timeout")
# the finding judges of study check (study/check/_judges.py, _findings.py) join the mutated files
# once issue 51's first-screen work on them has landed on main
PENDING = ["study/check/_judges.py", "study/check/_findings.py"]


def mutmut(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "mutmut", *args], cwd=ROOT, capture_output=True,
                          text=True)


def statuses() -> dict[str, str]:
    """{mutant: status} of every mutant of the last run (`mutmut results --all true`)."""
    out = {}
    for line in mutmut("results", "--all", "true").stdout.splitlines():
        name, sep, status = line.strip().rpartition(": ")
        if sep and name:
            out[name] = status
    return out


def main() -> int:
    with open(os.path.join(ROOT, "pyproject.toml"), "rb") as f:
        config = tomllib.load(f)["tool"]["mutmut"]
    start = time.perf_counter()
    run = mutmut("run")
    seconds = time.perf_counter() - start
    found = statuses()
    if run.returncode != 0 or not found:
        print(f"mutmut run failed (exit {run.returncode}): {run.stderr[-2000:]}", file=sys.stderr)
        return 1
    with open(WHY, encoding="utf-8") as f:
        why = json.load(f)
    survivors = [{"mutant": name, "status": status, "why": why.get(name),
                  "diff": mutmut("show", name).stdout.strip().splitlines()[1:]}
                 for name, status in sorted(found.items()) if status not in CAUGHT]
    killed = sum(status in CAUGHT for status in found.values())
    record = {"tool": f"mutmut {mutmut('--version').stdout.split()[-1]}",
              "mutated": config["only_mutate"], "tests": config[
                  "pytest_add_cli_args_test_selection"], "pending": PENDING,
              "killed": killed, "total": len(found), "killed_share": killed / len(found),
              "target_share": TARGET, "wall_s": round(seconds, 1),
              "utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "survivors": survivors}
    with open(OUT, "w", encoding="utf-8") as f:
        json.dump(record, f, indent=1, ensure_ascii=False)
        f.write("\n")
    unexplained = [s["mutant"] for s in survivors if not s["why"]]
    print(f"mutmut: {killed} of {len(found)} mutants killed ({killed / len(found):.1%}, target "
          f"{TARGET:.0%}) in {seconds:.0f} s; {len(survivors)} survive, {len(unexplained)} "
          f"without a why in {os.path.relpath(WHY, ROOT)}: {', '.join(unexplained) or 'none'}")
    return 0 if killed / len(found) >= TARGET and not unexplained else 1


if __name__ == "__main__":
    sys.exit(main())

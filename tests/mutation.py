"""The judges tested by their faults: mutmut mutates the conformance verdicts and the finding
judges of study check (JUDGES below; pyproject's [tool.mutmut] names the files mutmut may mutate
and the tests that hold them) and runs those tests against each mutant of those functions.

    .venv/bin/python tests/mutation.py   # or: make mutation (not part of make test)
    .venv/bin/python tests/mutation.py --from-last-run [WALL_S]   # the record again, no run:
        # after a why is added, after `mutmut run NAME` reran a survivor a new test kills, or
        # after a run was stopped (its wall time given; mutants it did not reach are counted
        # as not checked, and the record is incomplete)

It writes reports/benchmarks/mutation.json: `killed`, `total`, the share killed (overall and per
part), and each survivor with its diff and why it survives (tests/mutation_survivors.json: an
equivalent mutant, or the test that now kills it). It exits 1 below 90% killed overall or in a
part, or where a survivor has no why.
"""
import fnmatch
import importlib
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
# The functions mutated, per part, as (module, function): "Class.method" for a method, "*" for
# every function of the module. Where one moves to another module, change its module here (the
# run stops on a name that no longer imports); pyproject's only_mutate must cover the module.
JUDGES = {
    "conformance verdicts": [("study.conformance._verdicts", "*")],
    "check judges": [
        # the elementwise decision: not_elementwise, or a usage error
        ("study.check._probe", "mixing_entries"), ("study.check._probe", "moved_values"),
        ("study.check._probe", "_first_input_it_takes"), ("study.check._probe", "check_callable"),
        # forward_not_finite, reverse_not_finite, reverse_infinite, nan_swallowed
        ("study.check._probe", "finite_around"), ("study.check._judges", "finiteness_findings"),
        # compiled_differs, compiled_zero_sign
        ("study.check._judges", "compiled_findings"), ("study.check._judges", "_signs"),
        # vjp_not_linear
        ("study.check._probe", "linearity"), ("study.check._probe", "_linearity_calls"),
        ("study.check._probe", "_unjudged"), ("study.check._judges", "not_linear"),
        # not_deterministic, consumes_rng
        ("study.check._probe", "determinism"), ("study.check._probe", "_bitwise_equal"),
        ("study.check._probe", "_same_rng"),
        # gradcheck_fails
        ("study.check._probe", "gradcheck"), ("study.check._probe", "_outside_domain"),
        # transform_wrong, transform_error; convention_differs_from_twin at the probe inputs
        ("study.check._sections", "transforms"), ("study.check._sections", "twin_conventions"),
        # the run's verdict: exit code, alike findings merged, known deviations accepted
        ("study.check._findings", "exit_code"), ("study.check._findings", "merged"),
        ("study.check._known", "Known.matches"), ("study.check._known", "apply"),
    ],
}
# judges of study check not mutated yet: their tests run whole workloads (nets, graphs, a
# scan of 2049 points), not the seconds a mutant may take
PENDING = ["study.check._probe.scan_kinks (the kinks)",
           "study.check._sections.own_reference (what a transformation should return)",
           "study.check._sections.clone_hazards (writes_grad_output)",
           "study.check._sections.twin_nets (convention_differs_from_twin on the nets)"]


def mutant_pattern(module: str, function: str) -> str:
    """mutmut's name for the mutants of one function: module.x_fn__mutmut_N, or
    module.xǁClassǁmethod__mutmut_N for a method."""
    if function == "*":
        return f"{module}.*"
    cls, _, name = function.rpartition(".")
    return f"{module}.x{'ǁ' + cls + 'ǁ' if cls else '_'}{name}__mutmut_*"


def unresolved() -> list[str]:
    """The JUDGES that no longer import under their names (moved, renamed)."""
    out = []
    for module, function in (j for part in JUDGES.values() for j in part):
        try:
            obj = importlib.import_module(module)
            for attr in ([] if function == "*" else function.split(".")):
                obj = getattr(obj, attr)
        except (ImportError, AttributeError):
            out.append(f"{module}.{function}")
    return out


def mutmut(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "mutmut", *args], cwd=ROOT, capture_output=True,
                          text=True)


def statuses(patterns: list[str]) -> dict[str, str]:
    """{mutant: status} of every mutant of the last run that `patterns` name (`mutmut results
    --all true` lists the other functions of the mutated files too, not checked)."""
    out = {}
    for line in mutmut("results", "--all", "true").stdout.splitlines():
        name, sep, status = line.strip().rpartition(": ")
        if sep and name and any(fnmatch.fnmatch(name, p) for p in patterns):
            out[name] = status
    return out


def tally(found: dict[str, str]) -> dict:
    """Killed of the mutants the run reached; those it did not (a stopped run) counted apart."""
    reached = [status for status in found.values() if status != "not checked"]
    killed = sum(status in CAUGHT for status in reached)
    return {"killed": killed, "total": len(reached), "killed_share": killed / max(len(reached), 1),
            "not_checked": len(found) - len(reached)}


def main() -> int:
    with open(os.path.join(ROOT, "pyproject.toml"), "rb") as f:
        config = tomllib.load(f)["tool"]["mutmut"]
    missing = unresolved()
    if missing:
        print(f"JUDGES names what no longer imports: {', '.join(missing)}; give each its module "
              "in tests/mutation.py", file=sys.stderr)
        return 1
    patterns = {part: [mutant_pattern(*j) for j in judges] for part, judges in JUDGES.items()}
    everything = [p for part in patterns.values() for p in part]
    if "--from-last-run" in sys.argv:
        given = sys.argv[sys.argv.index("--from-last-run") + 1:]
        if given:
            seconds = float(given[0])
        else:
            with open(OUT, encoding="utf-8") as f:
                seconds = json.load(f)["wall_s"]  # the wall time of the run that gave them
        run = subprocess.CompletedProcess([], 0, "", "")
    else:
        start = time.perf_counter()
        run = mutmut("run", *everything)
        seconds = time.perf_counter() - start
    found = statuses(everything)
    if run.returncode != 0 or not found:
        print(f"mutmut run failed (exit {run.returncode}): {run.stderr[-2000:]}", file=sys.stderr)
        return 1
    with open(WHY, encoding="utf-8") as f:
        why = json.load(f)
    survivors = [{"mutant": name, "status": status, "why": why.get(name),
                  "diff": mutmut("show", name).stdout.strip().splitlines()[1:]}
                 for name, status in sorted(found.items())
                 if status not in CAUGHT and status != "not checked"]
    overall = tally(found)
    parts = {part: tally({k: v for k, v in found.items()
                          if any(fnmatch.fnmatch(k, p) for p in patterns[part])})
             for part in JUDGES}
    record = {"tool": f"mutmut {mutmut('--version').stdout.split()[-1]}",
              "mutated": {part: [f"{m}.{f}" for m, f in judges] for part, judges in
                          JUDGES.items()},
              "tests": config["pytest_add_cli_args_test_selection"], "pending": PENDING,
              **overall, "parts": parts, "target_share": TARGET, "wall_s": round(seconds, 1),
              "utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "survivors": survivors}
    with open(OUT, "w", encoding="utf-8") as f:
        json.dump(record, f, indent=1, ensure_ascii=False)
        f.write("\n")
    unexplained = [s["mutant"] for s in survivors if not s["why"]]
    for part, t in parts.items():
        print(f"{part}: {t['killed']} of {t['total']} killed ({t['killed_share']:.1%}), "
              f"{t['not_checked']} not checked")
    print(f"mutmut: {overall['killed']} of {overall['total']} mutants killed "
          f"({overall['killed_share']:.1%}, target {TARGET:.0%}) in {seconds:.0f} s; "
          f"{len(survivors)} survive, {len(unexplained)} without a why in "
          f"{os.path.relpath(WHY, ROOT)}: {', '.join(unexplained) or 'none'}")
    if overall["not_checked"]:
        print(f"incomplete: {overall['not_checked']} mutants not checked (a stopped run)")
    shares = [overall["killed_share"]] + [t["killed_share"] for t in parts.values()]
    return 0 if min(shares) >= TARGET and not unexplained and not overall["not_checked"] else 1


if __name__ == "__main__":
    sys.exit(main())

"""`make gpu`, the GPU workflow in one command, read in dry mode (make -n) on any host: the
untimed experiments side by side, then timing alone, then the check, each a command the study's
own parser accepts, all writing into one folder. Without a GPU its first command refuses in one
line (tests/test_cli.py: test_cuda_without_a_gpu_says_so_and_writes_nothing)."""
import shlex
import shutil
import subprocess

import pytest

import experiments
from study.check import load_target
from study.cli import build_parser
from study.runs.provenance import REPO_ROOT


def dry_run(*variables: str) -> list[list[str]]:
    # under an outer make (make test) a sub-make prints "Entering directory" unless told not to
    done = subprocess.run(["make", "--no-print-directory", "-n", "gpu", "PY=python3", *variables],
                          cwd=REPO_ROOT, capture_output=True, text=True, check=True)
    return [shlex.split(line, comments=True)
            for line in done.stdout.replace("\\\n", " ").splitlines() if line.strip()]


@pytest.mark.skipif(shutil.which("make") is None, reason="needs make")
def test_make_gpu_runs_untimed_side_by_side_then_timing_then_the_check_into_one_folder():
    untimed, timing, check, said = dry_run("GPU_OUT=out")
    assert untimed[:4] == timing[:4] == ["python3", "-m", "study", "run"]
    chosen = set(untimed[4:untimed.index("--device")])
    assert chosen == set(experiments.NAMES) - {"timing"}  # every experiment, timing last
    assert timing[4] == "timing" and "--jobs" not in timing  # nothing shares the GPU with it
    for argv in (untimed, timing):
        args = build_parser().parse_args(argv[3:])
        assert (args.device, args.results_dir) == ("cuda", "out/results")
    assert build_parser().parse_args(untimed[3:]).jobs == 7
    # the check: a registry rule that loads, JSON and markdown into the same folder
    rule_spec = check[check.index("check") + 1]
    args = build_parser().parse_args(check[3:check.index(">")])
    assert (args.device, args.json) == ("cuda", "out/check.json")
    assert check[check.index(">") + 1] == "out/check.md"
    assert callable(load_target(rule_spec)[0])
    assert said[0] == "echo" and "out/results/" in said[1] and "reports/results/" in said[1]

"""Every command the README shows runs, except the heavy ones listed here by name."""
import os
import re
import shutil
import subprocess
import sys

import pytest

from study.runs.provenance import REPO_ROOT

HEAVY = {  # each is covered elsewhere or needs what CI does not have
    "make report": "reruns everything (minutes); the experiments are tested one by one",
    "make test": "this suite itself",
    "make gpu PY=python3": "needs a GPU; tests/test_gpu_workflow.py reads its commands (make -n)",
    "make history": "builds 19 release envs (46 GB of uv cache), runs them; test_history.py",
    'make history HISTORY_ARGS="--release torch-2.4.1"': "installs a 5.5 GB torch build",
    ".venv/bin/python -m study history --build-only": "installs 19 torch and JAX builds",
    ".venv/bin/python -m study history --engine ray --only jax --address HOST:6379 --chunks 8":
        "needs a Ray cluster",
    ".venv/bin/python -m study run two_layer": "tests/test_cli.py runs it end to end",
    ".venv/bin/python -m study run clone_hazard": "tests/test_semantics.py and the device audit",
    ".venv/bin/python -m study report":
        "tests/test_report.py renders it; tests/test_cli.py runs it",
    ".venv/bin/python -m study run zero_point": "a minute; tests/test_zero_point.py runs its cases",
    ".venv/bin/python -m study run zero_point --full": "minutes; the same code, more placements",
    ".venv/bin/python -m study run transforms": "compiles with inductor; tests/test_semantics.py",
    ".venv/bin/python -m study run training": "20 s; tests/test_training.py trains both frameworks",
    ".venv/bin/python -m study run bifurcation":
        "a minute; tests/test_training.py runs its counter",
    ".venv/bin/python -m study run bifurcation --full": "44 minutes on two cores",
    ".venv/bin/python -m study run timing": "about two minutes; tests/test_timing.py",
    ".venv/bin/python -m study run timing --quick": "30 s of benchmarks; tests/test_timing.py",
}


def readme_commands() -> list[str]:
    text = open(os.path.join(REPO_ROOT, "README.md"), encoding="utf-8").read()
    blocks = re.findall(r"```sh\n(.*?)```", text, re.S)
    return [line.split("  #")[0].strip() for block in blocks for line in block.splitlines()
            if line.strip() and not line.strip().startswith("#")]


def test_every_readme_command_is_either_run_here_or_marked_heavy():
    for cmd in readme_commands():
        assert cmd in HEAVY or cmd.startswith(".venv/bin/python -m study "), cmd


@pytest.fixture(scope="module")
def scratch_repo(tmp_path_factory):
    root = tmp_path_factory.mktemp("repo")
    for name in ("study", "experiments", "reports"):
        shutil.copytree(os.path.join(REPO_ROOT, name), root / name,
                        ignore=shutil.ignore_patterns("__pycache__"))
    return root


@pytest.mark.slow
@pytest.mark.parametrize("cmd", [c for c in readme_commands() if c not in HEAVY])
def test_readme_command_runs(cmd, scratch_repo):
    argv = [sys.executable] + cmd.split()[1:]  # .venv/bin/python -> this interpreter
    done = subprocess.run(argv, cwd=scratch_repo, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]

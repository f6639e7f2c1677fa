"""The instrument installed as a user installs it: a fresh venv holding the project's wheel and one
framework, and not the other, runs `study check`, `study conformance` and the pytest plugin.

    make test-install     # not part of make test: it builds a wheel and two venvs

Each venv gets the wheel and exactly the packages its metadata asks for (the base dependencies
and the framework's extra, followed through each package's own requirements), at the versions
installed here (constraints.txt's), by `uv pip install --no-deps` from uv's cache: real installs,
hardlinked, a few seconds each.
"""
import os
import shutil
import subprocess
import sys
import zipfile
from importlib.metadata import distribution

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from study.runs.history import local_wheel_dirs

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
pytestmark = [pytest.mark.slow, pytest.mark.install]

OTHER = {"torch": "jax", "jax": "torch"}
RULES = {"torch": "rules_torch_only.py", "jax": "rules_jax_only.py"}  # beside this file
CLEAN = {"torch": "Relu", "jax": "relu"}
WRONG = {"torch": "AlphaAtZero", "jax": "alpha_at_zero"}
OPS = {"torch": "torch_relu6", "jax": "jax_relu6"}  # follows the documented rule at 0 and 6


def pins(wheel: str, extra: str) -> list[str]:
    """name==version of every package the wheel asks for with `extra`, followed through each
    one's own requirements, at the version installed here."""
    with zipfile.ZipFile(wheel) as z:
        metadata = z.read(next(n for n in z.namelist() if n.endswith(".dist-info/METADATA")))
    wanted = [Requirement(line.split(":", 1)[1]) for line in metadata.decode().splitlines()
              if line.startswith("Requires-Dist:")]
    todo = [r for r in wanted if r.marker is None or r.marker.evaluate({"extra": extra})]
    found: dict[str, str] = {}
    while todo:
        r = todo.pop()
        if canonicalize_name(r.name) in found:
            continue
        dist = distribution(r.name)
        found[canonicalize_name(r.name)] = dist.version
        todo += [q for q in map(Requirement, dist.requires or [])
                 if q.marker is None or q.marker.evaluate({"extra": ""})]
    return [f"{name}=={version}" for name, version in sorted(found.items())]


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> str:
    """The project's wheel, built from a copy of the tree (no build/ left in the checkout)."""
    src, out = tmp_path_factory.mktemp("src"), tmp_path_factory.mktemp("wheel")
    shutil.copy(os.path.join(ROOT, "pyproject.toml"), src)
    for package in ("study", "experiments"):
        shutil.copytree(os.path.join(ROOT, package), src / package,
                        ignore=shutil.ignore_patterns("__pycache__"))
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps",
                    "--no-build-isolation", "-w", str(out), str(src)], check=True,
                   capture_output=True)
    return str(next(out.glob("*.whl")))


def fresh_venv(where, wheel: str, framework: str) -> str:
    """A venv with the wheel, `framework` and pytest: its bin folder."""
    pip_config = subprocess.run([sys.executable, "-m", "pip", "config", "list"],
                                capture_output=True, text=True).stdout
    find_links = [a for d in local_wheel_dirs(pip_config) for a in ("--find-links", d)]
    env = {**os.environ, "UV_LINK_MODE": "hardlink"}
    venv = os.path.join(where, f"venv-{framework}")
    subprocess.run([sys.executable, "-m", "uv", "venv", "--quiet", "--python", sys.executable,
                    venv], check=True, env=env)
    test_pins = [p for p in pins_of_pytest() if p.split("==")[0] != "packaging"]
    subprocess.run([sys.executable, "-m", "uv", "pip", "install", "--quiet", "--no-deps",
                    "--python", os.path.join(venv, "bin", "python"), *find_links, wheel,
                    *pins(wheel, framework), *test_pins], check=True, env=env)
    return os.path.join(venv, "bin")


def installed(python: str, framework: str) -> str:
    """The framework's release in that venv, as the check names it."""
    return subprocess.run([python, "-c", f"import {framework}; print({framework}.__version__)"],
                          capture_output=True, text=True, check=True).stdout.strip()


def test_the_wheel_ships_the_conventions_dataset_and_stays_small(wheel):
    with zipfile.ZipFile(wheel) as z:
        names = set(z.namelist())
    assert {f"study/data/conventions/{n}" for n in ("runs.json", "cells.parquet",
                                                   "breaks.parquet")} <= names
    assert os.path.getsize(wheel) < 2_000_000  # bytes: the dataset is ~80 kB of it


def pins_of_pytest() -> list[str]:
    return [f"{n}=={distribution(n).version}"
            for n in ("pytest", "iniconfig", "pluggy", "packaging", "Pygments")]


def run(args: list[str], cwd) -> subprocess.CompletedProcess:
    # bytecode written on first import, as a user's venv keeps it: else each process compiles
    # torch's modules anew (10 s here)
    env = {k: v for k, v in os.environ.items()
           if k not in ("PYTHONPATH", "VIRTUAL_ENV", "PYTHONDONTWRITEBYTECODE")}
    return subprocess.run(args, cwd=cwd, env=env, capture_output=True, text=True, timeout=300)


@pytest.mark.parametrize("framework", ["torch", "jax"])
def test_a_venv_with_one_framework_runs_the_instrument_with_its_exit_codes(framework, wheel,
                                                                           tmp_path):
    bin_ = fresh_venv(tmp_path, wheel, framework)
    python, study = os.path.join(bin_, "python"), os.path.join(bin_, "study")
    assert run([python, "-c", f"import {OTHER[framework]}"], tmp_path).returncode == 1
    shutil.copy(os.path.join(ROOT, "tests", RULES[framework]), tmp_path / "rules.py")
    done = run([study, "check", "rules.py:NoSuchRule"], tmp_path)  # 2: usage, one line
    assert (done.returncode, done.stderr.count("\n")) == (2, 1), done.stderr[-2000:]
    done = run([study, "check", f"rules.py:{CLEAN[framework]}", "--quick"], tmp_path)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    # compared with the built-ins the package ships (study.conventions), naming its release
    matched = done.stdout.split("## Built-ins it matches", 1)[1]
    assert "of the conventions dataset of relu-gradient-study" in matched, matched[:2000]
    assert f"{framework} {installed(python, framework)}" in " ".join(matched.split())
    assert "Not compared" not in matched
    done = run([study, "check", f"rules.py:{WRONG[framework]}", "--quick"], tmp_path)
    assert done.returncode == 1 and "vjp_not_linear" in done.stdout, done.stderr[-2000:]
    done = run([study, "conformance", "--ops", OPS[framework]], tmp_path)
    assert done.returncode == 0 and "2 follows" in done.stdout, done.stdout + done.stderr
    # every built-in: the breaks measured in this release are known from the shipped dataset
    done = run([study, "conformance", "--framework", framework], tmp_path)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
    assert "Known breaks: the conventions dataset of relu-gradient-study" in done.stdout
    assert "breaks (known: measured in" in done.stdout  # torch.clamp at 0; jnp.abs at 0
    done = run([python, "-m", "pytest", "-p", "no:cacheprovider", "--study-conformance",
                "--study-ops", OPS[framework]], tmp_path)  # the pytest11 entry point
    assert done.returncode == 0 and "2 passed" in done.stdout, done.stdout[-2000:]

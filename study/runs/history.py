"""Release history: one environment per torch or JAX release, each running the study as shards.

    python -m study history                      # build missing envs, run every shard here
    python -m study history --engine ray         # the same shards on a local Ray cluster
    python -m study history --only jax --engine ray --address HOST:6379 --chunks 8
    python -m study history --build-only         # only build (and time) the environments

Each release gets a venv under .history/ (git-ignored), installed once by uv from a cache shared
by every release and checkout (uv's default, ~/.cache/uv, or $UV_CACHE_DIR), so CUDA libraries
common to several torch wheels are stored once and the venvs are hardlinks into it (the cache and
the envs must share a filesystem). Every pin but the release's own is
constraints.txt's; a pin the release rejects is dropped, and the version uv chose is recorded in
the env's release.json beside the build's wall time. The study is not installed: each shard
runs with PYTHONPATH at this checkout. A release that needs a newer Python than this machine's
(JAX 0.11 and later need 3.12) gets its venv from a Python that study.runs.interpreters builds
once from Debian's packages; its bin/python is then a launcher, and release.json says how that
Python was made. The experiments it runs are those whose Experiment has a
history_scope (study.cli passes them). make history calls this.
"""
import argparse
import json
import os
import platform
import re
import shutil
import subprocess
import sys
import time
import tomllib
from dataclasses import dataclass

from packaging.version import Version

from study.runs import interpreters

REPO_ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
HISTORY_DIR = os.path.join(REPO_ROOT, ".history")
CONSTRAINTS = os.path.join(REPO_ROOT, "constraints.txt")
RESULTS_DIR = os.path.join(REPO_ROOT, "reports", "results")  # study.runs.results.RESULTS_DIR
CACHE_LIMIT_BYTES = 50 * 2**30  # stop building past this: the disk is shared
# every minor release at its last patch, as PyPI served them for Python 3.11 in November 2026
TORCH_RELEASES = ("2.4.1", "2.5.1", "2.6.0", "2.7.1", "2.8.0", "2.9.1", "2.10.0", "2.11.0",
                  "2.12.1", "2.13.0", "2.14.1", "2.15.0")
JAX_RELEASES = ("0.4.38", "0.5.3", "0.6.2", "0.7.2", "0.8.3", "0.9.2", "0.10.2",
                "0.11.2", "0.12.0.1")  # 0.11 and later for Python 3.12 and later only
DEVICE = "cpu"  # the history compares releases, not devices


@dataclass(frozen=True)
class Release:
    package: str  # "torch" | "jax": the one whose version moves; the other keeps the study's pin
    version: str

    @property
    def name(self) -> str:
        return f"{self.package}-{self.version}"

    @property
    def pins(self) -> dict[str, str]:
        packages = ("jax", "jaxlib") if self.package == "jax" else (self.package,)
        return {p: self.version for p in packages}

    @property
    def python_needed(self) -> tuple[int, int]:
        """The oldest Python the release's wheels are for (PyPI's requires-python)."""
        if self.package == "jax" and Version(self.version) >= Version("0.11"):
            return (3, 12)
        return (3, 11)


def releases(only: str | None = None) -> list[Release]:
    chosen = [Release("torch", v) for v in TORCH_RELEASES] + [Release("jax", v)
                                                                for v in JAX_RELEASES]
    return [r for r in chosen if only in (None, r.package)]


def study_pins(constraints_text: str) -> dict[str, str]:
    """torch's and jax's versions in constraints.txt: what a release that moves the other keeps."""
    pins = dict(ln.strip().split("==", 1) for ln in constraints_text.splitlines()
                if "==" in ln and not ln.lstrip().startswith("#"))
    return {"torch": pins["torch"], "jax": pins["jax"]}


def distinct(chosen: list[Release], constraints_text: str) -> list[Release]:
    """`chosen` less a release whose torch and jax equal an earlier one's: torch-2.13.0 with the
    study's jax 0.10.2 is jax-0.10.2 with the study's torch, one environment, run once."""
    seen, out = set(), []
    for release in chosen:
        versions = {**study_pins(constraints_text), release.package: release.version}
        if (versions["torch"], versions["jax"]) not in seen:
            seen.add((versions["torch"], versions["jax"]))
            out.append(release)
    return out


def env_dir(release: Release, root: str = HISTORY_DIR) -> str:
    return os.path.join(root, release.name)


def env_python(release: Release, root: str = HISTORY_DIR) -> str:
    return os.path.join(env_dir(release, root), "bin", "python")


def built(release: Release, root: str = HISTORY_DIR) -> bool:
    """release.json is written last, so a half-built env is rebuilt."""
    return os.path.exists(os.path.join(env_dir(release, root), "release.json"))


# the engine's driver imports ray; a shard's `study run` never does
NOT_IN_SHARDS = ("ray",)


def project_requirements(pyproject: str = os.path.join(REPO_ROOT, "pyproject.toml")) -> list:
    """What `study run` needs: pyproject's dependencies and its study extra (their ranges),
    less NOT_IN_SHARDS; the test extras are not needed."""
    with open(pyproject, "rb") as f:
        project = tomllib.load(f)["project"]
    return [r for r in project["dependencies"] + project["optional-dependencies"]["study"]
            if _package_of(r) not in NOT_IN_SHARDS]


def _package_of(line: str) -> str:
    return re.split(r"[=<>!~\[; ]", line.strip(), maxsplit=1)[0].lower().replace("_", "-")


def constraints_for(release: Release, constraints_text: str, dropped: tuple = ()) -> list[str]:
    """constraints.txt's pins, less the release's own packages and those in `dropped`."""
    skip = {p.replace("_", "-") for p in (*release.pins, *dropped)}
    return [ln.strip() for ln in constraints_text.splitlines()
            if ln.strip() and not ln.lstrip().startswith("#") and _package_of(ln) not in skip]


def pins_rejected(uv_error: str, constraints: list[str]) -> set[str]:
    """The constrained packages that uv's resolution error names: the pins to drop."""
    named = {m.lower().replace("_", "-") for m in re.findall(r"\b([A-Za-z][\w.-]*)[=<>!]=?",
                                                             uv_error)}
    return {_package_of(c) for c in constraints} & named


def local_wheel_dirs(pip_config: str) -> list[str]:
    """The find-links folders in `pip config list`'s output: where this machine keeps wheels
    that no index serves (torch 2.13.0+cpu here). uv reads no pip config, so it is told."""
    found = []
    for line in pip_config.splitlines():
        key, _, value = line.partition("=")
        if key.strip().endswith("find-links"):
            found += [v for v in value.strip().strip("'\"").split() if v not in found]
    return found


# torch 2.9 and 2.10's inductor imports setuptools, which a uv venv lacks: without it every
# compiled cell of those releases is "InductorError: ModuleNotFoundError", an env's fault
INDUCTOR_NEEDS = ("setuptools",)


def install_command(release: Release, python: str, constraints_file: str,
                    wheel_dirs: list[str]) -> list[str]:
    pins = [f"{p}=={v}" for p, v in release.pins.items()]
    find_links = [arg for folder in wheel_dirs for arg in ("--find-links", folder)]
    return [sys.executable, "-m", "uv", "pip", "install", "--quiet", "--python", python,
            "-c", constraints_file, *find_links, *pins, *project_requirements(),
            *INDUCTOR_NEEDS]


def _pip_config() -> str:
    return subprocess.run([sys.executable, "-m", "pip", "config", "list"], capture_output=True,
                          text=True).stdout


def _uv_env() -> dict:
    return {**os.environ, "UV_LINK_MODE": "hardlink"}


def uv_cache_dir() -> str:
    """uv's cache: $UV_CACHE_DIR, else uv's own default (~/.cache/uv), shared by every checkout
    on the machine, so a second checkout's history downloads nothing again."""
    return subprocess.run([sys.executable, "-m", "uv", "cache", "dir"], capture_output=True,
                          text=True, check=True, env=_uv_env()).stdout.strip()


def host_python() -> dict:
    return {"made_by": "this machine", "python": platform.python_version(),
            "executable": sys.executable}


def build(release: Release, root: str = HISTORY_DIR, say=print) -> dict:
    """Create the release's venv and install into it; returns what release.json records."""
    newer = interpreters.interpreter_for(release.python_needed, sys.version_info[:2])
    # built once for every release that needs it, and timed in its own record
    interpreter = interpreters.ensure_built(newer, root, say) if newer else host_python()
    python = interpreters.root_launcher(newer, root) if newer else sys.executable
    where, start = env_dir(release, root), time.perf_counter()
    shutil.rmtree(where, ignore_errors=True)
    subprocess.run([sys.executable, "-m", "uv", "venv", "--quiet", "--python", python, where],
                   check=True, env=_uv_env())
    if newer:
        interpreters.make_env_launcher(where, newer, root)
    with open(CONSTRAINTS, encoding="utf-8") as f:
        text = f.read()
    dropped, wheel_dirs = set(), local_wheel_dirs(_pip_config())
    while True:
        constraints = constraints_for(release, text, tuple(dropped))
        constraints_file = os.path.join(where, "constraints.txt")
        with open(constraints_file, "w", encoding="utf-8") as f:
            f.write("\n".join(constraints) + "\n")
        done = subprocess.run(install_command(release, env_python(release, root),
                                              constraints_file, wheel_dirs),
                              capture_output=True, text=True, env=_uv_env())
        if done.returncode == 0:
            break
        rejected = pins_rejected(done.stderr, constraints) - dropped
        if not rejected:
            raise RuntimeError(f"{release.name}: uv failed: {done.stderr.strip()[-2000:]}")
        say(f"[history] {release.name}: the release rejects the pins of "
            f"{', '.join(sorted(rejected))}; uv chooses them")
        dropped |= rejected
    record = {"release": release.name, "pins": release.pins, "pins_dropped": sorted(dropped),
              "installed": installed_versions(env_python(release, root)),
              "interpreter": interpreter,
              "build_s": round(time.perf_counter() - start, 1)}
    with open(os.path.join(where, "release.json"), "w", encoding="utf-8") as f:
        json.dump(record, f, indent=1, sort_keys=True)
    return record


def installed_versions(python: str) -> dict[str, str]:
    out = subprocess.run([sys.executable, "-m", "uv", "pip", "freeze", "--python", python],
                         capture_output=True, text=True, check=True, env=_uv_env()).stdout
    return dict(ln.split("==", 1) for ln in out.splitlines() if "==" in ln)


def disk_bytes(path: str) -> int:
    """Bytes under `path`, each hardlinked file once (as du counts)."""
    seen, total = set(), 0
    for folder, _, files in os.walk(path):
        for name in files:
            st = os.lstat(os.path.join(folder, name))
            if (st.st_dev, st.st_ino) not in seen:
                seen.add((st.st_dev, st.st_ino))
                total += st.st_blocks * 512
    return total


def build_missing(chosen: list[Release], root: str = HISTORY_DIR, say=print) -> None:
    cache = uv_cache_dir()
    for release in chosen:
        if built(release, root):
            continue
        if os.path.isdir(cache) and disk_bytes(cache) > CACHE_LIMIT_BYTES:
            raise RuntimeError(f"the uv cache {cache} passed {CACHE_LIMIT_BYTES / 2**30:.0f} GiB;"
                               f" stopped before {release.name}")
        say(f"[history] building {release.name}")
        record = build(release, root, say)
        say(f"[history] {release.name} built in {record['build_s']} s")


def shard_env(release: Release) -> dict[str, str]:
    """What a shard's process needs besides its python: the study on its path."""
    return {"PYTHONPATH": REPO_ROOT, "OMP_WAIT_POLICY": "passive"}


def shard_specs(chosen: list[Release], experiments: list[tuple[str, str]],
                root: str = HISTORY_DIR, results_dir: str = RESULTS_DIR,
                chunks: dict | None = None) -> list[dict]:
    """One shard per (release, experiment, chunk), as study.runs.engine.Shard's fields.
    `experiments`: (name, scope) of those the history runs (each Experiment's history_scope).
    `chunks` maps an experiment to its case ranges [(i, j), ...]; one without is one shard."""
    chunks = chunks or {}
    return [dict(python=env_python(r, root), experiment=name, scope=scope, device=DEVICE,
                 results_dir=results_dir, cases=cases, env=shard_env(r))
            for r in chosen for name, scope in experiments
            for cases in chunks.get(name, [None])]


def case_count(python: str, experiment: str, scope: str) -> int:
    """How many cases `experiment` has in `scope`, as that env's `study list --cases` says."""
    out = subprocess.run([python, "-m", "study", "list", "--cases", experiment, "--scope", scope],
                         capture_output=True, text=True, check=True,
                         env={**os.environ, "PYTHONPATH": REPO_ROOT}).stdout
    return int(out.split()[-1])


def chunked(chosen: list[Release], parts: int, experiments: list[tuple[str, str]]) -> dict:
    """Each experiment's case list in `parts` chunks (fewer where it has fewer cases), counted
    in the first release's env (the registry is the same in every one)."""
    if parts <= 1 or not chosen:
        return {}
    from study.runs.engine import chunks_of
    return {name: chunks_of(case_count(env_python(chosen[0]), name, scope), parts)
            for name, scope in experiments}


def study_run_command(spec: dict) -> list[str]:
    """The `study run` a shard is: what runs it without an engine."""
    scope = [] if spec["scope"] == "standard" else [f"--{spec['scope']}"]
    return [spec["python"], "-m", "study", "run", spec["experiment"], *scope,
            "--device", spec["device"], "--results-dir", spec["results_dir"]]


def run_here(specs: list[dict], say=print) -> list[str]:
    """Each shard in turn in this machine's shell; returns the failures, each named."""
    failed = []
    for spec in specs:
        start = time.perf_counter()
        done = subprocess.run(study_run_command(spec), env={**os.environ, **spec["env"]})
        say(f"[history] {spec['python']} {spec['experiment']}: exit {done.returncode} "
            f"in {time.perf_counter() - start:.1f} s")
        if done.returncode:
            failed.append(f"{spec['python']} {spec['experiment']} (exit {done.returncode})")
    return failed


def run_on_engine(specs: list[dict], address: str | None) -> list[str]:
    """The shards on Ray (study.runs.engine: retried once, resumable); returns the failures, each
    named with its error."""
    from study.runs import engine  # Ray is imported only where it is asked for
    outcomes = engine.run_shards([engine.Shard(**spec) for spec in specs], address=address)
    return [f"{o.shard.label}: {o.error}" for o in engine.failed(outcomes)]


def main(argv, experiments: list[tuple[str, str]]) -> int:
    """`study history`: `experiments` are the (name, scope) the history runs (study.cli reads
    them off each Experiment's history_scope)."""
    parser = argparse.ArgumentParser(prog="python -m study history", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    from study.commands import HELP  # its words beside the other commands'
    words = HELP["history"]
    parser.add_argument("--engine", choices=("ray",), help=words["--engine"])
    parser.add_argument("--address", help=words["--address"])
    parser.add_argument("--only", choices=("torch", "jax"), help=words["--only"])
    parser.add_argument("--release", action="append", metavar="NAME", help=words["--release"])
    parser.add_argument("--build-only", action="store_true", help=words["--build-only"])
    parser.add_argument("--results-dir", default=RESULTS_DIR)
    parser.add_argument("--chunks", type=int, default=1, metavar="N", help=words["--chunks"])
    args = parser.parse_args(argv)
    chosen = [r for r in releases(args.only) if not args.release or r.name in args.release]
    if args.release and len(chosen) != len(set(args.release)):
        parser.error(f"unknown release among {args.release}; known: "
                     f"{', '.join(r.name for r in releases())}")
    with open(CONSTRAINTS, encoding="utf-8") as f:
        chosen = distinct(chosen, f.read())
    if (args.address or args.chunks > 1) and not args.engine:
        parser.error("--address and --chunks need --engine")
    build_missing(chosen)
    if args.build_only:
        return 0
    specs = shard_specs(chosen, experiments, results_dir=args.results_dir,
                        chunks=chunked(chosen, args.chunks, experiments) if args.engine else None)
    failed = run_on_engine(specs, args.address) if args.engine else run_here(specs)
    if failed:
        print(f"[history] failed: {'; '.join(map(str, failed))}", file=sys.stderr)
        return 1
    return 0


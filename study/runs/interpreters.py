"""Pythons newer than this machine's, for the release history (study.runs.history): a release
that needs a newer Python (JAX 0.11 and later need 3.12) gets one from Debian's packages.

    .history/python-3.13/root/              Debian trixie (minbase, python3 and its headers)
    .history/python-3.13/bin/python3.13     its Python, runnable here (a launcher)
    .history/python-3.13/include/           its pyconfig.h, for this machine's compiler
    .history/python-3.13/interpreter.json   how it was made: suite, versions, build seconds

Built once, as root (debootstrap needs it), and kept; interpreter.json is written last, so a
root cut short is built again. The root's Python is linked against a newer C library than this
machine's, so it cannot run under this machine's dynamic loader; each launcher runs it under the
root's own loader, which looks up libraries in the root first. Nothing is mounted and nothing
is chrooted: the process is an ordinary one of its caller, sees the whole filesystem (the
checkout, any results folder, ~/.cache) and writes files as its caller does. A release env's
bin/python is such a launcher that gives Python its own path as argv[0], so that Python finds
the env's pyvenv.cfg, and sys.executable (which the study's child processes run) is the launcher.

Torch's inductor compiles C++ against Python.h with this machine's g++ (the root's cannot run
here). Debian's Python.h includes <MULTIARCH/python3.13/pyconfig.h>, which lies in the root's
/usr/include, so a launcher puts include/ (that one folder, not the root's other headers) on
the compilers' search path (CPATH).
"""
import json
import os
import platform
import shlex
import shutil
import subprocess
import time
from dataclasses import dataclass

DEBIAN_MIRROR = "http://deb.debian.org/debian"
DEBIAN_PYTHONS = (("trixie", "3.13"),)  # (suite, its python3), oldest first
# the multiarch folder of a Debian root and the dynamic loader in it, by machine
LOADERS = {"x86_64": ("x86_64-linux-gnu", "ld-linux-x86-64.so.2"),
           "aarch64": ("aarch64-linux-gnu", "ld-linux-aarch64.so.1")}


@dataclass(frozen=True)
class Interpreter:
    suite: str  # the Debian suite whose python3 it is
    python: str  # "3.13"

    @property
    def name(self) -> str:
        return f"python-{self.python}"


def version_tuple(version: str) -> tuple[int, ...]:
    return tuple(int(part) for part in version.split("."))


def interpreter_for(needed: tuple[int, int], host: tuple[int, int]) -> Interpreter | None:
    """None where the host's Python (`host`, major and minor) is new enough; else the oldest
    Debian Python that is."""
    if host >= needed:
        return None
    for suite, python in DEBIAN_PYTHONS:
        if version_tuple(python) >= needed:
            return Interpreter(suite, python)
    raise RuntimeError(f"no Debian suite here ships Python {'.'.join(map(str, needed))} or later;"
                       f" add one to study.runs.interpreters.DEBIAN_PYTHONS")


def interpreter_dir(interpreter: Interpreter, history_dir: str) -> str:
    return os.path.join(history_dir, interpreter.name)


def root_dir(interpreter: Interpreter, history_dir: str) -> str:
    return os.path.join(interpreter_dir(interpreter, history_dir), "root")


def root_launcher(interpreter: Interpreter, history_dir: str) -> str:
    return os.path.join(interpreter_dir(interpreter, history_dir), "bin",
                        f"python{interpreter.python}")


def include_dir(interpreter: Interpreter, history_dir: str) -> str:
    return os.path.join(interpreter_dir(interpreter, history_dir), "include")


def debootstrap_packages(interpreter: Interpreter) -> tuple[str, ...]:
    # uv makes the envs and installs into them: no pip, no venv module; the headers are
    # inductor's (Python.h)
    return ("python3", f"libpython{interpreter.python}-dev")


def debootstrap_command(interpreter: Interpreter, root: str,
                        mirror: str = DEBIAN_MIRROR) -> list[str]:
    return ["debootstrap", "--variant=minbase",
            f"--include={','.join(debootstrap_packages(interpreter))}", interpreter.suite, root,
            mirror]


def launcher_script(interpreter: Interpreter, history_dir: str, names_itself: bool,
                    machine: str | None = None) -> str:
    """A shell script that runs the root's Python with the arguments and environment it gets,
    and include_dir on CPATH, and inductor's kernels in a folder of this Python's own (inside
    the one in effect, which a timed run empties). The loader's --library-path replaces
    LD_LIBRARY_PATH, so the caller's LD_LIBRARY_PATH follows the root's libraries there
    (inductor's probe of the CPU's vector instructions finds libtorch_cpu by it: without it,
    inductor compiles no vector code). `names_itself`: Python gets the script's own path as
    argv[0] (a venv's bin/python: Python then reads that venv's pyvenv.cfg, and
    sys.executable is the script)."""
    root = root_dir(interpreter, history_dir)
    multiarch, loader = LOADERS[machine or platform.machine()]
    libraries = os.path.join(root, "usr", "lib", multiarch)
    argv0 = ' --argv0 "$0"' if names_itself else ""
    headers = shlex.quote(include_dir(interpreter, history_dir))
    return (f"#!/bin/sh\n"
            f"# Python {interpreter.python} of Debian {interpreter.suite} (study.runs.interpreters)"
            f": its own loader and\n# libraries, as it needs a newer C library than this "
            f"machine's\n"
            f'export CPATH={headers}"${{CPATH:+:$CPATH}}"\n'
            # inductor's C++ kernels are built against this Python's headers: one loaded by
            # another Python fails (SystemError), so this one keeps its kernels apart
            f'export TORCHINDUCTOR_CACHE_DIR="${{TORCHINDUCTOR_CACHE_DIR:-/tmp/torchinductor_'
            f'$(id -un)}}/python-{interpreter.python}"\n'
            f"exec {shlex.quote(os.path.join(libraries, loader))} --library-path "
            f'{shlex.quote(libraries)}"${{LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}}"{argv0} '
            f"{shlex.quote(os.path.join(root, 'usr', 'bin', f'python{interpreter.python}'))} "
            f'"$@"\n')


def link_pyconfig(interpreter: Interpreter, history_dir: str, machine: str | None = None) -> str:
    """include_dir/MULTIARCH/pythonX.Y: a link to the root's folder of that name (pyconfig.h)."""
    multiarch, _ = LOADERS[machine or platform.machine()]
    folder = f"python{interpreter.python}"
    link = os.path.join(include_dir(interpreter, history_dir), multiarch, folder)
    os.makedirs(os.path.dirname(link), exist_ok=True)
    if os.path.lexists(link):
        os.remove(link)
    os.symlink(os.path.join("..", "..", "root", "usr", "include", multiarch, folder), link)
    return link


def write_launcher(path: str, script: str) -> None:
    """`script` at `path`, executable, in place of whatever was there (a venv's symlink)."""
    os.makedirs(os.path.dirname(path), exist_ok=True)
    if os.path.lexists(path):
        os.remove(path)
    with open(path, "w", encoding="utf-8") as f:
        f.write(script)
    os.chmod(path, 0o755)


def debian_package_versions(dpkg_status: str, names: tuple[str, ...]) -> dict[str, str]:
    """The installed versions of `names` in a dpkg status file's text."""
    versions, package = {}, None
    for line in dpkg_status.splitlines():
        if line.startswith("Package: "):
            package = line.split(": ", 1)[1]
        elif line.startswith("Version: ") and package in names:
            versions[package] = line.split(": ", 1)[1]
    return versions


def _mounts_under(path: str) -> list[str]:
    with open("/proc/self/mounts", encoding="utf-8") as f:
        points = [line.split()[1] for line in f]
    return [p for p in points if p == path or p.startswith(path.rstrip("/") + "/")]


def _remove_root(root: str) -> None:
    """A half-built root removed, unless something is mounted in it (debootstrap mounts /proc
    and /sys there while it works): deleting through a mount would reach the host's files."""
    mounted = _mounts_under(os.path.abspath(root))
    if mounted:
        raise RuntimeError(f"{root} has mounts ({', '.join(mounted)}): unmount them, then rerun")
    shutil.rmtree(root, ignore_errors=True)


def record_path(interpreter: Interpreter, history_dir: str) -> str:
    return os.path.join(interpreter_dir(interpreter, history_dir), "interpreter.json")


def ensure_built(interpreter: Interpreter, history_dir: str, say=print) -> dict:
    """The Debian root and its launcher, built unless interpreter.json says they are; returns
    that record."""
    record_file = record_path(interpreter, history_dir)
    launcher = root_launcher(interpreter, history_dir)
    if os.path.exists(record_file):
        write_launcher(launcher, launcher_script(interpreter, history_dir, names_itself=False))
        with open(record_file, encoding="utf-8") as f:
            return json.load(f)
    if shutil.which("debootstrap") is None:
        raise RuntimeError(f"Python {interpreter.python} is built with debootstrap, which is not "
                           f"installed: apt-get install debootstrap")
    if os.geteuid() != 0:
        raise RuntimeError(f"debootstrap needs root to build Python {interpreter.python}: run "
                           f"this once as root, or use a Python {interpreter.python} host")
    root, start = root_dir(interpreter, history_dir), time.perf_counter()
    _remove_root(root)
    shutil.rmtree(include_dir(interpreter, history_dir), ignore_errors=True)
    say(f"[history] building Python {interpreter.python} from Debian {interpreter.suite} "
        f"(debootstrap, about a minute)")
    done = subprocess.run(debootstrap_command(interpreter, root), capture_output=True, text=True)
    if done.returncode:
        raise RuntimeError(f"debootstrap failed: {(done.stdout + done.stderr).strip()[-2000:]}")
    if not os.path.exists(os.path.join(link_pyconfig(interpreter, history_dir), "pyconfig.h")):
        raise RuntimeError(f"{root} has no pyconfig.h for {platform.machine()}")
    write_launcher(launcher, launcher_script(interpreter, history_dir, names_itself=False))
    version = subprocess.run([launcher, "-c", "import platform; print(platform.python_version())"],
                             capture_output=True, text=True, check=True).stdout.strip()
    with open(os.path.join(root, "var", "lib", "dpkg", "status"), encoding="utf-8") as f:
        packages = debian_package_versions(f.read(),
                                           ("libc6", *debootstrap_packages(interpreter)))
    debootstrap = subprocess.run(["debootstrap", "--version"], capture_output=True,
                                 text=True).stdout.strip()
    record = {"made_by": "debootstrap", "debootstrap": debootstrap,
              "debian_suite": interpreter.suite, "debian_mirror": DEBIAN_MIRROR,
              "debian_packages": packages, "python": version, "root": root,
              "runs_under": "the root's dynamic loader (study.runs.interpreters)",
              "build_s": round(time.perf_counter() - start, 1)}
    with open(record_file, "w", encoding="utf-8") as f:
        json.dump(record, f, indent=1, sort_keys=True)
    return record


def make_env_launcher(env: str, interpreter: Interpreter, history_dir: str) -> str:
    """The venv at `env` (made by uv from the root's launcher: its bin/python is a symlink to
    the root's Python, which this machine cannot run) gets a launcher there instead."""
    python = os.path.join(env, "bin", "python")
    write_launcher(python, launcher_script(interpreter, history_dir, names_itself=True))
    return python

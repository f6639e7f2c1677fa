import os
import shlex
import subprocess
import sys
import types

import jax
import pytest
import torch

import study
from study.measure import builtin_rules, custom_rules
from study.runs import history, interpreters, runner
from study.measure.custom_rules import NotInRelease, api_or_missing
from study.measure.devices import resolve_devices


def test_api_the_release_has_is_the_api_itself():
    assert api_or_missing(jax, "nn.relu") is jax.nn.relu


def test_api_the_release_lacks_raises_not_in_release_naming_it(monkeypatch):
    monkeypatch.delattr(jax.nn, "sparse_plus")
    stand_in = api_or_missing(jax, "nn.sparse_plus")
    with pytest.raises(NotInRelease) as raised:
        stand_in(jax.numpy.zeros(3))
    assert str(raised.value) == f"jax.nn.sparse_plus is not in jax {jax.__version__}"


def test_registry_builds_where_jax_lacks_an_activation(monkeypatch):
    monkeypatch.delattr(jax.nn, "hard_silu")
    built = {r.key: r for r in builtin_rules.jax_builtins()}  # old code raised AttributeError
    with pytest.raises(NotInRelease, match="jax.nn.hard_silu is not in jax"):
        built["jax_hard_silu"].fn(jax.numpy.zeros(3))
    assert float(built["jax_relu"].fn(jax.numpy.float64(2.0))) == 2.0  # the others still run


def test_custom_op_rule_where_torch_lacks_custom_op(monkeypatch):
    monkeypatch.delattr(torch.library, "custom_op")
    stand_in = custom_rules.torch_custom_op_relu.__wrapped__(0.0)  # uncached: no op registered
    with pytest.raises(NotInRelease, match="torch.library.custom_op is not in torch"):
        stand_in(torch.zeros(3))


class _CallsRule:  # an experiment whose only case calls one rule
    name, timed = "calls_rule", False

    @staticmethod
    def run_case(device, rule):
        return [{"rule": rule.key, "value": float(rule.fn(jax.numpy.float64(1.0)))}]


def test_missing_api_is_recorded_as_a_typed_case_error_not_a_value(monkeypatch):
    monkeypatch.delattr(jax.nn, "sparse_sigmoid")
    rule = {r.key: r for r in builtin_rules.jax_builtins()}["jax_sparse_sigmoid"]
    device, = resolve_devices("cpu")
    records = runner.run_case(_CallsRule, device, {"rule": rule})
    assert records == [{"part": "failed_cases", "case": {"rule": "jax_sparse_sigmoid"},
                        "device": device.name, "error":
                        f"NotInRelease: jax.nn.sparse_sigmoid is not in jax {jax.__version__}"}]


def test_releases_are_every_minor_once():
    # the spans: torch 2.4 ... 2.15 (12 minors), JAX 0.4 ... 0.12 (9 minors)
    minors = {p: [tuple(map(int, r.version.split(".")[:2])) for r in history.releases(p)]
              for p in ("torch", "jax")}
    assert minors["torch"] == [(2, m) for m in range(4, 16)]
    assert minors["jax"] == [(0, m) for m in range(4, 13)]
    assert "2.13.0" in history.TORCH_RELEASES and "0.10.2" in history.JAX_RELEASES  # our pins


def test_release_pins_move_jaxlib_with_jax():
    assert history.Release("jax", "0.5.3").pins == {"jax": "0.5.3", "jaxlib": "0.5.3"}
    assert history.Release("torch", "2.4.1").pins == {"torch": "2.4.1"}


CONSTRAINTS = ("# a comment\ntorch==2.13.0\njax==0.10.2\njaxlib==0.10.2\nsympy==1.14.0\n"
               "ml_dtypes==0.6.0\n")


def test_constraints_keep_every_pin_but_the_release_and_the_dropped():
    release = history.Release("jax", "0.4.38")
    assert history.constraints_for(release, CONSTRAINTS) == [
        "torch==2.13.0", "sympy==1.14.0", "ml_dtypes==0.6.0"]
    assert history.constraints_for(history.Release("torch", "2.5.1"), CONSTRAINTS, ("sympy",)) == [
        "jax==0.10.2", "jaxlib==0.10.2", "ml_dtypes==0.6.0"]


def test_pins_rejected_are_those_uv_names():
    # uv 0.13.9's error for torch==2.5.1 under constraints.txt's sympy pin, verbatim
    uv_error = ("error: No solution found when resolving dependencies\n  cause: Because "
                "torch==2.5.1 depends on sympy==1.13.1 and sympy==1.14.0, we can conclude that "
                "torch==2.5.1 cannot be used.")
    constraints = history.constraints_for(history.Release("torch", "2.5.1"), CONSTRAINTS)
    assert history.pins_rejected(uv_error, constraints) == {"sympy"}


# what the cli passes: the experiments whose Experiment has a history_scope
HISTORY = [("zero_point", "standard"), ("two_layer", "standard")]


def test_the_history_runs_the_experiments_that_declare_a_history_scope():
    import experiments
    assert [(e.name, e.history_scope) for e in experiments.all_experiments()
            if e.history_scope] == sorted(HISTORY, key=lambda e: experiments.NAMES.index(e[0]))


def test_one_shard_per_release_and_experiment(tmp_path):
    chosen = history.releases("jax")[:2]
    specs = history.shard_specs(chosen, HISTORY, root=str(tmp_path), results_dir="/r")
    assert [(os.path.relpath(s["python"], tmp_path), s["experiment"], s["scope"]) for s in specs] \
        == [("jax-0.4.38/bin/python", "zero_point", "standard"),
            ("jax-0.4.38/bin/python", "two_layer", "standard"),
            ("jax-0.5.3/bin/python", "zero_point", "standard"),
            ("jax-0.5.3/bin/python", "two_layer", "standard")]
    assert all(s["device"] == "cpu" and s["cases"] is None and s["results_dir"] == "/r"
               and s["env"]["PYTHONPATH"] == history.REPO_ROOT for s in specs)
    assert history.study_run_command(specs[0]) == [
        specs[0]["python"], "-m", "study", "run", "zero_point", "--device", "cpu",
        "--results-dir", "/r"]


def test_an_env_without_its_record_counts_as_unbuilt(tmp_path):
    release = history.Release("torch", "2.4.1")
    os.makedirs(os.path.join(tmp_path, "torch-2.4.1", "bin"))  # a build cut short
    assert not history.built(release, str(tmp_path))
    open(os.path.join(tmp_path, "torch-2.4.1", "release.json"), "w").close()
    assert history.built(release, str(tmp_path))


def test_disk_bytes_counts_a_hardlinked_file_once(tmp_path):
    (tmp_path / "a").write_bytes(b"x" * 100_000)
    single = history.disk_bytes(str(tmp_path))
    os.link(tmp_path / "a", tmp_path / "b")
    assert history.disk_bytes(str(tmp_path)) == single > 0


def test_specs_are_the_engines_shards():
    if not os.path.exists(os.path.join(os.path.dirname(history.__file__), "engine.py")):
        pytest.skip("study.runs.engine is on branch engine until it is merged")
    from study.runs import engine
    spec = history.shard_specs(history.releases("torch")[:1], HISTORY, results_dir="/r")[0]
    assert engine.Shard(**spec).argv()[:9] == history.study_run_command(spec)


def test_engine_failures_come_back_named(monkeypatch):
    class Shard(dict):
        label = property(lambda self: f"{self['experiment']} ({self['python']})")

    class Outcome:
        def __init__(self, shard, error):
            self.shard, self.error = shard, error

    def run_shards(shards, address):
        return [Outcome(s, "exit status 1" if s["experiment"] == "two_layer" else None)
                for s in shards]

    fake = types.SimpleNamespace(Shard=Shard, run_shards=run_shards,
                                 failed=lambda outcomes: [o for o in outcomes if o.error])
    monkeypatch.setitem(sys.modules, "study.runs.engine", fake)
    monkeypatch.setattr(study.runs, "engine", fake, raising=False)
    specs = history.shard_specs([history.Release("jax", "0.4.38")], HISTORY, root="/h")
    assert history.run_on_engine(specs, None) == [
        "two_layer (/h/jax-0.4.38/bin/python): exit status 1"]


def test_a_chunked_experiment_is_a_shard_per_chunk():
    specs = history.shard_specs([history.Release("torch", "2.15.0")], HISTORY, root="/h",
                                chunks={"zero_point": [(0, 5), (5, 9)]})
    assert [(s["experiment"], s["cases"]) for s in specs] == [
        ("zero_point", (0, 5)), ("zero_point", (5, 9)), ("two_layer", None)]


def test_case_count_is_what_the_runner_lists():
    # bifurcation lists its cases without importing torch or JAX (a second of CPU, not five),
    # and its full scope has more of them than the scope `study list` takes unless told
    import experiments
    bifurcation = experiments.load("bifurcation")
    assert len(runner.cases_of(bifurcation, "full")) != len(runner.cases_of(bifurcation,
                                                                            "standard"))
    assert history.case_count(sys.executable, "bifurcation", "full") \
        == len(runner.cases_of(bifurcation, "full"))


def test_build_drops_the_pin_uv_rejects_and_records_it(tmp_path, monkeypatch):
    release, installs = history.Release("torch", "2.5.1"), []

    def fake_run(cmd, **kwargs):  # uv: the venv, then an install refused while sympy is pinned
        if "install" in cmd:
            constraints = open(cmd[cmd.index("-c") + 1]).read()
            installs.append(constraints)
            refused = "sympy==" in constraints
            return types.SimpleNamespace(returncode=int(refused), stderr=(
                "Because torch==2.5.1 depends on sympy==1.13.1 and sympy==1.14.0, ..."
                if refused else ""))
        if "venv" in cmd:
            os.makedirs(cmd[-1])  # uv venv DIR
        return types.SimpleNamespace(returncode=0, stdout="", stderr="")

    monkeypatch.setattr(history.subprocess, "run", fake_run)
    monkeypatch.setattr(history, "installed_versions", lambda python: {"sympy": "1.13.1"})
    record = history.build(release, str(tmp_path), say=lambda line: None)
    assert len(installs) == 2 and "sympy==" not in installs[1] and "numpy==" in installs[1]
    assert record["pins_dropped"] == ["sympy"] and record["installed"] == {"sympy": "1.13.1"}
    assert history.built(release, str(tmp_path))


def test_local_wheels_are_pips_find_links():
    # `pip config list` on this machine (global file, then PIP_* variables), abridged
    pip_config = ("global.cert='/etc/ssl/certs/ca-certificates.crt'\n"
                  "global.find-links='/opt/wheels'\n:env:.find-links='/opt/wheels /w2'\n")
    assert history.local_wheel_dirs(pip_config) == ["/opt/wheels", "/w2"]
    assert history.local_wheel_dirs("") == []


def test_the_study_own_pins_are_one_environment_run_once():
    # torch-2.13.0 keeps the study's jax 0.10.2; jax-0.10.2 keeps its torch 2.13.0: the same env
    names = [r.name for r in history.distinct(history.releases(), CONSTRAINTS)]
    assert "torch-2.13.0" in names and "jax-0.10.2" not in names and len(names) == 12 + 9 - 1
    only_jax = [r.name for r in history.distinct(history.releases("jax"), CONSTRAINTS)]
    assert only_jax == [f"jax-{v}" for v in history.JAX_RELEASES]


def test_every_env_installs_what_torch_inductor_imports():
    # torch 2.4-2.6, 2.9 and 2.10's inductor import setuptools: an env without it recorded every
    # compiled cell as BackendCompilerFailed, a fault of the env and not of the release
    release = history.releases("torch")[0]
    command = history.install_command(release, "/env/bin/python", "c.txt", [])
    assert "setuptools" in command


def test_every_env_installs_what_study_run_needs_but_the_engine():
    # pyproject moved the experiments' packages (torch, jax, matplotlib, ...) into its study
    # extra; envs built from its dependencies alone lacked them, and `study run` exits 2 there
    names = {history._package_of(r) for r in history.project_requirements()}
    assert {"torch", "jax", "jaxlib", "scipy", "matplotlib", "mlxtend", "numpy"} <= names
    assert "ray" not in names and "pytest" not in names


def test_jax_from_0_11_needs_python_3_12():
    needed = {r.name: r.python_needed for r in history.releases()}
    assert needed["jax-0.10.2"] == needed["torch-2.15.0"] == (3, 11)
    assert needed["jax-0.11.2"] == needed["jax-0.12.0.1"] == (3, 12)


def test_a_release_gets_a_debian_python_only_where_the_host_is_too_old():
    jax_0_12 = history.Release("jax", "0.12.0.1").python_needed
    assert interpreters.interpreter_for(jax_0_12, host=(3, 11)) == interpreters.Interpreter(
        "trixie", "3.13")
    assert interpreters.interpreter_for(jax_0_12, host=(3, 12)) is None
    assert interpreters.interpreter_for((3, 11), host=(3, 11)) is None
    with pytest.raises(RuntimeError, match="3.99"):
        interpreters.interpreter_for((3, 99), host=(3, 11))


def test_the_debian_root_is_minbase_with_python3_and_its_headers():
    trixie = interpreters.Interpreter("trixie", "3.13")
    assert interpreters.debootstrap_command(trixie, "/h/python-3.13/root") == [
        "debootstrap", "--variant=minbase", "--include=python3,libpython3.13-dev", "trixie",
        "/h/python-3.13/root", interpreters.DEBIAN_MIRROR]
    assert interpreters.root_launcher(trixie, "/h") == "/h/python-3.13/bin/python3.13"


def _launcher_command(script: str) -> list[str]:
    return shlex.split(script.splitlines()[-1])


def test_an_env_launcher_runs_the_roots_python_under_the_roots_loader_named_as_itself():
    trixie = interpreters.Interpreter("trixie", "3.13")
    script = interpreters.launcher_script(trixie, "/h", names_itself=True, machine="x86_64")
    lib = "/h/python-3.13/root/usr/lib/x86_64-linux-gnu"
    assert script.startswith("#!/bin/sh\n")
    assert _launcher_command(script) == [
        "exec", f"{lib}/ld-linux-x86-64.so.2", "--library-path",
        f"{lib}${{LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}}", "--argv0", "$0",
        "/h/python-3.13/root/usr/bin/python3.13", "$@"]
    bare = interpreters.launcher_script(trixie, "/h", names_itself=False, machine="x86_64")
    assert "--argv0" not in _launcher_command(bare)
    # kernels built against Python 3.13's headers never land where the host's Python reads
    assert ('export TORCHINDUCTOR_CACHE_DIR="${TORCHINDUCTOR_CACHE_DIR:-/tmp/torchinductor_'
            '$(id -un)}/python-3.13"') in script.splitlines()


def test_a_launcher_quotes_a_history_folder_with_spaces():
    trixie = interpreters.Interpreter("trixie", "3.13")
    script = interpreters.launcher_script(trixie, "/my history", names_itself=True,
                                          machine="aarch64")
    command = _launcher_command(script)
    assert command[1] == ("/my history/python-3.13/root/usr/lib/aarch64-linux-gnu/"
                          "ld-linux-aarch64.so.1")
    assert command[-2] == "/my history/python-3.13/root/usr/bin/python3.13"


def test_an_env_launcher_replaces_the_venvs_symlink_and_passes_arguments_and_environment(
        tmp_path, monkeypatch):
    # a stand-in root whose "loader" prints what it was given: no Debian root is built
    trixie = interpreters.Interpreter("trixie", "3.13")
    root, env = tmp_path / "python-3.13" / "root", tmp_path / "jax-0.12.0.1"
    loader = root / "usr" / "lib" / "x86_64-linux-gnu" / "ld-linux-x86-64.so.2"
    loader.parent.mkdir(parents=True)
    loader.write_text('#!/bin/sh\necho "$@"; echo "$STUDY_PROBE"; echo "$CPATH"\n')
    lib = loader.parent
    loader.chmod(0o755)
    (env / "bin").mkdir(parents=True)
    os.symlink("/nowhere/python3.13", env / "bin" / "python")  # what uv venv leaves
    os.symlink("python", env / "bin" / "python3")
    monkeypatch.setattr(interpreters.platform, "machine", lambda: "x86_64")
    python = interpreters.make_env_launcher(str(env), trixie, str(tmp_path))
    assert python == str(env / "bin" / "python") and not os.path.islink(python)
    said = subprocess.run([str(env / "bin" / "python3"), "-m", "study", "run", "a b"],
                          capture_output=True, text=True, check=True,
                          env={**os.environ, "STUDY_PROBE": "kept", "CPATH": "/mine",
                               "LD_LIBRARY_PATH": "/torch/lib"}).stdout.splitlines()
    assert said == [f"--library-path {lib}:/torch/lib --argv0 {env / 'bin' / 'python3'} "
                    f"{root / 'usr' / 'bin' / 'python3.13'} -m study run a b", "kept",
                    f"{tmp_path / 'python-3.13' / 'include'}:/mine"]


def test_the_compilers_see_the_roots_pyconfig_and_no_other_header_of_the_root(tmp_path):
    # Debian's Python.h includes <x86_64-linux-gnu/python3.13/pyconfig.h>: inductor's g++ (this
    # machine's) finds it through include_dir on CPATH, which holds that one folder
    trixie = interpreters.Interpreter("trixie", "3.13")
    headers = tmp_path / "python-3.13" / "root" / "usr" / "include"
    (headers / "x86_64-linux-gnu" / "python3.13").mkdir(parents=True)
    (headers / "x86_64-linux-gnu" / "python3.13" / "pyconfig.h").write_text("#define X 1\n")
    (headers / "stdio.h").write_text("")
    link = interpreters.link_pyconfig(trixie, str(tmp_path), machine="x86_64")
    include = interpreters.include_dir(trixie, str(tmp_path))
    assert os.path.exists(os.path.join(include, "x86_64-linux-gnu", "python3.13", "pyconfig.h"))
    assert os.listdir(include) == ["x86_64-linux-gnu"] and os.path.islink(link)
    assert interpreters.link_pyconfig(trixie, str(tmp_path), machine="x86_64") == link  # again


def test_the_record_names_the_debian_packages_installed():
    status = ("Package: libc6\nStatus: install ok installed\nVersion: 2.41-12\n\n"
              "Package: python3\nVersion: 3.13.5-1\n\nPackage: zlib1g\nVersion: 1:1.3\n")
    assert interpreters.debian_package_versions(status, ("libc6", "python3")) == {
        "libc6": "2.41-12", "python3": "3.13.5-1"}


def test_a_new_python_release_is_installed_by_uv_through_its_launcher(tmp_path, monkeypatch):
    # jax-0.12.0.1 on a 3.11 host: the Debian Python (stood in for), a venv made from its
    # launcher, whose python then becomes the env's launcher, which uv installs through
    release, commands = history.Release("jax", "0.12.0.1"), []
    root = str(tmp_path)
    made = {"made_by": "debootstrap", "debian_suite": "trixie", "python": "3.13.5"}
    monkeypatch.setattr(history.sys, "version_info", (3, 11, 7))
    monkeypatch.setattr(history.interpreters, "ensure_built", lambda i, h, say: made)

    def fake_run(cmd, **kwargs):
        commands.append(cmd)
        if "venv" in cmd:
            os.makedirs(os.path.join(cmd[-1], "bin"))
        return types.SimpleNamespace(returncode=0, stdout="", stderr="")

    monkeypatch.setattr(history.subprocess, "run", fake_run)
    monkeypatch.setattr(history, "installed_versions", lambda python: {"jax": "0.12.0.1"})
    record = history.build(release, root, say=lambda line: None)
    venv, install = [c for c in commands if "uv" in c]  # and pip's config, read
    assert venv[venv.index("--python") + 1] == os.path.join(root, "python-3.13", "bin",
                                                             "python3.13")
    python = install[install.index("--python") + 1]
    assert python == history.env_python(release, root)
    assert "--argv0" in open(python).read()
    assert {"jax==0.12.0.1", "jaxlib==0.12.0.1", "torch>=2.4"} <= set(install)
    assert record["interpreter"] == made


def test_a_release_the_host_python_runs_is_built_with_the_host_python(tmp_path, monkeypatch):
    commands = []
    monkeypatch.setattr(history.interpreters, "ensure_built", lambda *a, **kw: 1 / 0)

    def fake_run(cmd, **kwargs):
        commands.append(cmd)
        if "venv" in cmd:
            os.makedirs(cmd[-1])
        return types.SimpleNamespace(returncode=0, stdout="", stderr="")

    monkeypatch.setattr(history.subprocess, "run", fake_run)
    monkeypatch.setattr(history, "installed_versions", lambda python: {})
    record = history.build(history.Release("jax", "0.10.2"), str(tmp_path), say=lambda line: None)
    assert commands[0][commands[0].index("--python") + 1] == sys.executable
    assert record["interpreter"]["made_by"] == "this machine"


def test_a_half_built_root_with_mounts_is_not_deleted(tmp_path, monkeypatch):
    root = tmp_path / "root"
    (root / "proc").mkdir(parents=True)
    monkeypatch.setattr(interpreters, "_mounts_under", lambda path: [f"{path}/proc"])
    with pytest.raises(RuntimeError, match="unmount"):
        interpreters._remove_root(str(root))
    assert root.exists()
    monkeypatch.setattr(interpreters, "_mounts_under", lambda path: [])
    interpreters._remove_root(str(root))
    assert not root.exists()

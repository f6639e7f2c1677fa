"""JAX's persistent compilation cache (study.measure.frameworks): on for every measurement but
where compile time is measured, and never a change in a measured cell. Where compile time is
measured, torch's inductor compiles into an empty folder of its own."""
import json
import os
import subprocess
import sys
from types import SimpleNamespace

import jax
from jax._src import monitoring  # the listener's removal is not in jax.monitoring

from experiments.zero_point import measure as zero_point
from study.measure.frameworks import JAX_CACHE_DIR, torch_compile_cache, use_shared_settings
from study.measure.rules import by_key
from study.runs.provenance import REPO_ROOT
from study.runs.runner import Progress, run_experiment

RULES = ("jax_relu", "jax_custom_c0", "jax_hard_tanh")  # a built-in, a custom_vjp, two kinks


def _atlas_records(device) -> str:
    """The cells, measured as a fresh process would: nothing compiled in this one is reused."""
    jax.clear_caches()
    return json.dumps([zero_point.run_case(device, "atlas", "float16", "standard",
                                           rule=by_key(key)) for key in RULES])


def _count_cache_hits():
    hits = []

    def listen(event, **_):
        if event == "/jax/compilation_cache/cache_hits":
            hits.append(event)
    jax.monitoring.register_event_listener(listen)
    return hits, listen


def test_cached_executables_give_the_atlas_cells_that_compiling_gives(tmp_path, monkeypatch, cpu):
    monkeypatch.setenv("JAX_COMPILATION_CACHE_DIR", str(tmp_path / "jax-cache"))
    hits, listen = _count_cache_hits()
    try:
        use_shared_settings(("jax",), compile_cache=False)
        compiled = _atlas_records(cpu)
        assert not os.path.exists(tmp_path / "jax-cache")
        use_shared_settings(("jax",))
        filled = _atlas_records(cpu)
        entries, hits_filling = len(os.listdir(tmp_path / "jax-cache")), len(hits)
        assert entries > 0
        read = _atlas_records(cpu)
        # every program read back from the folder: none compiled and written anew
        assert len(os.listdir(tmp_path / "jax-cache")) == entries
        assert len(hits) > hits_filling
        assert compiled == filled == read
    finally:
        monitoring.unregister_event_listener(listen)
        monkeypatch.delenv("JAX_COMPILATION_CACHE_DIR")
        use_shared_settings(("jax",))


def test_the_runner_turns_the_cache_off_for_an_experiment_that_times(tmp_path, cpu):
    seen = {}

    def experiment(name, timed):
        def run_case(device, k):
            seen[name] = (jax.config.jax_compilation_cache_dir, torch_compile_cache())
            return [{"part": "cases", "k": k}]
        return SimpleNamespace(name=name, timed=timed, seed=None, counts_inits=False,
                               cases=lambda scope: [{"k": 0}], run_case=run_case)
    try:
        for name, timed, scope in (("times", True, "standard"), ("measures", False, "standard"),
                                   ("times_again", True, "standard"),
                                   ("times_quickly", True, "quick")):
            run_experiment(experiment(name, timed), [cpu], scope, Progress(quiet=True),
                           root=str(tmp_path))
    finally:  # a run that fails leaves no timed run's settings to the tests after it
        use_shared_settings()
    jax_dir = os.environ.get("JAX_COMPILATION_CACHE_DIR", JAX_CACHE_DIR)
    # --quick prints no compile time: it reads compiled code back from the user's caches
    assert seen == {"times": (None, "empty"), "measures": (jax_dir, "user"),
                    "times_again": (None, "empty"), "times_quickly": (jax_dir, "user")}


def test_where_compile_time_is_measured_inductor_compiles_into_an_empty_folder_of_its_own(
        tmp_path, monkeypatch):
    # inductor reads its folder through cache_dir() at each use: a first call that finds a
    # graph and its kernels there reads them back instead of compiling them
    from torch._inductor.runtime.cache_dir_utils import cache_dir
    user = str(tmp_path / "user")
    monkeypatch.setenv("TORCHINDUCTOR_CACHE_DIR", user)
    try:
        use_shared_settings(("torch",), compile_cache=False)
        first = cache_dir()
        assert first != user and os.listdir(first) == [] and torch_compile_cache() == "empty"
        use_shared_settings(("torch",), compile_cache=False)  # another timed run: a new folder
        second = cache_dir()
        assert second != first and not os.path.exists(first) and os.listdir(second) == []
        # a process the run starts (timing's fresh process and workers) shares the run's folder
        # and leaves it: what the run compiled, it reads back
        child = subprocess.run(
            [sys.executable, "-c", "from study.measure.frameworks import use_shared_settings, "
             "torch_compile_cache; use_shared_settings(('torch',), compile_cache=False); "
             "from torch._inductor.runtime.cache_dir_utils import cache_dir; "
             "print(cache_dir(), torch_compile_cache())"],
            capture_output=True, text=True, check=True, cwd=REPO_ROOT)
        assert child.stdout.split() == [second, "empty"] and os.path.isdir(second)
        use_shared_settings(("torch",))
        assert cache_dir() == user and torch_compile_cache() == "user"
        assert not os.path.exists(second)
    finally:
        use_shared_settings(("torch",))

"""JAX's persistent compilation cache (study.measure.frameworks): on for every measurement but
where compile time is measured, and never a change in a measured cell."""
import json
import os
from types import SimpleNamespace

import jax
from jax._src import monitoring  # the listener's removal is not in jax.monitoring

from experiments.zero_point import measure as zero_point
from study.measure.frameworks import JAX_CACHE_DIR, use_shared_settings
from study.measure.rules import by_key
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
            seen[name] = jax.config.jax_compilation_cache_dir
            return [{"k": k}]
        return SimpleNamespace(name=name, timed=timed, seed=None, counts_inits=False,
                               cases=lambda scope: [{"k": 0}], run_case=run_case)
    for name, timed in (("times", True), ("measures", False), ("times_again", True)):
        run_experiment(experiment(name, timed), [cpu], "quick", Progress(quiet=True),
                       root=str(tmp_path))
    assert seen == {"times": None, "measures": os.environ.get("JAX_COMPILATION_CACHE_DIR",
                                                               JAX_CACHE_DIR),
                    "times_again": None}
    use_shared_settings()

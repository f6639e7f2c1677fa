"""One timing harness for both frameworks.

    >>> t = time_thunk(lambda: jnp.ones(10) * 2, jax.block_until_ready, repeats=20)
    >>> quartiles(t["times_s"])["median"]

The first call is timed on its own (it includes compilation); then warm-up calls; then timed
repeats with garbage collection off. Each repeat records the dispatch-only time (until the
thunk returns) and the synchronised time (after `sync` on its result).

`time_interleaved` times several thunks round by round (a, b, c, a, b, c, ...), so that a
custom rule and its built-in see the same state of a noisy machine, and ratios taken between
them within one run are steadier than ratios of times taken one after the other. Its steps
(first_calls, warm_up, timed_rounds) can also be run in blocks that alternate with another
process timing the same thunks (the timing experiment's fresh-process check).
"""
import gc
import resource
import time
import numpy as np


def quartiles(times: list[float]) -> dict:
    """Median and interquartile range (numpy's linear interpolation), a pure function."""
    a = np.asarray(times, dtype=np.float64)
    q1, median, q3 = np.percentile(a, [25, 50, 75])
    return {"n": int(a.size), "median": float(median), "q1": float(q1), "q3": float(q3),
            "iqr": float(q3 - q1), "min": float(a.min())}


def first_calls(thunks: dict) -> dict:
    """Each thunk's first call, timed on its own (compilation included)."""
    out = {}
    for name, (thunk, sync) in thunks.items():
        t0 = time.perf_counter()
        sync(thunk())
        out[name] = {"first_call_s": time.perf_counter() - t0, "times_s": [], "dispatch_s": []}
    return out


def warm_up(thunks: dict, rounds: int, seconds: float = 0.0) -> None:
    """At least `rounds` rounds, and rounds for at least `seconds`."""
    start, done = time.perf_counter(), 0
    while done < rounds or time.perf_counter() - start < seconds:
        for thunk, sync in thunks.values():
            sync(thunk())
        done += 1


def _minor_faults() -> int:
    return resource.getrusage(resource.RUSAGE_SELF).ru_minflt


def collect_garbage() -> None:
    """A full collection, then what survives it frozen (gc.freeze), so that the next one scans
    only what was made since: with torch and JAX loaded a full collection took 0.23 s here,
    once frozen microseconds, and a timing run collects before each of its cases. The cost: a
    cycle that becomes garbage after it was frozen stays until the process ends."""
    gc.collect()
    gc.freeze()


def timed_rounds(thunks: dict, out: dict, rounds: int, budget_s: float | None = None,
                 min_rounds: int = 3, collect: bool = True) -> None:
    """Rounds in which every thunk runs once, in order, appended to out's times, with
    garbage collection off, until `rounds` or the budget (after min_rounds). A collection
    first (collect_garbage), unless `collect` is false (a later block of the same case).
    Each call's minor page faults (this process's,
    counted outside the timed window) go to out[name]["minor_faults"]."""
    enabled = gc.isenabled()
    if collect:
        collect_garbage()
    gc.disable()
    try:
        start = time.perf_counter()
        for i in range(rounds):
            for name, (thunk, sync) in thunks.items():
                faults = _minor_faults()
                t0 = time.perf_counter()
                result = thunk()
                t1 = time.perf_counter()
                sync(result)
                t2 = time.perf_counter()
                out[name]["dispatch_s"].append(t1 - t0)
                out[name]["times_s"].append(t2 - t0)
                out[name].setdefault("minor_faults", []).append(_minor_faults() - faults)
            if (budget_s is not None and i + 1 >= min_rounds
                    and time.perf_counter() - start > budget_s):
                break
    finally:
        if enabled:
            gc.enable()


def time_interleaved(thunks: dict, rounds: int = 20, warmup: int = 2,
                     budget_s: float | None = None, min_rounds: int = 3,
                     warmup_s: float = 0.0) -> dict:
    """{name: {"first_call_s", "times_s", "dispatch_s"}} for thunks {name: (thunk, sync)}:
    first calls, warm-up rounds, then timed rounds (see the functions above)."""
    out = first_calls(thunks)
    warm_up(thunks, warmup, warmup_s)
    timed_rounds(thunks, out, rounds, budget_s, min_rounds)
    return out


def time_thunk(thunk, sync, repeats: int = 20, warmup: int = 2, budget_s: float | None = None,
               min_repeats: int = 3) -> dict:
    """Raw per-repeat times of `thunk`, synchronised by `sync(result)`."""
    return time_interleaved({"": (thunk, sync)}, repeats, warmup, budget_s, min_repeats)[""]

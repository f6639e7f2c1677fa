"""One timing harness for both frameworks.

    >>> t = time_thunk(lambda: jnp.ones(10) * 2, jax.block_until_ready, repeats=20)
    >>> summarize(t["times_s"])["median"]

The first call is timed on its own (it includes compilation); then warm-up calls; then timed
repeats with garbage collection off. Each repeat records the dispatch-only time (until the
thunk returns) and the synchronised time (after `sync` on its result).
"""
import gc
import time

import numpy as np


def summarize(times: list[float]) -> dict:
    """Median and interquartile range (numpy's linear interpolation), a pure function."""
    a = np.asarray(times, dtype=np.float64)
    q1, median, q3 = np.percentile(a, [25, 50, 75])
    return {"n": int(a.size), "median": float(median), "q1": float(q1), "q3": float(q3),
            "iqr": float(q3 - q1), "min": float(a.min())}


def time_thunk(thunk, sync, repeats: int = 20, warmup: int = 2, budget_s: float | None = None,
               min_repeats: int = 3) -> dict:
    """Raw per-repeat times of `thunk`, synchronised by `sync(result)`."""
    t0 = time.perf_counter()
    sync(thunk())
    first_call = time.perf_counter() - t0
    for _ in range(warmup):
        sync(thunk())
    times, dispatch = [], []
    enabled = gc.isenabled()
    gc.disable()
    try:
        start = time.perf_counter()
        for i in range(repeats):
            t0 = time.perf_counter()
            out = thunk()
            t1 = time.perf_counter()
            sync(out)
            t2 = time.perf_counter()
            dispatch.append(t1 - t0)
            times.append(t2 - t0)
            if budget_s is not None and i + 1 >= min_repeats and t2 - start > budget_s:
                break
    finally:
        if enabled:
            gc.enable()
    return {"first_call_s": first_call, "times_s": times, "dispatch_s": dispatch}

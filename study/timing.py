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
process timing the same thunks (experiments/timing.py's fresh-process check).
"""
import functools
import gc
import resource
import time
from dataclasses import dataclass

import numpy as np


def quartiles(times: list[float]) -> dict:
    """Median and interquartile range (numpy's linear interpolation), a pure function."""
    a = np.asarray(times, dtype=np.float64)
    q1, median, q3 = np.percentile(a, [25, 50, 75])
    return {"n": int(a.size), "median": float(median), "q1": float(q1), "q3": float(q3),
            "iqr": float(q3 - q1), "min": float(a.min())}


CI_LEVEL = 0.95
RESAMPLES = 2000
MIN_BOOTSTRAP = 20  # fewer values than this: a bootstrap interval says little, so none is given


def _resampled_medians(a: np.ndarray, rng, resamples: int, blocks: tuple[int, ...] = ()
                       ) -> np.ndarray:
    """Medians of bootstrap resamples of a. With blocks (a's values come in consecutive
    groups of these sizes, one group a process), two levels: draw groups with replacement,
    then values within each drawn group, so that the spread between processes counts."""
    if len(blocks) < 2:
        return np.median(a[rng.integers(0, a.size, (resamples, a.size))], axis=1)
    sizes = np.asarray(blocks)
    starts = np.concatenate(([0], np.cumsum(sizes)[:-1]))
    drawn = rng.integers(0, sizes.size, (resamples, sizes.size))
    size = sizes[drawn][..., None]
    within = (rng.random((resamples, sizes.size, sizes.max())) * size).astype(np.int64)
    values = a[starts[drawn][..., None] + within]
    values[np.arange(sizes.max()) >= size] = np.nan  # past the end of a smaller group
    return np.nanmedian(values.reshape(resamples, -1), axis=1)


def _interval(medians: np.ndarray, level: float) -> tuple[float, float]:
    lo, hi = np.percentile(medians, [50 * (1 - level), 50 * (1 + level)])
    return float(lo), float(hi)


@dataclass(frozen=True)
class Interval:
    """A median (of times, or of ratios) with its 95% interval, from n values; lo and hi are
    None where no interval was computed."""
    median: float
    lo: float | None
    hi: float | None
    n: int

    def scaled(self, by: float) -> tuple[float, float | None, float | None]:
        return tuple(None if v is None else v * by for v in (self.median, self.lo, self.hi))


def median_interval(values, level: float = CI_LEVEL, resamples: int = RESAMPLES,
                    seed: int = 0, blocks: tuple[int, ...] = ()) -> Interval:
    """The median with its percentile-bootstrap interval (resampling the values, or with
    `blocks`, the processes that took them and then the values; a fixed seed, so a pure
    function of them)."""
    values = tuple(float(v) for v in values)
    if blocks and sum(blocks) != len(values):
        raise ValueError(f"blocks of {sum(blocks)} values in all for {len(values)} values")
    return _median_interval(values, level, resamples, seed, tuple(blocks))


@functools.lru_cache(maxsize=4096)  # a report asks for the same case's interval many times
def _median_interval(values: tuple, level: float, resamples: int, seed: int,
                     blocks: tuple[int, ...]) -> Interval:
    a = np.asarray(values, dtype=np.float64)
    medians = _resampled_medians(a, np.random.default_rng(seed), resamples, blocks)
    return Interval(float(np.median(a)), *_interval(medians, level), int(a.size))


def paired_ratio(a, b, level: float = CI_LEVEL, resamples: int = RESAMPLES,
                 seed: int = 0, blocks: tuple[int, ...] = ()) -> Interval:
    """a ÷ b for two thunks timed in the same rounds (a_i and b_i in round i): the median of
    the per-round ratios with its bootstrap interval over rounds (and over the processes
    that took them, given their `blocks`), so that drift between rounds, which hits both,
    cancels."""
    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    if a.size != b.size:
        raise ValueError(f"paired_ratio needs the same rounds: {a.size} against {b.size} times")
    return median_interval(a / b, level, resamples, seed, blocks)


def unpaired_ratio(a, b, level: float = CI_LEVEL, resamples: int = RESAMPLES,
                   seed: int = 0) -> Interval:
    """median(a) ÷ median(b) for times taken in different cases, with the bootstrap interval
    of that ratio, each side resampled on its own."""
    return _unpaired_ratio(tuple(map(float, a)), tuple(map(float, b)), level, resamples, seed)


@functools.lru_cache(maxsize=4096)
def _unpaired_ratio(a: tuple, b: tuple, level: float, resamples: int, seed: int) -> Interval:
    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    rng = np.random.default_rng(seed)
    ratios = _resampled_medians(a, rng, resamples) / _resampled_medians(b, rng, resamples)
    return Interval(float(np.median(a) / np.median(b)), *_interval(ratios, level),
                    int(min(a.size, b.size)))


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


def timed_rounds(thunks: dict, out: dict, rounds: int, budget_s: float | None = None,
                 min_rounds: int = 3, collect: bool = True) -> None:
    """Rounds in which every thunk runs once, in order, appended to out's times, with
    garbage collection off, until `rounds` or the budget (after min_rounds). A full
    collection first, unless `collect` is false (a later block of the same case: with torch
    and JAX loaded, one takes about 0.1 s). Each call's minor page faults (this process's,
    counted outside the timed window) go to out[name]["minor_faults"]."""
    enabled = gc.isenabled()
    if collect:
        gc.collect()
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
            if budget_s is not None and i + 1 >= min_rounds and time.perf_counter() - start > budget_s:
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

"""Estimates with their intervals: one type, computed once from raw values.

    >>> median_interval([1.0, 2.0, 3.0] * 7)
    Estimate(value=2.0, lo=1.0, hi=3.0, n=21)

Every interval is a 95% interval. Medians and ratios of medians get percentile-bootstrap
intervals (with a fixed seed, so pure functions of the values; two levels, processes then
rounds, where the values come from several processes); counts get Clopper-Pearson intervals.
"""
import functools
import math
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Estimate:
    """A value with its 95% interval from n values; lo and hi are None where no interval was
    computed (too few values), and equal to the value where every resample agreed."""
    value: float
    lo: float | None = None
    hi: float | None = None
    n: int | None = None

    def scaled(self, by: float) -> "Estimate":
        return Estimate(*(None if v is None else v * by for v in (self.value, self.lo, self.hi)),
                        self.n)

    @property
    def saturated(self) -> bool:
        """An interval of no width: every resample gave the same value."""
        return self.lo is not None and self.lo == self.hi


def to_figures(value: float, figures: int) -> float:
    """`value` rounded to so many significant figures (inf, nan and 0 as they are): a fitted
    value is kept to what its fit determines, so no CPU's kernels change a printed digit."""
    return float(f"{value:.{figures}g}") if math.isfinite(value) and value else value


def binomial(events: int, trials: int, level: float = 0.95) -> Estimate:
    """events of trials, with the Clopper-Pearson interval of that count (exact, conservative)."""
    from scipy.stats import beta
    a = (1 - level) / 2
    lo = 0.0 if events == 0 else float(beta.ppf(a, events, trials - events + 1))
    hi = 1.0 if events == trials else float(beta.ppf(1 - a, events + 1, trials - events))
    return Estimate(float(events), to_figures(lo * trials, 4), to_figures(hi * trials, 4), trials)


CI_LEVEL = 0.95
RESAMPLES = 2000
MIN_BOOTSTRAP = 20  # fewer values than this: a bootstrap interval says little, so none is given


Draws = tuple[np.ndarray, np.ndarray | None, np.ndarray | None]


@functools.lru_cache(maxsize=64)
def _draws(seed: int, resamples: int, *samples: tuple[int, tuple[int, ...]]) -> tuple[Draws, ...]:
    """The bootstrap's draws for each (size, blocks) in `samples`, one after another from one
    generator seeded with `seed`: they depend on the sizes alone, so every case of one size
    shares them. Each is (indices, their counts, mask of the missing), as _resampled
    describes; counts and mask are None where every row holds size indices."""
    rng = np.random.default_rng(seed)
    out = []
    for size, blocks in samples:
        if len(blocks) < 2:
            out.append((rng.integers(0, size, (resamples, size)), None, None))
            continue
        sizes = np.asarray(blocks)
        starts = np.concatenate(([0], np.cumsum(sizes)[:-1]))
        drawn = rng.integers(0, sizes.size, (resamples, sizes.size))
        group = sizes[drawn][..., None]
        within = (rng.random((resamples, sizes.size, sizes.max())) * group).astype(np.int64)
        missing = np.broadcast_to(np.arange(sizes.max()) >= group, within.shape)
        index = np.where(missing, -1, starts[drawn][..., None] + within)
        out.append((index.reshape(resamples, -1), sizes[drawn].sum(axis=1),
                    missing.reshape(resamples, -1)))
    for draws in out:
        for part in draws:
            if part is not None:
                part.flags.writeable = False
    return tuple(out)


def _resampled(a: np.ndarray, draws: Draws) -> np.ndarray:
    """Medians of bootstrap resamples of a, by the indices drawn. With blocks (a's values come
    in consecutive groups of these sizes, one group a process), two levels: groups drawn with
    replacement, then values within each drawn group (past the end of a smaller group: -1, no
    value), so that the spread between processes counts."""
    index, counts, missing = draws
    # NaN, or ±0 (values that tie but differ): numpy's own medians pick which one
    if np.isnan(a).any() or (a == 0).any():
        if missing is None:
            return np.median(a[index], axis=1)
        return np.nanmedian(np.where(missing, np.nan, a[index]), axis=1)
    return _medians_of_draws(a, index, np.full(len(index), a.size) if counts is None else counts)


def _medians_of_draws(a: np.ndarray, drawn: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """The median of a[drawn[i]] for each row i (its counts[i] indices that are not -1), as
    numpy's median gives it, for values without NaN and zeros: a is sorted once, so a row's
    middle values are those of its middle ranks, and 32-bit integer ranks sort (by SIMD
    sorting networks, where the CPU has them) several times faster than numpy partitions the
    values row by row."""
    order = np.argsort(a, kind="stable")
    rank = np.empty(a.size + 1, np.int32)  # rank[-1]: a missing value, after every other
    rank[order] = np.arange(a.size)
    rank[-1] = a.size
    ranks = rank[drawn]
    ranks.sort(axis=1)
    rows = np.arange(len(drawn))
    low = a[order[ranks[rows, (counts - 1) // 2]]]
    high = a[order[ranks[rows, counts // 2]]]
    return np.where(counts % 2 == 1, low, (low + high) / 2)


def _interval(medians: np.ndarray, level: float) -> tuple[float, float]:
    lo, hi = np.percentile(medians, [50 * (1 - level), 50 * (1 + level)])
    return float(lo), float(hi)


def median_interval(values, level: float = CI_LEVEL, resamples: int = RESAMPLES,
                    seed: int = 0, blocks: tuple[int, ...] = ()) -> Estimate:
    """The median with its percentile-bootstrap interval (resampling the values, or with
    `blocks`, the processes that took them and then the values; a fixed seed, so a pure
    function of them)."""
    values = tuple(float(v) for v in values)
    if blocks and sum(blocks) != len(values):
        raise ValueError(f"blocks of {sum(blocks)} values in all for {len(values)} values")
    return _median_interval(values, level, resamples, seed, tuple(blocks))


@functools.lru_cache(maxsize=4096)  # a report asks for the same case's interval many times
def _median_interval(values: tuple, level: float, resamples: int, seed: int,
                     blocks: tuple[int, ...]) -> Estimate:
    a = np.asarray(values, dtype=np.float64)
    medians = _resampled(a, _draws(seed, resamples, (a.size, blocks))[0])
    return Estimate(float(np.median(a)), *_interval(medians, level), int(a.size))


def paired_ratio(a, b, level: float = CI_LEVEL, resamples: int = RESAMPLES,
                 seed: int = 0, blocks: tuple[int, ...] = ()) -> Estimate:
    """a ÷ b for two thunks timed in the same rounds (a_i and b_i in round i): the median of
    the per-round ratios with its bootstrap interval over rounds (and over the processes
    that took them, given their `blocks`), so that drift between rounds, which hits both,
    cancels."""
    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    if a.size != b.size:
        raise ValueError(f"paired_ratio needs the same rounds: {a.size} against {b.size} times")
    return median_interval(a / b, level, resamples, seed, blocks)


def unpaired_ratio(a, b, level: float = CI_LEVEL, resamples: int = RESAMPLES,
                   seed: int = 0) -> Estimate:
    """median(a) ÷ median(b) for times taken in different cases, with the bootstrap interval
    of that ratio, each side resampled on its own."""
    return _unpaired_ratio(tuple(map(float, a)), tuple(map(float, b)), level, resamples, seed)


@functools.lru_cache(maxsize=4096)
def _unpaired_ratio(a: tuple, b: tuple, level: float, resamples: int, seed: int) -> Estimate:
    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    draws_a, draws_b = _draws(seed, resamples, (a.size, ()), (b.size, ()))
    ratios = _resampled(a, draws_a) / _resampled(b, draws_b)
    return Estimate(float(np.median(a) / np.median(b)), *_interval(ratios, level),
                    int(min(a.size, b.size)))

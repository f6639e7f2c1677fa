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
    medians = _resampled_medians(a, np.random.default_rng(seed), resamples, blocks)
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
    rng = np.random.default_rng(seed)
    ratios = _resampled_medians(a, rng, resamples) / _resampled_medians(b, rng, resamples)
    return Estimate(float(np.median(a) / np.median(b)), *_interval(ratios, level),
                    int(min(a.size, b.size)))

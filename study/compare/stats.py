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


Sample = tuple[int, tuple[int, ...]]  # (size, blocks): blocks as median_interval takes them


@dataclass(frozen=True, eq=False)
class Draws:
    """One sample's bootstrap draws, as counts: `tally` (size + 1 × resamples) how often each
    value was drawn into each resample, then a row of zeros; `counts` the values each
    resample holds; `middle` the 0-based positions of each one's lower middle value, and
    where a count is even, of its upper middle value too. `state`: the generator's state
    before them, to draw them again as indices (_indices)."""
    sample: Sample
    state: dict
    counts: np.ndarray
    tally: np.ndarray
    middle: np.ndarray


def _drawing(rng: np.random.Generator, resamples: int, sample: Sample):
    """(the values each resample holds, the indices each one draws in chunks of rows: (first
    row, rows × width), -1 past the end of a row that holds fewer), drawn one after another
    from rng. With blocks (the values come in consecutive groups of these sizes, one group
    a process), two levels: groups drawn with replacement, then values within each drawn
    group, so that the spread between processes counts."""
    size, blocks = sample
    if len(blocks) < 2:
        rows = max(1, CHUNK // size)
        return np.full(resamples, size), (
            (first, rng.integers(0, size, (min(rows, resamples - first), size)))
            for first in range(0, resamples, rows))
    sizes = np.asarray(blocks)
    starts = np.concatenate(([0], np.cumsum(sizes)[:-1]))
    drawn = rng.integers(0, sizes.size, (resamples, sizes.size))
    group = sizes[drawn][..., None]
    missing = np.arange(sizes.max()) >= group
    rows = max(1, CHUNK // (sizes.size * sizes.max()))

    def chunk(part: slice) -> np.ndarray:
        within = (rng.random((part.stop - part.start, sizes.size, sizes.max()))
                  * group[part]).astype(np.int64)
        index = np.where(missing[part], -1, starts[drawn[part]][..., None] + within)
        return index.reshape(part.stop - part.start, -1)
    return group[..., 0].sum(axis=1), (
        (first, chunk(slice(first, min(first + rows, resamples))))
        for first in range(0, resamples, rows))


CHUNK = 1 << 16  # indices drawn and counted at a time: a few hundred kB, kept in cache


def _drawn(rng: np.random.Generator, resamples: int, sample: Sample) -> Draws:
    state = rng.bit_generator.state
    size = sample[0]
    counts, chunks = _drawing(rng, resamples, sample)
    tally = np.zeros((size + 1, resamples),
                     np.int16 if counts.max() < np.iinfo(np.int16).max else np.int32)
    for first, index in chunks:  # counted row by row: each resample's counters together
        rows = len(index)
        cells = np.where(index < 0, size, index) + (np.arange(rows) * (size + 1))[:, None]
        counted = np.bincount(cells.ravel(), minlength=rows * (size + 1))
        tally[:, first:first + rows] = counted.reshape(rows, size + 1).T
    tally[size] = 0  # where the rows that hold fewer counted their missing values
    middle = [(counts - 1) // 2] + ([] if (counts % 2 == 1).all() else [counts // 2])
    draws = Draws(sample, state, counts, tally, np.stack(middle).astype(tally.dtype))
    for part in (counts, tally, draws.middle):
        part.flags.writeable = False
    return draws


def _indices(draws: Draws) -> np.ndarray:
    """The draws as indices (resamples × width; -1: none), drawn again."""
    rng = np.random.default_rng()
    rng.bit_generator.state = draws.state
    return np.concatenate([index for _, index in _drawing(rng, draws.counts.size,
                                                          draws.sample)[1]])


@functools.lru_cache(maxsize=128)
def _draws_and_state(seed: int, resamples: int, *samples: Sample):
    if len(samples) == 1:
        rng, earlier = np.random.default_rng(seed), ()
    else:  # the earlier samples' draws are those of a case of their sizes alone: drawn once
        earlier, state = _draws_and_state(seed, resamples, *samples[:-1])
        rng = np.random.default_rng()
        rng.bit_generator.state = state
    return (*earlier, _drawn(rng, resamples, samples[-1])), rng.bit_generator.state


def _draws(seed: int, resamples: int, *samples: Sample) -> tuple[Draws, ...]:
    """The bootstrap's draws for each (size, blocks) in `samples`, one after another from one
    generator seeded with `seed`: they depend on the sizes alone, so every case of one size
    shares them."""
    return _draws_and_state(seed, resamples, *samples)[0]


def _resampled(a: np.ndarray, draws: Draws, order: np.ndarray | None = None) -> np.ndarray:
    """Medians of bootstrap resamples of a (sorted by `order`, where given), as numpy's
    median gives them."""
    # NaN, or ±0 (values that tie but differ): numpy's own medians pick which one
    if np.isnan(a).any() or (a == 0).any():
        index = _indices(draws)
        if len(draws.sample[1]) < 2:
            return np.median(a[index], axis=1)
        return np.nanmedian(np.where(index < 0, np.nan, a[index]), axis=1)
    order = np.argsort(a, kind="stable") if order is None else order
    low, high = a[order][_middle_ranks(draws.tally, order, draws.middle)][[0, -1]]
    return np.where(draws.counts % 2 == 1, low, (low + high) / 2)


def _middle_ranks(tally: np.ndarray, order: np.ndarray, middle: np.ndarray) -> np.ndarray:
    """Each resample's rank (of the values in `order`) at each of its `middle` positions:
    counted in blocks of about √size ranks, its block by the counts summed by block, then
    its place in that block by that block's counts. A few passes over the tally, where
    sorting each resample's ranks is log(size) passes over its values."""
    size, resamples = tally.shape[0] - 1, tally.shape[1]
    width = max(1, math.isqrt(size))
    blocks = -(-size // width)
    # ranked counts, padded to whole blocks with tally's row of zeros
    ranked = tally[np.concatenate((order, np.full(blocks * width - size, size)))]
    sums = ranked.reshape(blocks, width, resamples).sum(axis=1, dtype=tally.dtype)
    below = np.zeros((blocks + 1, resamples), tally.dtype)  # drawn below each block
    for j in range(blocks):  # numpy's cumsum along a short axis costs more than this loop
        np.add(below[j], sums[j], out=below[j + 1])
    tallied = np.uint8 if max(blocks, width) <= np.iinfo(np.uint8).max else np.intp
    block = (below[1:, None] <= middle).view(np.uint8).sum(axis=0, dtype=tallied).astype(np.intp)
    resample = np.arange(resamples)
    first = block * width * resamples + resample  # each block's first ranked count
    within = ranked.ravel()[first + (np.arange(width) * resamples)[:, None, None]]
    for w in range(1, width):
        np.add(within[w], within[w - 1], out=within[w])
    ahead = middle - below.ravel()[block * resamples + resample]
    return block * width + (within <= ahead).view(np.uint8).sum(axis=0, dtype=tallied)


def _interval(medians: np.ndarray, level: float) -> tuple[float, float]:
    """np.percentile(medians, [50 (1 - level), 50 (1 + level)]) to the bit (its linear
    interpolation between the same order statistics), without its cost per call."""
    ends = [(medians.size - 1) * (q / 100) for q in (50 * (1 - level), 50 * (1 + level))]
    if np.isnan(medians).any() or not all(0 <= v < medians.size - 1 for v in ends):
        lo, hi = np.percentile(medians, [50 * (1 - level), 50 * (1 + level)])
        return float(lo), float(hi)
    below = [math.floor(v) for v in ends]
    ordered = np.partition(medians, sorted({0, medians.size - 1, *below, *(b + 1 for b in below)}))
    out = []
    for v, b in zip(ends, below):
        low, high, t = float(ordered[b]), float(ordered[b + 1]), v - b
        out.append(high - (high - low) * (1 - t) if t >= 0.5 else low + (high - low) * t)
    return out[0], out[1]


def _median(a: np.ndarray, order: np.ndarray) -> np.float64:
    """np.median(a) to the bit, for values without NaN and zeros that `order` sorts."""
    return (a[order[(a.size - 1) // 2]] + a[order[a.size // 2]]) / 2


@functools.lru_cache(maxsize=1024)  # a case's times are resampled for its interval and ratios
def _bootstrapped(values: tuple, seed: int, resamples: int,
                  *samples: Sample) -> tuple[np.float64, np.ndarray]:
    """The values' median, and the medians of their resamples by the draws of the last of
    `samples` (drawn after the others'; the values are that sample)."""
    a = np.asarray(values, dtype=np.float64)
    draws = _draws(seed, resamples, *samples)[-1]
    if np.isnan(a).any() or (a == 0).any():
        return np.median(a), _resampled(a, draws)
    order = np.argsort(a, kind="stable")
    return _median(a, order), _resampled(a, draws, order)


def median_interval(values, level: float = CI_LEVEL, resamples: int = RESAMPLES,
                    seed: int = 0, blocks: tuple[int, ...] = ()) -> Estimate:
    """The median with its percentile-bootstrap interval (resampling the values, or with
    `blocks`, the processes that took them and then the values; a fixed seed, so a pure
    function of them)."""
    values = tuple(map(float, values))
    if blocks and sum(blocks) != len(values):
        raise ValueError(f"blocks of {sum(blocks)} values in all for {len(values)} values")
    return _median_interval(values, level, resamples, seed, tuple(blocks))


@functools.lru_cache(maxsize=4096)  # a report asks for the same case's interval many times
def _median_interval(values: tuple, level: float, resamples: int, seed: int,
                     blocks: tuple[int, ...]) -> Estimate:
    median, medians = _bootstrapped(values, seed, resamples, (len(values), blocks))
    return Estimate(float(median), *_interval(medians, level), len(values))


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
    first, second = (len(a), ()), (len(b), ())
    median_a, medians_a = _bootstrapped(a, seed, resamples, first)
    median_b, medians_b = _bootstrapped(b, seed, resamples, first, second)
    return Estimate(float(median_a / median_b), *_interval(medians_a / medians_b, level),
                    min(len(a), len(b)))

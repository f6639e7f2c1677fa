"""Estimates with their intervals: one type, computed once from raw values.

    >>> median_interval([1.0, 2.0, 3.0] * 7)
    Estimate(value=2.0, lo=1.0, hi=3.0, n=21)

Every interval is a 95% interval. Medians and ratios of medians get percentile-bootstrap
intervals (with a fixed seed, so pure functions of the values; two levels, processes then
rounds, where the values come from several processes); counts get Clopper-Pearson intervals.
Code that asks for many bootstrap estimates gets them in batches through together().
"""
import functools
import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import TypeVar

import numpy as np

from study.compare.estimate import Estimate, binomial, to_figures  # noqa: F401  the API's
from study.compare.levels import few_blocks_factor, widened


CI_LEVEL = 0.95
RESAMPLES = 2000
MIN_BOOTSTRAP = 20  # fewer values than this: a bootstrap interval says little, so none is given


T = TypeVar("T")
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
    # the narrowest type that holds the most a resample holds: the passes over it are SIMD
    tally = np.zeros((size + 1, resamples), next(t for t in (np.int8, np.int16, np.int32)
                                                  if counts.max() <= np.iinfo(t).max))
    for first, index in chunks:  # counted row by row: each resample's counters together
        rows = len(index)
        cells = np.where(index < 0, size, index) if len(sample[1]) >= 2 else index
        cells += (np.arange(rows) * (size + 1))[:, None]
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


def _resampled(a: np.ndarray, draws: Draws) -> np.ndarray:
    """Medians of bootstrap resamples of a, as numpy's median gives them."""
    # NaN, or ±0 (values that tie but differ): numpy's own medians pick which one
    if np.isnan(a).any() or (a == 0).any():
        index = _indices(draws)
        if len(draws.sample[1]) < 2:
            return np.median(a[index], axis=1)
        return np.nanmedian(np.where(index < 0, np.nan, a[index]), axis=1)
    return _medians(a[None], draws)[0]


def _medians(values: np.ndarray, draws: Draws) -> np.ndarray:
    """The resamples' medians of each row of values (none NaN or zero), as numpy's median
    gives them: a resample's middle values are those at its middle ranks."""
    groups, size = values.shape
    orders = np.argsort(values, axis=1, kind="stable")
    ranked = np.take_along_axis(values, orders, axis=1)
    odd = draws.counts % 2 == 1
    out = np.empty((groups, draws.counts.size))
    rows = max(1, CHUNK * 16 // ((size + 1) * draws.counts.size))  # a few MB of counts
    for first in range(0, groups, rows):
        part = slice(first, first + rows)
        ranks = _middle_ranks(draws.tally, orders[part], draws.middle)
        middle = np.take_along_axis(ranked[part], ranks.reshape(len(ranks), -1), axis=1)
        low, high = middle.reshape(ranks.shape)[:, [0, -1]].transpose(1, 0, 2)
        out[part] = np.where(odd, low, (low + high) / 2)
    return out


def _middle_ranks(tally: np.ndarray, orders: np.ndarray, middle: np.ndarray) -> np.ndarray:
    """For each row of orders (groups × size, each a ranking of the values) each resample's
    rank at each of its `middle` positions (groups × positions × resamples). The counts of
    the values in rank order are added up rank by rank for few values; for more, in blocks
    of about √size ranks, which place each position in a block, and then that block's
    counts one by one: a few passes over the tally either way, where sorting each
    resample's ranks is log(size) passes over its values."""
    size, resamples = tally.shape[0] - 1, tally.shape[1]
    groups = len(orders)
    if size <= FEW:
        below = tally[orders]  # then the counts up to each rank, in place
        for t in range(1, size):
            np.add(below[:, t], below[:, t - 1], out=below[:, t])
        return np.stack([(below <= at).view(np.uint8).sum(axis=1, dtype=np.uint8)
                         for at in middle], axis=1)
    width = math.isqrt(size)
    blocks = -(-size // width)
    padded = np.full((groups, blocks * width), size)  # past the last rank: tally's zeros
    padded[:, :size] = orders
    ranked = tally[padded]
    sums = ranked.reshape(groups, blocks, width, resamples).sum(axis=2, dtype=tally.dtype)
    below = np.zeros((groups, blocks + 1, resamples), tally.dtype)  # drawn below each block
    for j in range(blocks):  # numpy's cumsum along a short axis costs more than this loop
        np.add(below[:, j], sums[:, j], out=below[:, j + 1])
    counted = np.uint8 if blocks <= np.iinfo(np.uint8).max else np.intp  # width <= blocks
    block = (below[:, 1:, None] <= middle).view(np.uint8).sum(axis=1, dtype=counted)
    block = block.astype(np.intp)
    group = np.arange(groups)[:, None, None]
    resample = np.arange(resamples)
    first = (group * blocks + block) * width * resamples + resample  # a block's first count
    within = ranked.ravel()[first + (np.arange(width) * resamples)[:, None, None, None]]
    for w in range(1, width):
        np.add(within[w], within[w - 1], out=within[w])
    ahead = middle - below.ravel()[(group * (blocks + 1) + block) * resamples + resample]
    return block * width + (within <= ahead).view(np.uint8).sum(axis=0, dtype=counted)


FEW = 100  # values up to which counting rank by rank costs less than by blocks (< 256)


def _intervals(medians: np.ndarray, level: float) -> np.ndarray:
    """np.percentile(row, [50 (1 - level), 50 (1 + level)]) of each row of medians (rows ×
    2) to the bit: its linear interpolation between the same order statistics, without its
    cost per call."""
    medians = np.atleast_2d(medians)
    count = medians.shape[1]
    q = [50 * (1 - level), 50 * (1 + level)]
    ends = np.array(q) / 100 * (count - 1)
    below = np.floor(ends).astype(np.intp)
    if np.isnan(medians).any() or not 0 <= ends[0] <= ends[1] < count - 1:
        return np.array([np.percentile(row, q) for row in medians])
    ordered = np.partition(medians, np.unique(np.concatenate(([0, -1], below, below + 1))))
    low, high, t = ordered[:, below], ordered[:, below + 1], ends - below
    return np.where(t >= 0.5, high - (high - low) * (1 - t), low + (high - low) * t)


def _median(ordered: np.ndarray) -> np.ndarray:
    """np.median of each row, to the bit, for rows without NaN and zeros, sorted."""
    size = ordered.shape[-1]
    return (ordered[..., (size - 1) // 2] + ordered[..., size // 2]) / 2


@functools.lru_cache(maxsize=1024)  # a case's times are resampled for its interval and ratios
def _bootstrapped(values: tuple, seed: int, resamples: int,
                  *samples: Sample) -> tuple[np.float64, np.ndarray]:
    """The values' median, and the medians of their resamples by the draws of the last of
    `samples` (drawn after the others'; the values are that sample)."""
    a = np.asarray(values, dtype=np.float64)
    draws = _draws(seed, resamples, *samples)[-1]
    if np.isnan(a).any() or (a == 0).any():
        return np.median(a), _resampled(a, draws)
    return _median(np.sort(a)), _medians(a[None], draws)[0]


def median_interval(values, level: float = CI_LEVEL, resamples: int = RESAMPLES,
                    seed: int = 0, blocks: tuple[int, ...] = ()) -> Estimate:
    """The median with its percentile-bootstrap interval (resampling the values, or with
    `blocks`, the processes that took them and then the values; a fixed seed, so a pure
    function of them)."""
    values = _floats(values)
    if blocks and sum(blocks) != len(values):
        raise ValueError(f"blocks of {sum(blocks)} values in all for {len(values)} values")
    return _estimate(_median_interval, values, level, resamples, seed, tuple(blocks))


def _floats(values) -> tuple:
    """values as a tuple of floats: an estimate's key."""
    if isinstance(values, np.ndarray):  # its own conversion is several times faster
        return tuple(np.asarray(values, dtype=np.float64).tolist())
    return tuple(map(float, values))


def _median_interval(values: tuple, level: float, resamples: int, seed: int,
                     blocks: tuple[int, ...]) -> Estimate:
    median, medians = _bootstrapped(values, seed, resamples, (len(values), blocks))
    return _finished(float(median), _intervals(medians, level)[0], len(values), level,
                     len(blocks))


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
                   seed: int = 0, blocks: tuple[tuple[int, ...], tuple[int, ...]] = ((), ())
                   ) -> Estimate:
    """median(a) ÷ median(b) for times taken in different cases, with the bootstrap interval
    of that ratio, each side resampled on its own (each in two levels, given its `blocks`)."""
    return _estimate(_unpaired_ratio, _floats(a), _floats(b), level, resamples, seed,
                     tuple(map(tuple, blocks)))


def _unpaired_ratio(a: tuple, b: tuple, level: float, resamples: int, seed: int,
                    blocks: tuple) -> Estimate:
    (median_a, medians_a), (median_b, medians_b) = (
        _bootstrapped(*side) for side in _sides(a, b, resamples, seed, blocks))
    return _finished(float(median_a / median_b), _intervals(medians_a / medians_b, level)[0],
                     min(len(a), len(b)), level, min(max(1, len(k)) for k in blocks))


def _sides(a: tuple, b: tuple, resamples: int, seed: int, blocks: tuple) -> list[tuple]:
    """An unpaired ratio's two resamplings (_bootstrapped's arguments): b's draws follow a's."""
    first, second = (len(a), blocks[0]), (len(b), blocks[1])
    return [(a, seed, resamples, first), (b, seed, resamples, first, second)]


_known: dict = {}  # (function, arguments) -> its estimate: a report asks for many again
_asked: list | None = None  # while together() collects them: the estimates asked for


def _estimate(of: Callable[..., Estimate], *args) -> Estimate:
    """of(*args), computed once; a stand-in while together() collects what is asked for."""
    if _asked is not None:
        _asked.append((of, args))
        return Estimate(1.0, 1.0, 1.0, len(args[0]))
    if (known := _known.get((of, args))) is None:
        if len(_known) >= KNOWN:
            _known.clear()
        known = _known[of, args] = of(*args)
    return known


KNOWN = 8192  # estimates kept


def together(work: Callable[[], T]) -> T:
    """work(), the bootstrap estimates it asks for made together: work runs once to learn
    which (answered with stand-ins; its result, or its error, dropped), their resamples are
    taken in one batch for each sample size and their intervals in one, and work runs
    again, answered from those. Resampling a few dozen values takes a few dozen numpy calls
    whatever their number, and a summary asks for a thousand such estimates."""
    global _asked
    if _asked is not None:  # within another's first run: its own collects
        return work()
    _asked = []
    try:
        work()
    except Exception:  # noqa: BLE001  a stand-in may upset it; the run that counts will say
        pass
    finally:
        asked, _asked = list(dict.fromkeys(_asked)), None
    _known.update(_made_together([(of, args) for of, args in asked if (of, args) not in _known]))
    return work()


def _made_together(asked: list[tuple]) -> dict:
    """{(function, arguments): estimate} for those asked for whose values hold no NaN and no
    zero (for those, numpy's medians choose among ties that differ: each is made alone)."""
    wanted = {key: _resamplings(*key) for key in asked}
    by_draws: dict[tuple, dict] = {}  # _draws' arguments -> {values: (median, medians)}
    for _, sides in wanted.values():
        for values, *drawn in sides:
            by_draws.setdefault(tuple(drawn), {})[values] = None
    for drawn, resampled in by_draws.items():
        values = list(resampled)
        a = np.array(values)
        clean = ~(np.isnan(a) | (a == 0)).any(axis=1)
        if clean.any():
            resampled.update(zip((v for v, ok in zip(values, clean) if ok), zip(
                _median(np.sort(a[clean], axis=1)), _medians(a[clean], _draws(*drawn)[-1]))))
    by_level: dict[tuple, list] = {}  # (level, resamples) -> what to make of their medians
    for key, (level, sides) in wanted.items():
        got = [by_draws[tuple(drawn)][values] for values, *drawn in sides]
        if None in got:
            continue
        value, medians = got[0] if len(got) == 1 else (got[0][0] / got[1][0],
                                                        got[0][1] / got[1][1])
        by_level.setdefault((level, medians.size), []).append(
            (key, value, medians, min(len(values) for values, *_ in sides)))
    out = {}
    for (level, resamples), made in by_level.items():
        step = max(1, CHUNK * 4 // resamples)  # a few MB of medians at a time
        for first in range(0, len(made), step):
            part = made[first:first + step]
            ends = _intervals(np.array([medians for _, _, medians, _ in part]), level)
            for (key, value, _, n), (lo, hi) in zip(part, ends):
                out[key] = _finished(float(value), (lo, hi), n, level, _block_count(*key))
    return out


def _finished(value: float, ends, n: int, level: float, blocks: int) -> Estimate:
    """The estimate with its percentile interval, widened where few blocks rule its spread
    (study.compare.levels.few_blocks_factor)."""
    lo, hi = widened(value, float(ends[0]), float(ends[1]), few_blocks_factor(blocks, level))
    return Estimate(value, lo, hi, n)


def _block_count(of: Callable[..., Estimate], args: tuple) -> int:
    blocks = args[-1]
    return len(blocks) if of is _median_interval else min(max(1, len(b)) for b in blocks)


def _resamplings(of: Callable[..., Estimate], args: tuple) -> tuple[float, list[tuple]]:
    """An estimate's level and the resamplings it takes (_bootstrapped's arguments)."""
    if of is _median_interval:
        values, level, resamples, seed, blocks = args
        return level, [(values, seed, resamples, (len(values), blocks))]
    a, b, level, resamples, seed, blocks = args
    return level, _sides(a, b, resamples, seed, blocks)

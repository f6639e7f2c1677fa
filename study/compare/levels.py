"""How much of a spread each level of an experiment holds: blocks (processes) against rounds.

    >>> between, within = variance_components([1.0, 1.2, 3.0, 3.2], (2, 2))
    >>> round(between, 3), round(within, 3)
    (1.99, 0.02)

Kalibera and Jones (ISMM 2013) measure the variance at each level of an experiment that is
repeated, and repeat most where it is largest; an interval over the rounds of one block says
nothing of the next block. This is the one-way random-effects estimate by the method of
moments (unequal block sizes: n0 of Searle, Casella and McCulloch, 1992, §3.6).
"""
import math

import numpy as np


def variance_components(values, blocks: tuple[int, ...]) -> tuple[float, float]:
    """(between-block variance, within-block variance) of values taken in consecutive blocks
    of the given sizes; the between part is 0 where the blocks differ no more than their
    rounds predict, NaN where there are fewer than two blocks or rounds to tell."""
    x = np.asarray(values, dtype=np.float64)
    sizes = np.asarray(blocks, dtype=np.int64)
    if sizes.sum() != x.size:
        raise ValueError(f"blocks of {sizes.sum()} values in all for {x.size} values")
    k, n = sizes.size, x.size
    if k < 2 or n <= k:
        return float("nan"), float("nan")
    groups = np.split(x, np.cumsum(sizes)[:-1])
    means = np.array([g.mean() for g in groups])
    within = sum(((g - m) ** 2).sum() for g, m in zip(groups, means)) / (n - k)
    between_mean_square = (sizes * (means - x.mean()) ** 2).sum() / (k - 1)
    n0 = (n - (sizes ** 2).sum() / n) / (k - 1)
    return max(0.0, float((between_mean_square - within) / n0)), float(within)


def few_blocks_factor(blocks: int, level: float = 0.95) -> float:
    """How much wider than a two-level bootstrap's interval must be, on each side of its
    estimate, to cover as often as `level` says where the values come in a few blocks whose
    spread rules: the bootstrap's variance of a statistic over k blocks drawn again is
    (k - 1) / k of the truth's, and its tails are a normal's where a t with k - 1 degrees of
    freedom holds (the critical value for few clusters: Cameron, Gelbach and Miller, 2008).
    1 for one block, where the rounds alone are resampled; 1.87 for 4 blocks at 95%.

        >>> round(few_blocks_factor(4), 3)
        1.875
    """
    if blocks < 2:
        return 1.0
    from statistics import NormalDist

    from study.compare.distributions import beta_quantile
    df = blocks - 1  # t's quantile from the incomplete beta: P(|T| > t) = I_{df/(df+t²)}(df/2, ½)
    t = math.sqrt(df * (1 / beta_quantile(1 - level, df / 2, 0.5) - 1))
    return t / NormalDist().inv_cdf(0.5 + level / 2) * math.sqrt(blocks / df)


def widened(value: float, lo: float, hi: float, factor: float) -> tuple[float, float]:
    """(lo, hi) moved `factor` times as far from the value, in log space where all three are
    positive (a ratio's interval is asymmetric around it, as its logarithm's is not)."""
    if factor == 1.0:
        return lo, hi
    if value > 0 and lo > 0 and hi > 0:
        return value * (lo / value) ** factor, value * (hi / value) ** factor
    return value - factor * (value - lo), value + factor * (hi - value)

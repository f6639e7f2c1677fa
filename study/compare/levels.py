"""How much of a spread each level of an experiment holds: blocks (processes) against rounds.

    >>> between, within = variance_components([1.0, 1.2, 3.0, 3.2], (2, 2))
    >>> round(between, 3), round(within, 3)
    (1.99, 0.02)

Kalibera and Jones (ISMM 2013) measure the variance at each level of an experiment that is
repeated, and repeat most where it is largest; an interval over the rounds of one block says
nothing of the next block. This is the one-way random-effects estimate by the method of
moments (unequal block sizes: n0 of Searle, Casella and McCulloch, 1992, §3.6).
"""
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

"""The bootstrap's medians through ranks give numpy's medians of the same draws, bit for bit:
the intervals the report prints do not depend on how the medians are computed."""
import numpy as np
import pytest

from study.compare import distributions, stats
from study.compare.levels import few_blocks_factor, variance_components, widened


def numpys_medians(a, rng, resamples, blocks=()):
    """The bootstrap as it was first written: numpy's median of each resample."""
    if len(blocks) < 2:
        return np.median(a[rng.integers(0, a.size, (resamples, a.size))], axis=1)
    sizes = np.asarray(blocks)
    starts = np.concatenate(([0], np.cumsum(sizes)[:-1]))
    drawn = rng.integers(0, sizes.size, (resamples, sizes.size))
    size = sizes[drawn][..., None]
    within = (rng.random((resamples, sizes.size, sizes.max())) * size).astype(np.int64)
    values = a[starts[drawn][..., None] + within]
    values[np.arange(sizes.max()) >= size] = np.nan
    return np.nanmedian(values.reshape(resamples, -1), axis=1)


SAMPLES = {
    "continuous, odd": np.random.default_rng(1).lognormal(size=51),
    "continuous, even": np.random.default_rng(2).lognormal(size=400),
    "ties": np.round(np.random.default_rng(3).lognormal(size=40), 1),
    "signed zeros": np.array([0.0, -0.0, 1.0, -1.0, 0.0, 2.0] * 5),
    "a NaN": np.concatenate([np.random.default_rng(4).lognormal(size=29), [np.nan]]),
}


@pytest.mark.parametrize("name", SAMPLES)
@pytest.mark.parametrize("blocks", [(), "three processes"])
def test_resampled_medians_are_numpys_medians_of_the_same_draws(name, blocks):
    a = SAMPLES[name]
    if blocks:
        blocks = (a.size // 3, a.size // 3, a.size - 2 * (a.size // 3))
    expected = numpys_medians(a, np.random.default_rng(0), 500, blocks)
    got = stats._resampled(a, stats._draws(0, 500, (a.size, blocks))[0])
    np.testing.assert_array_equal(got, expected)
    assert np.array_equal(np.signbit(got), np.signbit(expected))


def test_an_unpaired_ratio_draws_its_second_sample_after_its_first():
    a, b = SAMPLES["continuous, odd"], SAMPLES["continuous, even"]
    rng = np.random.default_rng(0)
    first = numpys_medians(a, rng, 300)
    second = numpys_medians(b, rng, 300)
    draws_a, draws_b = stats._draws(0, 300, (a.size, ()), (b.size, ()))
    np.testing.assert_array_equal(stats._resampled(a, draws_a), first)
    np.testing.assert_array_equal(stats._resampled(b, draws_b), second)


def test_distribution_functions_are_scipy_stats_own_to_the_bit():
    # the oracle is scipy.stats itself, on the arguments the study passes: Clopper-Pearson
    # bounds of every count up to 400 trials and of larger ones, chi-square tails of 1 to 9
    # degrees of freedom (0 and inf included), normal tails of both signs
    from scipy.stats import beta, chi2, norm
    for trials in [*range(1, 400, 7), 1000, 60000]:
        for events in range(0, trials + 1, max(1, trials // 50)):
            if events:
                assert distributions.beta_quantile(0.025, events, trials - events + 1) == \
                    beta.ppf(0.025, events, trials - events + 1)
            if events < trials:
                assert distributions.beta_quantile(0.975, events + 1, trials - events) == \
                    beta.ppf(0.975, events + 1, trials - events)
    assert distributions.chi2_quantile(0.95, 1) == chi2.ppf(0.95, 1)
    rng = np.random.default_rng(0)
    for x in [0.0, 5e-324, 1e3, float("inf"), *rng.exponential(3, 200)]:
        for df in (1, 2, 3, 9):
            assert distributions.chi2_tail(x, df) == chi2.sf(x, df)
    for z in [0.0, -0.0, 40.0, -40.0, *rng.normal(0, 3, 200)]:
        assert distributions.normal_tail(z) == norm.sf(z)


def test_an_unpaired_ratio_in_two_levels_draws_each_side_by_its_blocks():
    # the oracle is the bootstrap as first written, with each side's blocks: a's draws, then b's
    a, b = SAMPLES["continuous, odd"][:48], SAMPLES["continuous, even"][:60]
    blocks = ((16, 16, 16), (20, 20, 20))
    rng = np.random.default_rng(0)
    medians = numpys_medians(a, rng, 500, blocks[0]) / numpys_medians(b, rng, 500, blocks[1])
    got = stats.unpaired_ratio(a, b, resamples=500, blocks=blocks)
    value = np.median(a) / np.median(b)
    assert got.value == value
    # the percentile interval, widened for three blocks a side (levels.few_blocks_factor)
    lo, hi = np.percentile(medians, [2.5, 97.5])
    assert (got.lo, got.hi) == pytest.approx(widened(value, lo, hi, few_blocks_factor(3)),
                                             rel=1e-12)
    narrow = stats.unpaired_ratio(a, b, resamples=500)  # rounds alone: not widened
    assert narrow.lo > got.lo and narrow.hi < got.hi


def test_processes_that_disagree_widen_the_interval_rounds_alone_cannot():
    # three processes whose rounds agree within each (±1%) but whose medians sit at 1, 1.2 and
    # 1.4: resampling rounds alone gives an interval narrower than the spread of the processes
    rng = np.random.default_rng(5)
    values = np.concatenate([m * (1 + 0.01 * rng.standard_normal(30)) for m in (1.0, 1.2, 1.4)])
    rounds_only = stats.median_interval(values)
    two_level = stats.median_interval(values, blocks=(30, 30, 30))
    assert rounds_only.hi - rounds_only.lo < 0.1 < 0.3 < two_level.hi - two_level.lo


def test_variance_components_split_a_spread_into_blocks_and_rounds_as_the_anova_does():
    # by hand: block means 1.1 and 3.1, grand mean 2.1; within: 4 squares of 0.1 over 4 - 2
    # = 0.02; between blocks' mean square 2 (1^2 + 1^2) / 1 = 4, n0 = (4 - 8 / 4) / 1 = 2, so
    # (4 - 0.02) / 2 = 1.99
    assert variance_components([1.0, 1.2, 3.0, 3.2], (2, 2)) == pytest.approx((1.99, 0.02))
    # blocks no further apart than their rounds predict: none of the spread is between them
    assert variance_components([1.0, 2.0, 1.0, 2.0], (2, 2))[0] == 0.0
    # unequal blocks: n0 = (5 - (4 + 9) / 5) / 1 = 2.4; means 1 and 2, grand 1.6; between mean
    # square 2 (0.36) + 3 (0.16) = 1.2; within 0: (1.2 - 0) / 2.4 = 0.5
    assert variance_components([1, 1, 2, 2, 2], (2, 3)) == pytest.approx((0.5, 0.0))
    assert np.isnan(variance_components([1.0, 2.0], (2,))[0])  # one block: nothing to tell
    with pytest.raises(ValueError, match="blocks of 3 values"):
        variance_components([1.0, 2.0], (1, 2))


def test_few_blocks_widen_an_interval_as_a_t_with_k_minus_1_degrees_of_freedom_asks():
    # by hand, 95%: t(3) = 3.1824, z = 1.95996, sqrt(4 / 3): 3.1824 / 1.95996 x 1.1547 = 1.8749
    assert few_blocks_factor(4) == pytest.approx(1.8749, abs=1e-4)
    assert few_blocks_factor(1) == 1.0  # rounds alone: the percentile interval as it is
    assert few_blocks_factor(1000) == pytest.approx(1.0, abs=2e-3)  # many blocks: the normal's
    # in log space for a positive ratio: 2 x (1.5/2)^2 and 2 x (3/2)^2
    assert widened(2.0, 1.5, 3.0, 2.0) == pytest.approx((1.125, 4.5))
    assert widened(0.0, -1.0, 2.0, 2.0) == (-2.0, 4.0)  # a value at 0: linearly

"""The bootstrap's medians through ranks give numpy's medians of the same draws, bit for bit:
the intervals the report prints do not depend on how the medians are computed."""
import numpy as np
import pytest

from study.compare import distributions, stats


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

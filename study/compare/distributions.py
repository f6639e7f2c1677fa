"""The few distribution functions the study's estimates and tests use, as scipy.special computes
them for scipy.stats' beta, chi2 and norm: the same numbers to the bit (tests/test_stats.py holds
them against scipy.stats), without importing scipy.stats, which took about a second of every
render."""


def beta_quantile(q: float, a: float, b: float) -> float:
    from scipy.special import betaincinv
    return float(betaincinv(a, b, q))


def chi2_quantile(q: float, df: float) -> float:
    from scipy.special import gammaincinv
    return float(2 * gammaincinv(df / 2, q))


def chi2_tail(x: float, df: float) -> float:
    """P(X > x) for X ~ chi-square(df)."""
    from scipy.special import chdtrc
    return float(chdtrc(df, x))


def normal_tail(z: float) -> float:
    """P(Z > z) for a standard normal Z."""
    from scipy.special import ndtr
    return float(ndtr(-z))

"""Fits of the bifurcation count: the per-image rate of first entering the bifurcation zone
(an interval-censored exponential, maximum likelihood with a 95% likelihood-ratio interval),
the same with rates varying across initialisations (a gamma mixture, profile likelihood), and
the count they predict at another number of images.
"""
import math
from dataclasses import dataclass
from functools import cache, lru_cache

from study.compare.distributions import chi2_quantile, chi2_tail
from study.compare.stats import to_figures

def _sufficient(events: list[tuple[int, int]], censored_at: list[int]) -> tuple:
    """What the interval-censored exponential's likelihood reads of a pass (an event seen in
    the minibatch covering images (lo, hi], or none in the first n images): the exposure
    before each event and of each censored pass, the events counted by interval width (in the
    order the widths first occur, the order the log-likelihood sums them in), whether every
    event is in a first minibatch with none censored, and the numbers of events and of
    censored passes."""
    exposure = sum(censored_at) + sum(lo for lo, _ in events)
    widths: dict[int, int] = {}
    for lo, hi in events:
        widths[hi - lo] = widths.get(hi - lo, 0) + 1
    first_only = not censored_at and all(lo == 0 for lo, _ in events)
    return exposure, tuple(widths.items()), first_only, len(events), len(censored_at)


def _likelihood(exposure: int, widths: tuple, first_only: bool, events: int):
    """The log-likelihood as a function of the rate alone, from the pass's _sufficient sums."""
    def ll(rate: float) -> float:
        if rate == 0:
            return -math.inf if events else 0.0
        if rate == math.inf:
            return 0.0 if first_only else -math.inf
        return -rate * exposure + sum([n * math.log(-math.expm1(-rate * w)) for w, n in widths])

    if len(widths) != 1:
        return ll
    (width, count), = widths

    def ll_one_width(rate: float) -> float:
        # sum() of one term is that term: it is never -0.0, which 0 + x would make +0.0
        if rate == 0 or rate == math.inf:
            return ll(rate)
        return -rate * exposure + count * math.log(-math.expm1(-rate * width))
    return ll_one_width


def _maximise(f, lo: float, hi: float, steps: int = 200) -> float:
    """Golden-section search of a unimodal f over log-spaced [lo, hi]. Once the bracket stops
    moving every later step repeats the last, so the search ends there; and a narrow bracket
    revisits its points, so each point is evaluated once."""
    a, b = math.log(lo), math.log(hi)
    g = (math.sqrt(5) - 1) / 2
    values: dict[float, float] = {}

    def value(x: float) -> float:
        if x not in values:
            values[x] = f(x)
        return values[x]

    for _ in range(steps):
        c, d = b - g * (b - a), a + g * (b - a)
        bracket = (c, b) if value(math.exp(c)) < value(math.exp(d)) else (a, d)
        if bracket == (a, b):
            break
        a, b = bracket
    return math.exp((a + b) / 2)


def _crossing(f, target: float, lo: float, hi: float) -> float:
    """Bisection in log space for f(x) = target, f monotone between lo and hi (ended, as
    _maximise, once the bracket stops moving)."""
    a, b = math.log(lo), math.log(hi)
    fa = f(lo) > target
    for _ in range(200):
        m = (a + b) / 2
        bracket = (m, b) if (f(math.exp(m)) > target) == fa else (a, m)
        if bracket == (a, b):
            break
        a, b = bracket
    return math.exp((a + b) / 2)


# What a fit determines, in significant figures: the rate's likelihood is flat at its maximum,
# so golden-section search fixes it to about sqrt(machine epsilon); the varying-proneness fit
# is a grid search (169 logit-spaced fractions, 49 log-spaced shapes); a p-value is a tail of
# a statistic that numpy's SIMD kernels move in its last bits. Values are kept at these
# figures, so that no CPU's kernels change a digit the report prints.
RATE_FIGURES, GRID_FIGURES, P_FIGURES = 6, 4, 3


@cache
def _chi2_95() -> float:
    """The chi-square(1) 95% point, for likelihood-ratio intervals."""
    return chi2_quantile(0.95, 1)


@dataclass(frozen=True)
class Rate:
    """A per-image rate with its 95% likelihood-ratio interval, from so many initialisations
    of which so many had their event."""
    rate: float
    lower: float
    upper: float
    events: int
    inits: int
    log_likelihood: float


@dataclass(frozen=True)
class Mixture:
    """Proneness varying across initialisations: the fraction flagged within the paper's
    images with its 95% profile-likelihood interval, the gamma shape, and the p-value of one
    constant rate against it."""
    fraction: float
    lower: float
    upper: float
    shape: float
    p_constant: float


def rate_estimate(events: list[tuple[int, int]], censored_at: list[int]) -> Rate:
    """Per-image rate of entering the bifurcation zone: maximum likelihood and a 95%
    likelihood-ratio interval. rate is inf (lower bound finite) when every event is in a
    first minibatch, 0 (upper bound finite) when there is none."""
    return _rate_estimate(*_sufficient(events, censored_at))


@cache  # passes with the same sums have the same fit: a pass serves every sweep it is part of
def _rate_estimate(exposure: int, widths: tuple, first_only: bool, events: int,
                   censored: int) -> Rate:
    lo_bound, hi_bound = 1e-12, 1e3
    ll = _likelihood(exposure, widths, first_only, events)
    if not events:
        best, best_ll = 0.0, 0.0
    elif first_only:
        best, best_ll = math.inf, 0.0
    else:
        best = _maximise(ll, lo_bound, hi_bound)
        best_ll = ll(best)
    target = best_ll - _chi2_95() / 2
    lower = 0.0 if best == 0 else _crossing(ll, target, lo_bound, best if best < math.inf
                                            else hi_bound)
    upper = math.inf if best == math.inf else _crossing(ll, target, max(best, lo_bound),
                                                        hi_bound)
    return Rate(*(to_figures(v, RATE_FIGURES) for v in (best, lower, upper)), events,
                events + censored, best_ll)


def mixture_estimate(events: list[tuple[int, int]], censored_at: list[int],
                     at: int) -> Mixture | None:
    """_mixture_estimate, once per distinct pass (the headline's outcome serves every sweep)."""
    return _mixture_estimate(tuple(sorted(events)), tuple(sorted(censored_at)), at)


@cache
def _grid(at: int) -> tuple:
    """The mixture's grid, 169 logit-spaced fractions F by 49 log-spaced shapes k, and the
    scale θ of each point, for which S(at) = 1 - F."""
    import numpy as np
    grid_f = 1 / (1 + np.exp(-np.linspace(-9, 12, 169)))[:, None, None]
    k = np.logspace(-2, 4, 49)[None, :, None]
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        theta = at / np.expm1(-np.log1p(-grid_f) / k)
    for shared in (grid_f, k, theta):
        shared.flags.writeable = False
    return grid_f, k, theta


def _log_survival(t, at: int):
    """log S(t) at every point of the grid, one column per image count in t."""
    import numpy as np
    _, k, theta = _grid(at)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        return -k * np.log1p(t / theta)


# A few hundred distinct minibatches over a whole report (the passes of a setting share their
# edges), each column 169 x 49 floats; this holds them all.
@lru_cache(maxsize=512)
def _event_column(lo: int, hi: int, at: int):
    """log P(first event in the images (lo, hi]) at every grid point, as a 169 x 49 x 1 column."""
    import numpy as np
    log_lo, log_hi = _log_survival(float(lo), at), _log_survival(float(hi), at)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        column = log_lo + np.log(-np.expm1(log_hi - log_lo))
    column.flags.writeable = False
    return column


@cache
def _mixture_estimate(events: tuple, censored_at: tuple, at: int) -> Mixture | None:
    """Initialisations that differ in how prone they are: per-initialisation rates drawn from
    a gamma distribution, so the first event's survival is S(t) = (1 + t/θ)^-k (one constant
    rate is the limit k → ∞). Maximum likelihood of F, the fraction flagged within `at`
    images, with its 95% profile-likelihood interval over a grid of (F, k); the best k; and
    the likelihood-ratio p-value of the constant rate against it (half a χ²(1) tail: k → ∞ is
    the boundary). None without an event or without an image to extrapolate to."""
    import numpy as np
    if not events or not at:
        return None
    pairs: dict[tuple[int, int], int] = {}
    for e in events:
        pairs[e] = pairs.get(e, 0) + 1
    ends: dict[int, int] = {}
    for c in censored_at:
        ends[c] = ends.get(c, 0) + 1
    n_ev = np.array(list(pairs.values()), float)
    cens, n_cens = (np.array(v, float) for v in zip(*ends.items())) if ends else (
        np.zeros(1), np.zeros(1))
    grid_f, k, _ = _grid(at)
    # each column computed alone is elementwise what one array over every pair gives, and the
    # columns side by side sum along the same contiguous axis in the same order
    columns = np.concatenate([_event_column(lo, hi, at) for lo, hi in pairs], axis=-1)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        ll = (n_ev * columns).sum(-1) + (n_cens * _log_survival(cens, at)).sum(-1)
    ll = np.where(np.isnan(ll), -np.inf, ll)
    profile = ll.max(axis=1)
    best = int(np.argmax(profile))
    inside = grid_f[:, 0, 0][profile >= profile[best] - _chi2_95() / 2]
    constant = rate_estimate(events, censored_at).log_likelihood
    stat = max(0.0, 2 * (float(profile[best]) - constant))
    grid = (float(grid_f[best, 0, 0]), float(inside.min()), float(inside.max()),
            float(k[0, int(np.argmax(ll[best])), 0]))
    return Mixture(*(to_figures(v, GRID_FIGURES) for v in grid),
                   to_figures(0.5 * chi2_tail(stat, 1), P_FIGURES) if stat > 0 else 1.0)


def predicted_count(rate: float, images: int, inits: int) -> float:
    return inits * (1.0 if rate == math.inf else -math.expm1(-rate * images))


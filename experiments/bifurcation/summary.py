"""The bifurcation count summarised: tidy frames of every setting's counts beside the paper's,
the constant-rate checks, the same initialisations across frameworks and batch sizes, and the
kernel probes; the headline as a fact. Pure functions of loaded runs.
"""
from dataclasses import dataclass

import pandas as pd

from study.report import older_code, releases

from experiments.bifurcation.counts import (ONE_RATE_REJECTED_BELOW, PREDICTED_FIGURES,
                                            Agreement, Pass, SettingCount, batch_overlaps,
                                            independence, rate_checks, read)
from study.compare.stats import Estimate, binomial, to_figures


@dataclass(frozen=True)
class Headline:
    """The largest run's float32 headline: each framework's count of K with its interval, the
    counts each model predicts at the paper's images, the paper's counts and the verdicts."""
    run: str
    setting: str
    images: int
    inits: int
    their_images: int
    their_inits: int
    counts: tuple[tuple[str, Estimate], ...]  # (framework, count)
    one_rate: tuple[tuple[str, Estimate], ...]  # (framework, predicted by one constant rate)
    varying_rates: tuple[tuple[str, Estimate], ...]  # ... by rates varying across inits, if fitted
    rejected: tuple[str, ...]  # frameworks whose pass rejects one constant rate
    theirs: tuple[int, ...]
    verdicts: tuple[tuple[str, str], ...]
    both: int | None  # initialisations flagged by both frameworks over float32 settings
    expected: float | None  # ... if each flagged independently
    p_both: float | None


@dataclass
class Summary:
    # One row per run, order, sweep, depth, width, batch, dtype, framework and paper count
    # (their sweep): K, count, accumulated, rate per image, predicted (one rate), one rate
    # rejected, predicted (varying rates), p (one rate against varying), theirs, verdict,
    # s per init.
    counts: pd.DataFrame
    checks: pd.DataFrame  # run, order, dtype, framework, split, p (one rate)
    segments: pd.DataFrame  # run, order, dtype, framework, split, segment, rate per image, p
    agreements: pd.DataFrame  # run, order, depth, width, batch, dtype, K, flagged by, inits
    # run, order, dtype, settings, flagged by, initialisations, p: the agreements summed over
    # settings of distinct weights (both, torch only, jax only), and both if independent
    independence: pd.DataFrame
    batches: pd.DataFrame  # run, order, dtype, framework, batch, K, flagged, shared with ...
    kernels: pd.DataFrame  # run, dtype, a, b, images, elements equal, rows equal
    headline: Headline | None
    runs: list[str]
    releases: dict = None  # label -> (torch, jax)
    older: list[str] = ()  # the runs that are older code (study.report.older_code)


# the independence listing's columns and row, which the checks table reads
SETTINGS = "settings with distinct weights"
EXPECTED_BOTH = "both, expected if independent"
P_BOTH = "p (more in both than independence gives)"


def setting_text(depth: int, width: int, batch: int) -> str:
    return f"{depth}×{width}, batch {batch}"


def merged_verdict(by_sweep: dict[str, str]) -> str:
    """One framework's verdicts against the paper's counts, one per sweep file: the label
    where they agree, else each label with its sweep."""
    if len(set(by_sweep.values())) == 1:
        return next(iter(by_sweep.values()))
    return ", ".join(f"{label} ({sweep})" for sweep, label in by_sweep.items())


def _predicted(values, n: int) -> Estimate:
    return Estimate(*(to_figures(v, PREDICTED_FIGURES) for v in values), n)


def _rows(run: str, e: SettingCount, rejected: bool | None) -> list[dict]:
    """One row per paper count of the setting (one row without theirs where it has none)."""
    depth, width, batch = e.setting
    k = e.papers[0]["inits"] if e.papers else None
    mix = e.mixture
    common = {"run": run, "order": e.order, "sweep": e.sweep, "depth": depth, "width": width,
              "batch": batch, "dtype": e.dtype, "framework": e.framework}
    values = {"K": e.inits, "count": binomial(e.count, e.inits), "accumulated": e.accumulated,
              "rate per image": Estimate(e.rate.rate, e.rate.lower, e.rate.upper, e.rate.inits),
              "predicted (one rate)": _predicted(e.predicted, e.inits),
              "one rate rejected": rejected,
              "predicted (varying rates)": _predicted(
                  (mix.fraction * k, mix.lower * k, mix.upper * k), e.inits) if mix and k else None,
              "p (one rate against varying)": mix.p_constant if mix else None}
    papers = e.papers or [None]
    return [{**common, "their sweep": p and p["sweep"], **values,
             "theirs": p and p["count"], "verdict": p and e.judged(p),
             "s per init": e.seconds_per_init} for p in papers]


def _rejected(checks: list[dict]) -> dict[tuple, bool]:
    """(order, dtype, framework) -> whether a constant-rate check at the headline rejects one
    rate; a pass with no p (no event) is not in it."""
    out: dict[tuple, bool] = {}
    for c in checks:
        if c["p (one rate)"] is not None:
            key = (c["order"], c["dtype"], c["framework"])
            out[key] = out.get(key, False) or c["p (one rate)"] < ONE_RATE_REJECTED_BELOW
    return out


def _counts(rc: Pass, checks: list[dict]) -> list[dict]:
    """The checks ran at the headline setting only: elsewhere whether one rate fits is unknown."""
    h = rc.headline
    rejected = _rejected(checks)
    return [row for e in rc.estimates for row in _rows(
        rc.run.tag, e, rejected.get((e.order, e.dtype, e.framework))
        if e.setting == (h["depth"], h["width"], h["batch"]) else None)]


def _per_framework(rows: pd.DataFrame, column: str) -> tuple:
    return tuple((fw, g.iloc[0][column]) for fw, g in rows.groupby("framework", sort=False)
                 if g.iloc[0][column] is not None)


def _headline(rc: Pass, counts: pd.DataFrame) -> Headline | None:
    h = rc.headline
    if not h or not len(counts):
        return None
    at = counts[(counts["run"] == rc.run.tag) & (counts["order"] == "mlxtend")
                & (counts["dtype"] == "float32") & (counts["depth"] == h["depth"])
                & (counts["width"] == h["width"]) & (counts["batch"] == h["batch"])]
    if not len(at):
        return None
    ind = independence(rc)
    papers = [p for e in rc.estimates if e.order == "mlxtend" and e.dtype == "float32"
              and e.setting == (h["depth"], h["width"], h["batch"]) for p in e.papers]
    verdicts = tuple((fw, merged_verdict(dict(zip(g["their sweep"], g["verdict"]))))
                     for fw, g in at.groupby("framework", sort=False) if g.iloc[0]["verdict"])
    return Headline(rc.run.tag, setting_text(h["depth"], h["width"], h["batch"]), rc.images,
                    at.iloc[0]["K"], papers[0]["images"] if papers else None,
                    papers[0]["inits"] if papers else None,
                    _per_framework(at, "count"), _per_framework(at, "predicted (one rate)"),
                    _per_framework(at, "predicted (varying rates)"),
                    tuple(fw for fw, flag in _per_framework(at, "one rate rejected") if flag),
                    tuple(sorted({t for t in at["theirs"] if t is not None})), verdicts,
                    ind.both if ind else None, ind.expected if ind else None,
                    ind.p_value if ind else None)


def _agreement(run: str, a: Agreement) -> list[dict]:
    """One row per way the two frameworks flag the same initialisations."""
    key = {"run": run, "order": a.order, "depth": a.setting[0], "width": a.setting[1],
           "batch": a.setting[2], "dtype": a.dtype, "K": a.inits}
    return [{**key, "flagged by": by, "initialisations": n}
            for by, n in (("both", a.both), ("both, in the same minibatch", a.same_minibatch),
                          ("torch only", a.torch_only), ("jax only", a.jax_only))]


def _segments(run: str, check: dict) -> list[dict]:
    return [{"run": run, **{k: check[k] for k in ("order", "dtype", "framework", "split")},
             "segment": label,
             "rate per image": Estimate(r.rate, r.lower, r.upper, r.inits),
             "p (one rate)": check["p (one rate)"]} for label, r in check["segments"]]


def summarise(runs) -> Summary:
    passes = read(runs)
    checks = {rc.run.tag: rate_checks(rc) for rc in passes}
    counts = [row for rc in passes for row in _counts(rc, checks[rc.run.tag])]
    agreements = [row for rc in passes for a in rc.agreements for row in _agreement(rc.run.tag, a)]
    batches = [{"run": rc.run.tag, **b} for rc in passes for b in batch_overlaps(rc)]
    kernels = [{"run": run.tag, "dtype": r["dtype"], "a": k["a"], "b": k["b"],
                "images": r["images"], "elements equal": k["elements_equal"],
                "rows equal": k["rows_equal"]}
               for run in runs for r in run.ok_rows() if r.get("part") == "kernel_probe"
               for k in r["pairs"]]
    largest = max(passes, key=lambda rc: sum(len(o.first) for o in rc.outcomes), default=None)
    together = [{"run": rc.run.tag, "order": i.order, "dtype": i.dtype,
                 SETTINGS: i.settings, "flagged by": by,
                 "initialisations": n, P_BOTH: i.p_value}
                for rc in passes if (i := independence(rc))
                for by, n in (("both", i.both), (EXPECTED_BOTH, i.expected),
                              ("torch only", i.torch_only), ("jax only", i.jax_only))]
    frame = lambda rows: pd.DataFrame(rows, dtype=object)  # noqa: E731
    counts_frame = frame(counts)
    return Summary(
        counts_frame,
        frame([{"run": run, **{k: v for k, v in c.items() if k != "segments"}}
               for run, cs in checks.items() for c in cs]),
        frame([row for run, cs in checks.items() for c in cs for row in _segments(run, c)]),
        frame(agreements), frame(together), frame(batches), frame(kernels),
        _headline(largest, counts_frame) if largest else None, [rc.run.tag for rc in passes],
        releases([rc.run for rc in passes]), older_code([rc.run for rc in passes]))

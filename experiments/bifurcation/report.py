"""The bifurcation count in the report: the headline against Bertoin et al. (Q4); the sweeps and
the constant-rate checks in the appendix."""
import pandas as pd

from experiments.bifurcation.summary import Summary
from study.experiment import Finding, Rendered
from study.report import Table, answer, frame, macros, say
from study.report.figures import count_bars

PROSE = macros("experiments/bifurcation/prose.j2")


def _side_by_side(rows: pd.DataFrame, keys: list[str]) -> pd.DataFrame:
    """One row per key, torch's and JAX's count and prediction side by side, the paper's counts
    of every sweep file merged."""
    out = []
    for key, g in rows.groupby(keys, sort=False):
        by = {r["framework"]: r for _, r in g.iterrows()}
        row = dict(zip(keys, key))
        row["K"] = g.iloc[0]["K"]
        for fw in ("torch", "jax"):
            if fw in by:
                row[f"{fw}: count"] = by[fw]["count"]
                row[f"{fw}: predicted at theirs"] = by[fw]["predicted at theirs"]
        theirs = sorted({c for t in g["theirs"] if t for c in t})
        row["theirs"] = theirs or None
        row["verdict"] = "; ".join(dict.fromkeys(f"{r['framework']}: {r['verdict']}" for _, r in g.iterrows()
                                                 if r["verdict"])) or None
        out.append(row)
    return frame(out)


def render(s: Summary) -> Rendered:
    tables, found, answers, figures = [], [], [], {}
    h = s.headline
    c = s.counts
    if h is not None:
        at = c[(c["order"] == "mlxtend") & (c["setting"] == h.setting)]
        tables.append(Table("headline", "Initialisations whose first-layer gradient depends on ReLU'(0), "
                            "against Bertoin et al.", say(PROSE, "caption_headline", h=h),
                            _side_by_side(at, ["run", "dtype"])))
        main = c[(c["run"] == h.run) & (c["order"] == "mlxtend") & (c["dtype"] == "float32")
                 & (c["sweep"] != "headline")]
        sweeps = _side_by_side(main, ["sweep", "setting"])
        tables.append(Table("sweeps", "Every setting of the paper's sweeps, float32",
                            say(PROSE, "caption_sweeps", run=h.run), sweeps))
        answers.append(answer(PROSE, "net", ("headline",), h=h))
        if h.both is not None:
            found.append(Finding(say(PROSE, "finding_both", h=h), "headline"))
        rows = sweeps.to_dict("records")
        figures["figures/bifurcation.png"] = (
            lambda: count_bars(rows, f"Initialisations of 1000 at 60000 images, float32, run {h.run}"),
            "Bifurcation counts per setting: the paper's published count beside torch's and JAX's "
            "predicted counts with their 95% intervals")
    checks = s.checks.drop(columns=["segments"]) if len(s.checks) else s.checks
    tables += [Table("checks", "Does one constant rate fit the pass?", say(PROSE, "caption_checks"),
                     checks, listing=s.checks),
               Table("counts", "Every setting, order, dtype and framework: counts, rates, predictions", "", c),
               Table("agreements", "The same initialisations in both frameworks", "", s.agreements),
               Table("batches", "The batch sweep: the same weights flagged at each batch size", "", s.batches),
               Table("kernels", "The first layer's pre-activations, kernel against kernel, bit for bit", "", s.kernels)]
    return Rendered(tables, found, figures, answers)

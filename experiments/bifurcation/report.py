"""The bifurcation count in the report: the headline against Bertoin et al. (Q4); the sweeps and
the constant-rate checks in the appendix."""
import pandas as pd

from experiments.bifurcation.summary import (EXPECTED_BOTH, ONE_RATE_REJECTED_BELOW, P_BOTH,
                                             SETTINGS, Summary, merged_verdict, setting_text)
from study.runs.experiment import Finding, Rendered
from study.report import Table, answer, frame, label_order, macros, say, side_by_side, text
from study.report.figures import count_bars

PROSE = macros("experiments/bifurcation/prose.j2")
FRAMEWORKS = ("torch", "jax")
PER_FRAMEWORK = ("count", "predicted (one rate)", "predicted (varying rates)")
HEADLINE_DTYPE = "float32"  # the paper's: every run's row in it, the headline run's in each dtype


def _side_by_side(rows: pd.DataFrame, keys: list[str]) -> pd.DataFrame:
    """One row per key: each framework's count and the two predictions whose intervals its
    verdict reads, the frameworks whose one rate the pass rejects, the paper's counts of every
    sweep file merged, and each framework's verdict."""
    out = []
    for key, g in rows.groupby(keys, sort=False):
        row = dict(zip(keys, key))
        row["K"] = g.iloc[0]["K"]
        tested, rejected, verdicts = False, [], []
        for fw in FRAMEWORKS:
            mine = g[g["framework"] == fw]
            if not len(mine):
                continue
            first = mine.iloc[0]
            row.update({f"{fw}: {column}": first[column] for column in PER_FRAMEWORK})
            tested |= first["one rate rejected"] is not None
            rejected += [fw] if first["one rate rejected"] else []
            judged = {sweep: v for sweep, v in zip(mine["their sweep"], mine["verdict"]) if v}
            verdicts += [f"{fw}: {merged_verdict(judged)}"] if judged else []
        row["one rate rejected"] = ", ".join(rejected) or ("none" if tested else None)
        row["theirs"] = sorted({t for t in g["theirs"] if t is not None}) or None
        row["verdict"] = "; ".join(verdicts) or None
        out.append(row)
    return frame(out)


def _in_label_order(rows: pd.DataFrame) -> pd.DataFrame:
    """The rows by run label, each run's in the order they came (stable)."""
    order = sorted(range(len(rows)), key=lambda i: label_order(rows["run"].iloc[i]))
    return rows.iloc[order]


def _checks(s: Summary) -> pd.DataFrame:
    """The constant-rate checks, and per run, order and dtype the initialisations both
    frameworks flag against independent flagging (a row 'both' of its own), runs in label
    order."""
    rows = s.checks.to_dict("records")
    for (run, order, dtype), g in (s.independence.groupby(["run", "order", "dtype"], sort=False)
                                   if len(s.independence) else []):
        by = dict(zip(g["flagged by"], g["initialisations"]))
        rows.append({"run": run, "order": order, "dtype": dtype, "framework": "both",
                     "split": say(PROSE, "independence_row", both=by.get("both"),
                                  expected=by.get(EXPECTED_BOTH), settings=g[SETTINGS].iloc[0]),
                     "p (one rate)": g[P_BOTH].iloc[0]})
    checks = frame(rows)
    return _in_label_order(checks).rename(columns={"split": "split or check",
                                                   "p (one rate)": "p"}) if rows else checks


def _with_setting(rows: pd.DataFrame) -> pd.DataFrame:
    return rows.assign(setting=[setting_text(*s) for s in
                                zip(rows["depth"], rows["width"], rows["batch"])])


def _figure_rows(sweeps: pd.DataFrame) -> list[dict]:
    """The sweeps as count_bars reads them: the one-rate prediction beside the paper's counts."""
    return [{"sweep": r["sweep"], "setting": r["setting"], "theirs": r["theirs"],
             **{f"{fw}: predicted at theirs": r.get(f"{fw}: predicted (one rate)")
                for fw in FRAMEWORKS}} for r in sweeps.to_dict("records")]


def _apart(sweeps: pd.DataFrame) -> bool:
    """Whether, in the batch sweep, one framework's identical counts predict different counts at
    different batch sizes (as printed): what the sweeps caption explains where it happens."""
    if not len(sweeps) or "sweep" not in sweeps.columns:
        return False
    batch = sweeps[sweeps["sweep"] == "batch"]
    for fw in FRAMEWORKS:
        count = f"{fw}: count"
        if count not in batch.columns:
            continue
        predicted: dict[str, set] = {}
        for _, r in batch.iterrows():
            predicted.setdefault(text(r[count]), set()).add(
                tuple(text(r.get(f"{fw}: {p}")) for p in PER_FRAMEWORK[1:]))
        if any(len(p) > 1 for p in predicted.values()):
            return True
    return False


def render(s: Summary) -> Rendered:
    tables, found, answers, figures = [], [], [], {}
    h = s.headline
    if h is not None:
        c = _with_setting(s.counts)
        at = _in_label_order(c[(c["order"] == "mlxtend") & (c["setting"] == h.setting)])
        shown = at[(at["run"] == h.run) | (at["dtype"] == HEADLINE_DTYPE)]  # the rest: the CSV
        tables.append(Table("headline", say(PROSE, "title_headline"),
                            say(PROSE, "caption_headline", h=h, below=ONE_RATE_REJECTED_BELOW,
                                dtype=HEADLINE_DTYPE, older=s.older),
                            side_by_side(_side_by_side(shown, ["run", "dtype"]), s.runs),
                            listing=s.counts.loc[at.index]))
        main = c[(c["run"] == h.run) & (c["order"] == "mlxtend") & (c["dtype"] == "float32")
                 & (c["sweep"] != "headline")]
        sweeps = _side_by_side(main, ["sweep", "setting"])
        tables.append(Table("sweeps", say(PROSE, "title_sweeps"),
                            say(PROSE, "caption_sweeps", run=h.run, older=s.older,
                                apart=_apart(sweeps)), sweeps,
                            listing=s.counts.loc[main.index]))
        answers.append(answer(PROSE, "net", ("headline",), h=h, releases=s.releases,
                              older=s.older))
        if h.both is not None:
            found.append(Finding(say(PROSE, "finding_both", h=h, older=s.older), "checks"))
        rows = _figure_rows(sweeps)
        title = say(PROSE, "figure", h=h)
        figures["figures/bifurcation.png"] = (lambda: count_bars(rows, title),
                                              say(PROSE, "alt"))
    tables += [
        Table("checks", say(PROSE, "title_checks"),
              say(PROSE, "caption_checks", below=ONE_RATE_REJECTED_BELOW), _checks(s),
              listing=s.segments),
        *(Table(name, say(PROSE, f"title_{name}"), "", rows) for name, rows in (
            ("counts", s.counts), ("agreements", s.agreements),
            ("independence", s.independence), ("batches", s.batches),
            ("kernels", s.kernels)))]
    return Rendered(tables, found, figures, answers)

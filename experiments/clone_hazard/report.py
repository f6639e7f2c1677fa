"""Seed 000's clone in the report: one table of graphs (Q3)."""
import numpy as np
import pandas as pd

from experiments.clone_hazard.summary import BUILTIN, SEED_RULE, Summary
from study.runs.experiment import Rendered
from study.report import Table, answer, frame, macros, say, side_by_side

PROSE = macros("experiments/clone_hazard/prose.j2")
GRADIENTS = (BUILTIN, SEED_RULE, "in-place rule")


def _listing(rows: pd.DataFrame) -> pd.DataFrame:
    """One row per case, rule and element of its gradient (the verdicts repeated beside it)."""
    verdicts = [c for c in rows.columns if c not in GRADIENTS + ("run", "case")]
    out = []
    for _, r in rows.iterrows():
        head = {"run": r["run"], "case": r["case"]}
        verdict = {c: r[c] for c in verdicts}
        for rule in GRADIENTS:
            if r.get(rule) is None:
                continue
            out += [{**head, "gradient of": rule, "element": i, "value": float(v), **verdict}
                    for i, v in enumerate(np.ravel(np.asarray(r[rule], np.float64)))]
    return frame(out)


def hazard(s: Summary) -> Table:
    rows = pd.concat([s.cases, s.at_zero], ignore_index=True).astype(object)
    rows = rows.where(rows.notna(), None)
    return Table("hazard", say(PROSE, "title_hazard"), say(PROSE, "caption"),
                 side_by_side(rows, s.runs), listing=_listing(rows))


def render(s: Summary) -> Rendered:
    answers = []
    if s.facts:
        z = s.at_zero.iloc[0] if len(s.at_zero) else None
        first = next((f for f in s.facts if f.run == s.main), s.facts[0])
        alike = [f.run for f in s.facts if (f.wrong, f.silent, f.warned, f.gradcheck, f.anomaly)
                 == (first.wrong, first.silent, first.warned, first.gradcheck, first.anomaly)]
        answers.append(answer(PROSE, "clone", ("hazard",), fact=first, runs=alike,
                              releases=s.releases, older=s.older,
                              zero=None if z is None else (z[SEED_RULE][0], z[BUILTIN][0])))
    return Rendered([hazard(s)], answers=answers)

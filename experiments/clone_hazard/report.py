"""Seed 000's clone in the report: one table of graphs (Q3)."""
import pandas as pd

from experiments.clone_hazard.summary import Summary
from study.experiment import Rendered
from study.report import Table, answer, macros, say, side_by_side

PROSE = macros("experiments/clone_hazard/prose.j2")


def hazard(s: Summary) -> Table:
    rows = pd.concat([s.cases, s.at_zero], ignore_index=True).astype(object)
    rows = rows.where(rows.notna(), None)
    return Table("hazard", "The clone in seed 000's MyReLU: editing grad_output in place, graph by graph",
                 say(PROSE, "caption"), side_by_side(rows, s.runs))


def render(s: Summary) -> Rendered:
    answers = []
    if s.facts:
        z = s.at_zero.iloc[0] if len(s.at_zero) else None
        answers.append(answer(PROSE, "clone", ("hazard",), fact=s.facts[0],
                              zero=None if z is None else (z["seed rule (clones)"][0], z["correct"][0])))
    return Rendered([hazard(s)], answers=answers)

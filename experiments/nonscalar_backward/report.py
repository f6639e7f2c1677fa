"""Seed 002 in the report: torch beside JAX, step by step."""
from experiments.nonscalar_backward.summary import Summary
from study.experiment import Finding, Rendered
from study.report import Table, macros, say, side_by_side, shorten

PROSE = macros("experiments/nonscalar_backward/prose.j2")


def render(s: Summary) -> Rendered:
    view = s.steps.copy()
    for column in ("torch a.grad", "JAX"):  # an error line, cut to its message's start
        view[column] = [shorten(v, 70) if isinstance(v, str) else v for v in view[column]]
    table = Table("side_by_side", "Seed 002: backward on a non-scalar output, torch beside JAX",
                  say(PROSE, "caption", a=s.a), side_by_side(view, s.runs), listing=s.steps)
    found = [Finding(say(PROSE, "finding", p=s.passes), "side_by_side")] if s.passes else []
    return Rendered([table], found)

"""Seed 002 in the report: torch beside JAX, step by step."""
import numpy as np

from study.compare.cells import Error

from experiments.nonscalar_backward.summary import Summary
from study.runs.experiment import Finding, Rendered
from study.report import Table, frame, macros, say, shorten, side_by_side

PROSE = macros("experiments/nonscalar_backward/prose.j2")
RESULTS = ("torch a.grad", "JAX", "chain rule")


def _listing(steps) -> list[dict]:
    """One row per run, step, source and element (i, j) of its result, or one with its error."""
    rows = []
    for _, r in steps.iterrows():
        for source in RESULTS:
            head = {"run": r["run"], "step": r["step"], "result of": source}
            got = r[source]
            if got is None or isinstance(got, Error):
                error = got.line if got is not None else say(PROSE, "no_chain_rule")
                rows.append({**head, "error": error, "i": None, "j": None, "value": None})
                continue
            rows += [{**head, "error": None, "i": int(i), "j": int(j), "value": float(v)}
                     for (i, j), v in np.ndenumerate(np.asarray(got, np.float64))]
    return rows


def render(s: Summary) -> Rendered:
    view = s.steps.copy()
    for column in ("torch a.grad", "JAX"):  # an error line, cut to its message's start
        view[column] = [shorten(v.line, 70) if isinstance(v, Error) else v for v in view[column]]
    view["chain rule"] = [say(PROSE, "no_chain_rule") if v is None else v
                          for v in view["chain rule"]]
    table = Table("side_by_side", say(PROSE, "title_side_by_side"),
                  say(PROSE, "caption", a=s.a), side_by_side(view, s.runs),
                  listing=frame(_listing(s.steps), ["run", "step", "result of", "error", "i", "j",
                                                    "value"]))
    found = [Finding(say(PROSE, "finding", p=s.passes), "side_by_side")] if s.passes else []
    return Rendered([table], found)

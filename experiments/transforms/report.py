"""Transforms in the report: the survival matrix (Q6)."""
import pandas as pd

from experiments.transforms.summary import Summary
from study.experiment import Rendered
from study.report import Table, answer, macros, say, shorten, side_by_side

PROSE = macros("experiments/transforms/prose.j2")
SYMBOLS = {"ok": "✓", "n/a": "—", "wrong": "✗w"}


def _fixes(run: pd.DataFrame) -> dict[int, str]:
    """For each row, each failing column and the row of a custom style of the same framework
    and convention that passes it."""
    out = {}
    for number, style in run.groupby("number", sort=False):
        first = style.iloc[0]
        mates = run[(run["framework"] == first["framework"]) & ~run["builtin"].astype(bool)
                    & (run["convention"] == first["convention"]) & (run["status"] == "ok")]
        fixes = [f"{c}: #{min(mates[mates['transformation'] == c]['number'], default='none')}"
                 for c in style[style["status"].isin(["error", "wrong"])]["transformation"]]
        out[number] = "; ".join(fixes).replace("#none", "none") or "—"
    return out


def matrix(s: Summary) -> Table:
    codes = {d: f"E{i}" for i, d in enumerate(dict.fromkeys(
        s.cells[s.cells["status"] == "error"]["detail"]), 1)}
    rows = []
    for run, cells in s.cells.groupby("run", sort=False):
        fixes = _fixes(cells)
        for number, style in cells.groupby("number", sort=False):
            marks = {c["transformation"]: f"✗{codes[c['detail']]}" if c["status"] == "error"
                     else SYMBOLS[c["status"]] for _, c in style.iterrows()}
            rows.append({"run": run, "#": number, "style": style.iloc[0]["style"], **marks,
                         "how to make it work": fixes[number]})
    notes = ["Errors: " + "; ".join(f"{code}: {shorten(d, 110)}" for d, code in codes.items())] if codes else []
    return Table("matrix", "Transformations each custom-rule style survives", say(PROSE, "caption", backends=s.backends),
                 side_by_side(pd.DataFrame(rows, dtype=object), s.runs), listing=s.cells, notes=notes)


def render(s: Summary) -> Rendered:
    facts = next(iter(s.survival.values()), None)
    answers = [answer(PROSE, "transforms", ("matrix",), facts=facts)] if facts else []
    return Rendered([matrix(s)], answers=answers)

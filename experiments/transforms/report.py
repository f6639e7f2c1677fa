"""Transforms in the report: the survival matrix (Q6)."""
import re

import numpy as np
import pandas as pd

from experiments.transforms.summary import Summary
from study.runs.experiment import Rendered
from study.report import Table, answer, frame, macros, say, shorten, side_by_side
from study.report.table import elements

PROSE = macros("experiments/transforms/prose.j2")
SYMBOLS = {"ok": "✓", "n/a": "—", "wrong": "✗w"}
UNSHOWN = "(✓)"  # matches, but so did a rule the transformation bypassed


def _mark(cell, codes: dict) -> str:
    if cell["status"] == "error":
        return f"✗{codes[cell['detail']]}"
    return UNSHOWN if cell["shown"] is False else SYMBOLS[cell["status"]]


def _fix_texts(s: Summary) -> dict[tuple, str]:
    """(run, number) -> each failed transformation and the style of ours that passes it."""
    out: dict[tuple, list] = {}
    for _, f in s.fixes.iterrows():
        fix = "none" if f["fix"] is None else f"#{f['fix']}"
        out.setdefault((f["run"], f["number"]), []).append(f"{f['transformation']}: {fix}")
    return {k: "; ".join(v) for k, v in out.items()}


def _listing(cells: pd.DataFrame) -> pd.DataFrame:
    """One row per element of each cell's value (i, j: its position), or one with the error."""
    rows = []
    for c in cells.to_dict("records"):
        head = {k: v for k, v in c.items() if k != "detail"}
        if not isinstance(c["detail"], list):  # an error line, or n/a's "no such API"
            rows.append({**head, "error": c["detail"] if c["status"] == "error" else None,
                         "i": None, "j": None, "value": None})
            continue
        rows += [{**head, "error": None, "i": i, "j": j, "value": v}
                 for i, j, v in elements(np.asarray(c["detail"], np.float64))]
    return frame(rows)


def _error_texts(codes: dict[str, str], short: int = 52, long: int = 110) -> list[tuple]:
    """(code, its error's first words): `short` characters, `long` where two would read alike."""
    texts = {d: shorten(d, short) for d in codes}
    alike = {t for t in texts.values() if list(texts.values()).count(t) > 1}
    return [(code, shorten(d, long) if texts[d] in alike else texts[d])
            for d, code in codes.items()]


# a class of the study's own that an error line names (ReLUJvp, ReLUOnce): the note says whose
_CLASS = re.compile(r"\bReLU[A-Z]\w*")


def _classes_said(text: str, numbers: list) -> str:
    """The error's text, with each study class it names tied to the styles (#) it is raised for."""
    named = list(dict.fromkeys(_CLASS.findall(text)))
    if not named or not numbers:
        return text
    styles = ", ".join(f"#{n}" for n in numbers)  # the matrix's style numbers
    return f"{text} ({', '.join(named)}: our class for {styles})"


def matrix(s: Summary) -> Table:
    codes = {d: f"E{i}" for i, d in enumerate(dict.fromkeys(
        s.cells[s.cells["status"] == "error"]["detail"]), 1)}
    fixes = _fix_texts(s) if len(s.cells) else {}
    rows = []
    for run, cells in s.cells.groupby("run", sort=False):
        for number, style in cells.groupby("number", sort=False):
            marks = {c["transformation"]: _mark(c, codes) for _, c in style.iterrows()}
            rows.append({"run": run, "#": number, "style": style.iloc[0]["style"], **marks,
                         "how to make it work": fixes.get((run, number), "—")})
    errors = [c for c in s.cells.to_dict("records") if c["status"] == "error"]
    numbers = {d: list(dict.fromkeys(c["number"] for c in errors if c["detail"] == d))
               for d in codes}
    detail = {code: d for d, code in codes.items()}
    notes = ["Errors: " + "; ".join(f"{code}: {_classes_said(text, numbers[detail[code]])}"
                                    for code, text in _error_texts(codes))] if codes else []
    return Table("matrix", say(PROSE, "title_matrix"),
                 say(PROSE, "caption", backends=s.backends),
                 side_by_side(pd.DataFrame(rows, dtype=object), s.runs),
                 listing=_listing(s.cells) if len(s.cells) else None, notes=notes)


def render(s: Summary) -> Rendered:
    facts = s.survival.get(s.main) or next(iter(s.survival.values()), None)
    alike = [run for run, f in s.survival.items() if f == facts]
    answers = [answer(PROSE, "transforms", ("matrix",), facts=facts, runs=alike,
                      releases=s.releases, older=s.older)] if facts else []
    return Rendered([matrix(s)], answers=answers)

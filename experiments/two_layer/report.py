"""Seed 001's net in the report: the ties table (Q1), the seed's relu − rule table (Q4)."""
import numpy as np
import pandas as pd

from experiments.two_layer.summary import ARITHMETIC, Summary
from study.runs.experiment import Answer, Rendered
from study.report import Table, answer, frame, label_order, macros, say, shorten, side_by_side
from study.report.table import elements

PROSE = macros("experiments/two_layer/prose.j2")
PARAMETERS = ("grad_w1", "grad_w2")


def _elements(array) -> list[tuple]:
    """(i, j, value) of a 1-d (j None) or 2-d array, row by row: one CSV row per element."""
    return elements(np.asarray(array))


def ties(s: Summary) -> Table:
    order = list(ARITHMETIC) + [d for d in dict.fromkeys(s.gaps["dataset"]) if d not in ARITHMETIC]
    long = s.gaps.drop(columns=["conventions"]).iloc[sorted(
        range(len(s.gaps)), key=lambda i: (order.index(s.gaps["dataset"].iloc[i]),
                                           label_order(s.gaps["run"].iloc[i])))]
    view = long.rename(columns={
        "shape": "input shape", "zeros": "exact zeros", "vs_reference": "max |Δ| vs torch.relu",
        "same_framework": "same convention, same framework",
        "signs_same_framework": "±0 elements, same framework",
        "across": "same convention, torch vs JAX", "signs_across": "±0 elements, torch vs JAX",
        "across_ulps": "torch vs JAX (ulp)",
        "scale": "max |grad|"})
    return Table("ties", say(PROSE, "title_ties"), say(PROSE, "caption_ties"),
                 side_by_side(view.reset_index(drop=True), s.runs),
                 listing=long.reset_index(drop=True))


def _seed_rows(s: Summary) -> pd.DataFrame:
    return s.gradients[s.gradients["dataset"] == "seed"]


def _records(rows: pd.DataFrame) -> list[dict]:
    """The rows as dicts of their cells, which are looked up by the thousand: a row Series is
    slow at that."""
    return rows.to_dict("records")


def _diff_rows(s: Summary) -> tuple[list[dict], list[dict]]:
    """The view's rows (rules that give the same Δ grouped) and the listing's (one per rule and
    element)."""
    rows, listing = [], []
    for run, group in _seed_rows(s).groupby("run", sort=False):
        records = _records(group)
        ref = {r["rule"]: r for r in records}
        by: dict[tuple, list] = {}
        for r in records:
            base = ref.get(r["reference"])
            d1, d2 = ((np.subtract(base[p], r[p]).tolist() if base is not None else None)
                      for p in PARAMETERS)
            by.setdefault((r["framework"], r["at_0"], str(d1), str(d2)),
                          [d1, d2, []])[2].append(r["name"])
            head = {"run": run, "framework": r["framework"], "rule": r["rule"], "name": r["name"],
                    "d/dx at 0": r["at_0"], "reference": r["reference"]}
            listing += [{**head, "parameter": p, "i": i, "j": j, "Δ": v}
                        for p, d in zip(PARAMETERS, (d1, d2)) if d is not None
                        for i, j, v in _elements(d)]
        rows += [{"run": run, "framework": fw, "d/dx at 0": at0, "Δ grad w1": d1, "Δ grad w2": d2,
                  "rules": len(names), "which": shorten(", ".join(names), 120)}
                 for (fw, at0, _, _), (d1, d2, names) in by.items()]
    return rows, listing


def diff(s: Summary) -> Table:
    rows, listing = _diff_rows(s)
    return Table("diff_vs_relu", say(PROSE, "title_diff_vs_relu"), say(PROSE, "caption_diff"),
                 side_by_side(frame(rows), s.runs),
                 listing=frame(listing))


def gradients(s: Summary) -> Table:
    keys = ("run", "framework", "rule", "name", "kind", "convention", "at_0")
    listing = []
    for r in _records(_seed_rows(s)):
        head = {k: r[k] for k in keys}
        listing.append({**head, "quantity": "loss", "i": None, "j": None, "value": r["loss"]})
        listing += [{**head, "quantity": p, "i": i, "j": j, "value": v}
                    for p in PARAMETERS for i, j, v in _elements(r[p])]
    return Table("gradients", say(PROSE, "title_gradients"), "", frame(listing))


def _answers(s: Summary) -> list[Answer]:
    if s.twins is None:
        return []
    groups: dict[tuple, list] = {}
    for f in s.seed:
        groups.setdefault((f.value, f.at, f.clamp_at_0, f.relu_at_0), []).append(f.run)
    ordered = sorted(groups.items(), key=lambda kv: -len(kv[1]))
    net = say(PROSE, "answer_net", groups=[
        {"value": v, "at": list(at), "clamp": c, "relu": r, "runs": who}
        for (v, at, c, r), who in ordered], releases=s.releases, older=s.older)
    return [answer(PROSE, "twins", ("ties",), t=s.twins, older=s.older),
            Answer("net", net, ("diff_vs_relu",))]


def render(s: Summary) -> Rendered:
    return Rendered([ties(s), diff(s), gradients(s)], answers=_answers(s))

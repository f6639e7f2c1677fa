"""Seed 001's net in the report: the ties table (Q1), the seed's relu − rule table (Q4)."""
import numpy as np

from experiments.two_layer.summary import Summary
from study.experiment import Answer, Rendered
from study.report import Table, frame, macros, say, shorten, side_by_side, span

PROSE = macros("experiments/two_layer/prose.j2")


def ties(s: Summary) -> Table:
    g = s.gaps.rename(columns={
        "x_shape": "x shape", "zeros": "exact zeros", "vs_reference": "max |Δ| vs torch.relu",
        "same_framework": "same convention, same framework",
        "across": "same convention, torch vs JAX", "across_ulps": "torch vs JAX (ulp)",
        "scale": "max |grad|"})
    return Table("ties", "Where gradients differ: ties at 0, and matmul rounding across frameworks",
                 say(PROSE, "caption_ties"), side_by_side(g.drop(columns=["conventions"]), s.runs))


def _diff_rows(s: Summary) -> list[dict]:
    seed = s.gradients[s.gradients["dataset"] == "seed"]
    rows = []
    for run, group in seed.groupby("run", sort=False):
        ref = {r["rule"]: r for _, r in group.iterrows()}
        by: dict[tuple, list] = {}
        for _, r in group.iterrows():
            base = ref.get(r["reference"])
            d1 = np.subtract(base["grad_w1"], r["grad_w1"]).tolist() if base is not None else None
            d2 = np.subtract(base["grad_w2"], r["grad_w2"]).tolist() if base is not None else None
            by.setdefault((r["framework"], r["at_0"], str(d1), str(d2)), [d1, d2, []])[2].append(r["name"])
        rows += [{"run": run, "framework": fw, "d/dx at 0": at0, "Δ grad w1": d1, "Δ grad w2": d2,
                  "rules": len(names), "which": shorten(", ".join(names), 120)}
                 for (fw, at0, _, _), (d1, d2, names) in by.items()]
    return rows


def diff(s: Summary) -> Table:
    return Table("diff_vs_relu", "Seed 001: the framework's relu minus each rule",
                 say(PROSE, "caption_diff"), side_by_side(frame(_diff_rows(s)), s.runs))


def gradients(s: Summary) -> Table:
    seed = s.gradients[s.gradients["dataset"] == "seed"]
    return Table("gradients", "Every rule's loss and gradients on seed 001's net", "",
                 seed.drop(columns=["x_shape", "dataset"]))


def _answers(s: Summary) -> list[Answer]:
    g = s.gaps
    if g.empty:
        return []
    tied = g[g["zeros"] > 0]["across"]
    free = g[(g["zeros"] == 0) & (g["across"] > 0)]
    worst = free.loc[free["across"].astype(float).idxmax()] if len(free) else None
    twins = say(PROSE, "answer_twins", within=max(g["same_framework"]),
                tied=max(tied) if len(tied) else None,
                across=None if worst is None else worst["across"],
                ulps=None if worst is None else worst["across_ulps"],
                scale=None if worst is None else worst["scale"])
    groups: dict[tuple, list] = {}
    for f in s.seed:
        groups.setdefault((f.value, f.at, f.clamp_at_0, f.relu_at_0), []).append(f.run)
    ordered = sorted(groups.items(), key=lambda kv: -len(kv[1]))
    net = say(PROSE, "answer_net", groups=[
        {"value": v, "at": list(at), "clamp": c, "relu": r,
         "runs": span(who) if len(who) > 1 else s.titles.get(who[0], who[0])}
        for (v, at, c, r), who in ordered])
    return [Answer("twins", twins, ("ties",)), Answer("net", net, ("diff_vs_relu",))]


def render(s: Summary) -> Rendered:
    return Rendered([ties(s), diff(s), gradients(s)], answers=_answers(s))

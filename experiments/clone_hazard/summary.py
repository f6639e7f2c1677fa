"""Seed 000's clone, summarised: one row per graph and run, and the seed rule at exactly 0."""
from dataclasses import dataclass

import pandas as pd


@dataclass(frozen=True)
class Hazard:
    """What editing grad_output in place did over one run's graphs."""
    run: str
    total: int
    wrong: tuple[str, ...]
    silent: tuple[str, ...]  # wrong with neither a warning nor an error
    warned: tuple[str, ...]  # wrong with only a warning
    gradcheck: int  # wrong cases gradcheck flags
    anomaly: int  # wrong cases detect_anomaly catches


@dataclass
class Summary:
    cases: pd.DataFrame  # run, case, correct, seed rule, in-place rule, silently wrong, warning, error, gradcheck, detect_anomaly, jax correct
    at_zero: pd.DataFrame  # run, seed rule at +0, at −0, torch.relu at 0 (float32)
    facts: list[Hazard]
    runs: list[str]


def summarise(runs) -> Summary:
    cases, zero, facts = [], [], []
    for run in runs:
        recs = [r for r in run.ok_records() if "correct" in r]
        for r in recs:
            cases.append({"run": run.tag, "case": r["case"], "correct": r["correct"],
                          "seed rule (clones)": r["cloning_rule"], "in-place rule": r["inplace_rule"],
                          "silently wrong": r["silently_wrong"] and not r["warning"] and not r["error"],
                          "warning or error": r["warning"] or r["error"],
                          "gradcheck catches": r["gradcheck_catches"],
                          "detect_anomaly catches": r["detect_anomaly_catches"],
                          "JAX rule correct": r["jax_matches"]})
        zero += [{"run": run.tag, "case": "x = +0, −0 (float32)", "correct": [r["builtin_at_0"]] * 2,
                  "seed rule (clones)": [r["seed_rule_at_0"], r["seed_rule_at_minus_0"]]}
                 for r in run.ok_records() if "seed_rule_at_0" in r]
        wrong = [r for r in recs if r["silently_wrong"]]  # the record's name: wrong, warned or not
        if recs:
            facts.append(Hazard(run.tag, len(recs), tuple(r["case"] for r in wrong),
                                tuple(r["case"] for r in wrong if not r["warning"] and not r["error"]),
                                tuple(r["case"] for r in wrong if r["warning"] and not r["error"]),
                                sum(r["gradcheck_catches"] is True for r in wrong),
                                sum(bool(r["detect_anomaly_catches"]) for r in wrong)))
    return Summary(pd.DataFrame(cases, dtype=object), pd.DataFrame(zero, dtype=object), facts,
                   [run.tag for run in runs])

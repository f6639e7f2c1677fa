"""Seed 000's clone, summarised: one row per graph and run, and the seed rule at exactly 0."""
from dataclasses import dataclass

import pandas as pd

from study.compare.cells import Error
from study.report import main_run, older_code, releases


BUILTIN = "torch.relu"  # off x = 0, where every row but AT_ZERO's is, the chain rule's gradient
SEED_RULE = "seed rule (clones)"
AT_ZERO = "d/dx at x = +0, −0 (float32)"


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
    # run, case, torch.relu, seed rule, in-place rule, silently wrong, warning, error, gradcheck,
    # detect_anomaly, JAX rule = torch.relu (gradients w.r.t. x, float64, x without a 0)
    cases: pd.DataFrame
    at_zero: pd.DataFrame  # run, case, torch.relu and the seed rule at +0 and −0 (float32)
    facts: list[Hazard]
    runs: list[str]
    releases: dict = None  # label -> (torch, jax)
    main: str | None = None  # the main run's label (study.report.main_run)
    older: list[str] = ()  # the runs that are older code (study.report.older_code)


def _or_error(value, error: str | None):
    return Error(error) if error is not None else value


def summarise(runs) -> Summary:
    cases, zero, facts = [], [], []
    for run in runs:
        recs = run.ok("cases")
        for r in recs:
            cases.append({"run": run.tag, "case": r["case"], BUILTIN: r["correct"],
                          SEED_RULE: r["cloning_rule"], "in-place rule": r["inplace_rule"],
                          "silently wrong": r["silently_wrong"] and not r["warning"]
                          and not r["error"],
                          "warning or error": r["warning"] or r["error"],
                          "gradcheck catches": _or_error(r["gradcheck_catches"],
                                                         r.get("gradcheck_error")),
                          "detect_anomaly catches": r["detect_anomaly_catches"],
                          "JAX rule = torch.relu": r["jax_matches"]})
        zero += [{"run": run.tag, "case": AT_ZERO, BUILTIN: [r["builtin_at_0"]] * 2,
                  SEED_RULE: [r["seed_rule_at_0"], r["seed_rule_at_minus_0"]]}
                 for r in run.ok("at_zero")]
        wrong = [r for r in recs if r["silently_wrong"]]  # the record's name: wrong, warned or not
        if recs:
            facts.append(Hazard(run.tag, len(recs), tuple(r["case"] for r in wrong),
                                tuple(r["case"] for r in wrong
                                      if not r["warning"] and not r["error"]),
                                tuple(r["case"] for r in wrong if r["warning"] and not r["error"]),
                                sum(r["gradcheck_catches"] is True for r in wrong),
                                sum(bool(r["detect_anomaly_catches"]) for r in wrong)))
    return Summary(pd.DataFrame(cases, dtype=object), pd.DataFrame(zero, dtype=object), facts,
                   [run.tag for run in runs], releases(runs),
                   getattr(main_run(list(runs)), "tag", None), older_code(list(runs)))

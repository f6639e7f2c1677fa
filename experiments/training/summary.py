"""Training, summarised: one row per run, dataset, dtype, framework and rule, and per dtype the
step where ReLU'(0) = 1 leaves the ReLU'(0) = 0 run."""
from dataclasses import dataclass

import pandas as pd

from study.report import main_run, older_code, releases


@dataclass
class Summary:
    # run, data, dtype, framework, rule, c, first step ≠ c=0 run, final loss, accuracy, zero hits,
    # zero-hit fraction, first step ≠ other framework, max |Δparam| vs other framework
    trainings: pd.DataFrame
    # run, data, dtype, torch: c=1 leaves c=0 at step, jax: the same, zero hits, accuracy
    # lowest/highest, accuracy spread
    divergence: pd.DataFrame
    settings: dict[str, dict]  # data -> how it was trained, as the records state it
    runs: list[str]
    releases: dict = None  # label -> (torch, jax)
    main: str | None = None  # the main run's label (study.report.main_run)
    older: list[str] = ()  # the runs that are older code (study.report.older_code)
    withdrawn: dict = None  # data -> the runs whose rows of it an erratum withdrew


def _row(run: str, r: dict) -> dict:
    zeros = sum(r["zero_preacts"])
    return {"run": run, "data": r["dataset"], "dtype": r["dtype"], "framework": r["framework"],
            "rule": r["name"], "c": r["c"],
            "first step ≠ c=0 run": r["first_step_differs_from_c0"],
            "final loss": r["losses"][-1], "accuracy": r["accuracy"], "zero hits": zeros,
            "zero-hit fraction": zeros / (r["preacts_per_step"] * r["steps"]),
            "first step ≠ other framework": r["first_step_differs_from_other_framework"],
            "max |Δparam| vs other framework": r["max_param_diff_other_framework"]}


def _of(rows: dict, framework: str, column: str):
    return rows[framework][column] if framework in rows else None


def _divergence(t: pd.DataFrame) -> list[dict]:
    rows = []
    for (run, data, dtype), g in t.groupby(["run", "data", "dtype"], sort=False):
        c1 = {r["framework"]: r for _, r in g[g["c"] == 1.0].iterrows()}
        accuracy = [a for a in g["accuracy"] if a is not None]
        rows.append({"run": run, "data": data, "dtype": dtype,
                     "torch: c=1 leaves c=0 at step": _of(c1, "torch", "first step ≠ c=0 run"),
                     "jax: c=1 leaves c=0 at step": _of(c1, "jax", "first step ≠ c=0 run"),
                     "exact zeros hit (torch c=1)": _of(c1, "torch", "zero hits"),
                     "held-out accuracy, lowest": min(accuracy, default=None),
                     "highest": max(accuracy, default=None),
                     "spread": max(accuracy) - min(accuracy) if accuracy else None})
    return rows


def summarise(runs) -> Summary:
    recs = [(run.tag, r) for run in runs for r in run.ok_rows()]
    trainings = pd.DataFrame([_row(tag, r) for tag, r in recs], dtype=object)
    return Summary(trainings, pd.DataFrame(_divergence(trainings) if recs else [], dtype=object),
                   {r["dataset"]: r["settings"] for _, r in recs}, [run.tag for run in runs],
                   releases(runs), getattr(main_run(runs), "tag", None), older_code(runs),
                   _withdrawn(runs))


def _withdrawn(runs) -> dict:
    out: dict[str, list[str]] = {}
    for run in runs:
        for r in run.records:
            if "withdrawn" in r and r.get("dataset") and run.tag not in out.get(r["dataset"], []):
                out.setdefault(r["dataset"], []).append(run.tag)
    return out

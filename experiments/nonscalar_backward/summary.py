"""Seed 002, summarised: each step's result in torch and JAX beside the chain rule."""
from dataclasses import dataclass

import numpy as np
import pandas as pd

from study.compare.cells import Error


@dataclass(frozen=True)
class Passes:
    """Where the two frameworks part, over every run: the steps that raise in both, and the
    steps whose results differ, with what each framework gave (the first run's)."""
    raise_in_both: tuple[str, ...]
    differ: tuple[tuple[str, object, object], ...]  # (step, torch a.grad, JAX)


@dataclass
class Summary:
    # run, step, torch a.grad, JAX (each an array, or the Error it raised), chain rule (an array,
    # or None: no gradient, the output is not a scalar)
    steps: pd.DataFrame
    a: list | None
    passes: Passes | None
    runs: list[str]


def _passes(steps: pd.DataFrame) -> Passes | None:
    facts = {}
    for _, run in steps.groupby("run", sort=False):
        both = tuple(r["step"] for _, r in run.iterrows()
                     if isinstance(r["torch a.grad"], Error) and isinstance(r["JAX"], Error))
        differ = tuple((r["step"], r["torch a.grad"], r["JAX"]) for _, r in run.iterrows()
                       if r["step"] not in both and not np.array_equal(r["torch a.grad"], r["JAX"]))
        fact = Passes(both, differ)
        facts[repr(fact)] = fact
    return next(iter(facts.values())) if len(facts) == 1 else None


def _result(row: dict | None):
    """What a step gave: its array, or the Error it raised."""
    if row is None:
        return None
    return Error(row["error"]) if row["error"] is not None else row["result"]


def summarise(runs) -> Summary:
    rows, a, chain = [], None, {}
    for run in runs:
        got = {(r["framework"], r["step"]): r for r in run.ok("steps")}
        for step in dict.fromkeys(r["step"] for r in run.ok("steps")):
            first = got.get(("torch", step)) or got.get(("jax", step))
            a = a or first["a"]
            chain[step] = chain.get(step) or first.get("chain_rule")
            rows.append({"run": run.tag, "step": step,
                         "torch a.grad": _result(got.get(("torch", step))),
                         "JAX": _result(got.get(("jax", step))), "chain rule": None})
    for row in rows:  # the chain rule is the same for every run; older runs did not record it
        row["chain rule"] = chain.get(row["step"])
    steps = pd.DataFrame(rows, dtype=object)
    return Summary(steps, a, _passes(steps) if rows else None, [run.tag for run in runs])

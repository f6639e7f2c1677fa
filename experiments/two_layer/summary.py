"""Seed 001's net, summarised: tidy frames of every rule's gradients and of the largest
differences on each dataset, and seed 001's relu − clamp as a fact. Pure functions of runs."""
from dataclasses import dataclass

import numpy as np
import pandas as pd


@dataclass(frozen=True)
class SeedDifference:
    """Seed 001's question on one run: relu − clamp(min=0) over grad w1, and their d/dx at 0."""
    run: str
    value: float  # the one nonzero entry (0.0 where there is none)
    at: tuple  # its index in grad w1, () where there is none
    clamp_at_0: float
    relu_at_0: float


@dataclass
class Summary:
    gradients: pd.DataFrame  # run, dataset, framework, rule, name, kind, convention, at_0, loss, grad_w1, grad_w2, zeros, reference
    gaps: pd.DataFrame  # run, dataset, x_shape, zeros, conventions, vs_reference, same_framework, across, across_ulps, scale
    seed: list[SeedDifference]
    runs: list[str]
    titles: dict[str, str]  # label -> the label and what sets the run apart


def _flat(row) -> np.ndarray:
    return np.concatenate([np.ravel(np.asarray(row["grad_w1"], np.float64)),
                           np.ravel(np.asarray(row["grad_w2"], np.float64))])


def _largest(rows: list[dict], gaps: np.ndarray, same_framework: bool) -> float:
    return max((float(gaps[i, j]) for i, a in enumerate(rows) for j, b in enumerate(rows)
                if a["at_0"] == b["at_0"] and (a["framework"] == b["framework"]) == same_framework),
               default=0.0)


def _gaps(run: str, dataset: str, rows: list[dict]) -> dict:
    grads = np.stack([_flat(r) for r in rows])
    gaps = np.max(np.abs(grads[:, None, :] - grads[None, :, :]), axis=2)
    keys = [r["rule"] for r in rows]
    ref = next((r["reference"] for r in rows if r["framework"] == "torch"), None)
    scale = float(np.max(np.abs(grads)))
    across = _largest(rows, gaps, False)
    return {"run": run, "dataset": dataset, "x_shape": "×".join(map(str, rows[0]["x_shape"])),
            "zeros": rows[0]["zeros"], "conventions": len({r["at_0"] for r in rows}),
            "vs_reference": float(gaps[keys.index(ref)].max()) if ref in keys else None,
            "same_framework": _largest(rows, gaps, True), "across": across,
            "across_ulps": across / float(np.spacing(np.float32(scale))), "scale": scale}


def _seed(run: str, rows: dict) -> SeedDifference | None:
    relu, clamp = rows.get("torch_relu"), rows.get("torch_clamp_min0")
    if relu is None or clamp is None:
        return None
    d = np.subtract(relu["grad_w1"], clamp["grad_w1"])
    where = np.argwhere(d != 0)
    at = tuple(int(i) for i in where[0]) if len(where) else ()
    return SeedDifference(run, float(d[at]) if at else 0.0, at, clamp["at_0"], relu["at_0"])


def summarise(runs) -> Summary:
    rows = [{"run": run.tag, "dataset": r["dataset"], "framework": r["framework"], "rule": r["rule"],
             "name": r["name"], "kind": r["kind"], "convention": r["convention"],
             "at_0": r["measured_at_0"], "loss": r["loss"], "grad_w1": r["grad_w1"],
             "grad_w2": r["grad_w2"], "zeros": r["preactivation_zeros"], "x_shape": r["shapes"]["x"],
             "reference": r["reference_rule"]} for run in runs for r in run.ok_records()]
    by = {}
    for r in rows:
        by.setdefault((r["run"], r["dataset"]), []).append(r)
    gaps = [_gaps(run, d, rs) for (run, d), rs in by.items()]
    seed = [_seed(run, {r["rule"]: r for r in rs}) for (run, d), rs in by.items() if d == "seed"]
    return Summary(pd.DataFrame(rows, dtype=object), pd.DataFrame(gaps, dtype=object),
                   [s for s in seed if s], [run.tag for run in runs],
                   {run.tag: run.title or run.tag for run in runs})

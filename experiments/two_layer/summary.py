"""Seed 001's net, summarised: tidy frames of every rule's gradients and of the largest
differences on each dataset, seed 001's relu − clamp and answer 1's figures as facts. Pure
functions of runs."""
from dataclasses import dataclass
from itertools import compress

import numpy as np
import pandas as pd

from study.report import main_run, older_code, releases

# how measure.make_dataset draws each dataset: whether the nets' float32 matmuls can round
EXACT = ("seed", "random_ties")
ROUNDED = ("random_no_ties", "continuous_ties")
RULE_ALONE = "preactivations"
ARITHMETIC = {"seed": "exact (small integers)", "random_ties": "exact (small integers)",
              "random_no_ties": "rounded (normal draws)",
              "continuous_ties": "rounded (normal draws, zero rows of x and columns of w1)",
              RULE_ALONE: "none: each rule alone on one float32 array"}


@dataclass(frozen=True)
class SeedDifference:
    """Seed 001's question on one run: relu − clamp(min=0) over grad w1, and their d/dx at 0."""
    run: str
    value: float  # the one nonzero entry (0.0 where there is none)
    at: tuple  # its index in grad w1, () where there is none
    clamp_at_0: float
    relu_at_0: float


@dataclass(frozen=True)
class Gap:
    """One row of the ties table that answer 1 quotes: torch against JAX, same convention."""
    dataset: str
    zeros: int  # exact zeros among the pre-activations
    across: float  # the largest |Δ| between a torch rule and a JAX rule of one convention
    signs: int  # the most elements such a pair gives as equal numbers of opposite sign (±0)
    ulps: float  # across, in ulp of scale
    scale: float  # the largest |gradient| (or |value|) of the row
    runs: tuple[str, ...] = ()  # the runs whose rows give these figures


@dataclass(frozen=True)
class Twins:
    """Answer 1's figures, each the worst row of the ties table over runs and datasets."""
    within: float  # the nets' largest |Δ| between rules of one convention in one framework
    within_signs: int  # the nets' most elements such a pair gives as ±0
    alone_within_signs: int | None  # the same for each rule alone
    alone_within: float | None  # each rule alone: the largest |Δ| between rules of one convention
    alone: Gap | None  # each rule alone on the same pre-activations
    exact: Gap | None  # nets whose every matmul is exact
    # nets on continuous data without ties at 0, and with them: the runs grouped by their figures,
    # the main run's group first, then the largest difference first (those agreeing bit for bit
    # last)
    rounded: tuple[Gap, ...] = ()
    rounded_tied: tuple[Gap, ...] = ()
    runs: tuple[str, ...] = ()  # every run of the nets
    releases: dict = None  # label -> (torch, jax)
    main: str | None = None  # the main run's label (study.report.main_run), its figures first
    # label -> its machine (a GPU's model, or a CPU's with its kernels): matmuls round by it
    machines: dict = None


@dataclass
class Summary:
    # run, dataset, framework, rule, name, kind, convention, at_0, loss, grad_w1, grad_w2 (nets);
    # value, grad_z (the rule alone); zeros, shape, reference
    gradients: pd.DataFrame
    # run, dataset, arithmetic, shape, zeros, conventions, vs_reference, same_framework,
    # signs_same_framework, across, across_ulps, signs_across, scale (signs_: elements equal as
    # numbers but of opposite sign, ±0)
    gaps: pd.DataFrame
    seed: list[SeedDifference]
    runs: list[str]
    titles: dict[str, str]  # label -> the label and what sets the run apart
    twins: Twins | None = None
    releases: dict = None  # label -> (torch, jax)
    older: list[str] = ()  # the runs that are older code (study.report.older_code)


def _flat(row) -> np.ndarray:
    """The row's gradients as one array."""
    parts = ("value", "grad_z") if row["dataset"] == RULE_ALONE else ("grad_w1", "grad_w2")
    return np.concatenate([np.ravel(np.asarray(row[p], np.float64)) for p in parts])


def _largest(values: list, keep: list[bool]):
    return max(compress(values, keep), default=0)


def _pair_figures(grads: np.ndarray, first: np.ndarray, second: np.ndarray) -> tuple[list, list]:
    """For each pair of rows (first[k], second[k]): max |Δ| between them and how many elements
    they give as equal numbers of opposite sign (±0). Computed once per pair of distinct rows
    (by their bits): many rules give the same gradients, so a dataset's 46 rows hold a handful
    and its hundreds of pairs a few distinct ones."""
    if not len(first):
        return [], []
    bits = [row.tobytes() for row in grads]
    index = {row: k for k, row in enumerate(dict.fromkeys(bits))}
    distinct = grads[[bits.index(row) for row in index]]
    row_of = np.array([index[row] for row in bits])
    pairs, pair_of = np.unique(row_of[first] * len(index) + row_of[second], return_inverse=True)
    a, b = distinct[pairs // len(index)], distinct[pairs % len(index)]
    gaps = np.max(np.abs(a - b), axis=1)
    signs = np.sum((a == b) & (np.signbit(a) != np.signbit(b)), axis=1)
    return gaps[pair_of].tolist(), signs[pair_of].tolist()


def _gaps(run: str, dataset: str, rows: list[dict]) -> dict:
    grads = np.stack([_flat(r) for r in rows])
    # only pairs of one convention are compared (and each rule with the reference), i < j
    at_0 = np.array([r["at_0"] for r in rows], dtype=object)
    first, second = np.nonzero(np.triu(at_0[:, None] == at_0[None], 1))
    gaps, signs = _pair_figures(grads, first, second)
    frameworks = np.array([r["framework"] for r in rows], dtype=object)
    same = (frameworks[first] == frameworks[second]).tolist()
    other = [not s for s in same]
    keys = [r["rule"] for r in rows]
    ref = next((r["reference"] for r in rows if r["framework"] == "torch"), None)
    scale = float(np.max(np.abs(grads)))
    across = _largest(gaps, other)
    vs_reference = (float(np.max(np.abs(grads - grads[keys.index(ref)]))) if ref in keys
                    else None)
    return {"run": run, "dataset": dataset, "arithmetic": ARITHMETIC.get(dataset),
            "shape": "×".join(map(str, rows[0]["shape"])),
            "zeros": rows[0]["zeros"], "conventions": len({r["at_0"] for r in rows}),
            "vs_reference": vs_reference,
            "same_framework": float(_largest(gaps, same)),
            "signs_same_framework": int(_largest(signs, same)), "across": float(across),
            "across_ulps": across / float(np.spacing(np.float32(scale))),
            "signs_across": int(_largest(signs, other)), "scale": scale}


def _seed(run: str, rows: dict) -> SeedDifference | None:
    relu, clamp = rows.get("torch_relu"), rows.get("torch_clamp_min0")
    if relu is None or clamp is None:
        return None
    d = np.subtract(relu["grad_w1"], clamp["grad_w1"])
    where = np.argwhere(d != 0)
    at = tuple(int(i) for i in where[0]) if len(where) else ()
    return SeedDifference(run, float(d[at]) if at else 0.0, at, clamp["at_0"], relu["at_0"])


def _worst(gaps: list[dict], keep) -> Gap | None:
    rows = [g for g in gaps if keep(g)]
    if not rows:
        return None
    def figures(g):
        return g["across"], g["signs_across"], g["across_ulps"], g["zeros"]
    g = max(rows, key=figures)
    return Gap(g["dataset"], g["zeros"], g["across"], g["signs_across"], g["across_ulps"],
               g["scale"], tuple(r["run"] for r in rows if figures(r) == figures(g)))


def _groups(gaps: list[dict], keep, main: str | None) -> tuple[Gap, ...]:
    """The kept rows as Gaps, one per set of figures: each run by its worst kept row, runs alike
    together; the main run's group first, then the largest difference first, so that a run that
    agrees bit for bit is never hidden behind another run's worst."""
    worst: dict[str, dict] = {}
    def figures(g):
        return g["across"], g["signs_across"], g["across_ulps"], g["zeros"]
    for g in gaps:
        if keep(g) and (g["run"] not in worst or figures(g) > figures(worst[g["run"]])):
            worst[g["run"]] = g
    by: dict[tuple, list[str]] = {}
    for run, g in worst.items():
        by.setdefault(figures(g), []).append(run)
    out = [Gap(worst[runs[0]]["dataset"], f[3], f[0], f[1], f[2], worst[runs[0]]["scale"],
               tuple(runs)) for f, runs in by.items()]
    return tuple(sorted(out, key=lambda g: (main not in g.runs, -g.across, -g.signs)))


def twins(gaps: list[dict], releases: dict | None = None, main: str | None = None,
          machines: dict | None = None) -> Twins | None:
    """Answer 1's figures from the ties table's rows (every run's)."""
    if not gaps:
        return None
    nets = [g for g in gaps if g["dataset"] != RULE_ALONE]
    alone = [g for g in gaps if g["dataset"] == RULE_ALONE]
    return Twins(max((g["same_framework"] for g in nets), default=0.0),
                 max((g["signs_same_framework"] for g in nets), default=0),
                 max((g["signs_same_framework"] for g in alone), default=None),
                 max((g["same_framework"] for g in alone), default=None),
                 _worst(gaps, lambda g: g["dataset"] == RULE_ALONE),
                 _worst(nets, lambda g: g["dataset"] in EXACT),
                 _groups(nets, lambda g: g["dataset"] in ROUNDED and g["zeros"] == 0, main),
                 _groups(nets, lambda g: g["dataset"] in ROUNDED and g["zeros"] > 0, main),
                 tuple(dict.fromkeys(g["run"] for g in nets)), releases or {}, main,
                 machines or {})


def _machine(p: dict) -> str:
    """'AMD EPYC, AVX2', or a GPU's model: what a run's matmuls ran on."""
    gpu = p.get("gpu")
    if p.get("device") != "cpu" and isinstance(gpu, dict) and gpu.get("name"):
        return str(gpu["name"])
    return ", ".join(str(x) for x in (p.get("cpu"), p.get("torch_cpu_capability")) if x)


def _row(run: str, r: dict) -> dict:
    shape = r["shapes"]["z"] if r["dataset"] == RULE_ALONE else r["shapes"]["x"]
    return {"run": run, "dataset": r["dataset"], "framework": r["framework"], "rule": r["rule"],
            "name": r["name"], "kind": r["kind"], "convention": r["convention"],
            "at_0": r["measured_at_0"], "loss": r.get("loss"), "grad_w1": r.get("grad_w1"),
            "grad_w2": r.get("grad_w2"), "value": r.get("value"), "grad_z": r.get("grad_z"),
            "zeros": r["preactivation_zeros"], "shape": shape, "reference": r["reference_rule"]}


def summarise(runs) -> Summary:
    rows = [_row(run.tag, r) for run in runs for r in run.ok_rows()]
    by = {}
    for r in rows:
        by.setdefault((r["run"], r["dataset"]), []).append(r)
    gaps = [_gaps(run, d, rs) for (run, d), rs in by.items()]
    seed = [_seed(run, {r["rule"]: r for r in rs}) for (run, d), rs in by.items() if d == "seed"]
    return Summary(pd.DataFrame(rows, dtype=object), pd.DataFrame(gaps, dtype=object),
                   [s for s in seed if s], [run.tag for run in runs],
                   {run.tag: run.title or run.tag for run in runs},
                   twins(gaps, releases(runs), getattr(main_run(list(runs)), "tag", None),
                         {run.tag: _machine(run.provenance) for run in runs}),
                   releases(runs), older_code(runs))

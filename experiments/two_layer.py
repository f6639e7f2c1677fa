"""Seed 001's two-layer net under every ReLU rule of both frameworks.

    python -m study run two_layer

loss = sum((act(x @ w1) @ w2 - 1)^2) in float32, with seed 001's exact x, w1, w2, plus two
seeded random variants: one with no exact-zero pre-activation, one with many forced.
"""
import numpy as np

from study.conventions import reverse_derivative
from study.nets import seed_two_layer_data, two_layer_gradients
from study.rules import by_name, reference_relu, relu_rules
from study.tables import Table

NAME = "two_layer"
DESCRIPTION = "seed 001's net: gradients of every ReLU rule, the -38 difference, torch vs JAX"
SEED = 0
DATASETS = ("seed", "random_no_ties", "random_ties")
TABLES = ("gradients", "diff_vs_relu", "cross_framework", "ties")


def make_dataset(name: str) -> dict[str, np.ndarray]:
    if name == "seed":
        return seed_two_layer_data()
    rng = np.random.default_rng(SEED)
    if name == "random_no_ties":  # continuous draws: an exact-zero pre-activation has measure 0
        shapes = {"x": (32, 16), "w1": (16, 24), "w2": (24, 4)}
        return {k: rng.standard_normal(s).astype(np.float32) for k, s in shapes.items()}
    # small integers: x @ w1 is exact in float32 and hits 0 often
    shapes = {"x": (32, 16), "w1": (16, 24), "w2": (24, 4)}
    return {k: rng.integers(-2, 3, s).astype(np.float32) for k, s in shapes.items()}


def cases(quick: bool) -> list[dict]:
    return [{"dataset": d, "rule": r.name} for d in DATASETS for r in relu_rules()]


def run_case(device, dataset: str, rule: str) -> list[dict]:
    r = by_name(rule)
    out = two_layer_gradients(r, make_dataset(dataset), device)
    return [{
        "dataset": dataset, "framework": r.framework, "rule": r.name, "kind": r.kind,
        "convention": r.convention, "measured_at_0": reverse_derivative(r, 0.0, "float32", device),
        "device": device.name, "dtype": "float32", "preactivation_zeros": out["zeros"],
        "loss": float(out["loss"]), "grad_w1": out["grad_w1"], "grad_w2": out["grad_w2"],
    }]


# --- tables: pure functions of loaded runs ---------------------------------------------

def _ok(records):
    return [r for r in records if "case_error" not in r]


def _index(records) -> dict[tuple[str, str], dict]:
    return {(r["dataset"], r["rule"]): r for r in _ok(records)}


def _max_abs_diff(a: dict, b: dict) -> float:
    return max(float(np.max(np.abs(np.subtract(a[k], b[k], dtype=np.float64))))
               for k in ("grad_w1", "grad_w2"))


def _run_prefix(run, runs) -> list:
    return [run.label] if len(runs) > 1 else []


def tables(runs) -> list[Table]:
    run_col = ["run"] if len(runs) > 1 else []
    grads, diffs, cross, ties = [], [], [], []
    for run in runs:
        pre = _run_prefix(run, runs)
        idx = _index(run.records)
        for rec in run.records:
            if "case_error" in rec:
                grads.append(pre + [rec["rule"], "—", "—", "—", "—", "—", "—",
                                    f"failed: {rec['case_error']}"])
        seed = [r for r in _ok(run.records) if r["dataset"] == "seed"]
        for r in seed:
            grads.append(pre + [r["rule"], r["framework"], r["kind"], r["convention"],
                                r["measured_at_0"], r["loss"], r["grad_w1"], r["grad_w2"]])
            ref = idx.get(("seed", reference_relu(r["framework"]).name))
            if ref:
                d1 = np.subtract(ref["grad_w1"], r["grad_w1"]).tolist()
                d2 = np.subtract(ref["grad_w2"], r["grad_w2"]).tolist()
                diffs.append(pre + [r["rule"], r["framework"], r["measured_at_0"], d1, d2])
        for t in (r for r in seed if r["framework"] == "torch"):
            partners = [j for j in seed if j["framework"] == "jax"
                        and j["measured_at_0"] == t["measured_at_0"]]
            row = pre + [t["rule"], t["measured_at_0"],
                         "; ".join(j["rule"] for j in partners) or "none"]
            for d in DATASETS:
                gaps = [_max_abs_diff(idx[(d, t["rule"])], idx[(d, j["rule"])]) for j in partners
                        if (d, t["rule"]) in idx and (d, j["rule"]) in idx]
                row.append(max(gaps) if gaps else None)
            cross.append(row)
        for d in DATASETS:
            recs = [r for r in _ok(run.records) if r["dataset"] == d]
            if not recs:
                continue
            ref = idx[(d, "torch.relu")]

            def largest_gap(same_framework: bool) -> float:
                return max((_max_abs_diff(a, b) for a in recs for b in recs
                            if a["measured_at_0"] == b["measured_at_0"]
                            and (a["framework"] == b["framework"]) == same_framework), default=0.0)

            scale = max(float(np.max(np.abs(r[k]))) for r in recs for k in ("grad_w1", "grad_w2"))
            ties.append(pre + [d, recs[0]["preactivation_zeros"],
                               len({r["measured_at_0"] for r in recs}),
                               max(_max_abs_diff(ref, r) for r in recs),
                               largest_gap(True), largest_gap(False), scale])
    return [
        Table("gradients", "Seed 001 net: loss and gradients under each ReLU rule",
              "float32, seed 001's x, w1, w2 and a target of ones. 'c' is the convention a custom "
              "rule declares; 'd/dx at 0' is measured by reverse mode on a scalar 0.0.",
              run_col + ["rule", "framework", "kind", "c", "d/dx at 0", "loss", "grad w1",
                         "grad w2"], grads),
        Table("diff_vs_relu", "Seed 001's table: the framework's relu minus each rule",
              "grad(relu) − grad(rule), as seed 001 printed w1_a.grad − w1_b.grad with "
              "a = relu, b = clamp. The only exact-zero pre-activation is (x @ w1)[3, 1].",
              run_col + ["rule", "framework", "d/dx at 0", "Δ grad w1", "Δ grad w2"], diffs),
        Table("cross_framework", "Torch rules beside the JAX rules with the same convention",
              "For each torch rule, the JAX rules whose measured d/dx at 0 is equal, and the "
              "largest |Δ| over grad w1 and grad w2 between them; 0 means bitwise equal.",
              run_col + ["torch rule", "d/dx at 0", "JAX rules with that value"]
              + [f"max abs Δ ({d})" for d in DATASETS], cross),
        Table("ties", "The differences come from ties at 0 and from nothing else",
              "Over every ReLU rule of both frameworks: exact-zero pre-activations in the "
              "data, the number of distinct measured conventions, the largest |Δ grad| against "
              "torch.relu, the largest |Δ grad| between rules that share a convention (within one "
              "framework, then across the two), and the largest |grad| for scale: across "
              "frameworks, tie-free float32 data can still differ by float32 rounding, since "
              "the two frameworks' matmuls need not round alike.",
              run_col + ["dataset", "exact zeros in x @ w1", "conventions", "max abs Δ vs torch.relu",
                         "same convention, same framework", "same convention, torch vs jax",
                         "max abs grad"], ties),
    ]


def findings(runs) -> list[tuple[str, str]]:
    parts = []
    for run in runs:
        idx = _index(run.records)
        relu, clamp = idx.get(("seed", "torch.relu")), idx.get(("seed", "torch.clamp(x, min=0)"))
        if relu and clamp:
            d = np.subtract(relu["grad_w1"], clamp["grad_w1"])
            where = np.argwhere(d != 0)
            diff = (f"{d[tuple(where[0])]:g} at grad w1{[int(i) for i in where[0]]}"
                    if len(where) else "0 everywhere")
            parts.append(f"in torch {run.provenance['torch']} ({run.provenance['device']}) "
                         f"clamp(min=0) has gradient {clamp['measured_at_0']:g} at 0 against relu's "
                         f"{relu['measured_at_0']:g}, so seed 001's relu − clamp is {diff}")
    return [("Seed 001's −38, measured: " + "; ".join(parts) + ".", "diff_vs_relu")] if parts else []

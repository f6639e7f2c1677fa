"""Seed 001's two-layer net under every ReLU rule of both frameworks.

    python -m study run two_layer

loss = sum((act(x @ w1) @ w2 - 1)^2) in float32, with seed 001's exact x, w1, w2, plus two
seeded random variants: one with no exact-zero pre-activation, one with many forced.
"""
import numpy as np

from study.conventions import reverse_derivative
from study.nets import seed_two_layer_data, two_layer_gradients
from study.rules import REFERENCE_RELU, by_key, relu_rules
from study.runsets import grouped_clauses, merge_rows
from study.tables import Table, format_cell

NAME = "two_layer"
DESCRIPTION = "seed 001's net: gradients of every ReLU rule, the -38 difference, torch vs JAX"
QUESTION = ("Does seed 001's two-layer net get the same gradients under every ReLU rule of both "
            "frameworks, and where do the rules differ (the seed's −38)?")
SEED = 0
DATASETS = ("seed", "random_no_ties", "random_ties")
RANDOM_SHAPES = {"x": (32, 16), "w1": (16, 24), "w2": (24, 4)}
TABLES = ("gradients", "diff_vs_relu", "cross_framework", "ties")
RECORD_KEY = ("dataset", "rule")
NOT_COMPARED = ("name",)


def make_dataset(name: str) -> dict[str, np.ndarray]:
    if name == "seed":
        return seed_two_layer_data()
    rng = np.random.default_rng(SEED)
    if name == "random_no_ties":  # continuous draws: an exact-zero pre-activation has measure 0
        return {k: rng.standard_normal(s).astype(np.float32) for k, s in RANDOM_SHAPES.items()}
    # small integers: x @ w1 is exact in float32 and hits 0 often
    return {k: rng.integers(-2, 3, s).astype(np.float32) for k, s in RANDOM_SHAPES.items()}


def cases(scope: str) -> list[dict]:
    return [{"dataset": d, "rule": r.key} for d in DATASETS for r in relu_rules()]


def run_case(device, dataset: str, rule: str) -> list[dict]:
    r = by_key(rule)
    data = make_dataset(dataset)
    out = two_layer_gradients(r, data, device)
    return [{
        "dataset": dataset, "framework": r.framework, "rule": r.key, "name": r.name,
        "kind": r.kind, "convention": r.convention,
        "measured_at_0": reverse_derivative(r, 0.0, "float32", device), "device": device.name,
        "dtype": str(data["x"].dtype), "shapes": {k: list(v.shape) for k, v in data.items()},
        "data_seed": None if dataset == "seed" else SEED, "preactivation_zeros": out["zeros"],
        "loss": float(out["loss"]), "grad_w1": out["grad_w1"], "grad_w2": out["grad_w2"],
    }]


# --- aggregation: pure functions of loaded runs ---------------------------------------------

def _index(run) -> dict[tuple[str, str], dict]:
    return {(r["dataset"], r["rule"]): r for r in run.ok_records()}


def _max_abs_diff(a: dict, b: dict) -> float:
    return max(float(np.max(np.abs(np.subtract(a[k], b[k], dtype=np.float64))))
               for k in ("grad_w1", "grad_w2"))


def _gradient_rows(run):
    rows = [[r.get("rule"), "—", "—", None, None, None, None, f"failed: {r['case_error']}"]
            for r in run.records if "case_error" in r and r.get("dataset") == "seed"]
    for r in (r for r in run.ok_records() if r["dataset"] == "seed"):
        rows.append([r["name"], r["framework"], r["kind"], r["convention"], r["measured_at_0"],
                     r["loss"], r["grad_w1"], r["grad_w2"]])
    return rows


def _diff_rows(run):
    idx, rows = _index(run), []
    for r in (r for r in run.ok_records() if r["dataset"] == "seed"):
        ref = idx.get(("seed", REFERENCE_RELU[r["framework"]]))
        d1 = np.subtract(ref["grad_w1"], r["grad_w1"]).tolist() if ref else None
        d2 = np.subtract(ref["grad_w2"], r["grad_w2"]).tolist() if ref else None
        rows.append([r["name"], r["framework"], r["measured_at_0"], d1, d2])
    return rows


def _datasets(run) -> list[str]:
    return list(dict.fromkeys(r["dataset"] for r in run.ok_records()))


def _cross_rows(run, datasets):
    idx, rows = _index(run), []
    seed = [r for r in run.ok_records() if r["dataset"] == "seed"]
    for t in (r for r in seed if r["framework"] == "torch"):
        partners = [j for j in seed if j["framework"] == "jax"
                    and j["measured_at_0"] == t["measured_at_0"]]
        row = [t["name"], t["measured_at_0"], "; ".join(j["name"] for j in partners) or "none"]
        for d in datasets:
            gaps = [_max_abs_diff(idx[(d, t["rule"])], idx[(d, j["rule"])]) for j in partners
                    if (d, t["rule"]) in idx and (d, j["rule"]) in idx]
            row.append(max(gaps) if gaps else None)
        rows.append(row)
    return rows


def _ties_rows(run):
    rows = []
    for d in _datasets(run):
        recs = [r for r in run.ok_records() if r["dataset"] == d]
        if not recs:
            continue
        ref = next((r for r in recs if r["rule"] == REFERENCE_RELU["torch"]), None)

        def largest_gap(same_framework: bool) -> float:
            return max((_max_abs_diff(a, b) for a in recs for b in recs
                        if a["measured_at_0"] == b["measured_at_0"]
                        and (a["framework"] == b["framework"]) == same_framework), default=0.0)

        scale = max(float(np.max(np.abs(r[k]))) for r in recs for k in ("grad_w1", "grad_w2"))
        rows.append([d, "×".join(map(str, recs[0]["shapes"]["x"])), recs[0]["preactivation_zeros"],
                     len({r["measured_at_0"] for r in recs}),
                     max(_max_abs_diff(ref, r) for r in recs) if ref else None,
                     largest_gap(True), largest_gap(False), scale])
    return rows


def tables(runs) -> list[Table]:
    dtypes = sorted({r["dtype"] for run in runs for r in run.ok_records()})
    g = merge_rows([(run, _gradient_rows(run)) for run in runs], 2, runs)
    d = merge_rows([(run, _diff_rows(run)) for run in runs], 2, runs)
    datasets = list(dict.fromkeys(d for run in runs for d in _datasets(run)))
    c = merge_rows([(run, _cross_rows(run, datasets)) for run in runs], 1, runs)
    t = merge_rows([(run, _ties_rows(run)) for run in runs], 1, runs)
    return [
        Table("gradients", "Seed 001 net: loss and gradients under each ReLU rule",
              f"{', '.join(dtypes)}, seed 001's x, w1, w2 and a target of ones. 'c' is the "
              f"convention a custom rule declares; 'd/dx at 0' is measured by reverse mode on a "
              f"0-d 0.0 on the run's device.",
              g[0] + ["rule", "framework", "kind", "c", "d/dx at 0", "loss", "grad w1", "grad w2"],
              g[1], g[2]),
        Table("diff_vs_relu", "Seed 001's table: the framework's relu minus each rule",
              "grad(relu) − grad(rule), as seed 001 printed w1_a.grad − w1_b.grad with a = relu, "
              "b = clamp; relu is torch.relu for torch rules and jax.nn.relu for JAX rules (— "
              "where that case failed). The only exact-zero pre-activation is (x @ w1)[3, 1].",
              d[0] + ["rule", "framework", "d/dx at 0", "Δ grad w1", "Δ grad w2"], d[1], d[2]),
        Table("cross_framework", "Torch rules beside the JAX rules with the same convention",
              "For each torch rule, the JAX rules whose measured d/dx at 0 is equal, and the "
              "largest |Δ| over grad w1 and grad w2 between them; 0 means bitwise equal.",
              c[0] + ["torch rule", "d/dx at 0", "JAX rules with that value"]
              + [f"max abs Δ ({name})" for name in datasets], c[1], c[2]),
        Table("ties", "The differences come from ties at 0 and from nothing else",
              "Over every ReLU rule of both frameworks: exact-zero pre-activations in the data, "
              "the number of distinct measured conventions, the largest |Δ grad| against "
              "torch.relu, the largest |Δ grad| between rules that share a convention (within one "
              "framework, then across the two), and the largest |grad| for scale: across "
              "frameworks, tie-free data can still differ by rounding, since the two frameworks' "
              "matmuls need not round alike.",
              t[0] + ["dataset", "x shape", "exact zeros in x @ w1", "conventions",
                      "max abs Δ vs torch.relu", "same convention, same framework",
                      "same convention, torch vs jax", "max abs grad"], t[1], t[2]),
    ]


def findings(runs) -> list[tuple[str, str]]:
    def clause(run):
        idx = _index(run)
        relu = idx.get(("seed", REFERENCE_RELU["torch"]))
        clamp = idx.get(("seed", "torch_clamp_min0"))
        if not (relu and clamp):
            return None
        d = np.subtract(relu["grad_w1"], clamp["grad_w1"])
        where = np.argwhere(d != 0)
        diff = (f"{format_cell(float(d[tuple(where[0])]))} at grad w1{[int(i) for i in where[0]]}"
                if len(where) else "0 everywhere")
        return (f"clamp(min=0) has gradient {format_cell(clamp['measured_at_0'])} at 0 against "
                f"relu's {format_cell(relu['measured_at_0'])}, so seed 001's relu − clamp is {diff}")
    text = grouped_clauses(runs, clause)
    return [(f"Seed 001's −38, measured: {text}.", "diff_vs_relu")] if text else []

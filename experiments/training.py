"""Does ReLU'(0) change training? SGD on seed 001's net and on digits, both frameworks, 4 dtypes.

    python -m study run training

Seed 003's loop (model, loss, SGD, zero_grad / backward / step) with the custom rules
c in {0, 0.5, 1} and each framework's relu; every run starts from the same numpy parameters
and sees the same batches.
"""
import numpy as np

from study.conventions import DTYPES
from study.nets import seed_two_layer_data
from study.rules import by_name
from study.tables import Table
from study.training import (accuracy, cast, digits_data, first_divergence, init_mlp,
                            train_jax, train_torch)

NAME = "training"
DESCRIPTION = "SGD with ReLU'(0) = 0, 0.5, 1 in both frameworks and four precisions"
SEED = 0
TABLES = ("runs",)
RULES_BY_C = {"torch": {0.0: "ReLUWithConvention(c=0)", 0.5: "ReLUWithConvention(c=0.5)",
                        1.0: "ReLUWithConvention(c=1)", "relu": "torch.relu"},
              "jax": {0.0: "relu_with_convention(c=0) (custom_vjp)",
                      0.5: "relu_with_convention(c=0.5) (custom_vjp)",
                      1.0: "relu_with_convention(c=1) (custom_vjp)", "relu": "jax.nn.relu"}}
DIGITS = {"hidden": 32, "batch": 64, "epochs": 2, "lr": 0.1, "train": 1500}
SEED_NET = {"steps": 20, "lr": 1e-4}


def setup(dataset: str, dtype: str, quick: bool):
    """(initial parameters, batches, loss, lr, bias, held-out (x, y) or None)."""
    if dataset == "seed":
        d = seed_two_layer_data()
        steps = SEED_NET["steps"] // (4 if quick else 1)
        batches = [(d["x"].astype(np.float64), np.zeros(4, np.int64))] * steps
        return cast([d["w1"], d["w2"]], dtype), batches, "mse_ones", SEED_NET["lr"], False, None
    x, y = digits_data()
    rng = np.random.default_rng(SEED)
    params = cast(init_mlp(rng, [x.shape[1], DIGITS["hidden"], 10]), dtype)
    n, b = DIGITS["train"], DIGITS["batch"]
    batches = []
    for _ in range(1 if quick else DIGITS["epochs"]):
        order = rng.permutation(n)
        batches += [(x[order[i:i + b]], y[order[i:i + b]]) for i in range(0, n - b + 1, b)]
    return params, batches, "xent", DIGITS["lr"], True, (x[n:], y[n:])


def cases(quick: bool) -> list[dict]:
    return [{"dataset": ds, "dtype": dt, "quick": quick} for ds in ("seed", "digits")
            for dt in DTYPES]


def run_case(device, dataset: str, dtype: str, quick: bool) -> list[dict]:
    params0, batches, loss, lr, bias, held_out = setup(dataset, dtype, quick)
    trainers = {"torch": train_torch, "jax": train_jax}
    runs = {(fw, c): trainers[fw](by_name(name).fn, params0, batches, loss, lr, dtype, bias)
            for fw, rules in RULES_BY_C.items() for c, name in rules.items()}
    preacts_per_step = len(batches[0][0]) * params0[0].shape[1]  # batch x hidden units
    records = []
    for (fw, c), run in runs.items():
        other = runs[("jax" if fw == "torch" else "torch", c)]
        base = runs[(fw, 0.0)]["snapshots"]
        act = by_name(RULES_BY_C[fw][c]).fn
        records.append({
            "dataset": dataset, "dtype": dtype, "framework": fw, "rule": RULES_BY_C[fw][c],
            "c": None if c == "relu" else c, "device": device.name, "steps": len(batches),
            "losses": run["losses"], "zero_preacts": run["zeros"],
            "preacts_per_step": preacts_per_step,
            "differs_from_c0": [not np.array_equal(a, b, equal_nan=True)
                                for a, b in zip(run["snapshots"], base)],
            "first_step_differs_from_c0": first_divergence(run["snapshots"], base),
            "first_step_differs_from_other_framework": first_divergence(run["snapshots"],
                                                                        other["snapshots"]),
            "max_param_diff_other_framework": float(np.max(np.abs(
                run["snapshots"][-1] - other["snapshots"][-1]))),
            "accuracy": None if held_out is None else accuracy(fw, act, run["params"],
                                                               *held_out, dtype, bias)})
    return records


def tables(runs) -> list[Table]:
    rows = []
    for run in runs:
        pre = [run.label] if len(runs) > 1 else []
        for r in run.records:
            if "losses" not in r:
                rows.append(pre + [r.get("dataset"), r.get("dtype"), f"failed: {r['case_error']}"]
                            + [None] * 8)
                continue
            zeros = sum(r["zero_preacts"])
            rows.append(pre + [r["dataset"], r["dtype"], r["framework"], r["rule"],
                               r["first_step_differs_from_c0"], r["losses"][-1], r["accuracy"],
                               zeros, zeros / (r["preacts_per_step"] * r["steps"]),
                               r["first_step_differs_from_other_framework"],
                               r["max_param_diff_other_framework"]])
    return [Table(
        "runs", "SGD runs: when ReLU'(0) makes runs diverge, per precision",
        f"Seed 001's net (MSE against ones, full batch, {SEED_NET['steps']} steps, lr "
        f"{SEED_NET['lr']:g}) and a {DIGITS['hidden']}-unit MLP on digits (cross-entropy, batch "
        f"{DIGITS['batch']}, {DIGITS['epochs']} epochs over the first {DIGITS['train']} images, lr "
        f"{DIGITS['lr']:g}, accuracy on the rest). Steps count from 0; '—' means never. Zero hits "
        f"are exact zeros among the hidden pre-activations over all steps. Cross-framework "
        f"columns compare with the other framework's run of the same c (relu with relu).",
        (["run"] if len(runs) > 1 else []) + [
            "data", "dtype", "framework", "rule", "first step ≠ c=0 run", "final loss",
            "accuracy", "zero hits", "zero-hit fraction", "first step ≠ other framework",
            "max abs Δparam vs other framework"], rows)]


def findings(runs) -> list[tuple[str, str]]:
    recs = [r for r in (runs[0].records if runs else []) if "losses" in r
            and r["dataset"] == "digits" and r["framework"] == "torch" and r["c"] == 1.0]
    if not recs:
        return []
    def diverges(step):
        return "never diverges from c=0" if step is None else f"diverges from c=0 at step {step}"

    parts = [f"{r['dtype']}: a zero-hit fraction of "
             f"{sum(r['zero_preacts']) / (r['preacts_per_step'] * r['steps']):.2g} and c=1 "
             f"{diverges(r['first_step_differs_from_c0'])}" for r in recs]
    return [("Training on digits in torch: " + "; ".join(parts) + ".", "runs")]

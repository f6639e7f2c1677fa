"""Does ReLU'(0) change training? SGD on seed 001's net and on digits, both frameworks, 4 dtypes.

    python -m study run training

Seed 003's loop (model, loss, SGD, zero_grad / backward / step) with the custom rules
c in {0, 0.5, 1} and each framework's relu; every run starts from the same numpy parameters
and sees the same batches.
"""
import numpy as np

from study.conventions import DTYPES
from study.nets import seed_two_layer_data
from study.rules import by_key
from study.runsets import grouped_clauses, merge_rows
from study.tables import Table, format_cell
from study.training import (accuracy, cast, digits_data, first_divergence, init_mlp,
                            train_jax, train_torch)

NAME = "training"
DESCRIPTION = "SGD with ReLU'(0) = 0, 0.5, 1 in both frameworks and four precisions"
QUESTION = ("Does the value of ReLU'(0) change a real training run, in which precisions, and "
            "how far apart do the two frameworks drift?")
SEED = 0
TABLES = ("runs",)
RECORD_KEY = ("dataset", "dtype", "rule")
RULES_BY_C = {"torch": {0.0: "torch_custom_c0", 0.5: "torch_custom_c0.5", 1.0: "torch_custom_c1",
                        "relu": "torch_relu"},
              "jax": {0.0: "jax_custom_c0", 0.5: "jax_custom_c0.5", 1.0: "jax_custom_c1",
                      "relu": "jax_relu"}}
DIGITS = {"hidden": 32, "batch": 64, "epochs": 2, "lr": 0.1, "train": 1500}
SEED_NET = {"steps": 20, "lr": 1e-4}


def setup(dataset: str, dtype: str, scope: str):
    """(initial parameters, batches, loss, lr, bias, held-out (x, y) or None, settings)."""
    quick = scope == "quick"
    if dataset == "seed":
        d = seed_two_layer_data()
        steps = SEED_NET["steps"] // (4 if quick else 1)
        batches = [(d["x"].astype(np.float64), np.zeros(4, np.int64))] * steps
        return (cast([d["w1"], d["w2"]], dtype), batches, "mse_ones", SEED_NET["lr"], False, None,
                {"steps": steps, "lr": SEED_NET["lr"], "loss": "sum((out - 1)^2)"})
    x, y = digits_data()
    rng = np.random.default_rng(SEED)
    params = cast(init_mlp(rng, [x.shape[1], DIGITS["hidden"], 10]), dtype)
    n, b = DIGITS["train"], DIGITS["batch"]
    epochs = 1 if quick else DIGITS["epochs"]
    batches = []
    for _ in range(epochs):
        order = rng.permutation(n)
        batches += [(x[order[i:i + b]], y[order[i:i + b]]) for i in range(0, n - b + 1, b)]
    return (params, batches, "xent", DIGITS["lr"], True, (x[n:], y[n:]),
            {**DIGITS, "epochs": epochs, "loss": "cross-entropy", "held_out": len(x) - n})


def cases(scope: str) -> list[dict]:
    return [{"dataset": ds, "dtype": dt, "scope": scope} for ds in ("seed", "digits")
            for dt in DTYPES]


def run_case(device, dataset: str, dtype: str, scope: str) -> list[dict]:
    params0, batches, loss, lr, bias, held_out, settings = setup(dataset, dtype, scope)
    trainers = {"torch": train_torch, "jax": train_jax}
    runs = {(fw, c): trainers[fw](by_key(key).fn, params0, batches, loss, lr, dtype, bias, device)
            for fw, rules in RULES_BY_C.items() for c, key in rules.items()}
    preacts_per_step = len(batches[0][0]) * params0[0].shape[1]  # batch x hidden units
    records = []
    for (fw, c), run in runs.items():
        other = runs[("jax" if fw == "torch" else "torch", c)]
        base = runs[(fw, 0.0)]["snapshots"]
        rule = by_key(RULES_BY_C[fw][c])
        records.append({
            "dataset": dataset, "dtype": dtype, "framework": fw, "rule": rule.key,
            "name": rule.name, "c": None if c == "relu" else c, "device": device.name,
            "settings": settings, "steps": len(batches), "losses": run["losses"],
            "zero_preacts": run["zeros"], "preacts_per_step": preacts_per_step,
            "differs_from_c0": [not np.array_equal(a, b, equal_nan=True)
                                for a, b in zip(run["snapshots"], base)],
            "first_step_differs_from_c0": first_divergence(run["snapshots"], base),
            "first_step_differs_from_other_framework": first_divergence(run["snapshots"],
                                                                        other["snapshots"]),
            "max_param_diff_other_framework": float(np.max(np.abs(
                run["snapshots"][-1] - other["snapshots"][-1]))),
            "accuracy": None if held_out is None else accuracy(fw, rule.fn, run["params"],
                                                               *held_out, dtype, bias, device)})
    return records


def _rows(run):
    rows = []
    for r in run.records:
        if "losses" not in r:
            rows.append([r.get("dataset"), r.get("dtype"), f"failed: {r['case_error']}"]
                        + [None] * 8)
            continue
        zeros = sum(r["zero_preacts"])
        rows.append([r["dataset"], r["dtype"], r["framework"], r["name"],
                     r["first_step_differs_from_c0"], r["losses"][-1], r["accuracy"], zeros,
                     zeros / (r["preacts_per_step"] * r["steps"]),
                     r["first_step_differs_from_other_framework"],
                     r["max_param_diff_other_framework"]])
    return rows


def _settings_text(runs) -> str:
    seen = {}
    for run in runs:
        for r in run.ok_records():
            s = r["settings"]
            text = (f"seed 001's net ({s['loss']}, full batch, {s['steps']} steps, lr "
                    f"{format_cell(s['lr'])})" if r["dataset"] == "seed" else
                    f"a {s['hidden']}-unit MLP on digits ({s['loss']}, batch {s['batch']}, "
                    f"{s['epochs']} epoch{'s' if s['epochs'] > 1 else ''} over the first "
                    f"{s['train']} images, lr {format_cell(s['lr'])}, accuracy on the other "
                    f"{s['held_out']})")
            seen.setdefault(text, None)
    return "; ".join(seen)


def tables(runs) -> list[Table]:
    extra, rows, notes = merge_rows([(run, _rows(run)) for run in runs], 4, runs)
    return [Table(
        "runs", "SGD runs: when ReLU'(0) makes runs diverge, per precision",
        f"Runs: {_settings_text(runs)}. Steps count from 0; '—' means never. Zero hits are exact "
        f"zeros among the hidden pre-activations over all steps. Cross-framework columns compare "
        f"with the other framework's run of the same c (relu with relu).",
        extra + ["data", "dtype", "framework", "rule", "first step ≠ c=0 run", "final loss",
                 "accuracy", "zero hits", "zero-hit fraction", "first step ≠ other framework",
                 "max abs Δparam vs other framework"], rows, notes)]


def findings(runs) -> list[tuple[str, str]]:
    def clause(run):
        recs = [r for r in run.ok_records() if r["dataset"] == "digits"
                and r["framework"] == "torch" and r["c"] == 1.0]
        if not recs:
            return None

        def diverges(step):
            return "never diverges from c=0" if step is None else f"diverges from c=0 at step {step}"
        return "; ".join(f"{r['dtype']}: a zero-hit fraction of "
                         f"{sum(r['zero_preacts']) / (r['preacts_per_step'] * r['steps']):.2g} and "
                         f"c=1 {diverges(r['first_step_differs_from_c0'])}" for r in recs)
    text = grouped_clauses(runs, clause)
    return [(f"Training on digits in torch, {text}.", "runs")] if text else []

"""Measuring SGD with ReLU'(0) = 0, 0.5 and 1 in both frameworks and four precisions."""

import numpy as np

from study.measure.inputs import DTYPES
from study.workloads.nets import seed_two_layer_data
from study.measure.rules import registry_unless

SEED = 0
# 345 SGD steps: held-out accuracy about 0.97 in float32 (46 steps reached 0.61, too few to
# show anything); the split is a seeded permutation (the file's tail is other writers' digits)
DIGITS = {"hidden": 32, "batch": 64, "epochs": 15, "lr": 0.2, "train": 1500}
SEED_NET = {"steps": 20, "lr": 1e-4}


def setup(dataset: str, dtype: str, scope: str):
    """(initial parameters, batches, loss, lr, bias, held-out (x, y) or None, settings)."""
    from study.workloads.training import cast, digits_data, init_mlp  # torch and JAX
    quick = scope == "quick"
    if dataset == "seed":
        d = seed_two_layer_data()
        steps = SEED_NET["steps"] // (4 if quick else 1)
        batches = [(d["x"].astype(np.float64), np.zeros(4, np.int64))] * steps
        return (cast([d["w1"], d["w2"]], dtype), batches, "mse_ones", SEED_NET["lr"], False, None,
                {"steps": steps, "lr": SEED_NET["lr"], "loss": "sum((out - 1)^2)"})
    x, y = digits_data()
    rng = np.random.default_rng(SEED)
    split = rng.permutation(len(x))
    train, held_out = split[:DIGITS["train"]], split[DIGITS["train"]:]
    params = cast(init_mlp(rng, [x.shape[1], DIGITS["hidden"], 10]), dtype)
    b = DIGITS["batch"]
    epochs = 1 if quick else DIGITS["epochs"]
    batches = []
    for _ in range(epochs):
        order = train[rng.permutation(len(train))]
        batches += [(x[order[i:i + b]], y[order[i:i + b]]) for i in range(0, len(train) - b + 1, b)]
    return (params, batches, "xent", DIGITS["lr"], True, (x[held_out], y[held_out]),
            {**DIGITS, "epochs": epochs, "loss": "cross-entropy", "held_out": len(held_out),
             "split": f"numpy default_rng({SEED}).permutation of the {len(x)} images"})


def trained(rules) -> dict[tuple[str, float | str], object]:
    """{(framework, convention, or "relu" for the built-in): rule} of the rules marked trained,
    custom rules by convention and each framework's built-in last. Each framework's rules are
    compared with its c = 0 rule and with the other framework's rule of the same convention."""
    chosen = sorted((r for r in rules if r.trained),
                    key=lambda r: (r.framework != "torch", r.kind == "builtin", r.convention or 0))
    by_c = {(r.framework, "relu" if r.kind == "builtin" else r.convention): r for r in chosen}
    if len(by_c) != len(chosen):
        raise ValueError("two trained rules of one framework share a convention")
    needed = {(fw, c) for _, c in by_c for fw in ("torch", "jax")} | {(fw, 0.0) for fw, _ in by_c}
    missing = needed - set(by_c)
    if missing:
        raise ValueError(f"trained rules lack their counterparts: {sorted(map(str, missing))}")
    return by_c


def cases(scope: str, rules=None) -> list[dict]:
    chosen = tuple(trained(registry_unless(rules)).values())
    return [{"dataset": ds, "dtype": dt, "scope": scope, "rules": chosen}
            for ds in ("seed", "digits") for dt in DTYPES]


def run_case(device, dataset: str, dtype: str, scope: str, rules) -> list[dict]:
    params0, batches, loss, lr, bias, held_out, settings = setup(dataset, dtype, scope)
    from study.workloads.training import accuracy, first_divergence, train_jax, train_torch
    trainers = {"torch": train_torch, "jax": train_jax}
    by_c = trained(rules)
    runs = {(fw, c): trainers[fw](rule.fn, params0, batches, loss, lr, dtype, bias, device)
            for (fw, c), rule in by_c.items()}
    preacts_per_step = len(batches[0][0]) * params0[0].shape[1]  # batch x hidden units
    records = []
    for (fw, c), run in runs.items():
        other = runs[("jax" if fw == "torch" else "torch", c)]
        base = runs[(fw, 0.0)]["snapshots"]
        rule = by_c[(fw, c)]
        records.append({
            "part": "training", "dataset": dataset, "dtype": dtype, "framework": fw,
            "rule": rule.key, "name": rule.name, "c": None if c == "relu" else c,
            "device": device.name,
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

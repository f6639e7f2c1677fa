"""Measuring seed 001's net: every ReLU rule's loss and gradients on four datasets, and every
rule alone on one array of pre-activations, the same float32 array in both frameworks."""
import numpy as np

from study.measure.probe import reverse_derivative
from study.workloads.nets import DATASETS, SEED, ZERO_X_ROWS, two_layer_gradients
from study.workloads.nets import two_layer_dataset as make_dataset
from study.measure.rules import reference_of, relu_rules

RULE_ALONE = "preactivations"  # no net: the rule on continuous_ties' pre-activations


def preactivations() -> dict[str, np.ndarray]:
    """continuous_ties' x @ w1, summed in float64 and rounded once to float32 (so every machine
    builds the same array), its zero rows made −0; and a seeded standard-normal cotangent."""
    data = make_dataset("continuous_ties")
    z = (data["x"].astype(np.float64) @ data["w1"].astype(np.float64)).astype(np.float32)
    z[ZERO_X_ROWS] = -0.0
    cotangent = np.random.default_rng(SEED + 1).standard_normal(z.shape).astype(np.float32)
    return {"z": z, "cotangent": cotangent}


def rule_alone(rule, z: np.ndarray, cotangent: np.ndarray, device) -> tuple:
    """The rule's value at z and its vector-Jacobian product with the cotangent (numpy)."""
    if rule.framework == "torch":
        t = device.to_torch(z, requires_grad=True)
        y = rule.fn(t)
        y.backward(device.to_torch(cotangent))
        return device.to_numpy(y), device.to_numpy(t.grad)
    import jax
    y, vjp = jax.vjp(rule.fn, device.to_jax(z))
    return device.to_numpy(y), device.to_numpy(vjp(device.to_jax(cotangent))[0])


def cases(scope: str, rules=None) -> list[dict]:
    return [{"dataset": d, "rule": r} for d in DATASETS + (RULE_ALONE,)
            for r in relu_rules(rules=rules)]


def _rule_alone_record(r, device) -> dict:
    data = preactivations()
    value, grad = rule_alone(r, data["z"], data["cotangent"], device)
    zeros = data["z"] == 0
    return {"part": "rule_alone", "dataset": RULE_ALONE, "framework": r.framework,
            "rule": r.key, "name": r.name, "kind": r.kind, "convention": r.convention,
            "reference_rule": reference_of(r).key,
            "measured_at_0": reverse_derivative(r, 0.0, "float32", device), "device": device.name,
            "dtype": str(data["z"].dtype), "shapes": {k: list(v.shape) for k, v in data.items()},
            "data_seed": SEED, "preactivation_zeros": int(zeros.sum()),
            "negative_zeros": int(np.signbit(data["z"][zeros]).sum()),
            "zero_positions": np.argwhere(zeros).tolist(),
            "value": value.tolist(), "grad_z": grad.tolist()}


def run_case(device, dataset: str, rule) -> list[dict]:
    if dataset == RULE_ALONE:
        return [_rule_alone_record(rule, device)]
    data = make_dataset(dataset)
    out = two_layer_gradients(rule, data, device)
    return [{
        "part": "nets", "dataset": dataset, "framework": rule.framework, "rule": rule.key,
        "name": rule.name, "kind": rule.kind, "convention": rule.convention,
        "reference_rule": reference_of(rule).key,
        "measured_at_0": reverse_derivative(rule, 0.0, "float32", device), "device": device.name,
        "dtype": str(data["x"].dtype), "shapes": {k: list(v.shape) for k, v in data.items()},
        "data_seed": None if dataset == "seed" else SEED, "preactivation_zeros": out["zeros"],
        "zero_positions": out["zero_positions"],
        "loss": float(out["loss"]), "grad_w1": out["grad_w1"], "grad_w2": out["grad_w2"],
    }]

"""Measuring seed 001's net: every ReLU rule's loss and gradients on three datasets."""
import numpy as np

from study.conventions import reverse_derivative
from study.nets import seed_two_layer_data, two_layer_gradients
from study.rules import RULES, reference_of, relu_rules

SEED = 0
DATASETS = ("seed", "random_no_ties", "random_ties")
RANDOM_SHAPES = {"x": (32, 16), "w1": (16, 24), "w2": (24, 4)}


def make_dataset(name: str) -> dict[str, np.ndarray]:
    if name == "seed":
        return seed_two_layer_data()
    rng = np.random.default_rng(SEED)
    if name == "random_no_ties":  # continuous draws: an exact-zero pre-activation has measure 0
        return {k: rng.standard_normal(s).astype(np.float32) for k, s in RANDOM_SHAPES.items()}
    # small integers: x @ w1 is exact in float32 and hits 0 often
    return {k: rng.integers(-2, 3, s).astype(np.float32) for k, s in RANDOM_SHAPES.items()}


def cases(scope: str, rules=RULES) -> list[dict]:
    return [{"dataset": d, "rule": r} for d in DATASETS for r in relu_rules(rules=rules)]


def run_case(device, dataset: str, rule) -> list[dict]:
    data = make_dataset(dataset)
    out = two_layer_gradients(rule, data, device)
    return [{
        "dataset": dataset, "framework": rule.framework, "rule": rule.key, "name": rule.name,
        "kind": rule.kind, "convention": rule.convention, "reference_rule": reference_of(rule).key,
        "measured_at_0": reverse_derivative(rule, 0.0, "float32", device), "device": device.name,
        "dtype": str(data["x"].dtype), "shapes": {k: list(v.shape) for k, v in data.items()},
        "data_seed": None if dataset == "seed" else SEED, "preactivation_zeros": out["zeros"],
        "zero_positions": out["zero_positions"],
        "loss": float(out["loss"]), "grad_w1": out["grad_w1"], "grad_w2": out["grad_w2"],
    }]

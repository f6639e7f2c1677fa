"""Measuring seed 001's net: every ReLU rule's loss and gradients on three datasets."""
from study.conventions import reverse_derivative
from study.nets import DATASETS, SEED, two_layer_gradients
from study.nets import two_layer_dataset as make_dataset
from study.rules import REFERENCE_RELU, by_key, relu_rules

def cases(scope: str) -> list[dict]:
    return [{"dataset": d, "rule": r.key} for d in DATASETS for r in relu_rules()]


def run_case(device, dataset: str, rule: str) -> list[dict]:
    r = by_key(rule)
    data = make_dataset(dataset)
    out = two_layer_gradients(r, data, device)
    return [{
        "dataset": dataset, "framework": r.framework, "rule": r.key, "name": r.name,
        "kind": r.kind, "convention": r.convention, "reference_rule": REFERENCE_RELU[r.framework],
        "measured_at_0": reverse_derivative(r, 0.0, "float32", device), "device": device.name,
        "dtype": str(data["x"].dtype), "shapes": {k: list(v.shape) for k, v in data.items()},
        "data_seed": None if dataset == "seed" else SEED, "preactivation_zeros": out["zeros"],
        "zero_positions": out["zero_positions"],
        "loss": float(out["loss"]), "grad_w1": out["grad_w1"], "grad_w2": out["grad_w2"],
    }]

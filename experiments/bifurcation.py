"""How often does ReLU'(0) change a gradient? Bertoin et al. (NeurIPS 2021), Section 3, on digits.

    python -m study run bifurcation          # K = 100 initialisations
    python -m study run bifurcation --full   # K = 1000, as in the paper

For each initialisation, one epoch of minibatches of scikit-learn's digits; an initialisation
counts when any minibatch gives a different first-layer gradient under c = 0 and c = 1.
"""
import numpy as np

from study.bifurcation import FORMULATIONS, bifurcating_inits, stacked_inits
from study.tables import Table
from study.training import digits_data

NAME = "bifurcation"
DESCRIPTION = "Bertoin et al.'s bifurcation count: initialisations whose gradient depends on ReLU'(0)"
SEED = 0
TABLES = ("counts",)
BATCH = 128
DTYPES = ("float16", "float32", "float64")
ARCHITECTURES = ((64, 1), (256, 1), (256, 3))  # (width, hidden layers)
# Published counts out of 1000 initialisations, MNIST, from Bertoin et al. 2021 (the
# deel-ai/relu-prime results), as quoted in the study's issue: reference data, not ours.
PAPER_MNIST_OUT_OF_1000 = {(256, 1): {"float16": 871, "float32": 54, "float64": 0},
                           (256, 3): {"float16": 1000, "float32": 478, "float64": 0}}


def cases(quick: bool, full: bool = False) -> list[dict]:
    k = 1000 if full else 20 if quick else 100
    return [{"formulation": f, "dtype": d, "width": w, "depth": n, "inits": k}
            for (w, n) in ARCHITECTURES for d in DTYPES for f in FORMULATIONS]


def run_case(device, formulation: str, dtype: str, width: int, depth: int, inits: int):
    x, y = digits_data()
    params = stacked_inits(SEED, inits, [x.shape[1]] + [width] * depth + [10])
    hits = bifurcating_inits(formulation, params, x, y, BATCH, dtype)
    return [{"formulation": formulation, "dtype": dtype, "width": width, "depth": depth,
             "inits": inits, "bifurcating": int(hits.sum()),
             "which": np.flatnonzero(hits).tolist(), "device": device.name}]


def tables(runs) -> list[Table]:
    rows = []
    for run in runs:
        pre = [run.label] if len(runs) > 1 else []
        recs = {(r["width"], r["depth"], r["dtype"], r["formulation"]): r for r in run.records
                if "bifurcating" in r}
        for (w, n) in ARCHITECTURES:
            for d in DTYPES:
                got = [recs.get((w, n, d, f)) for f in FORMULATIONS]
                k = next((r["inits"] for r in got if r), None)
                paper = PAPER_MNIST_OUT_OF_1000.get((w, n), {}).get(d)
                rows.append(pre + [w, n, d.replace("float", "") + "-bit", k]
                            + [r["bifurcating"] if r else None for r in got]
                            + [None if paper is None else f"{paper} / 1000"])
    return [Table(
        "counts", "Initialisations whose first-layer gradient depends on ReLU'(0)",
        f"Ours: scikit-learn digits (1797 images of 8×8, pixels/16), one epoch of minibatches of "
        f"{BATCH}, cross-entropy, torch.nn.Linear-style uniform init with biases; an "
        f"initialisation counts if any minibatch gives a different dL/dW1 under c = 0 and c = 1. "
        f"'torch' and 'jax' compute x @ W + b as a matmul rounded to the dtype then a bias add; "
        f"'torch (fused addmm)' rounds x @ W + b once, as nn.Linear does. Theirs: Bertoin et al. "
        f"(NeurIPS 2021), MNIST (784 inputs), PyTorch, out of 1000 initialisations; different "
        f"data, input size and training code, so compare the trend across precisions, not the "
        f"counts.",
        (["run"] if len(runs) > 1 else []) + ["width", "hidden layers", "precision", "K (ours)"]
        + [f"ours: {f}" for f in FORMULATIONS] + ["Bertoin et al. (MNIST)"], rows)]


def findings(runs) -> list[tuple[str, str]]:
    recs = [r for r in (runs[0].records if runs else []) if "bifurcating" in r]
    if not recs:
        return []
    parts = []
    for d in DTYPES:
        sel = [r for r in recs if r["dtype"] == d]
        parts.append(f"{d}: {min(r['bifurcating'] for r in sel)}–{max(r['bifurcating'] for r in sel)}"
                     f" of {sel[0]['inits']}")
    return [("Initialisations whose first-layer gradient depends on ReLU'(0) within one epoch "
             "of digits, across architectures and formulations: " + "; ".join(parts) + ".",
             "counts")]

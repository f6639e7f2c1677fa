"""The timing experiment's design and its timed thunks: every rule's forward plus backward on n
float32 elements (compiled afresh per size where the mode compiles), the two-layer net's step,
the bytes a rule keeps for backward, and the harness calls that time them.

Every rule of a framework and mode is timed at one size in one case, round by round (each
rule once a round, the built-in among them), so that a rule and its built-in see the same state
of the machine. torch.compile uses dynamic=False after torch._dynamo.reset(); the first call of
each is timed on its own (compilation included). Each repeat is synchronised
(block_until_ready / cuda.synchronize) and also records its dispatch-only time.
"""
import functools
import os
from typing import Callable, NamedTuple

import numpy as np

from study.workloads.memory import jax_residual_bytes, torch_saved_bytes
from study.measure.rule import REFERENCE_RELU
from study.compare.stats import MIN_BOOTSTRAP
from study.workloads.timing import (collect_garbage, first_calls, quartiles, time_interleaved,
                                    time_thunk, warm_up)

SEED = 0

MODES = {"torch": ("eager", "compile"), "jax": ("op-by-op", "jit")}

COMPILED = ("compile", "jit")

SIZES = {"quick": (10 ** 3, 10 ** 6), "standard": (8, 10 ** 6, 10 ** 7),
         "full": (8, 10 ** 3, 10 ** 4, 10 ** 5, 10 ** 6, 10 ** 7, 10 ** 8)}

NETS = {"seed": (4, 3, 2, 2), "mid": (256, 256, 1024, 256), "large": (4096, 1024, 4096, 1024)}

SCOPE_NETS = {"quick": ("seed",), "standard": ("seed", "mid"), "full": ("seed", "mid", "large")}

SCOPE_WORKLOADS = {"quick": ("fwd_bwd",), "standard": ("fwd_bwd",), "full": ("fwd_bwd", "sgd")}

# float32 forward plus backward of an elementwise rule must read x and the incoming gradient
# and write the input gradient; y need not be written when only dx is asked for (a fused,
# compiled step drops it)
BYTES_PER_ELEMENT = 12

BUDGET_S = 0.15  # timed rounds per rule and case, after warm-up; at least MIN_ROUNDS rounds

CHECK_BUDGET_S = 0.05  # the same for each thunk of the checks that take a case apart

MIN_ROUNDS, MAX_ROUNDS = MIN_BOOTSTRAP, 400  # enough rounds for a bootstrap interval

WARMUP_S = 0.25  # warm-up rounds of a case last this long (a fresh process starts cold)

FRESH_BLOCKS = 10  # the fresh-process check alternates this many blocks of rounds

# Every rule case, net and case taken apart (eager parts, probes) is timed in this many blocks,
# each in its own process and a quarter of the run from the next, each its share of the
# rounds, so that its interval holds the spread between processes and over the run as well as
# between rounds (a two-level bootstrap). The counts, from the variance components measured
# (the log of a rule ÷ its built-in, median over cases): in a pilot on an AMD EPYC, an SD of
# 0.20 between processes for torch eager at 10^6, 0.05 compiled, 0.04 jax op-by-op, 0.02 jit;
# in C25 (this Intel machine, 5078e64), 0.015 torch eager, 0.013 compiled and 0 for JAX, against
# 0.14-0.29 between rounds of one block. Rounds per block near sqrt(block cost ÷ round cost ×
# within ÷ between variance) (Kalibera and Jones) come to 10-60 on the pilot's machine and more
# here, where a block's cost is what it must repeat (a process's first calls, compiles and
# warm-up): so few blocks, but enough for the interval's width to be estimated (the few-blocks
# factor, study.compare.levels, is 1.87 at 4 blocks and 2.69 at 3, more than a fourth block's
# cost saves). Below 10^6 the standard scope times no compiled mode (see compiled_sizes).
BLOCKS = {"quick": 1, "standard": 4, "full": 4}

HARNESS_LIMIT = 1.15  # in-run ÷ fresh process, either way, beyond which a compiled cell is flagged

# What the study's plan asks of the rules, measured in every run (never asserted in tests):
TARGETS = [
    {"key": "compile_ratio", "target": "torch compile: best custom ÷ built-in at ≥ 10^6 elements",
     "threshold": 1.05, "sense": "≤"},
    {"key": "jit_ratio", "target": "jax jit: best custom ÷ built-in at ≥ 10^6 elements",
     "threshold": 1.05, "sense": "≤"},
    {"key": "copy_fraction", "target": "best compiled fwd+bwd at the largest size as a fraction "
                                       "of copy bandwidth", "threshold": 0.70, "sense": "≥"},
    {"key": "seed_net_eager", "target": "torch eager seed-size net: best custom ÷ built-in",
     "threshold": 1.2, "sense": "≤"},
    {"key": "harness", "target": "every compiled cell the fresh-process check times: in-run ÷ "
                                 "fresh process, as a factor either way",
     "threshold": HARNESS_LIMIT, "sense": "≤"},
    {"key": "wall", "target": "wall time of the whole experiment (s)", "sense": "≤",
     "threshold": {"quick": 45.0, "standard": 249.0, "full": 900.0}},
]


def set_equal_threads() -> dict:
    """Give torch one thread per core, as XLA's CPU client has; returns what is set."""
    import torch
    torch.set_num_threads(os.cpu_count())
    return {"torch": torch.get_num_threads(), "xla_cpu_count": os.cpu_count(),
            "XLA_FLAGS": os.environ.get("XLA_FLAGS", "")}


def torch_sync(device):
    return lambda out: device.synchronize()


def jax_sync(out):
    import jax
    return jax.block_until_ready(out)


@functools.lru_cache(maxsize=2)
def inputs(n: int) -> tuple[np.ndarray, np.ndarray]:
    """x and the incoming gradient, the same in every block of a case (read-only: each
    framework copies them); kept, since drawing 10^7 normals takes a quarter of a second."""
    x = np.random.default_rng(SEED).standard_normal(n).astype(np.float32)
    g = np.ones(n, np.float32)
    for a in (x, g):
        a.setflags(write=False)
    return x, g


def _xla_bytes_accessed(jitted, *args) -> float | None:
    """What XLA's cost analysis says the compiled program reads and writes, in bytes."""
    cost = jitted.lower(*args).compile().cost_analysis()
    cost = cost[0] if isinstance(cost, list) else cost
    return float(cost["bytes accessed"]) if cost and "bytes accessed" in cost else None


class RuleThunk(NamedTuple):
    call: Callable  # forward plus backward, once
    sync: Callable  # waits for call's result
    saved: Callable  # -> bytes the (compiled) rule keeps for backward
    moved: Callable  # -> bytes XLA's cost analysis counts for a jitted step (None elsewhere)


def timed_rules(rules, framework: str, net: str | None = None) -> tuple:
    """The rules of `rules` that timing times alone (or, given a net, in that net's step) in
    one framework, in their order; its reference relu must be among them, since every time
    is read as a ratio to it."""
    chosen = tuple(r for r in rules if r.framework == framework
                   and (net in r.timed_in_nets if net else r.timed))
    if chosen and REFERENCE_RELU[framework].key not in [r.key for r in chosen]:
        raise ValueError(f"timing needs {REFERENCE_RELU[framework].key} among the {framework} "
                         f"rules it times{f' in the {net} net' if net else ''}")
    return chosen


def twin_pairs(rules) -> list[list[str]]:
    """[label, torch rule, its JAX twin] for each torch rule that declares a pair label and
    whose twin is timed too: the pairs compared across frameworks."""
    timed = {r.key for r in rules if r.timed}
    return [[r.paired_as, r.key, r.twin] for r in rules
            if r.framework == "torch" and r.paired_as and r.key in timed and r.twin in timed]


def rule_thunks(framework: str, mode: str, rules, n: int, device) -> dict[str, RuleThunk]:
    """{rule key: RuleThunk}: forward plus backward of each rule on the same n float32
    elements, compiled afresh for this size where the mode compiles."""
    import jax
    import torch
    x_np, g_np = inputs(n)
    out = {}
    if framework == "torch":
        x, g = device.to_torch(x_np, requires_grad=True), device.to_torch(g_np)
        for rule in rules:
            fn = rule.fn
            f = torch.compile(fn, dynamic=False) if mode == "compile" else fn
            out[rule.key] = RuleThunk((lambda f=f: torch.autograd.grad(f(x), x, g)[0]),
                                 torch_sync(device), lambda f=f: torch_saved_bytes(f, x),
                                 lambda: None)
        return out
    x, g = device.to_jax(x_np), device.to_jax(g_np)
    for rule in rules:
        fn = rule.fn
        step = lambda a, b, fn=fn: jax.vjp(fn, a)[1](b)[0]  # noqa: E731
        f = jax.jit(step) if mode == "jit" else step
        out[rule.key] = RuleThunk((lambda f=f: f(x, g)), jax_sync,
                             lambda fn=fn: jax_residual_bytes(fn, x, jit=mode == "jit"),
                             (lambda f=f: _xla_bytes_accessed(f, x, g)) if mode == "jit"
                             else lambda: None)
    return out


def _dynamo_counts() -> dict:
    from torch._dynamo.utils import counters
    return {"graphs": counters["stats"]["unique_graphs"],
            "graph_breaks": sum(counters["graph_break"].values()),
            "recompiles": counters["recompiles"].get("total", 0) if "recompiles" in counters else 0}


def _prepared(framework: str, mode: str, n: int, device, rules) -> tuple[dict, dict, dict]:
    """(thunks, timings with first calls, what each rule saves) for one case, warmed up."""
    collect_garbage()
    if mode == "compile":
        import torch
        torch._dynamo.reset()  # no graph, guard or size hint from an earlier case
        from torch._dynamo.utils import counters
        counters.clear()
    made = rule_thunks(framework, mode, rules, n, device)
    thunks = {k: (t.call, t.sync) for k, t in made.items()}
    timings = first_calls(thunks)
    warm_up(thunks, 2 if n < 10 ** 7 else 1, WARMUP_S)
    return thunks, timings, made


def interleaved(thunks: dict, budget_s: float | None = None, processes: int = 1) -> dict:
    """Thunks timed round by round, each for budget_s (BUDGET_S unless given; at least
    MIN_ROUNDS rounds), or this process's share of both where `processes` share the case."""
    budget_s = BUDGET_S if budget_s is None else budget_s
    return time_interleaved(thunks, MAX_ROUNDS, 2, budget_s * len(thunks) / processes,
                            -(-MIN_ROUNDS // processes), WARMUP_S)


def timed(thunk, sync, repeats=50, warmup=2, processes: int = 1, budget_s: float = BUDGET_S):
    """One thunk's rounds: this process's share where `processes` take them."""
    rounds = -(-max(repeats, MIN_ROUNDS) // processes)
    t = time_thunk(thunk, sync, repeats=rounds, warmup=warmup, budget_s=budget_s / processes,
                   min_repeats=-(-MIN_ROUNDS // processes))
    return {**t, "stats": quartiles(t["times_s"]), "dispatch": quartiles(t["dispatch_s"]),
            "budget_s": budget_s}


def net_thunk(framework: str, mode: str, rule, shape, workload: str, device):
    import jax
    import jax.numpy as jnp
    import torch
    fn = rule.fn
    batch, d_in, d_hidden, d_out = shape
    rng = np.random.default_rng(SEED)
    x_np, w1_np, w2_np = (rng.standard_normal(s).astype(np.float32) / np.sqrt(s[-1] if i else 1)
                          for i, s in enumerate([(batch, d_in), (d_in, d_hidden),
                                                 (d_hidden, d_out)]))
    lr = 1e-6
    if framework == "torch":
        x = device.to_torch(x_np)
        w1, w2 = device.to_torch(w1_np, True), device.to_torch(w2_np, True)

        def loss(a, b):
            return ((fn(x @ a) @ b - 1) ** 2).sum()
        if mode == "compile":
            loss = torch.compile(loss, dynamic=False)

        def step():
            g1, g2 = torch.autograd.grad(loss(w1, w2), (w1, w2))
            if workload == "sgd":
                with torch.no_grad():
                    w1.sub_(lr * g1)
                    w2.sub_(lr * g2)
            return g1
        return step, torch_sync(device)
    x = device.to_jax(x_np)
    params = [device.to_jax(w1_np), device.to_jax(w2_np)]
    grad = jax.grad(lambda p: jnp.sum((fn(x @ p[0]) @ p[1] - 1) ** 2))
    step = (lambda p: [a - lr * b for a, b in zip(p, grad(p))]) if workload == "sgd" else grad
    f = jax.jit(step) if mode == "jit" else step
    state = {"p": params}

    def run():
        out = f(state["p"])
        if workload == "sgd":
            state["p"] = out
        return out
    return run, jax_sync


def memory_record(framework: str, fn, device, n: int = 1 << 20) -> dict:
    """Bytes kept for backward per element, from what autograd / jax.vjp holds, and (on a
    device that reports it) the allocator's growth while the backward state is alive."""
    import jax
    import torch
    x_np, _ = inputs(n)
    if framework == "torch":
        x = device.to_torch(x_np)
        out = {"n": n, "torch_saved": torch_saved_bytes(fn, x)}
        if device.name == "cuda":
            torch.cuda.synchronize()
            torch.cuda.reset_peak_memory_stats()
            base = torch.cuda.memory_allocated()
            leaf = x.detach().requires_grad_(True)
            y = fn(leaf)
            torch.cuda.synchronize()
            out["device_peak_growth"] = torch.cuda.max_memory_allocated() - base
            del y
        return out
    x = device.to_jax(x_np)
    out = {"n": n, "jax_vjp": jax_residual_bytes(fn, x), "jax_jit_vjp":
           jax_residual_bytes(fn, x, jit=True)}
    stats = device.jax_device.memory_stats()
    if stats:
        before = stats.get("bytes_in_use", 0)
        held = jax.vjp(fn, x)[1]
        jax.block_until_ready(jax.tree_util.tree_leaves(held))
        out["device_bytes_in_use_growth"] = (device.jax_device.memory_stats()["bytes_in_use"]
                                             - before)
        del held
    return out

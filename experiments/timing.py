"""What custom rules cost: time and memory of ReLU rules and the two-layer net, both frameworks.

    python -m study run timing            # rules at 8, 10^6, 10^7 elements, seed and mid nets
    python -m study run timing --quick    # 10^3 and 10^6, the seed net, no self-checks
    python -m study run timing --full     # up to 10^8, the large net, SGD steps

Every rule of a framework and mode is timed at one size in one case, round by round (each
rule once a round, the built-in among them), so that a rule and its built-in see the same state
of the machine. Compiled modes compile each rule for each size, as jax.jit does: torch.compile
with dynamic=False after torch._dynamo.reset(), so no compiled graph, guard or size hint of an
earlier case is in play; the first call of each is timed on its own (compilation included). Each
repeat is synchronised (block_until_ready / cuda.synchronize) and also records its
dispatch-only time. The harness checks itself: each compiled case at FRESH_SIZES is
also prepared alone in a fresh process, and blocks of rounds alternate between the run and
that process (this VM's speed drifts by up to 1.8× over seconds, so the two must be timed in
alternation); the report shows in-run ÷ fresh per rule.
"""
import gc
import json
import os
import re
import resource
import subprocess
import sys

import jax
import jax.numpy as jnp
from jax import lax
import numpy as np
import torch

from experiments import inductor_bool_mask, timing_report
from study.devices import Device
from study.experiment import Comparison, Experiment
from study.memory import jax_residual_bytes, torch_saved_bytes
from study.rules import REFERENCE_RELU, by_key
from study.timing import (first_calls, summarize, time_interleaved, time_thunk, timed_rounds,
                          warm_up)

DESCRIPTION = "time and memory of each rule and of the two-layer net, eager and compiled"
QUESTION = ("What does a custom ReLU rule cost in time and memory against the built-in, eager "
            "and compiled, in each framework, and how close does it come to the machine's limits?")
SEED = 0
RULES = {"torch": ("torch_relu", "torch_myrelu_seed", "torch_custom_c0", "torch_custom_op_c0",
                   "torch_custom_bool_mask", "torch_custom_bit_mask"),
         "jax": ("jax_relu", "jax_custom_c0", "jax_custom_nondiff_c0", "jax_custom_bool_mask",
                 "jax_custom_bit_mask")}
MODES = {"torch": ("eager", "compile"), "jax": ("op-by-op", "jit")}
COMPILED = ("compile", "jit")
SIZES = {"quick": (10 ** 3, 10 ** 6), "standard": (8, 10 ** 6, 10 ** 7),
         "full": (8, 10 ** 3, 10 ** 4, 10 ** 5, 10 ** 6, 10 ** 7, 10 ** 8)}
NETS = {"seed": (4, 3, 2, 2), "mid": (256, 256, 1024, 256), "large": (4096, 1024, 4096, 1024)}
SCOPE_NETS = {"quick": ("seed",), "standard": ("seed", "mid"), "full": ("seed", "mid", "large")}
SCOPE_WORKLOADS = {"quick": ("fwd_bwd",), "standard": ("fwd_bwd",), "full": ("fwd_bwd", "sgd")}
NET_RULES = {"torch": ("torch_relu", "torch_myrelu_seed", "torch_custom_c0", "torch_custom_op_c0"),
             "jax": ("jax_relu", "jax_custom_c0", "jax_custom_nondiff_c0")}
# float32 forward plus backward of an elementwise rule must read x and the incoming gradient
# and write the input gradient; y need not be written when only dx is asked for (a fused,
# compiled step drops it)
BYTES_PER_ELEMENT = 12
BUDGET_S = 0.15  # timed rounds per rule and case, after warm-up; at least MIN_ROUNDS rounds
CHECK_BUDGET_S = 0.05  # the same for each thunk of the checks that take a case apart
MIN_ROUNDS, MAX_ROUNDS = 20, 400  # 20: enough rounds for a bootstrap interval of the median
WARMUP_S = 0.25  # warm-up rounds of a case last this long (a fresh process starts cold)
FRESH_BLOCKS = 10  # the fresh-process check alternates this many blocks of rounds
TORCH_JAX_PAIRS = (("relu", "torch_relu", "jax_relu"),
                   ("custom c=0", "torch_custom_c0", "jax_custom_c0"),
                   ("custom_op / nondiff_argnums", "torch_custom_op_c0", "jax_custom_nondiff_c0"),
                   ("bool mask", "torch_custom_bool_mask", "jax_custom_bool_mask"),
                   ("bit mask", "torch_custom_bit_mask", "jax_custom_bit_mask"))
PROFILE = {"rule": "torch_relu", "calls": 10}  # torch.profiler around compiled and eager calls
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
     "threshold": {"quick": 45.0, "standard": 150.0, "full": 900.0}},
]


def set_equal_threads() -> dict:
    """Give torch one thread per core, as XLA's CPU client has; returns what is set."""
    torch.set_num_threads(os.cpu_count())
    return {"torch": torch.get_num_threads(), "xla_cpu_count": os.cpu_count(),
            "XLA_FLAGS": os.environ.get("XLA_FLAGS", "")}


def _torch_sync(device):
    return lambda out: device.synchronize()


def _jax_sync(out):
    return jax.block_until_ready(out)


def _inputs(n: int) -> tuple[np.ndarray, np.ndarray]:
    return (np.random.default_rng(SEED).standard_normal(n).astype(np.float32),
            np.ones(n, np.float32))


def _xla_bytes_accessed(jitted, *args) -> float | None:
    """What XLA's cost analysis says the compiled program reads and writes, in bytes."""
    cost = jitted.lower(*args).compile().cost_analysis()
    cost = cost[0] if isinstance(cost, list) else cost
    return float(cost["bytes accessed"]) if cost and "bytes accessed" in cost else None


def rule_thunks(framework: str, mode: str, keys, n: int, device) -> dict:
    """{rule: (call, sync, saved, moved)}: forward plus backward of each rule on the same n
    float32 elements, compiled afresh for this size where the mode compiles; saved() gives the
    bytes the (compiled) rule keeps for backward, moved() the bytes XLA's cost analysis counts
    for a jitted step (None elsewhere)."""
    x_np, g_np = _inputs(n)
    out = {}
    if framework == "torch":
        x, g = device.to_torch(x_np, requires_grad=True), device.to_torch(g_np)
        for key in keys:
            fn = by_key(key).fn
            f = torch.compile(fn, dynamic=False) if mode == "compile" else fn
            out[key] = ((lambda f=f: torch.autograd.grad(f(x), x, g)[0]), _torch_sync(device),
                        lambda f=f: torch_saved_bytes(f, x), lambda: None)
        return out
    x, g = device.to_jax(x_np), device.to_jax(g_np)
    for key in keys:
        fn = by_key(key).fn
        step = lambda a, b, fn=fn: jax.vjp(fn, a)[1](b)[0]  # noqa: E731
        f = jax.jit(step) if mode == "jit" else step
        out[key] = ((lambda f=f: f(x, g)), _jax_sync,
                    lambda fn=fn: jax_residual_bytes(fn, x, jit=mode == "jit"),
                    (lambda f=f: _xla_bytes_accessed(f, x, g)) if mode == "jit" else lambda: None)
    return out


def _dynamo_counts() -> dict:
    from torch._dynamo.utils import counters
    return {"graphs": counters["stats"]["unique_graphs"],
            "graph_breaks": sum(counters["graph_break"].values()),
            "recompiles": counters["recompiles"].get("total", 0) if "recompiles" in counters else 0}


def _prepared(framework: str, mode: str, n: int, device, rules=None) -> tuple[dict, dict, dict]:
    """(thunks, timings with first calls, what each rule saves) for one case, warmed up."""
    gc.collect()
    if mode == "compile":
        torch._dynamo.reset()  # no graph, guard or size hint from an earlier case
        from torch._dynamo.utils import counters
        counters.clear()
    made = rule_thunks(framework, mode, rules or RULES[framework], n, device)
    thunks = {k: (call, sync) for k, (call, sync, *_) in made.items()}
    timings = first_calls(thunks)
    warm_up(thunks, 2 if n < 10 ** 7 else 1, WARMUP_S)
    return thunks, timings, made


def time_rules(framework: str, mode: str, n: int, device, fresh: "FreshProcess | None" = None
               ) -> dict:
    """{rule: timing} for every rule of the framework, interleaved round by round. With a
    fresh process, blocks of rounds alternate between this process and that one, which
    times the same case alone, so that the machine's drift hits both alike."""
    thunks, timings, made = _prepared(framework, mode, n, device)
    blocks = FRESH_BLOCKS if fresh else 1
    in_run_blocks: dict = {k: [] for k in thunks}
    fresh_blocks: dict = {k: [] for k in thunks}
    if fresh:
        fresh.ready()
    for block in range(blocks):
        before = {k: len(t["times_s"]) for k, t in timings.items()}
        timed_rounds(thunks, timings, MAX_ROUNDS // blocks, BUDGET_S * len(thunks) / blocks,
                     max(1, MIN_ROUNDS // blocks), collect=block == 0)
        for key, t in timings.items():
            in_run_blocks[key].append(float(np.median(t["times_s"][before[key]:])))
        if fresh:
            for key, times in fresh.time(BUDGET_S * len(thunks) / blocks).items():
                fresh_blocks[key].append(times)
    counts = _dynamo_counts() if mode == "compile" else None
    for key, t in timings.items():
        moved = made[key][3]()
        t.update(stats=summarize(t["times_s"]), dispatch=summarize(t["dispatch_s"]),
                 saved_bytes_per_element=made[key][2]() / n,
                 xla_bytes_per_element=None if moved is None else moved / n,
                 dynamo_counts_of_case=counts)
        if fresh:
            every = [x for block in fresh_blocks[key] for x in block]
            t["block_medians"] = in_run_blocks[key]
            t["fresh"] = {"stats": summarize(every), "first_call_s": fresh.first_calls[key],
                          "blocks": blocks,
                          "block_medians": [float(np.median(b)) for b in fresh_blocks[key]]}
    return timings


class FreshProcess:
    """A new Python process that prepares the same case and times it on request: blocks of
    rounds alternate with this process's (see time_rules)."""

    def __init__(self, device_name: str, framework: str, mode: str, n: int,
                 rules: tuple[str, ...] | None = None):
        root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
        rules = rules or RULES.get(framework, ())
        self.proc = subprocess.Popen(
            [sys.executable, "-c", "from experiments.timing import serve_fresh; serve_fresh()",
             device_name, framework, mode, str(n), ",".join(rules)], cwd=root, text=True,
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        self.first_calls: dict = {}

    def _reply(self) -> dict:
        line = self.proc.stdout.readline()
        if not line:
            lines = [ln for ln in self.proc.stderr.read().strip().splitlines() if ln.strip()]
            raise RuntimeError(f"the fresh process failed: {lines[-1] if lines else 'no output'}")
        return json.loads(line)

    def ready(self) -> None:
        self.first_calls = self._reply()["first_call_s"]

    def time(self, budget_s: float) -> dict:
        self.proc.stdin.write(json.dumps({"budget_s": budget_s}) + "\n")
        self.proc.stdin.flush()
        return self._reply()

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.stdin.close()
            self.proc.wait(timeout=60)


def serve_fresh() -> None:
    """The fresh process: prepare the case named on the command line, say so with its first
    calls, then time a block of rounds for each request on stdin until stdin closes."""
    from study.frameworks import use_shared_settings
    use_shared_settings()
    device_name, framework, mode, n, rules = sys.argv[1:6]
    device = Device(device_name)
    set_equal_threads()
    with device.as_default():
        thunks, timings, _ = _prepared(framework, mode, int(n), device, rules.split(","))
        print(json.dumps({"first_call_s": {k: t["first_call_s"] for k, t in timings.items()}}),
              flush=True)
        for i, line in enumerate(sys.stdin):
            budget = json.loads(line)["budget_s"]
            block = {k: {"times_s": [], "dispatch_s": []} for k in thunks}
            timed_rounds(thunks, block, MAX_ROUNDS // FRESH_BLOCKS, budget,
                         max(1, MIN_ROUNDS // FRESH_BLOCKS), collect=i == 0)
            print(json.dumps({k: b["times_s"] for k, b in block.items()}), flush=True)


def _rules_records(base: dict, framework: str, mode: str, n: int, device,
                   fresh_check: bool) -> list[dict]:
    fresh = FreshProcess(device.name, framework, mode, n) if fresh_check else None
    try:
        timings = time_rules(framework, mode, n, device, fresh)
    finally:
        if fresh:
            fresh.close()
    return [{**base, "part": "rule", "rule": key, "name": by_key(key).name,
             "bytes_per_element": BYTES_PER_ELEMENT, "budget_s": BUDGET_S,
             "interleaved_with": list(timings), **t} for key, t in timings.items()]


# The fresh-process check at 10^6 (at 10^7 too with --full: there one torch.compile case
# takes over a minute on this CPU, doubled by the check)
FRESH_SIZES = {"quick": (), "standard": (10 ** 6,), "full": (10 ** 6, 10 ** 7)}
# --quick is a fast look at the rules and the seed net: it leaves out the harness's checks
QUICK_SKIPS = ("the fresh-process check", "the Timer cross-check", "the profile",
               "the probes", "the shared dynamic wrapper", "the eager cost taken apart",
               "the page-fault check")


def _skipped(scope: str | None) -> list[str]:
    if scope != "quick":
        return []
    print(f"[timing] --quick leaves out {', '.join(QUICK_SKIPS)} and the matmul rate",
          file=sys.stderr, flush=True)
    return list(QUICK_SKIPS) + ["the matmul rate"]


def cases(scope: str) -> list[dict]:
    sizes = SIZES[scope]
    checks = scope != "quick"
    out = [{"part": "plan", "scope": scope}] + [
        {"part": "machine", "n": n, "matmul": checks and n == sizes[-1]}
        for n in sorted({min(10 ** 6, sizes[-1]), sizes[-1]})]
    out += [{"part": "rules", "framework": fw, "mode": m, "n": n,
             "fresh_check": checks and m in COMPILED and n in FRESH_SIZES[scope]}
            for fw in RULES for m in MODES[fw] for n in sizes]
    for net in SCOPE_NETS[scope]:
        for workload in SCOPE_WORKLOADS[scope] if net != "large" else ("fwd_bwd",):
            for fw in NET_RULES:
                for m in MODES[fw]:
                    for r in NET_RULES[fw]:
                        if net == "large" and (m not in ("eager", "jit") or r in (
                                "torch_myrelu_seed", "torch_custom_op_c0", "jax_custom_nondiff_c0")):
                            continue  # ~200 GFLOP a step: the built-in and one custom rule
                        if m == "compile" and net != "seed" and scope != "full":
                            continue  # a torch.compile a rule and net: the seed net only
                        out.append({"part": "net", "framework": fw, "mode": m, "rule": r,
                                    "net": net, "workload": workload})
    out += [{"part": "memory", "framework": fw, "rule": r} for fw in RULES for r in RULES[fw]]
    if not checks:
        return out
    out += [{"part": "eager_parts", "framework": fw, "n": n} for fw in RULES
            for n in PARTS_SIZES[scope]]
    out += [{"part": "page_faults", "n": n} for n in (10 ** 6, sizes[-1])]
    out.append({"part": "cross_check", "n": 10 ** 6})
    out += [{"part": "profile", "mode": m, "n": 10 ** 6} for m in MODES["torch"]]
    out.append({"part": "probes", "n": 10 ** 6})
    out.append({"part": "shared_dynamic", "rule": REFERENCE_RELU["torch"], "n": 10 ** 6})
    return out


def run_case(device, part: str, **case) -> list[dict]:
    base = {"part": part, "device": device.name, "threads": set_equal_threads(), **case}
    if part == "plan":  # what the report reads as this run's design, never from today's code
        return [{**base, "targets": TARGETS, "reference_rules": REFERENCE_RELU,
                 "torch_jax_pairs": TORCH_JAX_PAIRS, "harness_limit": HARNESS_LIMIT,
                 "min_rounds": MIN_ROUNDS, "skipped": _skipped(case.get("scope"))}]
    if part == "rules":
        return _rules_records(base, case["framework"], case["mode"], case["n"], device,
                              case["fresh_check"])
    if part == "net":
        return [net_record(base, device, **case)]
    if part == "memory":
        return [{**base, "name": by_key(case["rule"]).name,
                 **memory_record(case["framework"], by_key(case["rule"]).fn, device)}]
    if part == "machine":
        return machine_limits(device, case["n"], base, case["matmul"])
    if part == "eager_parts":
        return eager_parts_records(base, device, case["framework"], case["n"])
    if part == "page_faults":
        return page_fault_records(base, device, case["n"])
    if part == "cross_check":
        return cross_check(device, case["n"], base)
    if part == "profile":
        return [profile_record(base, device, case["mode"], case["n"])]
    if part == "probes":
        return probe_records(base, device, case["n"])
    if part == "shared_dynamic":
        return [shared_dynamic_record(base, device, case["rule"], case["n"])]
    raise ValueError(f"unknown timing part {part!r}")


def _interleaved(thunks: dict, budget_s: float = BUDGET_S) -> dict:
    """Thunks timed round by round, each for budget_s (at least MIN_ROUNDS rounds)."""
    return time_interleaved(thunks, MAX_ROUNDS, 2, budget_s * len(thunks), MIN_ROUNDS, WARMUP_S)


def _timed(thunk, sync, repeats=50, warmup=2):
    t = time_thunk(thunk, sync, repeats=max(repeats, MIN_ROUNDS), warmup=warmup,
                   budget_s=BUDGET_S, min_repeats=MIN_ROUNDS)
    return {**t, "stats": summarize(t["times_s"]), "dispatch": summarize(t["dispatch_s"]),
            "budget_s": BUDGET_S}


# --- the two-layer net, memory, the machine's limits, the cross-check, the profile ----------

def net_thunk(framework: str, mode: str, key: str, shape, workload: str, device):
    fn = by_key(key).fn
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
        return step, _torch_sync(device)
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
    return run, _jax_sync


def net_record(base: dict, device, framework: str, mode: str, rule: str, net: str,
               workload: str) -> dict:
    shape = NETS[net]
    thunk, sync = net_thunk(framework, mode, rule, shape, workload, device)
    b, i, h, o = shape
    flops = 3 * 2 * b * (i * h + h * o)  # forward matmuls, twice that for backward
    return {**base, "name": by_key(rule).name, "shape": list(shape), "flops": flops,
            **_timed(thunk, sync, repeats=20, warmup=0 if net == "large" else 2)}


def memory_record(framework: str, fn, device, n: int = 1 << 20) -> dict:
    """Bytes kept for backward per element, from what autograd / jax.vjp holds, and (on a
    device that reports it) the allocator's growth while the backward state is alive."""
    x_np, _ = _inputs(n)
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
        out["device_bytes_in_use_growth"] = device.jax_device.memory_stats()["bytes_in_use"] - before
        del held
    return out


def minor_faults_per_call(thunk, sync, calls: int = 5) -> float:
    """Minor page faults of this process per synchronised call (a fresh output buffer the
    allocator takes from the kernel faults once a page when first written)."""
    before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    for _ in range(calls):
        sync(thunk())
    return (resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before) / calls


def _faulted(timings: dict, thunks: dict) -> dict:
    return {k: {**t, "minor_faults_per_call": minor_faults_per_call(*thunks[k])}
            for k, t in timings.items()}


def copy_thunks(device, n: int) -> dict:
    """{(what, into): (thunk, sync)}: n float32 elements copied by numpy, torch and JAX, each
    into a buffer that already exists and into a new one. JAX writes into an existing buffer
    only by donating it: the copy's result is the next call's destination."""
    x_np = _inputs(n)[0]
    out_np = np.empty_like(x_np)
    xt, out_t = device.to_torch(x_np), device.to_torch(np.empty_like(x_np))
    xj = device.to_jax(x_np)
    into_j = jax.jit(lambda src, dst: dst.at[:].set(src), donate_argnums=1)
    new_j = jax.jit(lambda a: a + 0.0)  # x + 0.0 is no no-op: read n, write n
    held = {"dst": device.to_jax(np.zeros_like(x_np))}

    def donated():
        held["dst"] = into_j(xj, held["dst"])
        return held["dst"]
    out = {("copy torch", "preallocated"): (lambda: out_t.copy_(xt), _torch_sync(device)),
           ("copy torch", "new buffer"): (lambda: xt.clone(), _torch_sync(device)),
           ("copy jax", "preallocated"): (donated, _jax_sync),
           ("copy jax", "new buffer"): (lambda: new_j(xj), _jax_sync)}
    if device.name == "cpu":  # numpy's copy is a host copy
        out |= {("copy numpy", "preallocated"): (lambda: np.copyto(out_np, x_np) or out_np,
                                                    lambda _: None),
                ("copy numpy", "new buffer"): (lambda: x_np.copy(), lambda _: None)}
    return out


def machine_limits(device, n: int, base: dict, matmul: bool) -> list[dict]:
    """Copy bandwidth at n elements (a fraction of it compares like with like only at the same
    n: 10^6 floats sit in cache where 10^7 do not): numpy, torch and JAX, each into an
    existing buffer and into a new one, interleaved, with the page faults each call takes.
    The machine's copy bandwidth is the best copy into an existing buffer. Where asked, the
    matmul rate."""
    thunks = copy_thunks(device, n)
    timings = _faulted(_interleaved(thunks, CHECK_BUDGET_S), thunks)
    records = [{**base, "what": what, "into": into, "bytes": 2 * 4 * n,
                "page_bytes": resource.getpagesize(),
                "stats": summarize(t["times_s"]), "budget_s": CHECK_BUDGET_S, **t}
               for (what, into), t in timings.items()]
    if not matmul:
        return records
    m = 1024 if n >= 10 ** 6 else 128  # large enough to reach the machine's matmul rate
    a_np = np.random.default_rng(SEED).standard_normal((m, m)).astype(np.float32)
    at, aj = device.to_torch(a_np), device.to_jax(a_np)
    mm_j = jax.jit(lambda a: a @ a)
    return records + [{**base, "what": "matmul torch", "flops": 2 * m ** 3,
                       **_timed(lambda: at @ at, _torch_sync(device))},
                      {**base, "what": "matmul jax", "flops": 2 * m ** 3,
                       **_timed(lambda: mm_j(aj), _jax_sync)}]


# --- the eager cost taken apart -------------------------------------------------------------

class ReLUOverBuiltinKernels(torch.autograd.Function):
    """torch.relu's own kernels behind autograd.Function: forward torch.relu, backward
    aten.threshold_backward on the saved output, as torch.relu's derivative formula does. Its
    step over the built-in's is what autograd.Function itself costs."""

    @staticmethod
    def forward(ctx, x):
        y = torch.relu(x)
        ctx.save_for_backward(y)
        return y

    @staticmethod
    def backward(ctx, grad):
        y, = ctx.saved_tensors
        return torch.ops.aten.threshold_backward(grad, y, 0)


def _jax_relu_backward(x, g):
    return lax.select(x > 0, g, lax.full_like(g, 0))  # jax.nn.relu's own jvp rule, transposed


@jax.custom_vjp
def jax_relu_over_builtin_ops(x):
    return jax.nn.relu(x)


jax_relu_over_builtin_ops.defvjp(lambda x: (jax.nn.relu(x), x),
                                 lambda x, g: (_jax_relu_backward(x, g),))
OVER_BUILTIN = {"torch": ("autograd.Function over torch.relu's kernels",
                          ReLUOverBuiltinKernels.apply),
                "jax": ("custom_vjp over jax.nn.relu's ops", jax_relu_over_builtin_ops)}
EAGER = {"torch": "eager", "jax": "op-by-op"}
PARTS_SIZES = {"quick": (), "standard": (10 ** 6,), "full": (10 ** 6, 10 ** 7)}


class _Context:
    """autograd's ctx, for calling a Function's forward and backward directly."""

    def save_for_backward(self, *tensors):
        self.saved_tensors = tensors


def _torch_pieces(fn, x, g):
    """(forward body, backward body) thunks of a rule written as autograd.Function, called
    directly (no autograd), or None for another kind of rule."""
    cls = getattr(fn, "__self__", None)
    if not (isinstance(cls, type) and issubclass(cls, torch.autograd.Function)):
        return None
    modern = cls.setup_context is not torch.autograd.Function.setup_context
    ctx = _Context()

    def forward():
        if not modern:
            return cls.forward(ctx, x)
        y = cls.forward(x)
        cls.setup_context(ctx, (x,), y)
        return y
    with torch.no_grad():
        forward()
    return forward, lambda: cls.backward(ctx, g)


def _jax_pieces(fn, x, g):
    """(forward body, backward body) of a custom_vjp rule, op by op, or None."""
    if not isinstance(fn, jax.custom_vjp):
        return None
    residual = fn.fwd(x)[1]
    return (lambda: fn.fwd(x)), (lambda: fn.bwd(residual, g))


def _step(framework: str, fn, x, g):
    if framework == "torch":
        return lambda: torch.autograd.grad(fn(x), x, g)[0]
    return lambda: jax.vjp(fn, x)[1](g)[0]


def _builtin_pieces(framework: str, x, g):
    """(forward, backward) of the built-in: its own kernels, called directly."""
    if framework == "torch":
        y = torch.relu(x)
        return (lambda: torch.relu(x)), (lambda: torch.ops.aten.threshold_backward(g, y, 0))
    return (lambda: jax.nn.relu(x)), (lambda: _jax_relu_backward(x, g))


def eager_part_thunks(framework: str, n: int, device) -> dict:
    """{(rule, piece): (thunk, sync)}: the step (forward plus backward), the forward body
    alone and the backward body alone of the built-in, of the built-in's own kernels behind
    the framework's custom-rule API, and of each custom rule whose body can be called alone;
    the backward body also on the same values sorted (every sign in one run), the one change
    that shows whether its time depends on the pattern of signs."""
    x_np, g_np = _inputs(n)
    sync = _torch_sync(device) if framework == "torch" else _jax_sync
    if framework == "torch":
        xg, g = device.to_torch(x_np, requires_grad=True), device.to_torch(g_np)
        xs = {"random": xg.detach(), "sorted": device.to_torch(np.sort(x_np))}
        pieces_of = _torch_pieces
    else:
        xg, g = device.to_jax(x_np), device.to_jax(g_np)
        xs = {"random": xg, "sorted": device.to_jax(np.sort(x_np))}
        pieces_of = _jax_pieces
    ref = REFERENCE_RELU[framework]
    label, over = OVER_BUILTIN[framework]
    rules = {ref: by_key(ref).fn, label: over} | {
        key: by_key(key).fn for key in RULES[framework]
        if key != ref and pieces_of(by_key(key).fn, xs["random"], g)}
    out = {}
    for rule, fn in rules.items():
        pieces = {s: _builtin_pieces(framework, x, g) if rule == ref else pieces_of(fn, x, g)
                  for s, x in xs.items()}
        out[(rule, "step")] = _step(framework, fn, xg, g), sync
        out[(rule, "forward")] = pieces["random"][0], sync
        out[(rule, "backward")] = pieces["random"][1], sync
        out[(rule, "backward, sorted signs")] = pieces["sorted"][1], sync
    return out


def eager_parts_records(base: dict, device, framework: str, n: int) -> list[dict]:
    thunks = eager_part_thunks(framework, n, device)
    timings = _faulted(_interleaved(thunks, CHECK_BUDGET_S), thunks)
    names = {k: by_key(k).name for k in RULES[framework]}
    return [{**base, "rule": rule, "name": names.get(rule, rule), "piece": piece,
             "reference": REFERENCE_RELU[framework], "over_builtin": OVER_BUILTIN[framework][0],
             "stats": summarize(t["times_s"]), "budget_s": CHECK_BUDGET_S, **t}
            for (rule, piece), t in timings.items()]


# --- the page-fault check: fresh outputs against preallocated ones --------------------------

def page_fault_thunks(device, n: int) -> dict:
    """torch.relu's step three ways on n elements: through autograd (fresh outputs), its two
    kernels called directly (fresh outputs, no autograd), and the same kernels writing into
    buffers that already exist (out= variants)."""
    x_np, g_np = _inputs(n)
    xg, g = device.to_torch(x_np, requires_grad=True), device.to_torch(g_np)
    x = xg.detach()
    y, dx = torch.empty_like(x), torch.empty_like(x)
    sync = _torch_sync(device)

    def kernels():
        return torch.ops.aten.threshold_backward(g, torch.clamp_min(x, 0), 0)

    def into():
        torch.clamp_min(x, 0, out=y)
        return torch.ops.aten.threshold_backward.grad_input(g, y, 0, grad_input=dx)
    return {"torch.relu step (autograd, new outputs)": (_step("torch", torch.relu, xg, g), sync),
            "its kernels, new outputs": (kernels, sync),
            "its kernels, into existing outputs": (into, sync)}


def page_fault_records(base: dict, device, n: int) -> list[dict]:
    thunks = page_fault_thunks(device, n)
    timings = _faulted(_interleaved(thunks, CHECK_BUDGET_S), thunks)
    return [{**base, "way": way, "stats": summarize(t["times_s"]), "budget_s": CHECK_BUDGET_S, **t}
            for way, t in timings.items()]


CROSS_CHECK = {"rounds": 3, "timer_min_run_s": 0.2}


def cross_check(device, n: int, base: dict) -> list[dict]:
    """Our harness and torch.utils.benchmark.Timer on the same thunk, alternated round by
    round so that the machine's drift hits both alike."""
    import torch.utils.benchmark as benchmark
    key = REFERENCE_RELU["torch"]
    thunk, sync, *_ = rule_thunks("torch", "eager", [key], n, device)[key]
    ours, theirs = [], []
    rounds = CROSS_CHECK["rounds"]
    for _ in range(rounds):
        ours.append(_timed(thunk, sync)["stats"]["median"])
        timer = benchmark.Timer(stmt="thunk(); sync(None)",
                                globals={"thunk": thunk, "sync": sync},
                                num_threads=torch.get_num_threads())
        with torch.device("cpu"):  # the Timer's own statistics are host bookkeeping
            theirs.append(timer.blocked_autorange(min_run_time=CROSS_CHECK["timer_min_run_s"])
                          .median)
    return [{**base, "ours_s": ours, "timer_s": theirs, "rounds": rounds,
             "timer_num_threads": torch.get_num_threads()}]


def _profiled_events(prof, calls: int) -> list[dict]:
    events = {}
    for e in prof.key_averages():
        name = re.sub(r"(CompiledFxGraph) \w+", r"\1", e.key)
        entry = events.setdefault(name, {"event": name, "calls": 0, "self_cpu_us": 0.0,
                                         "cpu_total_us": 0.0, "self_device_us": 0.0})
        entry["calls"] += e.count / calls
        entry["self_cpu_us"] += e.self_cpu_time_total / calls
        entry["cpu_total_us"] += e.cpu_time_total / calls
        entry["self_device_us"] += getattr(e, "self_device_time_total", 0.0) / calls
    return sorted(events.values(), key=lambda e: -(e["self_device_us"] or e["self_cpu_us"]))[:10]


def profile_record(base: dict, device, mode: str, n: int) -> dict:
    """torch.profiler around calls of one rule's forward plus backward, after warm-up: where
    a call's time goes (the compiled forward and backward graphs, or the eager ops), and what
    the rule keeps for backward, from which the bytes each kernel moves follow."""
    from torch.profiler import ProfilerActivity, profile
    key = PROFILE["rule"]
    torch._dynamo.reset()
    thunk, sync, saved_bytes, _ = rule_thunks("torch", mode, [key], n, device)[key]
    for _ in range(3):
        sync(thunk())
    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if device.name == "cuda" else [])
    with profile(activities=activities) as prof:
        for _ in range(PROFILE["calls"]):
            sync(thunk())
    saved = saved_bytes()
    return {**base, "framework": "torch", "rule": key, "name": by_key(key).name,
            "calls": PROFILE["calls"], "events": _profiled_events(prof, PROFILE["calls"]),
            "saved_bytes_per_element": saved / n}


def probe_records(base: dict, device, n: int) -> list[dict]:
    """The reproducer's ops (experiments/inductor_bool_mask.py), each alone and the rule's
    whole step, eager and compiled with and without inductor's vector code, on random and on
    sorted signs, interleaved; each compiled record keeps its kernels' store and load lines."""
    torch._dynamo.reset()
    calls, code = inductor_bool_mask.thunks(n, device.name)
    roles, ways = inductor_bool_mask.roles(), inductor_bool_mask.compile_options(device.name)
    timings = _interleaved({k: (call, _torch_sync(device)) for k, call in calls.items()},
                           CHECK_BUDGET_S)
    return [{**base, "probe": name, "mode": way, "signs": signs, "role": roles[name][1],
             "bytes_per_element": roles[name][0], "compiled": way in ways,
             "inductor_options": ways.get(way),
             "stats": summarize(t["times_s"]), "first_call_s": t["first_call_s"],
             "times_s": t["times_s"], **({"kernel_lines": code[(name, way)]}
                                         if (name, way) in code else {})}
            for (name, way, signs), t in timings.items()]


def shared_dynamic_record(base: dict, device, key: str, n: int) -> dict:
    """The harness before per-size compilation, against it: one torch.compile(dynamic=True)
    wrapper first called at 8 elements, then timed at n, interleaved with the same rule
    compiled for n alone (dynamic=False). Inductor picks a kernel's code from the sizes it
    first sees (its size hints), so the shared wrapper runs code chosen for 8 elements."""
    torch._dynamo.reset()
    fn = by_key(key).fn
    shared = torch.compile(fn, dynamic=True)
    small = device.to_torch(_inputs(8)[0], requires_grad=True)
    torch.autograd.grad(shared(small), small, device.to_torch(_inputs(8)[1]))
    x_np, g_np = _inputs(n)
    x, g = device.to_torch(x_np, requires_grad=True), device.to_torch(g_np)
    per_size = torch.compile(fn, dynamic=False)
    thunks = {"shared dynamic, first called at 8": (
                  (lambda: torch.autograd.grad(shared(x), x, g)[0]), _torch_sync(device)),
              "compiled for this size": (
                  (lambda: torch.autograd.grad(per_size(x), x, g)[0]), _torch_sync(device))}
    timings = _interleaved(thunks)
    return {**base, "framework": "torch", "mode": "compile", "name": by_key(key).name,
            "ways": {way: {"stats": summarize(t["times_s"]), "first_call_s": t["first_call_s"]}
                     for way, t in timings.items()}}


EXPERIMENT = Experiment(
    name="timing", description=DESCRIPTION, question=QUESTION, seed=SEED,
    tables=timing_report.TABLE_IDS, scopes=("quick", "standard", "full"), cases=cases,
    run_case=run_case, summarise=timing_report.summarise, render=timing_report.render,
    timed=True,
    comparison=Comparison(record_key=("part", "framework", "mode", "rule", "n", "net", "workload",
                                      "what"),
                          tolerance=timing_report.REPRODUCTION_TOLERANCE,
                          derived_cells=timing_report.comparable_cells),
    appendix=("rule_times", "rule_ratios", "torch_vs_jax", "bandwidth", "saved_bytes", "compile", "net",
              "harness", "shared_dynamic", "cross_check", "profile", "copies", "eager_parts",
              "page_faults", "inductor_probe"))

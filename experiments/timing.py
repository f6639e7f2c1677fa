"""What custom rules cost: time and memory of ReLU rules and the two-layer net, both frameworks.

    python -m study run timing            # rules at 8, 10^6, 10^7 elements, seed and mid nets
    python -m study run timing --quick    # up to 10^6, the seed net
    python -m study run timing --full     # up to 10^8, the large net, SGD steps

Every case is warmed up (compilation included, timed on its own as the first call), then timed
with garbage collection off; each repeat is synchronised (block_until_ready /
cuda.synchronize) and also records its dispatch-only time. Ratios are taken between cases of
the same run, never across runs.
"""
import os

import jax
import jax.numpy as jnp
import numpy as np
import torch

from study.memory import jax_residual_bytes, torch_saved_bytes
from study.rules import REFERENCE_RELU, by_key
from study.reproduction import Spread
from study.runsets import grouped_clauses, merge_rows, newest
from study.tables import Table, format_cell
from study.timing import summarize, time_thunk

NAME = "timing"
DESCRIPTION = "time and memory of each rule and of the two-layer net, eager and compiled"
QUESTION = ("What does a custom ReLU rule cost in time and memory against the built-in, eager "
            "and compiled, in each framework, and how close does it come to the machine's limits?")
SEED = 0
SCOPES = ("quick", "standard", "full")
TABLES = ("rule_times", "rule_ratios", "torch_vs_jax", "bandwidth", "saved_bytes", "compile",
          "net", "targets", "cross_check", "compile_probe")
RECORD_KEY = ("part", "framework", "mode", "rule", "n", "net", "workload", "what", "probe")
# A rerun's ratio reproduces ours when the two interquartile intervals overlap or lie within
# 25% of each other: on a shared 2-core machine a rerun's medians alone move by more.
REPRODUCTION_TOLERANCE = 0.25
RULES = {"torch": ("torch_relu", "torch_myrelu_seed", "torch_custom_c0", "torch_custom_op_c0",
                   "torch_custom_bool_mask", "torch_custom_bit_mask"),
         "jax": ("jax_relu", "jax_custom_c0", "jax_custom_nondiff_c0", "jax_custom_bool_mask",
                 "jax_custom_bit_mask")}
MODES = {"torch": ("eager", "compile"), "jax": ("op-by-op", "jit")}
COMPILED = ("compile", "jit")
SIZES = {"quick": (8, 10 ** 4, 10 ** 6), "standard": (8, 10 ** 6, 10 ** 7),
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
BUDGET_S = 0.15  # timed repeats per case, after warm-up; at least 3 repeats
PROBES = {"bool mask: x <= 0": lambda v: v <= 0,  # what a compiled relu saves for backward
          "float mask: (x <= 0).float()": lambda v: (v <= 0).float(),
          "clamp_min(x, 0)": lambda v: v.clamp_min(0)}
_COMPILED: dict = {}  # one torch.compile / jax.jit wrapper per rule, shared by every size


def threads() -> dict:
    torch.set_num_threads(os.cpu_count())  # XLA's CPU client uses one thread per core
    return {"torch": torch.get_num_threads(), "xla_cpu_count": os.cpu_count(),
            "XLA_FLAGS": os.environ.get("XLA_FLAGS", "")}


def _torch_sync(device):
    return lambda out: device.synchronize()


def _jax_sync(out):
    return jax.block_until_ready(out)


def _compiled(framework: str, key: str, fn):
    if (framework, key) not in _COMPILED:
        if framework == "torch":
            _COMPILED[(framework, key)] = torch.compile(fn, dynamic=True)
        else:
            _COMPILED[(framework, key)] = jax.jit(lambda a, b: jax.vjp(fn, a)[1](b)[0])
    return _COMPILED[(framework, key)]


def rule_thunk(framework: str, mode: str, key: str, n: int, device):
    """A call of forward plus backward of one rule on n float32 elements, and its sync."""
    fn = by_key(key).fn
    x_np = np.random.default_rng(SEED).standard_normal(n).astype(np.float32)
    g_np = np.ones(n, np.float32)
    if framework == "torch":
        x = device.to_torch(x_np, requires_grad=True)
        g = device.to_torch(g_np)
        f = _compiled(framework, key, fn) if mode == "compile" else fn
        return (lambda: torch.autograd.grad(f(x), x, g)[0]), _torch_sync(device)
    x, g = device.to_jax(x_np), device.to_jax(g_np)
    if mode == "jit":
        f = _compiled(framework, key, fn)
    else:
        def f(a, b):
            return jax.vjp(fn, a)[1](b)[0]
    return (lambda: f(x, g)), _jax_sync


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


def cases(scope: str) -> list[dict]:
    sizes = SIZES[scope]
    out = [{"part": "machine", "n": sizes[-1]}]
    out += [{"part": "rule", "framework": fw, "mode": m, "rule": r, "n": n}
            for fw in RULES for r in RULES[fw] for m in MODES[fw] for n in sizes]
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
    out.append({"part": "cross_check", "n": 10 ** 6})
    out += [{"part": "compile_probe", "probe": p, "n": 10 ** 6} for p in PROBES]
    return out


def _timed(thunk, sync, repeats=50, warmup=2):
    t = time_thunk(thunk, sync, repeats=repeats, warmup=warmup, budget_s=BUDGET_S)
    return {**t, "stats": summarize(t["times_s"]), "dispatch": summarize(t["dispatch_s"]),
            "budget_s": BUDGET_S}


def run_case(device, part: str, **case) -> list[dict]:
    base = {"part": part, "device": device.name, "threads": threads(), **case}
    if "rule" in case:
        base["name"] = by_key(case["rule"]).name
    if part == "rule":
        thunk, sync = rule_thunk(case["framework"], case["mode"], case["rule"], case["n"], device)
        # the untimed first call warms up (compiles, for compiled modes); more warm-up calls
        # matter only where a call is cheap
        warmup = 2 if case["n"] <= 10 ** 6 else 1
        return [{**base, "bytes_per_element": BYTES_PER_ELEMENT, **_timed(thunk, sync,
                                                                          warmup=warmup)}]
    if part == "net":
        shape = NETS[case["net"]]
        thunk, sync = net_thunk(case["framework"], case["mode"], case["rule"], shape,
                                case["workload"], device)
        b, i, h, o = shape
        flops = 3 * 2 * b * (i * h + h * o)  # forward matmuls, twice that for backward
        return [{**base, "shape": list(shape), "flops": flops,
                 **_timed(thunk, sync, repeats=20, warmup=0 if case["net"] == "large" else 2)}]
    if part == "memory":
        return [{**base, **memory_record(case["framework"], by_key(case["rule"]).fn, device)}]
    if part == "machine":
        return machine_limits(device, case["n"], base)
    if part == "compile_probe":
        x = device.to_torch(np.random.default_rng(SEED).standard_normal(case["n"])
                            .astype(np.float32))
        fn = PROBES[case["probe"]]
        compiled = torch.compile(fn)
        return [{**base, "eager": _timed(lambda: fn(x), _torch_sync(device))["stats"],
                 "compiled": _timed(lambda: compiled(x), _torch_sync(device))["stats"]}]
    return cross_check(device, case["n"], base)


def memory_record(framework: str, fn, device, n: int = 1 << 20) -> dict:
    """Bytes kept for backward per element, from what autograd / jax.vjp holds, and (on a
    device that reports it) the allocator's growth while the backward state is alive."""
    x_np = np.random.default_rng(SEED).standard_normal(n).astype(np.float32)
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


def machine_limits(device, n: int, base: dict) -> list[dict]:
    x_np = np.random.default_rng(SEED).standard_normal(n).astype(np.float32)
    xt, out = device.to_torch(x_np), device.to_torch(np.empty_like(x_np))
    xj = device.to_jax(x_np)
    copy_j = jax.jit(lambda a: a + 0.0)  # a new buffer: read n, write n (x + 0.0 is no no-op)
    m = 2048 if n >= 10 ** 6 else 128  # large enough to reach the machine's matmul rate
    a_np = np.random.default_rng(SEED).standard_normal((m, m)).astype(np.float32)
    at, aj = device.to_torch(a_np), device.to_jax(a_np)
    mm_j = jax.jit(lambda a: a @ a)
    return [{**base, "what": "copy torch", "bytes": 2 * 4 * n,
             **_timed(lambda: out.copy_(xt), _torch_sync(device))},
            {**base, "what": "copy jax", "bytes": 2 * 4 * n, **_timed(lambda: copy_j(xj), _jax_sync)},
            {**base, "what": "matmul torch", "flops": 2 * m ** 3,
             **_timed(lambda: at @ at, _torch_sync(device))},
            {**base, "what": "matmul jax", "flops": 2 * m ** 3,
             **_timed(lambda: mm_j(aj), _jax_sync)}]


def cross_check(device, n: int, base: dict, rounds: int = 5) -> list[dict]:
    """Our harness and torch.utils.benchmark.Timer on the same thunk, alternated round by
    round so that the machine's drift hits both alike."""
    import torch.utils.benchmark as benchmark
    thunk, sync = rule_thunk("torch", "eager", REFERENCE_RELU["torch"], n, device)
    ours, theirs = [], []
    for _ in range(rounds):
        ours.append(_timed(thunk, sync)["stats"]["median"])
        timer = benchmark.Timer(stmt="thunk(); sync(None)",
                                globals={"thunk": thunk, "sync": sync},
                                num_threads=torch.get_num_threads())
        with torch.device("cpu"):  # the Timer's own statistics are host bookkeeping
            theirs.append(timer.blocked_autorange(min_run_time=0.2).median)
    return [{**base, "ours_s": ours, "timer_s": theirs, "rounds": rounds,
             "timer_num_threads": torch.get_num_threads()}]


# --- aggregation: pure functions of loaded runs ---------------------------------------------

def _parts(run, part):
    return [r for r in run.ok_records() if r.get("part") == part]


def _rule_index(run) -> dict:
    return {(r["framework"], r["mode"], r["rule"], r["n"]): r for r in _parts(run, "rule")}


def _names(run) -> dict:
    return {r["rule"]: r["name"] for r in run.ok_records() if "rule" in r and "name" in r}


def _builtin_key(run, fw) -> str:
    return next((r["rule"] for r in _parts(run, "rule") if r["framework"] == fw
                 and r["rule"] in REFERENCE_RELU.values()), REFERENCE_RELU[fw])


def _saved(run) -> dict:
    return {r["rule"]: (r["torch_saved"] if r["framework"] == "torch" else r["jax_jit_vjp"]) / r["n"]
            for r in _parts(run, "memory")}


def _copy_bw(run) -> float | None:
    bws = [r["bytes"] / r["stats"]["median"] for r in _parts(run, "machine") if "bytes" in r]
    return max(bws) if bws else None


def _peak_flops(run) -> float | None:
    f = [r["flops"] / r["stats"]["median"] for r in _parts(run, "machine") if "flops" in r]
    return max(f) if f else None


def ratio(idx, fw, mode, rule, n, builtin):
    a, b = idx.get((fw, mode, rule, n)), idx.get((fw, mode, builtin, n))
    return a["stats"]["median"] / b["stats"]["median"] if a and b else None


def _sizes(idx):
    return sorted({k[3] for k in idx})


def _keys(run):
    idx = _rule_index(run)
    return [k for k in dict.fromkeys((fw, m, r) for fw, m, r, _ in idx)]


def size_label(n: int) -> str:
    return f"10^{int(round(np.log10(n)))}" if n >= 10 and 10 ** round(np.log10(n)) == n else str(n)


def best_custom(run, fw, mode, min_n=10 ** 6):
    """(rule, worst ratio over sizes >= min_n) of the custom rule with the lowest worst ratio."""
    idx, builtin = _rule_index(run), _builtin_key(run, fw)
    scores = {}
    for (f, m, rule) in _keys(run):
        if (f, m) != (fw, mode) or rule == builtin:
            continue
        ratios = [ratio(idx, fw, mode, rule, n, builtin) for n in _sizes(idx) if n >= min_n]
        if ratios and None not in ratios:
            scores[rule] = max(ratios)
    return min(scores.items(), key=lambda kv: kv[1]) if scores else (None, None)


def _fractions(run) -> dict:
    """(fw, mode, rule) -> achieved useful bytes / s over copy bandwidth, at the largest size."""
    idx, bw = _rule_index(run), _copy_bw(run)
    largest = max(_sizes(idx), default=None)
    return {(fw, m, rule): r["bytes_per_element"] * n / r["stats"]["median"] / bw
            for (fw, m, rule, n), r in idx.items() if n == largest and bw}


def targets(run) -> list[list]:
    names, rows = _names(run), []
    for fw, mode in (("torch", "compile"), ("jax", "jit")):
        rule, worst = best_custom(run, fw, mode)
        rows.append([f"{fw} {mode}: custom ÷ built-in at ≥ 10^6 elements (best custom: "
                     f"{names.get(rule, rule)})", worst, "≤ 1.05",
                     None if worst is None else worst <= 1.05,
                     None if worst is None else worst - 1.05])
    fracs = {k: v for k, v in _fractions(run).items() if k[1] in COMPILED}
    if fracs:
        (fw, m, rule), frac = max(fracs.items(), key=lambda kv: kv[1])
        rows.append([f"best compiled fwd+bwd at the largest size as a fraction of copy bandwidth "
                     f"({fw} {m} {names.get(rule, rule)})", frac, "≥ 0.70", frac >= 0.70,
                     frac - 0.70])
    nets = {(r["framework"], r["mode"], r["rule"]): r["stats"]["median"]
            for r in _parts(run, "net") if r["net"] == "seed" and r["workload"] == "fwd_bwd"}
    base = nets.get(("torch", "eager", _builtin_key(run, "torch")))
    if base:
        ratios = {rule: t / base for (fw, m, rule), t in nets.items()
                  if fw == "torch" and m == "eager" and rule != _builtin_key(run, "torch")}
        if ratios:
            best = min(ratios, key=ratios.get)
            rows.append([f"torch eager seed-size net: custom ÷ built-in (best: "
                         f"{names.get(best, best)})", ratios[best], "≤ 1.2", ratios[best] <= 1.2,
                         ratios[best] - 1.2])
    wall = run.provenance.get("wall_s")
    if wall is not None:
        limit = {"quick": 30.0, "standard": 75.0, "full": 600.0}[run.scope]
        rows.append([f"wall time of the whole {run.scope} experiment (s)", wall, f"≤ {limit:g}",
                     wall <= limit, wall - limit])
    return rows


def _where(run) -> str:
    th = next((r["threads"] for r in run.ok_records() if "threads" in r), {})
    return f"torch threads {th.get('torch')}, XLA CPU threads = cores {th.get('xla_cpu_count')}"


def _rows_by_run(runs, rows_of, id_width):
    return merge_rows([(run, rows_of(run)) for run in runs], id_width, runs)


def tables(runs) -> list[Table]:
    sizes = sorted({n for run in runs for n in _sizes(_rule_index(run))})
    cols = [size_label(n) for n in sizes]

    def times(run):
        idx, names = _rule_index(run), _names(run)
        return [[fw, m, names.get(r, r)] + [idx[(fw, m, r, n)]["stats"]["median"] * 1e6
                                            if (fw, m, r, n) in idx else None for n in sizes]
                for fw, m, r in _keys(run)]

    def times_detail(run):
        idx, names = _rule_index(run), _names(run)
        return [[fw, m, names.get(r, r), n, rec["stats"]["median"] * 1e6, rec["stats"]["q1"] * 1e6,
                 rec["stats"]["q3"] * 1e6, rec["stats"]["iqr"] * 1e6, rec["stats"]["n"],
                 rec["dispatch"]["median"] * 1e6, rec["first_call_s"] * 1e6]
                for (fw, m, r, n), rec in idx.items()]

    def ratios(run):
        idx, names = _rule_index(run), _names(run)
        return [[fw, m, names.get(r, r)] + [ratio(idx, fw, m, r, n, _builtin_key(run, fw))
                                            for n in sizes]
                for fw, m, r in _keys(run) if r != _builtin_key(run, fw)]

    def torch_vs_jax(run):
        idx, names, rows = _rule_index(run), _names(run), []
        pairs = [("relu", "torch_relu", "jax_relu"), ("custom c=0", "torch_custom_c0", "jax_custom_c0"),
                 ("custom_op / nondiff_argnums", "torch_custom_op_c0", "jax_custom_nondiff_c0"),
                 ("bool mask", "torch_custom_bool_mask", "jax_custom_bool_mask"),
                 ("bit mask", "torch_custom_bit_mask", "jax_custom_bit_mask")]
        for label, tr, jr in pairs:
            for tm, jm in (("eager", "op-by-op"), ("compile", "jit")):
                vals = [idx[("torch", tm, tr, n)]["stats"]["median"] / idx[("jax", jm, jr, n)]["stats"]["median"]
                        if ("torch", tm, tr, n) in idx and ("jax", jm, jr, n) in idx else None
                        for n in sizes]
                if any(v is not None for v in vals):
                    rows.append([label, f"{tm} ÷ {jm}"] + vals)
        return rows

    def bandwidth(run):
        idx, names, bw = _rule_index(run), _names(run), _copy_bw(run)
        largest, fr = max(_sizes(idx), default=None), _fractions(run)
        return [[fw, m, names.get(r, r), largest,
                 rec["bytes_per_element"] * largest / rec["stats"]["median"] / 1e9, fr[(fw, m, r)]]
                for (fw, m, r, n), rec in idx.items() if n == largest and bw]

    def memory(run):
        names = _names(run)
        return [[r["framework"], names.get(r["rule"], r["rule"]),
                 r["torch_saved"] / r["n"] if "torch_saved" in r else None,
                 r["jax_vjp"] / r["n"] if "jax_vjp" in r else None,
                 r["jax_jit_vjp"] / r["n"] if "jax_jit_vjp" in r else None,
                 (r.get("device_peak_growth") or r.get("device_bytes_in_use_growth") or 0) / r["n"]
                 if ("device_peak_growth" in r or "device_bytes_in_use_growth" in r) else None]
                for r in _parts(run, "memory")]

    def compile_rows(run):
        idx, names, rows = _rule_index(run), _names(run), []
        for fw, m, r in _keys(run):
            if m not in COMPILED:
                continue
            first = [(n, idx[(fw, m, r, n)]) for n in _sizes(idx) if (fw, m, r, n) in idx]
            if first:
                n0, rec = first[0]
                rows.append([fw, m, names.get(r, r), n0, rec["first_call_s"] * 1e6,
                             rec["stats"]["median"] * 1e6])
        return rows

    def nets(run):
        names, peak, rows = _names(run), _peak_flops(run), []
        net_recs = _parts(run, "net")
        for r in net_recs:
            base = next((b for b in net_recs if (b["net"], b["workload"], b["framework"], b["mode"])
                         == (r["net"], r["workload"], r["framework"], r["mode"])
                         and b["rule"] == _builtin_key(run, r["framework"])), None)
            t = r["stats"]["median"]
            rows.append([r["net"], "×".join(map(str, r["shape"])), r["workload"], r["framework"],
                         r["mode"], names.get(r["rule"], r["rule"]), t * 1e6, r["stats"]["iqr"] * 1e6,
                         t / base["stats"]["median"] if base else None,
                         r["flops"] / t / peak if peak else None, r["first_call_s"] * 1e6])
        return rows

    def cross(run):
        rows = []
        for c in _parts(run, "cross_check"):
            ours, theirs = float(np.median(c["ours_s"])), float(np.median(c["timer_s"]))
            rows.append([c["n"], c["rounds"], ours * 1e6, theirs * 1e6, ours / theirs,
                         min(c["ours_s"]) * 1e6, max(c["ours_s"]) * 1e6, min(c["timer_s"]) * 1e6,
                         max(c["timer_s"]) * 1e6, c["timer_num_threads"]])
        return rows

    def probes(run):
        return [[r["probe"], r["n"], r["eager"]["median"] * 1e6, r["compiled"]["median"] * 1e6,
                 r["compiled"]["median"] / r["eager"]["median"]] for r in _parts(run, "compile_probe")]

    t = _rows_by_run(runs, times, 3)
    td = _rows_by_run(runs, times_detail, 4)
    rt = _rows_by_run(runs, ratios, 3)
    tj = _rows_by_run(runs, torch_vs_jax, 2)
    bw = _rows_by_run(runs, bandwidth, 3)
    mem = _rows_by_run(runs, memory, 2)
    comp = _rows_by_run(runs, compile_rows, 3)
    nt = _rows_by_run(runs, nets, 6)
    tg = _rows_by_run(runs, targets, 1)
    cc = _rows_by_run(runs, cross, 1)
    pr = _rows_by_run(runs, probes, 1)
    machine = "; ".join(
        f"{run.provenance['host']}/{run.provenance['device']}: " + ", ".join(
            f"{r['what']} " + (f"{r['bytes'] / r['stats']['median'] / 1e9:.3g} GB/s" if "bytes" in r
                               else f"{r['flops'] / r['stats']['median'] / 1e9:.3g} GFLOP/s")
            for r in _parts(run, "machine")) for run in runs)
    where = "; ".join(dict.fromkeys(_where(run) for run in runs))
    budgets = sorted({r["budget_s"] for run in runs for r in _parts(run, "rule") if "budget_s" in r})
    bpe = sorted({r["bytes_per_element"] for run in runs for r in _parts(run, "rule")})
    cross_notes = []
    for row in cc[1]:
        r = row[len(cc[0]):]
        if abs(r[4] - 1) > 0.10:
            cross_notes.append(
                f"At {size_label(r[0])} elements ours ÷ Timer is {format_cell(r[4])}, beyond 10%: "
                f"the two ran alternately in {r[1]} rounds, so drift hits both alike; ours spans "
                f"{format_cell(r[5])}–{format_cell(r[6])} µs and Timer {format_cell(r[7])}–"
                f"{format_cell(r[8])} µs across rounds, which bounds how far this machine's noise "
                f"reaches.")
    return [
        Table("rule_times", "Forward plus backward of one rule: median time per call (µs)",
              f"1-D float32 input; torch: torch.autograd.grad of the rule's output; JAX: jax.vjp "
              f"then the vjp function. Median of synchronised repeats after warm-up ({where}; "
              f"timed for {', '.join(f'{b:g}' for b in budgets)} s per case, at least 3 repeats). "
              f"The CSV has quartiles, repeats, dispatch and first-call times per size.",
              t[0] + ["framework", "mode", "rule"] + [f"{c} (µs)" for c in cols], t[1], t[2],
              detail=(td[0] + ["framework", "mode", "rule", "n", "median µs", "q1 µs", "q3 µs",
                               "IQR µs", "repeats", "dispatch median µs", "first call µs"], td[1])),
        Table("rule_ratios", "Custom rule ÷ built-in, same framework, mode and size",
              "Ratios of medians from the rule-times table (one run each).",
              rt[0] + ["framework", "mode", "rule"] + [f"{c} (÷)" for c in cols], rt[1], rt[2]),
        Table("torch_vs_jax", "torch ÷ JAX for the same work",
              "Ratios of medians within one run: torch eager against JAX op-by-op, torch.compile "
              "against jax.jit.", tj[0] + ["rules", "modes"] + [f"{c} (÷)" for c in cols], tj[1],
              tj[2]),
        Table("bandwidth", "Achieved bandwidth at the largest size, against the copy bandwidth",
              f"Useful bytes: {', '.join(map(str, bpe))} per element, what forward plus backward "
              f"must move for dx = g · 1[x > 0] (read x, read the incoming gradient g, write dx; "
              f"y itself need not be stored, and a fused compiled step does not). Copy bandwidth "
              f"counts bytes read plus written by a plain copy of the same size in the same run, "
              f"so a fraction near 1 means the step moves its data as fast as a copy does; an "
              f"eager step moves more than the useful bytes, so its fraction understates its "
              f"traffic. Machine limits measured: {machine}. Times, and the dispatch-only times that "
              f"show asynchronous dispatch, are in the rule-times CSV.",
              bw[0] + ["framework", "mode", "rule", "n", "useful GB/s",
                       "fraction of copy bandwidth"], bw[1], bw[2]),
        Table("saved_bytes", "Memory kept for backward, bytes per element",
              "torch: every tensor packed through torch.autograd.graph.saved_tensors_hooks; JAX: "
              "the residual arrays held by jax.vjp's function, eagerly and from a jitted vjp; the "
              "last column is the device allocator's growth while the backward state is alive "
              "(CUDA peak statistics, JAX device memory stats), where the device reports one; for "
              "2^20 float32 elements.",
              mem[0] + ["framework", "rule", "torch saved", "jax.vjp residuals",
                        "jit(vjp) residuals", "device allocator growth"], mem[1], mem[2]),
        Table("compile", "Compile time, reported on its own (µs)",
              "First call at the smallest size (compilation included; torch.compile(dynamic=True) "
              "compiles once per rule for every size, jax.jit once per rule and size) beside the "
              "warm median.", comp[0] + ["framework", "mode", "rule", "n", "first call (µs)",
                                         "warm median (µs)"], comp[1], comp[2]),
        Table("net", "Two-layer net: forward plus backward (µs)",
              "Seed 001's loss sum((act(x @ w1) @ w2 − 1)²) in float32; shape is batch × in × "
              "hidden × out. 'matmul fraction' is the step's matmul FLOP/s over the large-matmul "
              "FLOP/s measured in the same run.",
              nt[0] + ["net", "shape", "workload", "framework", "mode", "rule", "median µs",
                       "IQR µs", "÷ built-in", "matmul fraction", "first call µs"], nt[1], nt[2]),
        Table("targets", "Speed targets: measured, never asserted in tests",
              "Each target as stated in the study's plan, the value measured in the run, and by "
              "how much it is met (negative) or missed (positive).",
              tg[0] + ["target", "measured", "threshold", "met", "margin"], tg[1], tg[2]),
        Table("cross_check", "Our harness against torch.utils.benchmark.Timer (µs)",
              "torch eager relu forward plus backward, the same thunk and synchronisation; the "
              "two alternate round by round; the Timer gets the same thread count (its default "
              "is one thread). Medians over rounds, and each side's range across rounds.",
              cc[0] + ["n", "rounds", "ours median µs", "Timer median µs", "ours ÷ Timer",
                       "ours min µs", "ours max µs", "Timer min µs", "Timer max µs", "threads"],
              cc[1], cc[2] + cross_notes),
        Table("compile_probe", "Why compiled torch is slow here: one elementwise op, eager and "
                               "compiled (µs)",
              "torch.compile's forward for ReLU training writes the output and a bool mask for "
              "backward; these probes time such an op on its own (float32 input, no autograd).",
              pr[0] + ["op", "n", "eager µs", "compiled µs", "compiled ÷ eager"], pr[1], pr[2]),
    ]


def comparable_cells(run) -> dict:
    """What a rerun elsewhere can reproduce: ratios measured within the run."""
    idx, out = _rule_index(run), {}
    for fw, m, r in _keys(run):
        b = _builtin_key(run, fw)
        for n in _sizes(idx):
            mine, base = idx.get((fw, m, r, n)), idx.get((fw, m, b, n))
            if mine and base and r != b:
                s, t = mine["stats"], base["stats"]
                out[f"{fw} {m} {r} ÷ built-in at {size_label(n)}"] = Spread(
                    s["median"] / t["median"], s["q1"] / t["q3"], s["q3"] / t["q1"])
    for k, v in _saved(run).items():
        out[f"saved bytes per element {k}"] = v
    return out


def figures(runs) -> dict[str, tuple[bytes, str]]:
    from study.figures import lines
    run = newest(runs)
    idx, names = _rule_index(run), _names(run)
    series, styles = {}, {}
    colours = iter(["C0", "C1", "C2", "C3", "C4", "C5", "C6", "C7", "C8", "C9", "k", "0.5"])
    for fw, m, r in _keys(run):
        label = f"{fw} {m}: {names.get(r, r)}"
        colour = styles.get(f"rule:{r}", {}).get("color") or next(colours)
        styles[f"rule:{r}"] = {"color": colour}
        styles[label] = {"color": colour, "marker": "o" if m in COMPILED else "s", "ms": 3,
                         "lw": 1, "ls": "-" if m in COMPILED else "--"}
        series[label] = [(n, rec["stats"]["median"] / n * 1e9) for (f, mm, rr, n), rec in idx.items()
                         if (f, mm, rr) == (fw, m, r)]
    png = lines(series, styles, f"ReLU rules, {run.label}: solid = compiled (torch.compile, jax.jit), "
                                f"dashed = eager / op by op", "elements",
                "ns per element (forward + backward)")
    return {"figures/timing.png": (png, "Timing: ns per element against size, every rule and mode")}


def findings(runs) -> list[tuple[str, str]]:
    def clause(run):
        rows = {r[0].split(":")[0]: r for r in targets(run)}
        t, j = rows.get("torch compile"), rows.get("jax jit")
        saved, names = _saved(run), _names(run)
        if not (t and j and t[1] is not None and j[1] is not None and saved):
            return None
        idx = _rule_index(run)
        smallest = min(n for (_, _, _, n) in idx)

        def costs(rule):
            per_mode = []
            for m in MODES["torch"]:
                at = [f"{format_cell(ratio(idx, 'torch', m, rule, n, _builtin_key(run, 'torch')))}× "
                      f"at {size_label(n)}" for n in (smallest, 10 ** 6) if ("torch", m, rule, n) in idx]
                if at:
                    per_mode.append(f"{m} {' and '.join(at)}")
            return ", ".join(per_mode) or "n/a"
        return (f"compiled, the best custom rule costs {format_cell(t[1])}× the built-in in torch "
                f"and {format_cell(j[1])}× in JAX at 10^6 elements and above (worst size); "
                f"against the built-in, torch.library.custom_op costs {costs('torch_custom_op_c0')}; "
                f"autograd.Function costs {costs('torch_custom_c0')}; bytes per element "
                f"kept for backward: " + ", ".join(f"{names.get(k, k)} {format_cell(v)}"
                                                   for k, v in saved.items()))
    text = grouped_clauses(runs, clause)
    return [(f"What a custom rule costs: {text}.", "targets")] if text else []

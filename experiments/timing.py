"""What custom rules cost: time and memory of ReLU rules and the two-layer net, both frameworks.

    python -m study run timing            # sizes 10^3 .. 10^8, about three minutes here
    python -m study run timing --quick    # sizes up to 10^6

Every case is warmed up (compilation included, timed on its own), then timed with garbage
collection off; each repeat is synchronised (block_until_ready / cuda.synchronize) and also
records its dispatch-only time. Ratios are taken between cases of the same run.
"""
import os

import jax
import jax.numpy as jnp
import numpy as np
import torch

from study.memory import jax_residual_bytes, torch_saved_bytes
from study.rules import by_name
from study.tables import Table
from study.timing import summarize, time_thunk

NAME = "timing"
DESCRIPTION = "time and memory of each rule and of the two-layer net, eager and compiled"
SEED = 0
TABLES = ("rule_times", "rule_ratios", "torch_vs_jax", "bandwidth", "saved_bytes", "compile",
          "net", "targets", "cross_check", "compile_probe")
PROBES = {"bool mask: x <= 0": lambda v: v <= 0,  # what a compiled relu saves for backward
          "float mask: (x <= 0).float()": lambda v: (v <= 0).float(),
          "clamp_min(x, 0)": lambda v: v.clamp_min(0)}
RULES = {"torch": ("torch.relu", "MyReLU (seed 000)", "ReLUWithConvention(c=0)",
                   "ReLUSavesBoolMask (c=0)", "ReLUSavesBitMask (c=0)"),
         "jax": ("jax.nn.relu", "relu_with_convention(c=0) (custom_vjp)",
                 "relu_saves_bool_mask (custom_vjp, c=0)", "relu_saves_bit_mask (custom_vjp, c=0)")}
BUILTIN = {"torch": "torch.relu", "jax": "jax.nn.relu"}
MODES = {"torch": ("eager", "compile"), "jax": ("op-by-op", "jit")}
COMPILED = ("compile", "jit")
SIZES = tuple(10 ** k for k in range(3, 9))
QUICK_SIZES = tuple(10 ** k for k in range(3, 7))
NETS = {"seed": (4, 3, 2, 2), "mid": (256, 256, 1024, 256), "large": (4096, 1024, 4096, 1024)}
NET_RULES = {"torch": ("torch.relu", "MyReLU (seed 000)", "ReLUWithConvention(c=0)"),
             "jax": ("jax.nn.relu", "relu_with_convention(c=0) (custom_vjp)")}
MIN_BYTES_PER_ELEMENT = 16  # float32: read x, write y, read g, write dx
BUDGET_S = 0.25  # per case, after warm-up; at least 3 repeats
# compiled torch is slow per element here (see the compile-probe table): at 10^8 it runs only
# the built-in and the best compiled custom rule, to keep the experiment near three minutes
LARGEST_COMPILED = ("torch.relu", "ReLUSavesBoolMask (c=0)")


def threads() -> dict:
    torch.set_num_threads(os.cpu_count())  # XLA's CPU client uses one thread per core
    return {"torch": torch.get_num_threads(), "xla_cpu_count": os.cpu_count(),
            "XLA_FLAGS": os.environ.get("XLA_FLAGS", "")}


def _sync(device):
    if device.name == "cuda":
        return lambda out: torch.cuda.synchronize()
    return lambda out: None


def _jsync(out):
    return jax.block_until_ready(out)


def rule_thunk(framework: str, mode: str, fn, n: int, device):
    x_np = np.random.default_rng(SEED).standard_normal(n).astype(np.float32)
    g_np = np.ones(n, np.float32)
    if framework == "torch":
        x = device.to_torch(x_np, requires_grad=True)
        g = device.to_torch(g_np)
        f = torch.compile(fn, dynamic=True) if mode == "compile" else fn
        return (lambda: torch.autograd.grad(f(x), x, g)[0]), _sync(device)
    x, g = device.to_jax(x_np), device.to_jax(g_np)
    fwd_bwd = lambda a, b: jax.vjp(fn, a)[1](b)[0]  # noqa: E731
    f = jax.jit(fwd_bwd) if mode == "jit" else fwd_bwd
    return (lambda: f(x, g)), _jsync


def net_thunk(framework: str, mode: str, fn, shape, workload: str, device):
    batch, d_in, d_hidden, d_out = shape
    rng = np.random.default_rng(SEED)
    x_np, w1_np, w2_np = (rng.standard_normal(s).astype(np.float32) / np.sqrt(s[-1] if i else 1)
                          for i, s in enumerate([(batch, d_in), (d_in, d_hidden),
                                                 (d_hidden, d_out)]))
    lr = 1e-6
    if framework == "torch":
        x = device.to_torch(x_np)
        w1, w2 = device.to_torch(w1_np, True), device.to_torch(w2_np, True)
        loss = lambda a, b: ((fn(x @ a) @ b - 1) ** 2).sum()  # noqa: E731
        if mode == "compile":
            loss = torch.compile(loss, dynamic=False)

        def step():
            g1, g2 = torch.autograd.grad(loss(w1, w2), (w1, w2))
            if workload == "sgd":
                with torch.no_grad():
                    w1.sub_(lr * g1)
                    w2.sub_(lr * g2)
            return g1
        return step, _sync(device)
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
    return run, _jsync


def cases(quick: bool) -> list[dict]:
    sizes = QUICK_SIZES if quick else SIZES
    nets = ("seed", "mid") if quick else ("seed", "mid", "large")
    out = [{"part": "machine", "n": sizes[-1]}]
    out += [{"part": "rule", "framework": fw, "mode": m, "rule": r, "n": n}
            for fw in RULES for r in RULES[fw] for m in MODES[fw] for n in sizes
            if not (n == 10 ** 8 and m == "compile" and r not in LARGEST_COMPILED)]
    for net in nets:
        for workload in ("fwd_bwd",) if net == "large" else ("fwd_bwd", "sgd"):
            for fw in NET_RULES:
                for m in MODES[fw]:
                    for r in NET_RULES[fw]:
                        if net == "large" and (m not in ("eager", "jit")
                                               or r == "MyReLU (seed 000)"):
                            continue  # ~200 GFLOP a step: keep to the cases that matter
                        out.append({"part": "net", "framework": fw, "mode": m, "rule": r,
                                    "net": net, "workload": workload})
    out += [{"part": "memory", "framework": fw, "rule": r} for fw in RULES for r in RULES[fw]]
    out.append({"part": "cross_check", "n": 10 ** 6})
    out += [{"part": "compile_probe", "probe": p, "n": 10 ** 6} for p in PROBES]
    return out


def _timed(thunk, sync, repeats=50, warmup=2):
    t = time_thunk(thunk, sync, repeats=repeats, warmup=warmup, budget_s=BUDGET_S)
    return {**t, "stats": summarize(t["times_s"]), "dispatch": summarize(t["dispatch_s"])}


def run_case(device, part: str, **case) -> list[dict]:
    base = {"part": part, "device": device.name, "threads": threads(), **case}
    if part == "rule":
        thunk, sync = rule_thunk(case["framework"], case["mode"], by_name(case["rule"]).fn,
                                 case["n"], device)
        # the untimed first call already warms up (compiles, for compiled modes); more warm-up
        # calls matter only where a call is cheap
        warmup = 2 if case["n"] <= 10 ** 6 else 1 if case["mode"] == "jit" else 0
        return [{**base, **_timed(thunk, sync, warmup=warmup)}]
    if part == "net":
        shape = NETS[case["net"]]
        thunk, sync = net_thunk(case["framework"], case["mode"], by_name(case["rule"]).fn, shape,
                                case["workload"], device)
        b, i, h, o = shape
        flops = 3 * 2 * b * (i * h + h * o)  # forward matmuls, twice that for backward
        return [{**base, "flops": flops, **_timed(thunk, sync, repeats=20,
                                                  warmup=0 if case["net"] == "large" else 2)}]
    if part == "memory":
        n = 1 << 20
        fn = by_name(case["rule"]).fn
        if case["framework"] == "torch":
            return [{**base, "n": n, "torch_saved": torch_saved_bytes(fn, torch.randn(n))}]
        x = jnp.ones(n, jnp.float32)
        return [{**base, "n": n, "jax_vjp": jax_residual_bytes(fn, x),
                 "jax_jit_vjp": jax_residual_bytes(fn, x, jit=True)}]
    if part == "machine":
        return machine_limits(device, case["n"], base)
    if part == "compile_probe":
        x = device.to_torch(np.random.default_rng(SEED).standard_normal(case["n"])
                            .astype(np.float32))
        fn = PROBES[case["probe"]]
        compiled = torch.compile(fn)
        return [{**base, "eager": _timed(lambda: fn(x), _sync(device))["stats"],
                 "compiled": _timed(lambda: compiled(x), _sync(device))["stats"]}]
    return cross_check(device, case["n"], base)


def machine_limits(device, n: int, base: dict) -> list[dict]:
    x_np = np.random.default_rng(SEED).standard_normal(n).astype(np.float32)
    xt, out = device.to_torch(x_np), device.to_torch(np.empty_like(x_np))
    xj = device.to_jax(x_np)
    copy_j = jax.jit(lambda a: a + 0.0)  # a new buffer: read n, write n (x + 0.0 is no no-op)
    m = 2048
    a_np = np.random.default_rng(SEED).standard_normal((m, m)).astype(np.float32)
    at, aj = device.to_torch(a_np), device.to_jax(a_np)
    mm_j = jax.jit(lambda a: a @ a)
    return [{**base, "what": "copy torch", "bytes": 2 * 4 * n,
             **_timed(lambda: out.copy_(xt), _sync(device))},
            {**base, "what": "copy jax", "bytes": 2 * 4 * n, **_timed(lambda: copy_j(xj), _jsync)},
            {**base, "what": "matmul torch", "flops": 2 * m ** 3,
             **_timed(lambda: at @ at, _sync(device))},
            {**base, "what": "matmul jax", "flops": 2 * m ** 3,
             **_timed(lambda: mm_j(aj), _jsync)}]


def cross_check(device, n: int, base: dict) -> list[dict]:
    import torch.utils.benchmark as benchmark
    thunk, sync = rule_thunk("torch", "eager", torch.relu, n, device)
    ours = _timed(thunk, sync)
    timer = benchmark.Timer(stmt="thunk()", globals={"thunk": thunk},
                            num_threads=torch.get_num_threads())
    measured = timer.blocked_autorange(min_run_time=0.5)
    return [{**base, "ours": ours["stats"], "timer_median_s": measured.median,
             "timer_num_threads": torch.get_num_threads()}]


# --- aggregation: pure functions of loaded runs -------------------------------------------

def _parts(run, part):
    return [r for r in run.records if r.get("part") == part and "case_error" not in r]


def _us(seconds: float) -> str:
    return f"{seconds * 1e6:.3g}"


def _rule_index(run) -> dict:
    return {(r["framework"], r["mode"], r["rule"], r["n"]): r for r in _parts(run, "rule")}


def _saved(run) -> dict:
    out = {}
    for r in _parts(run, "memory"):
        out[r["rule"]] = (r["torch_saved"] if r["framework"] == "torch" else r["jax_jit_vjp"]) / r["n"]
    return out


def _copy_bw(run) -> float | None:
    bws = [r["bytes"] / r["stats"]["median"] for r in _parts(run, "machine") if "bytes" in r]
    return max(bws) if bws else None


def _peak_flops(run) -> float | None:
    f = [r["flops"] / r["stats"]["median"] for r in _parts(run, "machine") if "flops" in r]
    return max(f) if f else None


def _ratio(idx, fw, mode, rule, n):
    a, b = idx.get((fw, mode, rule, n)), idx.get((fw, mode, BUILTIN[fw], n))
    return a["stats"]["median"] / b["stats"]["median"] if a and b else None


def _sizes(idx):
    return sorted({k[3] for k in idx})


def best_custom(idx, fw, mode, min_n=10 ** 6):
    """(rule, worst ratio over sizes >= min_n) of the custom rule with the lowest worst ratio."""
    scores = {}
    for rule in RULES[fw][1:]:
        ratios = [_ratio(idx, fw, mode, rule, n) for n in _sizes(idx) if n >= min_n]
        if ratios and None not in ratios:
            scores[rule] = max(ratios)
    return min(scores.items(), key=lambda kv: kv[1]) if scores else (None, None)


def targets(run) -> list[list]:
    idx, rows = _rule_index(run), []
    for fw, mode in (("torch", "compile"), ("jax", "jit")):
        rule, worst = best_custom(idx, fw, mode)
        rows.append([f"{fw} {mode}: custom ÷ built-in at ≥ 10^6 elements (best custom: {rule})",
                     worst, "≤ 1.05", None if worst is None else worst <= 1.05,
                     None if worst is None else worst - 1.05])
    bw, largest = _copy_bw(run), max(_sizes(idx), default=None)
    saved = _saved(run)
    fracs = {(fw, m, rule): MIN_BYTES_PER_ELEMENT * n / r["stats"]["median"] / bw
             for (fw, m, rule, n), r in idx.items() if n == largest and m in COMPILED and bw}
    if fracs:
        (fw, m, rule), frac = max(fracs.items(), key=lambda kv: kv[1])
        rows.append([f"best compiled fwd+bwd at 10^{int(np.log10(largest))} as a fraction of copy "
                     f"bandwidth ({fw} {m} {rule})", frac, "≥ 0.70", frac >= 0.70, frac - 0.70])
    nets = {(r["framework"], r["mode"], r["rule"]): r["stats"]["median"]
            for r in _parts(run, "net") if r["net"] == "seed" and r["workload"] == "fwd_bwd"}
    base = nets.get(("torch", "eager", "torch.relu"))
    if base:
        ratios = {rule: t / base for (fw, m, rule), t in nets.items()
                  if fw == "torch" and m == "eager" and rule != "torch.relu"}
        best = min((r for r in ratios if r != "MyReLU (seed 000)"), key=ratios.get)
        rows.append([f"torch eager seed-size net: custom ÷ built-in (best: {best}; seed rule: "
                     f"{ratios.get('MyReLU (seed 000)', float('nan')):.3g})", ratios[best],
                     "≤ 1.2", ratios[best] <= 1.2, ratios[best] - 1.2])
    wall, quick = run.provenance.get("wall_s"), run.provenance.get("quick")
    if wall is not None:
        limit = 30.0 if quick else 180.0
        rows.append([f"wall time of the whole {'--quick ' if quick else ''}experiment (s)", wall,
                     f"≤ {limit:g}", wall <= limit, wall - limit])
    return rows


def tables(runs) -> list[Table]:
    run = runs[0]  # timings are compared within one run, never across runs
    idx, saved, bw, peak = _rule_index(run), _saved(run), _copy_bw(run), _peak_flops(run)
    sizes = _sizes(idx)
    keys = [(fw, m, r) for fw in RULES for m in MODES[fw] for r in RULES[fw]]
    times = [[fw, m, r] + [f"{_us(idx[(fw, m, r, n)]['stats']['median'])} "
                           f"(IQR {_us(idx[(fw, m, r, n)]['stats']['iqr'])})"
                           if (fw, m, r, n) in idx else None for n in sizes] for fw, m, r in keys]
    ratios = [[fw, m, r] + [_ratio(idx, fw, m, r, n) for n in sizes]
              for fw, m, r in keys if r != BUILTIN[fw]]
    pairs = [("relu", "torch.relu", "jax.nn.relu"),
             ("custom c=0", "ReLUWithConvention(c=0)", "relu_with_convention(c=0) (custom_vjp)"),
             ("bool mask", "ReLUSavesBoolMask (c=0)", "relu_saves_bool_mask (custom_vjp, c=0)"),
             ("bit mask", "ReLUSavesBitMask (c=0)", "relu_saves_bit_mask (custom_vjp, c=0)")]
    tvj = []
    for label, tr, jr in pairs:
        for tm, jm in (("eager", "op-by-op"), ("compile", "jit")):
            tvj.append([label, f"{tm} ÷ {jm}"] + [
                idx[("torch", tm, tr, n)]["stats"]["median"] / idx[("jax", jm, jr, n)]["stats"]["median"]
                if ("torch", tm, tr, n) in idx and ("jax", jm, jr, n) in idx else None
                for n in sizes])
    largest = sizes[-1] if sizes else None
    band = []
    for fw, m, r in keys:
        rec = idx.get((fw, m, r, largest))
        if rec and bw:
            achieved = MIN_BYTES_PER_ELEMENT * largest / rec["stats"]["median"]
            band.append([fw, m, r, saved.get(r), achieved / 1e9, achieved / bw,
                         rec["dispatch"]["median"] * 1e3, rec["stats"]["median"] * 1e3])
    mem = [[r["framework"], r["rule"], r["torch_saved"] / r["n"] if "torch_saved" in r else None,
            r.get("jax_vjp", 0) / r["n"] if "jax_vjp" in r else None,
            r.get("jax_jit_vjp", 0) / r["n"] if "jax_jit_vjp" in r else None]
           for r in _parts(run, "memory")]
    comp = [[fw, m, r, idx[(fw, m, r, sizes[0])]["first_call_s"],
             idx[(fw, m, r, sizes[0])]["stats"]["median"] * 1e3]
            for fw, m, r in keys if m in COMPILED and (fw, m, r, sizes[0]) in idx]
    nets = []
    for r in _parts(run, "net"):
        base = next((b for b in _parts(run, "net") if b["net"] == r["net"] and b["workload"] ==
                     r["workload"] and b["framework"] == r["framework"] and b["mode"] == r["mode"]
                     and b["rule"] == BUILTIN[r["framework"]]), None)
        t = r["stats"]["median"]
        nets.append([r["net"], "×".join(map(str, NETS[r["net"]])), r["workload"], r["framework"],
                     r["mode"], r["rule"], t * 1e3, r["stats"]["iqr"] * 1e3,
                     t / base["stats"]["median"] if base else None,
                     r["flops"] / t / peak if peak else None, r["first_call_s"]])
    cc = [[c["n"], c["ours"]["median"] * 1e6, c["timer_median_s"] * 1e6,
           c["ours"]["median"] / c["timer_median_s"], c["timer_num_threads"]]
          for c in _parts(run, "cross_check")]
    machine = "; ".join(f"{r['what']}: " + (f"{r['bytes'] / r['stats']['median'] / 1e9:.3g} GB/s"
                                             if "bytes" in r else
                                             f"{r['flops'] / r['stats']['median'] / 1e9:.3g} GFLOP/s")
                        for r in _parts(run, "machine"))
    th = next((r["threads"] for r in run.records if "threads" in r), {})
    size_cols = [f"10^{int(np.log10(n))}" for n in sizes]
    where = (f"run {run.label}; torch threads {th.get('torch')}, XLA CPU threads = cores "
             f"{th.get('xla_cpu_count')}")
    probes = [[r["probe"], r["n"], r["eager"]["median"] * 1e3, r["compiled"]["median"] * 1e3,
               r["compiled"]["median"] / r["eager"]["median"]] for r in _parts(run, "compile_probe")]
    return [
        Table("rule_times", "Forward plus backward of one rule: median µs per call (IQR)",
              f"1-D float32 input; torch: torch.autograd.grad of the rule's output; JAX: jax.vjp "
              f"then the vjp function. Median of synchronised repeats after warm-up; {where}. At "
              f"10^8, torch.compile runs only {' and '.join(LARGEST_COMPILED)}.",
              ["framework", "mode", "rule"] + size_cols, times),
        Table("rule_ratios", "Custom rule ÷ built-in, same framework, mode and size",
              "Ratios of medians from the rule-times table (one run).",
              ["framework", "mode", "rule"] + size_cols, ratios),
        Table("torch_vs_jax", "torch ÷ JAX for the same work",
              "Ratios of medians: torch eager against JAX op-by-op, torch.compile against jax.jit.",
              ["rules", "modes"] + size_cols, tvj),
        Table("bandwidth", "Achieved bandwidth at the largest size, against the copy bandwidth",
              f"Bytes any rule must move for forward plus backward: read x, write y, read the "
              f"incoming gradient, write the input gradient, {MIN_BYTES_PER_ELEMENT} bytes an "
              f"element in float32 (a fused, compiled step need not store what it saves; an eager "
              f"one moves more, so its fraction is a lower bound on its traffic). Copy bandwidth "
              f"counts bytes read plus written. Machine limits measured in this run: {machine}. "
              f"Dispatch is the time until the call returns, before synchronising.",
              ["framework", "mode", "rule", "saved B/elem", "GB/s (16 B/elem)",
               "fraction of copy bandwidth", "dispatch ms", "synchronised ms"], band),
        Table("saved_bytes", "Memory kept for backward, bytes per element",
              "torch: every tensor packed through torch.autograd.graph.saved_tensors_hooks; JAX: "
              "the residual arrays held by jax.vjp's function, eagerly and from a jitted vjp; for "
              "an input of 2^20 float32 elements.",
              ["framework", "rule", "torch saved", "jax.vjp residuals", "jit(vjp) residuals"], mem),
        Table("compile", "Compile time, reported on its own",
              f"First call at 10^{int(np.log10(sizes[0])) if sizes else '?'} elements (compilation "
              f"included; torch.compile(dynamic=True) compiles once for all sizes, jax.jit once per "
              f"size) beside the warm median.",
              ["framework", "mode", "rule", "first call s", "warm median ms"], comp),
        Table("net", "Two-layer net: forward plus backward, and one SGD step",
              "Seed 001's loss sum((act(x @ w1) @ w2 − 1)²) in float32; shape is batch × in × "
              "hidden × out. 'matmul fraction' is the step's matmul FLOP/s over the large-matmul "
              "FLOP/s measured in the same run. The large net (about 200 GFLOP a step) runs only "
              "forward plus backward, for the built-in and the c = 0 rule, in torch eager and "
              "jax.jit; the SGD step is timed at the seed and mid sizes.",
              ["net", "shape", "workload", "framework", "mode", "rule", "median ms", "IQR ms",
               "÷ built-in", "matmul fraction", "first call s"], nets),
        Table("targets", "Speed targets: measured, never asserted in tests",
              "Each target as stated in the study's plan, the value measured in this run, and by "
              "how much it is met (negative) or missed (positive).",
              ["target", "measured", "threshold", "met", "margin"], targets(run)),
        Table("cross_check", "Our harness against torch.utils.benchmark.Timer",
              "torch eager relu forward plus backward; the Timer is given the same thread count "
              "(its default is one thread).",
              ["n", "ours median µs", "Timer median µs", "ours ÷ Timer", "threads"], cc),
        Table("compile_probe", "Why compiled torch is slow here: one elementwise op, eager and compiled",
              "torch.compile's forward for ReLU training writes the output and a bool mask for "
              "backward; these probes time such an op on its own (float32 input, no autograd), "
              "eager against torch.compile, in this run.",
              ["op", "n", "eager ms", "compiled ms", "compiled ÷ eager"], probes),
    ]


def figures(runs) -> dict[str, bytes]:
    import io

    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    idx = _rule_index(runs[0])
    fig, ax = plt.subplots(figsize=(9, 6), dpi=100)
    colours = iter(plt.get_cmap("tab10").colors)  # one colour a rule, one line style a mode
    for fw in RULES:
        for r in RULES[fw]:
            colour = next(colours)
            for m in MODES[fw]:
                pts = sorted((n, rec["stats"]["median"] / n * 1e9)
                             for (f, mm, rr, n), rec in idx.items() if (f, mm, rr) == (fw, m, r))
                if pts:
                    ax.plot(*zip(*pts), marker="o" if m in COMPILED else "s", ms=3, lw=1,
                            color=colour, ls="-" if m in COMPILED else "--",
                            label=f"{fw} {m}: {r}")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("elements")
    ax.set_ylabel("ns per element (forward + backward)")
    ax.set_title(f"ReLU rules, {runs[0].label}: solid = compiled (torch.compile, jax.jit), "
                 f"dashed = eager / op by op", fontsize=8)
    ax.legend(fontsize=6, ncol=2)
    fig.tight_layout()
    buf = io.BytesIO()
    fig.savefig(buf, format="png", metadata={"Software": None})
    plt.close(fig)
    return {"timing.png": buf.getvalue()}


def findings(runs) -> list[tuple[str, str]]:
    rows = {r[0].split(":")[0]: r for r in targets(runs[0])} if runs else {}
    t, j = rows.get("torch compile"), rows.get("jax jit")
    saved = _saved(runs[0]) if runs else {}
    if not (t and j and t[1] is not None and j[1] is not None and saved):
        return []
    return [(f"Compiled, the best custom rule costs {t[1]:.3g}× the built-in in torch and "
             f"{j[1]:.3g}× in JAX at 10^6 elements and above (worst size), while keeping less for "
             f"backward: bytes per element saved by torch.relu {saved.get('torch.relu', 0):g}, "
             f"jax.nn.relu {saved.get('jax.nn.relu', 0):g}, the bool-mask rules "
             f"{saved.get('ReLUSavesBoolMask (c=0)', 0):g}, the bit-mask rules "
             f"{saved.get('ReLUSavesBitMask (c=0)', 0):g}.", "targets")]

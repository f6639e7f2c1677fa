"""The timing experiment's summary and rendering: pure functions of loaded runs.

summarise(runs) turns timing records into typed data; ratios, bandwidth fractions, the
harness check (in-run ÷ fresh process) and the targets are computed from it; render(summary)
builds the tables, findings and the log-log figure.
"""
from dataclasses import dataclass, field

import numpy as np

from experiments import timing_anatomy as anatomy
from study.experiment import Answer, Finding, Rendered
from study.cells import Value
from study.results import Run
from study.runsets import identity, merge_run_rows, newest, stated_for_runs
from study.tables import Table, format_cell
from study.timing import median_interval, paired_ratio, unpaired_ratio

TABLE_IDS = ("rule_times", "rule_ratios", "torch_vs_jax", "bandwidth", "saved_bytes", "compile",
             "net", "targets", "harness", "shared_dynamic", "cross_check", "profile", "copies",
             "eager_parts", "page_faults", "inductor_probe")
# A rerun's ratio reproduces ours when the two 95% intervals overlap or lie within
# 25% of each other; see the README for how two runs on this machine compare.
REPRODUCTION_TOLERANCE = 0.25


@dataclass
class RuleTiming:
    framework: str
    mode: str
    rule: str
    name: str
    n: int
    stats: dict  # median, q1, q3, iqr, n, min (seconds)
    dispatch: dict
    first_call_s: float
    bytes_per_element: int  # useful bytes: read x and g, write dx
    saved_bytes_per_element: float | None  # what this mode's rule keeps for backward
    xla_bytes_per_element: float | None  # what XLA's cost analysis counts for a jitted step
    interleaved: bool  # timed round by round with the other rules of its framework and mode
    dynamo: dict | None  # torch.compile's graphs, graph breaks and recompiles in its case
    times: list[float] = field(default_factory=list)  # every timed round, in order (seconds)
    faults: float | None = None  # median minor page faults a call (runs before: not counted)

    @property
    def time(self) -> dict:
        """The time of the case: the median over its rounds with its 95% interval."""
        return median_interval(self.times) if self.times else {
            "median": self.stats["median"], "lo": None, "hi": None, "n": self.stats["n"]}


@dataclass
class NetTiming:
    net: str
    shape: list[int]
    workload: str
    framework: str
    mode: str
    rule: str
    name: str
    stats: dict
    flops: int
    first_call_s: float


@dataclass
class ProfileEvent:
    mode: str
    rule: str
    n: int
    event: str
    calls: float  # per profiled call of the step
    self_cpu_us: float
    cpu_total_us: float
    self_device_us: float
    saved_bytes_per_element: float


@dataclass
class RunTiming:
    run: Run  # identity only
    rules: list[RuleTiming]
    fresh: dict[tuple, dict]  # (framework, mode, rule, n) -> the same case in a fresh process
    blocks: dict[tuple, list[float]]  # ... -> in-run block medians, alternating with fresh
    nets: list[NetTiming]
    memory: list[dict]
    machine: list[dict]  # {"what", "flops", "median"}: the matmul rate
    copies: list[anatomy.Copy]
    cross: list[dict]
    profile: list[ProfileEvent]
    probes: list[anatomy.Probe]  # the compiled-torch reproducer's ops, eager and compiled
    pieces: list[anatomy.Piece]  # the eager cost taken apart
    over_builtin: dict[str, str]  # framework -> the built-in's ops behind its custom-rule API
    ways: list[anatomy.Way]  # torch.relu's step with fresh and with existing outputs
    shared_dynamic: list[dict]  # {"rule", "name", "n", "ways": {way: {"stats", ...}}}
    targets: list[dict]
    references: dict[str, str]  # framework -> the built-in rule every ratio divides by
    pairs: list[tuple[str, str, str]]  # (label, torch rule, JAX rule) doing the same work
    harness_limit: float | None  # in-run ÷ fresh beyond which a compiled cell is flagged
    threads: dict
    budgets: list[float]

    def index(self) -> dict[tuple, RuleTiming]:
        return {(r.framework, r.mode, r.rule, r.n): r for r in self.rules}

    def names(self) -> dict[str, str]:
        return {r.rule: r.name for r in self.rules} | {m["rule"]: m["name"] for m in self.memory
                                                        if "name" in m}


@dataclass
class Summary:
    runs: list[RunTiming]
    sizes: list[int] = field(default_factory=list)


def _rule(r: dict) -> RuleTiming:
    return RuleTiming(r["framework"], r["mode"], r["rule"], r["name"], r["n"], r["stats"],
                      r["dispatch"], r["first_call_s"], r["bytes_per_element"],
                      r.get("saved_bytes_per_element"), r.get("xla_bytes_per_element"),
                      "interleaved_with" in r,
                      r.get("dynamo_counts_of_case"), r.get("times_s", []),
                      float(np.median(r["minor_faults"])) if r.get("minor_faults") else None)


def _net(r: dict) -> NetTiming:
    return NetTiming(r["net"], r["shape"], r["workload"], r["framework"], r["mode"], r["rule"],
                     r.get("name", r["rule"]), r["stats"], r["flops"], r["first_call_s"])


def _profile_events(recs: list[dict]) -> list[ProfileEvent]:
    return [ProfileEvent(r["mode"], r["rule"], r["n"], e["event"], e["calls"], e["self_cpu_us"],
                         e["cpu_total_us"], e["self_device_us"], r["saved_bytes_per_element"])
            for r in recs for e in r["events"]]


def _run_timing(run: Run) -> RunTiming:
    recs = run.ok_records()

    def part(name):
        return [r for r in recs if r.get("part") == name]
    plan = next(iter(part("plan")), {})  # experiments.upgrades gives older runs theirs
    threads = next((r["threads"] for r in recs if "threads" in r), {})
    references, pairs = plan.get("reference_rules", {}), plan.get("torch_jax_pairs", [])
    return RunTiming(
        identity(run), [_rule(r) for r in part("rule")],
        {(r["framework"], r["mode"], r["rule"], r["n"]): r["fresh"]
         for r in part("rule") if "fresh" in r},
        {(r["framework"], r["mode"], r["rule"], r["n"]): r["block_medians"]
         for r in part("rule") if "block_medians" in r},
        [_net(r) for r in part("net")], part("memory"),
        [{"what": r["what"], "median": r["stats"]["median"], "n": r["n"], "flops": r["flops"]}
         for r in part("machine") if "flops" in r],
        anatomy.copies_of(part("machine")), part("cross_check"), _profile_events(part("profile")),
        anatomy.probes_of(part("probes")), anatomy.pieces_of(part("eager_parts")),
        {r["framework"]: r["over_builtin"] for r in part("eager_parts")},
        anatomy.ways_of(part("page_faults")), part("shared_dynamic"),
        plan.get("targets", []), references, [tuple(p) for p in pairs],
        plan.get("harness_limit"), threads,
        sorted({r["budget_s"] for r in part("rule") if "budget_s" in r}))


def summarise(runs) -> Summary:
    timings = [_run_timing(run) for run in runs]
    return Summary(timings, sorted({r.n for t in timings for r in t.rules}))


# --- derived quantities -------------------------------------------------------------------

size_label = anatomy.size_label


def keys(t: RunTiming) -> list[tuple[str, str, str]]:
    return list(dict.fromkeys((r.framework, r.mode, r.rule) for r in t.rules))


def sizes(t: RunTiming) -> list[int]:
    return sorted({r.n for r in t.rules})


def ratio_spread(t: RunTiming, fw: str, mode: str, rule: str, n: int) -> Value | None:
    """The rule's time ÷ the built-in's, with its 95% bootstrap interval: the median of the
    per-round ratios where the two were timed in the same rounds (interleaved), else the
    ratio of medians, each side resampled on its own."""
    idx = t.index()
    a, b = idx.get((fw, mode, rule, n)), idx.get((fw, mode, t.references.get(fw), n))
    if not (a and b and a.times and b.times):
        return None
    paired = a.interleaved and b.interleaved and len(a.times) == len(b.times)
    r = (paired_ratio if paired else unpaired_ratio)(a.times, b.times)
    return Value(r["median"], r["lo"], r["hi"])


def ratio(t: RunTiming, fw: str, mode: str, rule: str, n: int) -> float | None:
    spread = ratio_spread(t, fw, mode, rule, n)
    return spread.value if spread else None


def interval_text(value: float | None, lo: float | None, hi: float | None,
                  digits: int = 3) -> str | None:
    """'361 [352, 370]' at three significant figures; the value alone without an interval."""
    if value is None:
        return None
    if lo is None:
        return format_cell(value, digits)
    return f"{format_cell(value, digits)} [{format_cell(lo, digits)}, {format_cell(hi, digits)}]"


def time_text(r: "RuleTiming | None") -> str | None:
    """The case's time in µs with its 95% interval."""
    if r is None:
        return None
    c = r.time
    return interval_text(*(None if v is None else v * 1e6 for v in (c["median"], c["lo"], c["hi"])))


def copy_bandwidth(t: RunTiming, n: int | None = None) -> float | None:
    """The machine's copy of n float32 elements, in bytes per second: the fastest copy into an
    existing buffer, whichever library (n = None: the largest size measured)."""
    n = n if n is not None else max((c.n for c in t.copies), default=None)
    best = anatomy.machine_copy(t.copies, n)
    return best.rate if best else None


def peak_flops(t: RunTiming) -> float | None:
    f = [m["flops"] / m["median"] for m in t.machine if "flops" in m]
    return max(f) if f else None


def kernel_bytes(r: RuleTiming) -> float | None:
    """Bytes per element the rule's kernels move: for a jitted step, what XLA's cost analysis
    counts; for a compiled torch step, its forward graph reads x and writes y and the saved
    tensor, and its backward graph reads that and g and writes dx. None where the run did not
    record it (and for eager steps, whose intermediates are not counted)."""
    if r.mode == "jit":
        return r.xla_bytes_per_element
    if r.mode != "compile" or r.saved_bytes_per_element is None:
        return None
    return 16 + 2 * r.saved_bytes_per_element


def fractions(t: RunTiming) -> dict[tuple[str, str, str], tuple[float, float | None]]:
    """(fw, mode, rule) -> (useful, kernel) bytes per second over the copy bandwidth, at
    the largest size."""
    largest = max(sizes(t), default=None)
    bw = copy_bandwidth(t, largest)
    if not bw:
        return {}
    out = {}
    for r in (r for r in t.rules if r.n == largest):
        per_s = r.n / r.stats["median"] / bw
        kb = kernel_bytes(r)
        out[(r.framework, r.mode, r.rule)] = (r.bytes_per_element * per_s,
                                              kb * per_s if kb is not None else None)
    return out


def best_custom(t: RunTiming, fw: str, mode: str, min_n: int = 10 ** 6):
    """(rule, worst ratio over sizes >= min_n) of the custom rule with the lowest worst ratio."""
    scores = {}
    for f, m, rule in keys(t):
        if (f, m) != (fw, mode) or rule == t.references.get(fw):
            continue
        ratios = [ratio(t, fw, mode, rule, n) for n in sizes(t) if n >= min_n]
        if ratios and None not in ratios:
            scores[rule] = max(ratios)
    return min(scores.items(), key=lambda kv: kv[1]) if scores else (None, None)


def off_by(ratio_: float) -> float:
    """How far a ratio is from 1, as a factor of at least 1, either way."""
    return max(ratio_, 1 / ratio_)


def harness_ratios(t: RunTiming) -> dict[tuple, float]:
    """(fw, mode, rule, n) -> in-run ÷ fresh-process time of the same case: the median over
    the alternating blocks of the ratio of the two sides' block medians (each block pair is
    timed seconds apart, so the machine's drift cancels), else the ratio of the medians."""
    idx, out = t.index(), {}
    for k, fresh in t.fresh.items():
        if k not in idx:
            continue
        blocks = block_ratios(t, k)
        out[k] = (float(np.median(blocks)) if blocks
                  else idx[k].stats["median"] / fresh["stats"]["median"])
    return out


def target_values(t: RunTiming) -> dict[str, tuple[float | None, str]]:
    """key -> (measured value, what it is of) for each target the run states."""
    names = t.names()
    out = {}
    for key, (fw, mode) in (("compile_ratio", ("torch", "compile")), ("jit_ratio", ("jax", "jit"))):
        rule, worst = best_custom(t, fw, mode)
        out[key] = (worst, f"best custom: {names.get(rule, rule)}")
    compiled = {k: v for k, v in fractions(t).items() if k[1] in ("compile", "jit")}
    if compiled:
        (fw, m, rule), (frac, _) = max(compiled.items(), key=lambda kv: kv[1][0])
        out["copy_fraction"] = (frac, f"{fw} {m} {names.get(rule, rule)}")
    seed = {(n.framework, n.mode, n.rule): n.stats["median"] for n in t.nets
            if n.net == "seed" and n.workload == "fwd_bwd"}
    base = seed.get(("torch", "eager", t.references.get("torch")))
    if base:
        ratios = {r: v / base for (fw, m, r), v in seed.items()
                  if (fw, m) == ("torch", "eager") and r != t.references.get("torch")}
        if ratios:
            best = min(ratios, key=ratios.get)
            out["seed_net_eager"] = (ratios[best], f"best: {names.get(best, best)}")
    harness = harness_ratios(t)
    if harness:
        worst = max(harness, key=lambda k: off_by(harness[k]))
        out["harness"] = (off_by(harness[worst]),
                          f"worst: {worst[0]} {worst[1]} {names.get(worst[2], worst[2])} at "
                          f"{size_label(worst[3])}, in-run ÷ fresh {format_cell(harness[worst])}")
    out["wall"] = (t.run.provenance.get("wall_s"), f"{t.run.scope} run")
    return out


def comparable_cells(run: Run) -> dict:
    """What a rerun elsewhere can reproduce: ratios measured within the run, each with the
    95% bootstrap interval, and the bytes kept for backward."""
    t = _run_timing(run)
    out = {}
    for fw, mode, rule in keys(t):
        for n in sizes(t):
            spread = ratio_spread(t, fw, mode, rule, n) if rule != t.references.get(fw) else None
            if spread:
                out[(("ratio", f"{fw} {mode} {rule} ÷ built-in"), ("n", size_label(n)))] = spread
    for m in t.memory:
        value = m["torch_saved"] if m["framework"] == "torch" else m["jax_jit_vjp"]
        out[(("saved bytes per element", m["rule"]),)] = Value(value / m["n"])
    for name, r in anatomy.comparable_ratios(t.pieces, t.references, t.ways, t.probes).items():
        out[name] = Value(r["median"], r["lo"], r["hi"])
    return out


# --- table rows ---------------------------------------------------------------------------

def _us(seconds: float | None) -> float | None:
    return None if seconds is None else seconds * 1e6


def _harness_text(t: RunTiming, fw: str, mode: str, rule: str) -> str | None:
    harness, limit = harness_ratios(t), t.harness_limit
    parts = [f"{format_cell(harness[(fw, mode, rule, n)])}"
             + (f" (beyond {limit:g}×)" if limit and off_by(harness[(fw, mode, rule, n)]) > limit
                else "") for n in sizes(t) if (fw, mode, rule, n) in harness]
    return ", ".join(parts) or None


def time_rows(t: RunTiming, all_sizes: list[int]) -> list[list]:
    idx, names = t.index(), t.names()
    return [[fw, m, names.get(r, r)] + [time_text(idx.get((fw, m, r, n))) for n in all_sizes]
            + [_harness_text(t, fw, m, r)] for fw, m, r in keys(t)]


def time_detail(t: RunTiming) -> list[list]:
    harness = harness_ratios(t)
    return [[r.framework, r.mode, r.name, r.n, _us(r.stats["median"]), _us(r.time["lo"]),
             _us(r.time["hi"]), _us(r.stats["q1"]),
             _us(r.stats["q3"]), _us(r.stats["iqr"]), r.stats["n"], _us(r.dispatch["median"]),
             _us(r.first_call_s), r.interleaved, harness.get((r.framework, r.mode, r.rule, r.n)),
             (r.dynamo or {}).get("graph_breaks"), (r.dynamo or {}).get("recompiles"), r.faults]
            for r in t.rules]


def ratio_rows(t: RunTiming, all_sizes: list[int]) -> list[list]:
    names = t.names()
    return [[fw, m, names.get(r, r)] + [s.text(3) if (s := ratio_spread(t, fw, m, r, n)) else None
                                        for n in all_sizes]
            for fw, m, r in keys(t) if r != t.references.get(fw)]


def _unpaired_text(a: RuleTiming | None, b: RuleTiming | None) -> str | None:
    if not (a and b and a.times and b.times):
        return None
    r = unpaired_ratio(a.times, b.times)
    return interval_text(r["median"], r["lo"], r["hi"])


def torch_jax_rows(t: RunTiming, all_sizes: list[int]) -> list[list]:
    idx, rows = t.index(), []
    for label, tr, jr in t.pairs:
        for tm, jm in (("eager", "op-by-op"), ("compile", "jit")):
            vals = [_unpaired_text(idx.get(("torch", tm, tr, n)), idx.get(("jax", jm, jr, n)))
                    for n in all_sizes]
            if any(v is not None for v in vals):
                rows.append([label, f"{tm} ÷ {jm}"] + vals)
    return rows


def bandwidth_rows(t: RunTiming) -> list[list]:
    idx, names, largest = t.index(), t.names(), max(sizes(t), default=None)
    bw = copy_bandwidth(t, largest)
    return [[fw, m, names.get(r, r), largest, idx[(fw, m, r, largest)].bytes_per_element
             * largest / idx[(fw, m, r, largest)].stats["median"] / 1e9, useful,
             kernel_bytes(idx[(fw, m, r, largest)]), kernel]
            for (fw, m, r), (useful, kernel) in fractions(t).items()] if bw else []


def memory_rows(t: RunTiming) -> list[list]:
    names = t.names()
    compiled = {r.rule: r.saved_bytes_per_element for r in t.rules
                if r.mode in ("compile", "jit") and r.saved_bytes_per_element is not None}
    return [[m["framework"], names.get(m["rule"], m["rule"]),
             m["torch_saved"] / m["n"] if "torch_saved" in m else None,
             m["jax_vjp"] / m["n"] if "jax_vjp" in m else None,
             m["jax_jit_vjp"] / m["n"] if "jax_jit_vjp" in m else None,
             compiled.get(m["rule"]) if m["framework"] == "torch" else None,
             (m.get("device_peak_growth") or m.get("device_bytes_in_use_growth") or 0) / m["n"]
             if ("device_peak_growth" in m or "device_bytes_in_use_growth" in m) else None]
            for m in t.memory]


def compile_rows(t: RunTiming) -> list[list]:
    names = t.names()
    return [[r.framework, r.mode, names.get(r.rule, r.rule), r.n, _us(r.first_call_s),
             _us(r.stats["median"]), r.interleaved]
            for r in t.rules if r.mode in ("compile", "jit")]


def net_rows(t: RunTiming) -> list[list]:
    peak, rows = peak_flops(t), []
    for r in t.nets:
        base = next((b for b in t.nets if (b.net, b.workload, b.framework, b.mode)
                     == (r.net, r.workload, r.framework, r.mode)
                     and b.rule == t.references.get(r.framework)), None)
        m = r.stats["median"]
        rows.append([r.net, "×".join(map(str, r.shape)), r.workload, r.framework, r.mode, r.name,
                     _us(m), _us(r.stats["iqr"]), m / base.stats["median"] if base else None,
                     r.flops / m / peak if peak else None, _us(r.first_call_s)])
    return rows


def margin(value: float, threshold: float, sense: str) -> float:
    """How far a target is missed (positive) or met (negative), whichever way it points."""
    return value - threshold if sense == "≤" else threshold - value


def target_rows(t: RunTiming) -> list[list]:
    values, rows = target_values(t), []
    for target in t.targets:
        threshold = target["threshold"]
        if isinstance(threshold, dict):  # per scope
            threshold = threshold.get(t.run.scope)
        value, of = values.get(target["key"], (None, ""))
        met = None if value is None or threshold is None else (
            value <= threshold if target["sense"] == "≤" else value >= threshold)
        rows.append([f"{target['target']}" + (f" ({of})" if of else ""), value,
                     f"{target['sense']} {format_cell(threshold)}", met,
                     None if met is None else margin(value, threshold, target["sense"])])
    return rows


def block_ratios(t: RunTiming, k: tuple) -> list[float]:
    """In-run ÷ fresh of each alternating block of the harness check."""
    mine, theirs = t.blocks.get(k), t.fresh.get(k, {}).get("block_medians")
    return list(np.divide(mine, theirs)) if mine and theirs else []


def harness_rows(t: RunTiming) -> list[list]:
    names, idx = t.names(), t.index()
    rows = []
    for (fw, m, r, n), value in harness_ratios(t).items():
        blocks = block_ratios(t, (fw, m, r, n))
        rows.append([fw, m, names.get(r, r), n, _us(idx[(fw, m, r, n)].stats["median"]),
                     _us(t.fresh[(fw, m, r, n)]["stats"]["median"]), value,
                     f"{format_cell(min(blocks), 3)}–{format_cell(max(blocks), 3)} "
                     f"({len(blocks)} blocks)" if blocks else None,
                     off_by(value) <= t.harness_limit if t.harness_limit else None])
    return rows


def shared_dynamic_rows(t: RunTiming) -> list[list]:
    rows = []
    for r in t.shared_dynamic:
        (_, a), (_, b) = r["ways"].items()  # shared first, then compiled for n (as recorded)
        rows.append([r["name"], r["n"], _us(a["stats"]["median"]), _us(b["stats"]["median"]),
                     a["stats"]["median"] / b["stats"]["median"], _us(a["first_call_s"]),
                     _us(b["first_call_s"])])
    return rows


def reference_time(t: RunTiming, n: int) -> RuleTiming | None:
    """The case the cross-check and the profile measure again: the torch built-in, eager."""
    return t.index().get(("torch", "eager", t.references.get("torch"), n))


def cross_rows(t: RunTiming) -> list[list]:
    rows = []
    for c in t.cross:
        ours, theirs = float(np.median(c["ours_s"])), float(np.median(c["timer_s"]))
        ref = reference_time(t, c["n"])
        rows.append([c["n"], c["rounds"], _us(ours), _us(theirs), ours / theirs,
                     time_text(ref), theirs / ref.time["median"] if ref else None,
                     _us(min(c["ours_s"])), _us(max(c["ours_s"])), _us(min(c["timer_s"])),
                     _us(max(c["timer_s"])), c["timer_num_threads"]])
    return rows


def profile_rows(t: RunTiming) -> list[list]:
    """Where a profiled call's time goes; for the compiled forward and backward graphs, the
    bytes their kernels move and the fraction of the copy bandwidth that is."""
    rows = []
    for e in t.profile:
        bw = copy_bandwidth(t, e.n)
        s = e.saved_bytes_per_element
        moved = ({"CompiledFunction": 8 + s, "CompiledFunctionBackward": s + 8}.get(e.event))
        us = e.self_device_us or (e.cpu_total_us if moved else e.self_cpu_us)
        rate = moved * e.n / (us * 1e-6) if moved and us else None
        rows.append([e.mode, e.rule, e.n, e.event, e.calls, e.self_cpu_us, e.cpu_total_us,
                     e.self_device_us or None, moved, rate / 1e9 if rate else None,
                     rate / bw if rate and bw else None])
    return rows


# --- tables -------------------------------------------------------------------------------

def _where(summary: Summary) -> str:
    texts = []
    for t in summary.runs:
        th = t.threads
        texts.append(f"torch threads {th.get('torch')}, XLA CPU threads = cores "
                     f"{th.get('xla_cpu_count')}")
    return "; ".join(dict.fromkeys(texts))


def _limits(t: RunTiming) -> list[str]:
    copies = [f"{c.what} {c.rate / 1e9:.3g} GB/s at {size_label(c.n)}"
              for n in sorted({c.n for c in t.copies}) if (c := anatomy.machine_copy(t.copies, n))]
    return copies + [f"{m['what']} {m['flops'] / m['median'] / 1e9:.3g} GFLOP/s" for m in t.machine]


def _machine_text(summary: Summary) -> str:
    return "; ".join(
        f"{t.run.provenance['host']}/{t.run.provenance['device']}"
        f"{'' if t.run.scope == 'standard' else ', ' + t.run.scope + ' run'}: "
        + ", ".join(_limits(t)) for t in summary.runs)


def _time_tables(summary: Summary) -> list[Table]:
    cols = [size_label(n) for n in summary.sizes]
    t = merge_run_rows(summary.runs, lambda r: time_rows(r, summary.sizes), 3)
    td = merge_run_rows(summary.runs, time_detail, 4)
    rt = merge_run_rows(summary.runs, lambda r: ratio_rows(r, summary.sizes), 3)
    tj = merge_run_rows(summary.runs, lambda r: torch_jax_rows(r, summary.sizes), 2)
    budgets = sorted({b for r in summary.runs for b in r.budgets})
    interleaved = any(r.interleaved for run in summary.runs for r in run.rules)
    return [
        Table("rule_times", "Forward plus backward of one rule: the time of each case (µs)",
              f"The time of a case, as every table that shows a case shows it: warm calls on the "
              f"same 1-D float32 inputs (after warm-up, compilation included, so the inputs sit "
              f"in whatever cache holds them), each synchronised (block_until_ready / "
              f"cuda.synchronize), the rules of a framework and mode timed round by round; the "
              f"median over the rounds [its 95% percentile-bootstrap interval]. torch: "
              f"torch.autograd.grad of the rule's output; JAX: jax.vjp then the vjp function "
              f"({_where(summary)}; timed for {', '.join(f'{b:g}' for b in budgets)} s per rule "
              f"and case, at least the repeats the CSV gives" + (
                  "; interleaved where the CSV says so" if interleaved else "") + "). Tables "
              "that time another regime (the cross-check, the profile) say so and give their "
              "ratio to this time. The last column is "
              "the harness's check of itself: the in-run median ÷ the same case's median in a "
              "fresh process, at each size the run checked (the harness table). The CSV has quartiles, repeats, dispatch "
              "and first-call times, and torch.compile's graph breaks and recompiles per case.",
              t[0] + ["framework", "mode", "rule"] + [f"{c} (µs)" for c in cols]
              + ["in-run ÷ fresh"], t[1], t[2],
              detail=(td[0] + ["framework", "mode", "rule", "n", "median µs", "95% lo µs",
                               "95% hi µs", "q1 µs", "q3 µs",
                               "IQR µs", "repeats", "dispatch median µs", "first call µs",
                               "interleaved", "in-run ÷ fresh", "graph breaks", "recompiles",
                               "minor faults a call (median)"],
                      td[1])),
        Table("rule_ratios", "Custom rule ÷ built-in, same framework, mode and size",
              "The median over rounds of the per-round ratio rule ÷ built-in (the two timed in "
              "the same rounds of one case) [its 95% bootstrap interval over rounds]; where a "
              "run did not interleave, the ratio of the two medians with each side resampled.",
              rt[0] + ["framework", "mode", "rule"] + [f"{c} (÷)" for c in cols], rt[1], rt[2]),
        Table("torch_vs_jax", "torch ÷ JAX for the same work",
              "Ratios of the two cases' times within one run [95% bootstrap interval, each side "
              "resampled on its own: the two were timed in different cases]: torch eager against "
              "JAX op-by-op, torch.compile against jax.jit, both compiled for each size.",
              tj[0] + ["rules", "modes"] + [f"{c} (÷)" for c in cols], tj[1], tj[2]),
    ]


def _machine_tables(summary: Summary) -> list[Table]:
    bw = merge_run_rows(summary.runs, bandwidth_rows, 3)
    mem = merge_run_rows(summary.runs, memory_rows, 2)
    comp = merge_run_rows(summary.runs, compile_rows, 4)
    return [
        Table("bandwidth", "Achieved bandwidth at the largest size, against the copy bandwidth",
              f"Useful bytes: 12 per element, what forward plus backward must move for dx = g · "
              f"1[x > 0] (read x, read g, write dx). Kernel bytes: what the rule's kernels move: "
              f"for jax.jit, the bytes XLA's cost analysis of the compiled step counts; for "
              f"torch.compile, 16 + 2 × the bytes per element its graph saves (the forward graph "
              f"reads x and writes y and the saved tensor; the backward graph reads that and g and "
              f"writes dx). An eager step also moves its intermediates, which are not counted: "
              f"its useful fraction is a lower bound on its traffic. The copy bandwidth is the "
              f"machine's copy (the copies table: the fastest copy into an existing buffer, "
              f"bytes read plus written, at the same size in the same run). Machine limits "
              f"measured: {_machine_text(summary)}.",
              bw[0] + ["framework", "mode", "rule", "n", "useful GB/s", "useful ÷ copy",
                       "kernel bytes per element", "kernel bytes ÷ copy"], bw[1], bw[2]),
        Table("saved_bytes", "Memory kept for backward, bytes per element",
              "torch: every tensor packed through torch.autograd.graph.saved_tensors_hooks, "
              "eagerly and from torch.compile's graph; JAX: the residual arrays held by jax.vjp's "
              "function, eagerly and from a jitted vjp; the last column is the device allocator's "
              "growth while the backward state is alive, where the device reports one; for 2^20 "
              "float32 elements (compiled: at the timed sizes).",
              mem[0] + ["framework", "rule", "torch saved", "jax.vjp residuals",
                        "jit(vjp) residuals", "torch.compile saved", "device allocator growth"],
              mem[1], mem[2]),
        Table("compile", "Compile time, reported on its own (µs)",
              "The first call of each rule at each size (compilation included: torch.compile "
              "with dynamic=False and jax.jit both compile once per rule and size) beside the warm "
              "median.", comp[0] + ["framework", "mode", "rule", "n", "first call (µs)",
                                    "warm median (µs)", "interleaved"], comp[1], comp[2]),
    ]


def _check_tables(summary: Summary) -> list[Table]:
    nt = merge_run_rows(summary.runs, net_rows, 6)
    tg = merge_run_rows(summary.runs, target_rows, 1)
    return [
        Table("net", "Two-layer net: forward plus backward (µs)",
              "Seed 001's loss sum((act(x @ w1) @ w2 − 1)²) in float32; shape is batch × in × "
              "hidden × out. 'matmul fraction' is the step's matmul FLOP/s over the large-matmul "
              "FLOP/s measured in the same run.",
              nt[0] + ["net", "shape", "workload", "framework", "mode", "rule", "median µs",
                       "IQR µs", "÷ built-in", "matmul fraction", "first call µs"], nt[1], nt[2]),
        Table("targets", "Speed targets: measured, never asserted in tests",
              "Each target as the run's plan states it, the value measured in the run, and by how "
              "much it is met (negative) or missed (positive).",
              tg[0] + ["target", "measured", "threshold", "met", "margin"], tg[1], tg[2]),
    ] + _harness_tables(summary)


def _harness_tables(summary: Summary) -> list[Table]:
    """The harness's checks of itself, each a regime other than the case's time."""
    hs = merge_run_rows(summary.runs, harness_rows, 4)
    cc = merge_run_rows(summary.runs, cross_rows, 1)
    sd = merge_run_rows(summary.runs, shared_dynamic_rows, 2)
    pr = merge_run_rows(summary.runs, profile_rows, 4)
    return [
        Table("harness", "The harness against itself: each compiled case in a fresh process",
              "Every compiled rule at each size the run checked, timed in the run and, in alternating "
              "blocks of rounds, alone in a new Python process that prepared the same case; "
              "in-run ÷ fresh is the median over the blocks of the ratio of the two sides' block "
              "medians, so the machine's drift between blocks cancels; the range of those block "
              "ratios shows how far a single block can stray. A ratio far from 1, "
              "either way, means the run's history, not the rule, set the number; 'within the "
              "limit' holds within the run's stated factor either way (for the median ratio, "
              "not for every block).",
              hs[0] + ["framework", "mode", "rule", "n", "in-run median µs", "fresh median µs",
                       "in-run ÷ fresh", "block ratios, range", "within the limit"],
              hs[1], hs[2]),
        Table("shared_dynamic", "The harness before it compiled per size, against it",
              "torch.compile(dynamic=True), one wrapper per rule first called at 8 elements and "
              "then timed at n, as the harness shared one across sizes before; against the same "
              "rule compiled for n alone (dynamic=False), the two interleaved round by round. "
              "Inductor picks a kernel's code from the sizes it first sees, so the shared "
              "wrapper runs code chosen for 8 elements.",
              sd[0] + ["rule", "n", "shared, first at 8 (µs)", "compiled for n (µs)",
                       "shared ÷ compiled for n", "first call, shared (µs)",
                       "first call, for n (µs)"], sd[1], sd[2]),
        Table("cross_check", "Our harness against torch.utils.benchmark.Timer (µs)",
              "Another regime than the case's time: torch eager relu forward plus backward timed "
              "alone (not interleaved with the other rules) by our harness and by the Timer, "
              "the same thunk and synchronisation, the two alternating round by round; the Timer "
              "gets the same thread count (its default is one thread). Medians over rounds, and "
              "each side's range across rounds. 'the case's time' is the same case in the "
              "rule-times table (interleaved with the other rules); the Timer's ratio to it is "
              "the size of the regime's effect.",
              cc[0] + ["n", "rounds", "ours median µs", "Timer median µs", "ours ÷ Timer",
                       "the case's time µs [95%]", "Timer ÷ the case's time",
                       "ours min µs", "ours max µs", "Timer min µs", "Timer max µs", "threads"],
              cc[1], cc[2]),
        Table("profile", "Where a call's time goes: torch.profiler, eager and compiled",
              "Another regime than the case's time: torch.profiler around calls of the rule's "
              "forward plus backward after warm-up, per call, with the profiler's own overhead "
              "in every event (compare 'CPU total µs' with the rule-times table's case). For the compiled forward graph (CompiledFunction) and backward graph "
              "(CompiledFunctionBackward): the bytes per element their kernels move given what "
              "the compiled rule saves (forward: read x, write y and the saved tensor; backward: "
              "read it and g, write dx), the rate that is, and its fraction of the copy "
              "bandwidth measured in the same run.",
              pr[0] + ["mode", "rule", "n", "event", "calls", "self CPU µs", "CPU total µs",
                       "self device µs", "bytes per element", "GB/s", "÷ copy bandwidth"],
              pr[1], pr[2]),
    ]


def _anatomy_tables(summary: Summary) -> list[Table]:
    """The checks that take a case apart, each timed round by round in one case."""
    cp = merge_run_rows(summary.runs, lambda t: anatomy.copy_rows(t.copies), 3)
    ep = merge_run_rows(summary.runs, lambda t: anatomy.part_rows(t.pieces, t.references), 3)
    pf = merge_run_rows(summary.runs, lambda t: anatomy.fault_rows(t.ways), 2)
    ip = merge_run_rows(summary.runs, lambda t: anatomy.probe_rows(t.probes), 3)
    rounds = ("timed round by round in one case (at least the run's minimum of rounds); times "
              "are medians over rounds [95% bootstrap interval], ratios the median of the "
              "per-round ratios [95% interval over rounds]")
    return [
        Table("copies", "The machine's copy bandwidth: numpy, torch and JAX copies",
              f"n float32 elements copied into a buffer that exists (numpy.copyto, "
              f"torch copy_, and jax.jit writing into a donated buffer) and into a new one "
              f"(numpy copy, torch clone, jax.jit x + 0.0), {rounds}. GB/s counts bytes read "
              f"plus written. Minor page faults a call are this process's, over a few calls "
              f"after timing. The machine's copy, used by every bandwidth fraction in this "
              f"report, is the fastest copy into an existing buffer at that size.",
              cp[0] + ["n", "copy", "into", "µs [95%]", "GB/s", "minor faults a call",
                       "pages of output", "the machine's copy"], cp[1], cp[2]),
        Table("eager_parts", "The eager cost of a custom rule, taken apart",
              f"Each rule's step (forward plus backward through autograd / jax.vjp), its forward "
              f"body alone and its backward body alone (a Function's forward and backward, a "
              f"custom_vjp's fwd and bwd, called directly; for the built-in, its own kernels: "
              f"torch.relu and aten.threshold_backward, jax.nn.relu and its jvp rule's select), "
              f"and the backward body again on the same values sorted, so that each sign comes "
              f"in one run; {rounds}. A row for the built-in's own ops behind the framework's "
              f"custom-rule API measures what that API itself costs. 'step − forward − "
              f"backward' is what autograd adds, round by round. Rules whose body cannot be "
              f"called alone (torch.library custom_op, custom_vjp with nondiff_argnums) are "
              f"not taken apart.",
              ep[0] + ["framework", "n", "rule", "step µs [95%]", "forward µs [95%]",
                       "backward µs [95%]", "step ÷ built-in's [95%]",
                       "backward ÷ built-in's [95%]", "backward, random ÷ sorted signs [95%]",
                       "step − forward − backward µs [95%]", "minor faults a step"],
              ep[1], ep[2]),
        Table("page_faults", "torch.relu's step with new outputs and with existing ones",
              f"The eager step through autograd; its two kernels (clamp_min, threshold_backward) "
              f"called directly, each writing a new tensor; and the same kernels writing into "
              f"tensors that exist (out= variants); {rounds}; ratios to the autograd step.",
              pf[0] + ["n", "way", "µs [95%]", "÷ the autograd step [95%]",
                       "minor faults a call"], pf[1], pf[2]),
        Table("inductor_probe", "Why compiled torch is slow on this CPU: the reproducer",
              f"experiments/inductor_bool_mask.py, a reproducer small enough to hand upstream: "
              f"each piece of what inductor makes of relu's forward plus backward, and the whole "
              f"step, eager, compiled (dynamic=False) and compiled with inductor's C++ vector "
              f"code off (cpp.simdlen=0, its own torch.compile), on random signs and on the same "
              f"values sorted; {rounds}. The run's records keep each compiled kernel's store and "
              f"load lines.",
              ip[0] + ["op", "signs", "n", "eager µs [95%]", "compile µs [95%]",
                       "simdlen=0 µs [95%]", "compile ÷ eager [95%]", "simdlen=0 ÷ eager [95%]"],
              ip[1], ip[2]),
    ]


def tables(summary: Summary) -> list[Table]:
    return (_time_tables(summary) + _machine_tables(summary) + _check_tables(summary)
            + _anatomy_tables(summary))


# --- findings and figure ------------------------------------------------------------------

def _spread_text(spread: Value | None) -> str:
    return "—" if spread is None else (f"{format_cell(spread.value, 3)}× [{format_cell(spread.lo, 3)}"
                                       f", {format_cell(spread.hi, 3)}]")


def _cost_fact(t: RunTiming):
    """Compiled: the best custom rule ÷ built-in at 10^6 (ratio of medians with the quartile
    range); eager: two custom rules ÷ built-in at 10^6; the smallest saved bytes."""
    names = t.names()
    compiled = tuple((label, names.get(rule, rule), ratio_spread(t, fw, m, rule, 10 ** 6))
                     for label, fw, m in (("torch", "torch", "compile"), ("JAX", "jax", "jit"))
                     for rule in [best_custom(t, fw, m)[0]] if rule)
    eager = tuple((names.get(r, r), s) for r in ("torch_custom_c0", "torch_custom_op_c0")
                  if (s := ratio_spread(t, "torch", "eager", r, 10 ** 6)) is not None)
    saved = {m["rule"]: m.get("torch_saved", m.get("jax_jit_vjp", 0)) / m["n"] for m in t.memory}
    if not (compiled or eager):
        return None
    return compiled, eager, format_cell(min(saved.values()), 3) if saved else None


def _cost_text(fact) -> str:
    compiled, eager, smallest = fact
    parts = []
    if compiled:
        parts.append("at 10^6 elements the best compiled custom rule costs " + " and ".join(
            f"{_spread_text(v)} the built-in in {fw}" for fw, _, v in compiled))
    if eager:
        parts.append("eager, " + " and ".join(f"{_spread_text(v)} ({n})" for n, v in eager))
    if smallest:
        parts.append(f"a bit mask saves {smallest} B an element")
    text = "; ".join(parts) + " (forward plus backward; per-round ratio [95% interval])"
    return text[:1].upper() + text[1:]


def _cost_short(fact) -> str:
    compiled, eager, _ = fact
    return (f"compiled {'/'.join(f'{format_cell(v.value, 3)}×' for _, _, v in compiled if v)}"
            f", eager {'/'.join(f'{format_cell(v.value, 3)}×' for _, v in eager)}")


def _probe_fact(t: RunTiming):
    capability = t.run.provenance.get("torch_cpu_capability")  # the release: the run's label
    return anatomy.probe_fact(t.probes, f"{capability} CPU kernels" if capability else "this CPU")


def _parts_fact(t: RunTiming):
    return anatomy.parts_fact(t.pieces, t.references, t.over_builtin)


def _copy_fact(t: RunTiming):
    return anatomy.copy_note(t.copies)


def _shared_fact(t: RunTiming):
    rows = shared_dynamic_rows(t)
    return tuple((name, size_label(n), format_cell(r)) for name, n, _, _, r, *_ in rows) or None


def _shared_text(fact) -> str:
    return ("One torch.compile(dynamic=True) wrapper first called at 8 elements, as the harness "
            "shared one across sizes before, runs " + ", ".join(
                f"{name} at {n} {r}× the time" for name, n, r in fact)
            + " of the same rule compiled for that size")


def _shared_short(fact) -> str:
    return ", ".join(f"{r}×" for _, _, r in fact)


def _stated(summary: Summary, fact_of, full, short) -> str | None:
    """Stated for the standard runs where there are any (the full runs' numbers are in the
    tables), so that each device's figure reads as one clause."""
    standard = [t for t in summary.runs if t.run.scope == "standard"] or summary.runs
    text = stated_for_runs([(t.run, fact_of(t)) for t in standard], [t.run for t in standard],
                           full, short)
    return text[:1].upper() + text[1:] + "." if text else None


def findings(summary: Summary) -> list[Finding]:
    """What a rule costs, where its eager cost goes, and why compiled torch is slow on a CPU.
    The harness's own checks (the shared compile wrapper, copies, page faults) are notes
    under their tables: they are about the harness and the machine, not about the rules."""
    out = []
    for fact_of, full, short, table in ((_cost_fact, _cost_text, _cost_short, "targets"),
                                        (_parts_fact, anatomy.parts_text, anatomy.parts_short,
                                         "eager_parts"),
                                        (_probe_fact, anatomy.probe_finding,
                                         anatomy.probe_short, "inductor_probe")):
        text = _stated(summary, fact_of, full, short)
        if text:
            out.append(Finding(text, table))
    return out


def harness_notes(summary: Summary) -> dict[str, list[str]]:
    """{table id: [note]}: the shared-wrapper, copy and page-fault facts, under their tables."""
    notes = {}
    for table, fact_of, full, short in (
            ("shared_dynamic", _shared_fact, _shared_text, _shared_short),
            ("inductor_probe", _probe_fact, anatomy.probe_text, anatomy.probe_short),
            ("copies", _copy_fact, str, anatomy.copy_short),
            ("page_faults", lambda t: anatomy.faults_fact(t.ways), anatomy.faults_text,
             anatomy.faults_short)):
        text = _stated(summary, fact_of, full, short)
        if text:
            notes[table] = [text]
    return notes


def answer(summary: Summary) -> Answer | None:
    text = _stated(summary, _cost_fact, _cost_text, _cost_short)
    return Answer("cost", text + " The eager-cost and reproducer tables take the eager and the "
                  "compiled torch costs apart.",
                  ("targets", "rule_ratios", "eager_parts", "inductor_probe")) if text else None


def figure(summary: Summary) -> dict:
    """The newest standard run: one panel per framework, ns per element against size for each
    rule and mode with its interquartile bar, and the copy-bandwidth floor for the useful bytes
    (the time a copy at the run's measured copy bandwidth takes to move them)."""
    from study.figures import LinePanel, line_panels
    if not summary.runs:
        return {}
    by_run = {id(t.run): t for t in summary.runs}
    t = by_run[id(newest([t.run for t in summary.runs], key=lambda r: r.scope == "standard"))]
    names, panels = t.names(), []
    for fw in dict.fromkeys(fw for fw, _, _ in keys(t)):
        series, styles = {}, {}
        rules = list(dict.fromkeys(r for f, _, r in keys(t) if f == fw))
        for f, m, r in (k for k in keys(t) if k[0] == fw):
            label = f"{m}: {names.get(r, r)}"
            compiled = m in ("compile", "jit")
            styles[label] = {"color": f"C{rules.index(r) % 10}", "marker": "o" if compiled else "s",
                             "ls": "-" if compiled else "--"}
            series[label] = [(x.n, x.stats["median"] / x.n * 1e9, x.stats["q1"] / x.n * 1e9,
                              x.stats["q3"] / x.n * 1e9) for x in t.rules
                             if (x.framework, x.mode, x.rule) == (f, m, r)]
        useful = next((x.bytes_per_element for x in t.rules if x.framework == fw), None)
        floor = [(n, useful / bw * 1e9) for n in sizes(t)
                 if useful and (bw := copy_bandwidth(t, n))]
        panels.append(LinePanel(fw, series, styles, floor,
                                f"copy floor: {useful} B an element at the copy bandwidth"))
    title = (f"ReLU rules, forward plus backward, run {t.run.tag or t.run.label}: median ns per "
             f"element with the interquartile range; solid = compiled (torch.compile, jax.jit), "
             f"dashed = eager / op by op")
    return {"figures/timing.png": (lambda: line_panels(panels, title, "elements",
                                                       "ns per element (forward + backward)"), "Timing: ns per element against size, one panel per "
                                        "framework, every rule and mode, with the copy floor")}


def render(summary: Summary) -> Rendered:
    built, notes = tables(summary), harness_notes(summary)
    for table in built:
        table.notes += notes.get(table.id, [])
    found = answer(summary)
    return Rendered(built, findings(summary), figure(summary), [found] if found else [])

"""The timing records typed (one RunTiming per run), and what is computed from them: the
ratios with their intervals, bandwidth fractions, the harness check (in-run ÷ fresh process),
the targets, and what a rerun is compared on (comparable_cells).
"""
from dataclasses import dataclass, field, replace

import numpy as np

from experiments.timing import anatomy
from study.cells import Value
from study.results import Run
from study.stats import MIN_BOOTSTRAP, Estimate, median_interval, paired_ratio, unpaired_ratio


# A rerun's ratio reproduces ours when the two 95% intervals overlap or lie within
# 25% of each other; see the README for how two runs on this machine compare.
REPRODUCTION_TOLERANCE = 0.25


@dataclass(frozen=True)
class Stats:
    """A case's recorded statistics over its timed calls (seconds; study.timing)."""
    median: float
    q1: float
    q3: float
    iqr: float
    n: int

    @classmethod
    def of(cls, stats: dict) -> "Stats":
        return cls(stats["median"], stats["q1"], stats["q3"], stats["iqr"], stats["n"])


@dataclass(frozen=True)
class Fresh:
    """The same case timed in a fresh process (the harness check): its median and, where it
    ran in alternating blocks, each block's median."""
    median: float
    block_medians: tuple[float, ...] = ()


@dataclass(frozen=True)
class Target:
    """A speed target as the run's plan states it: threshold per scope, or one for all."""
    target: str
    key: str
    threshold: float | dict | None
    sense: str  # "≤" or "≥"


@dataclass
class RuleTiming:
    framework: str
    mode: str
    rule: str
    name: str
    n: int
    stats: Stats
    dispatch: Stats
    first_call_s: float
    bytes_per_element: int  # useful bytes: read x and g, write dx
    saved_bytes_per_element: float | None  # what this mode's rule keeps for backward
    xla_bytes_per_element: float | None  # what XLA's cost analysis counts for a jitted step
    interleaved: bool  # timed round by round with the other rules of its framework and mode
    graph_breaks: int | None  # torch.compile's in its case (None: not torch.compile)
    recompiles: int | None
    times: list[float] = field(default_factory=list)  # every timed round, in order (seconds)
    faults: float | None = None  # median minor page faults a call (runs before: not counted)

    @property
    def time(self) -> Estimate:
        """The time of the case: the median over its rounds with its 95% interval."""
        return (median_interval(self.times) if self.times
                else Estimate(self.stats.median, None, None, self.stats.n))


@dataclass
class NetTiming:
    net: str
    shape: list[int]
    workload: str
    framework: str
    mode: str
    rule: str
    name: str
    stats: Stats
    flops: int
    first_call_s: float
    times: tuple[float, ...] = ()  # every timed repeat (seconds); runs before kept none


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


@dataclass(frozen=True)
class SavedBytes:
    """Bytes one rule keeps for backward, per element (study.memory): None where not measured."""
    framework: str
    rule: str
    name: str | None
    torch: float | None  # every tensor torch packs through saved_tensors_hooks
    jax_vjp: float | None  # the residuals jax.vjp's function holds
    jax_jit_vjp: float | None  # the same from a jitted vjp
    device_growth: float | None  # the device allocator's growth while backward state is alive

    @property
    def kept(self) -> float | None:
        """What a rerun compares: torch's saved bytes, or a jitted vjp's residuals."""
        return self.torch if self.framework == "torch" else self.jax_jit_vjp


@dataclass(frozen=True)
class MatmulRate:
    what: str
    n: int
    flops: float
    median: float  # seconds

    @property
    def rate(self) -> float:
        return self.flops / self.median


@dataclass(frozen=True)
class CrossCheck:
    """The torch built-in's eager step timed alone by our harness and by Timer, alternating."""
    n: int
    rounds: int
    ours_s: tuple[float, ...]
    timer_s: tuple[float, ...]
    timer_threads: int


@dataclass(frozen=True)
class SharedDynamic:
    """One rule compiled once with dynamic=True and first called at 8 elements, against the
    same rule compiled for n alone, interleaved."""
    name: str
    n: int
    shared_median: float  # seconds
    shared_first_call: float
    sized_median: float
    sized_first_call: float
    shared_times: tuple[float, ...] = ()  # each round (seconds); runs before kept none
    sized_times: tuple[float, ...] = ()


def _per_element(r: dict, *keys: str) -> float | None:
    present = [r[k] for k in keys if k in r]
    return (present[0] or 0) / r["n"] if present else None


def _saved(r: dict) -> SavedBytes:
    return SavedBytes(r["framework"], r["rule"], r.get("name"), _per_element(r, "torch_saved"),
                      _per_element(r, "jax_vjp"), _per_element(r, "jax_jit_vjp"),
                      _per_element(r, "device_peak_growth", "device_bytes_in_use_growth"))


def _shared(r: dict) -> SharedDynamic:
    (_, a), (_, b) = r["ways"].items()  # shared first, then compiled for n (as recorded)
    return SharedDynamic(r["name"], r["n"], a["stats"]["median"], a["first_call_s"],
                         b["stats"]["median"], b["first_call_s"], tuple(a.get("times_s", ())),
                         tuple(b.get("times_s", ())))


@dataclass
class RunTiming:
    run: Run  # identity only
    rules: list[RuleTiming]
    fresh: dict[tuple, Fresh]  # (framework, mode, rule, n) -> the same case in a fresh process
    blocks: dict[tuple, list[float]]  # ... -> in-run block medians, alternating with fresh
    nets: list[NetTiming]
    memory: list[SavedBytes]
    machine: list[MatmulRate]
    copies: list[anatomy.Copy]
    cross: list[CrossCheck]
    profile: list[ProfileEvent]
    probes: list[anatomy.Probe]  # the compiled-torch reproducer's ops, eager and compiled
    pieces: list[anatomy.Piece]  # the eager cost taken apart
    over_builtin: dict[str, str]  # framework -> the built-in's ops behind its custom-rule API
    ways: list[anatomy.Way]  # torch.relu's step with fresh and with existing outputs
    shared_dynamic: list[SharedDynamic]
    targets: list[Target]
    references: dict[str, str]  # framework -> the built-in rule every ratio divides by
    pairs: list[tuple[str, str, str]]  # (label, torch rule, JAX rule) doing the same work
    harness_limit: float | None  # in-run ÷ fresh beyond which a compiled cell is flagged
    threads: dict[str, int]  # "torch" and "xla_cpu_count" threads, as the records state them
    budgets: list[float]

    def index(self) -> dict[tuple, RuleTiming]:
        return {(r.framework, r.mode, r.rule, r.n): r for r in self.rules}

    def names(self) -> dict[str, str]:
        return {r.rule: r.name for r in self.rules} | {m.rule: m.name for m in self.memory
                                                        if m.name is not None}


@dataclass
class Summary:
    runs: list[RunTiming]
    sizes: list[int] = field(default_factory=list)


def _rule(r: dict) -> RuleTiming:
    dynamo = r.get("dynamo_counts_of_case") or {}
    return RuleTiming(r["framework"], r["mode"], r["rule"], r["name"], r["n"],
                      Stats.of(r["stats"]), Stats.of(r["dispatch"]), r["first_call_s"],
                      r["bytes_per_element"], r.get("saved_bytes_per_element"),
                      r.get("xla_bytes_per_element"), "interleaved_with" in r,
                      dynamo.get("graph_breaks"), dynamo.get("recompiles"), r.get("times_s", []),
                      float(np.median(r["minor_faults"])) if r.get("minor_faults") else None)


def _net(r: dict) -> NetTiming:
    return NetTiming(r["net"], r["shape"], r["workload"], r["framework"], r["mode"], r["rule"],
                     r.get("name", r["rule"]), Stats.of(r["stats"]), r["flops"], r["first_call_s"],
                     tuple(r.get("times_s", ())))


def _profile_events(recs: list[dict]) -> list[ProfileEvent]:
    return [ProfileEvent(r["mode"], r["rule"], r["n"], e["event"], e["calls"], e["self_cpu_us"],
                         e["cpu_total_us"], e["self_device_us"], r["saved_bytes_per_element"])
            for r in recs for e in r["events"]]


def _run_timing(run: Run) -> RunTiming:
    recs = run.ok_records()

    def part(name):
        return [r for r in recs if r.get("part") == name]
    plan = next(iter(part("plan")), {})  # study.upgrades gives older runs theirs
    threads = next((r["threads"] for r in recs if "threads" in r), {})
    references, pairs = plan.get("reference_rules", {}), plan.get("torch_jax_pairs", [])
    return RunTiming(
        replace(run, records=[]), [_rule(r) for r in part("rule")],
        {(r["framework"], r["mode"], r["rule"], r["n"]): Fresh(
            r["fresh"]["stats"]["median"], tuple(r["fresh"].get("block_medians", ())))
         for r in part("rule") if "fresh" in r},
        {(r["framework"], r["mode"], r["rule"], r["n"]): r["block_medians"]
         for r in part("rule") if "block_medians" in r},
        [_net(r) for r in part("net")], [_saved(r) for r in part("memory")],
        [MatmulRate(r["what"], r["n"], r["flops"], r["stats"]["median"])
         for r in part("machine") if "flops" in r],
        anatomy.copies_of(part("machine")),
        [CrossCheck(r["n"], r["rounds"], tuple(r["ours_s"]), tuple(r["timer_s"]),
                    r["timer_num_threads"]) for r in part("cross_check")],
        _profile_events(part("profile")),
        anatomy.probes_of(part("probes")), anatomy.pieces_of(part("eager_parts")),
        {r["framework"]: r["over_builtin"] for r in part("eager_parts")},
        anatomy.ways_of(part("page_faults")), [_shared(r) for r in part("shared_dynamic")],
        [Target(t["target"], t["key"], t["threshold"], t["sense"])
         for t in plan.get("targets", [])], references, [tuple(p) for p in pairs],
        plan.get("harness_limit"), threads,
        sorted({r["budget_s"] for r in part("rule") if "budget_s" in r}))


def read(runs) -> Summary:
    timings = [_run_timing(run) for run in runs]
    return Summary(timings, sorted({r.n for t in timings for r in t.rules}))


size_label = anatomy.size_label


def keys(t: RunTiming) -> list[tuple[str, str, str]]:
    return list(dict.fromkeys((r.framework, r.mode, r.rule) for r in t.rules))


def sizes(t: RunTiming) -> list[int]:
    return sorted({r.n for r in t.rules})


def ratio_spread(t: RunTiming, fw: str, mode: str, rule: str, n: int) -> Estimate | None:
    """The rule's time ÷ the built-in's, with its 95% bootstrap interval: the median of the
    per-round ratios where the two were timed in the same rounds (interleaved), else the
    ratio of medians, each side resampled on its own."""
    idx = t.index()
    a, b = idx.get((fw, mode, rule, n)), idx.get((fw, mode, t.references.get(fw), n))
    if not (a and b and a.times and b.times):
        return None
    paired = a.interleaved and b.interleaved and len(a.times) == len(b.times)
    return (paired_ratio if paired else unpaired_ratio)(a.times, b.times)


def ratio(t: RunTiming, fw: str, mode: str, rule: str, n: int) -> float | None:
    spread = ratio_spread(t, fw, mode, rule, n)
    return spread.value if spread else None


def unpaired_spread(value: float, a: tuple, b: tuple, scale: float = 1.0) -> Estimate:
    """value (scale × median(a) ÷ median(b)) with the bootstrap interval of that ratio, where
    both sides kept at least MIN_BOOTSTRAP rounds."""
    if min(len(a), len(b)) < MIN_BOOTSTRAP:
        return Estimate(value)
    r = unpaired_ratio(a, b)
    return Estimate(value, r.lo * scale, r.hi * scale, r.n)


def paired_spread(value: float, a: tuple, b: tuple) -> Estimate:
    """value with the bootstrap interval of a ÷ b round by round, where both kept the same
    rounds, at least MIN_BOOTSTRAP of them."""
    if len(a) != len(b) or len(a) < MIN_BOOTSTRAP:
        return Estimate(value)
    r = paired_ratio(a, b)
    return Estimate(value, r.lo, r.hi, r.n)


def comparable_cells(run: Run) -> dict:
    """What a rerun elsewhere can reproduce: ratios measured within the run, each with the
    95% bootstrap interval, and the bytes kept for backward."""
    t = _run_timing(run)
    out = {}
    for fw, mode, rule in keys(t):
        for n in sizes(t):
            spread = ratio_spread(t, fw, mode, rule, n) if rule != t.references.get(fw) else None
            if spread:
                out[(("ratio", f"{fw} {mode} {rule} ÷ built-in"), ("n", size_label(n)))] = Value(
                    spread.value, spread.lo, spread.hi)
    for m in t.memory:
        out[(("saved bytes per element", m.rule),)] = Value(m.kept)
    for name, r in anatomy.comparable_ratios(t.pieces, t.references, t.ways, t.probes).items():
        out[name] = Value(r.value, r.lo, r.hi)
    return out

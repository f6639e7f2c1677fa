"""The timing experiment's table rows: one dataclass per table, its fields the table's columns
(study.tables.column), built from a run's summary (timing_summary, timing_anatomy)."""
from dataclasses import astuple, dataclass

import numpy as np

from experiments.timing_anatomy import (COMPILED, EAGER, VECTOR_OFF, Copy, Piece, Probe, Way,
                                        by_rule, interval, machine_copy, ratio_text, rest)
from experiments.timing_summary import (RuleTiming, RunTiming, block_ratios, bounds,
                                        copy_bandwidth, fraction_spread, fractions,
                                        harness_ratios, interval_text, kernel_bytes, keys,
                                        off_by, paired_spread, peak_flops, ratio_spread,
                                        size_label, sizes, target_values, time_text,
                                        unpaired_spread)
from study.tables import column, format_cell
from study.stats import MIN_BOOTSTRAP, median_interval, unpaired_ratio


def _us(seconds: float | None) -> float | None:
    return None if seconds is None else seconds * 1e6


@dataclass
class Case:
    framework: str = column("framework", key=True)
    mode: str = column("mode", key=True)
    rule: str = column("rule", key=True)


@dataclass
class TimeRow(Case):
    times: dict = column()  # "10^6 (µs)": the case's time text
    harness: str | None = column("in-run ÷ fresh")


@dataclass
class TimeDetail(Case):
    n: int = column("n", key=True)
    median: float = column("median µs")
    lo: float | None = column("95% lo µs")
    hi: float | None = column("95% hi µs")
    q1: float = column("q1 µs")
    q3: float = column("q3 µs")
    iqr: float = column("IQR µs")
    repeats: int = column("repeats")
    dispatch: float = column("dispatch median µs")
    first_call: float = column("first call µs")
    interleaved: bool = column("interleaved")
    harness: float | None = column("in-run ÷ fresh")
    graph_breaks: int | None = column("graph breaks")
    recompiles: int | None = column("recompiles")
    faults: float | None = column("minor faults a call (median)")


@dataclass
class RatioRow(Case):
    ratios: dict = column()  # "10^6 (÷)": rule ÷ built-in [95%]


@dataclass
class TorchJaxRow:
    rules: str = column("rules", key=True)
    modes: str = column("modes", key=True)
    ratios: dict = column()  # "10^6 (÷)"


def _harness_text(t: RunTiming, fw: str, mode: str, rule: str) -> str | None:
    harness, limit = harness_ratios(t), t.harness_limit
    parts = [f"{format_cell(harness[(fw, mode, rule, n)])}"
             + (f" (beyond {limit:g}×)" if limit and off_by(harness[(fw, mode, rule, n)]) > limit
                else "") for n in sizes(t) if (fw, mode, rule, n) in harness]
    return ", ".join(parts) or None


def time_rows(t: RunTiming, all_sizes: list[int]) -> list[TimeRow]:
    idx, names = t.index(), t.names()
    return [TimeRow(fw, m, names.get(r, r), {f"{size_label(n)} (µs)": time_text(idx.get(
        (fw, m, r, n))) for n in all_sizes}, _harness_text(t, fw, m, r)) for fw, m, r in keys(t)]


def time_detail(t: RunTiming) -> list[TimeDetail]:
    harness = harness_ratios(t)
    return [TimeDetail(r.framework, r.mode, r.name, r.n, _us(r.stats.median),
                       _us(r.time.lo), _us(r.time.hi), _us(r.stats.q1),
                       _us(r.stats.q3), _us(r.stats.iqr), r.stats.n,
                       _us(r.dispatch.median), _us(r.first_call_s), r.interleaved,
                       harness.get((r.framework, r.mode, r.rule, r.n)),
                       r.graph_breaks, r.recompiles,
                       r.faults) for r in t.rules]


def ratio_rows(t: RunTiming, all_sizes: list[int]) -> list[RatioRow]:
    names = t.names()
    return [RatioRow(fw, m, names.get(r, r), {
        f"{size_label(n)} (÷)": s.text(3) if (s := ratio_spread(t, fw, m, r, n)) else None
        for n in all_sizes}) for fw, m, r in keys(t) if r != t.references.get(fw)]


def _unpaired_text(a: RuleTiming | None, b: RuleTiming | None) -> str | None:
    if not (a and b and a.times and b.times):
        return None
    r = unpaired_ratio(a.times, b.times)
    return interval_text(r.median, r.lo, r.hi)


def torch_jax_rows(t: RunTiming, all_sizes: list[int]) -> list[TorchJaxRow]:
    idx, rows = t.index(), []
    for label, tr, jr in t.pairs:
        for tm, jm in (("eager", "op-by-op"), ("compile", "jit")):
            vals = {f"{size_label(n)} (÷)": _unpaired_text(idx.get(("torch", tm, tr, n)),
                                                          idx.get(("jax", jm, jr, n)))
                    for n in all_sizes}
            if any(v is not None for v in vals.values()):
                rows.append(TorchJaxRow(label, f"{tm} ÷ {jm}", vals))
    return rows


@dataclass
class BandwidthRow(Case):
    n: int = column("n")
    useful_rate: float = column("useful GB/s")
    useful_fraction: float = column("useful ÷ copy")
    interval: list | None = column("95%")
    kernel_bytes: float | None = column("kernel bytes per element")
    kernel_fraction: float | None = column("kernel bytes ÷ copy")


def bandwidth_rows(t: RunTiming) -> list[BandwidthRow]:
    idx, names, largest = t.index(), t.names(), max(sizes(t), default=None)
    rows = []
    for (fw, m, r), (useful, kernel) in (fractions(t).items()
                                         if copy_bandwidth(t, largest) else ()):
        case = idx[(fw, m, r, largest)]
        rows.append(BandwidthRow(fw, m, names.get(r, r), largest, case.bytes_per_element
                                 * largest / case.stats.median / 1e9, useful,
                                 bounds(fraction_spread(t, fw, m, r, useful)),
                                 kernel_bytes(case), kernel))
    return rows


@dataclass
class MemoryRow:
    framework: str = column("framework", key=True)
    rule: str = column("rule", key=True)
    torch: float | None = column("torch saved")
    jax_vjp: float | None = column("jax.vjp residuals")
    jax_jit_vjp: float | None = column("jit(vjp) residuals")
    compiled: float | None = column("torch.compile saved")
    device_growth: float | None = column("device allocator growth")


def memory_rows(t: RunTiming) -> list[MemoryRow]:
    names = t.names()
    compiled = {r.rule: r.saved_bytes_per_element for r in t.rules
                if r.mode in ("compile", "jit") and r.saved_bytes_per_element is not None}
    return [MemoryRow(m.framework, names.get(m.rule, m.rule), m.torch, m.jax_vjp, m.jax_jit_vjp,
                      compiled.get(m.rule) if m.framework == "torch" else None, m.device_growth)
            for m in t.memory]


@dataclass
class CompileRow(Case):
    n: int = column("n", key=True)
    first_call: float = column("first call (µs)")
    warm: float = column("warm median (µs)")
    interleaved: bool = column("interleaved")


def compile_rows(t: RunTiming) -> list[CompileRow]:
    names = t.names()
    return [CompileRow(r.framework, r.mode, names.get(r.rule, r.rule), r.n, _us(r.first_call_s),
                       _us(r.stats.median), r.interleaved)
            for r in t.rules if r.mode in ("compile", "jit")]


@dataclass
class NetRow:
    net: str = column("net", key=True)
    shape: str = column("shape", key=True)
    workload: str = column("workload", key=True)
    framework: str = column("framework", key=True)
    mode: str = column("mode", key=True)
    rule: str = column("rule", key=True)
    median: float = column("median µs")
    interval: list | None = column("95% µs")
    iqr: float = column("IQR µs")
    over_builtin: float | None = column("÷ built-in")
    over_interval: list | None = column("95%")
    matmul_fraction: float | None = column("matmul fraction")
    first_call: float = column("first call µs")


def net_rows(t: RunTiming) -> list[NetRow]:
    peak, rows = peak_flops(t), []
    for r in t.nets:
        base = next((b for b in t.nets if (b.net, b.workload, b.framework, b.mode)
                     == (r.net, r.workload, r.framework, r.mode)
                     and b.rule == t.references.get(r.framework)), None)
        m = r.stats.median
        c = median_interval(r.times) if len(r.times) >= MIN_BOOTSTRAP else None
        over = m / base.stats.median if base else None
        rows.append(NetRow(r.net, "×".join(map(str, r.shape)), r.workload, r.framework, r.mode,
                           r.name, _us(m), [_us(c.lo), _us(c.hi)] if c else None,
                           _us(r.stats.iqr), over,
                           bounds(unpaired_spread(over, r.times, base.times))
                           if base and base is not r else None,
                           r.flops / m / peak if peak else None, _us(r.first_call_s)))
    return rows


def margin(value: float, threshold: float, sense: str) -> float:
    """How far a target is missed (positive) or met (negative), whichever way it points."""
    return value - threshold if sense == "≤" else threshold - value


def met_text(measured, threshold: float, sense: str) -> str:
    """'yes' or 'no' where the whole 95% interval meets or misses the threshold, 'undecided'
    where it spans it; a value without an interval is judged alone."""
    def meets(v):
        return v <= threshold if sense == "≤" else v >= threshold
    if measured.lo is None:
        return "yes" if meets(measured.value) else "no"
    ends = {meets(measured.lo), meets(measured.hi)}
    return "undecided" if len(ends) == 2 else "yes" if ends == {True} else "no"


@dataclass
class TargetRow:
    target: str = column("target", key=True)
    measured: float | None = column("measured")
    interval: list | None = column("95%")
    threshold: str = column("threshold")
    met: str | None = column("met")
    margin: float | None = column("margin")


def target_rows(t: RunTiming) -> list[TargetRow]:
    values, rows = target_values(t), []
    for target in t.targets:
        threshold = target.threshold
        if isinstance(threshold, dict):  # per scope
            threshold = threshold.get(t.run.scope)
        measured, of = values.get(target.key, (None, ""))
        value = measured.value if measured else None
        met = None if value is None or threshold is None else met_text(measured, threshold,
                                                                        target.sense)
        rows.append(TargetRow(target.target + (f" ({of})" if of else ""), value,
                              bounds(measured), f"{target.sense} {format_cell(threshold)}",
                              met,
                              None if met is None else margin(value, threshold, target.sense)))
    return rows


@dataclass
class HarnessRow(Case):
    n: int = column("n", key=True)
    in_run: float = column("in-run median µs")
    fresh: float = column("fresh median µs")
    ratio: float = column("in-run ÷ fresh")
    blocks: str | None = column("block ratios, range")
    within: bool | None = column("within the limit")


def harness_rows(t: RunTiming) -> list[HarnessRow]:
    names, idx = t.names(), t.index()
    rows = []
    for (fw, m, r, n), value in harness_ratios(t).items():
        blocks = block_ratios(t, (fw, m, r, n))
        rows.append(HarnessRow(fw, m, names.get(r, r), n, _us(idx[(fw, m, r, n)].stats.median),
                               _us(t.fresh[(fw, m, r, n)].median), value,
                               f"{format_cell(min(blocks), 3)}–{format_cell(max(blocks), 3)} "
                               f"({len(blocks)} blocks)" if blocks else None,
                               off_by(value) <= t.harness_limit if t.harness_limit else None))
    return rows


@dataclass
class SharedDynamicRow:
    rule: str = column("rule", key=True)
    n: int = column("n", key=True)
    shared: float = column("shared, first at 8 (µs)")
    sized: float = column("compiled for n (µs)")
    ratio: float = column("shared ÷ compiled for n")
    interval: list | None = column("95%")
    shared_first_call: float = column("first call, shared (µs)")
    sized_first_call: float = column("first call, for n (µs)")


def shared_dynamic_rows(t: RunTiming) -> list[SharedDynamicRow]:
    return [SharedDynamicRow(s.name, s.n, _us(s.shared_median), _us(s.sized_median),
                             s.shared_median / s.sized_median,
                             bounds(paired_spread(s.shared_median / s.sized_median,
                                                  s.shared_times, s.sized_times)),
                             _us(s.shared_first_call), _us(s.sized_first_call))
            for s in t.shared_dynamic]


def reference_time(t: RunTiming, n: int) -> RuleTiming | None:
    """The case the cross-check and the profile measure again: the torch built-in, eager."""
    return t.index().get(("torch", "eager", t.references.get("torch"), n))


@dataclass
class CrossRow:
    n: int = column("n", key=True)
    rounds: int = column("rounds")
    ours: float = column("ours median µs")
    timer: float = column("Timer median µs")
    ours_over_timer: float = column("ours ÷ Timer")
    ours_interval: list | None = column("95% (ours ÷ Timer)")
    case_time: str | None = column("the case's time µs [95%]")
    timer_over_case: float | None = column("Timer ÷ the case's time")
    timer_interval: list | None = column("95% (Timer ÷ the case's)")
    ours_min: float = column("ours min µs")
    ours_max: float = column("ours max µs")
    timer_min: float = column("Timer min µs")
    timer_max: float = column("Timer max µs")
    threads: int = column("threads")


def cross_rows(t: RunTiming) -> list[CrossRow]:
    rows = []
    for c in t.cross:
        ours, theirs = float(np.median(c.ours_s)), float(np.median(c.timer_s))
        ref = reference_time(t, c.n)
        timer_over = theirs / ref.time.median if ref else None
        rows.append(CrossRow(c.n, c.rounds, _us(ours), _us(theirs), ours / theirs,
                             bounds(paired_spread(ours / theirs, c.ours_s, c.timer_s)),
                             time_text(ref), timer_over,
                             bounds(unpaired_spread(timer_over, c.timer_s, ref.times))
                             if ref else None, _us(min(c.ours_s)), _us(max(c.ours_s)),
                             _us(min(c.timer_s)), _us(max(c.timer_s)), c.timer_threads))
    return rows


@dataclass
class ProfileRow:
    mode: str = column("mode", key=True)
    rule: str = column("rule", key=True)
    n: int = column("n", key=True)
    event: str = column("event", key=True)
    calls: float = column("calls")
    self_cpu: float = column("self CPU µs")
    cpu_total: float = column("CPU total µs")
    self_device: float | None = column("self device µs")
    moved: float | None = column("bytes per element")
    rate: float | None = column("GB/s")
    fraction: float | None = column("÷ copy bandwidth")


def profile_rows(t: RunTiming) -> list[ProfileRow]:
    """Where a profiled call's time goes; for the compiled forward and backward graphs, the
    bytes their kernels move and the fraction of the copy bandwidth that is."""
    rows = []
    for e in t.profile:
        bw = copy_bandwidth(t, e.n)
        s = e.saved_bytes_per_element
        moved = ({"CompiledFunction": 8 + s, "CompiledFunctionBackward": s + 8}.get(e.event))
        us = e.self_device_us or (e.cpu_total_us if moved else e.self_cpu_us)
        rate = moved * e.n / (us * 1e-6) if moved and us else None
        rows.append(ProfileRow(e.mode, e.rule, e.n, e.event, e.calls, e.self_cpu_us,
                               e.cpu_total_us, e.self_device_us or None, moved,
                               rate / 1e9 if rate else None, rate / bw if rate and bw else None))
    return rows


# --- the checks that take a case apart (timing_anatomy) ---------------------------------------

@dataclass
class CopyRow:
    n: int = column("n", key=True)
    copy: str = column("copy", key=True)
    into: str = column("into", key=True)
    time: str = column("µs [95%]")
    rate: str = column("GB/s")
    faults: float | None = column("minor faults a call")
    pages: int | None = column("pages of output")
    machine: bool = column("the machine's copy")


def copy_rows(copies: list[Copy]) -> list[CopyRow]:
    rows = []
    for c in copies:
        rows.append(CopyRow(c.n, c.what, c.into, c.timed.text(), format_cell(c.rate / 1e9, 3),
                            c.timed.faults,
                            -(-c.bytes // 2 // c.page_bytes) if c.page_bytes else None,
                            c is machine_copy(copies, c.n)))
    return rows


@dataclass
class PartRow:
    framework: str = column("framework", key=True)
    n: int = column("n", key=True)
    rule: str = column("rule", key=True)
    step: str | None = column("step µs [95%]")
    forward: str | None = column("forward µs [95%]")
    backward: str | None = column("backward µs [95%]")
    step_over: str | None = column("step ÷ built-in's [95%]")
    backward_over: str | None = column("backward ÷ built-in's [95%]")
    sorted_over: str | None = column("backward, random ÷ sorted signs [95%]")
    rest: str | None = column("step − forward − backward µs [95%]")
    faults: float | None = column("minor faults a step")


def part_rows(pieces: list[Piece], references: dict[str, str]) -> list[PartRow]:
    grouped, rows = by_rule(pieces), []
    for (fw, n, rule), of in grouped.items():
        ref = grouped.get((fw, n, references.get(fw)), {})

        def over(piece, base=None):
            a, b = of.get(piece), ref.get(base or piece)
            return ratio_text(a.timed.over(b.timed)) if a and b and a is not b else None
        sorted_ = (ratio_text(of["backward"].timed.over(of["backward, sorted signs"].timed))
                   if "backward" in of and "backward, sorted signs" in of else None)
        left = rest(of)
        step, fwd, bwd = (of[p].timed.text() if p in of else None
                          for p in ("step", "forward", "backward"))
        rows.append(PartRow(fw, n, next(iter(of.values())).name, step, fwd, bwd, over("step"),
                            over("backward"), sorted_,
                            interval(*astuple(left.scaled(1e6))[:3]) if left else None,
                            of["step"].timed.faults if "step" in of else None))
    return rows


@dataclass
class FaultRow:
    n: int = column("n", key=True)
    way: str = column("way", key=True)
    time: str = column("µs [95%]")
    over: str | None = column("÷ the autograd step [95%]")
    faults: float | None = column("minor faults a call")


def fault_rows(ways: list[Way]) -> list[FaultRow]:
    rows = []
    for w in ways:
        base = next((b for b in ways if b.n == w.n), None)  # the first way: autograd's step
        rows.append(FaultRow(w.n, w.way, w.timed.text(),
                             ratio_text(w.timed.over(base.timed))
                             if base and base is not w else None, w.timed.faults))
    return rows


@dataclass
class ProbeRow:
    op: str = column("op", key=True)
    signs: str = column("signs", key=True)
    n: int = column("n", key=True)
    eager: str | None = column("eager µs [95%]")
    compiled: str | None = column("compile µs [95%]")
    vector_off: str | None = column("simdlen=0 µs [95%]")
    compiled_over: str | None = column("compile ÷ eager [95%]")
    vector_off_over: str | None = column("simdlen=0 ÷ eager [95%]")


def probe_rows(probes: list[Probe]) -> list[ProbeRow]:
    at = {(p.op, p.way, p.signs): p for p in probes}
    rows = []
    for op, signs in dict.fromkeys((p.op, p.signs) for p in probes):
        eager = at.get((op, EAGER, signs))
        found = [at.get((op, way, signs)) for way in (EAGER, COMPILED, VECTOR_OFF)]
        texts = [p.timed.text() if p else None for p in found]
        overs = [ratio_text(p.timed.over(eager.timed)) if p and eager else None
                 for p in found[1:]]
        rows.append(ProbeRow(op, signs, next(p.n for p in found if p), *texts, *overs))
    return rows

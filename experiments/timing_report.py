"""The timing experiment's rendering: table rows and tables from its summary (timing_summary),
and render(summary), which adds the findings and the figure (timing_findings).
"""
import numpy as np

from experiments import timing_anatomy as anatomy
from experiments.timing_findings import answer, figure, findings, harness_notes
from experiments.timing_summary import (RuleTiming, RunTiming, Summary, block_ratios, bounds,
                                        copy_bandwidth, fraction_spread, fractions,
                                        harness_ratios, interval_text, kernel_bytes, keys,
                                        off_by, paired_spread, peak_flops, ratio_spread,
                                        size_label, sizes, target_values, time_text,
                                        unpaired_spread)
from study.experiment import Rendered
from study.runsets import merged, run_table
from study.tables import Table, format_cell
from study.timing import MIN_BOOTSTRAP, median_interval, unpaired_ratio

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
    rows = []
    for (fw, m, r), (useful, kernel) in (fractions(t).items() if bw else ()):
        spread = fraction_spread(t, fw, m, r, useful)
        rows.append([fw, m, names.get(r, r), largest, idx[(fw, m, r, largest)].bytes_per_element
                     * largest / idx[(fw, m, r, largest)].stats["median"] / 1e9, useful,
                     bounds(spread),
                     kernel_bytes(idx[(fw, m, r, largest)]), kernel])
    return rows


def memory_rows(t: RunTiming) -> list[list]:
    names = t.names()
    compiled = {r.rule: r.saved_bytes_per_element for r in t.rules
                if r.mode in ("compile", "jit") and r.saved_bytes_per_element is not None}
    return [[m.framework, names.get(m.rule, m.rule), m.torch, m.jax_vjp, m.jax_jit_vjp,
             compiled.get(m.rule) if m.framework == "torch" else None, m.device_growth]
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
        c = median_interval(r.times) if len(r.times) >= MIN_BOOTSTRAP else None
        over = m / base.stats["median"] if base else None
        rows.append([r.net, "×".join(map(str, r.shape)), r.workload, r.framework, r.mode, r.name,
                     _us(m), [_us(c["lo"]), _us(c["hi"])] if c else None, _us(r.stats["iqr"]),
                     over, bounds(unpaired_spread(over, r.times, base.times))
                     if base and base is not r else None,
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
        measured, of = values.get(target["key"], (None, ""))
        value = measured.value if measured else None
        met = None if value is None or threshold is None else met_text(measured, threshold,
                                                                        target["sense"])
        rows.append([f"{target['target']}" + (f" ({of})" if of else ""), value,
                     bounds(measured),
                     f"{target['sense']} {format_cell(threshold)}", met,
                     None if met is None else margin(value, threshold, target["sense"])])
    return rows


def met_text(measured, threshold: float, sense: str) -> str:
    """'yes' or 'no' where the whole 95% interval meets or misses the threshold, 'undecided'
    where it spans it; a value without an interval is judged alone."""
    def meets(v):
        return v <= threshold if sense == "≤" else v >= threshold
    if measured.lo is None:
        return "yes" if meets(measured.value) else "no"
    ends = {meets(measured.lo), meets(measured.hi)}
    return "undecided" if len(ends) == 2 else "yes" if ends == {True} else "no"


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
    return [[s.name, s.n, _us(s.shared_median), _us(s.sized_median),
             s.shared_median / s.sized_median,
             bounds(paired_spread(s.shared_median / s.sized_median, s.shared_times,
                                  s.sized_times)),
             _us(s.shared_first_call), _us(s.sized_first_call)]
            for s in t.shared_dynamic]


def reference_time(t: RunTiming, n: int) -> RuleTiming | None:
    """The case the cross-check and the profile measure again: the torch built-in, eager."""
    return t.index().get(("torch", "eager", t.references.get("torch"), n))


def cross_rows(t: RunTiming) -> list[list]:
    rows = []
    for c in t.cross:
        ours, theirs = float(np.median(c.ours_s)), float(np.median(c.timer_s))
        ref = reference_time(t, c.n)
        timer_over = theirs / ref.time["median"] if ref else None
        rows.append([c.n, c.rounds, _us(ours), _us(theirs), ours / theirs,
                     bounds(paired_spread(ours / theirs, c.ours_s, c.timer_s)), time_text(ref),
                     timer_over,
                     bounds(unpaired_spread(timer_over, c.timer_s, ref.times)) if ref else None,
                     _us(min(c.ours_s)), _us(max(c.ours_s)), _us(min(c.timer_s)),
                     _us(max(c.timer_s)), c.timer_threads])
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
    return copies + [f"{m.what} {m.rate / 1e9:.3g} GFLOP/s" for m in t.machine]


def _machine_text(summary: Summary) -> str:
    return "; ".join(
        f"{t.run.provenance['host']}/{t.run.provenance['device']}"
        f"{'' if t.run.scope == 'standard' else ', ' + t.run.scope + ' run'}: "
        + ", ".join(_limits(t)) for t in summary.runs)


def _time_tables(summary: Summary) -> list[Table]:
    cols = [size_label(n) for n in summary.sizes]
    budgets = sorted({b for r in summary.runs for b in r.budgets})
    interleaved = any(r.interleaved for run in summary.runs for r in run.rules)
    return [
        run_table(
            "rule_times", "Forward plus backward of one rule: the time of each case (µs)",
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
            ["framework", "mode", "rule"] + [f"{c} (µs)" for c in cols] + ["in-run ÷ fresh"],
            summary.runs, lambda r: time_rows(r, summary.sizes), key=("framework", "mode", "rule"),
            detail=merged(summary.runs, time_detail,
                          ["framework", "mode", "rule", "n", "median µs", "95% lo µs",
                           "95% hi µs", "q1 µs", "q3 µs",
                           "IQR µs", "repeats", "dispatch median µs", "first call µs",
                           "interleaved", "in-run ÷ fresh", "graph breaks", "recompiles",
                           "minor faults a call (median)"],
                          key=("framework", "mode", "rule", "n"))[:2]),
        run_table(
            "rule_ratios", "Custom rule ÷ built-in, same framework, mode and size",
            "The median over rounds of the per-round ratio rule ÷ built-in (the two timed in "
            "the same rounds of one case) [its 95% bootstrap interval over rounds]; where a "
            "run did not interleave, the ratio of the two medians with each side resampled.",
            ["framework", "mode", "rule"] + [f"{c} (÷)" for c in cols],
            summary.runs, lambda r: ratio_rows(r, summary.sizes), key=("framework", "mode", "rule")),
        run_table(
            "torch_vs_jax", "torch ÷ JAX for the same work",
            "Ratios of the two cases' times within one run [95% bootstrap interval, each side "
            "resampled on its own: the two were timed in different cases]: torch eager against "
            "JAX op-by-op, torch.compile against jax.jit, both compiled for each size.",
            ["rules", "modes"] + [f"{c} (÷)" for c in cols],
            summary.runs, lambda r: torch_jax_rows(r, summary.sizes), key=("rules", "modes")),
    ]


def _machine_tables(summary: Summary) -> list[Table]:
    return [
        run_table(
            "bandwidth", "Achieved bandwidth at the largest size, against the copy bandwidth",
            f"Useful bytes: 12 per element, what forward plus backward must move for dx = g · "
            f"1[x > 0] (read x, read g, write dx). Kernel bytes: what the rule's kernels move: "
            f"for jax.jit, the bytes XLA's cost analysis of the compiled step counts; for "
            f"torch.compile, 16 + 2 × the bytes per element its graph saves (the forward graph "
            f"reads x and writes y and the saved tensor; the backward graph reads that and g and "
            f"writes dx). An eager step also moves its intermediates, which are not counted: "
            f"its useful fraction is a lower bound on its traffic. The copy bandwidth is the "
            f"machine's copy (the copies table: the fastest copy into an existing buffer, "
            f"bytes read plus written, at the same size in the same run); a fraction's 95% "
            f"interval is the bootstrap interval of copy time ÷ rule time, each resampled on "
            f"its own. Machine limits measured: {_machine_text(summary)}.",
            ["framework", "mode", "rule", "n", "useful GB/s", "useful ÷ copy", "95%",
             "kernel bytes per element", "kernel bytes ÷ copy"],
            summary.runs, bandwidth_rows, key=("framework", "mode", "rule")),
        run_table(
            "saved_bytes", "Memory kept for backward, bytes per element",
            "torch: every tensor packed through torch.autograd.graph.saved_tensors_hooks, "
            "eagerly and from torch.compile's graph; JAX: the residual arrays held by jax.vjp's "
            "function, eagerly and from a jitted vjp; the last column is the device allocator's "
            "growth while the backward state is alive, where the device reports one; for 2^20 "
            "float32 elements (compiled: at the timed sizes).",
            ["framework", "rule", "torch saved", "jax.vjp residuals",
             "jit(vjp) residuals", "torch.compile saved", "device allocator growth"],
            summary.runs, memory_rows, key=("framework", "rule")),
        run_table(
            "compile", "Compile time, reported on its own (µs)",
            "The first call of each rule at each size (compilation included: torch.compile "
            "with dynamic=False and jax.jit both compile once per rule and size) beside the warm "
            "median.",
            ["framework", "mode", "rule", "n", "first call (µs)",
             "warm median (µs)", "interleaved"],
            summary.runs, compile_rows, key=("framework", "mode", "rule", "n")),
    ]


def _check_tables(summary: Summary) -> list[Table]:
    return [
        run_table(
            "net", "Two-layer net: forward plus backward (µs)",
            "Seed 001's loss sum((act(x @ w1) @ w2 − 1)²) in float32; shape is batch × in × "
            f"hidden × out. Each rule is its own case, timed after the one before: the median "
            f"with its 95% bootstrap interval over repeats, and ÷ built-in the ratio of the two "
            f"cases' medians with its bootstrap interval (each side resampled on its own); a "
            f"case with fewer than {MIN_BOOTSTRAP} repeats kept has the medians alone. 'matmul "
            f"fraction' is the step's matmul FLOP/s over the large-matmul FLOP/s measured in the "
            f"same run.",
            ["net", "shape", "workload", "framework", "mode", "rule", "median µs", "95% µs",
             "IQR µs", "÷ built-in", "95%", "matmul fraction", "first call µs"],
            summary.runs, net_rows, key=("net", "shape", "workload", "framework", "mode", "rule")),
        run_table(
            "targets", "Speed targets: measured, never asserted in tests",
            "Each target as the run's plan states it, the value measured in the run with its 95% "
            "bootstrap interval where the run kept the rounds behind it, and by how much the "
            "value meets (negative) or misses (positive) it. Met: yes or no where the whole "
            "interval meets or misses the threshold, undecided where it spans it; a value "
            "without an interval is judged alone.",
            ["target", "measured", "95%", "threshold", "met", "margin"],
            summary.runs, target_rows, key=("target",)),
    ] + _harness_tables(summary)


def _harness_tables(summary: Summary) -> list[Table]:
    """The harness's checks of itself, each a regime other than the case's time."""
    return [
        run_table(
            "harness", "The harness against itself: each compiled case in a fresh process",
            "Every compiled rule at each size the run checked, timed in the run and, in alternating "
            "blocks of rounds, alone in a new Python process that prepared the same case; "
            "in-run ÷ fresh is the median over the blocks of the ratio of the two sides' block "
            "medians, so the machine's drift between blocks cancels; the range of those block "
            "ratios shows how far a single block can stray. A ratio far from 1, "
            "either way, means the run's history, not the rule, set the number; 'within the "
            "limit' holds within the run's stated factor either way (for the median ratio, "
            "not for every block).",
            ["framework", "mode", "rule", "n", "in-run median µs", "fresh median µs",
             "in-run ÷ fresh", "block ratios, range", "within the limit"],
            summary.runs, harness_rows, key=("framework", "mode", "rule", "n")),
        run_table(
            "shared_dynamic", "The harness before it compiled per size, against it",
            "torch.compile(dynamic=True), one wrapper per rule first called at 8 elements and "
            "then timed at n, as the harness shared one across sizes before; against the same "
            "rule compiled for n alone (dynamic=False), the two interleaved round by round. "
            "Inductor picks a kernel's code from the sizes it first sees, so the shared "
            f"wrapper runs code chosen for 8 elements. The ratio is of medians, with the 95% "
            f"bootstrap interval of the per-round ratio where the run kept {MIN_BOOTSTRAP} or "
            f"more rounds.",
            ["rule", "n", "shared, first at 8 (µs)", "compiled for n (µs)",
             "shared ÷ compiled for n", "95%", "first call, shared (µs)",
             "first call, for n (µs)"],
            summary.runs, shared_dynamic_rows, key=("rule", "n")),
        run_table(
            "cross_check", "Our harness against torch.utils.benchmark.Timer (µs)",
            "Another regime than the case's time: torch eager relu forward plus backward timed "
            "alone (not interleaved with the other rules) by our harness and by the Timer, "
            "the same thunk and synchronisation, the two alternating round by round; the Timer "
            "gets the same thread count (its default is one thread). Medians over rounds, and "
            "each side's range across rounds. 'the case's time' is the same case in the "
            "rule-times table (interleaved with the other rules); the Timer's ratio to it is "
            f"the size of the regime's effect. Ratios are of medians; their 95% intervals "
            f"(bootstrap over rounds: ours ÷ Timer round by round, the Timer's rounds against "
            f"the case's) are given where a run took {MIN_BOOTSTRAP} or more rounds.",
            ["n", "rounds", "ours median µs", "Timer median µs", "ours ÷ Timer",
             "95% (ours ÷ Timer)", "the case's time µs [95%]", "Timer ÷ the case's time",
             "95% (Timer ÷ the case's)",
             "ours min µs", "ours max µs", "Timer min µs", "Timer max µs", "threads"],
            summary.runs, cross_rows, key=("n",)),
        run_table(
            "profile", "Where a call's time goes: torch.profiler, eager and compiled",
            "Another regime than the case's time: torch.profiler around calls of the rule's "
            "forward plus backward after warm-up, per call, with the profiler's own overhead "
            "in every event (compare 'CPU total µs' with the rule-times table's case). For the compiled forward graph (CompiledFunction) and backward graph "
            "(CompiledFunctionBackward): the bytes per element their kernels move given what "
            "the compiled rule saves (forward: read x, write y and the saved tensor; backward: "
            "read it and g, write dx), the rate that is, and its fraction of the copy "
            "bandwidth measured in the same run.",
            ["mode", "rule", "n", "event", "calls", "self CPU µs", "CPU total µs",
             "self device µs", "bytes per element", "GB/s", "÷ copy bandwidth"],
            summary.runs, profile_rows, key=("mode", "rule", "n", "event")),
    ]


def _in_processes(timed: list) -> str:
    """What a caption says of a check some runs took in several fresh processes."""
    counts = sorted({len(t.blocks) for t in timed if len(t.blocks) > 1})
    if not counts:
        return ""
    return (f" Where a run took this check in {' or '.join(map(str, counts))} processes, one "
            f"after another (the run's own, then fresh ones), each timing its share of the "
            f"rounds, each interval is a two-level bootstrap: processes drawn with replacement, "
            f"then rounds within each.")


def _anatomy_tables(summary: Summary) -> list[Table]:
    """The checks that take a case apart, each timed round by round in one case."""
    rounds = ("timed round by round in one case (at least the run's minimum of rounds); times "
              "are medians over rounds [95% bootstrap interval], ratios the median of the "
              "per-round ratios [95% interval over rounds]")
    pieces = _in_processes([p.timed for t in summary.runs for p in t.pieces])
    probes = _in_processes([p.timed for t in summary.runs for p in t.probes])
    return [
        run_table(
            "copies", "The machine's copy bandwidth: numpy, torch and JAX copies",
            f"n float32 elements copied into a buffer that exists (numpy.copyto, "
            f"torch copy_, and jax.jit writing into a donated buffer) and into a new one "
            f"(numpy copy, torch clone, jax.jit x + 0.0), {rounds}. GB/s counts bytes read "
            f"plus written. Minor page faults a call are this process's: the median over the "
            f"timed calls where the run counted each call, else over five calls after timing. "
            f"The machine's copy, used by every bandwidth fraction in this report, is the "
            f"fastest copy into an existing buffer at that size.",
            ["n", "copy", "into", "µs [95%]", "GB/s", "minor faults a call",
             "pages of output", "the machine's copy"],
            summary.runs, lambda t: anatomy.copy_rows(t.copies), key=("n", "copy", "into")),
        run_table(
            "eager_parts", "The eager cost of a custom rule, taken apart",
            f"Each rule's step (forward plus backward through autograd / jax.vjp), its forward "
            f"body alone and its backward body alone (a Function's forward and backward, a "
            f"custom_vjp's fwd and bwd, called directly; for the built-in, its own kernels: "
            f"torch.relu and aten.threshold_backward, jax.nn.relu and its jvp rule's select), "
            f"and the backward body again on the same values sorted, so that each sign comes "
            f"in one run; {rounds}. A row for the built-in's own ops behind the framework's "
            f"custom-rule API measures what that API itself costs. 'step − forward − "
            f"backward' is what autograd adds, round by round. Rules whose body cannot be "
            f"called alone (torch.library custom_op, custom_vjp with nondiff_argnums) are "
            f"not taken apart.{pieces}",
            ["framework", "n", "rule", "step µs [95%]", "forward µs [95%]",
             "backward µs [95%]", "step ÷ built-in's [95%]",
             "backward ÷ built-in's [95%]", "backward, random ÷ sorted signs [95%]",
             "step − forward − backward µs [95%]", "minor faults a step"],
            summary.runs, lambda t: anatomy.part_rows(t.pieces, t.references), key=("framework", "n", "rule")),
        run_table(
            "page_faults", "torch.relu's step with new outputs and with existing ones",
            f"The eager step through autograd; its two kernels (clamp_min, threshold_backward) "
            f"called directly, each writing a new tensor; and the same kernels writing into "
            f"tensors that exist (out= variants); {rounds}; ratios to the autograd step.",
            ["n", "way", "µs [95%]", "÷ the autograd step [95%]",
             "minor faults a call"],
            summary.runs, lambda t: anatomy.fault_rows(t.ways), key=("n", "way")),
        run_table(
            "inductor_probe", "Why compiled torch is slow on this CPU: the reproducer",
            f"experiments/inductor_bool_mask.py, a reproducer small enough to hand upstream: "
            f"each piece of what inductor makes of relu's forward plus backward, and the whole "
            f"step, eager, compiled (dynamic=False) and compiled with inductor's C++ vector "
            f"code off (cpp.simdlen=0, its own torch.compile), on random signs and on the same "
            f"values sorted; {rounds}. The run's records keep each compiled kernel's store and "
            f"load lines.{probes}",
            ["op", "signs", "n", "eager µs [95%]", "compile µs [95%]",
             "simdlen=0 µs [95%]", "compile ÷ eager [95%]", "simdlen=0 ÷ eager [95%]"],
            summary.runs, lambda t: anatomy.probe_rows(t.probes), key=("op", "signs", "n")),
    ]


def tables(summary: Summary) -> list[Table]:
    return (_time_tables(summary) + _machine_tables(summary) + _check_tables(summary)
            + _anatomy_tables(summary))


def render(summary: Summary) -> Rendered:
    built, notes = tables(summary), harness_notes(summary)
    for table in built:
        table.notes += notes.get(table.id, [])
    found = answer(summary)
    return Rendered(built, findings(summary), figure(summary), [found] if found else [])

"""The timing experiment's rendering: table rows and tables from its summary (timing_summary),
and render(summary), which adds the findings and the figure (timing_findings).
"""
from experiments import timing_anatomy as anatomy
from experiments import timing_rows as rows
from experiments.timing_findings import answer, figure, findings, harness_notes
from experiments.timing_summary import RunTiming, Summary
from study.experiment import Rendered
from study.runsets import merged, run_table
from study.tables import Table
from study.stats import MIN_BOOTSTRAP

def _where(summary: Summary) -> str:
    texts = []
    for t in summary.runs:
        th = t.threads
        texts.append(f"torch threads {th.get('torch')}, XLA CPU threads = cores "
                     f"{th.get('xla_cpu_count')}")
    return "; ".join(dict.fromkeys(texts))


def _limits(t: RunTiming) -> list[str]:
    copies = [f"{c.what} {c.rate / 1e9:.3g} GB/s at {anatomy.size_label(c.n)}"
              for n in sorted({c.n for c in t.copies}) if (c := anatomy.machine_copy(t.copies, n))]
    return copies + [f"{m.what} {m.rate / 1e9:.3g} GFLOP/s" for m in t.machine]


def _machine_text(summary: Summary) -> str:
    return "; ".join(
        f"{t.run.provenance['host']}/{t.run.provenance['device']}"
        f"{'' if t.run.scope == 'standard' else ', ' + t.run.scope + ' run'}: "
        + ", ".join(_limits(t)) for t in summary.runs)


def _time_tables(summary: Summary) -> list[Table]:
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
            rows.TimeRow, summary.runs, lambda r: rows.time_rows(r, summary.sizes),
            detail=merged(summary.runs, rows.time_detail, rows.TimeDetail)[:2]),
        run_table(
            "rule_ratios", "Custom rule ÷ built-in, same framework, mode and size",
            "The median over rounds of the per-round ratio rule ÷ built-in (the two timed in "
            "the same rounds of one case) [its 95% bootstrap interval over rounds]; where a "
            "run did not interleave, the ratio of the two medians with each side resampled.",
            rows.RatioRow, summary.runs, lambda r: rows.ratio_rows(r, summary.sizes)),
        run_table(
            "torch_vs_jax", "torch ÷ JAX for the same work",
            "Ratios of the two cases' times within one run [95% bootstrap interval, each side "
            "resampled on its own: the two were timed in different cases]: torch eager against "
            "JAX op-by-op, torch.compile against jax.jit, both compiled for each size.",
            rows.TorchJaxRow, summary.runs, lambda r: rows.torch_jax_rows(r, summary.sizes)),
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
            rows.BandwidthRow, summary.runs, rows.bandwidth_rows),
        run_table(
            "saved_bytes", "Memory kept for backward, bytes per element",
            "torch: every tensor packed through torch.autograd.graph.saved_tensors_hooks, "
            "eagerly and from torch.compile's graph; JAX: the residual arrays held by jax.vjp's "
            "function, eagerly and from a jitted vjp; the last column is the device allocator's "
            "growth while the backward state is alive, where the device reports one; for 2^20 "
            "float32 elements (compiled: at the timed sizes).",
            rows.MemoryRow, summary.runs, rows.memory_rows),
        run_table(
            "compile", "Compile time, reported on its own (µs)",
            "The first call of each rule at each size (compilation included: torch.compile "
            "with dynamic=False and jax.jit both compile once per rule and size) beside the warm "
            "median.",
            rows.CompileRow, summary.runs, rows.compile_rows),
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
            rows.NetRow, summary.runs, rows.net_rows),
        run_table(
            "targets", "Speed targets: measured, never asserted in tests",
            "Each target as the run's plan states it, the value measured in the run with its 95% "
            "bootstrap interval where the run kept the rounds behind it, and by how much the "
            "value meets (negative) or misses (positive) it. Met: yes or no where the whole "
            "interval meets or misses the threshold, undecided where it spans it; a value "
            "without an interval is judged alone.",
            rows.TargetRow, summary.runs, rows.target_rows),
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
            rows.HarnessRow, summary.runs, rows.harness_rows),
        run_table(
            "shared_dynamic", "The harness before it compiled per size, against it",
            "torch.compile(dynamic=True), one wrapper per rule first called at 8 elements and "
            "then timed at n, as the harness shared one across sizes before; against the same "
            "rule compiled for n alone (dynamic=False), the two interleaved round by round. "
            "Inductor picks a kernel's code from the sizes it first sees, so the shared "
            f"wrapper runs code chosen for 8 elements. The ratio is of medians, with the 95% "
            f"bootstrap interval of the per-round ratio where the run kept {MIN_BOOTSTRAP} or "
            f"more rounds.",
            rows.SharedDynamicRow, summary.runs, rows.shared_dynamic_rows),
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
            rows.CrossRow, summary.runs, rows.cross_rows),
        run_table(
            "profile", "Where a call's time goes: torch.profiler, eager and compiled",
            "Another regime than the case's time: torch.profiler around calls of the rule's "
            "forward plus backward after warm-up, per call, with the profiler's own overhead "
            "in every event (compare 'CPU total µs' with the rule-times table's case). For the compiled forward graph (CompiledFunction) and backward graph "
            "(CompiledFunctionBackward): the bytes per element their kernels move given what "
            "the compiled rule saves (forward: read x, write y and the saved tensor; backward: "
            "read it and g, write dx), the rate that is, and its fraction of the copy "
            "bandwidth measured in the same run.",
            rows.ProfileRow, summary.runs, rows.profile_rows),
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
            rows.CopyRow, summary.runs, lambda t: rows.copy_rows(t.copies)),
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
            rows.PartRow, summary.runs, lambda t: rows.part_rows(t.pieces, t.references)),
        run_table(
            "page_faults", "torch.relu's step with new outputs and with existing ones",
            f"The eager step through autograd; its two kernels (clamp_min, threshold_backward) "
            f"called directly, each writing a new tensor; and the same kernels writing into "
            f"tensors that exist (out= variants); {rounds}; ratios to the autograd step.",
            rows.FaultRow, summary.runs, lambda t: rows.fault_rows(t.ways)),
        run_table(
            "inductor_probe", "Why compiled torch is slow on this CPU: the reproducer",
            f"experiments/inductor_bool_mask.py, a reproducer small enough to hand upstream: "
            f"each piece of what inductor makes of relu's forward plus backward, and the whole "
            f"step, eager, compiled (dynamic=False) and compiled with inductor's C++ vector "
            f"code off (cpp.simdlen=0, its own torch.compile), on random signs and on the same "
            f"values sorted; {rounds}. The run's records keep each compiled kernel's store and "
            f"load lines.{probes}",
            rows.ProbeRow, summary.runs, lambda t: rows.probe_rows(t.probes)),
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

"""Timing summarised: tidy frames of every rule's time and its ratio to the built-in, the bytes
each keeps for backward, the net's steps, the harness's checks and the cases taken apart; the
cost at one size as facts. Times are µs, ratios unitless, each an Estimate with its 95% interval.
"""
from dataclasses import dataclass

import pandas as pd

from experiments.timing import anatomy
from experiments.timing.records import RunTiming, paired_spread, ratio_spread, read, unpaired_spread
from experiments.timing.targets import block_ratios, fractions, harness_ratios, off_by, target_values
from study.stats import Estimate, median_interval

COMPILED_MODES = ("compile", "jit")  # the records' mode names for compiled code


@dataclass(frozen=True)
class Cost:
    """One run's cost at one size: per framework, the best custom rule ÷ built-in, compiled and
    eager, and the bytes the built-in and the cheapest custom rule keep for backward."""
    run: str
    device: str
    scope: str
    commit: str | None  # the code the run measured
    size: str  # '10^6'
    compiled: tuple[tuple[str, str, Estimate], ...]  # (framework, rule, ratio)
    eager: tuple[tuple[str, str, Estimate], ...]
    kept: tuple[tuple[str, str, float], ...]  # (framework, rule, bytes per element), least first


@dataclass
class Summary:
    rules: pd.DataFrame  # run, framework, mode, rule, n, time µs, ÷ built-in, dispatch µs, first call s, kept B/element, graph breaks, recompiles
    kept: pd.DataFrame  # run, framework, rule, kept for backward (B/element), device growth
    nets: pd.DataFrame  # run, net, workload, framework, mode, rule, time µs, ÷ built-in, GFLOP/s
    harness: pd.DataFrame  # run, check, measures, result, threshold, passed
    fresh: pd.DataFrame  # run, framework, mode, rule, n, in-run ÷ fresh, blocks
    parts: pd.DataFrame  # run, framework, n, rule, piece, time µs, ÷ built-in's
    probes: pd.DataFrame  # run, op, role, way, signs, n, time µs, ÷ eager
    copies: pd.DataFrame  # run, n, copy, into, time µs, GB/s, faults a call
    ways: pd.DataFrame  # run, n, way, time µs, ÷ the autograd step, faults a call
    cross: pd.DataFrame  # run, n, ours ÷ Timer, Timer ÷ the case's time
    profile: pd.DataFrame  # run, mode, rule, n, event, calls, self CPU µs, self device µs
    torch_vs_jax: pd.DataFrame  # run, rules, compiled, n, torch ÷ jax
    bandwidth: pd.DataFrame  # run, framework, mode, rule, useful ÷ copy, kernel bytes ÷ copy
    costs: list[Cost]
    probe: anatomy.ProbeFact | None  # the reproducer's result in the first run that ran it
    runs: list[str]


def _frame(rows: list[dict]) -> pd.DataFrame:
    return pd.DataFrame(rows, dtype=object)


def _rules(t: RunTiming) -> list[dict]:
    return [{"run": t.run.tag, "framework": r.framework, "mode": r.mode, "rule": r.name, "n": r.n,
             "time µs": r.time.scaled(1e6),
             "÷ built-in": ratio_spread(t, r.framework, r.mode, r.rule, r.n)
             if r.rule != t.references.get(r.framework) else None,
             "dispatch µs": r.dispatch.median * 1e6, "first call s": r.first_call_s,
             "kept B/element": r.saved_bytes_per_element, "graph breaks": r.graph_breaks,
             "recompiles": r.recompiles, "minor faults a call": r.faults} for r in t.rules]


def _nets(t: RunTiming) -> list[dict]:
    base = {(n.net, n.workload, n.framework, n.mode): n for n in t.nets
            if n.rule == t.references.get(n.framework)}
    peak = max((m.rate for m in t.machine), default=None)  # the machine's own matmul rate
    rows = []
    for n in t.nets:
        b = base.get((n.net, n.workload, n.framework, n.mode))
        rows.append({"run": t.run.tag, "net": n.net, "workload": n.workload, "framework": n.framework,
                     "mode": n.mode, "rule": n.name, "time µs": (median_interval(n.times) if n.times
                                                                else Estimate(n.stats.median)).scaled(1e6),
                     "÷ built-in": unpaired_spread(n.stats.median / b.stats.median, n.times, b.times)
                     if b and b is not n else None, "GFLOP/s": n.flops / n.stats.median / 1e9,
                     "÷ the machine's matmul": n.flops / n.stats.median / peak if peak else None,
                     "first call s": n.first_call_s})
    return rows


def met(value: Estimate, threshold: float, sense: str) -> str:
    """'yes' or 'no' where the whole interval meets or misses the threshold, 'undecided' where it
    spans it; a value without an interval is judged alone."""
    ends = (value.lo, value.hi) if value.lo is not None else (value.value,)
    ok = [v <= threshold if sense == "≤" else v >= threshold for v in ends]
    return "yes" if all(ok) else "no" if not any(ok) else "undecided"


def _harness(t: RunTiming) -> list[dict]:
    """Every check the run made, with its threshold where the run's plan states one."""
    measured = target_values(t)
    rows = []
    for target in t.targets:
        value, what = measured.get(target.key, (None, ""))
        threshold = (target.threshold.get(t.run.scope) if isinstance(target.threshold, dict)
                     else target.threshold)
        passed = met(value, threshold, target.sense) if value is not None and threshold is not None else None
        rows.append({"run": t.run.tag, "check": target.target, "of": what, "result": value,
                     "sense": target.sense if threshold is not None else None, "threshold": threshold,
                     "passed": passed})
    for c in t.cross:
        ours_over_timer = paired_spread(float(pd.Series(c.ours_s).median() / pd.Series(c.timer_s).median()),
                                        c.ours_s, c.timer_s)
        rows.append({"run": t.run.tag, "check": "our harness ÷ torch.utils.benchmark.Timer, alternating",
                     "of": f"torch.relu eager at {anatomy.size_label(c.n)}", "result": ours_over_timer,
                     "sense": None, "threshold": None, "passed": None})
    for s in t.shared_dynamic:
        rows.append({"run": t.run.tag, "check": "one dynamic=True wrapper first called at 8 ÷ compiled for n",
                     "of": f"{s.name} at {anatomy.size_label(s.n)}",
                     "result": paired_spread(s.shared_median / s.sized_median, s.shared_times, s.sized_times),
                     "sense": None, "threshold": None, "passed": None})
    fractions_ = fractions(t)
    if fractions_:
        worst = max(fractions_.items(), key=lambda kv: kv[1][0])
        rows.append({"run": t.run.tag, "check": "no rule moves more than the machine's copy: useful bytes ÷ copy",
                     "of": f"{worst[0][0]} {worst[0][1]} {t.names().get(worst[0][2], worst[0][2])}",
                     "result": Estimate(worst[1][0]), "sense": "≤", "threshold": 1.0,
                     "passed": "yes" if worst[1][0] <= 1 else "no"})
    return rows


def _torch_vs_jax(t: RunTiming) -> list[dict]:
    """Each pair of rules doing the same work, torch's time ÷ JAX's, eager and compiled (each
    side's rounds resampled on its own)."""
    idx, rows = t.index(), []
    for label, tr, jr in t.pairs:
        for (fw_t, mode_t, rule_t, n), a in ((k, v) for k, v in idx.items() if k[0] == "torch" and k[2] == tr):
            b = next((v for (fw, m, r, size), v in idx.items() if (fw, r, size) == ("jax", jr, n)
                      and (m in COMPILED_MODES) == (mode_t in COMPILED_MODES)), None)
            if b:
                rows.append({"run": t.run.tag, "rules": label, "compiled": mode_t in COMPILED_MODES, "n": n,
                             "torch ÷ jax": unpaired_spread(a.stats.median / b.stats.median, a.times, b.times)})
    return rows


def _cost(t: RunTiming, n: int) -> Cost | None:
    rows = [r for r in t.rules if r.n == n and r.rule != t.references.get(r.framework)]
    if not rows:
        return None
    best = {}
    for r in rows:
        ratio = ratio_spread(t, r.framework, r.mode, r.rule, n)
        key = (r.framework, r.mode in COMPILED_MODES)
        if ratio and (key not in best or ratio.value < best[key][1].value):
            best[key] = (r.name, ratio)
    kept = sorted(((m.framework, m.name or m.rule, m.kept) for m in t.memory if m.kept is not None),
                  key=lambda k: (k[0], k[2]))
    return Cost(t.run.tag, t.run.provenance["device"], t.run.scope, t.run.provenance.get("git_commit"),
                anatomy.size_label(n),
                tuple((fw, *best[(fw, True)]) for fw in ("torch", "jax") if (fw, True) in best),
                tuple((fw, *best[(fw, False)]) for fw in ("torch", "jax") if (fw, False) in best), tuple(kept))


def summarise(runs) -> Summary:
    timings = read(runs).runs
    copies, ways, parts, probes, cross, profile, fresh, kept = [], [], [], [], [], [], [], []
    for t in timings:
        tag = t.run.tag
        copies += [{"run": tag, "n": c.n, "copy": c.what, "into": c.into, "time µs": c.timed.time().scaled(1e6),
                    "GB/s": c.rate / 1e9, "minor faults a call": c.timed.faults} for c in t.copies]
        for w in t.ways:
            base = next(b for b in t.ways if b.n == w.n)
            ways.append({"run": tag, "n": w.n, "way": w.way, "time µs": w.timed.time().scaled(1e6),
                         "÷ the autograd step": w.timed.over(base.timed) if w is not base else None,
                         "minor faults a call": w.timed.faults})
        grouped = anatomy.by_rule(t.pieces)
        for (fw, n, rule), of in grouped.items():
            ref = grouped.get((fw, n, t.references.get(fw)), {})
            parts += [{"run": tag, "framework": fw, "n": n, "rule": p.name, "piece": piece,
                       "time µs": p.timed.time().scaled(1e6),
                       "÷ built-in's": p.timed.over(ref[piece].timed) if piece in ref and rule != t.references.get(fw) else None}
                      for piece, p in of.items()]
        eager = {(p.op, p.signs): p for p in t.probes if p.way == anatomy.EAGER}
        probes += [{"run": tag, "op": p.op, "role": p.role, "way": p.way, "signs": p.signs, "n": p.n,
                    "time µs": p.timed.time().scaled(1e6),
                    "÷ eager": p.timed.over(eager[(p.op, p.signs)].timed)
                    if p.way != anatomy.EAGER and (p.op, p.signs) in eager else None} for p in t.probes]
        cross += [{"run": tag, "n": c.n, "rounds": c.rounds,
                   "ours ÷ Timer": paired_spread(float(pd.Series(c.ours_s).median() / pd.Series(c.timer_s).median()),
                                                 c.ours_s, c.timer_s), "Timer threads": c.timer_threads}
                  for c in t.cross]
        profile += [{"run": tag, "mode": e.mode, "rule": e.rule, "n": e.n, "event": e.event, "calls": e.calls,
                     "self CPU µs": e.self_cpu_us, "CPU total µs": e.cpu_total_us,
                     "self device µs": e.self_device_us} for e in t.profile]
        ratios = harness_ratios(t)
        fresh += [{"run": tag, "framework": k[0], "mode": k[1], "rule": t.names().get(k[2], k[2]), "n": k[3],
                   "in-run ÷ fresh": v, "off by": off_by(v), "block ratios": block_ratios(t, k)}
                  for k, v in ratios.items()]
        kept += [{"run": tag, "framework": m.framework, "rule": m.name or m.rule,
                  "kept for backward (B/element)": m.kept, "torch saved tensors": m.torch,
                  "jax.vjp residuals": m.jax_vjp, "device growth": m.device_growth} for m in t.memory]
    costs = [c for t in timings for n in sorted({r.n for r in t.rules}) if n == 10 ** 6
             and (c := _cost(t, n))]
    probe = next((f for t in timings if (f := anatomy.probe_fact(
        t.probes, str(t.run.provenance.get("torch_cpu_capability"))))), None)
    return Summary(_frame([r for t in timings for r in _rules(t)]), _frame(kept),
                   _frame([r for t in timings for r in _nets(t)]),
                   _frame([r for t in timings for r in _harness(t)]), _frame(fresh), _frame(parts),
                   _frame(probes), _frame(copies), _frame(ways), _frame(cross), _frame(profile),
                   _frame([r for t in timings for r in _torch_vs_jax(t)]),
                   _frame([{"run": t.run.tag, "framework": k[0], "mode": k[1], "rule": t.names().get(k[2], k[2]),
                            "useful ÷ copy": useful, "kernel bytes ÷ copy": kernel}
                           for t in timings for k, (useful, kernel) in fractions(t).items()]),
                   costs, probe, [t.run.tag for t in timings])

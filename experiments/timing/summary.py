"""Timing summarised: tidy frames of every rule's time and its ratio to the built-in, the bytes
each keeps for backward, the net's steps, the harness's checks and the cases taken apart; the
cost at one size as facts. Times are µs, ratios unitless, each an Estimate with its 95% interval.
"""
from dataclasses import dataclass, replace

import numpy as np
import pandas as pd

from study.report import main_run, older_code, releases

from experiments.timing.records import (COMPILED, COMPILED_MODES, EAGER, Timing, kept, median, over,
                                        builtin_compiled_over_eager, paired_spread, per_element,
                                        rate, rule_case_ratio,
                                        rule_cases_compiled_over_eager, shape_words, size_label,
                                        time, times, unpaired_spread)
from experiments.timing.targets import (ProbeFact, block_ratios, checks_with, fractions,
                                        harness_ratios, met, probe_fact, target_values,
                                        variance_split)
from study.compare.stats import Estimate, together


@dataclass(frozen=True)
class Cost:
    """One run's cost at one size: per framework, the best custom rule ÷ built-in, compiled and
    eager, and the bytes the built-in and the cheapest custom rule keep for backward."""
    run: str
    device: str
    scope: str
    commit: str | None  # the code the run measured
    size: str  # '10^6'
    # (framework, rule, ratio, decided): the lowest decided ratio, else the lowest undecided one
    compiled: tuple[tuple[str, str, Estimate, bool], ...]
    eager: tuple[tuple[str, str, Estimate, bool], ...]
    kept: tuple[tuple[str, str, float], ...]  # (framework, rule, bytes per element), least first
    kept_at: int | None  # the elements the bytes kept were measured at (None: several sizes)
    older: bool = False  # measured at an earlier commit than the newest timing run
    releases: tuple[str, str] = ("", "")  # (torch, jax)
    undecided: tuple[tuple[str, bool], ...] = ()  # (framework, compiled): no ratio decided
    utc: str = ""  # when the run was measured
    failed: tuple[str, ...] = ()  # the keys of the harness's own checks the run failed (OWN)
    wrappers: tuple[tuple[str, str], ...] = ()  # (framework, name): the wrapper over the built-in
    # filled from the frames (summarise): (framework, rule, its other measurement, this ÷ that)
    # where the eager step taken apart disagrees with the ratio cited; (framework, name, ratio)
    # of each wrapper over the built-in's own kernels, its step ÷ the built-in's
    again: tuple = ()
    wrapper: tuple = ()
    machine: str = ""  # the GPU's model, or the CPU's where the run had no GPU
    unsure: tuple[str, ...] = ()  # the keys of the checks (OWN) the run left undecided


@dataclass
class Summary:
    # run, framework, mode, rule, size (elements), time µs, ÷ built-in, dispatch µs, first call s,
    # kept B/element, graph breaks, recompiles
    rules: pd.DataFrame
    kept: pd.DataFrame  # run, framework, rule, kept for backward (B/element), device growth
    nets: pd.DataFrame  # run, net, workload, framework, mode, rule, time µs, ÷ built-in, GFLOP/s
    harness: pd.DataFrame  # run, check, measures, result, threshold, passed
    fresh: pd.DataFrame  # run, framework, mode, rule, size, block, in-run ÷ fresh, the case's
    parts: pd.DataFrame  # run, framework, size, rule, piece, time µs, ÷ built-in's; its rule case
    probes: pd.DataFrame  # run, op, role, way, signs, size, time µs, ÷ eager; the rule cases' step
    copies: pd.DataFrame  # run, size, copy, into, time µs, GB/s, faults a call
    ways: pd.DataFrame  # run, size, way, time µs, ÷ the autograd step, faults a call
    cross: pd.DataFrame  # run, size, ours ÷ Timer, Timer ÷ the case's time
    torch_vs_jax: pd.DataFrame  # run, rules, compiled, size, torch ÷ jax
    bandwidth: pd.DataFrame  # run, framework, mode, rule, useful ÷ copy, kernel bytes ÷ copy
    costs: list[Cost]
    probe: ProbeFact | None  # the reproducer's result in the main run, or the first that ran it
    probe_run: str | None  # ... its run
    runs: list[str]
    releases: dict = None  # label -> (torch, jax)
    compile_cache: dict = None  # label -> inductor's folder at the start: "empty", "user", None
    main: str | None = None  # the main run's label (study.report.main_run)
    older: list[str] = ()  # the runs that are older code (study.report.older_code)
    probe_also: tuple = ()  # (run, ProbeFact) of every other run the reproducer ran in
    withdrawn: tuple = ()  # (run, framework, mode) whose rule cases an erratum withdrew


# the records' mode names, as the report says them (the glossary's execution modes)
EXECUTION = {"eager": "eager", "op-by-op": "eager", "compile": "compiled", "jit": "compiled"}


def _rules(t: Timing) -> list[dict]:
    return [{"run": t.run.tag, "framework": r["framework"], "mode": r["mode"], "rule": r["name"],
             "size": r["n"], "time µs": time(r, r["stats"]["n"]).scaled(1e6),
             "÷ built-in": t.ratio(r["framework"], r["mode"], r["rule"], r["n"])
             if t.custom(r) else None,
             "built-in compiled ÷ eager": builtin_compiled_over_eager(t, r["framework"], r["n"])
             if not t.custom(r) and r["mode"] in COMPILED_MODES else None,
             "dispatch µs": r["dispatch"]["median"] * 1e6, "first call s": r["first_call_s"],
             "kept B/element": r.get("saved_bytes_per_element"),
             "graph breaks": (r.get("dynamo_counts_of_case") or {}).get("graph_breaks"),
             "recompiles": (r.get("dynamo_counts_of_case") or {}).get("recompiles"),
             "minor faults a call": float(np.median(r["minor_faults"]))
             if r.get("minor_faults") else None}
            for r in t.rules]


def _nets(t: Timing) -> list[dict]:
    base = {(n["net"], n["workload"], n["framework"], n["mode"]): n for n in t.part("net")
            if not t.custom(n)}
    rates = [r["flops"] / median(r) for r in t.part("machine") if r.get("flops") is not None]
    peak = max(rates, default=None)  # the machine's own matmul rate
    rows = []
    for n in t.part("net"):
        b = base.get((n["net"], n["workload"], n["framework"], n["mode"]))
        spent = time(n)
        rows.append({"run": t.run.tag, "net": n["net"], "workload": n["workload"],
                     "framework": n["framework"], "mode": n["mode"],
                     "rule": n["rule"] if n.get("name") is None else n["name"],
                     "time µs": spent.scaled(1e6),
                     "÷ built-in": unpaired_spread(median(n) / median(b), n, b)
                     if b and b is not n else None,
                     "GFLOP/s": rate(n["flops"], spent, 1e9),
                     "÷ the machine's matmul": rate(n["flops"], spent, peak) if peak else None,
                     "first call s": n["first_call_s"], "shape": shape_words(n.get("shape"))})
    return rows


# a between-block variance component estimated below 0 is set to 0 (study.compare.levels)
NO_BETWEEN = ("; 0: in half the cases or more, the blocks' means vary no more than the rounds "
              "within a block predict")


def _ours_over_timer(c: dict) -> Estimate:
    return paired_spread(tuple(c["ours_s"]), tuple(c["timer_s"])) or Estimate(
        float(np.median(c["ours_s"]) / np.median(c["timer_s"])))


def _harness(t: Timing) -> list[dict]:
    """Every check the run made, with its threshold where the run's plan states one."""
    measured, tag = target_values(t), t.run.tag
    rows = []
    for target in t.targets:
        value, what = measured.get(target["key"], (None, ""))
        threshold = target["threshold"]
        judged = value is not None and threshold is not None
        rows.append({"run": tag, "check": target["target"], "of": what, "result": value,
                     "sense": target["sense"] if threshold is not None else None,
                     "threshold": threshold,
                     "passed": met(value, threshold, target["sense"]) if judged else None})
    for c in t.part("cross_check"):
        rows.append({"run": tag, "check": "our harness ÷ torch.utils.benchmark.Timer, alternating",
                     "of": f"torch.relu eager at {size_label(c['n'])}",
                     "result": _ours_over_timer(c),
                     "sense": None, "threshold": None, "passed": None})
    for s in t.part("shared_dynamic"):
        (_, a), (_, b) = s["ways"].items()  # shared first, then compiled for n (as recorded)
        rows.append({"run": tag,
                     "check": "one torch.compile(dynamic=True) wrapper first called at 8 ÷ "
                              "compiled for n",
                     "of": f"{s['name']} at {size_label(s['n'])}",
                     "result": paired_spread(times(a), times(b))
                     or Estimate(median(a) / median(b)),
                     "sense": None, "threshold": None, "passed": None})
    for (fw, compiled), (between, within, blocks, rounds) in variance_split(t).items():
        of = f"{blocks:g} blocks (processes), a median of {rounds:g} rounds a block"
        rows += [{"run": tag, "check": f"SD of log(rule ÷ built-in) {where}, {fw} "
                                       f"{'compiled' if compiled else 'eager'}",
                  "of": of + (NO_BETWEEN if where == "between blocks" and value == 0 else ""),
                  "result": Estimate(value), "sense": None, "threshold": None, "passed": None}
                 for where, value in (("between blocks", between), ("within a block", within))]
    if fractions_ := fractions(t):
        (fw, mode, rule), (worst, _) = max(fractions_.items(), key=lambda kv: kv[1][0])
        rows.append({"run": tag,
                     "check": "no rule moves more than the machine's copy: useful bytes ÷ copy",
                     "of": f"{fw} {mode} {t.names.get(rule, rule)} at {size_label(max(t.sizes))}",
                     "result": Estimate(worst), "sense": "≤",
                     "threshold": 1.0, "passed": "yes" if worst <= 1 else "no"})
    return rows


def _torch_vs_jax(t: Timing) -> list[dict]:
    """Each pair of rules doing the same work, torch's time ÷ JAX's, eager and compiled (each
    side's rounds resampled on its own)."""
    rows = []
    for label, tr, jr in t.pairs:
        for (_, mode, _, n), a in ((k, v) for k, v in t.index.items()
                                   if k[0] == "torch" and k[2] == tr):
            b = next((v for (fw, m, r, size), v in t.index.items()
                      if (fw, r, size) == ("jax", jr, n)
                      and (m in COMPILED_MODES) == (mode in COMPILED_MODES)), None)
            if b:
                ratio = unpaired_spread(median(a) / median(b), a, b)
                rows.append({"run": t.run.tag, "rules": label, "compiled": mode in COMPILED_MODES,
                             "size": n, "torch ÷ jax": ratio})
    return rows


# a ratio decides a rule's cost where its 95% interval spans at most this share of its value:
# the 25% within which a rerun's ratios are held to agree (study.compare.reproduction)
DECIDES_WITHIN = 0.25


def decided(ratio: Estimate | None) -> bool:
    """Whether the run timed enough rounds for the ratio: its interval within DECIDES_WITHIN."""
    return (ratio is not None and ratio.lo is not None
            and ratio.hi - ratio.lo <= DECIDES_WITHIN * abs(ratio.value))


def _cost(t: Timing, n: int, older: bool = False) -> Cost | None:
    rows = [r for r in t.rules if r["n"] == n and t.custom(r)]
    if not rows:
        return None
    best, seen, loose = {}, set(), {}
    for r in rows:
        ratio = t.ratio(r["framework"], r["mode"], r["rule"], n)
        key = (r["framework"], r["mode"] in COMPILED_MODES)
        seen |= {key} if ratio else set()
        if decided(ratio) and (key not in best or ratio.value < best[key][1].value):
            best[key] = (r["name"], ratio, True)
        elif (ratio is not None and ratio.lo is not None
              and (key not in loose or ratio.value < loose[key][1].value)):
            loose[key] = (r["name"], ratio, False)
    undecided = tuple(sorted(seen - set(best)))
    best = {**{k: v for k, v in loose.items() if k in undecided}, **best}
    kept_ = sorted(((m["framework"], m.get("name") or m["rule"], kept(m)) for m in t.part("memory")
                    if kept(m) is not None), key=lambda k: (k[0], k[2]))
    def of(compiled: bool) -> tuple:
        return tuple((fw, *best[(fw, compiled)]) for fw in ("torch", "jax")
                     if (fw, compiled) in best)
    return Cost(t.run.tag, t.run.provenance["device"], t.run.scope,
                t.run.provenance.get("git_commit"), size_label(n), of(True), of(False),
                tuple(kept_), _one({m["n"] for m in t.part("memory") if kept(m) is not None}),
                older, (t.run.provenance["torch"], t.run.provenance["jax"]),
                undecided, str(t.run.provenance.get("utc")), checks_with(t, "no"),
                tuple(dict.fromkeys((p["framework"], p["over_builtin"])
                                    for p in t.part("eager_parts") if p.get("over_builtin"))),
                machine=_machine(t.run.provenance), unsure=checks_with(t, "undecided"))


def _machine(p: dict) -> str:
    """The GPU's model, or the CPU's for a cpu run (the run legend's machine)."""
    gpu = p.get("gpu")
    gpu = gpu.get("name") if isinstance(gpu, dict) else gpu
    return str((gpu if p["device"] != "cpu" else None) or p.get("cpu") or p["device"])


def _disagreeing(ratio: Estimate | None) -> bool:
    return ratio is not None and ratio.lo is not None and (ratio.lo > 1 or ratio.hi < 1)


def _with_parts(c: Cost, parts: pd.DataFrame, n: int) -> Cost:
    """The cost with what the eager step taken apart says of it: where it measures a cited
    eager ratio again and the two disagree, and what the wrapper alone costs."""
    if not len(parts):
        return c
    steps = parts[(parts["run"] == c.run) & (parts["size"] == n) & (parts["piece"] == "step")]
    at = {(r["framework"], r["rule"]): r for _, r in steps.iterrows()}
    again = tuple((fw, rule, at[(fw, rule)]["÷ built-in's"], at[(fw, rule)][THIS_OVER_AGAIN])
                  for fw, rule, _, _ in c.eager
                  if (fw, rule) in at and _disagreeing(at[(fw, rule)][THIS_OVER_AGAIN]))
    wrapper = tuple((fw, name, at[(fw, name)]["÷ built-in's"]) for fw, name in c.wrappers
                    if (fw, name) in at and at[(fw, name)]["÷ built-in's"] is not None)
    return replace(c, again=again, wrapper=wrapper)


def _one(values: set):
    return next(iter(values)) if len(values) == 1 else None


# the second place a quantity is printed: its other measurement, and how far apart the two are
AGAIN, THIS_OVER_AGAIN = "same ratio, rule cases (another measurement)", "this ÷ rule cases'"


def measured_again(this: Estimate | None, again: Estimate | None) -> dict:
    """A ratio measured a second time by another case: that measurement, and this ÷ that with
    the interval that covers every pair of values in the two intervals (the two measurements
    agree where it holds 1)."""
    if not (this and again):
        return {AGAIN: again, THIS_OVER_AGAIN: None}
    if None in (this.lo, again.lo):
        return {AGAIN: again, THIS_OVER_AGAIN: Estimate(this.value / again.value)}
    return {AGAIN: again, THIS_OVER_AGAIN: Estimate(this.value / again.value,
                                                    this.lo / again.hi, this.hi / again.lo)}


def _fresh(t: Timing) -> list[dict]:
    """One row per alternating block of each fresh-process check (one row, block None, where the
    run kept no blocks: the ratio of the two medians), with the case's median over blocks."""
    rows = []
    for k, case in harness_ratios(t).items():
        key = {"run": t.run.tag, "framework": k[0], "mode": k[1], "rule": t.names.get(k[2], k[2]),
               "size": k[3]}
        blocks = dict(enumerate(block_ratios(t.index[k]), 1)) or {None: case}
        rows += [{**key, "block": i, "in-run ÷ fresh": float(b),
                  "the case's in-run ÷ fresh": case} for i, b in blocks.items()]
    return rows


def _taken_apart(t: Timing) -> dict[str, list[dict]]:
    """The checks that take a case apart, each ratio paired: timed round by round in one case."""
    tag, out = t.run.tag, {"ways": [], "parts": [], "probes": []}
    out["copies"] = [{"run": tag, "size": c["n"], "copy": c["what"], "into": c["into"],
                      "time µs": time(c).scaled(1e6), "GB/s": c["bytes"] / median(c) / 1e9,
                      "minor faults a call": c.get("minor_faults_per_call")}
                     for c in t.part("machine") if c.get("bytes") is not None]
    ways = t.part("page_faults")
    for w in ways:
        base = next(b for b in ways if b["n"] == w["n"])
        out["ways"].append({"run": tag, "size": w["n"], "way": w["way"],
                            "time µs": time(w).scaled(1e6),
                            "÷ the autograd step": over(w, base) if w is not base else None,
                            "minor faults a call": w.get("minor_faults_per_call")})
    pieces = t.pieces()
    for (fw, n, rule), of in pieces.items():
        ref = pieces.get((fw, n, t.references.get(fw)), {})
        for piece, p in of.items():
            ratio = over(p, ref[piece]) if piece in ref and rule != t.references.get(fw) else None
            twin = rule_case_ratio(t, fw, rule, n) if piece == "step" and ratio else None
            out["parts"].append({"run": tag, "framework": fw, "size": n, "rule": p["name"],
                                 "piece": piece, "time µs": time(p).scaled(1e6),
                                 "÷ built-in's": ratio, **measured_again(ratio, twin)})
    eager = {(p["probe"], p["signs"]): p for p in t.probes if p["way"] == EAGER}
    for p in t.probes:
        base = eager.get((p["probe"], p["signs"])) if p["way"] != EAGER else None
        ratio = over(p, base) if base else None
        twin = (rule_cases_compiled_over_eager(t, p["n"])
                if (p.get("role"), p["way"], p["signs"]) == ("step", COMPILED, "random") else None)
        out["probes"].append({"run": tag, "op": p["probe"], "role": p.get("role"), "way": p["way"],
                              "signs": p["signs"], "size": p["n"], "time µs": time(p).scaled(1e6),
                              "÷ eager": ratio, **measured_again(ratio, twin)})
    return out


def summarise(runs) -> Summary:
    timings, rows, costs, (probe_run, probe), probe_also = together(lambda: _measured(runs))
    frames = {name: pd.DataFrame(r, dtype=object) for name, r in rows.items()}
    for f in frames.values():  # torch's compile and JAX's jit are both "compiled", and so on
        if "mode" in f.columns:
            f["mode"] = [EXECUTION.get(m, m) for m in f["mode"]]
    parts = frames.get("parts", pd.DataFrame(dtype=object))
    costs = [_with_parts(c, parts, 10 ** 6) for c in costs]
    return Summary(**{name: frames.get(name, pd.DataFrame(dtype=object)) for name in (
        "rules", "kept", "nets", "harness", "fresh", "parts", "probes", "copies", "ways", "cross",
        "torch_vs_jax", "bandwidth")}, costs=costs, probe=probe, probe_run=probe_run,
        probe_also=tuple(probe_also), withdrawn=_withdrawn(runs),
        releases=releases([t.run for t in timings]),
        runs=[t.run.tag for t in timings],
        compile_cache={t.run.tag: t.torch_compile_cache for t in timings},
        main=getattr(main_run(list(runs)), "tag", None), older=older_code(list(runs)))


def _withdrawn(runs) -> tuple:
    return tuple(dict.fromkeys((run.tag, r["framework"], EXECUTION.get(r["mode"], r["mode"]))
                               for run in runs for r in run.rows("rule")
                               if "withdrawn" in r and r.get("framework") and r.get("mode")))


def _measured(runs) -> tuple[list[Timing], dict[str, list[dict]], list[Cost], tuple]:
    """Each run's timing, the rows of each frame, the costs, the reproducer's result with its
    run: all that asks for estimates (which stats.together makes in batches)."""
    timings = [Timing(run) for run in runs]
    rows: dict[str, list[dict]] = {}
    for t in timings:
        tag = t.run.tag
        for name, part in _taken_apart(t).items():
            rows.setdefault(name, []).extend(part)
        rows.setdefault("cross", []).extend(
            {"run": tag, "size": c["n"], "rounds": c["rounds"], "ours ÷ Timer": _ours_over_timer(c),
             "Timer threads": c["timer_num_threads"]} for c in t.part("cross_check"))
        rows.setdefault("fresh", []).extend(_fresh(t))
        rows.setdefault("kept", []).extend(
            {"run": tag, "framework": m["framework"], "rule": m.get("name") or m["rule"],
             "kept for backward (B/element)": kept(m),
             "torch saved tensors": per_element(m, "torch_saved"),
             "jax.vjp residuals": per_element(m, "jax_vjp"),
             "device growth": per_element(m, "device_peak_growth", "device_bytes_in_use_growth")}
            for m in t.part("memory"))
        rows.setdefault("bandwidth", []).extend(
            {"run": tag, "framework": k[0], "mode": k[1], "rule": t.names.get(k[2], k[2]),
             "useful ÷ copy": useful, "kernel bytes ÷ copy": kernel}
            for k, (useful, kernel) in fractions(t).items())
        for name, of in (("rules", _rules), ("nets", _nets), ("harness", _harness),
                         ("torch_vs_jax", _torch_vs_jax)):
            rows.setdefault(name, []).extend(of(t))
    newest = max(timings, key=lambda t: str(t.run.provenance.get("utc")), default=None)
    commit = newest.run.provenance.get("git_commit") if newest else None
    main = main_run([t.run for t in timings])
    first = sorted(timings, key=lambda t: t.run is not main)  # the main run's probe, if it ran it
    facts = [(t.run.tag, f) for t in first if (f := probe_fact(t))]
    return timings, rows, [c for t in timings if 10 ** 6 in t.sizes and (c := _cost(
        t, 10 ** 6, t.run.provenance.get("git_commit") != commit))], (
        facts[0] if facts else (None, None)), facts[1:]

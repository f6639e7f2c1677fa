"""The timing experiment's findings, notes, answer and log-log figure: pure functions of its
summary (timing_summary).
"""
from dataclasses import dataclass

from experiments import timing_anatomy as anatomy
from experiments.timing_summary import (RunTiming, Summary, best_custom, copy_bandwidth, keys,
                                        ratio_spread, size_label, sizes)
from study.cells import Value
from study.experiment import Answer, Finding
from study.runsets import newest, stated_for_runs
from study.tables import format_cell

def _spread_text(spread: Value | None) -> str:
    return "—" if spread is None else (f"{format_cell(spread.value, 3)}× [{format_cell(spread.lo, 3)}"
                                       f", {format_cell(spread.hi, 3)}]")


@dataclass(frozen=True)
class CostFact:
    """At 10^6 elements: the best compiled custom rule ÷ built-in per framework, two eager
    custom rules ÷ built-in (per-round ratios [95%]); the smallest bytes a rule saves."""
    compiled: tuple[tuple[str, str, Value | None], ...]  # (framework label, rule, ratio)
    eager: tuple[tuple[str, Value], ...]  # (rule, ratio)
    smallest_saved: str | None


def _cost_fact(t: RunTiming) -> CostFact | None:
    names = t.names()
    compiled = tuple((label, names.get(rule, rule), ratio_spread(t, fw, m, rule, 10 ** 6))
                     for label, fw, m in (("torch", "torch", "compile"), ("JAX", "jax", "jit"))
                     for rule in [best_custom(t, fw, m)[0]] if rule)
    eager = tuple((names.get(r, r), s) for r in ("torch_custom_c0", "torch_custom_op_c0")
                  if (s := ratio_spread(t, "torch", "eager", r, 10 ** 6)) is not None)
    saved = {m.rule: m.kept or 0 for m in t.memory}
    if not (compiled or eager):
        return None
    return CostFact(compiled, eager, format_cell(min(saved.values()), 3) if saved else None)


def _cost_text(fact: CostFact) -> str:
    compiled, eager, smallest = fact.compiled, fact.eager, fact.smallest_saved
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


def _cost_short(fact: CostFact) -> str:
    return (f"compiled {'/'.join(f'{format_cell(v.value, 3)}×' for _, _, v in fact.compiled if v)}"
            f", eager {'/'.join(f'{format_cell(v.value, 3)}×' for _, v in fact.eager)}")


def _probe_fact(t: RunTiming):
    capability = t.run.provenance.get("torch_cpu_capability")  # the release: the run's label
    return anatomy.probe_fact(t.probes, f"{capability} CPU kernels" if capability else "this CPU")


def _parts_fact(t: RunTiming):
    return anatomy.parts_fact(t.pieces, t.references, t.over_builtin)


def _copy_fact(t: RunTiming):
    return anatomy.copy_note(t.copies)


def _shared_fact(t: RunTiming) -> tuple[tuple[str, str, str], ...] | None:
    """(rule, size, the shared dynamic wrapper's time ÷ the per-size compile's) per case."""
    return tuple((s.name, size_label(s.n), format_cell(s.shared_median / s.sized_median))
                 for s in t.shared_dynamic) or None


def _shared_text(fact: tuple[tuple[str, str, str], ...]) -> str:
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
    from study.report.figures import LinePanel, line_panels
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
            series[label] = [(x.n, x.stats.median / x.n * 1e9, x.stats.q1 / x.n * 1e9,
                              x.stats.q3 / x.n * 1e9) for x in t.rules
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

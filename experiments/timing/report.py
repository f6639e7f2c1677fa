"""Timing in the report: the cost of each custom rule against its built-in (Q5), the harness's
checks (methodology); the net, compile times and the cases taken apart in the appendix."""
import re
from dataclasses import replace

import pandas as pd

from experiments.timing.records import size_label as _size
from experiments.timing.records import COMPILED
from experiments.timing.summary import AGAIN, OWN, THIS_OVER_AGAIN, Summary, decided
from study.compare.stats import Estimate
from study.runs.experiment import Finding, Rendered
from study.report import Table, answer, frame, label_order, macros, say, text
from study.report.figures import ratio_panels

PROSE = macros("experiments/timing/prose.j2")


COST_SIZE = 10 ** 6  # the size the cost table and answer 5 compare every rule at
KEPT = "kept for backward (B/element)"
BASELINE = "built-in compiled ÷ eager"  # the listing's column of its own: no ratio to a rule
TOO_FEW = "†"  # the caption says: too few rounds to decide


def _compiled(mode: str) -> bool:
    return mode == "compiled"  # the summary's execution names


def _cost_listing(s: Summary, runs: list[str]) -> pd.DataFrame:
    """Long: per run, framework, rule, mode and size the cost table shows (eager and compiled at
    COST_SIZE, compiled at the run's largest size), the ratio to the built-in and the bytes the
    rule keeps for backward."""
    rows = []
    for run in runs:
        mine = s.rules[s.rules["run"] == run]
        largest = max(mine["size"], default=None)
        kept = {(k["framework"], k["rule"]): k[KEPT]
                for _, k in s.kept[s.kept["run"] == run].iterrows()}
        rows += [{"run": run, "framework": r["framework"], "rule": r["rule"], "mode": r["mode"],
                  "size": r["size"], "÷ built-in": r["÷ built-in"],
                  BASELINE: r.get(BASELINE), KEPT: kept.get((r["framework"], r["rule"]))}
                 for _, r in mine.iterrows()
                 if r["size"] == COST_SIZE
                 or (_compiled(r["mode"]) and r["size"] == largest)]
    return frame(rows, ["run", "framework", "rule", "mode", "size", "÷ built-in", BASELINE, KEPT])


def _cost_column(run: str, mode: str, n: int) -> str:
    return f"{run} {mode}, {_size(n)}"


def _cell(ratio):
    """A ratio as the cost table shows it: marked where the run timed too few rounds to decide."""
    if ratio is None or decided(ratio):
        return ratio
    return f"{text(ratio)}{TOO_FEW}"


def _cost(listing: pd.DataFrame, runs: list[str], kept_by: str) -> pd.DataFrame:
    """The listing pivoted: rows framework and rule; per run, eager and compiled ÷ built-in at
    COST_SIZE and compiled at the run's largest size; the bytes each rule keeps in `kept_by`."""
    columns = ["framework", "rule"]
    for run in runs:
        largest = max(listing[listing["run"] == run]["size"], default=COST_SIZE)
        shown = (("eager", COST_SIZE), ("compiled", COST_SIZE), ("compiled", largest))
        columns += list(dict.fromkeys(_cost_column(run, m, n) for m, n in shown))
    rows: dict[tuple, dict] = {}
    for _, r in listing.iterrows():
        row = rows.setdefault((r["framework"], r["rule"]),
                              {"framework": r["framework"], "rule": r["rule"]})
        row[_cost_column(r["run"], r["mode"], r["size"])] = _cell(r["÷ built-in"])
        if r["run"] == kept_by:
            row[KEPT] = r[KEPT]
    return frame(list(rows.values()), columns + [KEPT])


def _compile_times(s: Summary) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The first call of each compiled rule: long (the listing) and one column per size."""
    compiled = s.rules[s.rules["mode"] == "compiled"] if len(s.rules) else s.rules
    listing = frame(compiled.to_dict("records"),
                    ["run", "framework", "mode", "rule", "size", "first call s"])
    sizes = sorted(set(listing["size"]))
    rows: dict[tuple, dict] = {}
    for _, r in listing.iterrows():
        key = (r["run"], r["framework"], r["mode"], r["rule"])
        rows.setdefault(key, dict(zip(("run", "framework", "mode", "rule"), key)))[
            f"first call s, {_size(r['size'])}"] = r["first call s"]
    ordered = sorted(rows.values(), key=lambda r: label_order(r["run"]))
    view = frame(ordered, ["run", "framework", "mode", "rule"]
                 + [f"first call s, {_size(n)}" for n in sizes])
    return view, listing


def _compile_caption(s: Summary, view: pd.DataFrame) -> str:
    """The caption, with the runs of the table's torch rows by the state of inductor's folder
    when their first calls compiled."""
    torch_runs = dict.fromkeys(view[view["framework"] == "torch"]["run"]) if len(view) else {}
    by_state = {state: [r for r in torch_runs if (s.compile_cache or {}).get(r) == state]
                for state in ("empty", "user", None)}
    return say(PROSE, "caption_compile", empty=by_state["empty"], user=by_state["user"],
               unrecorded=by_state[None], releases=s.releases, older=s.older)


def _one_value_dropped(f: pd.DataFrame) -> pd.DataFrame:
    """The nets without their workload column where every row has one (the caption says it:
    a step, forward and backward)."""
    one = "workload" in f.columns and f["workload"].nunique(dropna=False) == 1
    return f.drop(columns=["workload"]) if one else f


def _one_run(f: pd.DataFrame) -> pd.DataFrame:
    """The frame without its run column where one run gives every row (its caption names it)."""
    return f.drop(columns=["run"]) if len(f) and len(set(f["run"])) == 1 else f


def _harness(s: Summary) -> pd.DataFrame:
    """A row per check, each run's result, of and passed side by side, runs in label order."""
    out: dict[tuple, dict] = {}
    order = sorted(dict.fromkeys(s.harness["run"]), key=label_order) if len(s.harness) else []
    for _, h in sorted(s.harness.iterrows(), key=lambda ih: order.index(ih[1]["run"])):
        row = out.setdefault(h["check"], {"check": h["check"], "passes if": h["sense"],
                                          "threshold": h["threshold"]})
        row[f"{h['run']}: result"] = h["result"]
        row[f"{h['run']}: of"] = h["of"]
        row[f"{h['run']}: passed"] = h["passed"]
    return frame(list(out.values()), ["check", "passes if", "threshold"] + [
        f"{run}: {part}" for run in order for part in ("result", "of", "passed")])


def _quoted(ratio: Estimate) -> Estimate:
    """A ratio as the cost table prints it, marked †: the numbers of its text, so that the
    answer quotes the cell's digits (the table prints it as text, not as an Estimate)."""
    value, lo, hi = (float(n) for n in re.findall(r"-?\d+(?:\.\d+)?(?:e-?\d+)?", text(ratio)))
    return Estimate(value, lo, hi)


def _as_printed(c):
    """The cost with each undecided ratio as the table's † cell prints it."""
    def of(entries):
        return tuple((fw, rule, r if ok else _quoted(r), ok) for fw, rule, r, ok in entries)
    return replace(c, compiled=of(c.compiled), eager=of(c.eager))


def _same_causes(f, g) -> bool:
    """Whether another run's reproducer shows what the cited one shows."""
    return ((f.store_is_a_cause, f.signs_are_a_cause, f.vector_off_is_slower)
            == (g.store_is_a_cause, g.signs_are_a_cause, g.vector_off_is_slower))


def _probe_again(s: Summary):
    """(the rule cases' compiled ÷ eager, the reproducer's ÷ that) where the two measurements of
    the step's compiled ÷ eager disagree (the ratio's interval excludes 1), else None."""
    p = s.probes
    if not len(p):
        return None
    step = p[(p["run"] == s.probe_run) & (p["role"] == "step") & (p["way"] == COMPILED)
             & (p["signs"] == "random")]
    for _, r in step.iterrows():
        over = r[THIS_OVER_AGAIN]
        if over is not None and over.lo is not None and (over.lo > 1 or over.hi < 1):
            return r[AGAIN], over
    return None


def render(s: Summary) -> Rendered:
    standard = sorted((c.run for c in s.costs if c.scope == "standard"), key=label_order)
    kept_by = s.main if s.main in standard else (standard[0] if standard else None)
    compile_view, compile_listing = _compile_times(s)
    cost = _cost_listing(s, standard)
    # as text, not |fmt: a size said, not a number quoted from a table
    kept_at = {c.run: text(c.kept_at) for c in s.costs if c.kept_at}
    def runs_of(f) -> list[str]:
        return sorted(dict.fromkeys(f["run"]), key=label_order) if len(f) else []
    tables = [
        Table("cost", say(PROSE, "title_cost"),
              say(PROSE, "caption_cost", runs=standard, releases=s.releases, older=s.older,
                  kept_by=kept_by, kept_at=kept_at.get(kept_by), withdrawn=s.withdrawn),
              _cost(cost, standard, kept_by) if standard else frame([]), listing=cost),
        Table("harness", say(PROSE, "title_harness"),
              say(PROSE, "caption_harness"), _harness(s), listing=s.harness),
        Table("nets", say(PROSE, "title_nets"),
              say(PROSE, "caption_nets", runs=[kept_by] if kept_by else [],
                  releases=s.releases, older=s.older),
              _one_value_dropped(s.nets[s.nets["run"] == kept_by].drop(
                  columns=["run", "first call s"])), listing=s.nets),
        Table("compile", say(PROSE, "title_compile"), _compile_caption(s, compile_view),
              compile_view, listing=compile_listing),
        Table("parts", say(PROSE, "title_parts"),
              say(PROSE, "caption_parts", runs=runs_of(s.parts), releases=s.releases,
                  older=s.older),
              _one_run(s.parts), listing=s.parts),
        Table("probes", say(PROSE, "title_probes"),
              say(PROSE, "caption_probes", runs=runs_of(s.probes), releases=s.releases,
                  older=s.older),
              _one_run(s.probes), listing=s.probes),
        *(Table(name, say(PROSE, f"title_{name}"), "", rows) for name, rows in (
            ("rules", s.rules), ("kept", s.kept), ("fresh", s.fresh), ("copies", s.copies),
            ("ways", s.ways), ("cross", s.cross), ("torch_vs_jax", s.torch_vs_jax),
            ("bandwidth", s.bandwidth)))]
    answers, figures = [], {}
    parts = next(t for t in tables if t.id == "parts")
    costs = [_as_printed(c) for c in [c for c in s.costs if c.run in standard] or s.costs]
    main = next((c for c in costs if c.run == s.main), costs[0] if costs else None)
    if main:
        others = [c for c in costs if c.device != main.device]
        current = [max((c for c in others if c.device == d), key=lambda c: c.utc)
                   for d in dict.fromkeys(c.device for c in others)]  # each device's newest
        answers.append(answer(PROSE, "cost", ("cost",), c=main, others=current,
                              skipped=[c for c in others if c not in current],
                              kept_at=kept_at.get(main.run), releases=s.releases, own=OWN))
        if any(c.again or c.wrapper for c in [main] + current):  # under the table that shows it
            parts.notes.append(say(PROSE, "finding_parts", costs=[main] + current))
        shown = [main] + current[:1]  # the runs answer 5 quotes, side by side
        runs = [c.run for c in shown]
        rows = s.rules[s.rules["run"].isin(runs)].to_dict("records")
        title = say(PROSE, "figure", shown=shown)
        figures["figures/timing.png"] = (
            lambda: ratio_panels(rows, runs, title), say(PROSE, "alt", runs=runs))
    found = [Finding(say(PROSE, "finding_probe", f=s.probe, run=s.probe_run, older=s.older,
                         also=[(r, f) for r, f in s.probe_also if _same_causes(f, s.probe)],
                         again=_probe_again(s)), "probes")] if s.probe else []
    return Rendered(tables, found, figures, answers)

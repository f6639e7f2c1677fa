"""Timing in the report: the cost of each custom rule against its built-in (Q5), the harness's
checks (methodology); the net, compile times and the cases taken apart in the appendix."""
import re
from dataclasses import replace

import pandas as pd

from experiments.timing.records import size_label as _size
from experiments.timing.records import COMPILED
from experiments.timing.summary import AGAIN, THIS_OVER_AGAIN, Summary, decided, met
from experiments.timing.targets import OWN
from study.compare.stats import Estimate
from study.runs.experiment import Finding, Rendered
from study.report import Table, answer, frame, label_order, macros, say, text
from study.report.format import zeros_kept
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


ONE_CALL_FIGURES = 2  # a single call, no interval: the caption says so


def _one_call(seconds):
    """A first call's time as Table 22 prints it: one measurement, so 2 significant figures (the
    listing keeps every digit)."""
    return None if seconds is None or pd.isna(seconds) else zeros_kept(float(seconds),
                                                                       ONE_CALL_FIGURES)


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
            f"first call s, {_size(r['size'])}"] = _one_call(r["first call s"])
    # one order of rules in every run: each framework's rules as the first run in label order
    # lists them, a rule it lacks where a later run first lists it
    by_label = sorted(rows.values(), key=lambda r: label_order(r["run"]))
    rules = list(dict.fromkeys((r["framework"], r["rule"]) for r in by_label))
    frameworks = list(dict.fromkeys(fw for fw, _ in rules))
    ordered = sorted(by_label, key=lambda r: (label_order(r["run"]),
                                              frameworks.index(r["framework"]),
                                              rules.index((r["framework"], r["rule"]))))
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
               unrecorded=by_state[None], releases=s.releases, older=s.older,
               figures=ONE_CALL_FIGURES)


def _one_value_dropped(f: pd.DataFrame) -> pd.DataFrame:
    """The nets without their workload column where every row has one (the caption says it:
    a step, forward and backward)."""
    one = "workload" in f.columns and f["workload"].nunique(dropna=False) == 1
    return f.drop(columns=["workload"]) if one else f


def _said_size(n: int) -> str:
    """A size as every table and answer says one: 10^6, or 2^20 for a power of two."""
    label = _size(n)
    if label == str(n) and n > 1 and n & (n - 1) == 0:
        return f"2^{n.bit_length() - 1}"
    return label


def _sized(f: pd.DataFrame) -> pd.DataFrame:
    """The frame with its sizes said (10^6), not printed as integers (1000000); the listing
    keeps the integers."""
    if "size" not in f.columns:
        return f
    return f.assign(size=[_said_size(int(n)) for n in f["size"]])


def _shapes(nets: pd.DataFrame, run: str | None) -> dict:
    """Each net of the run's table by its shape in words (the caption says what 'mid' is)."""
    if "shape" not in nets.columns:
        return {}
    mine = nets[nets["run"] == run]
    return {n: s for n, s in zip(mine["net"], mine["shape"]) if s}


def _one_run(f: pd.DataFrame) -> pd.DataFrame:
    """The frame without its run column where one run gives every row (its caption names it)."""
    return f.drop(columns=["run"]) if len(f) and len(set(f["run"])) == 1 else f


_NUMBER = re.compile(r"-?\d+(?:\.\d+)?(?:e-?\d+)?")


def _decisive(h) -> object:
    """A check's result as Table 20 prints it, with the digits its verdict needs: a value judged
    against a threshold to 4 significant figures, zeros kept ('1.200' against 1.15); an
    interval as every table prints one, and where those digits would put a bound on the other
    side of the threshold (or on it) than the unrounded bound, to as many more decimals as read
    the verdict right from the printed numbers."""
    value, threshold, sense = h["result"], h["threshold"], h["sense"]
    if not isinstance(value, Estimate) or not isinstance(threshold, (int, float)) or not sense:
        return value
    ends = (value.value,) if value.lo is None else (value.value, value.lo, value.hi)
    if not all(1e-3 <= abs(v) < 1e4 for v in ends):  # beyond plain decimals: as every table
        return value
    shown = f"{value.value:#.4g}".rstrip(".") if value.lo is None else text(value)
    decimals = len(shown.split(" ")[0].partition(".")[2])
    while decimals < 8:
        printed = Estimate(*(float(n) for n in _NUMBER.findall(shown)[:3]))
        if met(printed, threshold, sense) == h["passed"]:
            return shown
        decimals += 1
        shown = f"{value.value:.{decimals}f}" + (
            "" if value.lo is None else f" [{value.lo:.{decimals}f}, {value.hi:.{decimals}f}]")
    return shown


def _machines(s: Summary, runs: list[str]) -> list[tuple[str, str]]:
    """(run, its GPU's or CPU's model) of the cost table's runs, in label order."""
    return [(c.run, c.machine) for c in sorted(s.costs, key=lambda c: label_order(c.run))
            if c.run in runs]


def _harness(s: Summary) -> pd.DataFrame:
    """A row per check and threshold (a run's plan states its own: a run whose threshold
    differs is judged on a row of its own), each run's result, of and passed side by side,
    runs in label order."""
    out: dict[tuple, dict] = {}
    order = sorted(dict.fromkeys(s.harness["run"]), key=label_order) if len(s.harness) else []
    for _, h in sorted(s.harness.iterrows(), key=lambda ih: order.index(ih[1]["run"])):
        threshold = None if pd.isna(h["threshold"]) else h["threshold"]
        row = out.setdefault((h["check"], threshold), {"check": h["check"],
                                                       "passes if": h["sense"],
                                                       "threshold": threshold})
        row[f"{h['run']}: result"] = _decisive(h)
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


def _probe_again(s: Summary, run: str | None = None):
    """(the rule cases' compiled ÷ eager, the reproducer's ÷ that) where the two measurements of
    the step's compiled ÷ eager disagree (the ratio's interval excludes 1), else None: in `run`,
    by default the run the finding cites."""
    p = s.probes
    if not len(p):
        return None
    step = p[(p["run"] == (run or s.probe_run)) & (p["role"] == "step") & (p["way"] == COMPILED)
             & (p["signs"] == "random")]
    for _, r in step.iterrows():
        over = r[THIS_OVER_AGAIN]
        if over is not None and over.lo is not None and (over.lo > 1 or over.hi < 1):
            return r[AGAIN], over
    return None


def _backing(s: Summary) -> tuple:
    """The probe finding's other measurement where the two disagree (else None), and the other
    runs that back the finding: those whose reproducer shows the same causes and whose two
    measurements of the step agree, or disagree, as the cited run's do."""
    again = _probe_again(s)
    also = [(r, f) for r, f in s.probe_also if _same_causes(f, s.probe)
            and (_probe_again(s, r) is None) == (again is None)]
    return again, also


def render(s: Summary) -> Rendered:
    standard = sorted((c.run for c in s.costs if c.scope == "standard"), key=label_order)
    kept_by = s.main if s.main in standard else (standard[0] if standard else None)
    compile_view, compile_listing = _compile_times(s)
    cost = _cost_listing(s, standard)
    # as text, not |fmt: a size said, not a number quoted from a table
    kept_at = {c.run: _said_size(c.kept_at) for c in s.costs if c.kept_at}
    def runs_of(f) -> list[str]:
        return sorted(dict.fromkeys(f["run"]), key=label_order) if len(f) else []
    tables = [
        Table("cost", say(PROSE, "title_cost"),
              say(PROSE, "caption_cost", runs=standard, releases=s.releases, older=s.older,
                  kept_by=kept_by, kept_at=kept_at.get(kept_by), withdrawn=s.withdrawn,
                  machines=_machines(s, standard)),
              _cost(cost, standard, kept_by) if standard else frame([]), listing=cost),
        Table("harness", say(PROSE, "title_harness"),
              say(PROSE, "caption_harness"), _harness(s), listing=s.harness),
        Table("nets", say(PROSE, "title_nets"),
              say(PROSE, "caption_nets", runs=[kept_by] if kept_by else [],
                  releases=s.releases, older=s.older, shapes=_shapes(s.nets, kept_by)),
              _one_value_dropped(s.nets[s.nets["run"] == kept_by].drop(
                  columns=["run", "first call s"]).drop(columns=["shape"], errors="ignore")),
              listing=s.nets),
        Table("compile", say(PROSE, "title_compile"), _compile_caption(s, compile_view),
              compile_view, listing=compile_listing),
        Table("parts", say(PROSE, "title_parts"),
              say(PROSE, "caption_parts", runs=runs_of(s.parts), releases=s.releases,
                  older=s.older),
              _sized(_one_run(s.parts)), listing=s.parts),
        Table("probes", say(PROSE, "title_probes"),
              say(PROSE, "caption_probes", runs=runs_of(s.probes), releases=s.releases,
                  older=s.older),
              _sized(_one_run(s.probes)), listing=s.probes),
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
    again, also = _backing(s)
    found = [Finding(say(PROSE, "finding_probe", f=s.probe, run=s.probe_run, older=s.older,
                         also=also, again=again), "probes")] if s.probe else []
    return Rendered(tables, found, figures, answers)

"""The atlas summarised: tidy frames of the cells the report lists, the look-alike pairs at their
kinks, what compiling and releases change, placement-dependent cells, subnormal flushing and the
custom rules; and the facts the answer states. Pure functions of loaded runs.

The atlas's cells are typed when read (study.compare.cells); a frame holds a cell's number, its
error line, or the Placed cell where its value depends on where the element sits, until the
formatter prints it. Every frame has a `run` column of legend labels.
"""
from dataclasses import dataclass, replace
from itertools import chain

import numpy as np
import pandas as pd

from experiments.zero_point.atlas import SPECIAL as SPECIAL_INPUTS
from experiments.zero_point.atlas import (OpAtlas, RunAtlas, cell_rows, cell_values,
                                          equal_unless_placed, flushes, forward_disagrees,
                                          frame_value, kink_labels, read,
                                          same_after_rounding, subnormal_label)
from experiments.zero_point.compiled import (changed_by_compiling, compiled_changes,
                                             look_alike_pairs, natural_pairs)
from experiments.zero_point.facts import Facts, conformance_facts, facts
from experiments.zero_point.history import (CELL, Release, history, history_cells,
                                            history_marks, release_runs, segments)
from experiments.zero_point.ties import listing_rows, port_changes, table_rows, tie_run
from study.compare.cells import Placed, Value
from study.conformance import LISTING_COLUMNS, conformance_rows, rule_breakers
from study.report import frame, label_order, main_run, older_code, releases, span
from study.report.runs import release_span


@dataclass
class Summary:
    # run, framework, op, dtype, execution, mode, input, value, error, where: one row per value
    # a cell takes (where: the places a placement-dependent value occurs at), of the cells the
    # report lists: every float32 cell, every cell of the main run, every eager placed cell
    cells: pd.DataFrame
    # run, torch op, JAX op, kink, torch value, torch d/dx, JAX value, JAX d/dx, same, changes in
    kinks: pd.DataFrame
    # run, execution, torch op, JAX op, verdict, input, why, torch d/dx, JAX d/dx: one row per
    # input where a pair differs or depends on placement; one row with no input where it agrees
    pairs: pd.DataFrame
    compiled: pd.DataFrame  # run, framework, op, dtype, mode, input, eager, compiled, shares
    # the same cells, long: run, framework, op, dtype, mode, input, shares, execution (eager or
    # compiled), then value, error, where per value
    compiled_cells: pd.DataFrame
    # run, torch op, JAX op, kink, input, framework, mode (value or reverse), value, error, where
    kink_cells: pd.DataFrame
    # the look-alike pairs whose d/dx differs only 1 ulp beside a kink or only at NaN or ±inf,
    # eager, in the main run: torch op, JAX op, at (the input), values and d/dx as in kinks
    away: pd.DataFrame
    # every cell that differs between releases (zero_point.history): framework, op, dtype,
    # input, mode, execution, release, run, cell, first_release; one row per cell and release
    history: pd.DataFrame
    history_by_cell: pd.DataFrame  # the cells, one row each: by release ((first, last, value))
    history_cells: pd.DataFrame  # the same, long: value, error, where per value
    history_marks: list[dict]  # the figure's: history.history_marks
    history_runs: list[Release]  # the run that stands for each release in the history
    # every built-in at every kink in every release with kink records (study.conformance)
    conformance: pd.DataFrame
    breakers: pd.DataFrame  # the built-ins that break the documented rule: rule_breakers
    conformance_runs: list[Release]  # the run that stands for each release in the listing
    placement: pd.DataFrame  # run, framework, op, dtype, mode, input, where
    subnormals: pd.DataFrame  # run, framework, execution, dtype, s > 0, s × 1, m × 0.5, flushes
    custom: pd.DataFrame  # run, framework, rule, declared c, reverse at ±0, forward at +0, ...
    # run, from, op, inputs, equivalent: the other framework's ops equal to it on every input,
    # or with subnormals aside; one row per equivalent (none: one row, equivalent empty)
    porting: pd.DataFrame
    gradcheck: pd.DataFrame  # run, framework, rule, c, x, analytic, finite difference, passed
    # the built-ins of several inputs at the tie of every input each sees, float32, eager, in
    # the run `ties_run`: torch op, JAX op, tie, each one's gradient, rule gives, torch, JAX
    ties: pd.DataFrame
    # every gradient at every tie of every run that measured them (zero_point.ties.listing_rows)
    ties_listing: pd.DataFrame
    ties_run: str | None
    facts: Facts | None
    runs: list[str]
    releases: dict[str, tuple[str, str]]  # label -> (torch, jax)
    older: list[str] = ()  # the runs that are older code (study.report.older_code)


def _main(atlases: list[RunAtlas]) -> RunAtlas | None:
    """The main run's atlas (study.report.main_run), of the runs with a float32 atlas."""
    measured = [a for a in atlases if a.atlas("float32")]
    run = main_run([a.run for a in measured])
    return next((a for a in measured if a.run is run), None)


# --- every run's frames -----------------------------------------------------------------------

CELL_COLUMNS = ["run", "framework", "op", "dtype", "execution", "mode", "input", "value",
                "error", "where"]


def _cells(atlases: list[RunAtlas], main: RunAtlas | None) -> tuple[pd.DataFrame, list[dict]]:
    """The cells the report lists, one row per value (CELL_COLUMNS): every float32 cell and
    every cell of the main run's label, and the other eager cells that depend on placement;
    and the placement rows, one per eager cell that depends on placement. One pass: a mode's
    head (run to mode) repeated, and its values, errors and wheres."""
    heads, counts, tails, placement = [], [], [], []
    for a in atlases:
        listed = main is not None and a.run.tag == main.run.tag
        for op, eager in [(op, True) for op in a.ops] + [(op, False) for op in a.compiled]:
            every = listed or op.dtype == "float32"  # else only placement, eagerly
            if not (every or op.compiler is None or eager):
                continue
            head = (a.run.tag, op.framework, op.name, op.dtype, op.compiler or "eager")
            for mode, cells in op.modes.items():
                kinds, tail = _mode_tail(op, mode, cells, every)
                if eager and Placed in kinds:
                    placement += [{"run": a.run.tag, "framework": op.framework, "op": op.name,
                                   "dtype": op.dtype, "mode": mode, "input": label,
                                   "where": c.where}
                                  for label, c in zip(op.inputs, cells) if isinstance(c, Placed)]
                if tail and tail[0]:
                    heads.append((*head, mode))
                    counts.append(len(tail[0]))
                    tails.append(tail)
    if not heads:  # no columns only where the atlas has no cell at all, as the report reads it
        return frame([]) if not any(op.cells(m) for a in atlases for op in a.ops + a.compiled
                                    for m in op.modes if m not in op.withdrawn) \
            else pd.DataFrame(columns=CELL_COLUMNS, dtype=object), placement
    repeated = np.empty((len(heads), 6), dtype=object)
    repeated[:] = heads
    repeated = np.repeat(repeated, counts, axis=0)
    return pd.DataFrame({**{name: repeated[:, i] for i, name in enumerate(CELL_COLUMNS[:6])},
                         **{name: list(chain.from_iterable(tail[i] for tail in tails))
                            for i, name in enumerate(CELL_COLUMNS[6:])}}, dtype=object), placement


def _mode_tail(op: OpAtlas, mode: str, cells, every: bool) -> tuple:
    """The types of a mode's cells, and its listed rows' input, value, error and where columns
    (None where none is listed): every cell (`every`), else an eager op's placed ones."""
    kinds = set(map(type, cells)) if isinstance(cells, list) else {type(cells)}
    if mode in op.withdrawn or not (every or op.compiler is None):
        return kinds, None
    if not isinstance(cells, list):
        cells = op.cells(mode)
        kinds = set(map(type, cells))
    if every and kinds == {Value}:
        return kinds, (op.inputs, [c.value for c in cells], *[[None] * len(cells)] * 2)
    if every or Placed in kinds:
        return kinds, tuple(map(list, zip(*[
            (label, *values) for label, c in zip(op.inputs, cells)
            if every or isinstance(c, Placed)
            for values in cell_values(c)]))) or ([],)
    return kinds, None


def _compiled(a: RunAtlas) -> list[dict]:
    return [{"run": a.run.tag, "framework": x.framework, "op": x.op, "dtype": x.dtype,
             "mode": x.mode, "input": x.input, "eager": frame_value(x.eager),
             "compiled": frame_value(x.compiled), "shares": x.shares} for x in a.changes]


def _compiled_cells(a: RunAtlas) -> list[dict]:
    return [{"run": a.run.tag, "framework": x.framework, "op": x.op, "dtype": x.dtype,
             "mode": x.mode, "input": x.input, "shares": x.shares, "execution": execution, **r}
            for x in a.changes for execution, c in (("eager", x.eager), ("compiled", x.compiled))
            for r in cell_rows(c)]


def _pairs(a: RunAtlas) -> list[dict]:
    rows = []
    for compiled in (False, True):
        ops = {(t.name, j.name): (t, j) for t, j in look_alike_pairs(a, compiled)}
        for p in natural_pairs(a, compiled):
            t, j = ops[(p.torch_op, p.jax_op)]
            key = {"run": a.run.tag, "execution": "compiled" if compiled else "eager",
                   "torch op": p.torch_op, "JAX op": p.jax_op, "verdict": p.status}
            rows += [{**key, "input": label, "why": why,
                      "torch d/dx": frame_value(t.cell("reverse", label)),
                      "JAX d/dx": frame_value(j.cell("reverse", label))}
                     for why, labels in (("differs", p.disagree),
                                         ("depends on placement", p.depends))
                     for label in labels] or [{**key, "input": None}]
    return rows


def _custom(a: RunAtlas) -> list[dict]:
    checks = {(c["rule"], c["point"]): c for c in a.checks}
    rows = []
    for op in (op for op in a.atlas("float32") if op.kind == "custom"):
        at0 = checks.get((op.rule, 0.0), {})
        rows.append({"run": a.run.tag, "framework": op.framework, "rule": op.name,
                     "declared c": op.convention,
                     "reverse at +0": frame_value(op.cell("reverse", "+0.0")),
                     "reverse at −0": frame_value(op.cell("reverse", "-0.0")),
                     "forward at +0": frame_value(op.cell("forward", "+0.0"))
                     if "forward" in op.modes else None,
                     "forward ≠ reverse away from kinks": bool(forward_disagrees(op)),
                     "finite difference at 0": at0.get("finite_difference"),
                     "numeric check passes at 0": at0.get("passed")})
    return rows


def _subnormals(a: RunAtlas) -> list[dict]:
    return [{"run": a.run.tag, "framework": x["framework"], "execution": x["exec"],
             "dtype": x["dtype"], "s > 0": x["subnormal_is_positive"],
             "s × 1": x["subnormal_times_one"], "m × 0.5": x["half_min_normal"],
             "flushes": flushes(x)} for x in a.arithmetic]


def _gradcheck(a: RunAtlas) -> list[dict]:
    return [{"run": a.run.tag, "framework": c["framework"], "rule": c["name"],
             "c": c["convention"], "x": c["point"], "analytic": c["analytic"],
             "finite difference": c["finite_difference"], "passed": c["passed"]}
            for c in a.checks]


# --- the main run's frames, against the others --------------------------------------------------

def _changes_in(others: dict, main: RunAtlas, side: OpAtlas, mode: str, label: str,
                by_label: dict | None = None, older=()) -> str | None:
    """Where the main run's float32 cell changes: a dtype, compiled, placement, another run
    (`others`: the other runs' float32 eager ops by rule, as (run tag, op))."""
    base = side.cell(mode, label)
    marks = ["by placement"] if isinstance(base, Placed) else []
    marks += ["in " + op.dtype for op in main.atlas()
              if op.rule == side.rule and op.dtype != "float32"
              and label in op.inputs and mode not in op.withdrawn
              and not same_after_rounding(op.cell(mode, label), base, op.dtype)]
    marks += ["compiled"] if changed_by_compiling(main, side.rule, "float32", mode, label) else []
    runs = {tag for tag, op in others.get(side.rule, ())
            if label in op.inputs and mode not in op.withdrawn
            and equal_unless_placed(op.cell(mode, label), base) is not True}
    if runs:
        at = release_span(sorted(runs, key=label_order), by_label or {})
        mine = [part for part in at.split(", ") if part.startswith(side.framework)]
        old = [r for r in runs if r in older]
        note = ("older code" if len(old) == len(runs) else
                f"{span(old)} older code" if old else "")
        words = "; ".join(w for w in (mine[0] if mine else "", note) if w)
        marks.append(f"in {span(runs)}" + (f" ({words})" if words else ""))
    return ", ".join(marks) or None


def _at_kinks(main: RunAtlas) -> list[tuple[OpAtlas, OpAtlas, float, str]]:
    """(torch op, JAX look-alike, kink, its probe label) wherever both were probed there."""
    return [(t, j, k, kink_labels(k)[1]) for t, j in look_alike_pairs(main) for k in t.kinks
            if kink_labels(k)[1] in j.inputs]


def _kinks(atlases, main: RunAtlas) -> list[dict]:
    others: dict[str, list] = {}
    by_label = releases([a.run for a in atlases])
    older = older_code([a.run for a in atlases])
    for a in (a for a in atlases if a is not main):
        for op in a.atlas("float32"):
            others.setdefault(op.rule, []).append((a.run.tag, op))
    rows = []
    for t, j, k, label in _at_kinks(main):
        changes = [f"{side.framework} {'d/dx' if m == 'reverse' else m}: {where}"
                   for side in (t, j) for m in ("value", "reverse")
                   if (where := _changes_in(others, main, side, m, label, by_label, older))]
        rows.append({"run": main.run.tag, "torch op": t.name, "JAX op": j.name, "kink": k,
                     "torch value": frame_value(t.cell("value", label)),
                     "torch d/dx": frame_value(t.cell("reverse", label)),
                     "JAX value": frame_value(j.cell("value", label)),
                     "JAX d/dx": frame_value(j.cell("reverse", label)),
                     "same d/dx": equal_unless_placed(t.cell("reverse", label),
                                                      j.cell("reverse", label)),
                     "changes in": "; ".join(changes) or None})
    return rows


def _labelled_nan(listing: pd.DataFrame) -> pd.DataFrame:
    """The ties listing with a tie at NaN labelled as the atlas labels the NaN input ('+nan'):
    'NaN' is one of the strings pandas reads back as a missing value."""
    if "at" in listing.columns:
        listing["at"] = ["+nan" if a == "NaN" else a for a in listing["at"]]
    return listing


def _away(main: RunAtlas, f: Facts) -> list[dict]:
    """The pairs whose d/dx differs only 1 ulp beside a kink or only at NaN or ±inf (eager):
    a row per such input, as the kinks table's rows, the input's label for the kink."""
    ops = {f"{t.name} vs {j.name}": (t, j) for t, j in look_alike_pairs(main)}
    inputs = list(f.differ_beside_kink) + [(p, tuple(lab for lab in ops[p][0].inputs
                                                     if lab in SPECIAL_INPUTS))
                                           for p in f.differ_special_only if p in ops]
    rows = []
    for pair, labels in inputs:
        t, j = ops[pair]
        rows += [{"torch op": t.name, "JAX op": j.name, "at": label,  # a NaN measured: NaN
                  "torch value": t.cell("value", label), "torch d/dx": t.cell("reverse", label),
                  "JAX value": j.cell("value", label), "JAX d/dx": j.cell("reverse", label),
                  "same d/dx": equal_unless_placed(t.cell("reverse", label),
                                                   j.cell("reverse", label))}
                 for label in labels if label in j.inputs]
    return [r for r in rows if r["same d/dx"] is False]


def _kink_cells(main: RunAtlas) -> list[dict]:
    return [{"run": main.run.tag, "torch op": t.name, "JAX op": j.name, "kink": k,
             "input": label, "framework": side.framework, "mode": mode, **r}
            for t, j, k, label in _at_kinks(main) for side in (t, j)
            for mode in ("value", "reverse") for r in cell_rows(side.cell(mode, label))]


def _porting(a: RunAtlas) -> list[dict]:
    """Per float32 op, the other framework's ops probed at the same inputs whose value and
    reverse gradient equal its own at every input, and with subnormals aside; a cell that
    depends on placement equals nothing."""
    def same(op, other, labels) -> bool:
        return all((mine is theirs and not isinstance(mine, Placed))  # equal is reflexive
                   or equal_unless_placed(mine, theirs) is True
                   for m in ("value", "reverse") for lab in labels
                   for mine, theirs in [(op.cell(m, lab), other.cell(m, lab))])
    ops = a.atlas("float32")
    rows = []
    for op in ops:
        others = [o for o in ops if o.framework != op.framework
                  and sorted(o.inputs) == sorted(op.inputs)]
        key = {"run": a.run.tag, "from": op.framework, "op": op.name}
        for inputs, labels in (("every input", op.inputs), ("subnormals aside", [
                lab for lab in op.inputs if not subnormal_label(lab)])):
            equivalents = [o.name for o in others if same(op, o, labels)]
            rows += [{**key, "inputs": inputs, "equivalent": name}
                     for name in equivalents or [None]]
    return rows


# --- cells that change between releases, and conformance at each kink ------------------------

def _history_by_cell(changed: pd.DataFrame) -> list[dict]:
    """One row per changed cell: the cell, and `by release`, the spans of consecutive releases
    (first, last, value) that give one outcome (history.segments), in version order."""
    names = ["framework", *CELL]
    by_cell: dict[tuple, tuple[list, list]] = {}
    for *key, c, release in zip(*(changed[n].tolist() for n in names), changed["cell"],
                                changed["release"].tolist()):
        cells, releases = by_cell.setdefault(tuple(key), ([], []))
        cells.append(c)
        releases.append(release)
    return [{**dict(zip(names, key)), "by release": tuple(
                (first, last, frame_value(c)) for first, last, c in segments(cells, releases))}
            for key, (cells, releases) in by_cell.items()]


def _conformance(releases: list[Release]) -> pd.DataFrame:
    return frame([row for r in releases for row in conformance_rows(
        r.framework, r.release, r.atlas.run.tag, r.atlas.kinks + r.atlas.tie_kinks)],
        LISTING_COLUMNS)


def summarise(runs) -> Summary:
    atlases = read(runs)
    for a in atlases:
        a.changes = compiled_changes(a)
    main = _main(atlases)
    kinks = _kinks(atlases, main) if main else []
    history_runs = release_runs(atlases, main) if main else []
    changed = history(history_runs)
    conformance_runs = release_runs(atlases, main, with_kinks=True) if main else []
    conformance = _conformance(conformance_runs)
    breakers = rule_breakers(conformance)

    def every_run(rows_of) -> pd.DataFrame:
        return frame([row for a in atlases for row in rows_of(a)])
    cells, placement = _cells(atlases, main)
    shown = tie_run(atlases, main)
    ties = table_rows(shown) if shown else []
    found = replace(facts(atlases, main, kinks, changed),
                    **conformance_facts(breakers, conformance_runs),
                    ties_run=shown.run.tag if shown else None,
                    tie_pairs=sum(1 for r in ties if r["torch op"] and r["JAX op"]),
                    port_changes=tuple(port_changes(ties))) if main else None
    return Summary(
        cells=cells, kinks=frame(kinks), pairs=every_run(_pairs),
        compiled=every_run(_compiled), compiled_cells=every_run(_compiled_cells),
        kink_cells=frame(_kink_cells(main) if main else []),
        away=frame(_away(main, found) if main else []), history=changed,
        history_by_cell=frame(_history_by_cell(changed)),
        history_marks=history_marks(changed, history_runs),
        history_cells=frame(history_cells(changed)), history_runs=history_runs,
        conformance=conformance, breakers=frame(breakers),
        conformance_runs=conformance_runs, placement=frame(placement),
        subnormals=every_run(_subnormals), custom=every_run(_custom),
        porting=frame(_porting(main) if main else []), gradcheck=every_run(_gradcheck),
        ties=frame(ties), ties_listing=_labelled_nan(every_run(listing_rows)),
        ties_run=shown.run.tag if shown else None,
        facts=found, runs=[a.run.tag for a in atlases],
        releases=releases([a.run for a in atlases]), older=older_code([a.run for a in atlases]))

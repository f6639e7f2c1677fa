"""The atlas summarised: tidy frames of every cell, the look-alike pairs at their kinks, what
compiling and releases change, placement-dependent cells, subnormal flushing and the custom
rules; and the facts the answer states. Pure functions of loaded runs.

The atlas's cells are typed when read (study.compare.cells); a frame holds a cell's number, its
error line, or the Placed cell where its value depends on where the element sits, until the
formatter prints it. Every frame has a `run` column of legend labels.
"""
from dataclasses import dataclass, replace

import pandas as pd

from experiments.zero_point.atlas import (SPECIAL, OpAtlas, RunAtlas, cell_rows, cell_values,
                                          equal_unless_placed, flushes, forward_disagrees,
                                          frame_value, input_kind, kink_labels, read,
                                          same_after_rounding, subnormal_label)
from experiments.zero_point.compiled import (changed_by_compiling, compiled_changes,
                                             compiled_forward_wrong, look_alike_pairs,
                                             natural_pairs)
from experiments.zero_point.history import (CELL, Release, history, history_cells,
                                            history_marks, release_runs, segments)
from study.compare.cells import Placed, Value
from study.conformance import LISTING_COLUMNS, conformance_rows, rule_breakers
from study.report import frame, releases


@dataclass(frozen=True)
class Facts:
    """What the answer and findings state, from the main run (the first CPU run in the legend)."""
    run: str
    at_zero: tuple[tuple[float, tuple[str, ...]], ...]  # (d/dx at +0, ops of the conventions table)
    pairs: int  # look-alike pairs compared
    # the pairs whose d/dx differs, in four groups, each the rows of the table it names:
    differ_at_zero: tuple[str, ...]  # at x = +0: the conventions table's rows
    differ_at_kink: tuple[tuple[str, tuple[float, ...]], ...]  # (pair, kinks): the kinks table
    differ_beside_kink: tuple[tuple[str, tuple[str, ...]], ...]  # (pair, inputs) 1 ulp away only
    differ_special_only: tuple[str, ...]  # only at NaN or ±inf, eager
    differ_special_only_compiled: tuple[str, ...]  # the same, compiled, of the other pairs
    compiled_ops: tuple[tuple[str, tuple[str, ...]], ...]  # framework -> ops compiling changes
    # custom rules whose compiled forward mode at +0 ignores the rule: those whose own jvp gives
    # eager's value ((rule, eager, compiled)), and those whose eager forward mode raises
    compiled_forward_jvp: tuple[tuple[str, float, float], ...]
    compiled_forward: tuple[str, ...]
    forward_wrong: tuple[str, ...]  # custom rules whose forward mode disagrees with reverse
    # (framework, device, dtypes, runs, in every run that probed it, executions): where the
    # subnormal probe found flushing; and where a framework that flushes in every run of one
    # device flushes in no run of another
    flushed: tuple[tuple[str, str, tuple[str, ...], tuple[str, ...], bool, tuple[str, ...]], ...]
    kept: tuple[tuple[str, str, tuple[str, ...]], ...]  # (framework, device, runs): no flushing
    # look-alike ops whose float32 eager d/dx at a kink changed: (framework, op, kink,
    # ((first release, value), ...)), each value from the first release that gave it
    convention_changes: tuple[tuple[str, str, float, tuple[tuple[str, object], ...]], ...]
    finite_differences: tuple[float, ...]  # central differences at the kink, custom rules
    passing: tuple[float, ...]  # conventions a numeric check passes at the kink
    # (op, kink, declared, measured, agrees)
    documented: tuple[tuple[str, float, float, tuple, bool], ...]
    undocumented: int  # ops whose docstrings declare no derivative at a kink
    # (framework, its newest release with kink records, the ops breaking the documented rule
    # there), and (op, kink, the release that fixed it): the conformance table's rows
    breaking: tuple[tuple[str, str, tuple[str, ...]], ...] = ()
    fixed: tuple[tuple[str, float, str], ...] = ()


@dataclass
class Summary:
    # run, framework, op, dtype, execution, mode, input, value, error, where: one row per value
    # a cell takes (where: the places a placement-dependent value occurs at)
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
    facts: Facts | None
    runs: list[str]
    releases: dict[str, tuple[str, str]]  # label -> (torch, jax)


def _main(atlases: list[RunAtlas]) -> RunAtlas | None:
    order = lambda a: (a.run.provenance["device"] != "cpu", len(a.run.tag), a.run.tag)  # noqa: E731
    return min((a for a in atlases if a.atlas("float32")), key=order, default=None)


# --- every run's frames -----------------------------------------------------------------------

CELL_COLUMNS = ["run", "framework", "op", "dtype", "execution", "mode", "input", "value",
                "error", "where"]


def _cells(atlases: list[RunAtlas]) -> pd.DataFrame:
    """Every cell of every run, one row per value (CELL_COLUMNS): some 360,000 rows, built as
    tuples."""
    rows = []
    for a in atlases:
        for op in a.ops + a.compiled:
            head = (a.run.tag, op.framework, op.name, op.dtype, op.compiler or "eager")
            for mode in (m for m in op.modes if m not in op.withdrawn):
                rows += [(*head, mode, label, *values)
                         for label in op.inputs for values in cell_values(op.cell(mode, label))]
    return pd.DataFrame(rows, columns=CELL_COLUMNS, dtype=object) if rows else frame([])


def _placement(a: RunAtlas) -> list[dict]:
    return [{"run": a.run.tag, "framework": op.framework, "op": op.name, "dtype": op.dtype,
             "mode": mode, "input": label, "where": c.where}
            for op in a.atlas() for mode, cells in op.modes.items() if isinstance(cells, list)
            for label, c in zip(op.inputs, cells) if isinstance(c, Placed)]


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

def _changes_in(atlases, main: RunAtlas, side: OpAtlas, mode: str, label: str) -> str | None:
    """Where the main run's float32 cell changes: a dtype, compiled, placement, another run."""
    base = side.cell(mode, label)
    marks = ["placement"] if isinstance(base, Placed) else []
    marks += [op.dtype for op in main.atlas() if op.rule == side.rule and op.dtype != "float32"
              and label in op.inputs and mode not in op.withdrawn
              and not same_after_rounding(op.cell(mode, label), base, op.dtype)]
    marks += ["compiled"] if changed_by_compiling(main, side.rule, "float32", mode, label) else []
    marks += sorted({a.run.tag for a in atlases if a is not main for op in a.atlas("float32")
                     if op.rule == side.rule and label in op.inputs and mode not in op.withdrawn
                     and equal_unless_placed(op.cell(mode, label), base) is not True})
    return ", ".join(marks) or None


def _at_kinks(main: RunAtlas) -> list[tuple[OpAtlas, OpAtlas, float, str]]:
    """(torch op, JAX look-alike, kink, its probe label) wherever both were probed there."""
    return [(t, j, k, kink_labels(k)[1]) for t, j in look_alike_pairs(main) for k in t.kinks
            if kink_labels(k)[1] in j.inputs]


def _kinks(atlases, main: RunAtlas) -> list[dict]:
    rows = []
    for t, j, k, label in _at_kinks(main):
        changes = [f"{side.framework} {'d/dx' if m == 'reverse' else m}: {where}"
                   for side in (t, j) for m in ("value", "reverse")
                   if (where := _changes_in(atlases, main, side, m, label))]
        rows.append({"run": main.run.tag, "torch op": t.name, "JAX op": j.name, "kink": k,
                     "torch value": frame_value(t.cell("value", label)),
                     "torch d/dx": frame_value(t.cell("reverse", label)),
                     "JAX value": frame_value(j.cell("value", label)),
                     "JAX d/dx": frame_value(j.cell("reverse", label)),
                     "same d/dx": equal_unless_placed(t.cell("reverse", label),
                                                      j.cell("reverse", label)),
                     "changes in": "; ".join(changes) or None})
    return rows


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
        return all(equal_unless_placed(op.cell(m, lab), other.cell(m, lab)) is True
                   for m in ("value", "reverse") for lab in labels)
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

def _convention_changes(atlases: list[RunAtlas], changed: pd.DataFrame) -> tuple:
    """Each look-alike op's float32 eager d/dx at its kinks, where it changed: the value from
    each release on (history.segments)."""
    ops = {op.name: op for a in atlases for op in a.atlas("float32") if op.look_alike}
    out = []
    for (fw, name, label), g in changed[(changed["mode"] == "reverse")
                                        & (changed["execution"] == "eager")
                                        & (changed["dtype"] == "float32")].groupby(
            ["framework", "op", "input"], sort=False):
        kinks = [k for k in ops[name].kinks if kink_labels(k)[1] == label] if name in ops else []
        if kinks:
            out.append((fw, name, kinks[0], tuple(
                (first, frame_value(c))
                for first, _, c in segments(list(g["cell"]), list(g["release"])))))
    return tuple(out)


def _history_by_cell(changed: pd.DataFrame) -> list[dict]:
    """One row per changed cell: the cell, and `by release`, the spans of consecutive releases
    (first, last, value) that give one outcome (history.segments), in version order."""
    return [{**dict(zip(["framework", *CELL], key)),
             "by release": tuple((first, last, frame_value(c)) for first, last, c in segments(
                 list(g["cell"]), list(g["release"])))}
            for key, g in changed.groupby(["framework", *CELL], sort=False)]


def _conformance(releases: list[Release]) -> pd.DataFrame:
    return frame([row for r in releases for row in conformance_rows(
        r.framework, r.release, r.atlas.run.tag, r.atlas.kinks)], LISTING_COLUMNS)


# --- what the answer and findings state ---------------------------------------------------------

def _documented(main: RunAtlas) -> tuple[tuple, int]:
    ops = [op for op in main.atlas("float32") if op.documented is not None]
    out = []
    for op in ops:
        for k, v in op.documented:
            labels = ["-0.0", "+0.0"] if k == 0 else [f"{k:g}"]
            got = [op.cell("reverse", lab) for lab in labels if lab in op.inputs]
            out.append((op.name, k, v, tuple(frame_value(g) for g in got),
                        all(equal_unless_placed(g, Value(v)) for g in got)))
    return tuple(out), len([op for op in ops if not op.documented])


def _differing_pairs(main: RunAtlas, kinks: list[dict]) -> tuple:
    """The pairs whose d/dx differs, grouped as the tables show them: at +0 (the conventions
    table's rows), at another kink (the kinks table's), and, of the rest, only 1 ulp beside a
    kink or only at NaN or ±inf (the pairs listing's)."""
    def pair(torch_op, jax_op):
        return f"{torch_op} vs {jax_op}"
    differs = [r for r in kinks if r["same d/dx"] is False]
    at_zero = tuple(dict.fromkeys(pair(r["torch op"], r["JAX op"]) for r in differs
                                  if r["kink"] == 0))
    at_kink: dict[str, list[float]] = {}
    for r in (r for r in differs if r["kink"] != 0):
        at_kink.setdefault(pair(r["torch op"], r["JAX op"]), []).append(r["kink"])
    rest = [p for p in natural_pairs(main) if p.disagree
            and pair(p.torch_op, p.jax_op) not in set(at_zero) | set(at_kink)]
    beside = tuple((pair(p.torch_op, p.jax_op), tuple(p.disagree)) for p in rest
                   if {input_kind(lab) for lab in p.disagree} == {"next to a kink"})
    special = tuple(pair(p.torch_op, p.jax_op) for p in rest
                    if all(lab in SPECIAL for lab in p.disagree))
    compiled = tuple(pair(p.torch_op, p.jax_op) for p in natural_pairs(main, compiled=True)
                     if p.disagree and all(lab in SPECIAL for lab in p.disagree)
                     and pair(p.torch_op, p.jax_op) not in special)
    return (at_zero, tuple((p, tuple(ks)) for p, ks in at_kink.items()), beside, special,
            compiled)


def _flushing(atlases) -> dict:
    """Where the subnormal probe found flushing, by framework and device: the dtypes, runs and
    executions, and whether every run that probed it there flushed; and where a framework that
    flushes in every run of one device flushes in no run of another."""
    found: dict[tuple, dict] = {}
    for a in atlases:
        for x in a.arithmetic:
            e = found.setdefault((x["framework"], a.run.provenance["device"]),
                                 {"dtypes": {}, "runs": {}, "probed": {}, "executions": {}})
            e["probed"][a.run.tag] = True
            if flushes(x):
                e["dtypes"][x["dtype"]] = e["runs"][a.run.tag] = e["executions"][x["exec"]] = True
    flushed = tuple((fw, dev, tuple(e["dtypes"]), tuple(e["runs"]), e["runs"] == e["probed"],
                     tuple(e["executions"])) for (fw, dev), e in found.items() if e["runs"])
    always = {fw for fw, _, _, _, every, _ in flushed if every}
    kept = tuple((fw, dev, tuple(e["probed"])) for (fw, dev), e in found.items()
                 if not e["runs"] and fw in always)
    return {"flushed": flushed, "kept": kept}


def _conformance_facts(breakers: list[dict], releases: list[Release]) -> dict:
    newest = {r.framework: r.release for r in releases}  # releases are in version order
    breaking = [(fw, release, tuple(dict.fromkeys(b["op"] for b in breakers
                                                   if b["framework"] == fw and not b["fixed_in"])))
                for fw, release in newest.items()]
    return {"breaking": tuple(b for b in breaking if b[2]),
            "fixed": tuple((b["op"], b["kink"], b["fixed_in"]) for b in breakers if b["fixed_in"])}


def _facts(atlases, main: RunAtlas, kinks: list[dict], changed: pd.DataFrame) -> Facts:
    at_zero: dict[float, list[str]] = {}
    for r in (r for r in kinks if r["kink"] == 0):
        for side in ("torch", "JAX"):
            if isinstance(r[f"{side} d/dx"], float):
                at_zero.setdefault(r[f"{side} d/dx"], []).append(r[f"{side} op"])
    changes = [x for x in main.changes if x.dtype == "float32"]
    at_kink_checks = [c for c in main.checks if c["point"] == 0.0]
    ignored = compiled_forward_wrong(main)
    return Facts(
        main.run.tag, tuple((v, tuple(dict.fromkeys(ops))) for v, ops in sorted(at_zero.items())),
        len(look_alike_pairs(main)), *_differing_pairs(main, kinks),
        tuple((fw, tuple(dict.fromkeys(x.op for x in changes if x.framework == fw)))
              for fw in ("torch", "jax") if any(c.framework == fw for c in main.compiled)),
        tuple((c.name, before.value, got.value) for c, before, got in ignored
              if isinstance(before, Value)),
        tuple(c.name for c, before, _ in ignored if not isinstance(before, Value)),
        tuple(op.name for op in main.atlas("float32") if forward_disagrees(op)),
        *_flushing(atlases).values(), _convention_changes(atlases, changed),
        tuple(sorted({round(c["finite_difference"], 9) for c in at_kink_checks})),
        tuple(sorted({c["convention"] for c in at_kink_checks if c["passed"] is True})),
        *_documented(main))


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
    return Summary(
        cells=_cells(atlases), kinks=frame(kinks), pairs=every_run(_pairs),
        compiled=every_run(_compiled), compiled_cells=every_run(_compiled_cells),
        kink_cells=frame(_kink_cells(main) if main else []), history=changed,
        history_by_cell=frame(_history_by_cell(changed)),
        history_marks=history_marks(changed, history_runs),
        history_cells=frame(history_cells(changed)), history_runs=history_runs,
        conformance=conformance, breakers=frame(breakers),
        conformance_runs=conformance_runs, placement=every_run(_placement),
        subnormals=every_run(_subnormals), custom=every_run(_custom),
        porting=frame(_porting(main) if main else []), gradcheck=every_run(_gradcheck),
        facts=replace(_facts(atlases, main, kinks, changed),
                      **_conformance_facts(breakers, conformance_runs)) if main else None,
        runs=[a.run.tag for a in atlases],
        releases=releases([a.run for a in atlases]))

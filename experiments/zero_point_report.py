"""The zero-point atlas's summary and rendering: pure functions of loaded runs.

summarise(runs) turns atlas and gradcheck records into typed data; render(summary) builds the
atlas, modes, placement, extended-dtype, porting, custom-convention, gradcheck, release and
look-alike tables, the findings and the heatmap from that data alone.
"""
import functools
from dataclasses import dataclass, field

import numpy as np

from study.cells import Cell, Error, Placed, Value
from study.conventions import numpy_dtype
from study.experiment import Finding, Rendered
from study.placement import (cell_values, depends_on_placement, describe_where, restrict,
                             same_value)
from study.results import Run
from study.runsets import identity, machine, merge_run_rows, newest, stated_for_runs
from study.tables import Table, collapse_rows, distinct_digits, format_cell, shorten

ATLAS_MODES = ("value", "reverse", "forward", "second")  # the atlas record's mode fields


@dataclass
class OpAtlas:
    """One op in one dtype: every mode's cell at every probe input."""
    rule: str
    name: str
    framework: str
    kind: str
    convention: float | None
    kinks: list[float]
    dtype: str
    inputs: list[str]
    modes: dict[str, object]  # mode -> [cell per input], or one error line for every input
    look_alike: str | None  # the other framework's op a porting user would take as this one
    withdrawn: tuple[str, ...] = ()  # modes an erratum withdrew: not results, never compared
    placements: tuple[str, ...] = ()  # where each input was measured (study.placement)
    compiler: str | None = None  # None: eager; else torch.compile(...) or jax.jit
    # (kink, derivative) its docstring declares; None: the run did not read docstrings
    documented: tuple[tuple[float, float], ...] | None = None

    def cell(self, mode: str, label: str):
        """A value, an error line, or a placement-dependent {"values", "where"}."""
        cells = self.modes[mode]
        return cells if isinstance(cells, str) else cells[self.inputs.index(label)]


@dataclass
class GradcheckPoint:
    framework: str
    rule: str
    name: str
    convention: float
    point: float
    analytic: float
    finite_difference: float
    passed: bool | str
    fd_eps: float


@dataclass
class Arithmetic:
    """Whether the framework on the device flushes subnormals (study.arithmetic)."""
    framework: str
    exec: str
    dtype: str
    subnormal_is_positive: bool  # False: subnormal inputs are read as 0
    subnormal_times_one: float
    half_min_normal: float  # 0: subnormal results are flushed to 0

    @property
    def flushes(self) -> bool:
        return not self.subnormal_is_positive or self.half_min_normal == 0


@dataclass
class RunAtlas:
    run: Run  # identity only
    ops: list[OpAtlas]
    checks: list[GradcheckPoint]
    fill_length: int | None
    arithmetic: list[Arithmetic]
    compiled: list[OpAtlas] = field(default_factory=list)  # the same ops, compiled

    def atlas(self, dtype: str | None = None) -> list[OpAtlas]:
        """The eager ops."""
        return [op for op in self.ops if dtype is None or op.dtype == dtype]

    @functools.cached_property
    def changes(self) -> list["CompiledChange"]:
        """Every cell compiling changes (compiled_changes), computed once per run."""
        return compiled_changes(self)


@dataclass
class ReleaseChange:
    framework: str
    op: str
    device: str
    dtype: str
    mode: str
    input: str
    by_release: list[tuple[str, object]]  # (release, cell)


@dataclass
class Summary:
    runs: list[RunAtlas]
    releases: dict[str, list[str]]  # framework -> releases measured
    release_changes: list[ReleaseChange]


def _op(rec: dict) -> OpAtlas:
    return OpAtlas(rec["rule"], rec["name"], rec["framework"], rec["kind"], rec["convention"],
                   rec["kinks"], rec["dtype"], rec["inputs"],
                   {m: rec[m] for m in rec.get("modes", ATLAS_MODES)}, rec["look_alike"],
                   tuple(rec.get("withdrawn_fields", ())), tuple(rec.get("placements", ())),
                   rec.get("compiler") if rec.get("execution") == "compiled" else None,
                   tuple(tuple(kv) for kv in rec["documented"]) if "documented" in rec else None)


def _check(rec: dict) -> GradcheckPoint:
    return GradcheckPoint(rec["framework"], rec["rule"], rec["name"], rec["convention"],
                          rec["point"], rec["analytic"], rec["finite_difference"], rec["passed"],
                          rec["fd_eps"])


def summarise(runs) -> Summary:
    atlases = []
    for run in runs:
        recs = run.ok_records()
        ops = [_op(r) for r in recs if r.get("part") == "atlas"]
        atlases.append(RunAtlas(
            identity(run), [op for op in ops if op.compiler is None],
            [_check(r) for r in recs if r.get("part") == "gradcheck"],
            next((r["fill_length"] for r in recs if "fill_length" in r), None),
            [Arithmetic(r["framework"], r["exec"], r["dtype"], r["subnormal_is_positive"],
                        r["subnormal_times_one"], r["half_min_normal"])
             for r in recs if r.get("part") == "arithmetic"],
            [op for op in ops if op.compiler is not None]))
    releases, changes = _release_changes(atlases)
    return Summary(atlases, releases, changes)


# --- cells --------------------------------------------------------------------------------

def atlas_cell(c) -> Cell:
    """A stored atlas cell, typed: in the atlas a string is always a mode's error line, and a
    {"values", "where"} dict a placement-dependent cell (study.placement.collapse)."""
    if depends_on_placement(c):
        return Placed(tuple(atlas_cell(v) for v in c["values"]), describe_where(c))
    return Error(c) if isinstance(c, str) else Value(c)


def shown(c) -> str:
    """A cell as the atlas shows it: the value, or its values marked as placement-dependent."""
    cell = atlas_cell(c)
    return cell.values_text() if isinstance(cell, Placed) else cell.text()


def agree(a, b) -> bool | None:
    """True/False for two plain cells; None when either depends on placement."""
    if depends_on_placement(a) or depends_on_placement(b):
        return None
    return same_value(a, b)


def kink_labels(k: float) -> list[str]:
    """The probe labels at a kink and 1 ulp either side (at 0: the smallest subnormals)."""
    return (["-min_subnormal", "+0.0", "+min_subnormal"] if k == 0
            else [f"{k:g}-ulp", f"{k:g}", f"{k:g}+ulp"])


_ZERO_PROBES = ("-min_subnormal", "-0.0", "+0.0", "+min_subnormal", "min_normal")


def label_order(label: str) -> tuple:
    """Probe labels in the order of their values: kinks with their ulps, the probes at 0 in
    place, NaN and the infinities last."""
    if label in SPECIAL:
        return (2, SPECIAL.index(label), 0.0)
    if label in _ZERO_PROBES:
        return (0, 0.0, _ZERO_PROBES.index(label) - 2)
    value = label[:-4] if label.endswith(("-ulp", "+ulp")) else label
    step = -1 if label.endswith("-ulp") else 1 if label.endswith("+ulp") else 0
    return (0, float(value), step)


def _subnormal(label: str) -> bool:
    return label.endswith("min_subnormal")


SPECIAL = ("nan", "+inf", "-inf")  # inputs that are not kinks: a disagreement there is NaN/inf handling


def forward_disagrees(op) -> list[str]:
    """Inputs away from every kink (and from ±0, ±inf, NaN and subnormals) where forward mode
    and reverse mode give different derivatives: an elementwise op's two modes must agree
    there, so forward mode is silently wrong."""
    near = {lab for k in op.kinks for lab in kink_labels(k)} | {"-0.0", "+0.0", *SPECIAL}
    if any(isinstance(op.modes.get(m, ""), str) for m in ("forward", "reverse")):
        return []
    return [lab for lab in op.inputs if lab not in near and not lab.endswith("min_subnormal")
            and agree(op.cell("forward", lab), op.cell("reverse", lab)) is False]


def forward_text(op, label: str, width: int = 60) -> str:
    """The forward-mode cell, marked where forward mode is silently wrong."""
    wrong = forward_disagrees(op)
    text = shorten(shown(op.cell("forward", label)), width)
    return text + (f" ✗ silently wrong (≠ reverse at {wrong[0]})" if wrong else "")


# --- release changes (across runs of one host, device and scope) ---------------------------

def _changed(cells: list) -> bool:
    return any(shown(c) != shown(cells[0]) or describe_where(c) != describe_where(cells[0])
               for c in cells)


def _changes_between(by_version: dict[str, dict], framework: str, device: str) -> list:
    out = []
    names = sorted(by_version)
    for key in sorted(set.intersection(*(set(v) for v in by_version.values()))):
        ops = [by_version[v][key] for v in names]
        for mode in (m for m in ops[0].modes if not any(m in op.withdrawn for op in ops)):
            shown = f"{mode}, compiled" if key[2] else mode
            for label in (lab for lab in ops[0].inputs if lab in ops[-1].inputs):
                cells = [op.cell(mode, label) for op in ops]
                if _changed(cells):
                    out.append(ReleaseChange(framework, ops[0].name, device, key[1], shown, label,
                                             list(zip(names, cells))))
    return out


def _release_changes(atlases: list[RunAtlas]) -> tuple[dict[str, list[str]], list]:
    """Cells that differ between releases of the framework an op belongs to, among runs of
    the same machine, device and scope: eager cells, and compiled cells against the same
    compiler's."""
    versions: dict[str, set] = {"torch": set(), "jax": set()}
    groups: dict[tuple, list[RunAtlas]] = {}
    for a in atlases:
        groups.setdefault((machine(a.run), a.run.provenance["device"], a.run.scope), []).append(a)
    changes = []
    for (_, device, _), group in groups.items():
        for fw in versions:
            by_version: dict[str, dict] = {}
            for a in group:
                version = a.run.provenance[fw]
                versions[fw].add(version)
                for op in a.atlas() + a.compiled:
                    if op.framework == fw:
                        by_version.setdefault(version, {}).setdefault(
                            (op.rule, op.dtype, op.compiler or ""), op)
            if len(by_version) > 1:
                changes += _changes_between(by_version, fw, device)
    return {k: sorted(v) for k, v in versions.items()}, changes


# --- rows ---------------------------------------------------------------------------------

ATLAS_TAIL = ("-0.0", "min_normal", "nan", "+inf", "-inf")  # columns after the kink's three


def atlas_rows(a: RunAtlas, framework: str) -> list[list]:
    return [[op.name, k] + [shown(op.cell("reverse", lab)) for lab in kink_labels(k)
                            + list(ATLAS_TAIL)]
            for op in a.atlas("float32") if op.framework == framework for k in op.kinks]


def mode_rows(a: RunAtlas) -> list[list]:
    return [[op.framework, op.name, k] + [forward_text(op, kink_labels(k)[1]) if m == "forward"
                                         else shorten(shown(op.cell(m, kink_labels(k)[1])), 60)
                                         for m in op.modes]
            for op in a.atlas("float32") for k in op.kinks]


def placement_cells(a: RunAtlas) -> list[tuple[OpAtlas, str, str, dict]]:
    """Every eager (op, mode, input, cell) whose value depends on the placement."""
    return [(op, mode, label, c) for op in a.atlas() for mode, cells in op.modes.items()
            if not isinstance(cells, str)
            for label, c in zip(op.inputs, cells) if depends_on_placement(c)]


@dataclass(frozen=True)
class CompiledChange:
    """A cell where compiled code differs from the same op run eagerly at the same placements."""
    framework: str
    rule: str
    op: str
    kind: str  # builtin | custom
    dtype: str
    mode: str
    input: str  # a probe label, or "every input" where one side raises for all
    eager: object
    compiled: object
    shares: str  # what the differing cells have in common


EVERY_INPUT = "every input (shown: +0.0)"  # a mode that raises on one side for every input


def changed_by_compiling(a: RunAtlas, rule: str, dtype: str, mode: str, label: str) -> bool:
    return any((x.rule, x.dtype, x.mode) == (rule, dtype, mode) and x.input in (label, EVERY_INPUT)
               for x in a.changes)


def input_kind(label: str) -> str:
    if label in SPECIAL:
        return "NaN or ±inf"
    if _subnormal(label):
        return "a subnormal input"
    if label.endswith("ulp") or label == "min_normal":
        return "next to a kink"
    return "at a kink or ±0"


def _value_set(cell) -> set:
    return {"nan" if isinstance(v, float) and v != v else v + 0.0 if isinstance(v, float) else v
            for v in cell_values(cell)}


def _differs(eager, compiled) -> bool:
    return (_value_set(eager) != _value_set(compiled)
            or describe_where(eager) != describe_where(compiled))


def _shares(label: str, eager, compiled) -> str:
    where = ("; eager depends on position" if depends_on_placement(eager)
             and not depends_on_placement(compiled) else "; compiled depends on position"
             if depends_on_placement(compiled) and not depends_on_placement(eager) else "")
    return input_kind(label) + where


def compiled_changes(a: RunAtlas) -> list[CompiledChange]:
    """Every cell where the compiled op differs from the eager one, the eager cell read at the
    compiled op's placements (study.placement.restrict)."""
    eager = {(op.rule, op.dtype): op for op in a.atlas()}
    out = []
    for c in a.compiled:
        e = eager.get((c.rule, c.dtype))
        if e is None:
            continue
        for mode in (m for m in c.modes if m in e.modes and m not in c.withdrawn + e.withdrawn):
            ec, cc = e.modes[mode], c.modes[mode]
            if isinstance(ec, str) or isinstance(cc, str):
                if ec != cc:
                    shares = ("eager raises, compiled returns values" if not isinstance(cc, str)
                              else "compiled raises" if not isinstance(ec, str)
                              else "both raise, differently")
                    at_zero = lambda cells, op: (cells if isinstance(cells, str)  # noqa: E731
                                                 else op.cell(mode, "+0.0"))
                    out.append(CompiledChange(c.framework, c.rule, c.name, c.kind, c.dtype, mode,
                                              EVERY_INPUT, at_zero(ec, e), at_zero(cc, c),
                                              shares))
                continue
            for label in (lab for lab in c.inputs if lab in e.inputs):
                before = restrict(e.cell(mode, label), c.placements)
                after = c.cell(mode, label)
                if _differs(before, after):
                    out.append(CompiledChange(c.framework, c.rule, c.name, c.kind, c.dtype, mode,
                                              label, before, after, _shares(label, before, after)))
    return out


def _pair_texts(a, b) -> list[str]:
    """Two cells as text that never print equal when they differ (errors shortened)."""
    if all(isinstance(c, float) for c in (a, b)):
        digits = distinct_digits([a, b])
        return [format_cell(a, digits), format_cell(b, digits)]
    return [shorten(c, 60) if isinstance(c, str) else shown(c) for c in (a, b)]


def compiled_detail(a: RunAtlas) -> list[list]:
    """Every compiled cell that differs from eager, grouped by what the cells share."""
    rows = [[x.framework, x.op, x.dtype, x.mode, x.input] + _pair_texts(x.eager, x.compiled)
            + [x.shares] for x in a.changes]
    return sorted(rows, key=lambda r: (r[7], r[0]))


def compiled_groups(a: RunAtlas) -> list[list]:
    """Per framework and what the cells share: how many cells, in which ops, dtypes, modes."""
    groups: dict[tuple, list[CompiledChange]] = {}
    for x in a.changes:
        groups.setdefault((x.framework, x.shares.split(";")[0]), []).append(x)
    rows = []
    for (fw, shares), xs in sorted(groups.items(), key=lambda g: (g[0][0], -len(g[1]))):
        ops = list(dict.fromkeys(x.op for x in xs))
        rows.append([fw, shares, len(xs), ", ".join(ops[:4]) + (f" and {len(ops) - 4} more"
                                                              if len(ops) > 4 else ""),
                     ", ".join(dict.fromkeys(x.dtype for x in xs)),
                     ", ".join(dict.fromkeys(x.mode for x in xs))])
    return rows


def compiled_rows(a: RunAtlas) -> list[list]:
    """compiled_detail with the rows that differ only in dtype or mode merged."""
    return collapse_rows(compiled_detail(a), (2, 3))


def _compiled_fact(a: RunAtlas):
    """Per framework: (framework, cells, ops, ((shares, cells, ops), ...)) in float32."""
    changes = [x for x in a.changes if x.dtype == "float32"]
    if not a.compiled:
        return None
    out = []
    for fw in ("torch", "jax"):
        mine = [x for x in changes if x.framework == fw]
        if not any(c.framework == fw for c in a.compiled):
            continue
        groups = {}
        for x in mine:
            groups.setdefault(x.shares.split(";")[0], []).append(x)
        out.append((fw, len(mine), len({x.op for x in mine}), tuple(
            (shares, len(xs), tuple(dict.fromkeys(x.op for x in xs)))
            for shares, xs in sorted(groups.items(), key=lambda g: -len(g[1])))))
    return tuple(out)


def _compiled_text(fact) -> str:
    parts = []
    for fw, cells, ops, groups in fact:
        if not cells:
            parts.append(f"nothing in {fw}")
            continue
        parts.append(f"{cells} {fw} cells in {ops} op{'s' * (ops != 1)} ("
                     + ", ".join(f"{shares}: {n}" for shares, n, _ in groups) + ")")
    return "Compiling changes float32 cells against eager at the same placements: " + "; ".join(parts)


def _compiled_short(fact) -> str:
    return "; ".join(f"{fw}: {cells} cells in {ops} ops" for fw, cells, ops, _ in fact)


def compiled_forward_wrong(a: RunAtlas) -> list[tuple[OpAtlas, object, object]]:
    """Custom rules whose compiled forward mode at +0 is a number other than the rule's
    declared convention and other than eager's (which may raise): (compiled op, eager forward
    at +0, compiled forward at +0)."""
    eager = {(op.rule, op.dtype): op for op in a.atlas("float32")}
    out = []
    for c in (c for c in a.compiled if c.kind == "custom" and c.dtype == "float32"
              and "forward" in c.modes and (c.rule, c.dtype) in eager):
        got = c.cell("forward", "+0.0")
        before = eager[(c.rule, c.dtype)].cell("forward", "+0.0")
        if isinstance(got, float) and not same_value(got, c.convention) \
                and not (isinstance(before, float) and same_value(before, got)):
            out.append((c, before, got))
    return out


def _compiled_forward_fact(a: RunAtlas):
    wrong = compiled_forward_wrong(a)
    if not wrong:
        return None
    raised = [c.name for c, e, _ in wrong if isinstance(e, str)]
    declared = [c.name for c, e, _ in wrong if isinstance(e, float)
                and same_value(e, c.convention)]
    return (len(wrong), tuple(dict.fromkeys(shown(g) for _, _, g in wrong)), len(raised),
            tuple(c.name for c, _, _ in wrong), wrong[0][0].compiler, len(declared))


def _compiled_forward_text(fact) -> str:
    n, tangents, raised, names, compiler, declared = fact
    return (f"Under {compiler}, forward mode ignores the custom rule: {n} custom rules "
            f"({', '.join(names[:2])}{', …' if n > 2 else ''}) give tangent "
            f"{' or '.join(tangents)} at x = +0 instead of their declared convention, with no "
            f"error or warning, where eagerly {raised} of them raise and {declared} give their "
            f"convention")


def _compiled_forward_short(fact) -> str:
    return f"{fact[0]} rules, tangent {' or '.join(fact[1])} at +0"


def placement_rows(a: RunAtlas) -> list[list]:
    return [[op.framework, op.name, op.dtype, mode, label, describe_where(c)]
            for op, mode, label, c in placement_cells(a)]


def _same_after_rounding(a, b, dtype: str) -> bool:
    """Equal once both are rounded to the coarser of dtype and float32: a constant like 0.01
    is stored differently in each dtype, which is not a convention."""
    if depends_on_placement(a) or depends_on_placement(b) or isinstance(a, str) \
            or isinstance(b, str):
        return shown(a) == shown(b)  # the same set of values: where they occur is placement
    coarse = numpy_dtype(dtype if dtype in ("float16", "bfloat16") else "float32")
    return same_value(float(np.asarray(a).astype(coarse)), float(np.asarray(b).astype(coarse)))


def extended_rows(a: RunAtlas) -> list[list]:
    """Where a dtype other than float32 gives another value than float32 (same run)."""
    base = {op.rule: op for op in a.atlas("float32")}
    rows = []
    for op in (op for op in a.atlas() if op.dtype != "float32" and op.rule in base):
        ref = base[op.rule]
        for mode in ("reverse", "forward", "second"):
            mine, theirs = op.modes[mode], ref.modes[mode]
            if isinstance(mine, str) or isinstance(theirs, str):
                if mine != theirs:
                    rows.append([op.framework, op.name, op.dtype, mode, "every input",
                                 mine if isinstance(mine, str) else "values",
                                 theirs if isinstance(theirs, str) else "values"])
                continue
            rows += [[op.framework, op.name, op.dtype, mode, label, shown(got), shown(want)]
                     for label, got, want in zip(op.inputs, mine, [ref.cell(mode, lab)
                                                                  for lab in op.inputs])
                     if not _same_after_rounding(got, want, op.dtype)]
    return rows


def _signature(op: OpAtlas, labels) -> tuple | None:
    """op's value and reverse gradient on these labels, as plain values (NaN as 'nan', -0 as
    0, as same_value compares them); None where any depends on placement."""
    out = []
    for m in ("value", "reverse"):
        for lab in labels:
            c = op.cell(m, lab)
            if depends_on_placement(c):
                return None
            out.append("nan" if isinstance(c, float) and c != c else c + 0.0
                       if isinstance(c, float) else c)
    return tuple(out)


def _matches(op: OpAtlas, others: list[tuple[OpAtlas, tuple | None]], labels) -> list[str]:
    """Ops whose value and reverse gradient equal op's, as plain values, on every label
    (others with their signatures on these labels)."""
    mine = _signature(op, labels)
    return [] if mine is None else [o.name for o, theirs in others if theirs == mine]


def _equivalents(op: OpAtlas, targets: list[OpAtlas], labels, signed: dict) -> str:
    """The targets probed at the same inputs whose value and reverse gradient equal op's on
    these labels: built-ins, else a custom rule of ours."""
    key = tuple(sorted(op.inputs)) + tuple(labels)
    if key not in signed:  # each target's signature once per label set
        signed[key] = [(t, _signature(t, labels)) for t in targets
                       if sorted(t.inputs) == sorted(op.inputs)]
    builtin = _matches(op, [(t, x) for t, x in signed[key] if t.kind == "builtin"], labels)
    custom = _matches(op, [(t, x) for t, x in signed[key] if t.kind == "custom"], labels)
    return ("; ".join(builtin) if builtin else "none: use a custom rule, " + custom[0]
            if custom else "none (no registry op matches)")


def porting_rows(a: RunAtlas, src: str, dst: str) -> list[list]:
    """Per src op: its dst equivalents on every input, subnormals aside, and with both sides
    compiled; the inputs where its own value depends on placement. Only ops probed at the
    same inputs (the same kinks) can match."""
    f32 = a.atlas("float32")
    compiled = {op.rule: op for op in a.compiled if op.dtype == "float32"}
    targets = [op for op in f32 if op.framework == dst]
    compiled_targets = [op for op in compiled.values() if op.framework == dst]
    rows, signed, signed_compiled = [], {}, {}
    for op in (op for op in f32 if op.framework == src):
        every = list(op.inputs)
        depends = [lab for lab in every for m in ("value", "reverse")
                   if depends_on_placement(op.cell(m, lab))]
        cols = [_equivalents(op, targets, labels, signed)
                for labels in (every, [lab for lab in every if not _subnormal(lab)])]
        mine = compiled.get(op.rule)
        cols.append(_equivalents(mine, compiled_targets, every, signed_compiled)
                    if mine and not any(isinstance(mine.modes[m], str) for m in ("value", "reverse"))
                    else None)
        rows.append([op.name] + cols + [", ".join(dict.fromkeys(depends)) or None])
    return rows


def custom_rows(a: RunAtlas) -> list[list]:
    return [[op.framework, op.name, op.dtype, op.convention, shown(op.cell("reverse", "+0.0")),
             shown(op.cell("reverse", "-0.0")), forward_text(op, "+0.0"),
             agree(op.cell("reverse", "+0.0"), op.convention)]
            for op in a.atlas() if op.kind == "custom"]


def custom_rows_by_dtype(a: RunAtlas) -> list[list]:
    """custom_rows with the dtypes that give the same row listed in one."""
    return collapse_rows(custom_rows(a), (2,))


def gradcheck_rows(a: RunAtlas) -> list[list]:
    f64 = {op.rule: op for op in a.atlas("float64")}
    rows = []
    for c in a.checks:
        at = shown(f64[c.rule].cell("reverse", "+0.0")) if c.rule in f64 and c.point == 0 else None
        rows.append([c.framework, c.name, c.convention, c.point, c.analytic, at,
                     c.finite_difference, c.passed])
    return rows


def kink_check(a: RunAtlas) -> tuple[tuple[float, ...], tuple[float, ...], float] | None:
    """At x = 0: the distinct finite differences, the conventions whose check passed, and ε."""
    at_kink = [c for c in a.checks if c.point == 0.0]
    if not at_kink:
        return None
    return (tuple(sorted({round(c.finite_difference, 9) for c in at_kink})),
            tuple(sorted({c.convention for c in at_kink if c.passed is True})), at_kink[0].fd_eps)


@dataclass
class PairVerdict:
    torch_op: str
    jax_op: str
    disagree: list[str]  # inputs where the plain values differ
    depends: list[str]  # inputs where either side depends on placement
    first: tuple[str, str, str] | None  # (input, torch cell, JAX cell) of the first difference

    @property
    def status(self) -> str:
        return ("disagree" if self.disagree else "depends on placement" if self.depends
                else "agree")


def look_alike_pairs(a: RunAtlas, compiled: bool = False) -> list[tuple[OpAtlas, OpAtlas]]:
    """(torch op, its look-alike JAX op) in float32, where the run measured both (compiled:
    both compiled)."""
    ops = [op for op in (a.compiled if compiled else a.atlas()) if op.dtype == "float32"]
    f32 = {op.rule: op for op in ops}
    return [(t, f32[t.look_alike]) for t in ops
            if t.framework == "torch" and t.look_alike in f32]


def natural_pairs(a: RunAtlas, compiled: bool = False) -> list[PairVerdict]:
    """Each torch op against its look-alike JAX op, reverse gradient in float32, subnormals
    aside; both eager, or both compiled."""
    out = []
    for t, j in look_alike_pairs(a, compiled):
        labels = [lab for lab in t.inputs if not _subnormal(lab)]
        verdicts = [(lab, agree(t.cell("reverse", lab), j.cell("reverse", lab))) for lab in labels]
        diffs = [lab for lab, ok in verdicts if ok is False]
        first = ((diffs[0], shown(t.cell("reverse", diffs[0])), shown(j.cell("reverse", diffs[0])))
                 if diffs else None)
        out.append(PairVerdict(t.name, j.name, diffs, [lab for lab, ok in verdicts if ok is None],
                               first))
    return out


def _first(p: PairVerdict | None) -> str | None:
    return f"at {p.first[0]}: {p.first[1]} vs {p.first[2]}" if p and p.first else None


def natural_pair_rows(a: RunAtlas) -> list[list]:
    compiled = {(p.torch_op, p.jax_op): p for p in natural_pairs(a, compiled=True)}
    rows = []
    for p in natural_pairs(a):
        c = compiled.get((p.torch_op, p.jax_op))
        rows.append([p.torch_op, p.jax_op, p.status, len(p.disagree), ", ".join(p.depends) or None,
                     _first(p), c.status if c else None, _first(c)])
    return rows


def pairs_changed_by_compiling(a: RunAtlas) -> list[tuple[PairVerdict, PairVerdict]]:
    """(eager verdict, compiled verdict) of each look-alike pair whose verdict or whose
    inputs in disagreement change when both sides are compiled."""
    compiled = {(p.torch_op, p.jax_op): p for p in natural_pairs(a, compiled=True)}
    return [(p, compiled[(p.torch_op, p.jax_op)]) for p in natural_pairs(a)
            if (p.torch_op, p.jax_op) in compiled
            and (p.status, p.disagree) != (compiled[(p.torch_op, p.jax_op)].status,
                                           compiled[(p.torch_op, p.jax_op)].disagree)]


# --- findings -----------------------------------------------------------------------------

def _pairs_fact(a: RunAtlas):
    pairs = natural_pairs(a)
    if not pairs:
        return None
    at_kink = [p for p in pairs if any(lab not in SPECIAL for lab in p.disagree)]
    special = [p for p in pairs if p.disagree and p not in at_kink]
    return (len(pairs), len(at_kink),
            tuple(dict.fromkeys(next(lab for lab in p.disagree if lab not in SPECIAL)
                                for p in at_kink)), len(special),
            tuple(f"{p.torch_op} vs {p.jax_op}" for p in pairs
                  if p.status == "depends on placement"))


def _pairs_text(fact) -> str:
    n, at_kink, inputs, special, depends = fact
    text = (f"{at_kink} of {n} look-alike torch/JAX pairs disagree at a kink, 1 ulp from one or "
            f"at ±0 (first at {', '.join(inputs) or 'none'}), {special} more only at NaN or ±inf")
    if not depends:
        return text
    return text + (f", and {depends[0]} depends on placement" if len(depends) == 1 else
                   f", and {len(depends)} depend on placement ({depends[0]}, …)")


def _pairs_short(fact) -> str:
    n, at_kink, inputs, special, depends = fact
    return (f"{at_kink} of {n} disagree at a kink, {special} only at NaN or ±inf, "
            f"{len(depends)} depend on placement")


def _placement_fact(a: RunAtlas):
    """{op: inputs} whose value depends on where the element sits."""
    ops: dict[str, list[str]] = {}
    for op, _, label, _ in placement_cells(a):
        ops.setdefault(op.name, [])
        if label not in ops[op.name]:
            ops[op.name].append(label)
    return tuple((op, tuple(inputs)) for op, inputs in ops.items()) or None


def _placement_text(fact) -> str:
    shown_ = ", ".join(f"{op} (at {', '.join(inputs)})" for op, inputs in fact[:4])
    return (f"Where an element sits changes the value of {len(fact)} ops: {shown_}"
            + (f", … (all {len(fact)} in the table)" if len(fact) > 4 else ""))


def _placement_short(fact) -> str:
    names = [op for op, _ in fact]
    return f"{len(fact)} ops, {', '.join(names[:3])}{', …' if len(names) > 3 else ''}"


def _pattern(change: ReleaseChange) -> str:
    """'1 in torch 2.11.0+cu130 and 2.13.0+cpu, 0 in 2.14.1+cu130'."""
    by_value: dict[str, list[str]] = {}
    for version, cell in change.by_release:
        by_value.setdefault(shown(cell), []).append(version)
    return ", ".join(f"{value} in {change.framework} {' and '.join(versions)}"
                     for value, versions in by_value.items())


def _release_finding(summary: Summary) -> Finding | None:
    changes = summary.release_changes
    if not changes:
        return None
    parts, said = [], set()
    for fw in dict.fromkeys(c.framework for c in changes):
        for compiled in (False, True):
            mine = [c for c in changes if c.framework == fw
                    and c.mode.endswith(", compiled") == compiled]
            if not mine:
                continue
            patterns: dict[str, int] = {}
            for c in mine:
                patterns[_pattern(c)] = patterns.get(_pattern(c), 0) + 1
            common = max(patterns, key=patterns.get)
            ops = list(dict.fromkeys(c.op for c in mine))
            pattern = "the same" if common in said else common
            said.add(common)
            parts.append(f"{len(mine)} {fw} cells changed {'compiled' if compiled else 'eagerly'}"
                         f" in {len(ops)} ops ({ops[0]}{', …' if len(ops) > 1 else ''};"
                         f" {patterns[common]} of them: {pattern})")
    return Finding(f"Between the releases measured, {'; '.join(parts)}.", "releases")


def _kink_text(fact) -> str:
    fds, passing, eps = fact
    return (f"A central finite difference at the kink (ε = {eps:g}) gives "
            f"{', '.join(f'{v:g}' for v in fds)} for every custom rule, so gradcheck and "
            f"check_grads pass only c in {{{', '.join(f'{c:g}' for c in passing)}}}: a numeric "
            f"check cannot validate a convention")


def _kink_short(fact) -> str:
    fds, passing, _ = fact
    return f"{', '.join(f'{v:g}' for v in fds)}, passing c in {{{', '.join(f'{c:g}' for c in passing)}}}"


def findings(summary: Summary) -> list[Finding]:
    runs = [a.run for a in summary.runs]
    out = []
    for table, fact_of, full, short in (
            ("natural_pairs", _pairs_fact, _pairs_text, _pairs_short),
            ("placement", _placement_fact, _placement_text, _placement_short),
            ("compiled", _compiled_fact, _compiled_text, _compiled_short),
            ("compiled", _compiled_forward_fact, _compiled_forward_text,
             _compiled_forward_short),
            ("gradcheck", kink_check, _kink_text, _kink_short),
            ("subnormals", _arithmetic_fact, _arithmetic_text, _arithmetic_short)):
        text = stated_for_runs([(a.run, fact_of(a)) for a in summary.runs], runs, full, short)
        if text:
            out.append(Finding(text + ".", table))
    release = _release_finding(summary)
    wrong = stated_for_runs([(a.run, _forward_fact(a)) for a in summary.runs], runs,
                            _forward_text, _forward_short)
    return (out[:3] + ([release] if release else []) + out[3:]
            + ([Finding(wrong + ".", "custom_conventions")] if wrong else []))


def _forward_fact(a: RunAtlas):
    """(op names, an input, forward value, reverse value): forward mode disagrees with reverse
    mode away from every kink."""
    wrong = [(op, where[0]) for op in a.atlas("float32") if (where := forward_disagrees(op))]
    if not wrong:
        return None
    op, at = wrong[0]
    return (tuple(o.name for o, _ in wrong), at, shown(op.cell("forward", at)),
            shown(op.cell("reverse", at)))


def _forward_text(fact) -> str:
    names, at, fwd, rev = fact
    return (f"Forward mode is silently wrong, with no error or warning, for {len(names)} custom "
            f"rules ({', '.join(names[:2])}{', …' if len(names) > 2 else ''}): tangent {fwd} where "
            f"reverse mode gives {rev}, e.g. at {at}")


def _forward_short(fact) -> str:
    return f"{len(fact[0])} rules"


# --- tables -------------------------------------------------------------------------------

def _where(summary: Summary) -> str:
    fill = next((a.fill_length for a in summary.runs if a.fill_length), None)
    return (f"Placements (study.placement): packed (all inputs in one 1-D tensor), 0-d, "
            f"1-element, fill (a 1-D tensor of {fill} copies, every position), strided (a "
            f"stride-2 view; torch only), 2-D rows (an n × {fill} batch); which of them each run "
            f"measured is recorded per op. A value that differs between placements shows as "
            f"'a or b (placement)' and is listed, with where each occurs, in the placement table.")


def _kink_note(summary: Summary) -> list[str]:
    fact = next((kink_check(a) for a in summary.runs if kink_check(a)), None)
    if not fact:
        return []
    fds, passing, eps = fact
    return [f"At the kink the central difference (f(ε) − f(−ε)) / 2ε with ε = {eps:g} came "
            f"out as {', '.join(f'{v:g}' for v in fds)} for every custom rule whatever its "
            f"convention, so the numeric checks passed only rules with c in "
            f"{{{', '.join(f'{c:g}' for c in passing)}}}: a finite difference measures the "
            f"mean of the two one-sided slopes, while every c in [0, 1] is a valid "
            f"subgradient, so no numeric check can validate (or reject) a convention."]


def _release_table(summary: Summary) -> Table:
    rows = [[c.framework, c.op, c.device, c.dtype, c.mode, c.input, "; ".join(
        f"{c.framework} {v}: {shown(cell)}" + (f" [{describe_where(cell, 80)}]"
                                              if depends_on_placement(cell) else "")
        for v, cell in c.by_release)] for c in summary.release_changes]
    measured = "; ".join(f"{fw}: {', '.join(v)}" for fw, v in summary.releases.items())
    notes = ([f"Only one release of each framework has been measured ({measured}); run "
              f"`make matrix` to add others."]
             if all(len(v) < 2 for v in summary.releases.values())
             else [] if rows else [f"No cell differs between the releases measured ({measured})."])
    return Table("releases", "Conventions that changed between releases",
                 f"Every cell (any dtype, mode, input and placement) that differs between the "
                 f"measured releases of the framework the op belongs to, among runs of one machine "
                 f"(host and CPU), device and scope ({measured}): eager cells, and compiled cells "
                 f"(mode '…, compiled': torch.compile or jax.jit, as the atlas compiles) against "
                 f"the same compiler's in the other release; rows that differ only in dtype, mode "
                 f"or input are merged.",
                 ["framework", "op", "device", "dtypes", "modes", "inputs", "by release"],
                 collapse_rows(rows, (3, 4, 5)), notes, detail=(
                     ["framework", "op", "device", "dtype", "mode", "input", "by release"], rows))


def _atlas_tables(summary: Summary) -> list[Table]:
    where = _where(summary)
    cols = ["op", "kink k", "k − 1 ulp", "k", "k + 1 ulp"] + list(ATLAS_TAIL)
    t_extra, t_rows, t_notes = merge_run_rows(summary.runs, lambda a: atlas_rows(a, "torch"), 2)
    j_extra, j_rows, j_notes = merge_run_rows(summary.runs, lambda a: atlas_rows(a, "jax"), 2)
    m = merge_run_rows(summary.runs, mode_rows, 3)
    p = merge_run_rows(summary.runs, placement_rows, 5)
    e = merge_run_rows(summary.runs, lambda a: collapse_rows(extended_rows(a), (2, 3, 4)), 2)
    return [
        Table("atlas_torch", "Zero-point atlas, torch: reverse-mode gradient at each kink",
              "float32; d(sum f(x))/dx at each probe input. For kink 0, k ± 1 ulp are the "
              "smallest subnormals. " + where, t_extra + cols, t_rows, t_notes),
        Table("atlas_jax", "Zero-point atlas, JAX: reverse-mode gradient at each kink",
              "As the torch atlas, for JAX ops and custom rules.", j_extra + cols, j_rows,
              j_notes),
        Table("modes", "Every mode at exactly the kink",
              "float32. value: f(k); reverse: backward / jax.grad; forward: torch.func.jvp / "
              "jax.jvp with tangent 1; second: the derivative of the reverse-mode gradient. A mode "
              "that raises shows the first line of its error.",
              m[0] + ["framework", "op", "kink k", "value", "reverse", "forward", "second"],
              m[1], m[2]),
        Table("placement", "Cells that depend on where the element sits",
              "Every (op, dtype, mode, input) whose value differs between placements or positions, "
              "with each value and where it occurred (positions count from 0 within the fill "
              "tensor or the batch row). " + where,
              p[0] + ["framework", "op", "dtype", "mode", "input", "values and where"], p[1],
              p[2] or ([] if p[1] else ["No cell depends on placement in these runs."])),
        Table("extended", "Where other dtypes differ from float32",
              "Every gradient (reverse, forward, second) at every probe input in float16, "
              "bfloat16 and float64, listed where it differs from the same run's float32 value "
              "once both are rounded to the coarser dtype (so a slope of 0.01 stored in float16 "
              "is not a difference); rows that differ only in dtype, mode or input are merged. "
              "NaN equals NaN and −0 equals +0 here.",
              e[0] + ["framework", "op", "dtypes", "modes", "inputs", "value", "float32 value"],
              e[1], e[2]),
    ]


def _compiled_tables(summary: Summary) -> list[Table]:
    """What compiling changes: grouped, then every cell."""
    with_compiled = [a for a in summary.runs if a.compiled]
    c = merge_run_rows(with_compiled, compiled_rows, 5) if with_compiled else ([], [], [])
    cd = merge_run_rows(with_compiled, compiled_detail, 5) if with_compiled else ([], [], [])
    s_ = merge_run_rows(with_compiled, compiled_groups, 2) if with_compiled else ([], [], [])
    return [
        Table("compiled", "Does compilation change the convention? What compiling changes, grouped",
              "Each group of cells whose compiled value differs from eager at the same "
              "placements (torch.compile with inductor and fullgraph, or jax.jit; value and "
              "reverse mode from a compiled training step, forward mode from jvp inside the "
              "compiled function), by what the cells share: the kind of input, whether only one "
              "side depends on the element's position, or an error on one side. 'cells' counts "
              "(op, dtype, mode, input) cells, a mode that raises for every input counting once; "
              "the listing of every cell is the next table.",
              s_[0] + ["framework", "what the cells share", "cells", "ops", "dtypes", "modes"],
              s_[1], s_[2] or ([] if s_[1] or not with_compiled
                               else ["No cell changes under compilation."])),
        Table("compiled_cells", "Every cell that compiling changes, compiled against eager",
              "Every (op, dtype, mode, input) whose compiled cell differs from the eager one: "
              "torch.compile (inductor, fullgraph) or jax.jit, value and reverse mode from one "
              "compiled training step (forward, then backward), forward mode from jvp inside "
              "the compiled function. The eager cell is read at the compiled run's placements "
              "(" + ", ".join(sorted({f"{op.framework} {p}" for a in with_compiled
                                       for op in a.compiled for p in op.placements}))
              + "), so a difference is compilation's, not placement's. 'shares' groups the "
              "rows: the kind of input, and whether only one side depends on the element's "
              "position (a vector body against its scalar tail). A mode that raises for every "
              "input is one row; rows that differ only in dtype or mode are merged (the CSV lists each). "
              "Only runs that measured compiled code are compared"
              + (f" ({', '.join(a.run.tag or a.run.label for a in with_compiled)})"
                 if with_compiled else " (none here)") + ".",
              c[0] + ["framework", "op", "dtypes", "modes", "input", "eager", "compiled",
                      "shares"], c[1],
              c[2] or ([] if c[1] or not with_compiled
                       else ["No cell changes under compilation."]),
              detail=(cd[0] + ["framework", "op", "dtype", "mode", "input", "eager", "compiled",
                               "shares"], cd[1])),
    ]


def _porting_tables(summary: Summary) -> list[Table]:
    tj = merge_run_rows(summary.runs, lambda a: porting_rows(a, "torch", "jax"), 1)
    jt = merge_run_rows(summary.runs, lambda a: porting_rows(a, "jax", "torch"), 1)
    return [
        Table("porting_torch_to_jax", "Porting guide, torch → JAX",
              "For each torch op, the JAX ops whose forward value and reverse gradient equal it at "
              "every probe input as plain values (float32; NaN = NaN, −0 = +0); a cell that "
              "depends on placement matches nothing. The last column names the inputs where the "
              "op's own value depends on placement. Where no built-in matches, a custom rule of "
              "ours that does is named. Only ops probed at the same inputs can match: each op "
              "is probed at its own kinks and its look-alike's. 'both compiled' compares the "
              "torch.compile and jax.jit cells on every input (blank where the op's compiled "
              "value or gradient raises, or the run did not compile).",
              tj[0] + ["torch op", "JAX equivalent, every input", "JAX equivalent, subnormals aside",
                       "JAX equivalent, both compiled", "inputs that depend on placement"],
              tj[1], tj[2]),
        Table("porting_jax_to_torch", "Porting guide, JAX → torch",
              "The same comparison from each JAX op to the torch ops.",
              jt[0] + ["JAX op", "torch equivalent, every input",
                       "torch equivalent, subnormals aside", "torch equivalent, both compiled",
                       "inputs that depend on placement"],
              jt[1], jt[2]),
    ]


def _check_tables(summary: Summary) -> list[Table]:
    c = merge_run_rows(summary.runs, custom_rows_by_dtype, 2)
    cd = merge_run_rows(summary.runs, custom_rows, 3)
    g = merge_run_rows(summary.runs, gradcheck_rows, 4)
    n = merge_run_rows(summary.runs, natural_pair_rows, 2)
    return [
        Table("custom_conventions", "Custom rules: declared convention against measurement",
              "Each custom rule's declared c beside its measured reverse gradient at +0.0 and −0.0 "
              "and forward gradient at +0.0, over every placement, in every dtype.",
              c[0] + ["framework", "rule", "dtypes", "declared c", "reverse at +0",
                      "reverse at −0", "forward at +0", "reverse at +0 = c"], c[1], c[2],
              detail=(cd[0] + ["framework", "rule", "dtype", "declared c", "reverse at +0",
                               "reverse at −0", "forward at +0", "reverse at +0 = c"], cd[1])),
        Table("gradcheck", "Numeric gradient checks away from and at the kink",
              "torch.autograd.gradcheck and jax.test_util.check_grads (reverse) in float64 on the "
              "run's device, beside the analytic derivative of a 0-d input, the atlas's float64 "
              "reverse gradient at +0 over every placement, and the central difference.",
              g[0] + ["framework", "rule", "c", "x", "analytic (0-d)", "atlas at +0",
                      "finite difference", "check passes"], g[1], g[2] + _kink_note(summary)),
        _release_table(summary),
        Table("natural_pairs", "Look-alike torch/JAX pairs: agree, disagree or depend on placement",
              "Pairs a porting user would take as equivalent, as each run's records name them, "
              "compared on every probe input but the two subnormals (float32, reverse gradient). "
              "A pair whose only differences are placement-dependent cells 'depends on "
              "placement', never 'agrees'. 'first disagreement' is the first input where plain "
              "values differ, torch then JAX. The last two columns compare the pair with both "
              "ops compiled (torch.compile and jax.jit; blank where a run did not compile).",
              n[0] + ["torch op", "JAX op", "verdict", "inputs that disagree",
                      "inputs that depend on placement", "first disagreement",
                      "verdict, both compiled", "first disagreement, both compiled"],
              n[1], n[2]),
    ]


def arithmetic_rows(a: RunAtlas) -> list[list]:
    return [[x.framework, x.exec, x.dtype, x.subnormal_is_positive, x.subnormal_times_one,
             x.half_min_normal, x.flushes] for x in a.arithmetic]


def _arithmetic_table(summary: Summary) -> Table:
    rows = merge_run_rows(summary.runs, arithmetic_rows, 3)
    return Table(
        "subnormals", "Does the device flush subnormals? The arithmetic under the atlas",
        "Computed by each framework on the run's device: s > 0 for the dtype's smallest "
        "subnormal s (no: subnormal inputs are read as 0), s × 1, and m × 0.5 for its smallest "
        "normal m, whose exact result is subnormal (0: subnormal results are flushed). An op that "
        "reads ±s as 0 returns at ±min_subnormal its value and gradient at 0.",
        rows[0] + ["framework", "execution", "dtype", "s > 0", "s × 1", "m × 0.5", "flushes"],
        rows[1], rows[2])


def _arithmetic_fact(a: RunAtlas):
    """(device, ((framework, flushed dtypes), ...)) from the subnormal probe."""
    if not a.arithmetic:
        return None
    return a.run.provenance["device"], tuple(
        (fw, tuple(dict.fromkeys(x.dtype for x in a.arithmetic if x.framework == fw and x.flushes)))
        for fw in dict.fromkeys(x.framework for x in a.arithmetic))


def _arithmetic_text(fact) -> str:
    device, by_framework = fact
    if not any(dtypes for _, dtypes in by_framework):
        return (f"On the {device}, neither {' nor '.join(fw for fw, _ in by_framework)} flushes "
                f"subnormal numbers")
    said = [f"{fw} flushes subnormal numbers to zero in {', '.join(dtypes)}"
            if dtypes else f"{fw} does not flush" for fw, dtypes in by_framework]
    text = f"On the {device}, " + ", while ".join(said)
    if any(dtypes for _, dtypes in by_framework):
        text += (" (XLA's CPU backend, not the device: the probe measures each framework's "
                 "arithmetic), so there an op at ±min_subnormal returns its value and gradient "
                 "at 0")
    return text


def _arithmetic_short(fact) -> str:
    device, by_framework = fact
    return f"{device}: " + ", ".join(f"{fw} {'/'.join(d) if d else 'no flushing'}"
                                     for fw, d in by_framework)


def heatmap_figure(summary: Summary) -> dict:
    """The float32 reverse-gradient atlas of each device's newest standard run (any run where
    it has none), torch beside JAX: 0, 0.5, 1, other, NaN, ±inf and errors told apart."""
    from study.figures import HeatmapPanel, heatmap
    by_run = {id(a.run): a for a in summary.runs}
    chosen = []
    for device in dict.fromkeys(a.run.provenance["device"] for a in summary.runs):
        mine = [a.run for a in summary.runs if a.run.provenance["device"] == device]
        chosen.append(by_run[id(newest(mine, key=lambda r: r.scope == "standard"))])
    panels, flushed = [], []
    for a in chosen:
        name = a.run.tag or a.run.label
        if any(x.flushes for x in a.arithmetic):
            flushed.append(name)
        for fw, title in (("torch", "torch"), ("jax", "JAX")):
            ops = [op for op in a.atlas("float32") if op.framework == fw]
            if not ops:
                continue
            labels = sorted({lab for op in ops for lab in op.inputs}, key=label_order)
            grid = [[op.cell("reverse", lab) if lab in op.inputs else None for lab in labels]
                    for op in ops]
            first = [[None if c is None else cell_values(c)[0] for c in row] for row in grid]
            panels.append(HeatmapPanel(
                f"{title}, {a.run.provenance['device']} ({name}): reverse gradient, float32",
                [op.name for op in ops], labels,
                np.array([[np.nan if isinstance(v, str) or v is None else v for v in row]
                          for row in first]),
                np.array([[isinstance(v, str) for v in row] for row in first]),
                np.array([[c is not None and depends_on_placement(c) for c in row]
                          for row in grid]),
                np.array([[c is None for c in row] for row in grid])))
    if not panels:
        return {}
    title = ("Zero-point atlas: the reverse-mode gradient of every op at every probe input, one "
             "pair of panels per device" + (f"; in {', '.join(flushed)} XLA's CPU backend flushes "
                                            f"subnormals, so JAX cells at ±min_subnormal show the "
                                            f"op at 0" if flushed else ""))
    return {"figures/zero-point-atlas.png": (
        lambda: heatmap(panels, title), "Zero-point atlas heatmap: reverse gradient per op and input, torch beside JAX, "
             "each device; colours tell 0, 0.5, 1, other values, NaN, ±inf and errors apart")}


def render(summary: Summary) -> Rendered:
    return Rendered(_atlas_tables(summary) + _compiled_tables(summary) + _porting_tables(summary)
                    + _check_tables(summary)
                    + [_arithmetic_table(summary)], findings(summary), heatmap_figure(summary))


# --- what a rerun is compared on ----------------------------------------------------------

def comparable_cells(run: Run) -> dict:
    """Every atlas cell by (op, dtype, mode, input), every numeric check by (rule, x, what),
    and every failed case, typed (study.cells); fields an erratum withdrew are left out."""
    out = {}
    for rec in run.records:
        if "case_error" in rec:
            out[(("part", rec.get("part")), ("rule", rec.get("rule")), ("dtype", rec.get("dtype")),
                 ("path", "case_error"))] = Error(rec["case_error"])
        elif rec.get("part") == "atlas" and "withdrawn" not in rec:
            op = _op(rec)
            compiled = (("execution", "compiled"),) if op.compiler else ()
            for mode in (m for m in op.modes if m not in rec.get("withdrawn_fields", {})):
                for label in op.inputs:
                    out[(("op", op.name), ("dtype", op.dtype), ("mode", mode),
                         ("input", label)) + compiled] = atlas_cell(op.cell(mode, label))
        elif rec.get("part") == "gradcheck" and "withdrawn" not in rec:
            for what in ("analytic", "finite_difference", "passed"):
                v = rec[what]
                out[(("rule", rec["name"]), ("x", rec["point"]), ("path", what))] = \
                    Error(v) if isinstance(v, str) else Value(v)
        elif rec.get("part") == "arithmetic" and "withdrawn" not in rec:
            for what in ("subnormal_is_positive", "subnormal_times_one", "half_min_normal"):
                out[(("probe", "subnormal arithmetic"), ("framework", rec["framework"]),
                     ("exec", rec["exec"]), ("dtype", rec["dtype"]), ("path", what))] = Value(rec[what])
    return out

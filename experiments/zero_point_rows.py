"""The zero-point atlas's table rows: one dataclass per table, its fields the table's columns
(study.tables.column), built from one run's atlas (zero_point_atlas)."""
from dataclasses import dataclass

from experiments.zero_point_atlas import (OpAtlas, RunAtlas, agree, forward_text, kink_labels,
                                          same_after_rounding, shown, subnormal_label)
from study.placement import depends_on_placement, describe_where
from study.tables import collapse_rows, column, shorten

ATLAS_TAIL = ("-0.0", "min_normal", "nan", "+inf", "-inf")  # columns after the kink's three


@dataclass
class AtlasRow:
    op: str = column("op", key=True)
    kink: float = column("kink k", key=True)
    cells: dict = column()  # "k − 1 ulp", "k", "k + 1 ulp", then ATLAS_TAIL: the gradient


def atlas_rows(a: RunAtlas, framework: str) -> list[AtlasRow]:
    heads = ("k − 1 ulp", "k", "k + 1 ulp") + ATLAS_TAIL
    return [AtlasRow(op.name, k, {head: shown(op.cell("reverse", lab)) for head, lab in zip(
        heads, kink_labels(k) + list(ATLAS_TAIL))})
            for op in a.atlas("float32") if op.framework == framework for k in op.kinks]


@dataclass
class ModeRow:
    framework: str = column("framework", key=True)
    op: str = column("op", key=True)
    kink: float = column("kink k", key=True)
    cells: dict = column()  # value, reverse, forward, second: each mode at the kink


def mode_rows(a: RunAtlas) -> list[ModeRow]:
    return [ModeRow(op.framework, op.name, k, {
        m: forward_text(op, kink_labels(k)[1]) if m == "forward"
        else shorten(shown(op.cell(m, kink_labels(k)[1])), 60) for m in op.modes})
            for op in a.atlas("float32") for k in op.kinks]


def placement_cells(a: RunAtlas) -> list[tuple[OpAtlas, str, str, dict]]:
    """Every eager (op, mode, input, cell) whose value depends on the placement."""
    return [(op, mode, label, c) for op in a.atlas() for mode, cells in op.modes.items()
            if not isinstance(cells, str)
            for label, c in zip(op.inputs, cells) if depends_on_placement(c)]


@dataclass
class PlacementRow:
    framework: str = column("framework", key=True)
    op: str = column("op", key=True)
    dtype: str = column("dtype", key=True)
    mode: str = column("mode", key=True)
    input: str = column("input", key=True)
    where: str = column("values and where")


def placement_rows(a: RunAtlas) -> list[PlacementRow]:
    return [PlacementRow(op.framework, op.name, op.dtype, mode, label, describe_where(c))
            for op, mode, label, c in placement_cells(a)]


@dataclass
class ExtendedRow:
    framework: str = column("framework", key=True)
    op: str = column("op", key=True)
    dtype: str = column("dtypes")
    mode: str = column("modes")
    input: str = column("inputs")
    value: str = column("value")
    float32: str = column("float32 value")


def extended_rows(a: RunAtlas) -> list[ExtendedRow]:
    """Where a dtype other than float32 gives another value than float32 (same run)."""
    base = {op.rule: op for op in a.atlas("float32")}
    rows = []
    for op in (op for op in a.atlas() if op.dtype != "float32" and op.rule in base):
        ref = base[op.rule]
        for mode in ("reverse", "forward", "second"):
            mine, theirs = op.modes[mode], ref.modes[mode]
            if isinstance(mine, str) or isinstance(theirs, str):
                if mine != theirs:
                    rows.append(ExtendedRow(op.framework, op.name, op.dtype, mode, "every input",
                                            mine if isinstance(mine, str) else "values",
                                            theirs if isinstance(theirs, str) else "values"))
                continue
            rows += [ExtendedRow(op.framework, op.name, op.dtype, mode, label, shown(got),
                                 shown(want))
                     for label, got, want in zip(op.inputs, mine, [ref.cell(mode, lab)
                                                                  for lab in op.inputs])
                     if not same_after_rounding(got, want, op.dtype)]
    return rows


def extended_rows_merged(a: RunAtlas) -> list[ExtendedRow]:
    """extended_rows with the rows that differ only in dtype, mode or input merged."""
    return collapse_rows(extended_rows(a), ("dtype", "mode", "input"))


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


@dataclass
class TorchToJax:
    op: str = column("torch op", key=True)
    every: str = column("JAX equivalent, every input")
    subnormals_aside: str = column("JAX equivalent, subnormals aside")
    compiled: str | None = column("JAX equivalent, both compiled")
    depends: str | None = column("inputs that depend on placement")


@dataclass
class JaxToTorch:
    op: str = column("JAX op", key=True)
    every: str = column("torch equivalent, every input")
    subnormals_aside: str = column("torch equivalent, subnormals aside")
    compiled: str | None = column("torch equivalent, both compiled")
    depends: str | None = column("inputs that depend on placement")


def porting_rows(a: RunAtlas, src: str, dst: str) -> list[TorchToJax | JaxToTorch]:
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
                for labels in (every, [lab for lab in every if not subnormal_label(lab)])]
        mine = compiled.get(op.rule)
        cols.append(_equivalents(mine, compiled_targets, every, signed_compiled)
                    if mine and not any(isinstance(mine.modes[m], str) for m in ("value", "reverse"))
                    else None)
        row_type = TorchToJax if src == "torch" else JaxToTorch
        rows.append(row_type(op.name, *cols, ", ".join(dict.fromkeys(depends)) or None))
    return rows


@dataclass
class CustomRow:
    framework: str = column("framework", key=True)
    rule: str = column("rule", key=True)
    dtype: str = column("dtype", key=True)
    convention: float = column("declared c")
    reverse_at_0: str = column("reverse at +0")
    reverse_at_minus_0: str = column("reverse at −0")
    forward_at_0: str = column("forward at +0")
    agrees: bool | None = column("reverse at +0 = c")


@dataclass
class CustomByDtype(CustomRow):
    dtype: str = column("dtypes")


def custom_rows(a: RunAtlas) -> list[CustomRow]:
    return [CustomRow(op.framework, op.name, op.dtype, op.convention,
                      shown(op.cell("reverse", "+0.0")), shown(op.cell("reverse", "-0.0")),
                      forward_text(op, "+0.0"), agree(op.cell("reverse", "+0.0"), op.convention))
            for op in a.atlas() if op.kind == "custom"]


def custom_rows_by_dtype(a: RunAtlas) -> list[CustomByDtype]:
    """custom_rows with the dtypes that give the same row listed in one."""
    return collapse_rows(custom_rows(a), ("dtype",), into=CustomByDtype)


@dataclass
class GradcheckRow:
    framework: str = column("framework", key=True)
    rule: str = column("rule", key=True)
    convention: float = column("c", key=True)
    point: float = column("x", key=True)
    analytic: float | None = column("analytic (0-d)")
    atlas: str | None = column("atlas at +0")
    finite_difference: float = column("finite difference")
    passed: bool | str = column("check passes")


def gradcheck_rows(a: RunAtlas) -> list[GradcheckRow]:
    f64 = {op.rule: op for op in a.atlas("float64")}
    rows = []
    for c in a.checks:
        at = shown(f64[c.rule].cell("reverse", "+0.0")) if c.rule in f64 and c.point == 0 else None
        rows.append(GradcheckRow(c.framework, c.name, c.convention, c.point, c.analytic, at,
                                 c.finite_difference, c.passed))
    return rows


@dataclass
class ArithmeticRow:
    framework: str = column("framework", key=True)
    execution: str = column("execution", key=True)
    dtype: str = column("dtype", key=True)
    positive: bool = column("s > 0")
    times_one: float = column("s × 1")
    half_min_normal: float = column("m × 0.5")
    flushes: bool = column("flushes")


def arithmetic_rows(a: RunAtlas) -> list[ArithmeticRow]:
    return [ArithmeticRow(x.framework, x.exec, x.dtype, x.subnormal_is_positive,
                          x.subnormal_times_one, x.half_min_normal, x.flushes)
            for x in a.arithmetic]

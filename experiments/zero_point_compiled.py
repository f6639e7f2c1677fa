"""Does compilation change the convention? The atlas's compiled cells against eager ones,
and the look-alike pairs eagerly and compiled: rows, facts and the two tables.
"""
from dataclasses import dataclass

from experiments.zero_point_atlas import (SPECIAL, OpAtlas, RunAtlas, Summary, agree,
                                          input_kind, shown, subnormal_label)
from study.placement import (cell_values, depends_on_placement, describe_where, restrict,
                             same_value)
from study.runsets import merged, run_table
from study.tables import Table, collapse_rows, column, distinct_digits, format_cell, shorten

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


@dataclass
class ChangeRow:
    framework: str = column("framework", key=True)
    op: str = column("op", key=True)
    dtype: str = column("dtype", key=True)
    mode: str = column("mode", key=True)
    input: str = column("input", key=True)
    eager: str = column("eager")
    compiled: str = column("compiled")
    shares: str = column("shares")


@dataclass
class MergedChangeRow(ChangeRow):
    dtype: str = column("dtypes", key=True)
    mode: str = column("modes", key=True)


def compiled_detail(a: RunAtlas) -> list[ChangeRow]:
    """Every compiled cell that differs from eager, grouped by what the cells share."""
    rows = [ChangeRow(x.framework, x.op, x.dtype, x.mode, x.input,
                      *_pair_texts(x.eager, x.compiled), x.shares) for x in a.changes]
    return sorted(rows, key=lambda r: (r.shares, r.framework))


@dataclass
class GroupRow:
    framework: str = column("framework", key=True)
    shares: str = column("what the cells share", key=True)
    cells: int = column("cells")
    ops: str = column("ops")
    dtypes: str = column("dtypes")
    modes: str = column("modes")


def compiled_groups(a: RunAtlas) -> list[GroupRow]:
    """Per framework and what the cells share: how many cells, in which ops, dtypes, modes."""
    groups: dict[tuple, list[CompiledChange]] = {}
    for x in a.changes:
        groups.setdefault((x.framework, x.shares.split(";")[0]), []).append(x)
    rows = []
    for (fw, shares), xs in sorted(groups.items(), key=lambda g: (g[0][0], -len(g[1]))):
        ops = list(dict.fromkeys(x.op for x in xs))
        rows.append(GroupRow(fw, shares, len(xs), ", ".join(ops[:4]) + (
            f" and {len(ops) - 4} more" if len(ops) > 4 else ""),
                             ", ".join(dict.fromkeys(x.dtype for x in xs)),
                             ", ".join(dict.fromkeys(x.mode for x in xs))))
    return rows


def compiled_rows(a: RunAtlas) -> list[MergedChangeRow]:
    """compiled_detail with the rows that differ only in dtype or mode merged."""
    return collapse_rows(compiled_detail(a), ("dtype", "mode"), into=MergedChangeRow)


@dataclass(frozen=True)
class CompiledCells:
    """What compiling changes in one framework's float32 cells: how many cells in how many
    ops, and per group of what the cells share, (shares, cells, ops)."""
    framework: str
    cells: int
    ops: int
    groups: tuple[tuple[str, int, tuple[str, ...]], ...]


def compiled_fact(a: RunAtlas) -> tuple[CompiledCells, ...] | None:
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
        out.append(CompiledCells(fw, len(mine), len({x.op for x in mine}), tuple(
            (shares, len(xs), tuple(dict.fromkeys(x.op for x in xs)))
            for shares, xs in sorted(groups.items(), key=lambda g: -len(g[1])))))
    return tuple(out)


def compiled_text(fact: tuple[CompiledCells, ...]) -> str:
    parts = []
    for c in fact:
        if not c.cells:
            parts.append(f"nothing in {c.framework}")
            continue
        parts.append(f"{c.cells} {c.framework} cells in {c.ops} op{'s' * (c.ops != 1)} ("
                     + ", ".join(f"{shares}: {n}" for shares, n, _ in c.groups) + ")")
    return "Compiling changes float32 cells against eager at the same placements: " + "; ".join(parts)


def compiled_short(fact: tuple[CompiledCells, ...]) -> str:
    return "; ".join(f"{c.framework}: {c.cells} cells in {c.ops} ops" for c in fact)


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


@dataclass(frozen=True)
class CompiledForwardFact:
    """Custom rules whose compiled forward mode at +0 ignores the rule: how many, the tangents
    they give, how many raise eagerly and how many give their convention eagerly."""
    n: int
    tangents: tuple[str, ...]
    raised: int
    names: tuple[str, ...]
    compiler: str
    declared: int


def compiled_forward_fact(a: RunAtlas) -> CompiledForwardFact | None:
    wrong = compiled_forward_wrong(a)
    if not wrong:
        return None
    raised = [c.name for c, e, _ in wrong if isinstance(e, str)]
    declared = [c.name for c, e, _ in wrong if isinstance(e, float)
                and same_value(e, c.convention)]
    return CompiledForwardFact(len(wrong), tuple(dict.fromkeys(shown(g) for _, _, g in wrong)),
                               len(raised), tuple(c.name for c, _, _ in wrong),
                               wrong[0][0].compiler, len(declared))


def compiled_forward_text(fact: CompiledForwardFact) -> str:
    n = fact.n
    return (f"Under {fact.compiler}, forward mode ignores the custom rule: {n} custom rules "
            f"({', '.join(fact.names[:2])}{', …' if n > 2 else ''}) give tangent "
            f"{' or '.join(fact.tangents)} at x = +0 instead of their declared convention, with "
            f"no error or warning, where eagerly {fact.raised} of them raise and "
            f"{fact.declared} give their convention")


def compiled_forward_short(fact: CompiledForwardFact) -> str:
    return f"{fact.n} rules, tangent {' or '.join(fact.tangents)} at +0"


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
        labels = [lab for lab in t.inputs if not subnormal_label(lab)]
        verdicts = [(lab, agree(t.cell("reverse", lab), j.cell("reverse", lab))) for lab in labels]
        diffs = [lab for lab, ok in verdicts if ok is False]
        first = ((diffs[0], shown(t.cell("reverse", diffs[0])), shown(j.cell("reverse", diffs[0])))
                 if diffs else None)
        out.append(PairVerdict(t.name, j.name, diffs, [lab for lab, ok in verdicts if ok is None],
                               first))
    return out


def _first(p: PairVerdict | None) -> str | None:
    return f"at {p.first[0]}: {p.first[1]} vs {p.first[2]}" if p and p.first else None


@dataclass
class PairRow:
    torch_op: str = column("torch op", key=True)
    jax_op: str = column("JAX op", key=True)
    verdict: str = column("verdict")
    disagree: int = column("inputs that disagree")
    depends: str | None = column("inputs that depend on placement")
    first: str | None = column("first disagreement")
    compiled_verdict: str | None = column("verdict, both compiled")
    compiled_first: str | None = column("first disagreement, both compiled")


def natural_pair_rows(a: RunAtlas) -> list[PairRow]:
    compiled = {(p.torch_op, p.jax_op): p for p in natural_pairs(a, compiled=True)}
    rows = []
    for p in natural_pairs(a):
        c = compiled.get((p.torch_op, p.jax_op))
        rows.append(PairRow(p.torch_op, p.jax_op, p.status, len(p.disagree),
                            ", ".join(p.depends) or None, _first(p), c.status if c else None,
                            _first(c)))
    return rows


def pairs_changed_by_compiling(a: RunAtlas) -> list[tuple[PairVerdict, PairVerdict]]:
    """(eager verdict, compiled verdict) of each look-alike pair whose verdict or whose
    inputs in disagreement change when both sides are compiled."""
    compiled = {(p.torch_op, p.jax_op): p for p in natural_pairs(a, compiled=True)}
    return [(p, compiled[(p.torch_op, p.jax_op)]) for p in natural_pairs(a)
            if (p.torch_op, p.jax_op) in compiled
            and (p.status, p.disagree) != (compiled[(p.torch_op, p.jax_op)].status,
                                           compiled[(p.torch_op, p.jax_op)].disagree)]


@dataclass(frozen=True)
class PairsFact:
    """The look-alike pairs: how many, how many disagree at a kink or ±0 (and the first such
    input of each), how many only at NaN or ±inf, and which depend on placement."""
    pairs: int
    at_kink: int
    inputs: tuple[str, ...]
    special: int
    depends: tuple[str, ...]


def pairs_fact(a: RunAtlas) -> PairsFact | None:
    pairs = natural_pairs(a)
    if not pairs:
        return None
    at_kink = [p for p in pairs if any(lab not in SPECIAL for lab in p.disagree)]
    special = [p for p in pairs if p.disagree and p not in at_kink]
    return PairsFact(len(pairs), len(at_kink),
                     tuple(dict.fromkeys(next(lab for lab in p.disagree if lab not in SPECIAL)
                                         for p in at_kink)), len(special),
                     tuple(f"{p.torch_op} vs {p.jax_op}" for p in pairs
                           if p.status == "depends on placement"))


def pairs_text(fact: PairsFact) -> str:
    n, at_kink, inputs, special, depends = (fact.pairs, fact.at_kink, fact.inputs, fact.special,
                                            fact.depends)
    text = (f"{at_kink} of {n} look-alike torch/JAX pairs disagree at a kink, 1 ulp from one or "
            f"at ±0 (first at {', '.join(inputs) or 'none'}), {special} more only at NaN or ±inf")
    if not depends:
        return text
    return text + (f", and {depends[0]} depends on placement" if len(depends) == 1 else
                   f", and {len(depends)} depend on placement ({depends[0]}, …)")


def pairs_short(fact: PairsFact) -> str:
    return (f"{fact.at_kink} of {fact.pairs} disagree at a kink, {fact.special} only at NaN or "
            f"±inf, {len(fact.depends)} depend on placement")


def compiled_tables(summary: Summary) -> list[Table]:
    """What compiling changes: grouped, then every cell."""
    with_compiled = [a for a in summary.runs if a.compiled]
    none = "No cell changes under compilation." if with_compiled else None
    return [
        run_table("compiled", "Does compilation change the convention? What compiling changes, grouped",
              "Each group of cells whose compiled value differs from eager at the same "
              "placements (torch.compile with inductor and fullgraph, or jax.jit; value and "
              "reverse mode from a compiled training step, forward mode from jvp inside the "
              "compiled function), by what the cells share: the kind of input, whether only one "
              "side depends on the element's position, or an error on one side. 'cells' counts "
              "(op, dtype, mode, input) cells, a mode that raises for every input counting once; "
              "the listing of every cell is the next table.",
              GroupRow, with_compiled, compiled_groups, when_empty=none),
        run_table("compiled_cells", "Every cell that compiling changes, compiled against eager",
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
              MergedChangeRow, with_compiled, compiled_rows, when_empty=none,
              detail=merged(with_compiled, compiled_detail, ChangeRow)[:2]),
    ]

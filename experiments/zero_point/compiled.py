"""Does compilation change the convention? The atlas's compiled cells against eager ones, and
the look-alike pairs eagerly and compiled.
"""
from dataclasses import dataclass

from experiments.zero_point.atlas import OpAtlas, RunAtlas, agree, input_kind, shown, subnormal_label
from study.placement import cell_values, depends_on_placement, describe_where, restrict, same_value

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

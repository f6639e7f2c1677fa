"""Does compilation change the convention? The atlas's compiled cells against eager ones, and
the look-alike pairs eagerly and compiled.
"""
import operator
from dataclasses import dataclass

from experiments.zero_point.atlas import (OpAtlas, RunAtlas, equal_unless_placed, input_kind,
                                          subnormal_label)
from study.compare.cells import Cell, Error, Placed, Value, equal

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
    eager: Cell
    compiled: Cell
    shares: str  # what the differing cells have in common


EVERY_INPUT = "every input (shown: +0.0)"  # a mode that raises on one side for every input


def changed_by_compiling(a: RunAtlas, rule: str, dtype: str, mode: str, label: str) -> bool:
    return any((x.rule, x.dtype, x.mode) == (rule, dtype, mode) and x.input in (label, EVERY_INPUT)
               for x in a.changes)


def _shares(label: str, eager: Cell, compiled: Cell) -> str:
    placed = isinstance(eager, Placed), isinstance(compiled, Placed)
    where = ("; eager depends on position" if placed == (True, False)
             else "; compiled depends on position" if placed == (False, True) else "")
    return input_kind(label) + where


def compiled_changes(a: RunAtlas) -> list[CompiledChange]:
    """Every cell where the compiled op differs from the eager one, the eager cell read at the
    compiled op's placements (Placed.at)."""
    eager = {(op.rule, op.dtype): op for op in a.atlas()}
    out = []
    for c in a.compiled:
        e = eager.get((c.rule, c.dtype))
        if e is None:
            continue
        for mode in (m for m in c.modes if m in e.modes and m not in c.withdrawn + e.withdrawn):
            ec, cc = e.modes[mode], c.modes[mode]
            if isinstance(ec, Error) or isinstance(cc, Error):
                if ec != cc:
                    shares = ("eager raises, compiled returns values" if isinstance(ec, Error)
                              and not isinstance(cc, Error) else "compiled raises"
                              if not isinstance(ec, Error) else "both raise, differently")
                    out.append(CompiledChange(c.framework, c.rule, c.name, c.kind, c.dtype, mode,
                                              EVERY_INPUT, e.cell(mode, "+0.0"),
                                              c.cell(mode, "+0.0"), shares))
                continue
            if (c.inputs == e.inputs and len(ec) == len(cc) and Placed not in set(map(type, ec))
                    and all(map(operator.is_, ec, cc))):  # one Cell each (atlas._plain_cells)
                continue
            for label, after in zip(c.inputs, cc):
                if label not in e.position:
                    continue
                before = ec[e.position[label]]
                if isinstance(before, Placed):
                    before = before.at(c.placements)
                if before is not after and not equal(before, after):  # equal is reflexive
                    out.append(CompiledChange(c.framework, c.rule, c.name, c.kind, c.dtype, mode,
                                              label, before, after, _shares(label, before, after)))
    return out


def compiled_forward_wrong(a: RunAtlas) -> list[tuple[OpAtlas, Cell, Cell]]:
    """Custom rules whose compiled forward mode at +0 is a number other than the rule's
    declared convention and other than eager's (which may raise): (compiled op, eager forward
    at +0, compiled forward at +0)."""
    eager = {(op.rule, op.dtype): op for op in a.atlas("float32")}
    out = []
    for c in (c for c in a.compiled if c.kind == "custom" and c.dtype == "float32"
              and "forward" in c.modes and (c.rule, c.dtype) in eager):
        got = c.cell("forward", "+0.0")
        before = eager[(c.rule, c.dtype)].cell("forward", "+0.0")
        if isinstance(got, Value) and not equal(got, Value(c.convention)) \
                and not equal(before, got):
            out.append((c, before, got))
    return out


@dataclass
class PairVerdict:
    torch_op: str
    jax_op: str
    disagree: list[str]  # inputs where the plain values differ
    depends: list[str]  # inputs where either side depends on placement

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
        verdicts = [(lab, True if mine is theirs and not isinstance(mine, Placed)  # reflexive
                     else equal_unless_placed(mine, theirs)) for lab in labels
                    for mine, theirs in [(t.cell("reverse", lab), j.cell("reverse", lab))]]
        out.append(PairVerdict(t.name, j.name, [lab for lab, ok in verdicts if ok is False],
                               [lab for lab, ok in verdicts if ok is None]))
    return out

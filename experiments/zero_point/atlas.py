"""The atlas read from its records: every op's cells typed once, as they are read
(study.compare.cells: a Value, an Error or a Placed), one RunAtlas per run, and what a rerun is
compared on (comparable_cells). Every comparison of two cells is study.compare.cells.equal; the
cells that change between releases are zero_point.history's.
"""
import math
from array import array
from dataclasses import dataclass, field, replace
from functools import cached_property

import numpy as np

from study.compare.cells import Cell, Error, Placed, Value, Withdrawn, decode, equal
from study.measure.inputs import numpy_dtype
from study.runs.results import Run


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
    modes: dict[str, list[Cell] | Error]  # mode -> a cell per input, or one Error for all
    look_alike: str | None  # the other framework's op a porting user would take as this one
    withdrawn: tuple[str, ...] = ()  # modes an erratum withdrew: not results, never compared
    placements: tuple[str, ...] = ()  # where each input was measured (study.measure.placement)
    compiler: str | None = None  # None: eager; else torch.compile(...) or jax.jit
    # (kink, derivative) its docstring declares; None: the run did not read docstrings
    documented: tuple[tuple[float, float], ...] | None = None

    def cell(self, mode: str, label: str) -> Cell:
        cells = self.modes[mode]
        return cells if isinstance(cells, Error) else cells[self.position[label]]

    @cached_property
    def position(self) -> dict[str, int]:
        """Each input label's index in `inputs` (its first, as list.index gives)."""
        return {label: i for i, label in reversed(list(enumerate(self.inputs)))}

    def cells(self, mode: str) -> list[Cell]:
        """The mode's cell at each input, in the order of `inputs`."""
        cells = self.modes[mode]
        return [cells] * len(self.inputs) if isinstance(cells, Error) else cells


def flushes(arithmetic: dict) -> bool:
    """Whether the framework on the device flushes subnormals (study.measure.arithmetic): subnormal
    inputs read as 0, or subnormal results flushed to 0."""
    return not arithmetic["subnormal_is_positive"] or arithmetic["half_min_normal"] == 0


@dataclass
class RunAtlas:
    run: Run  # identity only
    ops: list[OpAtlas]
    checks: list[dict]  # gradcheck records: the numeric check at each point
    arithmetic: list[dict]  # arithmetic records: the subnormal probe
    compiled: list[OpAtlas] = field(default_factory=list)  # the same ops, compiled
    changes: list = field(default_factory=list)  # zero_point.compiled's CompiledChange, filled once
    kinks: list[dict] = field(default_factory=list)  # kink records (study.conformance); none in
    # runs measured before they existed

    def atlas(self, dtype: str | None = None) -> list[OpAtlas]:
        """The eager ops."""
        return [op for op in self.ops if dtype is None or op.dtype == dtype]


_HASHABLE = (float, int, bool, str, type(None))


class Decoder:
    """study.compare.cells.decode, once per distinct stored cell, and once per distinct list of
    floats: a run's ~14,500 atlas cells take a few hundred values, its modes' lists a few
    hundred forms. Cells are immutable, so equal stored forms share one Cell. A key keeps apart
    what == would merge: True, 1 and 1.0, and the zeros' signs."""

    def __init__(self):
        self.known: dict = {}
        self.lists: dict[bytes, list[Cell]] = {}

    def __call__(self, stored) -> Cell:
        kind = stored.__class__
        if kind is dict:  # an error by its line; repr tells -0.0 from 0.0, keeps the order
            key = ("error", stored["error"]) if "error" in stored else repr(stored)
        elif kind is float and stored == 0:
            key = (kind, stored, math.copysign(1.0, stored))
        elif kind in _HASHABLE:
            key = (kind, stored)
        else:
            return decode(stored)
        cell = self.known.get(key)
        if cell is None:
            cell = self.known[key] = decode(stored)
        return cell

    def cells(self, stored: list) -> list[Cell]:
        """The list's cells, a new list (the Cells shared)."""
        if {float} != set(map(type, stored)):
            return list(map(self, stored))
        key = array("d", stored).tobytes()  # bit for bit
        if key not in self.lists:
            self.lists[key] = list(map(self, stored))
        return list(self.lists[key])


def _typed(stored, decoder: Decoder | None = None) -> list[Cell] | Error | Withdrawn:
    """A mode's stored cells (study.compare.cells.decode), or one Error where every input
    raised it: the mode raised, whatever the input; Withdrawn where an erratum withdrew it."""
    if isinstance(stored, str):  # study.runs.results.withdraw wrote "withdrawn: why"
        return Withdrawn(stored)
    cells = (decoder or Decoder()).cells(stored)
    if cells and isinstance(cells[0], Error) and cells.count(cells[0]) == len(cells):
        return cells[0]
    return cells


def _op(rec: dict, decoder: Decoder | None = None) -> OpAtlas:
    decoder = decoder or Decoder()
    return OpAtlas(rec["rule"], rec["name"], rec["framework"], rec["kind"], rec["convention"],
                   rec["kinks"], rec["dtype"], rec["inputs"],
                   {m: _typed(rec[m], decoder) for m in rec["modes"]}, rec["look_alike"],
                   tuple(rec.get("withdrawn_fields", ())), tuple(rec.get("placements", ())),
                   rec.get("compiler") if rec.get("execution") == "compiled" else None,
                   tuple(tuple(kv) for kv in rec["documented"]) if "documented" in rec else None)


def read(runs) -> list[RunAtlas]:
    """Each run's atlas. A record the loader shares among runs (study.runs.results.parse_result:
    releases and reruns measure the same records) is read once, into one OpAtlas, which no
    reader changes."""
    atlases, decoder = [], Decoder()
    known: dict[int, tuple[dict, OpAtlas]] = {}  # by the record's id, kept beside it
    for run in runs:
        recs = run.ok_records()
        ops = [(known.get(id(r)) or known.setdefault(id(r), (r, _op(r, decoder))))[1]
               for r in recs if r.get("part") == "atlas"]
        atlases.append(RunAtlas(replace(run, records=[]), [op for op in ops if op.compiler is None],
                                [r for r in recs if r.get("part") == "gradcheck"],
                                [r for r in recs if r.get("part") == "arithmetic"],
                                [op for op in ops if op.compiler is not None],
                                kinks=[r for r in recs if r.get("part") == "kinks"]))
    return atlases


def frame_value(c: Cell):
    """A cell as a frame holds it until the formatter: its number, its error line, or the
    Placed cell itself (the formatter prints its values)."""
    return c.value if isinstance(c, Value) else c.line if isinstance(c, Error) else c


def cell_values(c: Cell) -> list[tuple]:
    """cell_rows' (value, error, where) as tuples."""
    if isinstance(c, Value):
        return [(c.value, None, None)]
    if isinstance(c, Error):
        return [(None, c.line, None)]
    return [tuple(r.values()) for r in cell_rows(c)]


def cell_rows(c: Cell) -> list[dict]:
    """A cell as tidy rows: one {value, error, where} per value it takes, `where` the places a
    placement-dependent value occurs at (None for a cell that is the same everywhere)."""
    def row(v: Cell, where):
        return {"value": v.value if isinstance(v, Value) else None,
                "error": v.line if isinstance(v, Error) else None, "where": where}
    if not isinstance(c, Placed):
        return [row(c, None)]
    return [row(v, ", ".join(places)) for v, places in zip(c.values, c.places())]


def equal_unless_placed(a: Cell, b: Cell) -> bool | None:
    """study.compare.cells.equal, or None where either cell depends on placement: one value against
    several is neither."""
    if isinstance(a, Placed) or isinstance(b, Placed):
        return None
    return equal(a, b)


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


def subnormal_label(label: str) -> bool:
    return label.endswith("min_subnormal")


# inputs that are not kinks: a disagreement there is NaN/inf handling
SPECIAL = ("+nan", "+inf", "-inf")


def forward_disagrees(op) -> list[str]:
    """Inputs away from every kink (and from ±0, ±inf, NaN and subnormals) where forward mode
    and reverse mode give different derivatives: an elementwise op's two modes must agree
    there, so forward mode is silently wrong."""
    near = {lab for k in op.kinks for lab in kink_labels(k)} | {"-0.0", "+0.0", *SPECIAL}
    if any(not isinstance(op.modes.get(m), list) for m in ("forward", "reverse")):
        return []  # a mode not measured, or raising for every input
    return [lab for lab in op.inputs if lab not in near and not lab.endswith("min_subnormal")
            and equal_unless_placed(op.cell("forward", lab), op.cell("reverse", lab)) is False]


def input_kind(label: str) -> str:
    if label in SPECIAL:
        return "NaN or ±inf"
    if subnormal_label(label):
        return "a subnormal input"
    if label.endswith("ulp") or label == "min_normal":
        return "next to a kink"
    return "at a kink or ±0"


def same_after_rounding(a: Cell, b: Cell, dtype: str) -> bool:
    """Equal once both are rounded to the coarser of dtype and float32: a constant like 0.01
    is stored differently in each dtype, which is not a convention. Placement-dependent cells
    are compared by the values they take: where each sits follows the dtype's vector width."""
    coarse = numpy_dtype(dtype if dtype in ("float16", "bfloat16") else "float32")

    def values(c: Cell) -> tuple:
        return tuple(Value(float(np.asarray(v.value).astype(coarse)))
                     if isinstance(v, Value) and isinstance(v.value, float) else v
                     for v in (c.values if isinstance(c, Placed) else (c,)))
    mine, theirs = values(a), values(b)
    return (isinstance(a, Placed) == isinstance(b, Placed)
            and all(any(equal(x, y) for y in theirs) for x in mine)
            and all(any(equal(x, y) for y in mine) for x in theirs))


def comparable_cells(run: Run) -> dict:
    """Every atlas cell by (op, dtype, mode, input), every numeric check by (rule, x, what),
    and every failed case, typed (study.compare.cells); fields an erratum withdrew are left out."""
    out, decoder = {}, Decoder()
    for rec in run.records:
        if "case_error" in rec:
            out[(("part", rec.get("part")), ("rule", rec.get("rule")), ("dtype", rec.get("dtype")),
                 ("path", "case_error"))] = Error(rec["case_error"])
        elif rec.get("part") == "atlas" and "withdrawn" not in rec:
            out.update(_atlas_cells(rec, decoder))
        elif rec.get("part") == "gradcheck" and "withdrawn" not in rec:
            for what in ("analytic", "finite_difference", "passed"):
                out[(("rule", rec["name"]), ("x", rec["point"]), ("path", what))] = \
                    Value(rec[what])
        elif rec.get("part") == "arithmetic" and "withdrawn" not in rec:
            for what in ("subnormal_is_positive", "subnormal_times_one", "half_min_normal"):
                out[(("probe", "subnormal arithmetic"), ("framework", rec["framework"]),
                     ("exec", rec["exec"]), ("dtype", rec["dtype"]), ("path", what))] = \
                    Value(rec[what])
    return out


# An atlas record's named cells, by the record's id (the record kept beside them, so that its id
# is its own): the loader shares a record among the runs that store it (a rerun and its
# reference, releases alike), and each run is compared cell by cell
_ATLAS_CELLS: dict[int, tuple[dict, list]] = {}
ATLAS_CELLS_KEPT = 8192  # records


def _atlas_cells(rec: dict, decoder: Decoder) -> list[tuple]:
    known = _ATLAS_CELLS.get(id(rec))
    if known is None:
        if len(_ATLAS_CELLS) >= ATLAS_CELLS_KEPT:
            _ATLAS_CELLS.clear()
        op = _op(rec, decoder)
        compiled = (("execution", "compiled"),) if op.compiler else ()
        inputs = [(("input", label),) + compiled for label in op.inputs]
        cells = []
        for mode in (m for m in op.modes if m not in rec.get("withdrawn_fields", {})):
            head = (("op", op.name), ("dtype", op.dtype), ("mode", mode))
            cells += [(head + tail, cell) for tail, cell in zip(inputs, op.cells(mode))]
        known = _ATLAS_CELLS[id(rec)] = rec, cells
    return known[1]


@dataclass(frozen=True)
class BuiltinCells:
    """One eager built-in of one dtype in a run, as `study check` matches a rule with it: every
    mode's cell at every probe input (the Experiment contract's `builtin_cells`)."""
    rule: str
    name: str
    framework: str
    dtype: str
    cells: dict  # (mode, input label) -> Cell


def builtin_cells(run: Run) -> list[BuiltinCells]:
    """The run's eager built-ins, typed (its errata applied and records upgraded by the loader)."""
    return [BuiltinCells(op.rule, op.name, op.framework, op.dtype,
                         {(mode, label): op.cell(mode, label) for mode in op.modes
                          if mode not in op.withdrawn for label in op.inputs})
            for op in (_op(r) for r in run.ok_records()
                       if r.get("part") == "atlas" and r.get("kind") == "builtin"
                       and r.get("execution", "eager") == "eager")]

"""The atlas read from its records: every op's cells typed once, as they are read
(study.compare.cells: a Value, an Error or a Placed), one RunAtlas per run, and what a rerun is
compared on (comparable_cells). Every comparison of two cells is study.compare.cells.equal; the
cells that change between releases are zero_point.history's.
"""
from dataclasses import dataclass, field
from functools import cached_property

import numpy as np
import pandas as pd

from study.compare.cells import Cell, Error, Placed, Value, Withdrawn, equal, from_rows
from study.measure.inputs import numpy_dtype
from study.runs.results import FAILED_CASES, Run


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
    ties: list[dict] = field(default_factory=list)  # the built-ins of several inputs at their ties
    tie_kinks: list[dict] = field(default_factory=list)  # their shapes there (study.conformance)

    def atlas(self, dtype: str | None = None) -> list[OpAtlas]:
        """The eager ops."""
        return [op for op in self.ops if dtype is None or op.dtype == dtype]


def _withdrawn(frame: pd.DataFrame, errata: list) -> np.ndarray:
    """Which rows of the atlas_cells frame an erratum withdrew: the why, or None."""
    why = np.full(len(frame), None, dtype=object)
    for match, reason in errata:
        mask = np.ones(len(frame), bool)
        for column, values in match.items():
            values = values if isinstance(values, list) else [values]
            mask &= frame[column].isin(values).to_numpy() if column in frame else False
        why[mask & (why == None)] = reason  # noqa: E711  the first erratum that matches
    return why


def _plain_cells(frame: pd.DataFrame) -> np.ndarray:
    """Each row's cell as if it were the same at every placement: an Error where the row has
    one, else a Value; one Cell per distinct (bits, error), shared by the rows."""
    values = frame["value"].to_numpy(np.float64, na_value=np.nan)
    bits = np.where(np.isnan(values), np.float64("nan"), values).view(np.int64)
    bit_codes, distinct_bits = pd.factorize(bits)
    error_codes, distinct_errors = pd.factorize(frame["error"])  # -1: no error
    codes, index = np.unique(np.where(error_codes < 0, bit_codes, -1 - error_codes),
                             return_inverse=True)
    cells = np.array([Error(distinct_errors[-1 - c]) if c < 0 else
                      Value(float(distinct_bits[c].view(np.float64))) for c in codes], object)
    return cells[index]


def _codes(frame: pd.DataFrame, columns: tuple) -> np.ndarray:
    """One integer per row, equal where the rows agree in every column."""
    code = np.zeros(len(frame), np.int64)
    for c in columns:
        codes, uniques = pd.factorize(frame[c])
        code = code * (len(uniques) + 1) + codes
    return code


def _mode_cells(frame: pd.DataFrame, errata: list) -> dict[tuple, list | Error | Withdrawn]:
    """(rule, dtype, execution, mode) -> its cell per input in stored order; one Error where
    every input raised it (the mode raised, whatever the input); Withdrawn where an erratum
    withdrew the mode."""
    if frame.empty:
        return {}
    columns = ("rule", "dtype", "execution", "mode")
    group = _codes(frame, columns)
    inputs = pd.factorize(frame["input"])[0]
    plain = _plain_cells(frame)
    placed = frame["placement"].notna().to_numpy()
    why = _withdrawn(frame, errata)
    texts = [frame[c].to_numpy(object, na_value=None) for c in ("placement", "positions",
                                                                "error")] if placed.any() else ()
    values = frame["value"].to_numpy(np.float64)

    def rows(a: int, b: int) -> list[dict]:  # texts as Python's, a missing one None
        return [{"placement": texts[0][i], "positions": texts[1][i], "value": values[i],
                 "error": texts[2][i]} for i in range(a, b)]
    out: dict = {}
    bounds = np.flatnonzero(np.r_[True, group[1:] != group[:-1], True])
    keys = zip(*(frame[c].to_numpy(object)[bounds[:-1]] for c in columns))
    any_placed = np.add.reduceat(placed, bounds[:-1]) > 0
    for start, end, key, depends in zip(bounds[:-1], bounds[1:], keys, any_placed):
        if why[start] is not None:
            out[key] = Withdrawn(why[start])
        elif not depends:  # a row per input
            out[key] = plain[start:end].tolist()
        else:  # an input's rows, one per placement and run of positions where it depends
            mine = inputs[start:end]
            cuts = start + np.flatnonzero(np.r_[True, mine[1:] != mine[:-1], True])
            out[key] = [plain[a] if b - a == 1 and not placed[a] else from_rows(rows(a, b))
                        for a, b in zip(cuts[:-1], cuts[1:])]
    for key, cells in out.items():
        if isinstance(cells, list) and isinstance(cells[0], Error) and \
                all(c == cells[0] for c in cells):
            out[key] = cells[0]
    return out


def _op(rec: dict, modes: dict) -> OpAtlas:
    key = (rec["rule"], rec["dtype"], rec["execution"])
    cells = {m: modes[key + (m,)] for m in rec["modes"]}
    return OpAtlas(rec["rule"], rec["name"], rec["framework"], rec["kind"], rec["convention"],
                   rec["kinks"], rec["dtype"], rec["inputs"], cells, rec["look_alike"],
                   tuple(m for m, c in cells.items() if isinstance(c, Withdrawn)),
                   tuple(rec.get("placements") or ()),
                   rec.get("compiler") if rec["execution"] == "compiled" else None,
                   None if rec.get("documented") is None else tuple(map(tuple, rec["documented"])))


def run_atlas(run: Run) -> RunAtlas:
    """The run's atlas: its ops typed from the tables atlas and atlas_cells (once per run)."""
    return run.derived(_run_atlas)


def _run_atlas(run: Run) -> RunAtlas:
    cells = run.frame("atlas_cells") if "atlas_cells" in run.tables else pd.DataFrame()
    modes = _mode_cells(cells, [(m, why) for t, m, why in run.errata if t == "atlas_cells"])
    ops = [_op(rec, modes) for rec in run.ok("atlas")]
    return RunAtlas(run, [op for op in ops if op.compiler is None], run.ok("gradcheck"),
                    run.ok("arithmetic"), [op for op in ops if op.compiler is not None],
                    kinks=run.ok("kinks"), ties=run.ok("ties"), tie_kinks=run.ok("tie_kinks"))


def read(runs) -> list[RunAtlas]:
    """Each run's atlas."""
    return [run_atlas(run) for run in runs]


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
    every gradient at a tie by (op, dtype, execution, tie, output, input), and every failed
    case, typed (study.compare.cells); modes an erratum withdrew are left out."""
    out = {}
    for rec in run.rows(FAILED_CASES):
        case = rec["case"]
        out[(("part", case.get("part")), ("rule", case.get("rule")), ("dtype", case.get("dtype")),
             ("path", "case_error"))] = Error(rec["error"])
    atlas = run_atlas(run)
    for op in atlas.ops + atlas.compiled:
        compiled = (("execution", "compiled"),) if op.compiler else ()
        inputs = [(("input", label),) + compiled for label in op.inputs]
        for mode in (m for m in op.modes if m not in op.withdrawn):
            head = (("op", op.name), ("dtype", op.dtype), ("mode", mode))
            out.update((head + tail, cell) for tail, cell in zip(inputs, op.cells(mode)))
    for rec in atlas.checks:
        for what in ("analytic", "finite_difference", "passed"):
            out[(("rule", rec["name"]), ("x", rec["point"]), ("path", what))] = Value(rec[what])
    for rec in atlas.ties:
        out[(("op", rec["name"]), ("dtype", rec["dtype"]), ("execution", rec["execution"]),
             ("tie", f'{rec["tie"]} at {rec["at"]}'), ("output", rec["output"]),
             ("input", rec["input"]))] = (Error(rec["error"]) if rec["error"] is not None
                                          else Value(rec["gradient"]))
    for rec in atlas.arithmetic:
        for what in ("subnormal_is_positive", "subnormal_times_one", "half_min_normal"):
            out[(("probe", "subnormal arithmetic"), ("framework", rec["framework"]),
                 ("exec", rec["exec"]), ("dtype", rec["dtype"]), ("path", what))] = \
                Value(rec[what])
    return out

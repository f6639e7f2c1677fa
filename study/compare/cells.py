"""A cell, typed: what the probe measures, a record stores, a rerun, a device pair and the report
compare, never a sniffed string.

    Value      a number, a flag or a label; a ratio carries its 95% interval (lo, hi)
    Error      the first line of what a mode or a case raised (study.errors.first_error_line)
    Placed     values that depend on where the element sits (study.measure.placement), and where
    Withdrawn  a cell an erratum withdrew, and why; never compared

A table stores a cell as rows (`stored_rows`), and one reader reads them back (`from_rows`):
one row {"placement": None, "positions": None, "value", "error"} where the cell is the same
wherever it was measured, else one per placement and run of positions ("0-63") that gives one
value; a row's `value` is its number, or None with the first line of what raised in `error`.

Two cells are compared by `equal` and by nothing else. Text is the report's (study.report.format).
"""
import math
from dataclasses import dataclass

Scalar = float | int | bool | str | None


@dataclass(frozen=True)
class Value:
    value: Scalar
    lo: float | None = None  # the 95% interval, where the value has one
    hi: float | None = None

    def __init__(self, value: Scalar, lo: float | None = None, hi: float | None = None):
        # records decode into cells by the hundred thousand: the __init__ a frozen dataclass
        # generates sets each field through object.__setattr__, at twice the cost
        fields = self.__dict__
        fields["value"], fields["lo"], fields["hi"] = value, lo, hi

    def numbers(self) -> tuple:
        return (self.value,) if self.lo is None else (self.value, self.lo, self.hi)


@dataclass(frozen=True)
class Error:
    line: str

    def __init__(self, line: str):
        self.__dict__["line"] = line  # as Value's: a record's failed cases decode by the thousand

    def numbers(self) -> tuple:
        return ()


# per placement, its runs of (index into values, positions): (("fill", ((0, "0-63"), (1,
# "64-66"))), ("0-d", ((0, "0"),)))
Positions = tuple[tuple[str, tuple[tuple[int, str], ...]], ...]


@dataclass(frozen=True)
class Placed:
    values: tuple  # each a Value or an Error, in the order the placements first show them
    positions: Positions

    def numbers(self) -> tuple:
        return ()

    def places(self) -> list[list[str]]:
        """Per value, where it occurs: [["fill 0-63", "2-D rows"], ["fill 64-66", "0-d"]]; a
        placement whose every position gives the value is named alone."""
        out: list[list[str]] = [[] for _ in self.values]
        for placement, runs in self.positions:
            for i in dict.fromkeys(j for j, _ in runs):
                shown = [pos for j, pos in runs if j == i]
                out[i].append(placement if len(runs) == 1 else f"{placement} {','.join(shown)}")
        return out

    @property
    def where(self) -> str:
        """Which value at which placement and position: '0 at fill 0-63; 1 at fill 64-66, 0-d'
        (every digit where 6 would print two values alike)."""
        short = [v.line if isinstance(v, Error) else f"{v.value:g}" for v in self.values]
        exact = len(set(short)) < len(short)
        return "; ".join(f"{repr(v.value) if exact and isinstance(v, Value) else short[i]}"
                         f" at {', '.join(places)}"
                         for i, (v, places) in enumerate(zip(self.values, self.places())))

    def at(self, placements) -> "Cell":
        """The cell as measured at these placements only; the cell unchanged where it names
        none of them."""
        kept = [(p, runs) for p, runs in self.positions if p in placements]
        if not kept:
            return self
        return collapse({p: [self.values[i] for i, pos in runs for _ in _positions(pos)]
                         for p, runs in kept})


@dataclass(frozen=True)
class Withdrawn:
    why: str

    def numbers(self) -> tuple:
        return ()


Cell = Value | Error | Placed | Withdrawn


def _positions(pos: str) -> range:
    """'64-66' -> range(64, 67); '3' -> range(3, 4); 'all' (an error) -> one position."""
    if pos == "all":
        return range(1)
    first, _, last = pos.partition("-")
    return range(int(first), int(last or first) + 1)


def _row(cell: Value | Error, placement: str | None, positions: str | None) -> dict:
    if isinstance(cell, Value):
        return {"placement": placement, "positions": positions, "value": cell.value,
                "error": None}
    if isinstance(cell, Error):
        return {"placement": placement, "positions": positions, "value": None,
                "error": cell.line}
    raise TypeError(f"a {type(cell).__name__} cell is never stored")


def stored_rows(cell: Cell) -> list[dict]:
    """The cell as the rows a table stores (the module's docstring)."""
    if not isinstance(cell, Placed):
        return [_row(cell, None, None)]
    return [_row(cell.values[i], placement, positions)
            for placement, runs in cell.positions for i, positions in runs]


def stored_cell(value, error) -> Value | Error:
    """One row's cell: its error where it has one, else its value."""
    return Error(error) if error is not None else Value(value)


def from_rows(rows: list[dict]) -> Cell:
    """The cell that `stored_rows` stored: its rows, in order."""
    if len(rows) == 1 and rows[0]["placement"] is None:
        return stored_cell(rows[0]["value"], rows[0]["error"])
    values: list[Cell] = []
    positions: dict[str, list] = {}
    for row in rows:
        cell = stored_cell(row["value"], row["error"])
        index = next((i for i, v in enumerate(values) if equal(v, cell)), None)  # as collapse
        if index is None:
            index = len(values)
            values.append(cell)
        positions.setdefault(row["placement"], []).append((index, row["positions"]))
    return Placed(tuple(values), tuple((p, tuple(runs)) for p, runs in positions.items()))


def _runs(cells: list) -> list[tuple[Cell, str]]:
    """[(cell, "0-63"), (other, "64-66")]: maximal runs of equal cells by position."""
    out, start = [], 0
    for i in range(1, len(cells) + 1):
        if i == len(cells) or not equal(cells[i], cells[start]):
            out.append((cells[start], f"{start}" if i - 1 == start else f"{start}-{i - 1}"))
            start = i
    return out


def collapse(by_placement: dict) -> Cell:
    """One input's cells over placements (per placement: a cell per position, or one Error for
    the whole placement), compactly: the one cell where every placement and position agrees,
    else a Placed cell naming which value occurs where."""
    flat = [c for cells in by_placement.values()
            for c in ([cells] if isinstance(cells, Error) else cells)]
    distinct: list[Cell] = []
    for c in flat:
        if not any(equal(c, d) for d in distinct):
            distinct.append(c)
    if len(distinct) == 1:
        return distinct[0]

    def index(c: Cell) -> int:
        return next(i for i, d in enumerate(distinct) if equal(c, d))
    positions = tuple(
        (p, ((index(cells), "all"),) if isinstance(cells, Error)
         else tuple((index(c), pos) for c, pos in _runs(cells)))
        for p, cells in by_placement.items())
    return Placed(tuple(distinct), positions)


def _same_number(a, b, tolerance: float, zero_sign: bool) -> bool:
    """Exact (NaN equals NaN, -0 equals +0 unless zero_sign), or within a relative tolerance."""
    if isinstance(a, bool) or isinstance(b, bool) or not (
            isinstance(a, (int, float)) and isinstance(b, (int, float))):
        return a == b
    if math.isnan(a) or math.isnan(b):
        return math.isnan(a) and math.isnan(b)
    if zero_sign and a == 0 and b == 0:
        return math.copysign(1, a) == math.copysign(1, b)
    if tolerance and a > 0 and b > 0:
        return abs(math.log(a / b)) <= math.log1p(tolerance)
    return a == b


def _same_positions(a: Positions, b: Positions) -> bool:
    return dict(a) == dict(b)


def equal(a: Cell, b: Cell, tolerance: float = 0.0, zero_sign: bool = False) -> bool:
    """Two cells say the same: values exactly (or within a relative tolerance), two intervals
    that overlap or lie within the tolerance of each other, the same error line, the same
    values at the same places. NaN equals NaN. -0 equals +0 unless `zero_sign`: a porting user,
    a rerun, a device pair and compiled code against eager compare values, and a sign of zero is
    no convention; a release that flips the sign of a zero has changed what it returns."""
    if type(a) is not type(b):
        return False
    if isinstance(a, Value):
        if a.lo is not None and b.lo is not None:
            return a.lo <= b.hi * (1 + tolerance) and b.lo <= a.hi * (1 + tolerance)
        if (a.lo is None) != (b.lo is None):
            return False
        # most cells compared are equal: without a tolerance or the zero sign, == says so
        return (a.value == b.value and not (tolerance or zero_sign)) or _same_number(
            a.value, b.value, tolerance, zero_sign)
    if isinstance(a, Placed):
        return (len(a.values) == len(b.values) and _same_positions(a.positions, b.positions)
                and all(equal(x, y, zero_sign=zero_sign) for x, y in zip(a.values, b.values)))
    return a == b


def values_of(cell: Cell) -> tuple:
    """The cells a cell takes: its values where it depends on placement, else itself."""
    return cell.values if isinstance(cell, Placed) else (cell,)


def same_values(a: Cell, b: Cell) -> bool:
    """Both take the same values (by `equal`), wherever they sit."""
    va, vb = values_of(a), values_of(b)
    return all(any(equal(x, y) for y in vb) for x in va) and \
        all(any(equal(x, y) for y in va) for x in vb)

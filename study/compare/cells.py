"""A cell, typed: what a rerun, a device pair and the report compare, never a sniffed string.

    Value      a number, a flag or a label; a ratio carries its 95% interval (lo, hi)
    Error      the first line of what a mode or a case raised (study.errors.first_error_line)
    Placed     values that depend on where the element sits (study.measure.placement), and where
    Withdrawn  a cell an erratum withdrew, and why; never compared

Result files keep their JSON shapes; the experiment that wrote a record turns its leaves into
cells once, when it reads them (as_cell, study.compare.reproduction.record_cells, or an
experiment's own
derived cells). Two cells are compared by `equal` and by nothing else.
"""
import math
from dataclasses import dataclass, field

from study.report.format import TABLE_FIGURES as MARKDOWN_DIGITS
from study.report.format import distinct_figures as distinct_digits
from study.report.format import shorten
from study.report.format import text as format_cell

Scalar = float | int | bool | str | None


@dataclass(frozen=True)
class Value:
    value: Scalar
    lo: float | None = None  # the 95% interval, where the value has one
    hi: float | None = None

    def numbers(self) -> tuple:
        return (self.value,) if self.lo is None else (self.value, self.lo, self.hi)

    def text(self, digits: int | None = MARKDOWN_DIGITS) -> str:
        if self.lo is None:
            return format_cell(self.value, digits)
        return (f"{format_cell(self.value, digits)} [{format_cell(self.lo, digits)}, "
                f"{format_cell(self.hi, digits)}]")


@dataclass(frozen=True)
class Error:
    line: str

    def numbers(self) -> tuple:
        return ()

    def text(self, digits: int | None = MARKDOWN_DIGITS) -> str:
        return self.line


@dataclass(frozen=True)
class Placed:
    values: tuple  # each a Value or an Error, in the order the placements first show them
    where: str  # which value at which placement and position: '0 at fill 0-63; 1 at 0-d'
    # per placement, its runs of (index into values, positions), as study.measure.placement.collapse
    # stores them: what `where` says, kept so that the cell can be read at fewer placements
    positions: tuple = field(default=(), compare=False)

    def places(self) -> list[list[str]]:
        """Per value, where it occurs: [["fill 0-63", "2-D rows"], ["fill 64-66", "0-d"]]; a
        placement whose every position gives the value is named alone."""
        out: list[list[str]] = [[] for _ in self.values]
        for placement, runs in self.positions:
            for i in dict.fromkeys(j for j, _ in runs):
                shown = [pos for j, pos in runs if j == i]
                out[i].append(placement if len(runs) == 1 else f"{placement} {','.join(shown)}")
        return out

    def stored(self) -> dict:
        """The cell as a record stores it (study.measure.placement.collapse)."""
        return {"values": [v.line if isinstance(v, Error) else v.value for v in self.values],
                "where": {p: [list(r) for r in runs] for p, runs in self.positions}}

    def numbers(self) -> tuple:
        return ()

    def values_text(self) -> str:
        """'0 or 1 (placement)': each value, with as many figures as tell them apart."""
        digits = distinct_digits([v.value for v in self.values if isinstance(v, Value)])
        return " or ".join(sorted(v.text(digits) if isinstance(v, Value) else shorten(v.line, 30)
                                  for v in self.values)) + " (placement)"

    def text(self, digits: int | None = MARKDOWN_DIGITS) -> str:
        return f"{self.values_text()} at {self.where}"


@dataclass(frozen=True)
class Withdrawn:
    why: str

    def numbers(self) -> tuple:
        return ()

    def text(self, digits: int | None = MARKDOWN_DIGITS) -> str:
        return f"withdrawn: {self.why}"


Cell = Value | Error | Placed | Withdrawn


def as_cell(stored) -> Cell:
    """A measured value as a record stores it, typed: a string is an error line, a {"values",
    "where"} dict a placement-dependent cell (study.measure.placement.collapse), anything else a
    Value."""
    if isinstance(stored, str):
        return Error(stored)
    if not isinstance(stored, dict):
        return Value(stored)
    values = tuple(as_cell(v) for v in stored["values"])
    positions = tuple((p, tuple((i, pos) for i, pos in runs))
                      for p, runs in stored["where"].items())
    placed = Placed(values, "", positions)
    short = [v.line if isinstance(v, Error) else f"{v.value:g}" for v in values]
    exact = len(set(short)) < len(short)  # equal at 6 digits: show every digit
    where = "; ".join(f"{repr(v.value) if exact and isinstance(v, Value) else short[i]}"
                      f" at {', '.join(places)}"
                      for i, (v, places) in enumerate(zip(values, placed.places())))
    return Placed(values, where, positions)


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
        return (a.lo is None) == (b.lo is None) and _same_number(a.value, b.value, tolerance,
                                                                  zero_sign)
    if isinstance(a, Placed):
        return (a.where == b.where and len(a.values) == len(b.values)
                and all(equal(x, y, zero_sign=zero_sign) for x, y in zip(a.values, b.values)))
    return a == b


def pair_texts(a: Cell, b: Cell) -> tuple[str, str]:
    """Two cells that are compared, with as many figures as it takes to tell them apart."""
    digits = distinct_digits([a.numbers(), b.numbers()])
    return a.text(digits), b.text(digits)

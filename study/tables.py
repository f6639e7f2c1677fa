"""A citable table: an id (a name, never a position), a caption, cells, and its sources.

Experiments build `Table`s from loaded runs; `study.report` numbers and renders them.
"""
import csv
import io
import math
from dataclasses import dataclass, field

from tabulate import tabulate


@dataclass
class Table:
    id: str  # stable name, unique within its experiment
    title: str
    caption: str
    headers: list[str]
    rows: list[list]
    notes: list[str] = field(default_factory=list)  # generated paragraphs under the table


def format_cell(value) -> str:
    """Deterministic text for any cell value; keeps the sign of zero, which matters here."""
    if value is None:
        return "—"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        if math.isnan(value):
            return "nan"
        if math.isinf(value):
            return "inf" if value > 0 else "-inf"
        if value == 0:
            return "-0" if math.copysign(1, value) < 0 else "0"
        return f"{value:.6g}"
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(format_cell(v) for v in value) + "]"
    return str(value)


def _cells(table: Table) -> list[list[str]]:
    return [[format_cell(v) for v in row] for row in table.rows]


def to_markdown(table: Table) -> str:
    escape = lambda s: s.replace("|", "\\|")  # noqa: E731
    rows = [[escape(c) for c in row] for row in _cells(table)]
    headers = [escape(h) for h in table.headers]
    return tabulate(rows, headers, tablefmt="github", disable_numparse=True)


def to_latex(table: Table, number: int, anchor: str) -> str:
    body = tabulate(_cells(table), table.headers, tablefmt="latex_booktabs", disable_numparse=True)
    caption = table.caption.replace("_", r"\_").replace("%", r"\%").replace("#", r"\#")
    return (f"% Table {number}: {table.title}\n\\begin{{table}}[ht]\n\\centering\n"
            f"\\caption{{{caption}}}\n\\label{{tab:{anchor}}}\n{body}\n\\end{{table}}\n")


def to_csv(table: Table) -> str:
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(table.headers)
    writer.writerows(_cells(table))
    return out.getvalue()

"""A citable table: an id (a name, never a position), a caption, cells, and its exports.

Experiments build `Table`s from loaded runs; `study.report` numbers and renders them. A table's
rows are built as dataclasses whose fields are declared with `column(header, key=...)`: the
headers, and the key columns that name a row, come from those fields, never from positions. The
markdown form rounds to 4 significant figures and may be a compact view; the CSV keeps full
precision and, where a table gives `detail`, every row and column behind the compact view.
"""
import csv
import io
import json
import math
from dataclasses import dataclass, field, fields

import numpy as np


MARKDOWN_DIGITS = 4


@dataclass
class Table:
    id: str  # stable name, unique within its experiment
    title: str
    caption: str
    headers: list[str]
    rows: list[list]
    notes: list[str] = field(default_factory=list)  # generated paragraphs under the table
    detail: tuple[list[str], list[list]] | None = None  # the full (headers, rows) for the CSV


def column(header: str | None = None, key: bool = False, **field_options):
    """A field of a table's row dataclass: the column's header, and whether the column names
    the row (key columns lead; rows of several runs with equal keys are the same row). A field
    without a header holds {header: value}, one column each (a column per size): every row of a
    table gives the same headers there."""
    return field(metadata={"header": header, "key": key}, **field_options)


def _columns(row_type) -> list:
    return [f for f in fields(row_type) if "key" in f.metadata]


def key_headers(row_type) -> tuple[str, ...]:
    return tuple(f.metadata["header"] for f in _columns(row_type) if f.metadata["key"])


def _row_headers(row) -> list[str]:
    return [h for f in _columns(row) for h in (
        [f.metadata["header"]] if f.metadata["header"] else getattr(row, f.name))]


def headers(row_type, rows: list = ()) -> list[str]:
    """The headers of rows of `row_type`; columns per size are named by the rows."""
    if not rows:
        return [f.metadata["header"] for f in _columns(row_type) if f.metadata["header"]]
    names = _row_headers(rows[0])
    if any(_row_headers(r) != names for r in rows):
        raise ValueError(f"rows of {row_type.__name__} name different columns")
    return names


def row_cells(row) -> list:
    """A row dataclass's cells, in the order of its columns."""
    return [c for f in _columns(row) for c in (
        [getattr(row, f.name)] if f.metadata["header"] else getattr(row, f.name).values())]


def listed(row_type, rows: list) -> tuple[list[str], list[list]]:
    """(headers, rows as lists): what a Table keeps, from rows of `row_type`."""
    return headers(row_type, rows), [row_cells(r) for r in rows]


def typed_table(table_id: str, title: str, caption: str, row_type, rows: list,
                notes: list[str] = (), detail: tuple | None = None) -> Table:
    """A table of one run, or of no run, from rows of `row_type`."""
    return Table(table_id, title, caption, *listed(row_type, rows), list(notes), detail)


def _float_text(value: float, digits: int | None) -> str:
    if math.isnan(value):
        return "nan"
    if math.isinf(value):
        return "inf" if value > 0 else "-inf"
    if value == 0:
        return "-0" if math.copysign(1, value) < 0 else "0"
    if digits is None:
        return repr(value)
    text = f"{value:.{digits}g}"
    if "e" in text and 1e-4 <= abs(value) < 1e7:  # 23550 reads better than 2.355e+04
        text = np.format_float_positional(float(text), trim="-")
    return text


def shorten(text, width: int) -> str:
    """Text on one line, at most `width` characters, cut at a word boundary with '…' where it
    had to be cut (never in the middle of a word, unless one word is longer than the width)."""
    text = " ".join(str(text).split())
    if len(text) <= width:
        return text
    cut = text[:width - 1]
    space = cut.rfind(" ")
    if space > 0 and text[width - 1] != " ":
        cut = cut[:space]
    return cut.rstrip(" ,;:(") + "…"


def _float_leaves(value) -> list[float]:
    if isinstance(value, float):
        return [value]
    if isinstance(value, (list, tuple)):
        return [x for v in value for x in _float_leaves(v)]
    return []


def distinct_digits(values, digits: int = MARKDOWN_DIGITS) -> int:
    """The fewest significant figures, at least `digits`, at which floats that differ among
    `values` (nested lists too) also print differently: 3.72e-44 and 3.72004e-44 need 6."""
    floats = {format_cell(v, None): v for v in _float_leaves(list(values))}
    for d in range(digits, 18):
        if len({format_cell(v, d) for v in floats.values()}) == len(floats):
            return d
    return 17


def format_cell(value, digits: int | None = MARKDOWN_DIGITS) -> str:
    """Deterministic text for any cell value; keeps the sign of zero, which matters here.
    digits=None keeps full precision (the CSV form)."""
    if value is None:
        return "—" if digits is not None else ""
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        return _float_text(value, digits)
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(format_cell(v, digits) for v in value) + "]"
    return str(value)


def to_markdown(table: Table) -> str:
    """A GitHub table without alignment padding, so that a wide cell widens only its row."""
    def line(cells):
        return "| " + " | ".join(c.replace("|", "\\|").replace("\n", " ") for c in cells) + " |"
    out = [line(table.headers), "|" + "---|" * len(table.headers)]
    out += [line(row_texts(row)) for row in table.rows]
    return "\n".join(out)


def row_texts(row: list) -> list[str]:
    """A row's cells as text, with as many figures as tell its differing values apart."""
    digits = distinct_digits(row)
    return [format_cell(v, digits) for v in row]


def to_csv(table: Table) -> str:
    """Full precision; numbers stay numbers (an empty cell where there is none)."""
    headers, rows = table.detail or (table.headers, table.rows)
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(headers)
    for row in rows:
        writer.writerow([json.dumps(v) if isinstance(v, (list, dict)) else format_cell(v, None)
                         for v in row])
    return out.getvalue()


# --- LaTeX ------------------------------------------------------------------------------

_LATEX_SPECIAL = {"\\": r"\textbackslash{}", "&": r"\&", "%": r"\%", "$": r"\$", "#": r"\#",
                  "_": r"\_", "{": r"\{", "}": r"\}", "~": r"\textasciitilde{}",
                  "^": r"\textasciicircum{}", "<": r"\textless{}", ">": r"\textgreater{}",
                  "|": r"\textbar{}"}
_LATEX_UNICODE = {"−": "$-$", "×": r"$\times$", "÷": r"$\div$", "≤": r"$\leq$", "≥": r"$\geq$",
                  "≠": r"$\neq$", "±": r"$\pm$", "µ": r"$\mu$", "ε": r"$\varepsilon$",
                  "→": r"$\rightarrow$", "∞": r"$\infty$", "²": r"$^2$", "√": r"$\surd$",
                  "✓": r"\checkmark{}", "✗": r"$\times$", "—": "---", "–": "--", "…": r"\ldots{}",
                  "’": "'", "‘": "`", "“": "``", "”": "''", "′": "'", "≈": r"$\approx$",
                  "·": r"$\cdot$", "∂": r"$\partial$", "θ": r"$\theta$", "λ": r"$\lambda$",
                  "Δ": r"$\Delta$", "⁻": "-", "¹": r"$^1$", "⁰": r"$^0$", "⁶": r"$^6$", "⁸": r"$^8$"}


def latex_escape(text: str) -> str:
    """Text that pdflatex (with amssymb for \\checkmark) reads as the characters given:
    every special character escaped, common Unicode symbols mapped, anything else non-ASCII
    replaced by '?' so that the file always compiles."""
    out = []
    for ch in str(text):
        if ch in _LATEX_SPECIAL:
            out.append(_LATEX_SPECIAL[ch])
        elif ch in _LATEX_UNICODE:
            out.append(_LATEX_UNICODE[ch])
        elif ord(ch) < 128:
            out.append(ch)
        else:
            out.append("?")
    return "".join(out)


def to_latex(table: Table, number: int, anchor: str, legend: str = "") -> str:
    """A booktabs table for \\input{} (needs \\usepackage{booktabs, amssymb}); `legend` (the
    runs' labels) ends the caption."""
    cols = "l" * len(table.headers)
    caption = " ".join(part for part in (table.caption, legend) if part)
    lines = [f"% Table {number}: {latex_escape(table.title)}", r"\begin{table}[ht]", r"\centering",
             f"\\caption{{{latex_escape(table.title)}. {latex_escape(caption)}}}",
             f"\\label{{tab:{anchor}}}", f"\\begin{{tabular}}{{{cols}}}", r"\toprule",
             " & ".join(latex_escape(h) for h in table.headers) + r" \\", r"\midrule"]
    lines += [" & ".join(latex_escape(text) for text in row_texts(row)) + r" \\"
              for row in table.rows]
    lines += [r"\bottomrule", r"\end{tabular}", r"\end{table}"]
    return "\n".join(lines) + "\n"


def collapse_rows(rows: list, join: tuple[str, ...], into=None) -> list:
    """Merge row dataclasses that agree in every field but the `join` fields, whose values are
    listed ("float16, bfloat16"): one row for a change seen in several dtypes, modes or inputs.
    `into`, a subclass of the rows' type (one that names those columns in the plural), is the
    merged rows' type; by default they keep theirs."""
    merged: dict[tuple, tuple] = {}
    for row in rows:
        key = tuple(format_cell(getattr(row, f.name), None) for f in fields(row)
                    if f.name not in join)
        first, seen = merged.setdefault(key, (row, {name: [] for name in join}))
        for name in join:
            value = getattr(row, name)
            if not any(format_cell(v, None) == format_cell(value, None) for v in seen[name]):
                seen[name].append(value)
    return [(into or type(row))(**{f.name: getattr(row, f.name) for f in fields(row)} | {
        name: ", ".join(map(format_cell, values)) for name, values in seen.items()})
            for row, seen in merged.values()]

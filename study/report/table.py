"""A citable table: an id, a title, a caption and a pandas frame, written as md, tex and csv.

    >>> t = Table("ties", "Ties", "Largest differences.",
    ...           pd.DataFrame({"dataset": ["seed"], "Δ": [0.0]}))
    >>> markdown(t)
    '| dataset | Δ |\\n|---|---|\\n| seed | 0 |'

A frame's cells stay numbers (an Estimate where a value has an interval) until `markdown` or
`latex` formats them; `csv` writes the tidy listing behind the view at full precision, one
column per quantity (an Estimate column becomes its value, lo, hi and n columns).

A missing cell (None, pd.NA, or a NaN) is '—' in markdown and LaTeX and an empty cell in the CSV,
as pandas' own to_csv writes it: pandas fills a value a row lacks with NaN, so a frame cannot
tell a NaN it was given from one pandas inserted, and a table follows pandas. A NaN that was
measured (a derivative at a NaN input) is shown by the cell type that measured it
(study.compare.cells.Value), or the listing says so in another column. `pd.read_csv(path)` reads a
CSV back: no label is one of pandas' missing-value strings (the NaN probe is "+nan", not "nan").
"""
import io
import math
import re
from collections import Counter
from csv import writer as csv_writer
from itertools import chain
from operator import itemgetter
from dataclasses import dataclass, field, replace

import numpy as np
import pandas as pd

from study.report.format import (Cut, csv_column, error_words, latex_escape, row_texts, shorten,
                                 uncut)
from study.compare.cells import Error
from study.compare.stats import Estimate


@dataclass
class Table:
    id: str  # stable name, unique within its experiment
    title: str
    caption: str
    frame: pd.DataFrame  # the view: its columns are the headers
    listing: pd.DataFrame | None = None  # the tidy rows behind the view, for the CSV
    notes: list[str] = field(default_factory=list)  # paragraphs under the table


def _cells(frame: pd.DataFrame) -> list[list]:
    return [[None if _missing(v) else v for v in row] for row in frame.itertuples(index=False)]


def _missing(value) -> bool:
    return (value is None or value is pd.NA
            or isinstance(value, (float, np.floating)) and math.isnan(value))


def frame(rows: list[dict], columns: list[str] | None = None) -> pd.DataFrame:
    """A frame whose cells stay as given: object dtype, so an int stays an int and a None is
    not turned into a NaN (pandas would); a key a row lacks is None."""
    columns = columns or list(dict.fromkeys(chain.from_iterable(rows)))
    if len(columns) > 1 and all(len(r) == len(columns) for r in rows):
        try:  # every row has every column: the cells picked in C
            cells = list(map(itemgetter(*columns), rows))
        except KeyError:
            cells = [[r.get(c) for c in columns] for r in rows]
    else:
        cells = [[r.get(c) for c in columns] for r in rows]
    return pd.DataFrame(cells, columns=columns, dtype=object)


# a cell that is an error's first line, as the frameworks word it, or the study's own for an API a
# release lacks (study.measure.rule.NotInRelease, by its message)
_ERROR_CELL = re.compile(r"^(?:(?:[A-Z]\w*(?:Error|Exception)|Unsupported|NotInRelease): "
                         r"(?!.* → |.*; \d)|\S+ is not in (?:torch|jax) \S+$)")
# an error inside a composite cell ('RuntimeError: In order to use… → 1', '2.4.1: TypeError: x;
# 2.6.0: 1'): cut ('…') or whole, up to the next change (' → ') or release ('; 2.6.0')
_ERROR_IN_CELL = re.compile(r"(?:^|(?<=: )|(?<=→ )|(?<=; )|(?<=, )|(?<= and ))"
                            r"((?:[A-Z]\w*(?:Error|Exception)|Unsupported|NotInRelease): "
                            r"(?:(?:(?! → |; \d).)*?…|.*?(?= → |; \d|$|(?:, | and )[^,→]+ → ))"
                            r"|[^\s;]+ is not in (?:torch|jax) [^\s;]+(?=; \d|$))")
_ERROR_END = re.compile(r" → |; \d|$|(?:, | and )"  # the next change, release or item
                        r"(?=[A-Z]\w*(?:Error|Exception)\b|Unsupported\b|-?\d|NaN\b)")


def _errors_in(cell: str) -> list[tuple[str, str]]:
    """(as the cell shows it, its whole line) of each error inside a composite cell: a cut one's
    whole from the cell's whole text (a study.report.format.Cut) where it holds it."""
    whole = str.__str__(uncut(cell))
    out = []
    for m in _ERROR_IN_CELL.finditer(str.__str__(cell)):
        shown = m.group(1)
        at = whole.find(shown.rstrip("…")) if shown.endswith("…") else -1
        out.append((shown, whole[at:_ERROR_END.search(whole, at).start()] if at >= 0 else shown))
    return out


def error_coded(table: Table, longest: int = 80, inside: int = 40) -> Table:
    """The table with each error a cell holds whole by a code ('E1'), named in a note under it
    ('Errors: E1: ...'), where an error is repeated or longer than `longest` characters, and
    each error inside a composite cell ('E1 → 1') that is cut there or longer than `inside`: a
    table cell holds no paragraph of an exception, nor its address. The CSV keeps every line."""
    def line(cell):
        text = cell.line if isinstance(cell, Error) else cell if isinstance(cell, str) else None
        return text if text and _ERROR_CELL.search(text) else None
    cells = _cells(table.frame)
    lines = [line(c) for row in cells for c in row]  # in reading order
    errors = [x for x in lines if x]
    inner = {c: _errors_in(c) for row in cells for c in row if isinstance(c, str) and not line(c)}
    cells_with = Counter(full for row in cells for c in row  # every cell that holds it
                         if isinstance(c, str) and c in inner for _, full in set(inner[c]))
    within = {c: [(shown, full) for shown, full in pairs
                  if shown.endswith("…") or len(shown) > inside or cells_with[full] > 1]
              for c, pairs in inner.items()}
    found = [x for row in cells for c in row for x in (
        [line(c)] if line(c) else [full for _, full in within.get(c, [])]
        if isinstance(c, str) else [])]
    inner = {full for pairs in within.values() for _, full in pairs}
    coded = [x for x in dict.fromkeys(found)
             if x in inner or errors.count(x) > 1 or len(x) > longest]
    if not coded:
        return table
    codes = {x: f"E{i}" for i, x in enumerate(coded, 1)}
    def recoded(c):
        if line(c):
            return codes.get(line(c), c)
        if not isinstance(c, str) or not within.get(c):
            return c
        shown = str.__str__(c)
        for part, full in within[c]:
            shown = shown.replace(part, codes[full], 1)
        return shown
    view = table.frame.copy()
    for col in view.columns:
        view[col] = pd.Series([recoded(c) for c in view[col].tolist()], index=view.index,
                              dtype=object)
    note = "Errors: " + "; ".join(f"{code}: {shorten(str.__str__(error_words(x)), longest)}"
                                  for x, code in codes.items())
    listing = table.listing if table.listing is not None else table.frame
    return replace(table, frame=view, listing=listing, notes=table.notes + [note])


def elements(values: np.ndarray) -> list[tuple]:
    """(i, j, float(value)) of each element of a 1-d (j None) or 2-d array, row by row, as
    np.ndenumerate gives them (of a deeper array: its first two indices): a listing's rows."""
    if values.ndim == 1:
        return [(i, None, float(v)) for i, v in enumerate(values.tolist())]
    if values.ndim == 2:
        return [(i, j, float(v)) for i, row in enumerate(values.tolist())
                for j, v in enumerate(row)]
    return [(int(at[0]), int(at[1]) if len(at) > 1 else None, float(v))
            for at, v in np.ndenumerate(values)]


def markdown(table: Table) -> str:
    """A GitHub table without alignment padding, so that a wide cell widens only its row."""
    def line(cells):
        return "| " + " | ".join(str(c).replace("|", "\\|").replace("\n", " ")
                                 for c in cells) + " |"
    rows = [line(row_texts(r)) for r in _cells(table.frame)]
    return "\n".join([line(table.frame.columns), "|" + "---|" * len(table.frame.columns)] + rows)


def latex(table: Table, number: int, anchor: str, legend: str = "") -> str:
    """A booktabs table for \\input{} (needs \\usepackage{booktabs, amssymb})."""
    caption = " ".join(p for p in (table.caption, legend) if p)
    lines = [f"% Table {number}: {latex_escape(table.title)}", r"\begin{table}[ht]", r"\centering",
             f"\\caption{{{latex_escape(table.title)}. {latex_escape(caption)}}}",
             f"\\label{{tab:{anchor}}}", f"\\begin{{tabular}}{{{'l' * len(table.frame.columns)}}}",
             r"\toprule", " & ".join(latex_escape(h) for h in table.frame.columns) + r" \\",
             r"\midrule"]
    lines += [" & ".join(latex_escape(c) for c in row_texts(r)) + r" \\"
              for r in _cells(table.frame)]
    return "\n".join(lines + [r"\bottomrule", r"\end{tabular}", r"\end{table}"]) + "\n"


_ESTIMATE_PARTS = (("value", ""), ("lo", " lo"), ("hi", " hi"), ("n", " n"))


def _estimate_part(values: list, part: str) -> list:
    return [getattr(v, part) if isinstance(v, Estimate) else (v if part == "value" else None)
            for v in values]


def _holds_estimates(values: list) -> bool:
    return any(issubclass(kind, Estimate) for kind in set(map(type, values)))


def tidy(frame: pd.DataFrame) -> pd.DataFrame:
    """Every Estimate column as four: the value, lo, hi and n, each a number."""
    out = {}
    for name in frame.columns:
        values = list(frame[name])
        if _holds_estimates(values):
            for part, suffix in _ESTIMATE_PARTS:  # object: an n stays an int beside a None
                out[f"{name}{suffix}"] = pd.Series(_estimate_part(values, part), frame.index,
                                                   dtype=object)
        else:
            out[name] = frame[name]
    return pd.DataFrame(out, index=frame.index) if out else frame


def csv(table: Table) -> str:
    """The listing (or the view), tidy (as `tidy` splits it), at full precision: each column's
    cells as text by one formatter (study.report.format.csv_column), written as Python's csv
    writer writes them where pandas' to_csv calls it (minimal quoting, "\n" line ends)."""
    frame = table.listing if table.listing is not None else table.frame
    header, columns = [], []
    for i, name in enumerate(frame.columns):
        values = frame.iloc[:, i].tolist()
        kinds = set(map(type, values))
        if Cut in kinds:  # a cell cut for the markdown: the CSV holds its whole
            values = list(map(uncut, values))
            kinds = set(map(type, values))
        if any(issubclass(kind, Estimate) for kind in kinds):
            for part, suffix in _ESTIMATE_PARTS:
                header.append(f"{name}{suffix}")
                columns.append(csv_column(_estimate_part(values, part)))
        else:
            header.append(name)
            columns.append(csv_column(values, kinds))
    out = io.StringIO()
    rows = csv_writer(out, lineterminator="\n")
    rows.writerow(header)
    if len(columns) > 1 and len(frame):
        out.write("\n".join(map(",".join, zip(*map(_quoted, columns)))) + "\n")
    elif columns:  # a row of one field: the writer quotes it where it is empty
        rows.writerows(zip(*columns))
    else:  # rows of no column: one empty line each, as to_csv writes them
        out.write("\n" * len(frame))
    return out.getvalue()


def _quoted(texts: list[str]) -> list[str]:
    """Each text as the csv writer writes it among several fields: quoted where it must be, by
    the writer itself, once per distinct text (a listing repeats its texts row after row)."""
    line = io.StringIO()
    writer = csv_writer(line, lineterminator="\n")
    quoted = {}
    for text in set(texts):
        line.seek(0)
        line.truncate()
        writer.writerow((text, ""))  # the text, the delimiter, an empty field, the line end
        if line.getvalue()[:-2] != text:
            quoted[text] = line.getvalue()[:-2]
    return list(map(quoted.get, texts, texts)) if quoted else texts

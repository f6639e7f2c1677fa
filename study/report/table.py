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
import math
from itertools import chain
from operator import itemgetter
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from study.report.format import csv_column, latex_escape, row_texts
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


def tidy(frame: pd.DataFrame) -> pd.DataFrame:
    """Every Estimate column as four: the value, lo, hi and n, each a number."""
    out = {}
    for name in frame.columns:
        values = list(frame[name])
        if any(issubclass(kind, Estimate) for kind in set(map(type, values))):
            for part, suffix in (("value", ""), ("lo", " lo"), ("hi", " hi"), ("n", " n")):
                out[f"{name}{suffix}"] = pd.Series(  # object: an n stays an int beside a None
                    [getattr(v, part) if isinstance(v, Estimate) else
                     (v if part == "value" else None) for v in values], frame.index, dtype=object)
        else:
            out[name] = frame[name]
    return pd.DataFrame(out, index=frame.index) if out else frame


def csv(table: Table) -> str:
    """The listing (or the view), tidy, at full precision: each column's cells as text by one
    formatter (study.report.format.csv_column), written by pandas."""
    frame = tidy(table.listing if table.listing is not None else table.frame)
    texts = pd.DataFrame({i: csv_column(frame.iloc[:, i]) for i in range(frame.shape[1])},
                         index=range(len(frame)), dtype=object)
    texts.columns = frame.columns
    return texts.to_csv(index=False, lineterminator="\n")

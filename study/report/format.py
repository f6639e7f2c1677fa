"""The one number formatter: every number in the report becomes text here, and nowhere else.

    >>> text(-0.0), text(0.009999999776482582), text(Estimate(1.0036, 1.001, 1.007, 20))
    ('-0', '0.01', '1.004 [1.001, 1.007]')
    >>> text(Estimate(4.136, 3.162, 5.174)), text(Estimate(152.1, 120.8, 286.3), 3)
    ('4.1 [3.2, 5.2]', '150 [120, 290]')
    >>> text(Estimate(0.9997, 0.9919, 1.009)), text(Estimate(4, 1.108, 9.719))
    ('1.000 [0.992, 1.009]', '4 [1.1, 9.7]')

A value with an interval prints, in tables and prose alike, to the digit the interval's width
determines (its two leading digits) and never past 4 significant figures (`interval_text`).
Other numbers: tables print 4 significant figures, more where two values in a row would
otherwise print alike; prose prints 3. The sign of zero is kept. CSVs keep full precision
(`csv_value`), a whole number without '.0' ('1', '-38', '0' alike). An error line prints as
words (`error_words`).
"""
import dataclasses
import json
import math
import re
import textwrap

import numpy as np
import pandas as pd

from study.compare.cells import Error, Placed, Value, Withdrawn
from study.compare.stats import Estimate

TABLE_FIGURES = 4
PROSE_FIGURES = 3
WIDTH = 100  # prose is wrapped to this width for reading in a terminal (markdown joins the lines)


def anchor(experiment: str, table_id: str) -> str:
    return f"{experiment}-{table_id}".replace("_", "-")


def heading(level: int, name: str, words: str) -> str:
    """'### words <a id="name"></a>': a heading that a link can name, on one line."""
    return "#" * level + f' {words} <a id="{name}"></a>'


def wrap(paragraph: str, indent: str = "") -> str:
    return textwrap.fill(paragraph, WIDTH, subsequent_indent=indent, break_long_words=False,
                         break_on_hyphens=False)


def number(value: float, figures: int | None = TABLE_FIGURES) -> str:
    """A float as text; figures=None keeps full precision (repr)."""
    if math.isnan(value):  # IEEE's name, as pandas and R read it back; never Python's "nan"
        return "NaN"
    if math.isinf(value):
        return "inf" if value > 0 else "-inf"
    if value == 0:
        return "-0" if math.copysign(1, value) < 0 else "0"
    if figures is None:
        return repr(float(value))
    out = f"{value:.{figures}g}"
    if "e" in out and 1e-4 <= abs(value) < 1e7:  # 23550 reads better than 2.355e+04
        out = np.format_float_positional(float(out), trim="-")
    return out


def text(value, figures: int | None = TABLE_FIGURES) -> str:
    """Any cell or quoted value as text: None is '—', a bool yes or no, an Estimate its value
    with its interval in brackets (or alone where it has none), a list its items separated by
    commas, a matrix its rows by semicolons ('2, 4, 6; 8, 10, 12'): in the report, brackets are
    intervals' alone and a reader never meets Python's list literal (figures=None, full
    precision for data, keeps the brackets)."""
    if value is None:
        return "—"
    if isinstance(value, (bool, np.bool_)):
        return "yes" if value else "no"
    if isinstance(value, Estimate):
        if value.lo is None:
            return text(value.value, figures)
        return interval_text(value.value, value.lo, value.hi, figures) + (
            " (saturated)" if value.saturated else "")
    if isinstance(value, (float, np.floating)):
        return number(float(value), figures)
    if isinstance(value, (int, np.integer)):
        return str(int(value))
    if isinstance(value, (list, tuple, np.ndarray)):
        if figures is None:  # full precision is data (a key, the check's details): bracketed
            return "[" + ", ".join(text(v, figures) for v in value) + "]"
        nested = any(isinstance(v, (list, tuple, np.ndarray)) for v in value)
        return ("; " if nested else ", ").join(text(v, figures) for v in value)
    if isinstance(value, Placed):  # its values, marked as placement's
        return placed_values_text(value)
    if isinstance(value, (Value, Error, Withdrawn)):
        return cell_text(value, figures)
    if dataclasses.is_dataclass(value) or isinstance(value, dict):  # never print a repr
        raise TypeError(f"no text form for a {type(value).__name__} cell: format its fields")
    return str(value) if figures is None else error_words(str(value))


# where a quoted error starts quoting an object's repr: GradTrackingTensor(lvl=1, value=...,
# UserDefinedClassVariable(<class '...'>), a call's arguments *(...)
_REPR_START = re.compile("|".join((r"\(\*\(", r"\b\w+\((?:lvl|value)=", r"<class '",
                                   r"\b\w+Variable\(")))
# the study's own exception for an API a release lacks (study.measure.rule.NotInRelease): its
# message says it all
_NOT_IN_RELEASE = re.compile(r"\bNotInRelease: ")


def error_words(line: str) -> str:
    """An error line (or any text) as the report prints it: the study's NotInRelease by its
    message alone, and a message cut where it starts quoting an object's repr ('…')."""
    line = _NOT_IN_RELEASE.sub("", line)
    cut = _REPR_START.search(line)
    return line if cut is None else Cut(line[:cut.start()].rstrip(" ,;:(") + "…", line)


def interval_text(value: float, lo: float, hi: float, figures: int | None = TABLE_FIGURES) -> str:
    """'4.1 [3.2, 5.2]': the value and its interval to one decimal place, the last that the
    interval's width determines (the place of the width's second digit), and never past
    `figures` significant figures (at least 4, so prose and tables print one text); an interval
    of no width prints to `figures`. figures=None: full precision (data)."""
    if figures is None:
        return f"{number(value, None)} [{number(lo, None)}, {number(hi, None)}]"
    ends = [v for v in (value, lo, hi) if math.isfinite(v)]
    cap = max(figures, TABLE_FIGURES)
    if len(ends) < 3 or not hi > lo:  # no finite width determines a digit: the value's figures
        return f"{number(value, cap)} [{number(lo, cap)}, {number(hi, cap)}]"
    largest = max(abs(v) for v in ends)
    place = (math.floor(math.log10(largest)) - cap + 1) if largest else 0
    place = max(place, math.floor(math.log10(hi - lo)) - 1)
    return f"{_to_place(value, place)} [{_to_place(lo, place)}, {_to_place(hi, place)}]"


def zeros_kept(value: float, figures: int) -> str:
    """`value` to `figures` significant figures, its trailing zeros kept, since they are figures
    too ('2.0', '0.030', '6.0e-06'); a value that needs an exponent where number() writes none
    (1e-4 to 1e7) as number() writes it."""
    shown = f"{value:#.{figures}g}"
    if "e" in shown and 1e-4 <= abs(value) < 1e7:
        return number(value, figures)
    return shown.replace(".e", "e").rstrip(".")


def _to_place(value: float, place: int) -> str:
    """A value rounded to 10**place, its zeros to that place kept ('1.000 [0.992, 1.009]': the
    interval determines them) but for a whole number, a count ('4 [1.1, 9.7]'); the sign of a
    zero kept only where the value is a zero."""
    if value == 0:
        return number(value)
    rounded = round(value, -place)
    if rounded == 0:
        return "0"
    if not 1e-4 <= abs(rounded) < 1e7:  # as number() writes such magnitudes, zeros kept
        return zeros_kept(rounded, max(1, math.floor(math.log10(abs(rounded))) - place + 1))
    out = f"{rounded:.{max(0, -place)}f}"
    if value == int(value) and "." in out:
        out = out.rstrip("0").rstrip(".")
    return out


def cell_text(cell, figures: int | None = TABLE_FIGURES) -> str:
    """A study cell (study.compare.cells) as text: a value with its interval where it has one,
    an error's line, a placement-dependent cell's values and where each occurs."""
    if isinstance(cell, Value):
        if cell.lo is None:
            return text(cell.value, figures)
        return interval_text(cell.value, cell.lo, cell.hi, figures)
    if isinstance(cell, Error):
        return cell.line if figures is None else error_words(cell.line)
    if isinstance(cell, Withdrawn):
        return f"withdrawn ({cell.why})"
    return f"{placed_values_text(cell)} at {cell.where}"


def placed_values_text(cell: Placed) -> str:
    """'0 or 1 (placement)': each value, with as many figures as tell them apart."""
    digits = distinct_figures([v.value for v in cell.values if isinstance(v, Value)])
    return " or ".join(sorted(cell_text(v, digits) if isinstance(v, Value) else shorten(v.line, 30)
                              for v in cell.values)) + " (placement)"


def pair_texts(a, b) -> tuple[str, str]:
    """Two cells that are compared, with as many figures as it takes to tell them apart."""
    digits = distinct_figures([a.numbers(), b.numbers()])
    return cell_text(a, digits), cell_text(b, digits)


def _floats(value) -> list[float]:
    if isinstance(value, Estimate):  # its bounds need not print apart from other cells
        return [value.value]
    if isinstance(value, (float, np.floating)):
        return [float(value)]
    if isinstance(value, (list, tuple)):
        return [x for v in value for x in _floats(v)]
    return []


def distinct_figures(values, figures: int = TABLE_FIGURES) -> int:
    """The fewest significant figures, at least `figures`, at which floats that differ among
    `values` also print differently: 3.72e-44 and 3.72004e-44 need 6."""
    floats = {number(v, None): v for v in _floats(list(values))}
    for d in range(figures, 18):
        if len({number(v, d) for v in floats.values()}) == len(floats):
            return d
    return 17


def row_texts(row) -> list[str]:
    """A table row's cells as text, with as many figures as tell its differing values apart."""
    figures = distinct_figures(row)
    return [text(v, figures) for v in row]


def csv_value(value):
    """A cell for a CSV: numbers at full precision, lists as JSON; None and NaN empty, as
    pandas' to_csv writes them (study.report.table says why a NaN is missing)."""
    if value is None or isinstance(value, (float, np.floating)) and math.isnan(value):
        return ""
    if isinstance(value, (bool, np.bool_)):
        return "yes" if value else "no"
    if isinstance(value, (float, np.floating)):
        return whole(number(float(value), None))
    if isinstance(value, (list, tuple, dict)):
        return json.dumps(value)
    if isinstance(value, (Value, Error, Placed, Withdrawn)):
        return whole(cell_text(value, None)) if not isinstance(value, Error) else value.line
    if dataclasses.is_dataclass(value):
        raise TypeError(f"no CSV form for a {type(value).__name__} cell: give its fields columns")
    return str(value)


def whole(text: str) -> str:
    """A number's text without '.0' where it is whole ('1.0' → '1', '-38.0' → '-38'), in
    running text too ('1.0 or 0 (placement)'), so a CSV writes every whole number one way."""
    return _POINT_ZERO.sub(r"\1", text)


_POINT_ZERO = re.compile(r"(?<![\w.+-])(-?\d+)\.0(?![\w.])")
_NONE = type(None)
# repr and str texts that csv_value writes otherwise: a missing cell is empty, a whole number
# has no ".0"
_FLOAT_TEXTS = {"nan": "", "0.0": "0", "-0.0": "-0"}
_INT_TEXTS = {"None": ""}
_BOOL_TEXTS = {True: "yes", False: "no", None: ""}


def csv_column(values, kinds: set | None = None) -> list[str]:
    """A column's cells as csv_value writes each, the formatter chosen once for the column by
    the types it holds (`kinds`, where the caller has them): a column of floats, ints, bools or
    strings (each with Nones) is written by one C-level pass, without a test per cell. None,
    pd.NA and NaN are empty cells."""
    values = list(values)
    kinds = set(map(type, values)) if kinds is None else kinds
    if kinds <= {str}:
        return values
    if kinds <= {float, np.float64, np.float32, _NONE}:
        return _float_texts(values)
    if kinds <= {int, np.int64, _NONE}:
        texts = list(map(str, values))
        return list(map(_INT_TEXTS.get, texts, texts))
    if kinds <= {bool, np.bool_, _NONE}:
        return list(map(_BOOL_TEXTS.__getitem__, values))
    if kinds <= {str, _NONE}:
        return ["" if v is None else v for v in values]
    if kinds <= {str, float, _NONE}:
        return [v if v.__class__ is str else _csv_float(v) for v in values]
    return ["" if _missing(v) else csv_value(v) for v in values]


def _float_texts(values: list) -> list[str]:
    # each distinct float (by its bits: -0.0 is not 0.0) written once: a column repeats its
    # values; repr is number(value, None) but for NaN (None is one here) and zeros
    bits = np.array(values, dtype=np.float64).view(np.int64)
    distinct, where = np.unique(bits, return_inverse=True)
    texts = [whole(t) for t in map(repr, distinct.view(np.float64).tolist())]
    texts = np.array(list(map(_FLOAT_TEXTS.get, texts, texts)), dtype=object)
    return texts[where].tolist()


def _csv_float(value) -> str:
    # csv_value of a float or None, without its type tests
    if value is None or value != value:
        return ""
    return number(value, None) if value == 0 else whole(repr(value))


def _missing(value) -> bool:
    return (value is None or value is pd.NA
            or isinstance(value, (float, np.floating)) and math.isnan(value))


def experiment_words(name: str) -> str:
    """An experiment as the report's words name it ('two layer' for two_layer): its key is the
    results folder's and the CSVs' name, code a reader does not need."""
    return name.replace("_", " ")


class Cut(str):
    """A text cut for a markdown cell ('…', 'and 3 more') that keeps its whole: a CSV writes
    the whole (study.report.table.csv), since a CSV is read whole, never at a glance."""
    whole: str

    def __new__(cls, shown: str, whole: str | None = None):
        out = super().__new__(cls, shown)
        out.whole = getattr(whole, "whole", whole) if whole is not None else str.__str__(out)
        return out

    def __str__(self):  # str(cut) keeps the whole too
        return self

    def __reduce__(self):  # pickled between processes as both texts
        return Cut, (str.__str__(self), self.whole)


def uncut(value):
    """A Cut's whole text; any other value as it is."""
    return value.whole if isinstance(value, Cut) else value


def shorten(value, width: int) -> str:
    """Text on one line, at most `width` characters, cut at a word boundary with '…' (a Cut,
    which keeps the whole line)."""
    out = " ".join(str(uncut(value)).split())
    if len(out) <= width:
        return out
    cut = out[:width - 1]
    space = cut.rfind(" ")
    if space > 0 and out[width - 1] != " ":
        cut = cut[:space]
    return Cut(cut.rstrip(" ,;:(") + "…", out)


def names(items, most: int | None = None) -> str:
    """'a, b and c' (or 'a, b and 3 more' past `most`, never 'and 1 more', a Cut that keeps
    every name): names in prose."""
    items = list(dict.fromkeys(items))
    if not items:
        return "none"
    def listed(these):
        return these[0] if len(these) == 1 else ", ".join(these[:-1]) + " and " + these[-1]
    every = listed([uncut(i) for i in items])
    if most is not None and len(items) > most + 1:
        items = items[:most] + [f"{len(items) - most} more"]
    shown = listed(items)
    return Cut(shown, every) if shown != every else shown


_LATEX_SPECIAL = {"\\": r"\textbackslash{}", "&": r"\&", "%": r"\%", "$": r"\$", "#": r"\#",
                  "_": r"\_", "{": r"\{", "}": r"\}", "~": r"\textasciitilde{}",
                  "^": r"\textasciicircum{}", "<": r"\textless{}", ">": r"\textgreater{}",
                  "|": r"\textbar{}"}
_LATEX_UNICODE = {"−": "$-$", "×": r"$\times$", "÷": r"$\div$", "≤": r"$\leq$", "≥": r"$\geq$",
                  "≠": r"$\neq$", "±": r"$\pm$", "µ": r"$\mu$", "ε": r"$\varepsilon$",
                  "→": r"$\rightarrow$", "†": r"$\dagger$", "∞": r"$\infty$", "²": r"$^2$",
                  "√": r"$\surd$",
                  "✓": r"\checkmark{}", "✗": r"$\times$", "—": "---", "–": "--",
                  "…": r"\ldots{}",
                  "’": "'", "‘": "`", "“": "``", "”": "''", "′": "'", "≈": r"$\approx$",
                  "·": r"$\cdot$", "∂": r"$\partial$", "θ": r"$\theta$", "λ": r"$\lambda$",
                  "Δ": r"$\Delta$", "⁻": "-", "¹": r"$^1$", "⁰": r"$^0$", "⁶": r"$^6$",
                  "⁸": r"$^8$"}


class _LatexTable(dict):
    """latex_escape's table for str.translate: each character to its escape, its Unicode
    mapping, itself (ASCII) or '?', worked out on first sight of the character."""

    def __missing__(self, code: int) -> str:
        ch = chr(code)
        self[code] = (_LATEX_SPECIAL.get(ch) or _LATEX_UNICODE.get(ch)
                      or (ch if code < 128 else "?"))
        return self[code]


_LATEX_TABLE = _LatexTable()


def latex_escape(value: str) -> str:
    """Text that pdflatex (with amssymb) reads as the characters given: specials escaped,
    common Unicode mapped, anything else non-ASCII replaced by '?' so the file compiles."""
    return str(value).translate(_LATEX_TABLE)

"""No cell of the report or of a CSV holds what only Python prints: a repr, the string 'nan', a
run label or a size in a CSV header, a list in a CSV cell. Checked on hand-made frames, and on
the committed report rendered once per session (tests/conftest.py)."""
import csv as csvlib
import io
import json
import re
from dataclasses import dataclass

import pandas as pd
import pytest

from study.compare.cells import Placed, Value
from study.report import Table, csv, frame, markdown, text
from tests.conftest import csv_cells

# a dataclass or named tuple printed with its field names: Name(a=..., b=...), or a field =None
# (a rule's own name, as ReLUWithConvention(c=0), has one argument and no None)
REPR = re.compile(r"\b[A-Z]\w*\(\w+=[^()]*?, \w+=|\b\w+=None\b")
MISSING_REPRS = {"nan", "None", "<NA>", "NaT"}  # what str() makes of a missing value
RUN_LABEL = re.compile(r"\b[CG]\d+\b")
SIZE = re.compile(r"(?<!per )10\^\d|\b1e\d|\d+ elements")  # "rate per 10^4 images" is a unit


def markdown_cells(markdown_text: str):
    """(header, cell) of every cell of every table in a markdown text."""
    header = None
    for line in markdown_text.splitlines():
        if not line.startswith("|"):
            header = None
            continue
        cells = [c.strip() for c in re.split(r"(?<!\\)\|", line)[1:-1]]
        if header is None:
            header = cells
        elif not line.startswith("|---"):
            yield from zip(header, cells)


# an error line is quoted as the framework printed it, reprs included: "TorchRuntimeError: Failed
# running call_function f(*(FakeTensor(..., size=(4,)),), **{})" is measured text, not ours
ERROR_LINE = re.compile(r"\b[A-Za-z]\w*(Error|Exception|Unsupported): [^;|]*")


def _ours(cell: str) -> str:
    return ERROR_LINE.sub("", cell)


def bad_markdown_cells(markdown_text: str) -> list[str]:
    return [cell for header, cell in markdown_cells(markdown_text)
            if REPR.search(_ours(cell)) or cell in MISSING_REPRS]


def bad_csv(content: str) -> list[str]:
    return bad_csv_cells(*csv_cells(content))


def bad_csv_cells(header: list[str], cells: list[str]) -> list[str]:
    """bad_csv of a CSV's header and its distinct cells (tests/conftest.py)."""
    problems = [f"header {h!r}" for h in header if RUN_LABEL.search(h) or SIZE.search(h)]
    for cell in cells:
        if cell in MISSING_REPRS or REPR.search(_ours(cell)):
            problems.append(repr(cell[:60]))
        elif cell[:1] in "[{" and _json(cell) is not None:
            problems.append(f"{cell[:60]!r} (a list in a cell)")
    return problems


def _json(cell: str):
    try:
        parsed = json.loads(cell)
    except ValueError:
        return None
    return parsed if isinstance(parsed, (list, dict)) else None


def test_a_missing_value_is_a_dash_in_markdown_and_an_empty_cell_in_the_csv():
    # None, pd.NA, and the NaN pandas fills in for a key a row lacks
    filled = pd.DataFrame([{"rule": "a", "ratio": 1.5}, {"rule": "b"}])
    assert filled["ratio"].isna().tolist() == [False, True]  # pandas inserted a NaN
    t = Table("t", "T", "", filled, listing=None)
    assert markdown(t).splitlines()[2:] == ["| a | 1.5 |", "| b | — |"]
    assert csv(t) == "rule,ratio\na,1.5\nb,\n"
    given = Table("t", "T", "", frame([{"x": None, "y": pd.NA, "n": 3}, {"x": 1.0, "n": None}]))
    assert csv(given) == "x,y,n\n,,3\n1,,\n"  # n stays an int, a whole float writes no ".0"
    assert not bad_csv(csv(given)) and not bad_markdown_cells(markdown(given))


def test_a_cell_type_prints_its_text_and_a_bare_dataclass_refuses_to_print():
    @dataclass
    class Pair:
        a: float
        b: float
    placed = Placed((Value(0.0), Value(-1.401298464324817e-45)),
                    (("fill", ((0, "0-63"), (1, "64-66"))),))
    t = Table("t", "T", "", frame([{"cell": Value(float("nan")), "placed": placed}]))
    assert markdown(t).splitlines()[2] == "| NaN | -1.401e-45 or 0 (placement) |"
    assert not bad_markdown_cells(markdown(t))
    with pytest.raises(TypeError, match="no text form for a Pair cell"):
        text(Pair(1.0, 2.0))
    assert REPR.search(repr(Pair(1.0, 2.0))) and REPR.search(repr(placed))  # what the guard sees


def test_the_guards_catch_what_the_old_report_printed():
    # Table 13's F.celu row, and timing-cost.csv's header and cells, as they were rendered
    assert bad_markdown_cells("| op | by release |\n|---|---|\n| F.celu | torch 2.13.0+cpu: "
                              "Placed(values=(Value(value=0.0, lo=None, hi=None),)) |\n")
    assert bad_markdown_cells("| rule | x |\n|---|---|\n| a | nan |\n")
    # the NaN probe's label was "nan" too, which pandas reads back as a missing value
    assert bad_markdown_cells("| input | x |\n|---|---|\n| nan | 1 |\n")
    assert not bad_markdown_cells("| input | x |\n|---|---|\n| +nan | 1 |\n")
    assert bad_csv("rule,C1 eager 10^6 lo\na,1\n") == ["header 'C1 eager 10^6 lo'"]
    assert len(bad_csv('rule,x,y\na,nan,"[""-0.0"", ""+0.0""]"\n')) == 2


def test_no_cell_of_the_committed_report_holds_a_repr_or_nan(committed):
    found = {rel: bad_markdown_cells(content)[:3] for rel, content in committed.items()
             if rel.endswith(".md")}
    assert not {rel: cells for rel, cells in found.items() if cells}


def test_every_committed_csv_is_tidy(committed_csv_cells):
    # long form: no run label or size in a header, no missing value spelled out, no list in a cell
    found = {rel: bad_csv_cells(*cells)[:3] for rel, cells in committed_csv_cells.items()}
    assert not {rel: problems for rel, problems in found.items() if problems}


def test_an_error_line_quoted_as_measured_is_not_a_repr_of_ours():
    quoted = "2.4.1: TorchRuntimeError: Failed running call_function f(*(T(..., size=(4,)), x=None)"
    assert not bad_markdown_cells(f"| by release |\n|---|\n| {quoted} |\n")
    assert bad_markdown_cells("| op |\n|---|\n| Value(value=0.0, lo=None, hi=None) |\n")


def test_a_csv_column_is_written_as_each_of_its_cells_alone():
    # csv() formats a column at once (study.report.format.csv_column); the oracle is csv_value
    # cell by cell through Python's csv writer, as every CSV was written before
    import numpy as np
    from study.compare.cells import Error
    from study.compare.stats import Estimate
    from study.report.format import csv_column, csv_value
    from study.report.table import _missing, tidy
    columns = {
        "floats": [0.1, -0.0, 0.0, float("nan"), float("inf"), -float("inf"), 1e16, None],
        "numpy floats": [np.float64(2.5), np.float32(0.1), np.float64(-0.0), None, 1.0, 3.0,
                         np.float64("nan"), 7.25],
        "ints": [1, np.int64(-2), None, 10 ** 20, 0, 3, 4, 5],
        "texts": ["a,b", 'say "x"', "two\nlines", "", "+nan", "é", "-0", "x"],
        "mixed": [True, np.bool_(False), 1, 2.5, "s", [1.0, None], {"k": 1}, pd.NA],
        "cells": [Value(1.5), Value(-0.0), Error("ValueError: x"), Value(2.0, 1.0, 3.0),
                  Estimate(1.0, 0.5, 1.5, 20), Estimate(2.0), None, Value("label")],
    }
    table = Table("t", "T", "", frame([dict(zip(columns, row)) for row in zip(*columns.values())]))
    for name, values in columns.items():
        if name != "cells":  # an Estimate column is split into four by tidy() first
            assert csv_column(values) == ["" if _missing(v) else csv_value(v) for v in values]
    out = io.StringIO()
    writer = csvlib.writer(out, lineterminator="\n")
    listing = tidy(table.frame)
    writer.writerow(listing.columns)
    for row in listing.itertuples(index=False):
        writer.writerow(["" if _missing(v) else csv_value(v) for v in row])
    assert csv(table) == out.getvalue()
    assert csv(Table("e", "E", "", frame([], ["a", "b"]))) == "a,b\n"
    # a row of one empty field is the one the writer quotes as it stands alone
    assert csv(Table("o", "O", "", frame([{"a": ""}, {"a": "x,y"}]))) == 'a\n""\n"x,y"\n'


def test_a_frame_keeps_every_cell_as_given_with_or_without_a_key_in_every_row():
    full = [{"a": 1, "b": None, "c": [1.0]}, {"a": 2.5, "b": "x", "c": {"k": 1}}]
    ragged = [{"a": 1}, {"b": 2, "a": 3}, {"c": None, "b": 4, "a": 5}]
    same_size = [{"a": 1, "b": 2}, {"b": 3, "c": 4}]  # as many keys, not the same ones
    for rows, columns in ((full, None), (ragged, None), (same_size, None), (full, ["c", "a"])):
        got = frame(rows, columns)
        names = columns or list(dict.fromkeys(k for r in rows for k in r))
        assert list(got.columns) == names
        assert [[type(v) for v in row] for row in got.values.tolist()] == [
            [type(r.get(c)) for c in names] for r in rows]
        assert got.values.tolist() == [[r.get(c) for c in names] for r in rows]


def test_an_error_inside_a_composite_cell_is_coded_as_a_whole_cell_error_is():
    # review 12: Table 10's "RuntimeError: In order to use… → 1" and Table 11's whole PyTorch
    # error, its address included, inside "2.4.1–2.5.1: ...; 2.6.0–2.15.0: 1"
    from study.report.format import Cut, shorten
    from study.report.table import error_coded
    whole = ("RuntimeError: In order to use an autograd.Function with functorch transforms "
             "(vmap, grad), it must override the setup_context staticmethod")
    cut = Cut("RuntimeError: In order to use… → 1 and 0 → 1", f"{whole} → 1 and 0 → 1")
    table = error_coded(Table("t", "T", "", frame([{"change": cut},
                                                   {"change": f"2.4.1: {whole}; 2.6.0: 1"},
                                                   {"change": "0 → 1"}])))
    assert table.frame["change"].tolist() == ["E1 → 1 and 0 → 1", "2.4.1: E1; 2.6.0: 1", "0 → 1"]
    assert table.notes == [f"Errors: E1: {shorten(whole, 80)}"]
    assert csv(table).splitlines()[1].startswith('"RuntimeError: In order to use an autograd')


def test_an_error_code_means_one_error_across_the_report():
    # review 12: E1 was "Unsupported functorch tracing attempt" in Table 5 and "RuntimeError: In
    # order to use…" in Table 15
    from study.report.document import Document
    doc = Document([], {}, {}, False)
    first = doc.coded(Table("a", "A", "", frame([{"x": "✗E1"}, {"x": "✗E2"}]), notes=[
        "Errors: E1: Unsupported: functorch tracing; E2: RuntimeError: In order to use…"]))
    then = doc.coded(Table("b", "B", "", frame([{"x": "E1"}, {"x": "E2 → 1"}]), notes=[
        "Errors: E1: TypeError: no jvp; E2: RuntimeError: In order to use an autograd.Function"]))
    assert first.frame["x"].tolist() == ["✗E1", "✗E2"]
    assert then.frame["x"].tolist() == ["E3", "E2 → 1"]  # the same error keeps its code
    assert then.notes == ["Errors: E3: TypeError: no jvp; E2: RuntimeError: In order to use an "
                          "autograd.Function"]

"""The one cell type (study.compare.cells) on hand-made cells: what counts as the same, the rows a
table stores it as and its one reader, and reading a cell at fewer placements."""
import math

from study.compare.cells import (Error, Placed, Value, Withdrawn, collapse, equal, from_rows,
                                 stored_rows)
from study.report.format import cell_text, pair_texts
from study.runs.tables import rows_of, to_arrow

FILL = (("fill", ((0, "0-63"), (1, "64-66"))),)


def test_values_compare_exactly_with_nan_equal_and_the_zero_sign_only_when_asked():
    nan = float("nan")
    assert equal(Value(nan), Value(nan)) and not equal(Value(nan), Value(0.0))
    assert equal(Value(-0.0), Value(0.0))  # as a porting user compares values
    assert not equal(Value(-0.0), Value(0.0), zero_sign=True)  # as releases are compared
    assert equal(Value(-0.0), Value(-0.0), zero_sign=True)
    # 1.2 and 1.0 differ by 20%: within a 25% tolerance, not within 10%
    assert equal(Value(1.2), Value(1.0), 0.25) and not equal(Value(1.2), Value(1.0), 0.10)


def test_intervals_meet_within_the_tolerance_and_other_types_never_equal_a_value():
    # [1.9, 2.1] and [2.5, 2.7]: 2.1 x 1.25 = 2.625 >= 2.5, so they meet within 25%
    assert equal(Value(2.0, 1.9, 2.1), Value(2.6, 2.5, 2.7), 0.25)
    assert not equal(Value(2.0, 1.9, 2.1), Value(2.6, 2.5, 2.7), 0.1)  # 2.31 < 2.5
    assert not equal(Error("ValueError: 0"), Value("ValueError: 0"))
    assert not equal(Withdrawn("w"), Value(1.0))
    a = Placed((Value(0.0), Value(1.0)), FILL)
    assert equal(a, Placed((Value(0.0), Value(1.0)), FILL))
    assert not equal(a, Placed((Value(0.0), Value(1.0)),
                               (("fill", ((0, "0-31"), (1, "32-66"))),)))
    assert cell_text(a) == "0 or 1 (placement) at 0 at fill 0-63; 1 at fill 64-66"


def test_two_cells_that_differ_print_differently():
    # 1 and 1.00001 agree to 4 figures: both are shown with 6
    assert pair_texts(Value(1.0), Value(1.00001)) == ("1", "1.00001")
    # an interval prints to its width's second digit: 0.2 wide, hundredths; 2.0, a whole
    # number, without its zeros
    assert pair_texts(Value(2.0, 1.9, 2.1), Error("E: x")) == ("2 [1.90, 2.10]", "E: x")


def _through_a_table(cell):
    """The cell stored as rows, written to Arrow (as a Parquet table holds it) and read back."""
    return from_rows(rows_of(to_arrow(stored_rows(cell))))


def test_a_cell_the_same_everywhere_is_one_row_and_reads_back_to_the_bit():
    assert stored_rows(Value(-0.0)) == [{"placement": None, "positions": None, "value": -0.0,
                                         "error": None}]
    assert stored_rows(Error("ValueError: x")) == [{"placement": None, "positions": None,
                                                    "value": None, "error": "ValueError: x"}]
    back = _through_a_table(Value(-0.0))
    # == says -0.0 == 0.0: the sign is checked by itself
    assert isinstance(back, Value) and math.copysign(1, back.value) == -1.0
    nan = _through_a_table(Value(float("nan")))
    assert isinstance(nan, Value) and math.isnan(nan.value)
    assert _through_a_table(Error("ValueError: x")) == Error("ValueError: x")
    assert _through_a_table(Value(1.5)) == Value(1.5)


def test_a_placed_cell_is_a_row_per_placement_and_run_and_reads_back_with_where_it_sits():
    # fill: 64 positions of 0 then 3 that raise; 0-d raised as a whole placement ("all")
    cell = collapse({"fill": [Value(0.0)] * 64 + [Error("E: x")] * 3, "0-d": Error("E: x")})
    assert stored_rows(cell) == [
        {"placement": "fill", "positions": "0-63", "value": 0.0, "error": None},
        {"placement": "fill", "positions": "64-66", "value": None, "error": "E: x"},
        {"placement": "0-d", "positions": "all", "value": None, "error": "E: x"}]
    back = _through_a_table(cell)
    assert back == cell and back.values == (Value(0.0), Error("E: x"))
    assert back.where == "0 at fill 0-63; E: x at fill 64-66, 0-d"  # a whole placement: its name
    assert back.places() == [["fill 0-63"], ["fill 64-66", "0-d"]]
    # -0.0 and NaN keep their bits inside a Placed cell too
    signed = _through_a_table(collapse({"fill": [Value(-0.0)] * 2 + [Value(float("nan"))]}))
    assert math.copysign(1, signed.values[0].value) == -1.0 and math.isnan(signed.values[1].value)
    assert signed.positions == (("fill", ((0, "0-1"), (1, "2"))),)
    # 1/6 in float32 and in float64 print alike at 6 digits: where gives every digit
    close = _through_a_table(collapse({"a": [Value(0.1666666716337204), Value(1 / 6)]}))
    assert close.where == "0.1666666716337204 at a 0; 0.16666666666666666 at a 1"


def test_collapse_keeps_one_cell_where_every_position_agrees_and_names_runs_where_not():
    # fill: 64 positions of 0 then 3 of 1 (a kernel's vector body and its scalar tail); 0-d: 1
    fill = [Value(0.0)] * 64 + [Value(1.0)] * 3
    cell = collapse({"fill": fill, "0-d": [Value(1.0)]})
    assert cell == Placed((Value(0.0), Value(1.0)), (("fill", ((0, "0-63"), (1, "64-66"))),
                                                     ("0-d", ((1, "0"),))))
    assert collapse({"fill": [Value(-0.0)] * 67, "0-d": [Value(0.0)]}) == Value(-0.0)
    # a placement whose call raised holds one Error for every position
    assert collapse({"fill": Error("E: z"), "0-d": Error("E: z")}) == Error("E: z")


def test_reading_a_placed_cell_at_fewer_placements():
    cell = Placed((Value(0.0), Value(1.0)), (("fill", ((0, "0-63"), (1, "64-66"))),
                                             ("2-D rows", ((0, "0-66"),))))
    assert cell.at(("2-D rows",)) == Value(0.0)
    assert cell.at(("fill",)) == Placed((Value(0.0), Value(1.0)), FILL)
    assert cell.at(("0-d",)) is cell

"""The one cell type (study.compare.cells) on hand-made cells: what counts as the same, the one
stored form and its one decoder, and reading a cell at fewer placements."""
from study.compare.cells import (Error, Placed, Value, Withdrawn, collapse, decode, encode,
                                 equal)
from study.report.format import cell_text, pair_texts

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
    assert pair_texts(Value(2.0, 1.9, 2.1), Error("E: x")) == ("2 [1.9, 2.1]", "E: x")


def test_a_stored_cell_is_decoded_once_with_its_values_and_where_they_sit():
    assert decode(-0.0) == Value(-0.0) and decode({"error": "ValueError: x"}) == \
        Error("ValueError: x")
    assert decode("a label") == Value("a label")  # a string is a value: errors are tagged
    stored = {"values": [0.0, {"error": "E: x"}],
              "where": {"fill": [[0, "0-63"], [1, "64-66"]], "0-d": [[1, "0"]]}}
    cell = decode(stored)
    assert cell.values == (Value(0.0), Error("E: x"))
    assert cell.where == "0 at fill 0-63; E: x at fill 64-66, 0-d"  # a whole placement: its name
    assert cell.places() == [["fill 0-63"], ["fill 64-66", "0-d"]]
    assert encode(cell) == stored
    for c in (Value(-0.0), Value(True), Error("E: y"), cell):
        assert decode(encode(c)) == c
    # 1/6 in float32 and in float64 print alike at 6 digits: where gives every digit
    close = decode({"values": [0.1666666716337204, 1 / 6], "where": {"a": [[0, "0"], [1, "1"]]}})
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
    cell = decode({"values": [0.0, 1.0], "where": {"fill": [[0, "0-63"], [1, "64-66"]],
                                                    "2-D rows": [[0, "0-66"]]}})
    assert cell.at(("2-D rows",)) == Value(0.0)
    assert cell.at(("fill",)) == decode({"values": [0.0, 1.0],
                                         "where": {"fill": [[0, "0-63"], [1, "64-66"]]}})
    assert cell.at(("0-d",)) is cell

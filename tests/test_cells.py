"""The one cell comparison (study.compare.cells.equal) on hand-made cells: what counts as the
same."""
from study.compare.cells import Error, Placed, Value, Withdrawn, equal, pair_texts


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
    a = Placed((Value(0.0), Value(1.0)), "0 at fill 0-63; 1 at fill 64-66")
    assert equal(a, Placed((Value(0.0), Value(1.0)), a.where))
    assert not equal(a, Placed((Value(0.0), Value(1.0)), "0 at fill 0-31; 1 at fill 32-66"))
    assert a.text() == "0 or 1 (placement) at 0 at fill 0-63; 1 at fill 64-66"


def test_two_cells_that_differ_print_differently():
    # 1 and 1.00001 agree to 4 figures: both are shown with 6
    assert pair_texts(Value(1.0), Value(1.00001)) == ("1", "1.00001")
    assert pair_texts(Value(2.0, 1.9, 2.1), Error("E: x")) == ("2 [1.9, 2.1]", "E: x")


def test_a_stored_cell_is_typed_once_with_its_values_and_where_they_sit():
    from study.compare.cells import as_cell
    assert as_cell(-0.0) == Value(-0.0) and as_cell("ValueError: x") == Error("ValueError: x")
    stored = {"values": [0.0, 1.0], "where": {"fill": [[0, "0-63"], [1, "64-66"]],
                                               "0-d": [[1, "0"]]}}
    cell = as_cell(stored)
    assert cell.values == (Value(0.0), Value(1.0))
    assert cell.where == "0 at fill 0-63; 1 at fill 64-66, 0-d"  # a whole placement: its name
    assert cell.places() == [["fill 0-63"], ["fill 64-66", "0-d"]]
    assert cell.stored() == stored
    # 1/6 in float32 and in float64 print alike at 6 digits: where gives every digit
    close = as_cell({"values": [0.1666666716337204, 1 / 6], "where": {"a": [[0, "0"], [1, "1"]]}})
    assert close.where == "0.1666666716337204 at a 0; 0.16666666666666666 at a 1"


def test_restricting_a_placed_cell_reads_it_at_those_placements_only():
    from study.compare.cells import as_cell
    from study.measure.placement import restrict
    cell = as_cell({"values": [0.0, 1.0], "where": {"fill": [[0, "0-63"], [1, "64-66"]],
                                                     "2-D rows": [[0, "0-66"]]}})
    assert restrict(cell, ("2-D rows",)) == Value(0.0)
    assert restrict(cell, ("fill",)) == as_cell({"values": [0.0, 1.0],
                                                 "where": {"fill": [[0, "0-63"], [1, "64-66"]]}})
    assert restrict(cell, ("0-d",)) is cell and restrict(Value(2.0), ("fill",)) == Value(2.0)

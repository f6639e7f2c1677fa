"""The one cell comparison (study.cells.equal) on hand-made cells: what counts as the same."""
from study.cells import Error, Placed, Value, Withdrawn, equal, pair_texts


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

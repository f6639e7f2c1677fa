"""Grouping a cell that differs between CPU and GPU: hand-made cells, one per group."""
from study.compare.cells import Error, Placed, Value
from study.compare.device_comparison import group_of


def cell(**fields):
    return tuple(fields.items()) + (("path", "value"),)


def test_each_differing_cell_lands_in_the_group_its_name_and_values_show():
    f32 = cell(op="relu", input="0", dtype="float32")
    # an input named min_subnormal, or a value below float32's smallest normal 2^-126
    one = Value(1.0)
    assert group_of(cell(op="relu", input="-min_subnormal", dtype="float32"), one, Value(0.0)) \
        == "subnormal"
    assert group_of(f32, Value(2.0 ** -130), Value(0.0)) == "subnormal"
    placed = Placed((Value(0.0), Value(1.0)), (("fill", ((0, "0-63"),)), ("0-d", ((1, "0"),))))
    assert group_of(f32, placed, one) == "placement"
    # one unit in the last place of float32 at 1 is 2^-23: within the 4 ulps of "last bits"
    assert group_of(f32, one, Value(1.0 + 2.0 ** -23)) == "last bits"
    assert group_of(f32, one, Value(1.0 + 2.0 ** -20)) == "other"  # 8 ulps apart
    assert group_of(f32, Error("TypeError: grad requires real- or complex-valued inputs"), one) \
        == "error"
    # a label is a Value whatever it reads like: only a cell typed as an Error is one
    assert group_of(f32, Value("TypeError: looks like one"), one) == "other"
    assert group_of(f32, Value("a label"), Value("another")) == "other"

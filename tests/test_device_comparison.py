"""Grouping a cell that differs between CPU and GPU: hand-made cells, one per group."""
from study.device_comparison import group_of


def cell(**fields):
    return tuple(fields.items()) + (("path", "value"),)


def test_each_differing_cell_lands_in_the_group_its_name_and_values_show():
    f32 = cell(op="relu", input="0", dtype="float32")
    # an input named min_subnormal, or a value below float32's smallest normal 2^-126
    assert group_of(cell(op="relu", input="-min_subnormal", dtype="float32"), 1.0, 0.0) == "subnormal"
    assert group_of(f32, 2.0 ** -130, 0.0) == "subnormal"
    assert group_of(f32, "0 or 1 (placement) at 1 at 0-d; 0 at fill 0-63", 1.0) == "placement"
    # one unit in the last place of float32 at 1 is 2^-23: within the 4 ulps of "last bits"
    assert group_of(f32, 1.0, 1.0 + 2.0 ** -23) == "last bits"
    assert group_of(f32, 1.0, 1.0 + 2.0 ** -20) == "other"  # 8 ulps apart
    assert group_of(f32, "TypeError: grad requires real- or complex-valued inputs", 1.0) == "error"
    assert group_of(f32, "Note: not an error line", 1.0) == "other"  # a capital and a colon

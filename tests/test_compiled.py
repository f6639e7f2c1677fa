"""study.measure.compiled against eager measurements made here: the compiled atlas's plumbing (one
shared graph, split when an op breaks it, outputs read back per op) must return, for ops whose
compiled kernels cannot differ from eager on finite inputs away from ties, exactly the eager
values, and must put a compile failure on the op that causes it alone."""
import pytest

from study.compare.cells import Error, Placed, Value
from study.measure.compiled import COMPILED_MODES
from study.measure.devices import Device
from study.measure.probe import measure_compiled
from study.measure.rules import Rule, by_key

VALUES = [-2.0, -0.5, 0.5, 2.0]  # no kink, no tie: every correct relu-family rule agrees here


@pytest.fixture(scope="module")
def cpu():
    return Device("cpu")


def _by_hand(key: str, mode: str) -> list[float]:
    """relu: value max(x, 0); its derivative (reverse and forward) 0 below 0, 1 above."""
    assert key.endswith("relu")
    return [max(x, 0.0) if mode == "value" else float(x > 0) for x in VALUES]


def _planted(framework: str) -> Rule:
    """An op no compiler can trace: it branches in Python on a traced value."""
    def branch(x):
        return x if bool((x > 0).all()) else x * 0
    return Rule(f"{framework}_branch", framework, "branch", "builtin", branch)


@pytest.mark.parametrize("framework", ["jax", "torch"])
def test_compiled_values_match_the_hand_derivative_and_a_failure_is_the_failing_ops_alone(
        cpu, framework):
    relu = by_key(f"{framework}_relu")
    got = measure_compiled([relu, _planted(framework)], [VALUES, VALUES], "float32", cpu,
                           ("packed",))
    for mode in COMPILED_MODES:
        cells = got[0]["cells"][mode]
        assert cells == [Value(v) for v in _by_hand(relu.key, mode)], mode
        planted = got[1]["cells"][mode]
        assert all(isinstance(c, Error) and c == planted[0] for c in planted), planted
        assert (got[0]["graph_ops"][mode], got[1]["graph_ops"][mode]) == (1, 1)


def test_ops_that_compile_share_one_graph(cpu):
    ops = [by_key("jax_relu"), by_key("jax_relu6")]
    got = measure_compiled(ops, [VALUES, VALUES + [7.0]], "float32", cpu, ("fill",))
    assert [g["graph_ops"]["reverse"] for g in got] == [2, 2]
    # relu6 is 6 above 6, its derivative 0 there: read back per op, at the op's own inputs, at
    # every position of the fill (one cell: no position differs)
    assert got[1]["cells"]["value"] == [Value(v) for v in (0.0, 0.0, 0.5, 2.0, 6.0)]
    assert got[1]["cells"]["reverse"][4] == Value(0.0)
    assert not any(isinstance(c, Placed) for g in got for c in g["cells"]["reverse"])

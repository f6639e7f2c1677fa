"""study check on rules whose output shape is not their input's: one element for a one-element
input is measured as that element's value; a tuple, a scalar from an array, no array, or any
other shape is a usage error (exit 2) naming what the rule returned for which input shape."""
import os

import jax
import numpy as np
import pytest

import study
from study import cli
from study.check import UsageError, _probe
from study.check._load import as_rule
from study.compare.cells import Error, Placed
from study.measure.probe import finite_difference, measure, reverse_derivative
from tests.rules_with_shapes import (GainReLU, LearnedClipQuant, LearnedScaleQuant,
                                     jax_learned_scale_quant, relu_and_mask, relu_column)

RULES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "rules_with_shapes.py")
ONE_ELEMENT_PARAMETER = [GainReLU, LearnedClipQuant, LearnedScaleQuant, jax_learned_scale_quant]
QUANTISERS = [LearnedClipQuant, LearnedScaleQuant, jax_learned_scale_quant]


def _run_cli(argv, capsys) -> tuple[int, str, str]:
    try:
        code = cli.main(["check", *argv])
    except SystemExit as e:
        code = e.code
    out, err = capsys.readouterr()
    return code, out, err


# --- a 0-d input broadcast to shape (1,): measured ------------------------------------------

@pytest.mark.parametrize("fn", ONE_ELEMENT_PARAMETER)
def test_a_one_element_output_for_a_0d_input_is_measured_as_in_a_vector(cpu, fn):
    rule = as_rule(fn)[0]
    values = [-1.5, -0.0, 0.35, 2.0]
    got = measure(rule, values, "float64", cpu, ("0-d", "1-element", "packed"),
                  ("value", "reverse", "forward"), cotangents=[2.0] * len(values))
    for mode, cells in got.items():  # a Value, or the Error a rule without a jvp raises
        for x, cell in zip(values, cells):
            assert not isinstance(cell, Placed), (mode, x, cell)  # every placement agrees
    assert [c.value for c in got["reverse"]] == [0.0, 0.0, 2.0, 2.0]  # the cotangent 2, given


@pytest.mark.parametrize("fn", QUANTISERS)
def test_gradcheck_finds_a_quantisers_straight_through_slope_with_a_one_element_scale(cpu, fn):
    rule = as_rule(fn)[0]
    assert reverse_derivative(rule, 0.35, "float64", cpu) == 1.0
    assert finite_difference(rule, 0.35, cpu) == 0.0  # rounded to 1/8: flat between steps
    _, found = _probe.gradcheck(rule, (0.0, 6.0), cpu)
    assert {f.where.input for f in found} == {"0.35", "0.9", "1.6", "4.2"}  # inside (0, 6)
    assert found[0].detail == "reverse 1.0"
    assert found[0].expected.startswith("≈ 0, the central difference")


def test_study_check_measures_a_jax_quantiser_with_a_one_element_scale():
    with jax.numpy_rank_promotion("allow"):  # as a user's JAX: 2-D rows times shape (1,)
        r = study.check(jax_learned_scale_quant, quick=True)
    assert r.exit_code == 1 and {f.kind for f in r.findings if f.severity == "wrong"} == {
        "gradcheck_fails"}, r.to_markdown()
    assert not [row for row in r.conventions for mode in ("value", "reverse")
                if isinstance(row[mode], Error)]


@pytest.mark.slow  # one inductor graph: about 10 s
def test_the_cli_measures_a_torch_quantiser_with_a_learned_clip(capsys):
    code, out, err = _run_cli([f"{RULES}:LearnedClipQuant", "--quick"], capsys)
    assert code == 1 and err == "", err
    assert "**fails** (exit 1): `gradcheck_fails` says a result is silently wrong." in out
    assert ("x = 0.35 (0x3fd6666666666666), float64: reverse 1.0; expected ≈ 0, the central "
            "difference") in out


# --- anything else: exit 2, naming what the rule returned -----------------------------------

@pytest.mark.parametrize("target, message", [
    ("relu_and_mask", "the rule returns a tuple of 2 for an input of shape [4]"),
    ("relu_and_mask --framework torch",
     "the rule returns a tuple of 2 for an input of shape [5]"),
    ("ReLUAndMask", "the rule returns a tuple of 2 for an input of shape [5]"),
    ("jax_relu_and_mask", "the rule returns a tuple of 2 for an input of shape [5]"),
    ("relu_sum", "the rule returns shape [] for an input of shape [4]"),
    ("relu_sum_as_float", "the rule returns a float for an input of shape [4]"),
    ("jax_relu_sum_as_numpy", "the rule returns a numpy.float64 for an input of shape [4]"),
    ("relu_without_return", "the rule returns None for an input of shape [4]"),
    ("relu_column", "the rule returns shape [4, 1] for an input of shape [4]"),
    ("jax_relu_column", "the rule returns shape [4, 1] for an input of shape [4]"),
    ("relu_max_kept", "the rule returns shape [1] for an input of shape [4]"),
    ("relu_tripled_at_0d", "the rule returns shape [3] for an input of shape []"),
    ("relu_flattened", "the rule returns shape [10] for an input of shape [2, 5]"),
])
def test_a_rule_returning_no_elementwise_array_is_exit_2_naming_it(capsys, target, message):
    name, *options = target.split()
    code, out, err = _run_cli([f"{RULES}:{name}", "--quick", *options], capsys)
    assert (code, out, err) == (2, "", f"error: {message}\n")


@pytest.mark.parametrize("fn, message", [
    (relu_and_mask, "the rule returns a tuple of 2 for an input of shape [4]"),
    (relu_column, "the rule returns shape [4, 1] for an input of shape [4]"),
])
def test_study_check_raises_a_usage_error_naming_what_the_rule_returned(fn, message):
    with pytest.raises(UsageError) as raised:
        study.check(fn, quick=True)
    assert str(raised.value) == message


def test_a_twin_returning_a_tuple_is_exit_2_naming_the_twin(capsys):
    code, out, err = _run_cli([f"{RULES}:GainReLU", "--quick", "--twin",
                               f"{RULES}:jax_relu_and_mask"], capsys)
    assert (code, out) == (2, "")
    assert err == "error: twin: the rule returns a tuple of 2 for an input of shape [5]\n"


def test_the_measurement_reads_one_element_only_as_its_input_shape():
    from study.measure.probe import one_element_as
    assert one_element_as(np.array([2.0]), ()).shape == ()
    assert one_element_as(np.array(2.0), (1,)).shape == (1,)
    assert one_element_as(np.array([1.0, 2.0]), (2, 1)).shape == (2,)  # never another shape

"""study check on rules of several inputs (tests/rules_with_ties.py): taken as such by their
signature, probed where their inputs tie, each gradient there read as all to one input or a
split, shown beside the built-ins of the same values, and judged by PyTorch's documented rule
on the rule's own float64 forward.

Every expected gradient is derived by hand from the rule's backward; every verdict from the
math of the tie: max(x, y) is locally convex at x = y, its pieces' gradients are (1, 0) and
(0, 1), and the element of least norm of their hull is the even split (0.5, 0.5)."""
import json
import os

import pytest
import torch

import study
from study import cli
from study.check._load import as_rule
from tests import rules_with_ties as rules

RULES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "rules_with_ties.py")
JUDGED_AT = ("0", "±0", "-2.5", "0.75", "3")  # the tie values judged; NaN is undefined
SPLIT, TO_X = [0.5, 0.5], [1.0, 0.0]


def judged_cases(result) -> list[dict]:
    cases = [c for c in result.ties["cases"] if c["at"] in JUDGED_AT]
    assert len(cases) == len(JUDGED_AT) * len(result.scope["dtypes"]) * len(
        {c["tie"] for c in cases})
    return cases


def run_cli(argv, capsys) -> tuple[int, str, str]:
    try:
        code = cli.main(["check", *argv])
    except SystemExit as e:
        code = e.code
    out, err = capsys.readouterr()
    return code, out, err


# --- which rules are of several inputs --------------------------------------------------------

@pytest.mark.parametrize("fn, framework, inputs", [
    (rules.MaxSplit, "torch", ("x", "y")),            # forward(ctx, x, y)
    (rules.jax_max_to_x, "jax", ("x", "y")),          # a custom_vjp of two arguments
    (rules.ClampToX, "torch", ("x", "lo", "hi")),     # three
    (torch.maximum, "torch", ("x", "y")),             # no signature: the arrays it answers
])
def test_a_rule_of_two_or_three_arrays_is_a_rule_of_several_inputs(fn, framework, inputs):
    rule, _ = as_rule(fn)
    assert (rule.framework, rule.input_labels()) == (framework, inputs)


def test_a_parameter_given_by_args_is_no_input_and_one_not_given_is():
    def leaky(x, alpha):
        return torch.where(x > 0, x, alpha * x)
    assert as_rule(leaky, "torch")[0].input_labels() == ("x", "alpha")
    assert not as_rule(leaky, "torch", (0.25,))[0].several_inputs  # alpha follows x


def test_a_rule_of_several_inputs_not_elementwise_in_them_is_exit_2_naming_it(capsys):
    # max(x, sum(y)): with y = [3.25, -1.5, -0.25, 0.5, 2] the sum, 4, wins everywhere, so every
    # output is sum(y) and d f[0] / d y[1] = 1
    code, out, err = run_cli([f"{RULES}:max_with_sum", "--quick"], capsys)
    assert (code, out) == (2, "")
    assert err.startswith(f"error: {RULES}:max_with_sum is not elementwise (d f[0] / d y[1] = "
                          f"1.0 at x = [-1.5, -0.25, 0.5, 2.0, 3.25], y = [3.25, -1.5, "), err
    code, out, err = run_cli([f"{RULES}:max_and_which", "--quick"], capsys)
    assert (code, out, err) == (
        2, "", "error: the rule returns a tuple of 2 for 2 inputs of shape [4]\n")


# --- maximum(x, y): split, all to x, all to both ------------------------------------------------

@pytest.mark.parametrize("fn, builtins", [
    (rules.MaxSplit, ("torch_maximum_xy", "jax_maximum_xy")),
    (rules.jax_max_split, ("jax_maximum_xy", "jax_lax_max_xy", "torch_maximum_xy")),
])
def test_a_maximum_splitting_the_tie_follows_the_documented_rule(fn, builtins):
    r = study.check(fn, quick=True)
    assert r.ok and r.findings == [], r.to_markdown()
    # its values are maximum's: the framework's own, and the other framework's look-alike (the
    # test session imports both); each of them splits the tie too
    assert [b["rule"] for b in r.ties["builtins"]] == list(builtins)
    for c in judged_cases(r):
        # by hand: at x == y, (x > y) + 1/2 = 0.5 to x, and the same to y
        assert c["gradient"] == SPLIT and c["reads"] == "split 0.5/0.5", c
        assert c["at cotangents"] == {"2": [1.0, 1.0], "-1": [-0.5, -0.5], "0.5": [0.25, 0.25]}
        assert c["documented rule"] == "locally convex" and c["rule gives"] == [SPLIT]
        assert c["follows"] and c["clarke"] == "minimum-norm element"
        assert all(c["builtins"][b] == SPLIT for b in builtins)
    nan = [c for c in r.ties["cases"] if c["at"] == "NaN"]
    # NaN == NaN and NaN > NaN are false: nothing to either; an undefined input, not judged
    assert all(c["gradient"] == [0.0, 0.0] and c["reads"] == "none to either"
               and c["documented rule"] == "undefined input" for c in nan)


@pytest.mark.parametrize("fn", [rules.MaxToX, rules.jax_max_to_x])
def test_a_maximum_sending_the_tie_to_x_is_a_warning_that_fails_nothing(fn):
    r = study.check(fn, quick=True)
    assert r.exit_code == 0, r.to_markdown()
    assert {f.kind for f in r.findings} == {"tie_breaks_documented_rule"}
    assert all(f.severity == "warning" for f in r.findings)
    assert len(r.findings) == len(judged_cases(r))  # one per tie value and dtype
    for c in judged_cases(r):
        # by hand: x >= y holds at the tie, so all of g to x; a piece's gradient, inside
        # Clarke's set, summing to the rate along the tie (1), but not its least-norm element
        assert c["gradient"] == TO_X and c["reads"] == "all to x", c
        assert not c["follows"] and c["rule gives"] == [SPLIT] and c["clarke"] == "inside"
        assert c["along tie"]["gradient"] == 1.0
    assert ("| warning | `tie_breaks_documented_rule` |" in r.first_screen())
    assert ("x = 0, y = 0, float32: gradient (1, 0): all to x; expected (0.5, 0.5), the "
            "minimum-norm element (locally convex) |" in r.first_screen())
    assert not study.check(fn, quick=True, fail_on=("tie_breaks_documented_rule",)).ok


def test_a_maximum_sending_the_tie_to_both_is_wrong_along_the_tie():
    r = study.check(rules.MaxToBoth, quick=True)
    # by hand: x >= y and y >= x both hold at the tie: g to each, so maximum(x, x) = x gets a
    # derivative of 2; Clarke's set is the segment from (1, 0) to (0, 1), which (1, 1) is not on
    assert r.exit_code == 1
    assert {f.kind for f in r.findings} == {"wrong_along_tie", "tie_breaks_documented_rule"}
    for c in judged_cases(r):
        assert c["gradient"] == [1.0, 1.0] and c["clarke"] == "outside"
        assert c["along tie"]["gradient"] == 2.0
        assert c["along tie"]["derivative"] == pytest.approx(1.0, abs=1e-9)
    assert r.reproducers["wrong_along_tie"].startswith("a rule of several inputs")


# --- clamp(x, lo, hi) with tensor bounds -------------------------------------------------------

# each tie of the three, by hand from ClampToX's backward (m = max(x, lo): x gets g where
# x >= lo and m <= hi, lo where x < lo and m <= hi, hi where m > hi), and what PyTorch's rule
# gives there on clamp = min(max(x, lo), hi), torch.clamp's hi wherever lo > hi
CLAMP = {
    # max(x, lo) near x = lo: convex, pieces (1, 0, 0) and (0, 1, 0): the even split
    "x = lo < hi": ([1.0, 0.0, 0.0], "all to x", False),
    # lo > hi: the value is hi on both sides, one piece
    "hi < x = lo": ([0.0, 0.0, 1.0], "none to either; hi 1", True),
    "x = hi < lo": ([0.0, 0.0, 1.0], "all to hi", True),
    # min(x, hi) near x = hi: concave, pieces (1, 0, 0) and (0, 0, 1): the even split
    "lo < x = hi": ([1.0, 0.0, 0.0], "all to x", False),
    # x above both: hi whichever of lo and hi is larger, one piece
    "lo = hi < x": ([0.0, 0.0, 1.0], "all to hi", True),
    # x below both: min(lo, hi), concave, pieces (0, 1, 0) and (0, 0, 1): the even split
    "x < lo = hi": ([0.0, 1.0, 0.0], "all to lo", False),
    # all three: a ramp between flat pieces, neither convex nor concave: by continuity any
    # piece's gradient, (1, 0, 0) among them
    "x = lo = hi": ([1.0, 0.0, 0.0], "all to x", True),
}


def test_a_clamp_with_tensor_bounds_is_judged_at_each_tie_of_its_three_inputs():
    r = study.check(rules.ClampToX, quick=True)
    assert r.exit_code == 0, r.to_markdown()
    assert [b["rule"] for b in r.ties["builtins"]][0] == "torch_clamp_tensors"
    cases = judged_cases(r)
    assert {c["tie"] for c in cases} == set(CLAMP)
    for c in cases:
        gradient, reads, follows = CLAMP[c["tie"]]
        assert (c["gradient"], c["reads"], c["follows"]) == (gradient, reads, follows), c
    assert {f.where.transformation for f in r.findings if f.where.dtype == "float32"} == {
        c["label"] for c in cases if c["dtype"] == "float32" and not CLAMP[c["tie"]][2]}


# --- the command line --------------------------------------------------------------------------

def test_the_cli_on_a_two_input_rule_exits_0_by_default_and_1_when_asked(capsys):
    target = [f"{RULES}:MaxToX", "--quick"]
    code, out, _ = run_cli(target, capsys)
    assert code == 0 and "## Ties" in out
    assert ("| x = y | 0, ±0, -2.5, 0.75, 3 | float32, float64 | (1, 0) | all to x | (0.5, 0.5) |"
            in out), out
    code, out, _ = run_cli([*target, "--fail-on", "tie_breaks_documented_rule", "--json", "-"],
                           capsys)
    data = json.loads(out)
    assert code == 1 and data["exit_code"] == 1 and data["schema_version"] == 5
    case = next(c for c in data["ties"]["cases"] if (c["at"], c["dtype"]) == ("0", "float32"))
    assert case["gradient"] == TO_X and case["reads"] == "all to x"
    assert data["findings"][0]["where"]["transformation"] == "x = 0, y = 0"

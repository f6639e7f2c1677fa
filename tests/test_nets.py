"""The seed 001 net, checked against a hand derivation and a float64 numpy oracle.

Hand derivation with seed 001's numbers:
  h = x @ w1 = [[7, 8], [9, 2], [12, 9], [4, 0]]: one exact zero, h[3, 1].
  y = relu(h) @ w2 = [[-23, 31], [-13, 15], [-30, 39], [-4, 4]]; r = y - 1.
  loss = sum(r^2) = 576+900 + 196+196 + 961+1444 + 25+9 = 4307.
  dL/dy[3] = 2 r[3] = [-10, 6];  dL/da[3] = dL/dy[3] @ w2.T = [16, 38].
  At the tie, dL/dh[3, 1] = c * 38 for a rule with d/dx(0) = c, and x[3] = [0, 0, 1], so
  grad_w1[2, 1] carries + 38 c and nothing else depends on c; relu(h) is 0 at the tie for
  every c, so grad_w2 does not depend on c. Hence grad(c=0) - grad(c=1) = -38 at w1[2, 1],
  the seed's printed table.
"""
import numpy as np
import pytest

from study.measure.probe import reverse_derivative
from study.workloads.nets import seed_two_layer_data, two_layer_gradients
from study.measure.rules import RULES, by_key, relu_rules

SEED_DIFF_W1 = np.array([[0, 0], [0, 0], [0, -38]], np.float32)  # from the derivation above


def numpy_oracle(data, c: float) -> dict:
    x, w1, w2 = (data[k].astype(np.float64) for k in ("x", "w1", "w2"))
    h = x @ w1
    a = np.maximum(h, 0)
    r = a @ w2 - 1
    dy = 2 * r
    dh = (dy @ w2.T) * np.where(h > 0, 1.0, np.where(h == 0, c, 0.0))
    return {"loss": np.sum(r * r), "grad_w1": x.T @ dh, "grad_w2": a.T @ dy}


@pytest.mark.parametrize("rule", ["torch_relu", "jax_relu"])
def test_seed_data_has_the_single_tie_of_the_derivation(rule, cpu):
    # x[3] = [0, 0, 1] and w1[:, 1] = [2, 1, 0]: (x @ w1)[3, 1] = 0; every other entry of the
    # integer-valued product is nonzero by hand
    out = two_layer_gradients(by_key(rule), seed_two_layer_data(), cpu)
    assert out["zeros"] == 1 and out["zero_positions"] == [[3, 1]]


def test_seed_loss_is_4307(cpu):
    assert float(two_layer_gradients(by_key("torch_relu"), seed_two_layer_data(), cpu)["loss"]) \
        == 4307.0


@pytest.mark.parametrize("c0,c1", [("torch_custom_c0", "torch_custom_c1"),
                                   ("jax_custom_c0", "jax_custom_c1"),
                                   ("torch_custom_op_c0", "torch_custom_op_c1"),
                                   ("jax_custom_nondiff_c0", "jax_custom_nondiff_c1")])
def test_seed_difference_between_c0_and_c1_is_minus_38(cpu, c0, c1):
    data = seed_two_layer_data()
    g0 = two_layer_gradients(by_key(c0), data, cpu)
    g1 = two_layer_gradients(by_key(c1), data, cpu)
    np.testing.assert_array_equal(g0["grad_w1"] - g1["grad_w1"], SEED_DIFF_W1)
    np.testing.assert_array_equal(g0["grad_w2"] - g1["grad_w2"], np.zeros((2, 2), np.float32))


@pytest.mark.parametrize("rule", [r for r in RULES if r.kind == "custom"], ids=lambda r: r.key)
def test_custom_rule_matches_the_float64_oracle_on_seed_data(cpu, rule):
    got = two_layer_gradients(rule, seed_two_layer_data(), cpu)
    want = numpy_oracle(seed_two_layer_data(), rule.convention)
    for k in ("loss", "grad_w1", "grad_w2"):
        np.testing.assert_array_equal(got[k], want[k].astype(np.float32))


def test_builtin_difference_follows_its_measured_derivative_at_zero(cpu):
    # Never pin a built-in's convention: measure d/dx(0) = m, then the derivation says the
    # seed gradient differs from the c = 0 rule by exactly 38 m at w1[2, 1].
    data = seed_two_layer_data()
    base = two_layer_gradients(by_key("torch_custom_c0"), data, cpu)["grad_w1"]
    for rule in (r for r in relu_rules() if r.kind == "builtin"):
        m = reverse_derivative(rule, 0.0, "float32", cpu)
        diff = two_layer_gradients(rule, data, cpu)["grad_w1"] - base
        np.testing.assert_array_equal(diff, -m * SEED_DIFF_W1, err_msg=rule.name)


def test_rules_with_equal_conventions_agree_bitwise_across_frameworks_on_seed_data(cpu):
    data = seed_two_layer_data()
    rules = relu_rules()
    measured = {r.name: reverse_derivative(r, 0.0, "float32", cpu) for r in rules}
    grads = {r.name: two_layer_gradients(r, data, cpu) for r in rules}
    pairs = [(t, j) for t in rules if t.framework == "torch" for j in rules
             if j.framework == "jax" and measured[t.name] == measured[j.name]]
    assert len(pairs) >= 4  # every custom twin at least
    for t, j in pairs:
        for k in ("loss", "grad_w1", "grad_w2"):
            np.testing.assert_array_equal(grads[t.name][k], grads[j.name][k],
                                          err_msg=f"{t.name} vs {j.name}")

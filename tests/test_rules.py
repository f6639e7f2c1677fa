import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import torch

from conftest import assert_close
from study.measure.probe import reverse_derivative
from study.measure.devices import Device
from study.measure.rules import RULES, by_key, reference_of, related, relu_rules


CUSTOM = [r for r in RULES if r.kind == "custom"]


TIES = np.array([-1.5, -0.0, 0.0, 1.5, np.inf, -np.inf, np.nan, 0.0, 2.0], np.float32)


@pytest.mark.parametrize("rule", [r for r in CUSTOM if r.framework == "torch"],
                         ids=lambda r: r.key)
def test_every_torch_custom_rule_and_its_jax_twin_agree_bitwise_at_ties_and_specials(rule):
    # What twins are for: the same rule in both frameworks. On identical inputs with ±0, ±inf
    # and NaN, value and gradient (under a non-uniform cotangent) must match bit for bit.
    twin = related(rule, "twin")
    assert twin is not None and twin.framework == "jax" and twin.convention == rule.convention
    (ty, tg), (jy, jg) = (_value_and_grad(r, TIES.copy()) for r in (rule, twin))
    np.testing.assert_array_equal(ty, jy)
    np.testing.assert_array_equal(tg, jg)


def _no_zero_inputs(dtype, n=257):
    x = np.random.default_rng(1).standard_normal(n).astype(dtype)
    assert np.count_nonzero(x == 0) == 0
    return x


def _value_and_grad(rule, x: np.ndarray):
    """Forward value and grad of sum(rule(x) * w) with a non-uniform cotangent w."""
    w = np.linspace(-2.0, 3.0, x.size).astype(x.dtype)
    if rule.framework == "torch":
        xt = torch.from_numpy(x.copy()).requires_grad_(True)  # noqa: device-audit (tests: cpu)
        y = rule.fn(xt)
        (y * torch.from_numpy(w)).sum().backward()
        return y.detach().numpy(), xt.grad.numpy()
    y, vjp = jax.vjp(rule.fn, jnp.asarray(x))
    return np.asarray(y), np.asarray(vjp(jnp.asarray(w))[0])


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("rule", CUSTOM, ids=lambda r: r.key)
def test_custom_rule_equals_its_frameworks_relu_off_zero(rule, dtype):
    # Oracle: the framework's own autodiff of its relu. Off x == 0 every convention agrees.
    x = _no_zero_inputs(dtype)
    value, grad = _value_and_grad(rule, x)
    ref_value, ref_grad = _value_and_grad(reference_of(rule), x)
    assert_close(value, ref_value, dtype)
    assert_close(grad, ref_grad, dtype)


def _own_rule(rule):
    """(object, attribute) holding the rule's own derivative code: a Function's backward, a
    torch.library custom_op's registered backward, a custom_vjp's bwd, a custom_jvp's jvp."""
    fn = rule.fn.func if isinstance(rule.fn, functools.partial) else rule.fn
    if rule.framework == "torch":
        return (fn, "_backward_fn") if hasattr(fn, "_backward_fn") else (fn.__self__, "backward")
    return fn, ("bwd" if isinstance(fn, jax.custom_vjp) else "jvp")


@pytest.mark.parametrize("rule", CUSTOM, ids=lambda r: r.key)
def test_custom_backward_really_runs(rule, monkeypatch):
    # a spy around the rule's own derivative code: the gradient must pass through it
    owner, name = _own_rule(rule)
    original, calls = getattr(owner, name), []

    def spy(*args):
        calls.append(1)
        return original(*args)
    monkeypatch.setattr(owner, name, staticmethod(spy) if name == "backward" else spy)
    if rule.framework == "torch":
        x = torch.tensor([-1.0, 0.0, 2.0], requires_grad=True)
        torch.autograd.grad(rule.fn(x).sum(), x)
    else:
        jax.grad(lambda x: rule.fn(x).sum())(jnp.array([-1.0, 0.0, 2.0]))
    assert calls, f"{rule.key}: its {name} never ran"


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("rule", CUSTOM, ids=lambda r: r.key)
def test_declared_convention_is_what_the_backward_returns_at_zero(rule, dtype):
    assert reverse_derivative(rule, 0.0, dtype, Device("cpu")) == rule.convention


def test_relu_rules_are_exactly_the_zero_kink_relu_like_ones():
    keys = {r.key for r in relu_rules()}
    assert "torch_clamp_min0" in keys and "jax_relu" in keys
    assert "torch_relu6" not in keys and "jax_abs" not in keys


def test_every_rule_key_a_committed_result_records_still_names_a_rule(committed_runs):
    # result files name rules by key: renaming one in study/measure/rules.py would orphan their
    # records
    results, reference = committed_runs
    recorded = {rec["rule"] for run in results + reference for rec in run.records
                if isinstance(rec.get("rule"), str)
                and " " not in rec["rule"]}  # a key, not prose ("custom_vjp over ...")
    assert len(recorded) > 50
    assert not [key for key in recorded if key not in {r.key for r in RULES}]
    with pytest.raises(KeyError, match="no rule with key 'torch.relu'"):
        by_key("torch.relu")

import numpy as np
import pytest
import torch

from study.bifurcation import bifurcating_inits, stacked_inits
from study.nets import seed_two_layer_data
from study.rules import by_name
from study.training import (cast, count_zeros, digits_data, first_divergence, init_mlp,
                            train_jax, train_torch)

TRAIN = {"torch": train_torch, "jax": train_jax}
C_RULES = {"torch": ("ReLUWithConvention(c=0)", "ReLUWithConvention(c=1)"),
           "jax": ("relu_with_convention(c=0) (custom_vjp)",
                   "relu_with_convention(c=1) (custom_vjp)")}


def test_zero_counter_finds_exactly_the_planted_zeros_signed_zeros_included():
    h1 = torch.tensor([[0.0, 1e-30, -0.0], [2.0, 0.0, -1e-45]])  # 3 zeros; tiny values are not
    h2 = torch.tensor([[5.0, -0.0]])  # 1 zero
    assert count_zeros([h1, h2]) == 4


@pytest.mark.parametrize("framework", ["torch", "jax"])
def test_a_tie_planted_at_step_k_makes_runs_diverge_at_step_k(framework):
    # Seed 001's net has no bias, so an all-zero batch gives zero gradients: the weights do not
    # move for k steps. Then seed 001's x meets its one tie, (x @ w1)[3, 1] = 0, at step k.
    k = 3
    d = seed_two_layer_data()
    batches = [(np.zeros((4, 3)), np.zeros(4, np.int64))] * k + [(d["x"], np.zeros(4))] * 2
    params = cast([d["w1"], d["w2"]], "float32")
    runs = [TRAIN[framework](by_name(r).fn, params, batches, "mse_ones", 1e-4, "float32", False)
            for r in C_RULES[framework]]
    assert first_divergence(runs[0]["snapshots"], runs[1]["snapshots"]) == k


def _digits_run(framework, rule, dtype, steps=6):
    x, y = digits_data()
    params = cast(init_mlp(np.random.default_rng(0), [64, 16, 10]), dtype)
    batches = [(x[i * 32:(i + 1) * 32], y[i * 32:(i + 1) * 32]) for i in range(steps)]
    return TRAIN[framework](by_name(rule).fn, params, batches, "xent", 0.1, dtype, True)


@pytest.mark.parametrize("framework", ["torch", "jax"])
def test_float64_without_ties_trains_identically_under_c0_and_c1(framework):
    r0, r1 = (_digits_run(framework, r, "float64") for r in C_RULES[framework])
    assert sum(r0["zeros"]) == 0
    assert first_divergence(r0["snapshots"], r1["snapshots"]) is None


@pytest.mark.parametrize("dtype,tol", [("float64", 1e-12), ("float32", 1e-5)])
def test_both_frameworks_trace_the_same_loss_curve(dtype, tol):
    t = _digits_run("torch", C_RULES["torch"][0], dtype)
    j = _digits_run("jax", C_RULES["jax"][0], dtype)
    np.testing.assert_allclose(t["losses"], j["losses"], rtol=tol, atol=tol)


def test_bifurcation_counts_an_init_only_when_a_tie_changes_the_gradient():
    # float64 digits: no exact zero pre-activations, so no initialisation can bifurcate
    x, y = digits_data()
    params = stacked_inits(0, 4, [64, 16, 10])
    for formulation in ("torch", "jax"):
        assert not bifurcating_inits(formulation, params, x[:256], y[:256], 128, "float64").any()


def test_nan_in_both_trajectories_is_not_a_divergence():
    nan = np.array([np.nan, 1.0])
    assert first_divergence([nan, nan], [nan.copy(), nan.copy()]) is None
    assert first_divergence([nan, nan], [nan, np.array([np.nan, 2.0])]) == 1

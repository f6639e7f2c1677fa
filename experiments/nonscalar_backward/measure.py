"""Measuring seed 002: backward() on a non-scalar output in torch, its counterparts in JAX."""

import numpy as np

from study.compare.cells import Error
from study.errors import first_error_line

SEED_A = np.array([[1, 2, 3], [4, 5, 6]], np.float32)  # seed 002's a
STEPS = ("backward() with no argument", "looped scalar backward, one pass",
         "looped scalar backward, second pass without zeroing", "backward(a)", "backward(ones)")


def torch_steps(a_np: np.ndarray, device) -> dict:
    """Step -> a.grad after it (nested list), or the Error it raised."""
    out = {}
    a = device.to_torch(a_np, requires_grad=True)
    try:
        (a * a).backward()
        out[STEPS[0]] = device.to_python(a.grad)
    except RuntimeError as exc:
        out[STEPS[0]] = Error(first_error_line(exc))
    a = device.to_torch(a_np, requires_grad=True)
    for step in STEPS[1:3]:
        for i in range(a.shape[0]):
            for j in range(a.shape[1]):
                (a[i, j] * a[i, j]).backward()
        out[step] = device.to_python(a.grad)
    for step, cotangent in ((STEPS[3], a_np), (STEPS[4], np.ones_like(a_np))):
        a = device.to_torch(a_np, requires_grad=True)
        (a * a).backward(device.to_torch(cotangent))
        out[step] = device.to_python(a.grad)
    return out


def jax_steps(a_np: np.ndarray, device) -> dict:
    """The same questions in JAX: grad of a non-scalar, then vjp, which never accumulates."""
    import jax
    import jax.numpy as jnp
    a = device.to_jax(a_np)
    f = lambda v: v * v  # noqa: E731
    out = {}
    try:
        out[STEPS[0]] = device.to_python(jax.grad(f)(a))
    except TypeError as exc:
        out[STEPS[0]] = Error(first_error_line(exc))
    _, vjp = jax.vjp(f, a)
    grads = []
    for _ in range(2):  # two passes of per-element cotangents: each call returns a fresh result
        total = jnp.zeros_like(a)
        for i in range(a.shape[0]):
            for j in range(a.shape[1]):
                total = total + vjp(jnp.zeros_like(a).at[i, j].set(1))[0]
        grads.append(device.to_python(total))
    out[STEPS[1]], out[STEPS[2]] = grads
    out[STEPS[3]] = device.to_python(vjp(a)[0])
    out[STEPS[4]] = device.to_python(vjp(jnp.ones_like(a))[0])
    return out


def chain_rule(a_np: np.ndarray) -> dict:
    """What the chain rule gives for out = a * a: d out_ij / d a_ij = 2 a_ij."""
    a = a_np.astype(np.float64)
    return {STEPS[1]: (2 * a).tolist(), STEPS[2]: (4 * a).tolist(),
            STEPS[3]: (2 * a * a).tolist(), STEPS[4]: (2 * a).tolist()}


def cases(scope: str) -> list[dict]:
    return [{"framework": "torch"}, {"framework": "jax"}]


def run_case(device, framework: str) -> list[dict]:
    steps = (torch_steps if framework == "torch" else jax_steps)(SEED_A, device)
    expected = chain_rule(SEED_A)
    return [{"part": "steps", "framework": framework, "device": device.name, "step": step,
             **_result(steps[step]), "chain_rule": expected.get(step),  # None: no gradient
             "a": SEED_A.tolist(), "dtype": str(SEED_A.dtype)} for step in STEPS]


def _result(got) -> dict:
    if isinstance(got, Error):
        return {"result": None, "error": got.line}
    return {"result": got, "error": None}

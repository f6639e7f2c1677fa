"""Measuring what a rule's gradient is at a point, in the rule's own framework."""
import jax
import jax.numpy as jnp
import numpy as np
import torch

from study.devices import Device
from study.rules import Rule

DTYPES = ("float16", "bfloat16", "float32", "float64")


def torch_dtype(name: str) -> torch.dtype:
    return getattr(torch, name)


def jax_dtype(name: str):
    return getattr(jnp, name)


def reverse_derivative(rule: Rule, x0: float, dtype: str = "float32",
                       device: Device = Device("cpu")) -> float:
    """d rule(x)/dx at the scalar x0, by reverse mode with a cotangent of 1."""
    if rule.framework == "torch":
        x = torch.tensor(x0, dtype=torch_dtype(dtype), device=device.torch_device, requires_grad=True)
        rule.fn(x).backward()
        return float(x.grad.float().item())
    x = jax.device_put(jnp.asarray(x0, dtype=jax_dtype(dtype)), device.jax_device)
    return float(np.asarray(jax.grad(rule.fn)(x)).astype(np.float64))

"""Measuring what a rule's gradient is at a point, in the rule's own framework and device.

    >>> reverse_derivative(by_key("torch_relu"), 0.0, "float32", Device("cpu"))
    0.0

Every registry op is elementwise, so element i of d(sum f(x))/dx is f'(x_i): one call per
(rule, dtype, mode, placement) measures every element. Where an element sits can still change
its value (a kernel's vectorised body and its scalar tail may disagree), so study.measure.placement
probes each input at several placements.
"""
import jax
import ml_dtypes
import numpy as np
import torch

from study.measure.devices import Device
from study.measure.rules import Rule

DTYPES = ("float16", "bfloat16", "float32", "float64")
MODES = ("value", "reverse", "forward", "second")


def torch_dtype(name: str) -> torch.dtype:
    return getattr(torch, name)


def numpy_dtype(dtype: str):
    return ml_dtypes.bfloat16 if dtype == "bfloat16" else np.dtype(dtype)


def finfo(dtype: str):
    return ml_dtypes.finfo(ml_dtypes.bfloat16) if dtype == "bfloat16" else np.finfo(dtype)


def reverse_derivative(rule: Rule, x0: float, dtype: str, device: Device) -> float:
    """d rule(x)/dx at the 0-d scalar x0, by reverse mode with a cotangent of 1."""
    if rule.framework == "torch":
        x = device.torch_tensor(x0, dtype=torch_dtype(dtype), requires_grad=True)
        rule.fn(x).backward()
        return float(device.to_numpy(x.grad))
    x = device.to_jax(np.asarray(x0, dtype=numpy_dtype(dtype)))
    return float(device.to_numpy(jax.grad(rule.fn)(x)).astype(np.float64))


def probe_inputs(dtype: str, kinks) -> list[tuple[str, float]]:
    """(label, value) pairs: each kink exactly and 1 ulp either side, signed zeros, the
    smallest subnormals and normal, NaN and the infinities, all exact in `dtype`."""
    nd = numpy_dtype(dtype)
    fi = finfo(dtype)
    out = []
    for k in sorted(kinks):
        if k == 0:
            continue  # 0 and its ulps are the signed zeros and smallest subnormals below
        kd = np.asarray(k, nd)
        out += [(f"{k:g}-ulp", float(np.nextafter(kd, np.asarray(-np.inf, nd)))),
                (f"{k:g}", float(kd)),
                (f"{k:g}+ulp", float(np.nextafter(kd, np.asarray(np.inf, nd))))]
    tiny = float(fi.smallest_subnormal)
    out += [("-min_subnormal", -tiny), ("-0.0", -0.0), ("+0.0", 0.0), ("+min_subnormal", tiny),
            ("min_normal", float(fi.smallest_normal)), ("+nan", float("nan")),
            ("+inf", float("inf")), ("-inf", float("-inf"))]
    return out

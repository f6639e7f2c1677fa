"""Measuring what a rule's gradient is at a point, in the rule's own framework."""
import jax
import jax.numpy as jnp
import numpy as np
import torch

from study.devices import Device
from study.errors import first_error_line
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


# --- probing every mode at once over a vector of inputs ---------------------------------
# Every registry op is elementwise, so element i of d(sum f(x))/dx is f'(x_i): one call per
# (rule, dtype, mode) measures every input.

MODES = ("value", "reverse", "forward", "second")


def finfo(dtype: str):
    import ml_dtypes
    return ml_dtypes.finfo(ml_dtypes.bfloat16) if dtype == "bfloat16" else np.finfo(dtype)


def numpy_dtype(dtype: str):
    import ml_dtypes
    return ml_dtypes.bfloat16 if dtype == "bfloat16" else np.dtype(dtype)


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
            ("min_normal", float(fi.smallest_normal)), ("nan", float("nan")),
            ("+inf", float("inf")), ("-inf", float("-inf"))]
    return out


def _torch_modes(fn, values, dtype, device) -> dict:
    def fresh(requires_grad=True):
        return torch.tensor(values, dtype=torch_dtype(dtype), device=device.torch_device,
                            requires_grad=requires_grad)

    def value():
        return fn(fresh(False))

    def reverse():
        x = fresh()
        fn(x).sum().backward()
        return x.grad

    def forward():
        x = fresh(False)
        return torch.func.jvp(fn, (x,), (torch.ones_like(x),))[1]

    def second():
        x = fresh()
        g, = torch.autograd.grad(fn(x).sum(), x, create_graph=True)
        if not g.requires_grad:  # the first derivative is a constant to autograd
            return torch.zeros_like(g)
        h, = torch.autograd.grad(g.sum(), x, allow_unused=True)
        return torch.zeros_like(g) if h is None else h

    return {"value": value, "reverse": reverse, "forward": forward, "second": second}


def _jax_modes(fn, values, dtype, device) -> dict:
    x = jax.device_put(jnp.asarray(np.asarray(values, np.float64), dtype=jax_dtype(dtype)),
                       device.jax_device)
    grad = jax.grad(lambda v: jnp.sum(fn(v)))
    return {"value": lambda: fn(x), "reverse": lambda: grad(x),
            "forward": lambda: jax.jvp(fn, (x,), (jnp.ones_like(x),))[1],
            "second": lambda: jax.grad(lambda v: jnp.sum(grad(v)))(x)}


def probe_modes(rule: Rule, values: list[float], dtype: str, device: Device) -> dict:
    """{mode: list of float64 results, or the first line of the error that mode raised}."""
    modes = (_torch_modes if rule.framework == "torch" else _jax_modes)(rule.fn, values, dtype,
                                                                      device)
    out = {}
    for mode in MODES:
        try:
            result = modes[mode]()
            if isinstance(result, torch.Tensor):
                if result._is_zerotensor():  # autograd's symbolic zero: it is a zero gradient
                    result = torch.zeros(result.shape, dtype=torch.float64)
                result = result.detach().cpu().to(torch.float64).numpy()
            out[mode] = np.asarray(result).astype(np.float64).tolist()
        except Exception as exc:  # noqa: BLE001  a mode that raises is a measured outcome
            out[mode] = first_error_line(exc)
    return out

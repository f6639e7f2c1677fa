"""The kink records: each built-in's shape at each of its kinks, from its own float64 forward
(study.conformance.kink_shape, no autodiff), beside the derivative autodiff gives there.

A built-in is one public call. Where x ties another operand that the call passes as a tensor
(torch.maximum, torch.max's binary overload, lax.max, jnp.maximum, and any bound of jnp.clip or
lax.clamp, since JAX promotes Python scalars to arrays), the record adds the shape over both
operands and the full gradient there (`TIES`). torch's Scalar bounds (torch.clamp(x, min=0))
are held fixed. An expression of several calls is a composition: measured, never judged.
The records hold numbers only; the verdicts are read from them (zero_point.conformance).
"""
from dataclasses import dataclass
from typing import Callable

import numpy as np

from study.conformance import KinkShape, float64_forward, kink_shape
from study.measure.probe import reverse_derivative
from study.errors import first_error_line
from study.compare.stats import Estimate

# how the record was measured (study.conformance.kink_shape's docstring gives the stencil)
METHOD = ("kink_shape: a second-order one-sided stencil on the float64 forward, off k; "
          "measured: reverse mode, float64, 0-d")
MEASURED_DTYPE = "float64"

# one call of several public functions, or a comparison's mask: shown, never judged
COMPOSITIONS = frozenset({"torch_where_gt", "torch_where_ge", "torch_mul_mask",
                          "torch_abs_average", "jax_where_gt", "jax_where_ge", "jax_mul_mask",
                          "jax_abs_average", "jax_softplus100"})


@dataclass(frozen=True)
class Tie:
    """At `kink`, x ties the operand `other` names; `fn(x, other)` is the call with that operand
    free and every other argument as the registry passes it. Left of the kink (x < other) one
    operand wins and right of it the other does, so the normal is (1, -1)."""
    kink: float
    other: str
    fn: Callable


def _ties() -> dict[str, tuple[Tie, ...]]:
    import jax.numpy as jnp
    import torch
    from jax import lax

    def six(x):
        return x.dtype.type(6)
    return {
        "torch_maximum0": (Tie(0.0, "other", torch.maximum),),
        "torch_max_zeros": (Tie(0.0, "other", torch.max),),
        "jax_maximum0": (Tie(0.0, "y", jnp.maximum),),
        "jax_lax_max_zeros": (Tie(0.0, "y", lax.max),),
        "jax_clip0": (Tie(0.0, "min", lambda x, lo: jnp.clip(x, lo)),),
        "jax_clip_0_6": (Tie(0.0, "min", lambda x, lo: jnp.clip(x, lo, 6)),
                         Tie(6.0, "max", lambda x, hi: jnp.clip(x, 0, hi))),
        "jax_lax_clamp_0_6": (Tie(0.0, "min", lambda x, lo: lax.clamp(lo, x, six(x))),
                              Tie(6.0, "max", lambda x, hi: lax.clamp(x.dtype.type(0), x, hi))),
    }


def ties_of(rule) -> dict[float, Tie]:
    """The rule's ties, by kink (none for an op of x alone)."""
    return {t.kink: t for t in _ties().get(rule.key, ())}


def kink_records(rule, device) -> list[dict]:
    """One record per kink of a built-in: its shape, the measured derivative, and at a tie the
    joint shape and gradient. A kink whose shape cannot be read (an API the release lacks, a
    limit that does not converge) is a record with `error`, the first line of what raised."""
    ties = ties_of(rule)
    return [{"part": "kinks", "framework": rule.framework, "rule": rule.key, "name": rule.name,
             "kind": rule.kind, "dtype": MEASURED_DTYPE, "device": device.name, "point": k,
             "judged": rule.key not in COMPOSITIONS, "method": METHOD,
             **_measured_kink(rule, k, ties.get(k), device)} for k in rule.kinks]


def _measured_kink(rule, k: float, tie: Tie | None, device) -> dict:
    try:
        out = {"shape": shape_record(kink_shape(float64_forward(rule), k))}
        if tie is not None:
            out["tie"] = {"operands": ["x", tie.other],
                          "shape": shape_record(kink_shape(_tie_forward(rule.framework, tie.fn),
                                                           (k, k), (1.0, -1.0)))}
    except Exception as exc:  # noqa: BLE001  recorded: the release lacks the op, or no limit
        return {"error": first_error_line(exc)}
    out["measured"] = _or_error_line(lambda: reverse_derivative(rule, k, MEASURED_DTYPE, device))
    if tie is not None:
        out["tie"]["measured"] = _or_error_line(
            lambda: joint_gradient(rule.framework, tie.fn, k, device))
    return out


def _or_error_line(measure: Callable):
    try:
        return measure()
    except Exception as exc:  # noqa: BLE001  a mode that raises is an outcome, as in the atlas
        return first_error_line(exc)


def _tie_forward(framework: str, fn: Callable):
    if framework == "torch":
        import torch

        def forward(x, y):
            with torch.no_grad():
                return fn(torch.from_numpy(x), torch.from_numpy(y)).numpy()
        return forward
    import jax.numpy as jnp

    def forward(x, y):
        return np.asarray(fn(jnp.asarray(x), jnp.asarray(y)))
    return forward


def joint_gradient(framework: str, fn: Callable, k: float, device) -> list[float]:
    """The gradient of fn(x, y) over both operands at x = y = k, by reverse mode in float64
    with a cotangent of 1, on 0-d inputs on `device`."""
    if framework == "torch":
        import torch
        x, y = (device.torch_tensor(k, dtype=torch.float64, requires_grad=True) for _ in "xy")
        grads = torch.autograd.grad(fn(x, y), (x, y), materialize_grads=True)
    else:
        import jax
        x, y = (device.to_jax(np.float64(k)) for _ in "xy")
        grads = jax.grad(fn, argnums=(0, 1))(x, y)
    return [float(device.to_numpy(g)) for g in grads]


def _estimate(e: Estimate) -> list[float]:
    return [e.value, e.lo, e.hi]


def shape_record(shape: KinkShape) -> dict:
    """A KinkShape as JSON: each limit [value, lo, hi], a gradient one such per operand, the
    curvature signs per direction probed, and the jump's height (0: continuous)."""
    return {"point": [float(p) for p in shape.point],
            "normal": [float(n) for n in shape.normal], "value": shape.value,
            "value_left": _estimate(shape.value_left),
            "value_right": _estimate(shape.value_right),
            "gradient_left": [_estimate(g) for g in shape.gradient_left],
            "gradient_right": [_estimate(g) for g in shape.gradient_right],
            "curvature_left": list(shape.curvature_left),
            "curvature_right": list(shape.curvature_right), "jump_height": shape.jump_height}

"""The kink records: a built-in's shape at each of its kinks, from its own float64 forward
(kink_shape, no autodiff), beside the derivative autodiff gives there.

A built-in is one public call. Where x ties another operand that the call passes as an array
(the rule's `ties`: torch.maximum, lax.max, a bound of jnp.clip), the record adds the shape over
both operands and the full gradient there. torch's Scalar bounds (torch.clamp(x, min=0)) are held
fixed. A rule that declares itself a `composition` is measured, never judged. The records hold
numbers only; the verdicts are read from them (study.conformance._listing).
"""
from typing import Callable

import numpy as np

from study.compare.stats import Estimate
from study.conformance._forward import float64_forward
from study.conformance._limits import KinkShape, kink_shape
from study.errors import first_error_line
from study.measure.probe import reverse_derivative
from study.measure.rule import NotInRelease, Rule, Tie

# how the record was measured (kink_shape's docstring gives the stencil)
METHOD = ("kink_shape: a second-order one-sided stencil on the float64 forward, off k; "
          "measured: reverse mode, float64, 0-d")
MEASURED_DTYPE = "float64"


def kink_records(rule: Rule, device) -> list[dict]:
    """One record per kink of a built-in (`kink_record`)."""
    return [kink_record(rule, k, device) for k in rule.kinks]


def kink_record(rule: Rule, k: float, device) -> dict:
    """A built-in at its kink k: its shape, the measured derivative, and at a tie the joint
    shape and gradient. A kink whose shape cannot be read (an API the release lacks, a limit
    that does not converge) is a record with `error`, the first line of what raised, and
    `in_release` False where the release lacks the op."""
    return {"part": "kinks", "framework": rule.framework, "rule": rule.key, "name": rule.name,
            "kind": rule.kind, "dtype": MEASURED_DTYPE, "device": device.name, "point": k,
            "judged": not rule.composition, "method": METHOD, "in_release": True,
            **_measured_kink(rule, k, rule.tie_at(k), device)}


def _measured_kink(rule: Rule, k: float, tie: Tie | None, device) -> dict:
    try:
        out = {"shape": shape_record(kink_shape(float64_forward(rule), k))}
        if tie is not None:
            out["tie"] = {"operands": ["x", tie.other],
                          "shape": shape_record(kink_shape(_tie_forward(rule.framework, tie.fn),
                                                           (k, k), (1.0, -1.0)))}
    except NotInRelease as exc:
        return {"in_release": False, "error": first_error_line(exc)}
    except Exception as exc:  # noqa: BLE001  recorded: no limit, or the op raised
        return {"error": first_error_line(exc)}
    out["measured"], out["error"] = _or_error_line(
        lambda: reverse_derivative(rule, k, MEASURED_DTYPE, device))
    if tie is not None:
        out["tie"]["measured"], out["tie"]["error"] = _or_error_line(
            lambda: joint_gradient(rule.framework, tie.fn, k, device))
    return out


def _or_error_line(measure: Callable) -> tuple:
    """(what `measure` returns, None), or (None, the first line of what it raised)."""
    try:
        return measure(), None
    except Exception as exc:  # noqa: BLE001  a mode that raises is an outcome, as in the atlas
        return None, first_error_line(exc)


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


def _stored_estimate(stored) -> Estimate:
    return Estimate(*(float(v) for v in stored))


def shape_of(stored: dict) -> KinkShape:
    """The KinkShape that `shape_record` stored."""
    return KinkShape(tuple(stored["point"]), tuple(stored["normal"]), float(stored["value"]),
                     _stored_estimate(stored["value_left"]),
                     _stored_estimate(stored["value_right"]),
                     tuple(_stored_estimate(g) for g in stored["gradient_left"]),
                     tuple(_stored_estimate(g) for g in stored["gradient_right"]),
                     tuple(stored["curvature_left"]), tuple(stored["curvature_right"]))

"""Measuring seed 000's clone: the same rule editing grad_output in place, graph by graph.
Both frameworks are imported when a case runs, not when the experiment is read."""
import functools

import numpy as np

from study.measure.probe import reverse_derivative
from study.measure.rules import by_key


@functools.cache
def inplace_rules() -> tuple:
    """(InPlaceReLU, jax_inplace_style_relu): seed 000's rule without the clone, zeroing
    grad_output itself, and the closest JAX spelling (arrays are immutable)."""
    import jax
    import jax.numpy as jnp

    from study.measure.custom_rules import MyReLU

    class InPlaceReLU(MyReLU):
        @staticmethod
        def backward(ctx, grad_output):
            input, = ctx.saved_tensors
            grad_output[input < 0] = 0
            return grad_output

    @jax.custom_vjp
    def jax_inplace_style_relu(x):
        return jnp.maximum(x, 0)

    jax_inplace_style_relu.defvjp(lambda x: (jnp.maximum(x, 0), x),
                                  lambda x, g: (g.at[x < 0].set(0),))
    return InPlaceReLU, jax_inplace_style_relu


def jax_grad(case: str, device) -> np.ndarray:
    import jax

    from study.workloads.clone_hazard import X, graphs
    loss_of = graphs()[case]
    rule = inplace_rules()[1]
    return device.to_numpy(jax.grad(lambda x: loss_of(rule, x, device.to_jax))(device.to_jax(X)))


def cases(scope: str) -> list[dict]:
    from study.workloads.clone_hazard import CASES
    return [{"case": c} for c in CASES] + [{"case": "at exactly 0"}]


def run_case(device, case: str) -> list[dict]:
    if case == "at exactly 0":
        seed = by_key("torch_myrelu_seed")
        return [{"part": "at_zero", "case": case, "dtype": "float32",
                 "seed_rule_at_0": reverse_derivative(seed, 0.0, "float32", device),
                 "seed_rule_at_minus_0": reverse_derivative(seed, -0.0, "float32", device),
                 "builtin_at_0": reverse_derivative(by_key("torch_relu"), 0.0, "float32", device),
                 "device": device.name}]
    import torch

    from study.measure.custom_rules import MyReLU
    from study.workloads.clone_hazard import (DTYPE, caught_by_detect_anomaly,
                                              caught_by_gradcheck, torch_grad)
    InPlaceReLU = inplace_rules()[0]
    correct, _, _ = torch_grad(torch.relu, case, device)
    cloning, _, clone_error = torch_grad(MyReLU.apply, case, device)
    inplace, warning, error = torch_grad(InPlaceReLU.apply, case, device)
    jax_g = jax_grad(case, device)
    wrong = inplace is not None and not np.array_equal(inplace, correct)
    gradcheck_catches, gradcheck_error = caught_by_gradcheck(InPlaceReLU.apply, case, device)
    return [{"part": "cases", "case": case, "device": device.name, "dtype": DTYPE,
             "correct": correct,
             "cloning_rule": cloning,
             "cloning_matches": cloning is not None and np.array_equal(cloning, correct),
             "inplace_rule": inplace, "silently_wrong": wrong, "warning": warning, "error": error,
             "gradcheck_catches": gradcheck_catches, "gradcheck_error": gradcheck_error,
             "detect_anomaly_catches": caught_by_detect_anomaly(InPlaceReLU.apply, case, device),
             "jax_rule": jax_g, "jax_matches": bool(np.allclose(jax_g, correct, rtol=1e-12,
                                                                atol=1e-12))}]

"""Measuring seed 000's clone: the same rule editing grad_output in place, graph by graph."""
import warnings

import jax
import jax.numpy as jnp
import numpy as np
import torch

from study.conventions import reverse_derivative
from study.errors import first_error_line
from study.rules import MyReLU, by_key

DTYPE = "float64"
X = np.array([-1.5, -0.5, 0.5, 2.0, -2.0, 1.0])  # no exact zero: the conventions agree here
W = np.array([0.5, -1.0, 2.0, 1.5, 3.0, -0.5])


class InPlaceReLU(MyReLU):
    """Seed 000's rule without the clone: the same forward, but zeroes grad_output itself."""

    @staticmethod
    def backward(ctx, grad_output):
        input, = ctx.saved_tensors
        grad_output[input < 0] = 0
        return grad_output


@jax.custom_vjp
def jax_inplace_style_relu(x):
    return jnp.maximum(x, 0)


jax_inplace_style_relu.defvjp(
    lambda x: (jnp.maximum(x, 0), x),
    lambda x, g: (g.at[x < 0].set(0),))  # the closest JAX spelling: arrays are immutable


def _graphs():
    """Case name -> loss(act, x, as_array), where as_array turns numpy constants into the
    framework's arrays, so one definition serves torch and JAX."""
    w = W
    two_layer_w1 = np.linspace(-1.0, 1.0, 6 * 4).reshape(6, 4)
    two_layer_w2 = np.linspace(1.0, -2.0, 4 * 2).reshape(4, 2)
    return {
        "fan-out: act(x) + act(-x)": lambda act, x, c: ((act(x) + act(-x)) * c(w)).sum(),
        "skip connection: act(x) + x": lambda act, x, c: ((act(x) + x) * c(w)).sum(),
        "loss = act(x).sum()": lambda act, x, c: act(x).sum(),
        "loss = act(x).mean()": lambda act, x, c: act(x).mean(),
        "seed 001 two-layer net": lambda act, x, c: (
            (act(x.reshape(1, 6) @ c(two_layer_w1)) @ c(two_layer_w2) - 1) ** 2).sum(),
        "output used twice: act(x) * w + act(x) ** 2": lambda act, x, c: (
            lambda y: (y * c(w) + y ** 2).sum())(act(x)),
        "activation applied twice: act(act(x) - 0.25)": lambda act, x, c: (
            act(act(x) - 0.25) * c(w)).sum(),
    }


CASES = tuple(_graphs())


def _torch_case(case: str, device):
    """(loss_of, numpy-to-torch converter, fresh leaf x) for one case, on the device."""
    def as_tensor(a):
        return device.to_torch(np.asarray(a), dtype=torch.float64)
    return _graphs()[case], as_tensor, device.to_torch(X, requires_grad=True, dtype=torch.float64)


def torch_grad(act, case: str, device):
    """(gradient or None, warning text, error text) of the case's loss w.r.t. x."""
    loss_of, c, x = _torch_case(case, device)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            loss_of(act, x, c).backward()
            grad, error = device.to_numpy(x.grad).copy(), None
        except Exception as exc:  # noqa: BLE001  the error is the measurement
            grad, error = None, first_error_line(exc)
    firsts = dict.fromkeys(str(w.message).split(". ")[0] + "." for w in caught)
    warning = " ".join(firsts) or None
    return grad, warning, error


def caught_by_gradcheck(act, case: str, device) -> bool | str:
    """Whether gradcheck flags the rule; if gradcheck itself raises, its error line, which
    the table shows as an error, never as a verdict."""
    loss_of, c, x = _torch_case(case, device)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the warning column already records them
        try:
            return not torch.autograd.gradcheck(lambda v: loss_of(act, v, c), (x,),
                                                raise_exception=False)
        except Exception as exc:  # noqa: BLE001  recorded as the error it is
            return first_error_line(exc)


def caught_by_detect_anomaly(act, case: str, device) -> bool:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # detect_anomaly announces itself with a UserWarning
        with torch.autograd.detect_anomaly(check_nan=True):
            _, _, error = torch_grad(act, case, device)
    return error is not None


def jax_grad(case: str, device) -> np.ndarray:
    loss_of = _graphs()[case]
    return device.to_numpy(jax.grad(lambda x: loss_of(jax_inplace_style_relu, x, device.to_jax))(
        device.to_jax(X)))


def cases(scope: str) -> list[dict]:
    return [{"case": c} for c in CASES] + [{"case": "at exactly 0"}]


def run_case(device, case: str) -> list[dict]:
    if case == "at exactly 0":
        seed = by_key("torch_myrelu_seed")
        return [{"case": case, "dtype": "float32",
                 "seed_rule_at_0": reverse_derivative(seed, 0.0, "float32", device),
                 "seed_rule_at_minus_0": reverse_derivative(seed, -0.0, "float32", device),
                 "builtin_at_0": reverse_derivative(by_key("torch_relu"), 0.0, "float32", device),
                 "device": device.name}]
    correct, _, _ = torch_grad(torch.relu, case, device)
    cloning, _, clone_error = torch_grad(MyReLU.apply, case, device)
    inplace, warning, error = torch_grad(InPlaceReLU.apply, case, device)
    jax_g = jax_grad(case, device)
    wrong = inplace is not None and not np.array_equal(inplace, correct)
    return [{"case": case, "device": device.name, "dtype": DTYPE, "correct": correct,
             "cloning_rule": cloning,
             "cloning_matches": cloning is not None and np.array_equal(cloning, correct),
             "inplace_rule": inplace, "silently_wrong": wrong, "warning": warning, "error": error,
             "gradcheck_catches": caught_by_gradcheck(InPlaceReLU.apply, case, device),
             "detect_anomaly_catches": caught_by_detect_anomaly(InPlaceReLU.apply, case, device),
             "jax_rule": jax_g, "jax_matches": bool(np.allclose(jax_g, correct, rtol=1e-12,
                                                                atol=1e-12))}]

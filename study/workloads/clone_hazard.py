"""The clone hazard's graphs: a rule that edits grad_output in place, where the same gradient
tensor also flows elsewhere (fan-out, a skip connection, `.sum()`'s expanded ones, ...).

    >>> grad, warning, error = torch_grad(MyReLU.apply, "skip connection: act(x) + x", cpu)

Each graph is a loss(act, x, as_array) at X (no exact zero: every convention agrees there), so
that one definition serves torch and JAX.
"""
import warnings

import numpy as np
import torch

from study.errors import first_error_line

DTYPE = "float64"
X = np.array([-1.5, -0.5, 0.5, 2.0, -2.0, 1.0])  # no exact zero: the conventions agree here
W = np.array([0.5, -1.0, 2.0, 1.5, 3.0, -0.5])


def graphs():
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


CASES = tuple(graphs())


def torch_case(case: str, device):
    """(loss_of, numpy-to-torch converter, fresh leaf x) for one case, on the device."""
    def as_tensor(a):
        return device.to_torch(np.asarray(a), dtype=torch.float64)
    return graphs()[case], as_tensor, device.to_torch(X, requires_grad=True, dtype=torch.float64)


def torch_grad(act, case: str, device):
    """(gradient or None, warning text, error text) of the case's loss w.r.t. x."""
    loss_of, c, x = torch_case(case, device)
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


def caught_by_gradcheck(act, case: str, device) -> tuple[bool | None, str | None]:
    """(whether gradcheck flags the rule, None), or (None, its error line) where gradcheck
    itself raises: the table shows that as an error, never as a verdict."""
    loss_of, c, x = torch_case(case, device)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the warning column already records them
        try:
            return not torch.autograd.gradcheck(lambda v: loss_of(act, v, c), (x,),
                                                raise_exception=False), None
        except Exception as exc:  # noqa: BLE001  recorded as the error it is
            return None, first_error_line(exc)


def caught_by_detect_anomaly(act, case: str, device) -> bool:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # detect_anomaly announces itself with a UserWarning
        with torch.autograd.detect_anomaly(check_nan=True):
            _, _, error = torch_grad(act, case, device)
    return error is not None


class _CloneIncoming(torch.autograd.Function):
    """Identity whose backward hands on a fresh copy of the incoming gradient."""

    @staticmethod
    def forward(ctx, y):
        return y.clone()

    @staticmethod
    def backward(ctx, grad):
        return grad.clone()


def guarded(act):
    """act with its output passed through _CloneIncoming: act's backward then receives a
    gradient tensor nobody else holds, so writing into it changes nothing else."""
    return lambda x: _CloneIncoming.apply(act(x))

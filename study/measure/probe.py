"""The one probe: what a rule gives at given inputs, as typed cells.

    >>> cells = measure(by_key("torch_hardtanh"), [float("nan"), 0.0], "float32",
    ...                 Device("cpu"), ("fill", "0-d"))
    >>> cells["reverse"][0]      # Placed: 0 in fill's vector body, 1 in its tail and at 0-d

For each input, mode and execution the probe measures every placement asked for
(study.measure.placement) and collapses what each position gave into one cell
(study.compare.cells: a Value, an Error, or a Placed cell where positions disagree); a caller
that wants one placement reads `cell.at([placement])`. Modes:

    value     f(x)
    reverse   the vector-Jacobian product with a cotangent (1 unless given, per input)
    forward   the Jacobian-vector product with a tangent of 1
    second    d/dx of the reverse derivative's sum (eagerly only)

Executions: eager, and compiled (torch.compile with inductor, fullgraph; jax.jit), where the
ops of one framework are compiled together (study.measure.compiled). The atlas, `study check`
and the conformance's one-sided limits all measure here; `numeric_check` is the one call of
torch.autograd.gradcheck and jax's check_grads.

Each framework is imported only when one of its rules is measured.
"""
import math

import numpy as np

from study.compare.cells import Cell, Error, collapse
from study.errors import StudyError, first_error_line
from study.measure.compiled import compiled_outcomes
from study.measure.devices import Device
from study.measure.inputs import numpy_dtype, torch_dtype
from study.measure.placement import (TORCH_ONLY, placed_arrays, placed_cotangents,
                                     read_placed)
from study.measure.rule import Rule

MODES = ("value", "reverse", "forward", "second")
COMPILERS = {"torch": "torch.compile(backend='inductor', fullgraph=True)", "jax": "jax.jit"}
# where compiled code is measured by default: the placement each framework's eager standard run
# also measures, where every input fills a row of FILL_LENGTH (a vector body and a tail)
COMPILED_PLACEMENTS = {"torch": ("fill",), "jax": ("2-D rows",)}
FD_EPS = 1e-6  # the central difference's step, for numeric_check and finite_difference
NUMERIC_ATOL = 1e-5  # gradcheck's absolute tolerance


def _torch_mode(fn, array, dtype: str, device: Device, mode: str, cotangent, strided: bool):
    import torch

    def view(t):
        return t[:, 0] if strided else t
    x = device.to_torch(array, requires_grad=mode in ("reverse", "second"),
                        dtype=torch_dtype(dtype))
    if mode == "value":
        return fn(view(x))
    if mode == "forward":
        return torch.func.jvp(lambda t: fn(view(t)), (x,), (torch.ones_like(x),))[1]
    if mode == "reverse":
        y = fn(view(x))
        y.backward(torch.ones_like(y) if cotangent is None
                   else device.to_torch(one_element_as(cotangent, tuple(y.shape)),
                                        dtype=y.dtype))
        return view(torch.zeros_like(x) if x.grad is None else x.grad)
    g, = torch.autograd.grad(fn(view(x)).sum(), x, create_graph=True)
    if not g.requires_grad:  # the first derivative is a constant to autograd
        return view(torch.zeros_like(g))
    h, = torch.autograd.grad(view(g).sum(), x, allow_unused=True)
    return view(torch.zeros_like(g) if h is None else h)


def _jax_mode(fn, array, dtype: str, device: Device, mode: str, cotangent):
    import jax
    import jax.numpy as jnp
    x = device.to_jax(np.asarray(array, np.float64).astype(numpy_dtype(dtype)))
    if str(x.dtype) != dtype:  # JAX narrows float64 silently unless x64 is on
        raise StudyError(f"JAX holds {dtype} as {x.dtype} here: jax_enable_x64 is off "
                         f"(study.measure.frameworks.use_shared_settings turns it on)")
    if mode == "value":
        return fn(x)
    if mode == "forward":
        return jax.jvp(fn, (x,), (jnp.ones_like(x),))[1]
    if mode == "reverse":
        y, pullback = jax.vjp(fn, x)
        cot = (jnp.ones_like(y) if cotangent is None else device.to_jax(
            one_element_as(np.asarray(cotangent, np.float64), y.shape).astype(y.dtype)))
        return pullback(cot)[0]
    grad = jax.grad(lambda v: jnp.sum(fn(v)))
    return jax.grad(lambda v: jnp.sum(grad(v)))(x)


def one_element_as(array: np.ndarray, shape: tuple) -> np.ndarray:
    """`array` in `shape` where both hold one element, else as it is. A rule multiplying by a
    parameter of shape (1,) (a quantiser's learned clip or scale) maps a 0-d x to shape (1,):
    one element for one element is still that element's value, so it is measured, its value
    read and its cotangent given in the other side's shape."""
    if np.shape(array) != tuple(shape) and np.size(array) == 1 == math.prod(shape):
        return np.reshape(array, shape)
    return array


def returned(rule: Rule, array, dtype: str, device: Device):
    """What the rule returns at `array` (cast to `dtype`), eagerly, as it returns it: for
    study.check to judge before it measures."""
    if rule.framework == "torch":
        return _torch_mode(rule.fn, array, dtype, device, "value", None, False)
    return _jax_mode(rule.fn, array, dtype, device, "value", None)


def evaluate(rule: Rule, array, dtype: str, device: Device, mode: str = "value",
             cotangent=None, strided: bool = False) -> np.ndarray:
    """One eager call: the mode's result at `array` (cast to `dtype`) on the host, float64,
    in the input's shape where it is one element (one_element_as). `cotangent`: the reverse
    mode's, an array of the output's shape (None: ones). `strided`: the rule reads x[:, 0] of
    a 2-column array (torch). Raises what the rule raises."""
    if rule.framework == "torch":
        got = _torch_mode(rule.fn, array, dtype, device, mode, cotangent, strided)
    else:
        got = _jax_mode(rule.fn, array, dtype, device, mode, cotangent)
    return one_element_as(device.to_host(got), np.shape(array))


def reverse_derivative(rule: Rule, x0: float, dtype: str, device: Device) -> float:
    """d rule(x)/dx at the 0-d scalar x0, by reverse mode with a cotangent of 1."""
    return float(evaluate(rule, np.asarray(x0, np.float64), dtype, device, "reverse"))


def _outcome(rule, array, dtype, device, mode, cotangent, strided):
    try:
        return evaluate(rule, array, dtype, device, mode, cotangent, strided)
    except StudyError:  # the study's setting, not the rule: never a measured outcome
        raise
    except Exception as exc:  # noqa: BLE001  a mode that raises is a measured outcome
        return Error(first_error_line(exc))


def measure(rule: Rule, values, dtype: str, device: Device, placements,
            modes=MODES, cotangents=None) -> dict[str, list[Cell]]:
    """{mode: a cell per input}, eagerly, each collapsed over `placements` and their
    positions. `cotangents`: the reverse mode's, one per input (None: 1)."""
    values = list(values)
    n = len(values)
    if rule.framework == "jax":
        placements = [p for p in placements if p not in TORCH_ONLY]
    measured = {m: [{} for _ in range(n)] for m in modes}
    for placement in placements:
        arrays = placed_arrays(placement, values, dtype)
        cots = (placed_cotangents(placement, cotangents) if cotangents is not None
                else [None] * len(arrays))
        for mode in modes:
            outputs = [_outcome(rule, a, dtype, device, mode, c if mode == "reverse" else None,
                                placement == "strided") for a, c in zip(arrays, cots)]
            for i, cells in enumerate(read_placed(placement, outputs, n)):
                measured[mode][i][placement] = cells
    return {m: [collapse(by_placement) for by_placement in measured[m]] for m in modes}


def measure_compiled(rules: list[Rule], values: list, dtype: str, device: Device,
                     placements, passes=("train", "forward")) -> list[dict]:
    """Per rule (all of one framework), compiled together (study.measure.compiled): {"cells":
    {mode: a cell per input, collapsed over placements}, "graph_ops": {mode: how many ops
    shared the op's graph}}, for the compiled passes asked for ("train": value and reverse;
    "forward": forward)."""
    got = compiled_outcomes(rules, [list(v) for v in values], dtype, device, tuple(placements),
                            tuple(passes))
    return [{"cells": {m: [collapse({p: by_placement[p][i] for p in by_placement})
                           for i in range(len(v))] for m, by_placement in g["outcome"].items()},
             "graph_ops": g["graph_ops"]} for g, v in zip(got, values)]


def finite_difference(rule: Rule, x0: float, device: Device, eps: float = FD_EPS) -> float:
    """The central difference of the rule's float64 value at the 0-d point x0."""
    def f(v: float) -> float:
        return float(evaluate(rule, np.asarray(v, np.float64), "float64", device))
    return (f(x0 + eps) - f(x0 - eps)) / (2 * eps)


NUMERIC_CHECKERS = {"torch": "torch.autograd.gradcheck", "jax": "jax.test_util.check_grads"}


def numeric_check(rule: Rule, point: float, device: Device) -> str:
    """The framework's own numeric check (NUMERIC_CHECKERS) of the reverse derivative against
    finite differences (step FD_EPS) at [point] in float64: "passed", "failed", or the line the
    checker raised."""
    try:
        if rule.framework == "torch":
            import torch
            x = device.torch_tensor([point], dtype=torch.float64, requires_grad=True)
            ok = torch.autograd.gradcheck(rule.fn, (x,), eps=FD_EPS, atol=NUMERIC_ATOL,
                                          raise_exception=False)
            return "passed" if ok else "failed"
        from jax.test_util import check_grads
        check_grads(rule.fn, (device.to_jax(np.array([point])),), order=1, modes=("rev",),
                    eps=FD_EPS)
        return "passed"
    except AssertionError:
        return "failed"
    except Exception as exc:  # noqa: BLE001  the checker raising is reported as it is
        return first_error_line(exc)


def operand_arrays(rule: Rule, inputs) -> list[np.ndarray]:
    """A built-in of several inputs' flat inputs (float64) as the arrays it takes, in its
    operands' shapes (row-major)."""
    flat, out, at = np.asarray(inputs, np.float64), [], 0
    for _, shape in rule.operands:
        size = math.prod(shape)
        out.append(flat[at:at + size].reshape(shape))
        at += size
    return out


def _torch_jacobian(fn, arrays, dtype: str, device: Device) -> np.ndarray:
    import torch
    xs = [device.to_torch(a, requires_grad=True, dtype=torch_dtype(dtype)) for a in arrays]
    y = fn(*xs)
    rows = []
    for j in range(y.numel()):
        cotangent = torch.zeros(y.numel(), dtype=y.dtype, device=y.device)
        cotangent[j] = 1
        grads = torch.autograd.grad(y, xs, cotangent.reshape(y.shape), retain_graph=True,
                                    allow_unused=True, materialize_grads=True)
        rows.append(np.concatenate([device.to_host(g).reshape(-1) for g in grads]))
    return np.stack(rows)


def _jax_rows(fn):
    import jax
    import jax.numpy as jnp

    def rows(*xs):
        y, pullback = jax.vjp(fn, *xs)
        units = jnp.eye(y.size, dtype=y.dtype)
        return [jnp.concatenate([g.reshape(-1) for g in pullback(units[j].reshape(y.shape))])
                for j in range(y.size)]
    return rows


def _tie_caller(rule: Rule, dtype: str, device: Device, compiled: bool):
    """arrays -> the Jacobian's rows, eagerly or compiled once for every call."""
    if rule.framework == "torch":
        if not compiled:
            return lambda arrays: _torch_jacobian(rule.fn, arrays, dtype, device)
        import torch
        from study.measure.compiled import NotCompiled, _counting_inductor
        graphs: list = []
        torch._dynamo.reset()  # an empty cache: no earlier op's graphs count against its limit
        fn = torch.compile(lambda *xs: rule.fn(*xs), backend=_counting_inductor(graphs),
                           fullgraph=True)

        def call(arrays):
            out = _torch_jacobian(fn, arrays, dtype, device)
            if not graphs:
                raise NotCompiled("torch.compile compiled no graph")
            return out
        return call
    import jax
    rows = jax.jit(_jax_rows(rule.fn)) if compiled else _jax_rows(rule.fn)

    def call(arrays):
        xs = [device.to_jax(a.astype(numpy_dtype(dtype))) for a in arrays]
        if any(str(x.dtype) != dtype for x in xs):
            raise StudyError(f"JAX holds {dtype} as {xs[0].dtype} here: jax_enable_x64 is off")
        return np.stack([device.to_host(r) for r in rows(*xs)])
    return call


def tie_jacobians(rule: Rule, points, dtype: str, device: Device, compiled: bool = False
                  ) -> list[np.ndarray | Error]:
    """At each point (a built-in of several inputs' flat inputs, cast to `dtype`), the Jacobian
    of its output over every input, by reverse mode: a row per output element (flat), measured
    with a cotangent of 1 on that element and 0 on the others, and a column per input; float64
    on the host. An Error where the call or its backward raised. `compiled`: torch.compile
    (inductor, fullgraph) or jax.jit, compiled once for every point."""
    call = _tie_caller(rule, dtype, device, compiled)
    out = []
    for point in points:
        try:
            out.append(call(operand_arrays(rule, point)))
        except StudyError:
            raise
        except Exception as exc:  # noqa: BLE001  a tie whose gradient raises is an outcome
            out.append(Error(first_error_line(exc)))
    return out


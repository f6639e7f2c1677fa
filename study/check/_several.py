"""A rule of several inputs of one shape (x, y; x, min, max) measured as study.check._probe
measures a rule of x: its value and its gradient over every input at once (points are rows, one
input a column, each input an array of the points), the checks that it is elementwise in all of
them, linearity in the cotangent, determinism and gradcheck. Its ties: study.check._ties."""
from dataclasses import replace

import numpy as np

from study.check._findings import PROSE, Finding, Where
from study.check._judges import not_linear
from study.check._load import UsageError, output_problem
from study.check._probe import (COTANGENTS, FD_FIGURES, SMOOTH_POINTS, _bitwise_equal,
                                _same_rng, _unjudged, determinism_row, mixing_entries,
                                restore_rng, rng_states)
from study.compare.cells import Value, equal
from study.errors import StudyError, first_error_line
from study.measure.inputs import numpy_dtype, torch_dtype
from study.measure.probe import FD_EPS, NUMERIC_ATOL
from study.measure.rule import Rule
from study.report.format import text
from study.report.prose import say

PROBE = np.array([-1.5, -0.25, 0.5, 2.0, 3.25])  # input i holds it turned i steps: all differ
GRADCHECK_POINTS = 5  # rows of SMOOTH_POINTS, each input a third of the way further along


def _arrays(rule: Rule, points: np.ndarray, dtype: str, device, grad: bool) -> list:
    """Each input as an array of the framework holding its column of `points`, in `dtype`."""
    if rule.framework == "torch":
        return [device.to_torch(column, requires_grad=grad, dtype=torch_dtype(dtype))
                for column in np.asarray(points, np.float64).T]
    xs = [device.to_jax(column.astype(numpy_dtype(dtype))) for column in
          np.asarray(points, np.float64).T]
    if any(str(x.dtype) != dtype for x in xs):  # JAX narrows float64 silently unless x64 is on
        raise StudyError(f"JAX holds {dtype} as {xs[0].dtype} here: jax_enable_x64 is off")
    return xs


def evaluate(rule: Rule, points, dtype: str, device, cotangent=None) -> tuple:
    """(value, gradient) at each row of `points` (one input a column), eagerly, on the host as
    float64: the gradient, rows by inputs, by reverse mode with `cotangent` (a number, or one
    per row), None where no cotangent is given. Raises what the rule raises."""
    points = np.atleast_2d(np.asarray(points, np.float64))
    xs = _arrays(rule, points, dtype, device, cotangent is not None)
    if rule.framework == "torch":
        y = rule.fn(*xs)
        if cotangent is None:
            return device.to_host(y).reshape(-1), None
        import torch
        cot = device.to_torch(np.broadcast_to(np.asarray(cotangent, np.float64), tuple(y.shape)),
                              dtype=y.dtype)
        grads = torch.autograd.grad(y, xs, cot, allow_unused=True)
        return device.to_host(y).reshape(-1), np.stack(
            [np.zeros(len(points)) if g is None else device.to_host(g).reshape(-1)
             for g in grads], axis=1)
    if cotangent is None:
        return device.to_host(rule.fn(*xs)).reshape(-1), None
    import jax
    y, pullback = jax.vjp(rule.fn, *xs)
    cot = device.to_jax(np.broadcast_to(np.asarray(cotangent, np.float64), y.shape)
                        .astype(numpy_dtype(str(y.dtype))))
    return device.to_host(y).reshape(-1), np.stack(
        [device.to_host(g).reshape(-1) for g in pullback(cot)], axis=1)


def evaluate_each(rule: Rule, points, dtype: str, device, cotangent) -> tuple:
    """evaluate's (value, gradient) and the error line per row: one call, or where it raises,
    one call per row (a rule raising at NaN raises there alone), NaN where a row raises."""
    points = np.atleast_2d(np.asarray(points, np.float64))
    cot = np.broadcast_to(np.asarray(cotangent, np.float64), (len(points),))
    try:
        return (*evaluate(rule, points, dtype, device, cot), [None] * len(points))
    except StudyError:
        raise
    except Exception:  # noqa: BLE001  whatever the user's rule raises: found row by row
        pass
    values, grads, errors = [], [], []
    for row, u in zip(points, cot):
        try:
            value, grad = evaluate(rule, row[None, :], dtype, device, u)
            values.append(value[0]), grads.append(grad[0]), errors.append(None)
        except Exception as exc:  # noqa: BLE001
            values.append(np.nan), grads.append(np.full(points.shape[1], np.nan))
            errors.append(first_error_line(exc))
    return np.array(values), np.array(grads), errors


def forward64(rule: Rule, device):
    """The rule's float64 value at each row, as study.conformance's tie_shape reads a forward:
    a column of outputs (one) per row; no autodiff."""
    return lambda rows: evaluate(rule, rows, "float64", device)[0][:, None]


def gradient_text(g) -> str:
    """'(0.5, 0.5)': a gradient over several inputs."""
    return "(" + ", ".join(text(float(v)) for v in g) + ")"


def point_label(names, point) -> str:
    """'x = 0, y = -0': every input's value, as a finding's where names it."""
    return ", ".join(f"{name} = {text(float(v))}" for name, v in zip(names, point))


def _probe_points(n: int) -> np.ndarray:
    return np.stack([np.roll(PROBE, i) for i in range(n)], axis=1)


def _raw(rule: Rule, points: np.ndarray, shape: tuple, device):
    """What the rule returns for its inputs in float64, each in `shape`, as it returns it."""
    xs = _arrays(rule, points, "float64", device, False)
    return rule.fn(*(x.reshape(shape) for x in xs))


def output_problem_at(rule: Rule, device) -> str | None:
    """study.check._load.output_problem of what the rule returns for its inputs as vectors
    (raising what it raises there, as a UsageError), then as 0-d, of shape (1,) and in 2-D."""
    points, n = _probe_points(len(rule.operands)), len(rule.operands)
    try:
        problem = output_problem(_raw(rule, points, (len(points),), device), (len(points),),
                                 rule.framework, n)
    except StudyError:
        raise
    except Exception as exc:  # noqa: BLE001  whatever the user's rule raises
        raise UsageError(f"the rule raises on {n} inputs of shape [{len(points)}] "
                         f"({point_label(rule.input_labels(), points[0])}, ...): "
                         f"{first_error_line(exc)}") from None
    square = np.concatenate([points, points[::-1]])
    for rows, shape in ((points[:1], ()), (points[:1], (1,)), (square, (2, len(points)))):
        if problem is not None:
            break
        try:
            y = _raw(rule, rows, shape, device)
        except Exception:  # noqa: BLE001  a shape it refuses: measured in vectors alone
            continue
        problem = output_problem(y, shape, rule.framework, n)
    return problem


def check_callable(rule: Rule, device) -> list[Finding]:
    """A UsageError where the rule raises on vectors or returns no elementwise value; a
    not_elementwise finding where y[k] depends on an input's element j != k (a Jacobian over
    that input with an entry off its diagonal), or moves when every input is reversed."""
    problem = output_problem_at(rule, device)
    if problem:
        raise UsageError(problem)
    points, names = _probe_points(len(rule.operands)), rule.input_labels()
    try:
        rows = [evaluate(rule, points, "float64", device, np.eye(len(points))[k])[1]
                for k in range(len(points))]
    except StudyError:
        raise
    except Exception as exc:  # noqa: BLE001  whatever the user's backward raises
        raise UsageError(f"the rule's gradient raises on {len(names)} inputs of shape "
                         f"[{len(points)}] ({point_label(names, points[0])}, ...): "
                         f"{first_error_line(exc)}") from None
    where = Where("elementwise", "float64", "eager")
    for i, name in enumerate(names):
        off = mixing_entries(np.array([row[:, i] for row in rows]))
        if off:
            k, j = off[0]
            return [Finding("not_elementwise", replace(where, input=f"{points[j, i]:g}"),
                            f"d f[{k}] / d {name}[{j}] = {text(rows[k][j, i], None)} at "
                            + ", ".join(f"{n} = {text(column.tolist(), None)}"
                                        for n, column in zip(names, points.T)),
                            "0 off the diagonal")]
    straight = evaluate(rule, points, "float64", device)[0][::-1]
    turned = evaluate(rule, points[::-1].copy(), "float64", device)[0]
    moved = np.flatnonzero(~((straight == turned) | (np.isnan(straight) & np.isnan(turned))))
    if moved.size:
        k = int(moved[0])
        return [Finding("not_elementwise", replace(where, input=f"{points[::-1][k, 0]:g}"),
                        f"f[{k}] of f(inputs reversed) differs from f[{len(points) - 1 - k}] "
                        f"of f(inputs)", "f(inputs reversed) = f(inputs) reversed")]
    return []


def ordinary_points(n: int) -> np.ndarray:
    """GRADCHECK_POINTS rows of SMOOTH_POINTS, input i three places further along: no two
    inputs tie (the nearest differ by 1.5)."""
    s = len(SMOOTH_POINTS)
    return np.array([[SMOOTH_POINTS[(r + 3 * i) % s] for i in range(n)]
                     for r in range(GRADCHECK_POINTS)])


def _linear_cells(name, u, g, g1, errors, dtype, cells: dict, m: int) -> tuple[int, int]:
    """Each judged (point, input) of one call against u × its value at u = 1 into `cells` (by
    point modulo m: a mixed call's copies are its points again); (judged, differing)."""
    judged = differ = 0
    for k, i in np.ndindex(g.shape):
        if errors[k] or np.isnan(g1[k, i]) or _unjudged(u[k] * g1[k, i], dtype):
            continue
        linear = equal(Value(float(g[k, i])), Value(float(u[k] * g1[k, i])))
        cells.setdefault((k % m, i), []).append((name, u[k], g[k, i], g1[k, i], linear))
        judged, differ = judged + 1, differ + (not linear)
    return judged, differ


def linearity(rule: Rule, dtype: str, points, labels, section: str, device) -> tuple:
    """(rows, findings, {cotangent: gradient}, the error line per point at u = 1): the
    gradient at each point with each of COTANGENTS, and once with them mixed across copies of
    the points, held against u × its value at u = 1 exactly (study.check._probe.linearity); one
    vjp_not_linear finding per point and input that is not linear."""
    points, names = np.atleast_2d(np.asarray(points, np.float64)), rule.input_labels()
    m, where = len(points), "ties" if section == "ties" else "ordinary"
    _, g1, errors1 = evaluate_each(rule, points, dtype, device, 1.0)
    gradients, rows, cells = {"1": g1}, [], {}
    tiled = np.tile(points, (len(COTANGENTS), 1))
    g1_tiled = evaluate_each(rule, tiled, dtype, device, 1.0)[1]
    calls = [(f"{u:g}", points, np.full(m, u), g1) for u in COTANGENTS[1:]]
    for name, at, u, reference in calls + [("mixed", tiled, np.repeat(COTANGENTS, m), g1_tiled)]:
        _, g, errors = evaluate_each(rule, at, dtype, device, u)
        if name != "mixed":
            gradients[name] = g
        judged, differ = _linear_cells(name, u, g, reference, errors, dtype, cells, m)
        rows.append({"dtype": dtype, "points": where, "cotangent": name, "judged": judged,
                     "unjudged": g.size - judged, "differ": differ})
    found = [not_linear(Where(section, dtype, "eager",
                              transformation=f"d/d{names[i]} at {labels[k]}"), g1[k, i], c)
             for (k, i), c in cells.items() if not all(cell[4] for cell in c)]
    return rows, found, gradients, errors1


def determinism(rule: Rule, dtype: str, points, labels, device) -> tuple[dict, list[Finding]]:
    """Three calls of value and gradient at every point, bit for bit, and whether a call draws
    from torch's, numpy's or Python's RNG (restored after)."""
    before = rng_states()
    try:
        calls = [evaluate(rule, points, dtype, device, 1.0) for _ in range(3)]
        consumed = not _same_rng(before, rng_states())
    except Exception as exc:  # noqa: BLE001
        return {"dtype": dtype, "error": first_error_line(exc)}, []
    finally:
        restore_rng(before)
    found = []
    for k, label in enumerate(labels):
        seen = [(float(c[0][k]), c[1][k].tolist()) for c in calls]
        if any(not _bitwise_equal(np.array(s[1] + [s[0]]), np.array(seen[0][1] + [seen[0][0]]))
               for s in seen[1:]):
            found.append(Finding("not_deterministic",
                                 Where("determinism", dtype, "eager", transformation=label),
                                 say(PROSE, "per_call", seen=text(seen, None)),
                                 say(PROSE, "expected", kind="not_deterministic")))
    return determinism_row(dtype, found, consumed)


def numeric_check(rule: Rule, point, device) -> str:
    """The framework's own numeric check (torch.autograd.gradcheck, jax's check_grads) over
    every input at `point`, in float64: "passed", "failed", or the line the checker raised."""
    try:
        if rule.framework == "torch":
            import torch
            xs = tuple(device.torch_tensor([v], dtype=torch.float64, requires_grad=True)
                       for v in point)
            ok = torch.autograd.gradcheck(rule.fn, xs, eps=FD_EPS, atol=NUMERIC_ATOL,
                                          raise_exception=False)
            return "passed" if ok else "failed"
        from jax.test_util import check_grads
        check_grads(rule.fn, tuple(device.to_jax(np.array([v])) for v in point), order=1,
                    modes=("rev",), eps=FD_EPS)
        return "passed"
    except AssertionError:
        return "failed"
    except Exception as exc:  # noqa: BLE001  the checker raising is reported as it is
        return first_error_line(exc)


def gradcheck(rule: Rule, device) -> tuple[list[dict], list[Finding]]:
    """The numeric check at ordinary_points (no two inputs tie); a failure is a finding, each
    input's reverse derivative against its central difference. A point where the value is not
    finite is outside the rule's domain: not checked."""
    names, rows, found = rule.input_labels(), [], []
    for point in ordinary_points(len(names)):
        label = f"({', '.join(names)}) = {gradient_text(point)}"
        try:
            value, _ = evaluate(rule, point[None, :], "float64", device)
            outcome = (None if np.isfinite(value[0])
                       else f"value {text(float(value[0]))}: not checked")
        except Exception:  # noqa: BLE001  numeric_check reports it
            outcome = None
        outcome = outcome or numeric_check(rule, point, device)
        rows.append({"x": point.tolist(), "label": label, "at_kink": False, "outcome": outcome})
        if outcome == "failed":
            _, g = evaluate(rule, point[None, :], "float64", device, 1.0)
            steps = FD_EPS * np.eye(len(point))
            ahead, behind = (evaluate(rule, point + sign * steps, "float64", device)[0]
                             for sign in (1, -1))
            difference = ((ahead - behind) / (2 * FD_EPS)).tolist()
            found.append(Finding("gradcheck_fails",
                                 Where("gradcheck", "float64", "eager", transformation=label),
                                 f"reverse {text(g[0].tolist(), None)}",
                                 f"≈ {text(difference, FD_FIGURES)}, the central difference "
                                 f"(step {FD_EPS:g})"))
    return rows, found

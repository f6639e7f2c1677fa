"""The rule at the inputs where rules differ and at ordinary ones: conventions, linearity,
determinism and gradcheck, each measured by the study's one probe (study.measure.probe) and
turned into rows and findings (the judging of measured rows: study.check._judges)."""
import random
from dataclasses import replace

import numpy as np

from study.check._findings import PROSE, Finding, Where
from study.check._judges import not_linear
from study.check._load import UsageError, output_problem
from study.compare.cells import Cell, Placed, Value, equal
from study.errors import first_error_line
from study.measure.inputs import finfo, numpy_dtype, ordinary_inputs, probe_inputs
from study.measure.probe import (FD_EPS, evaluate, finite_difference, measure,
                                 measure_compiled, numeric_check, returned,
                                 reverse_derivative)
from study.measure.rule import Rule
from study.report.format import text
from study.report.prose import say

SCAN = np.arange(-1024, 1025) / 128  # [-8, 8] in exact steps of 1/128
SCAN_STEP = 2.0 ** -20  # one-sided derivatives are taken this far either side of a scan point
KINK_JUMP = 1e-3  # a jump in the derivative larger than this (relative) is a kink
COTANGENTS = (1.0, 2.0, -1.0, 0.5)  # ± powers of two: u * g is exact unless it leaves the range
SMOOTH_POINTS = (-2.75, -1.3, -0.6, -0.15, 0.35, 0.9, 1.6, 4.2, 7.1)
SMOOTH_MARGIN = 1e-3  # a gradcheck point this close to a kink is not smooth
FD_FIGURES = 6  # the digits a central difference of step 1e-6 determines, about


def bits(value: float, dtype: str) -> str:
    """The exact bits of value in dtype, as hex: '0x80000000' is float32's -0.0."""
    width = np.dtype(numpy_dtype(dtype)).itemsize
    raw = np.asarray(value, np.float64).astype(numpy_dtype(dtype)).reshape(1)
    return "0x" + raw.view(f"u{width}")[0].item().to_bytes(width, "big").hex()


def vjp(rule: Rule, array: np.ndarray, dtype: str, cotangent, device) -> tuple:
    """(value, reverse derivative with this cotangent) on the host as float64, eagerly
    (study.measure.probe.evaluate); `cotangent` is an array of x's shape or a number filling
    one."""
    cot = np.broadcast_to(np.asarray(cotangent, np.float64), np.shape(array))
    return (evaluate(rule, array, dtype, device, "value"),
            evaluate(rule, array, dtype, device, "reverse", cot))


ELEMENTWISE_PROBES = ([-1.5, -0.25, 0.5, 2.0, 3.25], [0.5, 2.0, 3.25], [-1.5, -0.25])


def _first_input_it_takes(rule: Rule, device) -> np.ndarray:
    """The first of ELEMENTWISE_PROBES the rule's forward and reverse run on (a rule may
    refuse negatives, say); a UsageError where it takes none, or where output_problem_at
    finds what it returns there no elementwise value."""
    first_error = None
    for values in ELEMENTWISE_PROBES:
        x = np.array(values)
        try:
            problem = output_problem_at(rule, x, device)
            if problem is None:
                vjp(rule, x, "float64", 1.0, device)
        except Exception as exc:  # noqa: BLE001  whatever the user's rule raises
            first_error = first_error or f"{x.tolist()}: {first_error_line(exc)}"
            continue
        if problem:
            raise UsageError(problem)
        return x
    raise UsageError(f"the rule raises on every input tried, e.g. {first_error}")


def output_problem_at(rule: Rule, x: np.ndarray, device) -> str | None:
    """study.check._load.output_problem of what the rule returns at x (raising what it raises
    there), then at each other shape the placements measure where it runs: x's first element
    as 0-d and as shape (1,), and x in 2-D."""
    problem = output_problem(returned(rule, x, "float64", device), x.shape, rule.framework)
    for placed in (np.asarray(x[0]), x[:1], np.stack([x, x[::-1]])):
        if problem is not None:
            break
        try:
            y = returned(rule, placed, "float64", device)
        except Exception:  # noqa: BLE001  a shape it refuses is measured so: an error cell
            continue
        problem = output_problem(y, placed.shape, rule.framework)
    return problem


def twin_output_problem(rule: Rule, device) -> str | None:
    """output_problem_at the first of ELEMENTWISE_PROBES the twin runs on; None where it runs
    on none (its cells are errors then, compared as they are)."""
    for values in ELEMENTWISE_PROBES:
        try:
            return output_problem_at(rule, np.array(values), device)
        except Exception:  # noqa: BLE001  whatever the user's twin raises
            continue
    return None


def mixing_entries(jacobian: np.ndarray) -> list[tuple[int, int]]:
    """(i, j), j != i, where d y[i] / d x[j] says y[i] depends on x[j]: a finite non-zero
    entry, or a NaN or infinite one where the diagonal d y[j] / d x[j] is finite. Row i is the
    VJP with cotangent e_i, so entry j is 0 × f'(x[j]): NaN where f'(x[j]) is NaN or infinite
    (square root below 0, log at 0), which is no dependence."""
    diagonal = np.diag(jacobian)
    return [(i, j) for i in range(len(jacobian)) for j in range(len(jacobian)) if j != i
            and (np.isfinite(jacobian[i, j]) and jacobian[i, j] != 0
                 or not np.isfinite(jacobian[i, j]) and np.isfinite(diagonal[j]))]


def moved_values(rule: Rule, x: np.ndarray, device) -> list[int]:
    """Positions i where f(x reversed)[i] is not f(x)[n - 1 - i] (NaN equal to NaN, 0 to -0):
    an elementwise rule commutes with every permutation of its input. This sees a rule whose
    only dependence on other elements is a NaN (0 × sqrt(a negative neighbour)), which the
    Jacobian cannot tell from the 0 × NaN a VJP leaves."""
    straight = evaluate(rule, x, "float64", device)[::-1]
    reversed_ = evaluate(rule, x[::-1].copy(), "float64", device)
    same = (straight == reversed_) | (np.isnan(straight) & np.isnan(reversed_))
    return [int(i) for i in np.flatnonzero(~same)]


def check_callable(rule: Rule, device) -> list[Finding]:
    """Usage errors (raises on every input, another shape) as UsageError; a Jacobian with
    off-diagonal entries (mixing_entries), or values that move when the input is reversed
    (moved_values), as a not_elementwise finding."""
    x = _first_input_it_takes(rule, device)
    jacobian = np.array([vjp(rule, x, "float64", np.eye(x.size)[i], device)[1]
                         for i in range(x.size)])
    off = mixing_entries(jacobian)
    where = Where("elementwise", "float64", "eager")
    if off:
        i, j = off[0]
        return [Finding("not_elementwise", replace(where, input=f"{x[j]:g}"),
                        f"d y[{i}] / d x[{j}] = {text(jacobian[i, j], None)} at "
                        f"x = {text(x.tolist(), None)}", "0 off the diagonal")]
    moved = moved_values(rule, x, device)
    if moved:
        i = moved[0]
        return [Finding("not_elementwise", replace(where, input=f"{x[::-1][i]:g}"),
                        f"y[{i}] of f(x reversed) differs from y[{x.size - 1 - i}] of f(x) at "
                        f"x = {text(x.tolist(), None)}", "f(x reversed) = f(x) reversed")]
    return []


def scan_kinks(rule: Rule, device) -> tuple[float, ...] | str:
    """Scan points where the one-sided derivatives (float64, SCAN_STEP either side) differ by
    more than KINK_JUMP relative: the kinks a scan of [-8, 8] in steps of 1/128 finds; the
    error line where the rule raises on the scan."""
    try:
        left = evaluate(rule, SCAN - SCAN_STEP, "float64", device, "reverse")
        right = evaluate(rule, SCAN + SCAN_STEP, "float64", device, "reverse")
    except Exception as exc:  # noqa: BLE001  reported beside the kinks; --kinks still works
        return first_error_line(exc)
    scale = np.maximum(1.0, np.maximum(np.abs(left), np.abs(right)))
    with np.errstate(invalid="ignore"):
        jump = np.abs(right - left) > KINK_JUMP * scale
    return tuple(float(k) for k in SCAN[jump & np.isfinite(left) & np.isfinite(right)])


def probes(dtype: str, kinks) -> list[tuple[str, float]]:
    return probe_inputs(dtype, tuple(kinks) or (0.0,))


def _row(dtype, label, x, execution, placement, cells: dict) -> dict:
    return {"dtype": dtype, "input": label, "x": x, "bits": bits(x, dtype),
            "execution": execution, "placement": placement, **cells}


def _at(cell: Cell, placement: str) -> Cell:
    return cell.at([placement]) if isinstance(cell, Placed) else cell


def conventions(rule: Rule, dtype: str, kinks, device, placements, compiled_placements,
                compiled_passes) -> list[dict]:
    """One row per input, execution and placement: value, reverse, forward (and, eagerly,
    second), each a cell (study.compare.cells) of the probe, read at that placement."""
    inputs = probes(dtype, kinks)
    values = [v for _, v in inputs]
    measured = [p for p in placements if rule.framework == "torch" or p != "strided"]
    eager = measure(rule, values, dtype, device, measured)
    rows = [_row(dtype, label, x, "eager", p, {m: _at(eager[m][i], p) for m in eager})
            for i, (label, x) in enumerate(inputs) for p in measured]
    if compiled_passes:
        got, = measure_compiled([rule], [values], dtype, device, compiled_placements,
                                compiled_passes)
        rows += [_row(dtype, label, x, "compiled", p,
                      {m: _at(got["cells"][m][i], p) for m in got["cells"]})
                 for i, (label, x) in enumerate(inputs) for p in compiled_placements]
    return rows


def _values_where_it_runs(rule: Rule, xs: np.ndarray, dtype: str, device) -> np.ndarray:
    """The rule's values at xs, one call; where that raises (a rule refusing negatives), one
    call per element, NaN where it raises: no value there to call a hole's edge finite."""
    try:
        return evaluate(rule, xs, dtype, device)
    except Exception:  # noqa: BLE001  whatever the user's rule raises
        out = []
        for x in xs:
            try:
                out.append(float(evaluate(rule, np.array([x]), dtype, device)[0]))
            except Exception:  # noqa: BLE001
                out.append(float("nan"))
        return np.array(out)


def finite_around(rule: Rule, dtype: str, kinks, device) -> set[str]:
    """The probe inputs (labels) whose neighbours in `dtype`, the next value down and up (one
    side only at ±inf), the rule maps to finite values, eagerly: where a NaN or infinite value
    at the input is a hole in a finite function rather than the edge of its domain (a square
    root below 0, a log at 0) or an overflow."""
    inputs = [(label, x) for label, x in probes(dtype, kinks) if not np.isnan(x)]
    nd = numpy_dtype(dtype)
    sides = [[float(np.nextafter(np.asarray(x, nd), np.asarray(end, nd))) for _, x in inputs]
             for end in (-np.inf, np.inf)]
    down, up = (_values_where_it_runs(rule, np.array(side), dtype, device) for side in sides)
    return {label for k, (label, x) in enumerate(inputs)
            if all(np.isfinite(v) or side[k] == x
                   for v, side in ((down[k], sides[0]), (up[k], sides[1])))}


def _unjudged(want: float, dtype: str) -> bool:
    fi = finfo(dtype)
    return bool(np.isfinite(want) and (abs(want) > float(fi.max)
                                       or 0 < abs(want) < float(fi.smallest_normal)))


def judged_inputs(dtype: str, kinks) -> list[tuple[str, float]]:
    """Where linearity and determinism are tried: the probe inputs, then ordinary points
    (study.measure.inputs.ordinary_inputs), so that a fault everywhere is seen as one."""
    return probes(dtype, kinks) + ordinary_inputs(dtype)


def _linearity_calls(rule, dtype, values, device) -> tuple[np.ndarray, list, list[dict]]:
    """The reverse derivative at u = 1, and the calls to hold against it: each uniform
    cotangent, and one call with the cotangents mixed across copies of the inputs (its
    reference measured at the same positions: a kernel's body and tail may differ)."""
    _, g1 = vjp(rule, values, dtype, 1.0, device)
    n = len(values)
    calls = [(f"{u:g}", values, np.full(n, u), g1) for u in COTANGENTS[1:]]
    errors = []
    tiled = np.tile(values, len(COTANGENTS))
    try:
        _, g1_tiled = vjp(rule, tiled, dtype, 1.0, device)
        calls.append(("mixed", tiled, np.repeat(COTANGENTS, n), g1_tiled))
    except Exception as exc:  # noqa: BLE001
        errors.append({"dtype": dtype, "cotangent": "mixed", "error": first_error_line(exc)})
    return g1, calls, errors


def linearity(rule: Rule, dtype: str, kinks, device) -> tuple[list[dict], list[Finding]]:
    """Reverse derivative with uniform cotangents u against u times its value at u = 1, exactly
    (u is ± a power of two), and one call with the cotangents mixed across elements, at the
    probe inputs and at ordinary points (judged_inputs). One finding per input, naming every
    cotangent where it is not linear."""
    inputs = judged_inputs(dtype, kinks)
    labels, values = [lab for lab, _ in inputs], np.array([v for _, v in inputs])
    try:
        g1, calls, rows = _linearity_calls(rule, dtype, values, device)
    except Exception as exc:  # noqa: BLE001
        return [{"dtype": dtype, "cotangent": "1", "error": first_error_line(exc)}], []
    seen: dict[int, list] = {}  # input -> (cotangent name, u, got, reference, linear) per cell
    n = len(values)
    for name, x, cot, reference in calls:
        try:
            _, g = vjp(rule, x, dtype, cot, device)
        except Exception as exc:  # noqa: BLE001
            rows.append({"dtype": dtype, "cotangent": name, "error": first_error_line(exc)})
            continue
        judged = [k for k in range(x.size) if not _unjudged(cot[k] * reference[k], dtype)]
        for k in judged:
            linear = equal(Value(float(g[k])), Value(float(cot[k] * reference[k])))
            seen.setdefault(k % n, []).append((name, cot[k], g[k], reference[k], linear))
        rows.append({"dtype": dtype, "cotangent": name, "judged": len(judged),
                     "unjudged": x.size - len(judged),
                     "differ": sum(not equal(Value(float(g[k])),
                                             Value(float(cot[k] * reference[k])))
                                   for k in judged)})
    found = [not_linear(Where("vjp", dtype, "eager", "packed", labels[i],
                               bits(values[i], dtype)), g1[i], cells)
             for i, cells in seen.items() if not all(c[4] for c in cells)]
    return rows, found


def rng_states() -> tuple:
    """The RNG states a call may draw from: Python's, numpy's, and torch's where torch is
    imported (a JAX user's check imports no torch)."""
    import sys
    torch = sys.modules.get("torch")
    torch_states = ((torch.get_rng_state(), torch.cuda.get_rng_state_all()
                     if torch.cuda.is_available() else []) if torch else None)
    return (torch_states, np.random.get_state(), random.getstate())


def _same_rng(a: tuple, b: tuple) -> bool:
    import sys
    torch = sys.modules.get("torch")
    same_torch = (a[0] is None) == (b[0] is None) and (a[0] is None or (
        torch.equal(a[0][0], b[0][0]) and len(a[0][1]) == len(b[0][1])
        and all(map(torch.equal, a[0][1], b[0][1]))))
    return (same_torch and a[2] == b[2] and a[1][0] == b[1][0]
            and np.array_equal(a[1][1], b[1][1]) and a[1][2:] == b[1][2:])


def restore_rng(states: tuple) -> None:
    if states[0] is not None:
        import torch
        torch.set_rng_state(states[0][0])
        if states[0][1]:
            torch.cuda.set_rng_state_all(states[0][1])
    np.random.set_state(states[1])
    random.setstate(states[2])


def _bitwise_equal(a: np.ndarray, b: np.ndarray) -> bool:
    return a.shape == b.shape and bool(np.all((a == b) & (np.signbit(a) == np.signbit(b))
                                              | (np.isnan(a) & np.isnan(b))))


def determinism(rule: Rule, dtype: str, kinks, device) -> tuple[dict, list[Finding]]:
    """Three forward-and-backward calls on fresh copies of the judged inputs, bit for bit; a
    call that draws from torch's, numpy's or Python's RNG is consumes_rng. The RNG states are
    restored afterwards."""
    inputs = judged_inputs(dtype, kinks)
    values = np.array([v for _, v in inputs])
    before = rng_states()
    try:
        calls = [vjp(rule, values, dtype, 1.0, device) for _ in range(3)]
        consumed = not _same_rng(before, rng_states())
    except Exception as exc:  # noqa: BLE001
        return {"dtype": dtype, "error": first_error_line(exc)}, []
    finally:
        restore_rng(before)
    found = []
    for k, (label, x) in enumerate(inputs):
        seen = [(c[0][k], c[1][k]) for c in calls]
        if any(not _bitwise_equal(np.array(s), np.array(seen[0])) for s in seen[1:]):
            found.append(Finding("not_deterministic",
                                 Where("determinism", dtype, "eager", "packed", label,
                                       bits(x, dtype)),
                                 say(PROSE, "per_call", seen=text(seen, None)),
                                 say(PROSE, "expected", kind="not_deterministic")))
    return determinism_row(dtype, found, consumed)


def determinism_row(dtype: str, found: list[Finding], consumed: bool
                    ) -> tuple[dict, list[Finding]]:
    """Three calls' row of the determinism section, and its findings: those of the inputs
    that differed between calls (`found`), and one where the calls drew random numbers."""
    if consumed:
        found = found + [Finding("consumes_rng", Where("determinism", dtype, "eager"),
                                 say(PROSE, "rng_consumed"),
                                 say(PROSE, "expected", kind="consumes_rng"))]
    return {"dtype": dtype, "calls": 3, "inputs_differing": sum(
        f.kind == "not_deterministic" for f in found), "consumes_rng": consumed}, found


def gradcheck(rule: Rule, kinks, device) -> tuple[list[dict], list[Finding]]:
    """The framework's numeric check (study.measure.probe.numeric_check) in float64, one point
    a call: at smooth points (SMOOTH_MARGIN from every kink) a failure is a finding, with the
    reverse derivative against the central difference; at kinks it is run and reported only.
    A point where the value is not finite is outside the rule's domain: not checked."""
    smooth = [p for p in SMOOTH_POINTS if all(abs(p - k) >= SMOOTH_MARGIN for k in kinks)]
    rows, found = [], []
    for point, at_kink in [(p, False) for p in smooth] + [(k, True) for k in sorted(kinks)]:
        outcome = _outside_domain(rule, point, device) or numeric_check(rule, point, device)
        rows.append({"x": point, "at_kink": at_kink, "outcome": outcome})
        if outcome == "failed" and not at_kink:  # a checker that raises says nothing
            slope = reverse_derivative(rule, point, "float64", device)
            difference = finite_difference(rule, point, device)
            found.append(Finding("gradcheck_fails",
                                 Where("gradcheck", "float64", "eager", input=f"{point:g}",
                                       bits=bits(point, "float64")),
                                 f"reverse {text(slope, None)}",
                                 f"≈ {text(difference, FD_FIGURES)}, the central difference "
                                 f"(step {FD_EPS:g})"))
    return rows, found


def _outside_domain(rule: Rule, point: float, device) -> str | None:
    """'value NaN: not checked' where the rule's float64 value at point is not finite (outside
    its domain), else None; None too where it raises: numeric_check reports that."""
    try:
        value = float(evaluate(rule, np.array([point]), "float64", device)[0])
    except Exception:  # noqa: BLE001
        return None
    return None if np.isfinite(value) else f"value {text(value)}: not checked"

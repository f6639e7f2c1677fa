"""The judges of study check: rows the probe measured (study.check._probe) held against what a
correct rule gives there, each difference a finding."""
from dataclasses import replace

import numpy as np

from study.check._findings import PROSE, Finding, Where, merged
from study.compare.cells import Cell, Error, Placed, Value, equal, same_values, values_of
from study.report.format import text
from study.report.prose import say


def _numbers(cell: Cell) -> list:
    return [v.value for v in values_of(cell) if isinstance(v, Value)]


def _where(row, section="conventions", **extra) -> Where:
    return Where(section, row["dtype"], row["execution"], row["placement"], row["input"],
                 row["bits"], **extra)


def finiteness_findings(rows: list[dict], finite_around_inputs: dict) -> list[Finding]:
    """NaN from a non-NaN input, or ±inf from a finite one, where the rule is finite on both
    sides of the input (`finite_around_inputs`: {dtype: labels}, finite_around): a hole, not
    a domain's edge. A derivative is judged only where the value is finite (outside its
    domain a function has no slope to give): NaN there is reverse_not_finite, ±inf
    reverse_infinite (right at a vertical tangent, as a square root's at 0, so a warning)."""
    found = []
    for row in rows:
        x = row["x"]
        values, reverse = _numbers(row["value"]), _numbers(row["reverse"])
        if (not np.isnan(x) and row["input"] in finite_around_inputs.get(row["dtype"], ())
                and any(np.isnan(v) or (np.isinf(v) and np.isfinite(x)) for v in values)):
            found.append(Finding("forward_not_finite", _where(row), f"value {text(values, None)}",
                                 say(PROSE, "expected", kind="forward_not_finite")))
        if np.isfinite(x) and values and all(np.isfinite(v) for v in values):
            seen = f"reverse {text(reverse, None)} where the value is {text(values, None)}"
            if any(np.isnan(g) for g in reverse):
                found.append(Finding("reverse_not_finite", _where(row), seen,
                                     say(PROSE, "expected", kind="reverse_not_finite")))
            elif any(np.isinf(g) for g in reverse):
                found.append(Finding("reverse_infinite", _where(row), seen,
                                     say(PROSE, "expected", kind="reverse_infinite")))
        if np.isnan(x) and row["execution"] == "eager" and any(not np.isnan(v) for v in values):
            found.append(Finding("nan_swallowed", _where(row), f"value {text(values, None)}",
                                 "NaN"))
    return merged(found, "placement")


def _signs(cell: Cell) -> list:
    return sorted(bool(np.signbit(v)) for v in _numbers(cell) if v == 0)


def compiled_findings(rows: list[dict]) -> list[Finding]:
    """Compiled against eager at the same dtype, input and placement, by study.compare.cells
    (±0 equal, NaN equal); a difference in the sign of zero alone is compiled_zero_sign.
    Where eager forward mode raises (an old-style Function) and compiled forward mode returns
    numbers, they are compared with the eager reverse derivative: for an elementwise rule,
    tangent 1 and cotangent 1 give the same derivative."""
    eager = {(r["dtype"], r["input"], r["placement"]): r for r in rows
             if r["execution"] == "eager"}
    found = []
    for row in (r for r in rows if r["execution"] == "compiled"):
        ref = eager.get((row["dtype"], row["input"], row["placement"]))
        for mode in ("value", "reverse", "forward"):
            if ref is None or mode not in row or isinstance(row[mode], Error):
                continue  # an error compiled: the transforms row reports it
            against = "reverse" if mode == "forward" and isinstance(ref[mode], Error) else mode
            if isinstance(ref[against], Error):
                continue
            a, b = row[mode], ref[against]
            same = all(any(equal(x, y) for y in values_of(b)) for x in values_of(a))
            seen = f"compiled {text(_numbers(a), None)}"
            expected = say(PROSE, "eager_as_expected", eager=text(_numbers(b), None),
                           against_reverse=against != mode)
            if not same or isinstance(a, Placed) != isinstance(b, Placed):
                found.append(Finding("compiled_differs", _where(row, transformation=mode),
                                     seen, expected))
            elif _signs(a) != _signs(b):
                found.append(Finding("compiled_zero_sign", _where(row, transformation=mode),
                                     seen, expected))
    return found


def not_linear(where: Where, g1: float, cells: list) -> Finding:
    """One input's cells as one finding, saying how the backward depends on the cotangent:
    the same value whatever it is, gated on its sign, or otherwise."""
    wrong = [c for c in cells if not c[4]]
    names = list(dict.fromkeys(f"{u:g}" + (" (mixed)" if name == "mixed" else "")
                               for name, u, *_ in wrong))
    _, u, g, reference, _ = wrong[0]
    constant = all(equal(Value(float(c[2])), Value(float(g1))) for c in cells)
    gated = all(c[1] < 0 for c in wrong) and all(c[4] for c in cells if c[1] > 0)
    pattern = "constant" if constant else "sign" if gated else "other"
    us = ", ".join(dict.fromkeys(["1"] + [f"{c[1]:g}" for c in cells]))
    detail = say(PROSE, "not_linear", pattern=pattern, g=text(g, None), u=text(u, None),
                 g1=text(g1, None), us=us)
    expected = f"{text(u, None)} × {text(reference, None)} = {text(u * reference, None)}"
    return Finding("vjp_not_linear", replace(where, cotangent=", ".join(names)), detail,
                   expected, cells=len(wrong))


def cells_equal(a: Cell, b: Cell) -> bool:
    """Two cells taking the same values wherever they sit (study.compare.cells.same_values)."""
    return same_values(a, b)

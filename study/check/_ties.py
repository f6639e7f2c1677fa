"""A rule of several inputs where its inputs tie: its gradient over every input there, what
it reads as (all to one input, an even split, or the values), beside the built-ins it resembles
(study.check._tie_builtins), judged by PyTorch's documented rule and Clarke's set on the rule's
own float64 forward with study.conformance's tie machinery (tie_shape: the pieces meeting at the
tie and their convexity; judge_tie_output: the verdicts).

A tie of two inputs is where they are equal; of three, each pair with the third 1 above and 1
below, and all three. The tied inputs hold 0, +0 beside −0, NaN (an undefined input: measured,
never judged) and ORDINARY_TIES, the others that value ± 1.

Three findings: tie_breaks_documented_rule (a warning: the gradient is not what PyTorch's rule
gives, such as all to x where a maximum's minimum-norm element splits it; the frameworks
themselves differ here, torch.max(x, dim) by its own page); wrong_along_tie (wrong: moving the
tied inputs together, as maximum(x, x) does, changes the value at another rate than the
gradient's sum over them says, so such a call's gradient is wrong); reverse_not_finite where
the value at the tie is finite.
"""
import itertools

import numpy as np

from study.check._findings import PROSE, Finding, Where
from study.check._several import (evaluate_each, forward64, gradient_text, linearity,
                                  point_label)
from study.check._tie_builtins import resembled
from study.conformance import judge_tie_output, tie_shape
from study.conformance._limits import error_of
from study.conformance._verdicts import UNIT_ROUNDOFF
from study.errors import first_error_line
from study.measure.rule import TIE_VALUES, InputTie, Rule
from study.report.format import text
from study.report.prose import say

ORDINARY_TIES = (-2.5, 0.75, 3.0)  # exact in every dtype, as are they ± 1
TIE_AT = TIE_VALUES + tuple(f"{v:g}" for v in ORDINARY_TIES)


def tie_cases(n: int) -> tuple[InputTie, ...]:
    """Where n inputs tie: two of two; of three, each pair with the third above, then below
    (a clamp's x = min < max and max < x = min), and all three."""
    if n == 2:
        return (InputTie((0, 1)),)
    pairs = tuple(InputTie(pair, (side,)) for pair in itertools.combinations(range(n), 2)
                  for side in (1.0, -1.0))
    return pairs + (InputTie(tuple(range(n))),)


def tie_point(tie: InputTie, at: str) -> tuple[float, ...]:
    """The inputs where the tied ones hold `at` (one of TIE_AT) and the others sit `apart`."""
    if at in TIE_VALUES:
        return tie.point(at)
    return tuple(float(at) + v for v in tie.point("0"))


def tie_name(names, tie: InputTie) -> str:
    """'x = y'; 'x = min < max', 'max < x = min': the inputs in order, tied ones joined by =."""
    others = iter(tie.apart)
    offsets = [0.0 if i in tie.tied else next(others) for i in range(tie.inputs)]
    return " < ".join(" = ".join(n for n, o in zip(names, offsets) if o == level)
                      for level in sorted(set(offsets)))


def along_tie(pieces, tied) -> tuple[float, float] | None:
    """(the value's derivative as the tied inputs move together, its error bound): each piece's
    gradient summed over them, the same from every piece where the value is continuous; None
    where they disagree (a jump) or no piece was read."""
    sums = [(sum(p[i].value for i in tied), sum(error_of(p[i]) for i in tied)) for p in pieces]
    if not sums or any(abs(s - sums[0][0]) > e + sums[0][1] + 1e-12 for s, e in sums[1:]):
        return None
    return sums[0]


def reading(gradient, tie: InputTie, names, derivative: float | None) -> str:
    """What the gradient does with the tie: 'all to x', 'split 0.5/0.5', 'none to either',
    else each tied input's value; inputs off the tie are named where they get any."""
    g = [float(v) for v in gradient]
    tied = [g[i] for i in tie.tied]
    given = [i for i in tie.tied if g[i] != 0]
    whole = derivative is None or abs(sum(tied) - derivative) <= 1e-9 * max(1.0, abs(derivative))
    if not all(np.isfinite(g)):
        return ", ".join(f"{n} {text(v)}" for n, v in zip(names, g))
    if not given:
        out = say(PROSE, "reads", how="none", k=len(tied))
    elif len(given) == 1 and whole:
        out = say(PROSE, "reads", how="all", to=names[given[0]])
    elif len(given) == len(tied) and len(set(tied)) == 1 and whole:
        out = say(PROSE, "reads", how="split", shares="/".join(text(v) for v in tied))
    else:
        out = ", ".join(f"{names[i]} {text(g[i])}" for i in tie.tied)
    off = [f"{names[i]} {text(g[i])}" for i in range(len(g)) if i not in tie.tied and g[i]]
    return out + (f"; {', '.join(off)}" if off else "")


def _shape(rule: Rule, tie: InputTie, point, device):
    """tie_shape of the rule's own float64 forward at the point, or the line it raised."""
    try:
        return tie_shape(forward64(rule, device), point, tie.tied)
    except Exception as exc:  # noqa: BLE001  a forward raising near the tie: shown, not judged
        return first_error_line(exc)


JUDGED = ("value", "documented rule", "rule gives", "follows", "clarke", "minimum-norm",
          "pieces", "convexity", "along tie", "shape_error")  # a case's keys for its verdicts


def _judged(case: dict, shape, tie: InputTie, dtype: str) -> dict:
    """The case's verdicts (None where the shape was not read, `shape_error` its line, or where
    the gradient raised)."""
    if isinstance(shape, str) or case["error"]:
        return {**dict.fromkeys(JUDGED), "shape_error": shape if isinstance(shape, str) else None}
    defined = shape.defined and case["at"] != "NaN"
    pieces = shape.pieces[0] if defined else ()
    v = judge_tie_output(pieces, shape.convexity[0] if defined else 0, case["gradient"], dtype,
                         defined=defined)
    along = along_tie(pieces, tie.tied) if defined else None
    return {"value": shape.value[0], "documented rule": v.rule.value,
            "rule gives": [[g.value for g in a] for a in v.allowed], "follows": v.follows,
            "clarke": v.clarke.value, "pieces": [[g.value for g in p] for p in pieces],
            "convexity": shape.convexity[0] if defined else None,
            "minimum-norm": [g.value for g in v.minimum_norm] if v.minimum_norm else None,
            "along tie": None if along is None else {
                "derivative": along[0], "error": along[1],
                "gradient": sum(case["gradient"][i] for i in tie.tied)}, "shape_error": None}


def _findings(case: dict, tie: InputTie, names) -> list[Finding]:
    if case["documented rule"] in (None, "undefined input"):
        return []
    where = Where("ties", case["dtype"], "eager", transformation=case["label"])
    g = case["gradient"]
    if not all(np.isfinite(g)):
        return [Finding("reverse_not_finite", where,
                        f"gradient {gradient_text(g)} where the value is {text(case['value'])}",
                        say(PROSE, "expected", kind="reverse_not_finite"))]
    found, along = [], case["along tie"]
    if along is not None and abs(along["gradient"] - along["derivative"]) > along["error"] + (
            4 * UNIT_ROUNDOFF[case["dtype"]] * max(1.0, *(abs(v) for v in g))):
        found.append(Finding("wrong_along_tie", where,
                             say(PROSE, "along_seen", along=along, names=[names[i] for i in
                                                                            tie.tied]),
                             say(PROSE, "along_expected", along=along)))
    if not case["follows"]:
        found.append(Finding("tie_breaks_documented_rule", where,
                             say(PROSE, "tie_seen", g=gradient_text(g), reads=case["reads"]),
                             say(PROSE, "tie_expected", rule=case["documented rule"],
                                 gives=[gradient_text(a) for a in case["rule gives"]])))
    return found


def tie_section(rule: Rule, dtypes, device) -> tuple[dict, list[Finding], list[dict]]:
    """(the result's `ties`, the findings at ties, the linearity rows there): each tie (the
    Rule's input_ties, else tie_cases) at each of TIE_AT in each dtype, its gradient at every
    cotangent of the linearity check."""
    names = rule.input_labels()
    cases = [(tie, at, tie_point(tie, at)) for tie in rule.input_ties or tie_cases(len(names))
             for at in TIE_AT]
    points = np.array([p for *_, p in cases])
    labels = [point_label(names, p) for p in points]
    shapes = [_shape(rule, tie, p, device) for tie, _, p in cases]
    builtins = resembled(rule, device)
    rows, found, vjp_rows = [], [], []
    for dtype in dtypes:
        lin_rows, lin_found, gradients, errors = linearity(rule, dtype, points, labels, "ties",
                                                           device)
        vjp_rows += lin_rows
        found += lin_found
        theirs = {b.key: evaluate_each(b.rule, points, dtype, device, 1.0)
                  for b in builtins if b.rule is not None}
        for k, (tie, at, point) in enumerate(cases):
            case = {"tie": tie_name(names, tie), "tied": [names[i] for i in tie.tied], "at": at,
                    "dtype": dtype, "point": list(point), "label": labels[k],
                    "gradient": gradients["1"][k].tolist(), "error": errors[k],
                    "at cotangents": {u: g[k].tolist() for u, g in gradients.items() if u != "1"},
                    "builtins": {key: got[2][k] or got[1][k].tolist()
                                 for key, got in theirs.items()}}
            case.update(_judged(case, shapes[k], tie, dtype))
            along = case.get("along tie")
            case["reads"] = None if case["error"] else reading(
                case["gradient"], tie, names, along and along["derivative"])
            rows.append(case)
            found += _findings(case, tie, names)
    return ({"inputs": list(names), "at": list(TIE_AT),
             "builtins": [b.as_json() for b in builtins], "cases": rows}, found, vjp_rows)

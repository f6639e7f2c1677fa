"""The tie records: a built-in of several inputs at each of its ties, its shape there from its
own float64 forward (study.conformance._tie_shape, no autodiff) beside the gradient reverse
mode gives, one record per tie and output element. The records hold numbers only; the verdicts
are read from them (study.conformance._listing).

A tie is judged where the tied inputs hold 0 and where they hold +0 and −0 in turn. A tie of
NaN is an undefined input, where PyTorch's rule allows any gradient: the atlas measures it
(zero_point's ties table), the conformance does not judge it.
"""
import numpy as np

from study.conformance._forward import several_inputs_forward
from study.conformance._kinks import MEASURED_DTYPE
from study.conformance._tie_shape import tie_shape
from study.compare.cells import Error
from study.compare.stats import Estimate
from study.errors import first_error_line
from study.measure.probe import tie_jacobians
from study.measure.rule import InputTie, NotInRelease, Rule

TIE_KINKS = "tie_kinks"  # the records' table
JUDGED_AT = ("0", "±0")
TIE_METHOD = ("tie_shape: each piece's gradient by central differences on the float64 forward, "
              "convexity by the midpoint inequality around the tie; measured: reverse mode, "
              "float64, a cotangent of 1 on each output element in turn")


def output_name(name: str, output: int, outputs: int) -> str:
    """The op as the listing names one output element: torch.sort(x).values[2]."""
    return name if outputs == 1 else f"{name}[{output}]"


def tie_label(rule: Rule, tie: InputTie, at: str) -> str:
    """"2 of 4 at 0", "x = min at ±0": which inputs tie, and what they hold."""
    return f"{rule.tie_name(tie)} at {at}"


def tie_records(rule: Rule, device) -> list[dict]:
    """Every record of a built-in of several inputs: each tie, at each of JUDGED_AT."""
    return [rec for tie in rule.input_ties for at in JUDGED_AT
            for rec in tie_record(rule, tie, at, device)]


def _estimate(e: Estimate) -> list[float]:
    return [e.value, e.lo, e.hi]


def tie_record(rule: Rule, tie: InputTie, at: str, device) -> list[dict]:
    """One record per output element of the op at one tie: its pieces' gradients ([value, lo,
    hi] per input), its convexity, the gradient measured (None where it raised: `error`). A
    tie whose shape cannot be read is one record with `error` (and `in_release` False where the
    release lacks the op)."""
    point = tie.point(at)
    doc = rule.tie_documented
    base = {"part": TIE_KINKS, "framework": rule.framework, "rule": rule.key, "name": rule.name,
            "kind": rule.kind, "dtype": MEASURED_DTYPE, "device": device.name, "point": 0.0,
            "tie_case": tie_label(rule, tie, at), "inputs": list(rule.input_labels()),
            "x": list(point), "judged": not rule.composition, "method": TIE_METHOD,
            "in_release": True,
            "documented": None if doc is None else {"gives": doc.gives, "url": doc.url}}
    try:
        shape = tie_shape(several_inputs_forward(rule), point, tie.tied)
    except NotInRelease as exc:
        return [{**base, "in_release": False, "error": first_error_line(exc)}]
    except Exception as exc:  # noqa: BLE001  recorded: the op raised
        return [{**base, "error": first_error_line(exc)}]
    [measured] = tie_jacobians(rule, [np.array(point)], MEASURED_DTYPE, device)
    outputs = len(shape.value)
    return [{**base, "name": output_name(rule.name, j, outputs), "output": j,
             "outputs": outputs, "value": shape.value[j], "convexity": shape.convexity[j],
             "pieces": [[_estimate(g) for g in piece] for piece in shape.pieces[j]],
             "measured": None if isinstance(measured, Error) else measured[j].tolist(),
             "error": measured.line if isinstance(measured, Error) else None}
            for j in range(outputs)]

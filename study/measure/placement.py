"""Where an element sits: the arrays each input is measured in, and reading them back.

A convention can depend on where a value sits in a tensor: torch's CPU kernels run a
vectorised body over chunks of 2 x (lanes per vector) elements and a scalar loop over the
rest, and the two need not agree (F.hardtanh's backward at NaN does not). So the probe
(study.measure.probe) measures each input

    packed      all inputs in one 1-D tensor, input i at index i (the first atlas's layout)
    0-d         alone, as a 0-d tensor
    1-element   alone, in a tensor of shape (1,)
    fill        filling a 1-D tensor of FILL_LENGTH, read at every position
    strided     all inputs in a stride-2 view (x = base[:, 0] of an (n, 2) tensor; torch only)
    2-D rows    row i of an (n, FILL_LENGTH) batch filled with input i, every position read

and collapses what every position gave into one cell (study.compare.cells.collapse).
"""
import numpy as np

from study.compare.cells import Error, Value
from study.measure.inputs import numpy_dtype

# > 64, the widest chunk a torch CPU loop takes in one step (2 vectors of 32 half-precision
# lanes on AVX512), and no multiple of any chunk: positions 0-63 run in the vectorised body
# for every dtype and capability seen, 64-66 in the scalar tail.
FILL_LENGTH = 67
ALL_PLACEMENTS = ("packed", "0-d", "1-element", "fill", "strided", "2-D rows")
TORCH_ONLY = ("strided",)


def placed_arrays(placement: str, values, dtype: str) -> list[np.ndarray]:
    """The numpy inputs of one placement: one array per call."""
    nd = numpy_dtype(dtype)
    v = np.asarray(values, np.float64)
    if placement == "packed":
        return [v.astype(nd)]
    if placement == "0-d":
        return [np.asarray(x).astype(nd) for x in v]
    if placement == "1-element":
        return [np.asarray([x]).astype(nd) for x in v]
    if placement == "fill":
        return [np.full(FILL_LENGTH, x).astype(nd) for x in v]
    if placement == "strided":
        base = np.ones((len(v), 2))
        base[:, 0] = v
        return [base.astype(nd)]
    if placement == "2-D rows":
        return [np.repeat(v[:, None], FILL_LENGTH, axis=1).astype(nd)]
    raise ValueError(f"unknown placement {placement!r}")


def placed_cotangents(placement: str, cotangents) -> list[np.ndarray]:
    """Per call, the cotangent of the placement's output (the strided view's output is the
    view's shape), each input's cotangent at each of its positions, in float64."""
    arrays = placed_arrays(placement, cotangents, "float64")
    return [a[:, 0] for a in arrays] if placement == "strided" else arrays


def read_placed(placement: str, outputs: list, n: int) -> list:
    """Per input: a Value per position, or the Error its call raised (every input a call held
    shares it). `outputs`: per call, a host array or an Error."""
    def cells(a) -> list[Value]:
        return [Value(v) for v in np.asarray(a, np.float64).reshape(-1).tolist()]
    if placement in ("packed", "strided"):
        o = outputs[0]
        return [o if isinstance(o, Error) else [Value(float(np.asarray(o).reshape(-1)[i]))]
                for i in range(n)]
    if placement == "2-D rows":
        o = outputs[0]
        return [o if isinstance(o, Error) else cells(np.asarray(o)[i]) for i in range(n)]
    return [o if isinstance(o, Error) else cells(o) for o in outputs]  # one call per input

"""Where an element sits: measuring every input at several placements and positions.

A convention can depend on where a value sits in a tensor: torch's CPU kernels run a
vectorised body over chunks of 2 x (lanes per vector) elements and a scalar loop over the
rest, and the two need not agree (F.hardtanh's backward at NaN does not). So each probe input
is measured

    packed      all inputs in one 1-D tensor, input i at index i (the first atlas's layout)
    0-d         alone, as a 0-d tensor
    1-element   alone, in a tensor of shape (1,)
    fill        filling a 1-D tensor of FILL_LENGTH, read at every position
    strided     all inputs in a stride-2 view (x = base[:, 0] of an (n, 2) tensor; torch only)
    2-D rows    row i of an (n, FILL_LENGTH) batch filled with input i, every position read

eagerly (study.measure.compiled measures compiled code at the same placements).

    >>> m = measure(by_key("torch_hardtanh"), [float("nan")], "float32", Device("cpu"), ("fill",))
    >>> collapse(m["reverse"][0])   # e.g. {"values": [0.0, 1.0], "where": {...}}

A record stores the collapsed cell; study.compare.cells.as_cell types it when the record is read.
"""
import jax
import jax.numpy as jnp
import numpy as np
import torch

from study.compare.cells import Cell, Placed, as_cell, equal
from study.measure.conventions import MODES, numpy_dtype, torch_dtype
from study.measure.devices import Device
from study.errors import first_error_line
from study.measure.rules import Rule

# > 64, the widest chunk a torch CPU loop takes in one step (2 vectors of 32 half-precision
# lanes on AVX512), and no multiple of any chunk: positions 0-63 run in the vectorised body
# for every dtype and capability seen, 64-66 in the scalar tail.
FILL_LENGTH = 67
ALL_PLACEMENTS = ("packed", "0-d", "1-element", "fill", "strided", "2-D rows")
TORCH_ONLY = ("strided",)


def placed_arrays(placement: str, values: list[float], dtype: str) -> list[np.ndarray]:
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


def read_placed(placement: str, outputs: list, n: int) -> list:
    """Per input: the list of values at its positions (or an error string)."""
    def flat(o):
        return o if isinstance(o, str) else np.asarray(o, np.float64).reshape(-1).tolist()
    if placement in ("packed", "strided"):
        o = outputs[0]
        return [o if isinstance(o, str) else [flat(o)[i]] for i in range(n)]
    if placement == "2-D rows":
        o = outputs[0]
        return [o if isinstance(o, str) else np.asarray(o, np.float64)[i].tolist()
                for i in range(n)]
    return [flat(o) for o in outputs]  # one call per input


# --- the four modes, per framework -----------------------------------------------------

def _torch_modes(fn, array: np.ndarray, placement: str, dtype: str, device: Device) -> dict:
    view = (lambda t: t[:, 0]) if placement == "strided" else (lambda t: t)

    def leaf(requires_grad=True):
        return device.to_torch(array, requires_grad=requires_grad, dtype=torch_dtype(dtype))

    def value():
        return fn(view(leaf(False)))

    def reverse():
        x = leaf()
        fn(view(x)).sum().backward()
        return view(x.grad)

    def forward():
        x = leaf(False)
        return torch.func.jvp(lambda t: fn(view(t)), (x,), (torch.ones_like(x),))[1]

    def second():
        x = leaf()
        g, = torch.autograd.grad(fn(view(x)).sum(), x, create_graph=True)
        if not g.requires_grad:  # the first derivative is a constant to autograd
            return view(torch.zeros_like(g))
        h, = torch.autograd.grad(view(g).sum(), x, allow_unused=True)
        return view(torch.zeros_like(g) if h is None else h)

    return {"value": value, "reverse": reverse, "forward": forward, "second": second}


def _jax_mode_functions(fn) -> dict:
    grad = jax.grad(lambda v: jnp.sum(fn(v)))
    return {"value": fn, "reverse": grad,
            "forward": lambda v: jax.jvp(fn, (v,), (jnp.ones_like(v),))[1],
            "second": jax.grad(lambda v: jnp.sum(grad(v)))}


def as_host(device: Device, result) -> np.ndarray:
    if isinstance(result, torch.Tensor) and result._is_zerotensor():
        result = torch.zeros(result.shape, dtype=torch.float64, device=result.device)
    return device.to_numpy(result).astype(np.float64)


def _run(thunk, device: Device):
    try:
        return as_host(device, thunk())
    except Exception as exc:  # noqa: BLE001  a mode that raises is a measured outcome
        return first_error_line(exc)


def measure(rule: Rule, values: list[float], dtype: str, device: Device,
            placements: tuple[str, ...]) -> dict:
    """{mode: [per input: {placement: [value per position] or error text}]}, eagerly
    (study.measure.compiled measures compiled code)."""
    n = len(values)
    out = {m: [{} for _ in range(n)] for m in MODES}
    if rule.framework == "torch":
        for placement in placements:
            arrays = placed_arrays(placement, values, dtype)
            for mode in MODES:
                results = [_run(_torch_modes(rule.fn, a, placement, dtype, device)[mode], device)
                           for a in arrays]
                for i, vals in enumerate(read_placed(placement, results, n)):
                    out[mode][i][placement] = vals
        return out
    funcs = _jax_mode_functions(rule.fn)
    for placement in (p for p in placements if p not in TORCH_ONLY):
        arrays = [device.to_jax(a) for a in placed_arrays(placement, values, dtype)]
        for mode in MODES:
            results = [_run(lambda: funcs[mode](a), device) for a in arrays]
            for i, vals in enumerate(read_placed(placement, results, n)):
                out[mode][i][placement] = vals
    return out


# --- summaries ----------------------------------------------------------------------------

def _same(a, b) -> bool:
    """Two measured values (or error lines) alike, by the one cell equality
    (study.compare.cells)."""
    return equal(as_cell(a), as_cell(b))


def _runs(values: list) -> list[tuple[object, str]]:
    """[(value, "0-63"), (other, "64-66")]: maximal runs of equal values by position."""
    out, start = [], 0
    for i in range(1, len(values) + 1):
        if i == len(values) or not _same(values[i], values[start]):
            out.append((values[start], f"{start}" if i - 1 == start else f"{start}-{i - 1}"))
            start = i
    return out


def collapse(by_placement: dict) -> object:
    """One input's results over placements, compactly: the value (or error text) when every
    placement and position agrees, else {"values": [...], "where": {placement: runs}} with
    runs [[index into values, "positions"], ...]."""
    flat = []
    for vals in by_placement.values():
        flat += [vals] if isinstance(vals, str) else vals
    distinct: list = []
    for v in flat:
        if not any(_same(v, d) for d in distinct):
            distinct.append(v)
    if len(distinct) == 1:
        return distinct[0]
    index = lambda v: next(i for i, d in enumerate(distinct) if _same(v, d))  # noqa: E731
    where = {}
    for placement, vals in by_placement.items():
        if isinstance(vals, str):
            where[placement] = [[index(vals), "all"]]
        else:
            where[placement] = [[index(v), pos] for v, pos in _runs(vals)]
    return {"values": distinct, "where": where}


def restrict(cell: Cell, placements) -> Cell:
    """The cell as measured at these placements only (a cell that is the same everywhere is
    the same at any); the cell unchanged where it names none of them."""
    if not isinstance(cell, Placed) or not set(placements) & {p for p, _ in cell.positions}:
        return cell
    stored = cell.stored()
    return as_cell(collapse({p: [stored["values"][i] for i, pos in runs for _ in _positions(pos)]
                             for p, runs in stored["where"].items() if p in placements}))


def _positions(pos: str) -> range:
    """'64-66' -> range(64, 67); '3' -> range(3, 4); 'all' (an error) -> one position."""
    if pos == "all":
        return range(1)
    first, _, last = pos.partition("-")
    return range(int(first), int(last or first) + 1)

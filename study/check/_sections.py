"""The rule measured as the study measures its own: its row of the transforms matrix, the
clone-hazard graphs, the two-layer nets against a twin, the atlas's matches, and its cost. Each
framework's modules are imported where a rule of that framework needs them."""
import numpy as np

from study.check._atlas import Atlas
from study.check._findings import PROSE, Finding, Where
from study.check._judges import cells_equal
from study.check._probe import SMOOTH_MARGIN, vjp
from study.compare.cells import Cell, equal, values_of
from study.compare.stats import paired_ratio
from study.errors import first_error_line
from study.measure.rule import Rule, reference_relu
from study.report.format import text
from study.report.prose import say
from study.workloads.timing import time_interleaved

SECOND_ORDER_STEP = 1e-5  # central difference of the eager reverse derivative
SECOND_ORDER_ATOL = 1e-6  # its truncation and round-off stay far below this at smooth points
MATCHED_MODES = ("value", "reverse")
NOT_KINKS = {"min_normal", "+nan", "+inf", "-inf"}  # probe inputs that are no kink's
COST_ELEMENTS = 10 ** 6
MAX_SHOWN = 3  # elements that differ, shown with their position; a count for the rest
SAVED_BYTES_ELEMENTS = 1024  # a multiple of 8: a bit mask packs without padding


# --- transforms ---------------------------------------------------------------------------

def own_reference(rule: Rule, kinks, device) -> dict:
    """What each transformation should return: the rule's own eager value and reverse
    derivative (float64), and a central difference of that derivative at smooth points. An
    off-diagonal Jacobian entry is 0 × the derivative at one of its two inputs: where that is
    NaN or infinite the entry is NaN, which is no dependence, so it is not judged (NaN)."""
    def value(a):
        return vjp(rule, a, "float64", 1.0, device)[0]

    def derivative(a):
        return vjp(rule, a, "float64", 1.0, device)[1]

    def second(a):
        h = SECOND_ORDER_STEP
        out = (derivative(a + h) - derivative(a - h)) / (2 * h)
        near = np.zeros(np.shape(a), bool)
        for k in kinks:
            near |= np.abs(np.asarray(a) - k) < SMOOTH_MARGIN
        return np.where(near, np.nan, out)
    from study.workloads import transformations
    expected = transformations.expected_from(value, derivative, second)
    finite = np.isfinite(derivative(transformations.X))
    off_diagonal = ~np.eye(finite.size, dtype=bool) & ~(finite[:, None] & finite[None, :])
    for col in ("jacfwd", "jacrev"):
        expected[col] = np.where(off_diagonal, np.nan, expected[col])
    return expected


def differing_elements(got, want, atol: float, labels=None) -> tuple[str, str]:
    """(what was seen, what was expected) where two arrays differ (beyond atol, where `want`
    is judged: not NaN): the first MAX_SHOWN elements that differ, each with its position (its
    label, else its index), and a count for the rest."""
    got, want = np.asarray(got, np.float64), np.asarray(want, np.float64)
    if got.shape != want.shape:
        return f"shape {list(got.shape)}", f"shape {list(want.shape)}"
    judged = ~np.isnan(want)
    with np.errstate(invalid="ignore"):
        close = np.isclose(got, want, rtol=0, atol=atol, equal_nan=True) | ~judged
    differ = [tuple(int(i) for i in idx) for idx in np.argwhere(~close)]

    labelled = labels is not None and got.shape == (len(labels),)

    def at(idx):
        return labels[idx[0]] if labelled else "[" + ", ".join(map(str, idx)) + "]"
    shown = differ[:MAX_SHOWN]
    seen = "; ".join(f"{text(got[i], None)} at {at(i)}" for i in shown)
    rest = [f"{len(differ) - len(shown)} more differ"] if len(differ) > len(shown) else []
    rest += [f"{int(close.sum())} of {got.size} agree"]
    return (f"{seen} ({', '.join(rest)})",
            ", ".join(text(want[i], None) for i in shown) + (" there" if shown else ""))


def transforms(rule: Rule, kinks, device, columns, backend: str) -> tuple[dict, list[Finding]]:
    """The rule's row of the transforms matrix, against its own eager reference; {"error":
    line} where that reference itself raises at transformations.X."""
    from study.workloads import transformations
    atol = dict.fromkeys(transformations.SECOND_ORDER_COLUMNS, SECOND_ORDER_ATOL)
    try:
        reference = own_reference(rule, kinks, device)
    except Exception as exc:  # noqa: BLE001  no reference: no transformation can be judged
        return {"error": first_error_line(exc)}, []
    cells = transformations.transformation_cells(rule.framework, rule.fn, reference, backend,
                                                 device, columns, atol)
    labels = [f"x = {text(x, None)}" for x in transformations.X]
    found = []
    for col, cell in cells.items():
        where = Where("transforms", "float64", transformation=col)
        if cell["status"] == "wrong":
            seen, expected = differing_elements(cell["detail"], reference[col],
                                                atol.get(col, transformations.EXACT), labels)
            cell["expected"] = reference[col]
            found.append(Finding("transform_wrong", where, seen, expected))
        elif cell["status"] == "error":
            found.append(Finding("transform_error", where, cell["detail"]))
    return cells, found


# --- clone hazard -------------------------------------------------------------------------

def clone_hazards(rule: Rule, device) -> tuple[list[dict], list[Finding]]:
    """Each clone_hazard graph with the rule as it is and with its incoming gradient cloned
    first: where the two gradients differ, the backward writes into grad_output."""
    from study.workloads import clone_hazard
    labels = [f"x = {text(x, None)}" for x in clone_hazard.X]
    rows, found = [], []
    for case in clone_hazard.CASES:
        plain, warning, error = clone_hazard.torch_grad(rule.fn, case, device)
        safe, _, safe_error = clone_hazard.torch_grad(clone_hazard.guarded(rule.fn), case, device)
        changed = (plain is not None and safe is not None
                   and not np.array_equal(plain, safe, equal_nan=True))
        rows.append({"graph": case, "gradient": plain, "with_cloned_incoming": safe,
                     "changed": changed, "warning": warning, "error": error or safe_error})
        if changed:
            seen, expected = differing_elements(plain, safe, 0.0, labels)
            found.append(Finding("writes_grad_output", Where("clone hazard", "float64", "eager",
                                                             transformation=case),
                                 f"gradient {seen}",
                                 say(PROSE, "cloned", safe=expected)))
    return rows, found


# --- twin ---------------------------------------------------------------------------------

def _identity(framework: str) -> Rule:
    return Rule(key=f"{framework}_identity", framework=framework, name="identity", kind="builtin",
                fn=lambda x: x)


def _net_differences(a: Rule, b: Rule, data: dict, device) -> tuple[list[str], dict]:
    from study.workloads.nets import two_layer_gradients
    ours, theirs = (two_layer_gradients(r, data, device) for r in (a, b))
    return [k for k in ("loss", "grad_w1", "grad_w2")
            if not np.array_equal(np.asarray(ours[k]), np.asarray(theirs[k]))], ours


def twin_nets(rule: Rule, twin: Rule, device) -> tuple[list[dict], list[Finding]]:
    """Seed 001's net and the random nets (study.workloads.nets) under the rule and its twin: loss
    and both gradients, bit for bit. Where the same net with the identity for activation already
    differs between the two frameworks (float32 matmuls round differently), a difference says
    nothing about the rule, and is shown but not judged."""
    from study.workloads.nets import DATASETS, two_layer_dataset
    rows, found = [], []
    for dataset in DATASETS:
        data = two_layer_dataset(dataset)
        try:
            differ, ours = _net_differences(rule, twin, data, device)
        except Exception as exc:  # noqa: BLE001  a rule raising on a net is what was measured
            rows.append({"dataset": dataset, "error": first_error_line(exc)})
            continue
        arithmetic = bool(_net_differences(_identity(rule.framework),
                                           _identity(twin.framework), data, device)[0])
        rows.append({"dataset": dataset, "preactivation_zeros": ours["zeros"],
                     "differ": differ, "judged": not arithmetic})
        if differ and not arithmetic:
            found.append(Finding("convention_differs_from_twin",
                                 Where("twin", "float32", "eager", input=dataset),
                                 f"{', '.join(differ)} differ", say(PROSE, "twin_net")))
    return rows, found


def twin_conventions(rows: list[dict], twin_rows: list[dict]) -> list[Finding]:
    """The eager packed cells of rule and twin at each probe input, by study.compare.cells.equal."""
    theirs = {(r["dtype"], r["input"]): r for r in twin_rows
              if r["execution"] == "eager" and r["placement"] == "packed"}
    found = []
    for row in rows:
        other = theirs.get((row["dtype"], row["input"]))
        if row["execution"] != "eager" or row["placement"] != "packed" or other is None:
            continue
        for mode in MATCHED_MODES:
            if not cells_equal(row[mode], other[mode]):
                found.append(Finding("convention_differs_from_twin",
                                     Where("twin", row["dtype"], "eager", "packed", row["input"],
                                           row["bits"], transformation=mode),
                                     text(row[mode], None),
                                     say(PROSE, "twin_cell", theirs=other[mode])))
    return found


# --- matches in the atlas -----------------------------------------------------------------

def _distinct(cells: list[Cell]) -> list[Cell]:
    """The values a list of cells takes, each once (study.compare.cells.equal)."""
    out: list[Cell] = []
    for v in (v for c in cells for v in values_of(c)):
        if not any(equal(v, d) for d in out):
            out.append(v)
    return out


def _differing_cells(op, ours: dict) -> list[dict] | None:
    """The cells of one built-in (one dtype) that differ from ours; None where it was not
    probed at every one of our kinks at its dtype (nothing to compare)."""
    ours_here = {label for dtype, label in ours if dtype == op.dtype}
    theirs = {label for _, label in op.cells}
    shared = sorted(ours_here & theirs)
    if not ours_here or not ours_here - NOT_KINKS <= theirs:
        return None
    differing = []
    for label in shared:
        for mode in (m for m in MATCHED_MODES if (m, label) in op.cells):
            mine = _distinct([row[mode] for row in ours[(op.dtype, label)]])
            builtin = op.cells[(mode, label)]
            if not cells_equal_lists(mine, builtin):
                differing.append({"dtype": op.dtype, "input": label, "mode": mode,
                                  "rule": mine, "builtin": builtin})
    return differing


def cells_equal_lists(mine: list[Cell], builtin: Cell) -> bool:
    return all(any(equal(x, y) for y in values_of(builtin)) for x in mine) and \
        all(any(equal(x, y) for x in mine) for y in values_of(builtin))


def matches(rows: list[dict], framework: str, atlas: Atlas | str) -> dict:
    """Built-ins whose committed atlas cells (value and reverse, eagerly) equal the rule's at
    every input both probe, the rule's kinks among them, in every dtype both measured; where
    none does, the nearest (fewest differing cells; the rule's framework first) and the cells
    that differ. `atlas`: the committed run (study.check._atlas), or why there is none."""
    if isinstance(atlas, str):
        return {"run": None, "why": atlas, "matches": [], "nearest": None}
    ours: dict = {}
    for row in (r for r in rows if r["execution"] == "eager"):
        ours.setdefault((row["dtype"], row["input"]), []).append(row)
    ops: dict = {}
    for op in atlas.ops:
        differing = _differing_cells(op, ours)
        if differing is None:
            continue
        entry = ops.setdefault(op.rule, {"rule": op.rule, "name": op.name,
                                         "framework": op.framework, "dtypes": [],
                                         "differing": []})
        entry["dtypes"].append(op.dtype)
        entry["differing"] += differing
    ranked = sorted(ops.values(), key=lambda o: (len(o["differing"]),
                                                 o["framework"] != framework, o["rule"]))
    matching = [o for o in ranked if not o["differing"]]
    p = atlas.run
    return {"run": {"label": p["label"], "run": p["run"], "dataset": atlas.source,
                    "torch": p["torch"], "jax": p["jax"], "device": p["device"],
                    "same_releases": atlas.same_releases},
            "matches": matching, "nearest": ranked[0] if ranked and not matching else None}


# --- cost ---------------------------------------------------------------------------------

def _forward_and_backward(fn, framework: str, compiled: bool, x_host: np.ndarray, device):
    """(thunk, sync): one forward and backward of fn at x_host, as a training step runs it."""
    if framework == "torch":
        import torch
        x = device.to_torch(x_host, requires_grad=True)
        ones = torch.ones_like(x)
        f = torch.compile(fn, backend="inductor") if compiled else fn

        def step():
            x.grad = None
            f(x).backward(ones)
            return x.grad
        return step, lambda _: device.synchronize()
    import jax
    x = device.to_jax(x_host)
    grad = jax.grad(lambda a: fn(a).sum())
    grad = jax.jit(grad) if compiled else grad
    return (lambda: grad(x)), jax.block_until_ready


def cost(rule: Rule, device, rounds: int = 20) -> dict:
    """Time of a forward and backward ÷ the framework's built-in ReLU's at 10^6 elements,
    eager and compiled, timed round by round (study.workloads.timing) with the ratio's 95%
    interval (study.compare.stats); and the bytes an element keeps for backward
    (study.workloads.memory)."""
    reference = reference_relu(rule.framework)
    name, builtin = reference.name, reference.fn
    x_host = np.random.default_rng(0).standard_normal(COST_ELEMENTS).astype(np.float32)
    out = {"elements": COST_ELEMENTS, "builtin": name, "ratios": {}}
    for execution in ("eager", "compiled"):
        if execution == "compiled" and rule.framework == "torch":
            import torch
            torch._dynamo.reset()
        thunks = {who: _forward_and_backward(fn, rule.framework, execution == "compiled",
                                             x_host, device)
                  for who, fn in (("rule", rule.fn), ("builtin", builtin))}
        try:
            times = time_interleaved(thunks, rounds=rounds)
        except Exception as exc:  # noqa: BLE001  a rule that cannot run compiled, say
            out["ratios"][execution] = first_error_line(exc)
            continue
        out["ratios"][execution] = paired_ratio(times["rule"]["times_s"],
                                                times["builtin"]["times_s"])
    from study.workloads.memory import jax_residual_bytes, torch_saved_bytes
    sample = x_host[:SAVED_BYTES_ELEMENTS]
    if rule.framework == "torch":
        kept = [torch_saved_bytes(f, device.to_torch(sample)) for f in (rule.fn, builtin)]
    else:
        kept = [jax_residual_bytes(f, device.to_jax(sample)) for f in (rule.fn, builtin)]
    out["bytes_per_element"] = {"rule": kept[0] / sample.size, "builtin": kept[1] / sample.size}
    return out

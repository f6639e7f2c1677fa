"""The rule measured as the study measures its own: its row of the transforms matrix, the
clone-hazard graphs, the two-layer nets against a twin, the atlas's matches, and its cost."""
import glob
import json
import os

import jax
import numpy as np
import torch

from study.workloads import clone_hazard, transformations
from study.check._findings import PROSE, Finding, Where
from study.check._probe import SMOOTH_MARGIN, vjp
from study.errors import first_error_line
from study.workloads.memory import jax_residual_bytes, torch_saved_bytes
from study.workloads.nets import DATASETS, two_layer_dataset, two_layer_gradients
from study.compare.cells import Placed, as_cell, equal
from study.runs.provenance import REPO_ROOT
from study.runs.results import identity
from study.report.prose import say
from study.measure.rules import Rule
from study.runs.upgrades import upgrade
from study.compare.stats import paired_ratio
from study.workloads.timing import time_interleaved

SECOND_ORDER_STEP = 1e-5  # central difference of the eager reverse derivative
SECOND_ORDER_ATOL = 1e-6  # its truncation and round-off stay far below this at smooth points
ATLAS_DIR = os.path.join(REPO_ROOT, "reports", "results", "zero_point")
LABELS_FILE = os.path.join(REPO_ROOT, "reports", "labels.json")
ATLAS_RUN = "C1"
MATCHED_MODES = ("value", "reverse")
NOT_KINKS = {"min_normal", "+nan", "+inf", "-inf"}  # probe inputs that are no kink's
COST_ELEMENTS = 10 ** 6
SAVED_BYTES_ELEMENTS = 1024  # a multiple of 8: a bit mask packs without padding
BUILTIN_RELU = {"torch": ("torch.relu", torch.relu), "jax": ("jax.nn.relu", jax.nn.relu)}


# --- transforms ---------------------------------------------------------------------------

def own_reference(rule: Rule, kinks, device) -> dict:
    """What each transformation should return: the rule's own eager value and reverse
    derivative (float64), and a central difference of that derivative at smooth points."""
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
    return transformations.expected_from(value, derivative, second)


def transforms(rule: Rule, kinks, device, columns, backend: str) -> tuple[dict, list[Finding]]:
    """The rule's row of the transforms matrix, against its own eager reference; {"error":
    line} where that reference itself raises at transformations.X."""
    atol = dict.fromkeys(transformations.SECOND_ORDER_COLUMNS, SECOND_ORDER_ATOL)
    try:
        reference = own_reference(rule, kinks, device)
    except Exception as exc:  # noqa: BLE001  no reference: no transformation can be judged
        return {"error": first_error_line(exc)}, []
    cells = transformations.transformation_cells(rule.framework, rule.fn, reference, backend,
                                                 device, columns, atol)
    found = []
    for col, cell in cells.items():
        where = Where("transforms", "float64", transformation=col)
        if cell["status"] == "wrong":
            found.append(Finding("transform_wrong", where, f"returned {cell['detail']}"))
        elif cell["status"] == "error":
            found.append(Finding("transform_error", where, cell["detail"]))
    return cells, found


# --- clone hazard -------------------------------------------------------------------------

def clone_hazards(rule: Rule, device) -> tuple[list[dict], list[Finding]]:
    """Each clone_hazard graph with the rule as it is and with its incoming gradient cloned
    first: where the two gradients differ, the backward writes into grad_output."""
    rows, found = [], []
    for case in clone_hazard.CASES:
        plain, warning, error = clone_hazard.torch_grad(rule.fn, case, device)
        safe, _, safe_error = clone_hazard.torch_grad(clone_hazard.guarded(rule.fn), case, device)
        changed = plain is not None and safe is not None and not np.array_equal(plain, safe)
        rows.append({"graph": case, "gradient": plain, "with_cloned_incoming": safe,
                     "changed": changed, "warning": warning, "error": error or safe_error})
        if changed:
            found.append(Finding("writes_grad_output", Where("clone hazard", "float64", "eager",
                                                             transformation=case),
                                 say(PROSE, "cloned", plain=plain.tolist(),
                                     safe=safe.tolist())))
    return rows, found


# --- twin ---------------------------------------------------------------------------------

def _identity(framework: str) -> Rule:
    return Rule(key=f"{framework}_identity", framework=framework, name="identity", kind="builtin",
                fn=lambda x: x)


def _net_differences(a: Rule, b: Rule, data: dict, device) -> tuple[list[str], dict]:
    ours, theirs = (two_layer_gradients(r, data, device) for r in (a, b))
    return [k for k in ("loss", "grad_w1", "grad_w2")
            if not np.array_equal(np.asarray(ours[k]), np.asarray(theirs[k]))], ours


def twin_nets(rule: Rule, twin: Rule, device) -> tuple[list[dict], list[Finding]]:
    """Seed 001's net and the random nets (study.workloads.nets) under the rule and its twin: loss
    and
    both gradients, bit for bit. Where the same net with the identity for activation already
    differs between the two frameworks (float32 matmuls round differently), a difference
    says nothing about the rule, and is shown but not judged."""
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
                                 f"{', '.join(differ)} differ"))
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
            if not _cells_equal(row[mode], other[mode]):
                found.append(Finding("convention_differs_from_twin",
                                     Where("twin", row["dtype"], "eager", "packed", row["input"],
                                           row["bits"], transformation=mode),
                                     f"{row[mode]!r}, twin {other[mode]!r}"))
    return found


# --- matches in the atlas -----------------------------------------------------------------

def _cells_equal(a, b) -> bool:
    """Cells, or lists of cells (one per placement), taking the same values, by
    study.compare.cells.equal (±0 equal, NaN equal), wherever they sit."""
    va = [v for c in (a if isinstance(a, list) else [a]) for v in _values(as_cell(c))]
    vb = [v for c in (b if isinstance(b, list) else [b]) for v in _values(as_cell(c))]
    return (all(any(equal(x, y) for y in vb) for x in va)
            and all(any(equal(x, y) for y in va) for x in vb))


def _values(cell) -> list:
    return list(cell.values) if isinstance(cell, Placed) else [cell]


def _distinct_values(cells: list):
    """The values a list of cells takes: the value itself where there is one."""
    out: list = []
    for v in (v for c in cells for v in (c["values"] if isinstance(c, dict) else [c])):
        if not any(equal(as_cell(v), as_cell(d)) for d in out):
            out.append(v)
    return out[0] if len(out) == 1 else out


def atlas_run(atlas_dir: str = ATLAS_DIR, labels_file: str = LABELS_FILE,
              label: str = ATLAS_RUN) -> dict | None:
    """The committed zero_point result file of run `label`, or None where there is none."""
    try:
        with open(labels_file, encoding="utf-8") as f:
            configuration = {v: k for k, v in json.load(f).items()}[label]
    except (OSError, ValueError, KeyError):
        return None
    for path in sorted(glob.glob(os.path.join(atlas_dir, "*.json"))):
        with open(path, encoding="utf-8") as f:
            run = json.load(f)
        if "|".join(map(str, identity(run["provenance"]))) == configuration:
            # read in today's record shapes, as the report reads it (probe labels included)
            return {**run, "records": upgrade("zero_point", run["records"]), "path": path,
                    "label": label}
    return None


def _differing_cells(rec: dict, ours: dict) -> list[dict] | None:
    """The cells of one atlas record (one op and dtype) that differ from ours; None where the
    record was not probed at every one of our kinks at its dtype (nothing to compare)."""
    ours_here = {label for dtype, label in ours if dtype == rec["dtype"]}
    shared = [(i, label) for i, label in enumerate(rec["inputs"]) if label in ours_here]
    if not ours_here or not ours_here - NOT_KINKS <= {label for _, label in shared}:
        return None
    differing = []
    for i, label in shared:
        for mode in MATCHED_MODES:
            cell = rec[mode] if isinstance(rec[mode], str) else rec[mode][i]
            mine = [row[mode] for row in ours[(rec["dtype"], label)]]
            if not _cells_equal(mine, cell):
                differing.append({"dtype": rec["dtype"], "input": label, "mode": mode,
                                  "rule": _distinct_values(mine), "builtin": cell})
    return differing


def matches(rows: list[dict], framework: str, run: dict | None) -> dict:
    """Built-ins whose committed atlas cells (value and reverse, eagerly, at run C1) equal the
    rule's at every input both probe, the rule's kinks among them, in every dtype both
    measured; where none does, the nearest (fewest differing cells; the rule's framework
    first) and the cells that differ."""
    if run is None:
        return {"run": None, "matches": [], "nearest": None}
    ours: dict = {}
    for row in (r for r in rows if r["execution"] == "eager"):
        ours.setdefault((row["dtype"], row["input"]), []).append(row)
    ops: dict = {}
    for rec in run["records"]:
        if (rec.get("part"), rec.get("kind"), rec.get("execution")) != ("atlas", "builtin",
                                                                         "eager"):
            continue
        differing = _differing_cells(rec, ours)
        if differing is None:
            continue
        op = ops.setdefault(rec["rule"], {"rule": rec["rule"], "name": rec["name"],
                                          "framework": rec["framework"], "dtypes": [],
                                          "differing": []})
        op["dtypes"].append(rec["dtype"])
        op["differing"] += differing
    ranked = sorted(ops.values(), key=lambda o: (len(o["differing"]),
                                                 o["framework"] != framework, o["rule"]))
    matching = [o for o in ranked if not o["differing"]]
    provenance = run["provenance"]
    return {"run": {"label": run["label"], "file": os.path.relpath(run["path"], REPO_ROOT),
                    "torch": provenance["torch"], "jax": provenance["jax"]},
            "matches": matching, "nearest": ranked[0] if ranked and not matching else None}


# --- cost ---------------------------------------------------------------------------------

def _forward_and_backward(fn, framework: str, compiled: bool, x_host: np.ndarray, device):
    """(thunk, sync): one forward and backward of fn at x_host, as a training step runs it."""
    if framework == "torch":
        x = device.to_torch(x_host, requires_grad=True)
        ones = torch.ones_like(x)
        f = torch.compile(fn, backend="inductor") if compiled else fn

        def step():
            x.grad = None
            f(x).backward(ones)
            return x.grad
        return step, lambda _: device.synchronize()
    x = device.to_jax(x_host)
    grad = jax.grad(lambda a: fn(a).sum())
    grad = jax.jit(grad) if compiled else grad
    return (lambda: grad(x)), jax.block_until_ready


def cost(rule: Rule, device, rounds: int = 20) -> dict:
    """Time of a forward and backward ÷ the framework's built-in ReLU's at 10^6 elements,
    eager and compiled, timed round by round (study.workloads.timing) with the ratio's 95% interval
    (study.compare.stats); and the bytes an element keeps for backward (study.workloads.memory)."""
    name, builtin = BUILTIN_RELU[rule.framework]
    x_host = np.random.default_rng(0).standard_normal(COST_ELEMENTS).astype(np.float32)
    out = {"elements": COST_ELEMENTS, "builtin": name, "ratios": {}}
    for execution in ("eager", "compiled"):
        if execution == "compiled" and rule.framework == "torch":
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
    sample = x_host[:SAVED_BYTES_ELEMENTS]
    if rule.framework == "torch":
        kept = [torch_saved_bytes(f, device.to_torch(sample)) for f in (rule.fn, builtin)]
    else:
        kept = [jax_residual_bytes(f, device.to_jax(sample)) for f in (rule.fn, builtin)]
    out["bytes_per_element"] = {"rule": kept[0] / sample.size, "builtin": kept[1] / sample.size}
    return out

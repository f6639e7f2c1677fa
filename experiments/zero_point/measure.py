"""Measuring the zero-point atlas: every rule at its kinks, per dtype, mode, placement and
compiler, the numeric checks at the kink, and the subnormal-arithmetic probe."""
import numpy as np
import torch
from jax.test_util import check_grads

from study.measure.conventions import DTYPES, MODES, probe_inputs, reverse_derivative
from study.measure.arithmetic import subnormal_arithmetic
from study.measure.compiled import COMPILED_MODES, COMPILERS, measure_compiled
from study.measure.placement import ALL_PLACEMENTS, FILL_LENGTH, collapse, measure
from study.measure.rules import RULES, documented_derivatives, related

from experiments.zero_point.kinks import MEASURED_DTYPE, kink_records

GRADCHECK_POINTS = (-0.5, 0.0, 0.5)
FD_EPS = 1e-6
JAX_PLACEMENTS = {"quick": ("2-D rows",), "standard": ("2-D rows",),
                  "full": ("packed", "0-d", "1-element", "fill", "2-D rows")}
# Compiled: the placement each framework's eager standard run also measures, where every input
# fills a row of FILL_LENGTH (a vector body and a tail); --full adds dtypes and placements.
COMPILED = {"quick": (("float32",), {"torch": ("fill",), "jax": ("2-D rows",)}),
            "standard": (("float32",), {"torch": ("fill",), "jax": ("2-D rows",)}),
            "full": (DTYPES, {"torch": ("packed", "fill", "2-D rows"),
                              "jax": ("packed", "0-d", "1-element", "fill", "2-D rows")})}


def probed_kinks(rule) -> tuple[float, ...]:
    """The rule's own kinks and its look-alike's, so that a pair is probed at the same inputs."""
    other = related(rule, "look_alike")
    return tuple(sorted(set(rule.kinks) | set(other.kinks if other else ())))


def cases(scope: str, rules=RULES) -> list[dict]:
    """Every rule of `rules` (the registry unless given) in the atlas, each built-in's shape at
    its kinks (zero_point.kinks), and each framework's rules compiled together."""
    dtypes = ("float32",) if scope == "quick" else DTYPES
    atlas = [{"part": "atlas", "rule": r, "dtype": d, "scope": scope}
             for d in dtypes for r in rules]
    checks = [{"part": "gradcheck", "rule": r, "dtype": "float64", "scope": scope}
              for r in rules if r.kind == "custom"]
    arithmetic = [{"part": "arithmetic", "framework": fw, "dtype": d, "scope": scope}
                  for fw in ("torch", "jax") for d in dtypes]
    compiled = [{"part": "compiled", "framework": fw, "dtype": d, "scope": scope,
                 "rules": tuple(r for r in rules if r.framework == fw)}
                for fw in ("torch", "jax") for d in COMPILED[scope][0]]
    kinks = [{"part": "kinks", "rule": r, "dtype": MEASURED_DTYPE, "scope": scope}
             for r in rules if r.kind == "builtin"]
    return atlas + checks + arithmetic + compiled + kinks


def run_case(device, part: str, dtype: str, scope: str, rule=None,
             framework: str | None = None, rules=RULES) -> list[dict]:
    if part == "arithmetic":
        execs = (False,) if framework == "torch" else (False, True)
        return [{"part": part, "framework": framework, "dtype": dtype, "device": device.name,
                 "exec": "jit" if jit else "eager",
                 **subnormal_arithmetic(framework, dtype, device, jit)} for jit in execs]
    if part == "compiled":
        return _compiled(device, framework, dtype, scope, rules)
    if part == "kinks":
        return kink_records(rule, device)
    if part not in ("atlas", "gradcheck"):
        raise ValueError(f"unknown zero_point part {part!r}")
    if part == "gradcheck":
        return [{**_base(rule, part, dtype, device), **_gradcheck(rule, x, device)}
                for x in GRADCHECK_POINTS]
    inputs = probe_inputs(dtype, probed_kinks(rule))
    placements = ALL_PLACEMENTS if rule.framework == "torch" else JAX_PLACEMENTS[scope]
    measured = measure(rule, [v for _, v in inputs], dtype, device, placements)
    return [_atlas_record(rule, dtype, device, inputs, "eager", measured, MODES)]


def _base(r, part: str, dtype: str, device) -> dict:
    return {"part": part, "framework": r.framework, "rule": r.key, "name": r.name, "kind": r.kind,
            "convention": r.convention, "kinks": list(probed_kinks(r)), "dtype": dtype,
            "device": device.name}


def _atlas_record(r, dtype, device, inputs, execution, measured, modes) -> dict:
    """One op's atlas record: per mode, one collapsed cell per input
    (study.measure.placement.collapse)."""
    rec = {**_base(r, "atlas", dtype, device), "execution": execution,
           "inputs": [label for label, _ in inputs], "x": [v for _, v in inputs],
           "placements": sorted({p for cells in measured["value"] for p in cells}),
           "fill_length": FILL_LENGTH, "modes": list(modes), "look_alike": r.look_alike,
           "documented": [[k, v] for k, v in documented_derivatives(r).items()]}
    for mode in modes:
        cells = [collapse(c) for c in measured[mode]]
        same_error = isinstance(cells[0], str) and all(c == cells[0] for c in cells)
        rec[mode] = cells[0] if same_error else cells  # a mode-wide error is stored once
    return rec


def _compiled(device, framework: str, dtype: str, scope: str, rules) -> list[dict]:
    """The framework's ops among `rules` compiled (study.measure.compiled), one atlas record per
    op."""
    rules = [r for r in rules if r.framework == framework]
    inputs = [probe_inputs(dtype, probed_kinks(r)) for r in rules]
    placements = COMPILED[scope][1][framework]
    got = measure_compiled(rules, [[v for _, v in i] for i in inputs], dtype, device, placements)
    records = []
    for r, i, g in zip(rules, inputs, got):
        measured = {m: [{p: g["outcome"][m][p][k] for p in placements} for k in range(len(i))]
                    for m in COMPILED_MODES}
        records.append({**_atlas_record(r, dtype, device, i, "compiled", measured, COMPILED_MODES),
                        "compiler": COMPILERS[framework], "graph_ops": g["graph_ops"]})
    return records


def _gradcheck(rule, x0: float, device) -> dict:
    """Analytic derivative (0-d, reverse), central finite difference and the framework's own
    numeric check, all on the run's device."""
    analytic = reverse_derivative(rule, x0, "float64", device)
    if rule.framework == "torch":
        def f(v):
            return float(device.to_numpy(rule.fn(device.torch_tensor(v, dtype=torch.float64))))
        x = device.torch_tensor([x0], dtype=torch.float64, requires_grad=True)
        passed = torch.autograd.gradcheck(rule.fn, (x,), eps=FD_EPS, atol=1e-5,
                                          raise_exception=False)
        checker = "torch.autograd.gradcheck"
    else:
        def f(v):
            return float(device.to_numpy(rule.fn(device.to_jax(np.float64(v)))))
        try:
            check_grads(rule.fn, (device.to_jax(np.float64(x0)),), order=1, modes=("rev",),
                        eps=FD_EPS)
            passed = True
        except AssertionError:
            passed = False
        checker = "jax.test_util.check_grads"
    fd = (f(x0 + FD_EPS) - f(x0 - FD_EPS)) / (2 * FD_EPS)
    return {"point": x0, "analytic": analytic, "finite_difference": fd, "passed": passed,
            "checker": checker, "fd_eps": FD_EPS}

"""Measuring the zero-point atlas: every rule at its kinks, per dtype, mode, placement and
compiler (study.measure.probe), the numeric checks at the kink, and the subnormal-arithmetic
probe. An op's atlas is a row of the table atlas (what was probed, where, how) and a row per
cell of atlas_cells (study.compare.cells.stored_rows: framework, rule, dtype, execution, mode,
input). A built-in of several inputs is measured at its ties instead: a row of the table ties
per dtype, execution, tie, output element and input (study.measure.probe.tie_jacobians), and
its shape there, judged as the kinks are, in tie_kinks (study.conformance.tie_records)."""
from study.compare.cells import Error, stored_rows
from study.conformance import MEASURED_DTYPE, kink_records, tie_records
from study.errors import StudyError
from study.measure.arithmetic import subnormal_arithmetic
from study.measure.compiled import COMPILED_MODES
from study.measure.inputs import DTYPES, probe_inputs
from study.measure.placement import ALL_PLACEMENTS, FILL_LENGTH
from study.measure.probe import (COMPILED_PLACEMENTS, COMPILERS, FD_EPS, NUMERIC_CHECKERS,
                                 finite_difference, measure, measure_compiled, numeric_check,
                                 reverse_derivative, tie_jacobians)
from study.measure.rule import TIE_VALUES

GRADCHECK_POINTS = (-0.5, 0.0, 0.5)
JAX_PLACEMENTS = {"quick": ("2-D rows",), "standard": ("2-D rows",),
                  "full": ("packed", "0-d", "1-element", "fill", "2-D rows")}
# Compiled: the placement each framework's eager standard run also measures, where every input
# fills a row of FILL_LENGTH (a vector body and a tail); --full adds dtypes and placements.
COMPILED = {"quick": (("float32",), COMPILED_PLACEMENTS),
            "standard": (("float32",), COMPILED_PLACEMENTS),
            "full": (DTYPES, {"torch": ("packed", "fill", "2-D rows"),
                              "jax": ("packed", "0-d", "1-element", "fill", "2-D rows")})}


def probed_kinks(rule) -> tuple[float, ...]:
    """The rule's own kinks and its look-alike's, so that a pair is probed at the same inputs."""
    from study.measure.rules import related  # the registry: both frameworks
    other = related(rule, "look_alike")
    return tuple(sorted(set(rule.kinks) | set(other.kinks if other else ())))


def _registry(rules):
    """`rules`, or the registry's (imported here: it starts both frameworks, and reading this
    experiment's results needs neither)."""
    if rules is not None:
        return rules
    from study.measure.rules import RULES
    return RULES


def cases(scope: str, rules=None) -> list[dict]:
    """Every rule of `rules` (the registry unless given) in the atlas, each built-in's shape at
    its kinks (study.conformance.kink_records), and each framework's rules compiled together."""
    rules = _registry(rules)
    several = [r for r in rules if r.several_inputs]
    rules = [r for r in rules if not r.several_inputs]
    dtypes = ("float32",) if scope == "quick" else DTYPES
    atlas = [{"part": "atlas", "rule": r, "dtype": d, "scope": scope}
             for d in dtypes for r in rules]
    checks = [{"part": "gradcheck", "rule": r, "dtype": "float64", "scope": scope}
              for r in rules if r.kind == "custom"]
    arithmetic = [{"part": "arithmetic", "framework": fw, "dtype": d, "scope": scope}
                  for fw in ("torch", "jax") for d in dtypes]
    compiled = [{"part": "compiled", "framework": fw, "dtype": d, "scope": scope,
                 "rules": tuple(r for r in rules if r.framework == fw)}
                for fw in ("torch", "jax") for d in COMPILED[scope][0]
                if any(r.framework == fw for r in rules)]
    kinks = [{"part": "kinks", "rule": r, "dtype": MEASURED_DTYPE, "scope": scope}
             for r in rules if r.kind == "builtin"]
    ties = [{"part": "ties", "rule": r, "dtype": d, "scope": scope} for d in dtypes
            for r in several]
    tie_kinks = [{"part": "tie_kinks", "rule": r, "dtype": MEASURED_DTYPE, "scope": scope}
                 for r in several if r.kind == "builtin"]
    return atlas + checks + arithmetic + compiled + kinks + ties + tie_kinks


def run_case(device, part: str, dtype: str, scope: str, rule=None,
             framework: str | None = None, rules=None) -> list[dict]:
    if part == "arithmetic":
        execs = (False,) if framework == "torch" else (False, True)
        return [{"part": part, "framework": framework, "dtype": dtype, "device": device.name,
                 "exec": "jit" if jit else "eager",
                 **subnormal_arithmetic(framework, dtype, device, jit)} for jit in execs]
    if part == "compiled":
        return _compiled(device, framework, dtype, scope, _registry(rules))
    if part == "kinks":
        return kink_records(rule, device)
    if part == "ties":
        return tie_rows(rule, dtype, device)
    if part == "tie_kinks":
        return tie_records(rule, device)
    if part not in ("atlas", "gradcheck"):
        raise ValueError(f"unknown zero_point part {part!r}")
    if part == "gradcheck":
        return [{**_base(rule, part, dtype, device), **_gradcheck(rule, x, device)}
                for x in GRADCHECK_POINTS]
    inputs = probe_inputs(dtype, probed_kinks(rule))
    placements = ALL_PLACEMENTS if rule.framework == "torch" else JAX_PLACEMENTS[scope]
    cells = measure(rule, [v for _, v in inputs], dtype, device, placements)
    return atlas_rows(_atlas_record(rule, dtype, device, inputs, "eager", placements), cells)


def _base(r, part: str, dtype: str, device) -> dict:
    return {"part": part, "framework": r.framework, "rule": r.key, "name": r.name, "kind": r.kind,
            "convention": r.convention, "kinks": list(probed_kinks(r)), "dtype": dtype,
            "device": device.name}


def _atlas_record(r, dtype, device, inputs, execution, placements) -> dict:
    """One op's row of the table atlas: what was probed, where and how."""
    from study.measure.rules import documented_derivatives
    measured = sorted(p for p in placements if r.framework == "torch" or p != "strided")
    return {**_base(r, "atlas", dtype, device), "execution": execution,
            "inputs": [label for label, _ in inputs], "x": [v for _, v in inputs],
            "placements": measured, "fill_length": FILL_LENGTH, "look_alike": r.look_alike,
            "documented": [[k, v] for k, v in documented_derivatives(r).items()]}


def atlas_rows(op: dict, cells: dict) -> list[dict]:
    """The op's row with its modes, then a row per cell (per mode, one cell per input, collapsed
    over placements) in the table atlas_cells."""
    key = {"part": "atlas_cells", "framework": op["framework"], "rule": op["rule"],
           "dtype": op["dtype"], "execution": op["execution"]}
    return [{**op, "modes": list(cells)}] + [
        {**key, "mode": mode, "input": label, **row}
        for mode, mode_cells in cells.items()
        for label, cell in zip(op["inputs"], mode_cells) for row in stored_rows(cell)]


def _compiled(device, framework: str, dtype: str, scope: str, rules) -> list[dict]:
    """The framework's ops among `rules` compiled together (study.measure.probe), one atlas
    record per op."""
    rules = [r for r in rules if r.framework == framework and not r.several_inputs]
    inputs = [probe_inputs(dtype, probed_kinks(r)) for r in rules]
    placements = COMPILED[scope][1][framework]
    got = measure_compiled(rules, [[v for _, v in i] for i in inputs], dtype, device, placements)
    return [row for r, i, g in zip(rules, inputs, got) for row in atlas_rows(
        {**_atlas_record(r, dtype, device, i, "compiled", placements),
         "compiler": COMPILERS[framework], "graph_ops": g["graph_ops"]},
        {m: g["cells"][m] for m in COMPILED_MODES})]


def _gradcheck(rule, x0: float, device) -> dict:
    """Analytic derivative (0-d, reverse), central finite difference and the framework's own
    numeric check (study.measure.probe), all on the run's device; a checker that raises fails
    the case with its line."""
    outcome = numeric_check(rule, x0, device)
    if outcome not in ("passed", "failed"):
        raise StudyError(outcome)
    return {"point": x0, "analytic": reverse_derivative(rule, x0, "float64", device),
            "finite_difference": finite_difference(rule, x0, device),
            "passed": outcome == "passed", "checker": NUMERIC_CHECKERS[rule.framework],
            "fd_eps": FD_EPS}


def tie_rows(rule, dtype: str, device) -> list[dict]:
    """A built-in of several inputs at each of its ties, with the tied inputs at each of
    TIE_VALUES, eagerly and compiled (COMPILERS): a row per output element and input holding
    d output / d input (reverse mode, a cotangent of 1 on that output element and 0 on the
    others), or one row with the error where the gradient raised."""
    cases = [(tie, at, tie.point(at)) for tie in rule.input_ties for at in TIE_VALUES]
    labels = rule.input_labels()
    rows = []
    for execution in ("eager", "compiled"):
        got = tie_jacobians(rule, [point for _, _, point in cases], dtype, device,
                            compiled=execution == "compiled")
        for (tie, at, point), jacobian in zip(cases, got):
            key = {"part": "ties", "framework": rule.framework, "rule": rule.key,
                   "name": rule.name, "look_alike": rule.look_alike, "dtype": dtype,
                   "device": device.name, "execution": execution,
                   "compiler": COMPILERS[rule.framework] if execution == "compiled" else None,
                   "tie": rule.tie_name(tie), "at": at, "k": len(tie.tied)}
            if isinstance(jacobian, Error):
                rows.append({**key, "output": None, "input": None, "x": None,
                             "gradient": None, "error": jacobian.line})
                continue
            rows += [{**key, "output": j, "input": label, "x": x, "gradient": float(g),
                      "error": None} for j, row in enumerate(jacobian)
                     for label, x, g in zip(labels, point, row)]
    return rows

"""study.check: one function from a user's rule to a CheckResult. Only the frameworks of the
rule (and its twin) are imported."""
import contextlib
import logging
import os
import platform
import sys
import warnings

import numpy as np

from study.check import _atlas, _judges, _known, _probe, _reproducer, _sections, _several, _ties
from study.check._findings import FAILING, PROSE, Finding, by_kind
from study.check._load import UsageError, as_rule
from study.check._result import CheckResult
from study.measure.devices import resolve_devices
from study.measure.frameworks import use_shared_settings
from study.measure.inputs import DTYPES
from study.measure.placement import ALL_PLACEMENTS
from study.measure.probe import COMPILED_PLACEMENTS, COMPILERS
from study.report.prose import say
from study.runs import provenance

QUICK_DTYPES = ("float32", "float64")
EAGER_PLACEMENTS = {"torch": ALL_PLACEMENTS, "jax": ("packed", "2-D rows")}
QUICK_PLACEMENTS = EAGER_PLACEMENTS  # eager placements are cheap; compiled ones are not
QUICK_SKIPS = tuple(say(PROSE, "quick_skips").split(" | "))


def _framework_state(frameworks) -> dict:
    """What a check changes in each framework, to put back: JAX's x64 and matmul precision;
    torch's matmul precision, grad mode, default dtype and dynamo's config."""
    state = {}
    if "jax" in frameworks:
        import jax
        state["jax"] = (jax.config.jax_enable_x64, jax.config.jax_default_matmul_precision)
    if "torch" in frameworks:
        import torch
        state["torch"] = (torch.get_float32_matmul_precision(), torch.is_grad_enabled(),
                          torch.get_default_dtype(), torch._dynamo.config.get_config_copy())
    return state


def _restore(state: dict) -> None:
    if "jax" in state:
        import jax
        jax.config.update("jax_enable_x64", state["jax"][0])
        jax.config.update("jax_default_matmul_precision", state["jax"][1])
    if "torch" in state:
        import torch
        precision, grad, dtype, dynamo = state["torch"]
        torch.set_float32_matmul_precision(precision)
        torch.set_grad_enabled(grad)
        torch.set_default_dtype(dtype)
        with warnings.catch_warnings():  # deprecated keys warn when set, even to themselves
            warnings.simplefilter("ignore")
            torch._dynamo.config.load_config(dynamo)


@contextlib.contextmanager
def _compile_trace_silenced(frameworks):
    """torch's structured trace log ("torch.__trace") is always at DEBUG and ignores
    logging.disable, and pytest's log capture hangs its handlers on it: each graph the check
    compiles put DEBUG lines in a failing test's report (about 140 for one --quick check).
    Its handlers are taken off for the check and put back, as they were, after."""
    trace = logging.getLogger("torch.__trace") if "torch" in frameworks else None
    handlers = list(trace.handlers) if trace else []
    for handler in handlers:
        trace.removeHandler(handler)
    try:
        yield
    finally:
        for handler in handlers:
            if handler not in trace.handlers:
                trace.addHandler(handler)


@contextlib.contextmanager
def _user_state_restored(frameworks):
    """The settings a check changes (_framework_state) and the RNGs, put back as they were.
    dynamo's compiled-code cache is emptied by each compile here: the user's compiled functions
    compile again on their next call."""
    saved, rng = _framework_state(frameworks), _probe.rng_states()
    with _compile_trace_silenced(frameworks):
        try:
            use_shared_settings(tuple(frameworks))
            if "torch" in frameworks:
                import torch
                torch.set_grad_enabled(True)
            yield
        finally:
            _restore(saved)
            _probe.restore_rng(rng)


def _release(framework: str) -> str | None:
    module = sys.modules.get(framework)
    return None if module is None else module.__version__


def _environment() -> dict:
    return {"torch": _release("torch"), "jax": _release("jax"), "numpy": np.__version__,
            "python": platform.python_version(), "cpu": provenance.cpu_model(),
            "cpu_capability": provenance.torch_cpu_capability() if "torch" in sys.modules
            else None, "cpu_count": os.cpu_count()}


def check(fn, twin=None, *, framework: str | None = None, twin_framework: str | None = None,
          args: tuple = (), kinks: tuple = (), quick: bool = False, device: str = "cpu",
          fail_on: tuple = FAILING, name: str | None = None, twin_name: str | None = None,
          known=None, source: str | None = None, twin_source: str | None = None
          ) -> CheckResult:
    """Measure a custom gradient rule as the study measures its own, and say what is wrong.

        >>> r = study.check(MyReLU)            # an autograd.Function, custom_op, nn.Module,
        >>> assert r.ok, r.first_screen()      # jax.custom_vjp/custom_jvp, or any fn of x

    `args` follow the rule's inputs in every call (derivatives are taken with respect to those
    only): x, or several of one shape (x, y; x, min, max), which are probed where they tie
    (study.check._ties) instead of at kinks; `kinks` are probed besides those a scan finds;
    `quick` keeps float32 and float64 eager, one compiled graph, linearity, determinism,
    gradcheck and the transforms without compile and export.
    `known`: findings the project accepts (a known file's path, its content, or a list of
    entries: study.check._known); they do not fail the result. `source`: the rule as
    MODULE_OR_FILE:ATTR, for the reproducers to import it (else its module and name).
    Raises study.check.UsageError where the rule cannot be checked; never exits.
    """
    if device not in ("cpu", "cuda"):
        raise UsageError(f"unknown device {device!r}; choose cpu or cuda")
    entries, known_source = _known.as_entries(known)
    rule, style = as_rule(fn, framework, tuple(args), name, tuple(kinks))
    try:
        twin_rule, twin_style = (None, None) if twin is None else as_rule(
            twin, twin_framework, tuple(args), twin_name, tuple(kinks))
    except UsageError as exc:
        raise UsageError(f"twin: {exc}") from None
    if twin_rule is not None and (rule.several_inputs or twin_rule.several_inputs):
        raise UsageError("twin: a rule of several inputs is shown beside the built-ins of its "
                         "values and their look-alikes, not beside a twin")
    frameworks = {rule.framework} | ({twin_rule.framework} if twin_rule else set())
    dev, = resolve_devices(device, tuple(sorted(frameworks)))
    if rule.several_inputs:  # a look-alike is measured where its framework is imported
        frameworks |= {fw for fw in ("torch", "jax") if fw in sys.modules}
    with _user_state_restored(frameworks), dev.as_default():
        result = _checked(rule, style, twin_rule, dev, tuple(kinks), quick, tuple(fail_on))
    result.apply_known(entries, known_source)
    twin_of = None if twin is None else (
        _reproducer.Source.of(twin, twin_source, twin_style, tuple(args)), twin_rule.framework)
    _write_reproducers(result, _reproducer.Source.of(fn, source, style, tuple(args)),
                       twin_of if twin_of and not isinstance(twin_of[0], str) else None)
    return result


def _checked(rule, style, twin_rule, dev, kinks, quick, fail_on) -> CheckResult:
    if rule.several_inputs:
        return _checked_several(rule, style, dev, quick, fail_on)
    findings: list[Finding] = _probe.check_callable(rule, dev)
    if twin_rule is not None and (problem := _probe.twin_output_problem(twin_rule, dev)):
        raise UsageError(f"twin: {problem}")
    scanned = _probe.scan_kinks(rule, dev) if not findings else ()
    probed = tuple(sorted(set(() if isinstance(scanned, str) else scanned) | set(kinks)
                          | {0.0}))
    fw = rule.framework
    dtypes = QUICK_DTYPES if quick else DTYPES
    placements = (QUICK_PLACEMENTS if quick else EAGER_PLACEMENTS)[fw]
    compiled = say(PROSE, "compiled_scope", compiler=COMPILERS[fw], quick=quick,
                   at=COMPILED_PLACEMENTS[fw][0])
    result = CheckResult(
        target=rule.name, framework=fw, style=style, device=dev.name,
        scope={"quick": quick, "skipped": list(QUICK_SKIPS) if quick else [],
               "dtypes": list(dtypes), "placements": list(placements), "compiled": compiled},
        environment=_environment(),
        kinks={"scanned": scanned if isinstance(scanned, str) else list(scanned),
               "given": list(kinks), "probed": list(probed)},
        findings=findings, fail_on=fail_on)
    if findings:  # not elementwise: no measurement here would mean what it says
        return result
    _measure(result, rule, dev, probed, quick, dtypes, placements)
    if twin_rule is not None:
        _compare_twin(result, rule, twin_rule, dev, probed, dtypes)
    return result


def _checked_several(rule, style, dev, quick, fail_on) -> CheckResult:
    """A rule of several inputs: elementwise in all of them, then its ties (study.check._ties),
    linearity and determinism there and at ordinary points, and gradcheck."""
    findings: list[Finding] = _several.check_callable(rule, dev)
    dtypes = QUICK_DTYPES if quick else DTYPES
    result = CheckResult(
        target=rule.name, framework=rule.framework, style=style, device=dev.name,
        scope={"quick": quick, "skipped": [say(PROSE, "several_inputs_skips")]
               + (list(QUICK_SKIPS[:1]) if quick else []),
               "dtypes": list(dtypes), "placements": ["packed"], "compiled": "none"},
        environment=_environment(), kinks={"scanned": [], "given": [], "probed": []},
        findings=findings, fail_on=fail_on)
    if findings:  # not elementwise: no measurement here would mean what it says
        return result
    result.ties, found, result.vjp = _ties.tie_section(rule, dtypes, dev)
    points = _several.ordinary_points(len(rule.operands))
    labels = [_several.point_label(rule.input_labels(), p) for p in points]
    for dtype in dtypes:
        rows, more, *_ = _several.linearity(rule, dtype, points, labels, "vjp", dev)
        result.vjp += rows
        found += more
    ties = [(c["point"], c["label"]) for c in result.ties["cases"] if c["dtype"] == dtypes[0]]
    everywhere = np.array([p for p, _ in ties] + points.tolist())
    for dtype in QUICK_DTYPES:
        row, more = _several.determinism(rule, dtype, everywhere,
                                         [lab for _, lab in ties] + labels, dev)
        result.determinism.append(row)
        found += more
    result.gradcheck, more = _several.gradcheck(rule, dev)
    result.findings += found + more
    return result


def _write_reproducers(result: CheckResult, source, twin) -> None:
    """Per wrong kind, one pytest file for all its findings (the markdown's), and per wrong
    finding its own (the JSON's); where none can be written, why."""
    for kind, group in by_kind(result.findings).items():
        if group[0].severity != "wrong":
            continue
        why = _reproducer.why_none(group, source, twin,
                                   result.ties["inputs"] if result.ties else ("x",))
        if why is not None:
            result.reproducers[kind] = why
            continue
        kinks = result.kinks["probed"]
        result.reproducers[kind] = _reproducer.reproducer(group, source, result.framework,
                                                          twin, kinks, result.device)
        for f in group:
            result.reproducer_of[f.id] = _reproducer.reproducer([f], source, result.framework,
                                                                twin, kinks, result.device)


def _measure(result: CheckResult, rule, dev, kinks, quick: bool, dtypes, placements) -> None:
    fw, found = rule.framework, result.findings
    for dtype in dtypes:
        passes = (("train",) if dtype == "float32" else ()) if quick else ("train", "forward")
        result.conventions += _probe.conventions(rule, dtype, kinks, dev, placements,
                                                 COMPILED_PLACEMENTS[fw], passes)
        rows, more = _probe.linearity(rule, dtype, kinks, dev)
        result.vjp += rows
        found += more
    around = {dtype: _probe.finite_around(rule, dtype, kinks, dev) for dtype in dtypes}
    found += _judges.finiteness_findings(result.conventions, around)
    found += _judges.compiled_findings(result.conventions)
    for dtype in QUICK_DTYPES:
        row, more = _probe.determinism(rule, dtype, kinks, dev)
        result.determinism.append(row)
        found += more
    result.gradcheck, more = _probe.gradcheck(rule, kinks, dev)
    found += more
    from study.workloads.transformations import COLUMNS, COMPILING_COLUMNS
    columns = [c for c in COLUMNS if not (quick and c in COMPILING_COLUMNS)]
    result.transforms, more = _sections.transforms(rule, kinks, dev, columns, "inductor")
    found += more
    if fw == "torch":
        result.clone_hazard, more = _sections.clone_hazards(rule, dev)
        found += more
    installed = {f: _release(f) for f in ("torch", "jax") if f in sys.modules}
    atlas = _atlas.committed_atlas(installed, fw, dev.name, result.environment["cpu_capability"])
    result.matches = _sections.matches(result.conventions, fw, atlas)
    if not quick:
        result.cost = _sections.cost(rule, dev)


def _compare_twin(result: CheckResult, rule, twin_rule, dev, kinks, dtypes) -> None:
    nets, found = _sections.twin_nets(rule, twin_rule, dev)
    twin_rows = []
    for dtype in dtypes:
        twin_rows += _probe.conventions(twin_rule, dtype, kinks, dev, ("packed",), (), ())
    found += _sections.twin_conventions(result.conventions, twin_rows)
    result.twin = {"target": twin_rule.name, "framework": twin_rule.framework, "nets": nets}
    result.findings += found

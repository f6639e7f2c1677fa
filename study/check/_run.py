"""study.check: one function from a user's rule to a CheckResult."""
import contextlib
import os
import platform
import warnings

import jax
import numpy as np
import torch

from study.runs import provenance
from study.check import _probe, _sections
from study.check._findings import FAILING, PROSE, Finding
from study.check._load import UsageError, as_rule
from study.check._result import CheckResult
from study.measure.conventions import DTYPES
from study.measure.devices import resolve_devices
from study.measure.frameworks import use_shared_settings
from study.measure.placement import ALL_PLACEMENTS
from study.report.prose import say
from study.workloads.transformations import COLUMNS, COMPILING_COLUMNS

QUICK_DTYPES = ("float32", "float64")
EAGER_PLACEMENTS = {"torch": ALL_PLACEMENTS, "jax": ("packed", "2-D rows")}
QUICK_PLACEMENTS = EAGER_PLACEMENTS  # eager placements are cheap; compiled ones are not
COMPILED_PLACEMENTS = {"torch": ("fill",), "jax": ("2-D rows",)}  # as the atlas compiles
COMPILERS = {"torch": "torch.compile (inductor)", "jax": "jax.jit"}
QUICK_SKIPS = tuple(say(PROSE, "quick_skips").split(" | "))


@contextlib.contextmanager
def _user_state_restored():
    """The settings a check changes (JAX's x64 and matmul precision, torch's matmul precision,
    grad mode and default dtype, dynamo's config, the RNGs), put back as they were. dynamo's
    compiled-code cache is emptied by each compile here: the user's compiled functions compile
    again on their next call."""
    saved = (jax.config.jax_enable_x64, jax.config.jax_default_matmul_precision,
             torch.get_float32_matmul_precision(), torch.is_grad_enabled(),
             torch.get_default_dtype(), torch._dynamo.config.get_config_copy(),
             _probe.rng_states())
    try:
        use_shared_settings()
        torch.set_grad_enabled(True)
        yield
    finally:
        jax.config.update("jax_enable_x64", saved[0])
        jax.config.update("jax_default_matmul_precision", saved[1])
        torch.set_float32_matmul_precision(saved[2])
        torch.set_grad_enabled(saved[3])
        torch.set_default_dtype(saved[4])
        with warnings.catch_warnings():  # deprecated keys warn when set, even to themselves
            warnings.simplefilter("ignore")
            torch._dynamo.config.load_config(saved[5])
        _probe.restore_rng(saved[6])


def _environment() -> dict:
    return {"torch": torch.__version__, "jax": jax.__version__, "numpy": np.__version__,
            "python": platform.python_version(), "cpu": provenance.cpu_model(),
            "cpu_capability": provenance.torch_cpu_capability(), "cpu_count": os.cpu_count()}


def check(fn, twin=None, *, framework: str | None = None, twin_framework: str | None = None,
          args: tuple = (), kinks: tuple = (), quick: bool = False, device: str = "cpu",
          fail_on: tuple = FAILING, name: str | None = None,
          twin_name: str | None = None) -> CheckResult:
    """Measure a custom gradient rule as the study measures its own, and say what is wrong.

        >>> r = study.check(MyReLU)            # an autograd.Function, custom_op, nn.Module,
        >>> assert r.ok, r.to_markdown()       # jax.custom_vjp/custom_jvp, or any fn of x

    `args` follow x in every call (derivatives are taken with respect to x only); `kinks` are
    probed besides those a scan finds; `quick` keeps float32 and float64 eager, one compiled
    graph, linearity, determinism, gradcheck and the transforms without compile and export.
    Raises study.check.UsageError where the rule cannot be checked; never exits.
    """
    if device not in ("cpu", "cuda"):
        raise UsageError(f"unknown device {device!r}; choose cpu or cuda")
    dev, = resolve_devices(device)
    with _user_state_restored(), dev.as_default():
        rule, style = as_rule(fn, framework, tuple(args), name, tuple(kinks))
        findings: list[Finding] = _probe.check_callable(rule, dev)
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
                   "dtypes": list(dtypes), "placements": list(placements),
                   "compiled": compiled},
            environment=_environment(),
            kinks={"scanned": scanned if isinstance(scanned, str) else list(scanned),
                   "given": list(kinks), "probed": list(probed)},
            findings=findings, fail_on=tuple(fail_on))
        if findings:  # not elementwise: no measurement here would mean what it says
            return result
        _measure(result, rule, dev, probed, quick, dtypes, placements)
        if twin is not None:
            twin_rule, _ = as_rule(twin, twin_framework, tuple(args), twin_name, tuple(kinks))
            _compare_twin(result, rule, twin_rule, dev, probed, dtypes)
    return result


def _measure(result: CheckResult, rule, dev, kinks, quick: bool, dtypes, placements) -> None:
    fw, found = rule.framework, result.findings
    for dtype in dtypes:
        passes = (("train",) if dtype == "float32" else ()) if quick else ("train", "forward")
        result.conventions += _probe.conventions(rule, dtype, kinks, dev, placements,
                                                 COMPILED_PLACEMENTS[fw], passes)
        rows, more = _probe.linearity(rule, dtype, kinks, dev)
        result.vjp += rows
        found += more
    found += _probe.finiteness_findings(result.conventions)
    found += _probe.compiled_findings(result.conventions)
    for dtype in QUICK_DTYPES:
        row, more = _probe.determinism(rule, dtype, kinks, dev)
        result.determinism.append(row)
        found += more
    result.gradcheck, more = _probe.gradcheck(rule, kinks, dev)
    found += more
    columns = [c for c in COLUMNS if not (quick and c in COMPILING_COLUMNS)]
    result.transforms, more = _sections.transforms(rule, kinks, dev, columns, "inductor")
    found += more
    if fw == "torch":
        result.clone_hazard, more = _sections.clone_hazards(rule, dev)
        found += more
    result.matches = _sections.matches(result.conventions, fw, _sections.atlas_run())
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

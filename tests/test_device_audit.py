"""Every experiment computes on the device its run names, and fails loudly when one array escapes.

The run names the first CPU device, while torch's default device is `meta` and JAX's default
device is a second virtual CPU device (tests/conftest.py asks XLA for two): the situation of a
cpu run on a GPU host, whose JAX default is the GPU. A torch tensor made without the Device is
then a meta tensor, which raises as soon as it meets a real one or is read; a JAX array made
without it lands on the second device, and reading it on the host (where every result goes)
raises DeviceEscape. Each experiment runs a few of its quick cases, chosen to cover each code
path (framework, mode, part) at the smallest size, through the runner as a real run does.

A case or a cell that raises is recorded as a result (a jvp of a custom_vjp raises by design),
so the audit runs the same cases twice, normally and with the defaults pointing elsewhere, and
fails on any error the normal run does not have.
"""
import contextlib
import gc
from dataclasses import replace

import jax
import numpy as np
import pytest
import torch
from jax._src import array as jax_array

import experiments
from study.runs import runner
from study.compare.cells import Error
from study.report.format import cell_text
from study.measure.devices import Device, DeviceEscape
from study.errors import first_error_line
from study.compare.reproduction import name_text, record_cells
from study.measure.rules import by_key, written
from tests.conftest import looks_like_error


@contextlib.contextmanager
def strays_go_elsewhere(device: Device):
    other = [d for d in jax.devices("cpu") if d != device.jax_device][0]
    real_asarray, real_array, real_value = np.asarray, np.array, jax_array.ArrayImpl._value

    def check(a):
        if isinstance(a, jax.Array) and a.devices() != {device.jax_device}:
            raise DeviceEscape(f"a JAX array on {a.devices()} reached the host")

    def asarray(a, *args, **kwargs):
        check(a)
        return real_asarray(a, *args, **kwargs)

    def array(a, *args, **kwargs):
        check(a)
        return real_array(a, *args, **kwargs)

    def value(self):
        check(self)
        return real_value.fget(self)
    np.asarray, np.array = asarray, array
    jax_array.ArrayImpl._value = property(value)
    try:
        with torch.device("meta"), jax.default_device(other):
            yield
    finally:
        np.asarray, np.array, jax_array.ArrayImpl._value = real_asarray, real_array, real_value


def _pick(cases, **wanted):  # by the cases' fields as written: rules by their keys
    return [c for c in cases if all(written(c).get(k) in (v if isinstance(v, tuple) else (v,))
                                    for k, v in wanted.items())]


AUDIT = {  # experiment -> a few quick cases, one per code path
    "two_layer": lambda cs: _pick(cs, dataset="seed", rule=(
        "torch_relu", "torch_myrelu_seed", "torch_custom_op_c0", "jax_relu", "jax_custom_c0")),
    "zero_point": lambda cs: _pick(cs, rule=(
        "torch_relu", "torch_custom_bit_mask", "torch_custom_op_c0", "jax_relu",
        "jax_custom_bit_mask", "jax_custom_nondiff_c0")),
    "transforms": lambda cs: _pick(cs, rule=("torch_custom_op_c0", "jax_custom_c0")),
    "clone_hazard": lambda cs: _pick(cs, case=("fan-out: act(x) + act(-x)", "at exactly 0")),
    "nonscalar_backward": lambda cs: cs,
    "training": lambda cs: _pick(cs, dataset="digits", dtype="float32"),
    "bifurcation": lambda cs: [{**c, "stop_init": 1} for c in _pick(
        cs, part="inits", dtype="float32")] + _pick(cs, part=("paper", "data")),
    "timing": lambda cs: (  # each device path once (torch.compile makes no array of its own)
        _pick(cs, part="plan") + [{**c, "n": 1000} for c in _pick(cs, part="machine")][:1]
        + _pick(cs, part="rules", n=8, mode=("eager", "op-by-op", "jit"))
        + _pick(cs, part="net", net="seed", rule=("torch_custom_c0", "jax_custom_c0"),
                mode=("eager", "op-by-op", "jit"))
        + _pick(cs, part="memory", rule=("torch_custom_bool_mask", "jax_custom_bit_mask"))
        + [{**c, "n": 1000} for c in _pick(cs, part="cross_check")]
        # in this process alone: the fresh processes that take a share of their rounds run the
        # same code with the defaults untouched, where no stray could be seen (and cost seconds)
        + [{**c, "n": 1000, "processes": 1} for c in _pick(cs, part="eager_parts")]
        + [{**c, "n": 1000} for c in _pick(cs, part="page_faults")][:1]),  # one per size: one path
}


def errors_in(records: list[dict], key: tuple[str, ...] = ("rule",)) -> dict[str, str]:
    """Every error a run recorded: failed cases, and any leaf that reads as an error line,
    in whichever field it landed (the audit looks for errors nothing declared)."""
    cells = record_cells(records, key)
    return {name: cell_text(cell) for name, cell in cells.items()
            if isinstance(cell, Error)
            or isinstance(cell.value, str) and looks_like_error(cell.value)}


def run_audited(exp, device: Device, cases: list[dict]) -> list[list[dict]]:
    return [runner.run_case(exp, device, case) for case in cases]


@contextlib.contextmanager
def objects_so_far_left_out_of_collections():
    """The timing harness collects garbage before each timed block: with torch and JAX loaded,
    a full collection walks every object they made (about 0.2 s, 30 times an audit). Frozen,
    the objects made before the audit are left out of each collection, which still runs."""
    gc.freeze()
    try:
        yield
    finally:
        gc.unfreeze()


@pytest.mark.parametrize("name", experiments.NAMES)
def test_experiment_computes_only_on_its_device(name, monkeypatch):
    exp = experiments.load(name)
    rules = {}
    if name == "training":
        # every trained rule takes one path (the framework's trainer, then its accuracy), only
        # its c differs; one of each framework, c = 0, as a case needs (measure.trained)
        rules = {"rules": [by_key("torch_custom_c0"), by_key("jax_custom_c0")]}
    if name == "timing":
        # one built-in and one custom rule of each framework timed alone, c = 0 in the nets
        rules = {"rules": [by_key("torch_relu"), by_key("torch_custom_op_c0"),
                           replace(by_key("torch_custom_c0"), timed=False), by_key("jax_relu"),
                           by_key("jax_custom_bit_mask"),
                           replace(by_key("jax_custom_c0"), timed=False)]}
        fewer = {"BUDGET_S": 0.0, "MIN_ROUNDS": 1, "WARMUP_S": 0.0, "CHECK_BUDGET_S": 0.0}
        for module in ("harness", "measure"):  # wherever each is read
            for constant, value in fewer.items():
                if hasattr(getattr(experiments.timing, module), constant):
                    monkeypatch.setattr(f"experiments.timing.{module}.{constant}", value)
        monkeypatch.setattr("experiments.timing.checks.CROSS_CHECK",
                            {"rounds": 1, "timer_min_run_s": 0.01})
    device = Device("cpu")
    # the quick scope, but timing's checks (cross-check, eager parts) only in standard
    chosen = AUDIT[name](exp.cases("standard" if name == "timing" else "quick", **rules))
    assert chosen, "the audit must run something"
    with objects_so_far_left_out_of_collections():
        clean = run_audited(exp, device, chosen)
        with strays_go_elsewhere(device):
            audited = run_audited(exp, device, chosen)
    new_errors = []
    for case, normal, elsewhere in zip(chosen, clean, audited):
        assert elsewhere and all(r.get("device", "cpu") == "cpu" for r in elsewhere), case
        expected = errors_in(normal, exp.comparison.record_key)
        new_errors += [f"{name_text(name)}: {value}"
                       for name, value in errors_in(elsewhere, exp.comparison.record_key).items()
                       if expected.get(name) != value]
    assert not new_errors, f"{len(new_errors)} errors a normal run does not have, e.g. " \
                           f"{new_errors[:3]}"


def test_the_audit_counts_recorded_errors_as_failures_and_expected_ones_as_results():
    # errors as the study records them (study.errors.first_error_line, as the runner and every
    # experiment write them): if that form changed, the audit must still see them
    forward = first_error_line(TypeError("can't apply forward-mode autodiff (jvp) to a custom_vjp"))
    escape = first_error_line(DeviceEscape("a JAX array on ['cpu:1'] reached the host\nmore"))
    normal = [{"rule": "r", "forward": forward, "v": 1.0}]
    escaped = [{"rule": "r", "forward": forward, "v": escape},
               {"rule": "s", "case_error": first_error_line(RuntimeError("meta"))}]
    def names(errors):
        return {name_text(n) for n in errors}
    assert names(errors_in(normal)) == {"rule=r :: forward"}
    assert names(errors_in(escaped)) - names(errors_in(normal)) == {"rule=r :: v",
                                                                    "rule=s :: case_error"}


def test_the_audit_catches_a_stray_torch_tensor_and_a_stray_jax_array():
    device = Device("cpu")
    with strays_go_elsewhere(device):
        with pytest.raises((RuntimeError, NotImplementedError)):
            device.to_numpy(torch.ones(3) + device.to_torch(np.ones(3, np.float32)))
        import jax.numpy as jnp
        stray = jnp.asarray(np.ones(3)) * 2  # computed on the other device
        with pytest.raises(DeviceEscape):
            device.to_numpy(stray)
        with pytest.raises(DeviceEscape):
            float(jnp.sum(stray))
        # what the study's Device places stays on the run's device, in both frameworks
        assert float(device.to_numpy(jnp.sum(device.to_jax(np.ones(3))))) == 3.0
        assert device.to_numpy(device.to_torch(np.ones(3, np.float32)) * 2).tolist() == [2.0] * 3

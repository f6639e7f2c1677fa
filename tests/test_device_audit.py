"""Every experiment computes on the device its run names, and fails loudly when one array escapes.

The run names the first CPU device, while torch's default device is `meta` and JAX's default
device is a second virtual CPU device (tests/conftest.py asks XLA for two). A torch tensor made
without the Device is then a meta tensor, which raises as soon as it meets a real one or is
read; a JAX array made without it lands on the second device, and reading it on the host (where
every result goes) raises DeviceEscape. Each experiment runs a few of its quick cases, chosen to
cover each code path (framework, mode, part) at the smallest size.
"""
import contextlib

import jax
import numpy as np
import pytest
import torch
from jax._src import array as jax_array

import experiments
from study.devices import Device, DeviceEscape


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


def _pick(cases, **wanted):
    return [c for c in cases if all(c.get(k) in (v if isinstance(v, tuple) else (v,))
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
        cs, part="inits", dtype="float32")] + _pick(cs, part="paper"),
    "timing": lambda cs: (
        [{**c, "n": 1000} for c in _pick(cs, part="machine")]
        + _pick(cs, part="rule", n=8, rule=("torch_custom_op_c0", "jax_custom_bit_mask"))
        + _pick(cs, part="net", net="seed", rule=("torch_custom_c0", "jax_custom_c0"))
        + _pick(cs, part="memory", rule=("torch_custom_bool_mask", "jax_custom_bit_mask"))
        + [{**c, "n": 1000} for c in _pick(cs, part=("cross_check", "compile_probe"))][:2]),
}


def test_every_experiment_has_an_audit():
    assert set(AUDIT) == set(experiments.NAMES)


@pytest.mark.parametrize("name", experiments.NAMES)
def test_experiment_computes_only_on_its_device(name, monkeypatch):
    exp = experiments.load(name)
    if name == "timing":
        monkeypatch.setattr(exp, "BUDGET_S", 0.0)
    device = Device("cpu")
    chosen = AUDIT[name](exp.cases("quick"))
    assert chosen, "the audit must run something"
    with strays_go_elsewhere(device):
        for case in chosen:
            records = exp.run_case(device, **case)
            assert records and all(r.get("device", "cpu") == "cpu" for r in records), case


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
        assert float(device.to_numpy(jnp.sum(device.to_jax(np.ones(3))))) == 3.0

"""A registry rule's own float64 forward, as the numpy function `kink_shape` reads."""
from typing import TYPE_CHECKING

import numpy as np

from study.conformance._limits import Forward

if TYPE_CHECKING:  # importing the registry starts torch and JAX; the verdicts need neither
    from study.measure.rules import Rule


def float64_forward(rule: "Rule") -> Forward:
    """The rule's value on float64 arrays on the CPU, by the study's one probe
    (study.measure.probe.evaluate, mode "value": no autodiff). JAX computes in float64 only
    with x64 on (study.measure.frameworks.use_shared_settings); otherwise `kink_shape` raises."""
    from study.measure.devices import Device
    from study.measure.probe import evaluate

    def forward(x: np.ndarray) -> np.ndarray:
        return evaluate(rule, x, "float64", Device("cpu"), "value")
    return forward



def several_inputs_forward(rule: "Rule", device=None) -> Forward:
    """A built-in of several inputs' value at each row of a float64 array (a row: its inputs,
    flat, as study.measure.probe.operand_arrays splits them), as a row of its outputs, flat:
    the op called eagerly once a row in float64, with no autodiff, on the CPU unless `device`
    is given. JAX computes in float64 only with x64 on; otherwise it raises."""
    from study.measure.devices import Device
    from study.measure.probe import operand_arrays
    device = device or Device("cpu")

    def value(row: np.ndarray) -> np.ndarray:
        arrays = operand_arrays(rule, row)
        if rule.framework == "torch":
            import torch
            with torch.no_grad():
                got = rule.fn(*(device.to_torch(a, dtype=torch.float64) for a in arrays))
        else:
            got = rule.fn(*(device.to_jax(a) for a in arrays))
            if str(got.dtype) != "float64":
                raise TypeError(f"JAX computes {rule.name} in {got.dtype}: jax_enable_x64 is off")
        return device.to_host(got).reshape(-1)

    def forward(rows: np.ndarray) -> np.ndarray:
        return np.stack([value(row) for row in np.atleast_2d(rows)])
    return forward

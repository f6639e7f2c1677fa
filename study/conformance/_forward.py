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

"""A registry rule's own float64 forward, as the numpy function `kink_shape` reads."""
from typing import TYPE_CHECKING

import numpy as np

from study.conformance._limits import Forward

if TYPE_CHECKING:  # importing the registry starts torch and JAX; the verdicts need neither
    from study.measure.rules import Rule


def float64_forward(rule: "Rule") -> Forward:
    """The rule's forward on float64 arrays, without autodiff. JAX computes in float64 only
    with x64 on (study.measure.frameworks.use_shared_settings); otherwise `kink_shape` raises."""
    if rule.framework == "torch":
        import torch

        def forward(x: np.ndarray) -> np.ndarray:
            with torch.no_grad():
                return rule.fn(torch.from_numpy(x)).numpy()
        return forward
    import jax.numpy as jnp

    def forward(x: np.ndarray) -> np.ndarray:
        return np.asarray(rule.fn(jnp.asarray(x)))
    return forward

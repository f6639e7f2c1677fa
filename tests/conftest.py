"""Strict numerics, switched on once for every test; two virtual CPU devices for the audit."""
import os

# Before JAX starts: a second CPU device for tests/test_device_audit.py to send strays to.
os.environ["XLA_FLAGS"] = (os.environ.get("XLA_FLAGS", "")
                           + " --xla_force_host_platform_device_count=2").strip()

import jax  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402

import study  # noqa: E402,F401  applies the shared framework settings (x64, matmul precision)
from study.devices import Device  # noqa: E402

jax.config.update("jax_numpy_dtype_promotion", "strict")
jax.config.update("jax_numpy_rank_promotion", "raise")


@pytest.fixture
def cpu() -> Device:
    return Device("cpu")


def assert_close(actual, expected, dtype: str) -> None:
    """One tolerance table for the whole suite: a few ulps of the dtype."""
    tol = {"float16": 1e-3, "bfloat16": 1e-2, "float32": 1e-6, "float64": 1e-12}[dtype]
    np.testing.assert_allclose(np.asarray(actual, np.float64), np.asarray(expected, np.float64),
                               rtol=tol, atol=tol)

"""Strict numerics, switched on once for every test."""
import jax
import numpy as np
import pytest

import study  # noqa: F401  applies the shared framework settings (x64, matmul precision)
from study.devices import Device

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

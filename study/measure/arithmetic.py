"""Does the device flush subnormal numbers to zero? A probe of the arithmetic under the atlas.

    >>> subnormal_arithmetic("jax", "float32", Device("cpu"), jit=False)
    {"subnormal_is_positive": ..., "subnormal_times_one": ..., "half_min_normal": ...}

Three operations on the dtype's smallest subnormal s and smallest normal m, computed by the
framework on the device: s > 0 (false where inputs are flushed: denormals-are-zero), s × 1
(0 where inputs or results are flushed) and m × 0.5, a subnormal result of normal inputs (0
where results are flushed: flush-to-zero). An op that sees a flushed input computes its value
and gradient at 0, so these explain why an atlas cell at ±min_subnormal can equal the cell at 0.
"""
import numpy as np

from study.measure.inputs import finfo, numpy_dtype, torch_dtype
from study.measure.devices import Device


def _inputs(dtype: str) -> np.ndarray:
    fi = finfo(dtype)
    return np.array([fi.smallest_subnormal, fi.smallest_normal]).astype(numpy_dtype(dtype))


def subnormal_arithmetic(framework: str, dtype: str, device: Device, jit: bool = False) -> dict:
    a = _inputs(dtype)
    if framework == "torch":
        x = device.to_torch(a.astype(np.float64), dtype=torch_dtype(dtype))
        out = (x[0] > 0, x[0] * 1, x[1] * 0.5)
    else:
        import jax
        import jax.numpy as jnp

        def probe(v):
            return v[0] > 0, v[0] * jnp.asarray(1, v.dtype), v[1] * jnp.asarray(0.5, v.dtype)
        out = (jax.jit(probe) if jit else probe)(device.to_jax(a))
    positive, times_one, half = (device.to_numpy(v) for v in out)
    return {"subnormal_is_positive": bool(positive),
            "subnormal_times_one": float(np.asarray(times_one, np.float64)),
            "half_min_normal": float(np.asarray(half, np.float64)),
            "smallest_subnormal": float(a[0].astype(np.float64)),
            "smallest_normal": float(a[1].astype(np.float64))}

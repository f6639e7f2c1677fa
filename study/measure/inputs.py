"""The inputs a rule is probed at, exact in each dtype.

    >>> probe_inputs("float32", (0.0, 6.0))[:3]
    [('6-ulp', 5.999999523162842), ('6', 6.0), ('6+ulp', 6.000000476837158)]

Kinks exactly and 1 ulp either side, signed zeros, the smallest subnormals and normal, NaN and
the infinities (`probe_inputs`): where rules differ. Ordinary points (`ordinary_inputs`): where
every rule of x should already behave, so that a fault there is no edge case.
"""
import ml_dtypes
import numpy as np

DTYPES = ("float16", "bfloat16", "float32", "float64")
ORDINARY_POINTS = (-3.0, -1.0, -0.5, 0.5, 1.0, 3.0)
ORDINARY_DRAWS = 4  # seeded standard normal draws beside ORDINARY_POINTS
ORDINARY_SEED = 0


def torch_dtype(name: str):
    import torch
    return getattr(torch, name)


def numpy_dtype(dtype: str):
    return ml_dtypes.bfloat16 if dtype == "bfloat16" else np.dtype(dtype)


def finfo(dtype: str):
    return ml_dtypes.finfo(ml_dtypes.bfloat16) if dtype == "bfloat16" else np.finfo(dtype)


def probe_inputs(dtype: str, kinks) -> list[tuple[str, float]]:
    """(label, value) pairs: each kink exactly and 1 ulp either side, signed zeros, the
    smallest subnormals and normal, NaN and the infinities, all exact in `dtype`."""
    nd = numpy_dtype(dtype)
    fi = finfo(dtype)
    out = []
    for k in sorted(kinks):
        if k == 0:
            continue  # 0 and its ulps are the signed zeros and smallest subnormals below
        kd = np.asarray(k, nd)
        out += [(f"{k:g}-ulp", float(np.nextafter(kd, np.asarray(-np.inf, nd)))),
                (f"{k:g}", float(kd)),
                (f"{k:g}+ulp", float(np.nextafter(kd, np.asarray(np.inf, nd))))]
    tiny = float(fi.smallest_subnormal)
    out += [("-min_subnormal", -tiny), ("-0.0", -0.0), ("+0.0", 0.0), ("+min_subnormal", tiny),
            ("min_normal", float(fi.smallest_normal)), ("+nan", float("nan")),
            ("+inf", float("inf")), ("-inf", float("-inf"))]
    return out


def ordinary_inputs(dtype: str) -> list[tuple[str, float]]:
    """(label, value): ±0.5, ±1, ±3 and ORDINARY_DRAWS seeded standard normal draws ("normal
    draw 1", ...), each rounded to `dtype`."""
    draws = np.random.default_rng(ORDINARY_SEED).standard_normal(ORDINARY_DRAWS)
    points = [(f"{p:g}", p) for p in ORDINARY_POINTS]
    points += [(f"normal draw {i + 1}", d) for i, d in enumerate(draws)]
    nd = numpy_dtype(dtype)
    return [(label, float(np.asarray(v).astype(nd))) for label, v in points]

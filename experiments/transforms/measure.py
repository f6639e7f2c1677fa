"""Measuring which transformations each custom-rule style survives, against a numpy oracle."""

import numpy as np

from study import transformations
from study.conventions import reverse_derivative
from study.rules import by_key
from study.transformations import COLUMNS

ROWS = (  # (style, registry rule key)
    ("torch legacy: forward(ctx, ...) (seed 000)", "torch_myrelu_seed"),
    ("torch modern: setup_context", "torch_custom_c0"),
    ("torch modern + generate_vmap_rule", "torch_custom_c0_vmap"),
    ("torch modern + jvp staticmethod", "torch_custom_c0_jvp"),
    ("torch modern + generate_vmap_rule + jvp", "torch_custom_c0_vmap_jvp"),
    ("torch modern + @once_differentiable", "torch_custom_c0_once"),
    ("torch.library.custom_op + register_autograd", "torch_custom_op_c0"),
    ("torch.library.custom_op + register_autograd + register_vmap", "torch_custom_op_vmap_c0"),
    ("torch reference: torch.relu", "torch_relu"),
    ("jax custom_vjp", "jax_custom_c0"),
    ("jax custom_vjp, c via nondiff_argnums", "jax_custom_nondiff_c0"),
    ("jax custom_jvp", "jax_custom_jvp_c0"),
    ("jax reference: jax.nn.relu", "jax_relu"),
)
X, W, V, XB = transformations.X, transformations.W, transformations.V, transformations.XB


def expected(c: float) -> dict:
    slope = lambda a: np.where(a > 0, 1.0, np.where(a == 0, c, 0.0))  # noqa: E731
    return transformations.expected_from(lambda a: np.maximum(a, 0), slope, np.zeros_like)


def transform_cells(framework: str, fn, c: float, compile_backend: str, device) -> dict:
    """{column: {"status": "ok"|"wrong"|"error"|"n/a", "detail": ...}} for one rule."""
    return transformations.transformation_cells(framework, fn, expected(c), compile_backend,
                                                device)


def cases(scope: str) -> list[dict]:
    backend = "aot_eager" if scope == "quick" else "inductor"
    return [{"style": style, "rule": rule, "compile_backend": backend} for style, rule in ROWS]


def run_case(device, style: str, rule: str, compile_backend: str) -> list[dict]:
    r = by_key(rule)
    c = r.convention if r.convention is not None else reverse_derivative(r, 0.0, "float64", device)
    return [{"style": style, "rule": r.key, "name": r.name, "framework": r.framework,
             "kind": r.kind, "convention": c, "compile_backend": compile_backend,
             "device": device.name,
             "columns": list(COLUMNS),
             "cells": transform_cells(r.framework, r.fn, c, compile_backend, device)}]

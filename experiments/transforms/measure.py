"""Measuring which transformations each custom-rule style survives, against a numpy oracle."""

import numpy as np

from study.workloads import transformations
from study.measure.probe import reverse_derivative
from study.measure.rules import registry_unless
from study.workloads.transformations import COLUMNS

X, W, V, XB = transformations.X, transformations.W, transformations.V, transformations.XB


def expected(c: float) -> dict:
    slope = lambda a: np.where(a > 0, 1.0, np.where(a == 0, c, 0.0))  # noqa: E731
    return transformations.expected_from(lambda a: np.maximum(a, 0), slope, np.zeros_like)


def transform_cells(framework: str, fn, c: float, compile_backend: str, device) -> dict:
    """{column: {"status": "ok"|"wrong"|"error"|"n/a", "detail": ...}} for one rule."""
    return transformations.transformation_cells(framework, fn, expected(c), compile_backend,
                                                device)


def cases(scope: str, rules=None) -> list[dict]:
    """One row per rule with a transforms_style, each framework's built-in last."""
    rules = registry_unless(rules)
    backend = "aot_eager" if scope == "quick" else "inductor"
    frameworks = list(dict.fromkeys(r.framework for r in rules))
    rows = sorted((r for r in rules if r.transforms_style),
                  key=lambda r: (frameworks.index(r.framework), r.kind == "builtin"))
    return [{"style": r.transforms_style, "rule": r, "compile_backend": backend} for r in rows]


def run_case(device, style: str, rule, compile_backend: str) -> list[dict]:
    """The rule's row of the table rules, then a row per transformation of transform_cells."""
    r = rule
    c = r.convention if r.convention is not None else reverse_derivative(r, 0.0, "float64", device)
    cells = transform_cells(r.framework, r.fn, c, compile_backend, device)
    return [{"part": "rules", "style": style, "rule": r.key, "name": r.name,
             "framework": r.framework, "kind": r.kind, "convention": c,
             "compile_backend": compile_backend, "device": device.name,
             "columns": list(COLUMNS)}] + [cell_row(r.key, column, cell)
                                           for column, cell in cells.items()]


def cell_row(rule: str, transformation: str, cell: dict) -> dict:
    """One transformation of one rule: its status (ok, wrong, n/a, error), what it gave (the
    array's values, flattened, and its shape), its error line, or why it does not apply."""
    status, detail = cell["status"], cell["detail"]
    got = np.asarray(detail, np.float64) if status in ("ok", "wrong") else None
    return {"part": "transform_cells", "rule": rule, "transformation": transformation,
            "status": status, "value": None if got is None else got.ravel().tolist(),
            "shape": None if got is None else list(got.shape),
            "error": detail if status == "error" else None,
            "not_applicable": detail if status == "n/a" else None}

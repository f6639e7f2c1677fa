"""Which transformations each custom-rule style survives, in torch and JAX.

    python -m study run transforms

Every cell runs the transformation and compares with a float64 numpy oracle for the rule's
convention (inputs include an exact 0): ✓ only when the value matches.
"""
import numpy as np
import torch
import torch.autograd.forward_ad as fwAD

import jax
import jax.numpy as jnp
from study.conventions import reverse_derivative
from study.errors import first_error_line
from study.rules import by_name
from study.tables import Table

NAME = "transforms"
DESCRIPTION = "which transformations (compile, vmap, higher order, forward mode) each rule survives"
SEED = None
TABLES = ("matrix",)
ROWS = (  # (style, registry rule)
    ("torch legacy: forward(ctx, ...) (seed 000)", "MyReLU (seed 000)"),
    ("torch modern: setup_context", "ReLUWithConvention(c=0)"),
    ("torch modern + generate_vmap_rule", "ReLUWithConvention(c=0) + generate_vmap_rule = True"),
    ("torch modern + jvp staticmethod", "ReLUWithConvention(c=0) + a jvp staticmethod"),
    ("torch modern + generate_vmap_rule + jvp",
     "ReLUWithConvention(c=0) + generate_vmap_rule and a jvp staticmethod"),
    ("torch modern + @once_differentiable", "ReLUWithConvention(c=0) + @once_differentiable backward"),
    ("torch reference: torch.relu", "torch.relu"),
    ("jax custom_vjp", "relu_with_convention(c=0) (custom_vjp)"),
    ("jax custom_jvp", "relu (custom_jvp, c=0)"),
    ("jax reference: jax.nn.relu", "jax.nn.relu"),
)
COLUMNS = ("eager grad", "compiled grad", "vmap forward", "per-sample grad (vmap of grad)",
           "grad of grad", "HVP (forward over reverse)", "jvp", "jacfwd", "forward_ad (dual)",
           "jacrev")
X = np.array([-1.5, 0.0, 0.7, 2.0])
W = np.array([0.5, -1.0, 2.0, 1.5])
V = np.array([1.0, 2.0, -1.0, 0.5])
XB = np.array([[-1.5, 0.0, 0.7, 2.0], [0.0, 3.0, -2.0, 0.0], [1.0, -1.0, 0.0, 0.25]])


def expected(c: float) -> dict:
    slope = lambda a: np.where(a > 0, 1.0, np.where(a == 0, c, 0.0))  # noqa: E731
    return {"eager grad": slope(X) * W, "compiled grad": slope(X) * W,
            "vmap forward": np.maximum(XB, 0), "per-sample grad (vmap of grad)": slope(XB) * W,
            "grad of grad": np.zeros_like(X), "HVP (forward over reverse)": np.zeros_like(X),
            "jvp": slope(X) * V, "jacfwd": np.diag(slope(X)), "forward_ad (dual)": slope(X) * V,
            "jacrev": np.diag(slope(X))}


def torch_transforms(fn, compile_backend: str) -> dict:
    t = lambda a, grad=False: torch.tensor(a, dtype=torch.float64, requires_grad=grad)  # noqa
    w, v = t(W), t(V)
    f = lambda x: (fn(x) * w).sum()  # noqa: E731

    def eager():
        x = t(X, True)
        f(x).backward()
        return x.grad

    def compiled():
        torch._dynamo.reset()
        x = t(X, True)
        torch.compile(lambda a: (fn(a) * w).sum(), fullgraph=True, backend=compile_backend)(x) \
            .backward()
        return x.grad

    def grad_of_grad():
        x = t(X, True)
        g, = torch.autograd.grad(f(x), x, create_graph=True)
        return torch.autograd.grad(g.sum(), x)[0] if g.requires_grad else torch.zeros_like(g)

    def forward_ad():
        with fwAD.dual_level():
            return fwAD.unpack_dual(fn(fwAD.make_dual(t(X), v))).tangent

    return {"eager grad": eager, "compiled grad": compiled,
            "vmap forward": lambda: torch.func.vmap(fn)(t(XB)),
            "per-sample grad (vmap of grad)": lambda: torch.func.vmap(torch.func.grad(f))(t(XB)),
            "grad of grad": grad_of_grad,
            "HVP (forward over reverse)": lambda: torch.func.jvp(torch.func.grad(f), (t(X),),
                                                                 (v,))[1],
            "jvp": lambda: torch.func.jvp(fn, (t(X),), (v,))[1],
            "jacfwd": lambda: torch.func.jacfwd(fn)(t(X)),
            "forward_ad (dual)": forward_ad,
            "jacrev": lambda: torch.func.jacrev(fn)(t(X))}


def jax_transforms(fn) -> dict:
    x, xb, w, v = (jnp.asarray(a) for a in (X, XB, W, V))
    f = lambda a: jnp.sum(fn(a) * w)  # noqa: E731
    return {"eager grad": lambda: jax.grad(f)(x),
            "compiled grad": lambda: jax.jit(jax.grad(f))(x),
            "vmap forward": lambda: jax.vmap(fn)(xb),
            "per-sample grad (vmap of grad)": lambda: jax.vmap(jax.grad(f))(xb),
            "grad of grad": lambda: jax.grad(lambda a: jnp.sum(jax.grad(f)(a)))(x),
            "HVP (forward over reverse)": lambda: jax.jvp(jax.grad(f), (x,), (v,))[1],
            "jvp": lambda: jax.jvp(fn, (x,), (v,))[1],
            "jacfwd": lambda: jax.jacfwd(fn)(x),
            "forward_ad (dual)": None,  # JAX has no dual-number API; jvp is its forward mode
            "jacrev": lambda: jax.jacrev(fn)(x)}


def transform_cells(framework: str, fn, c: float, compile_backend: str) -> dict:
    """{column: {"status": "ok"|"wrong"|"error"|"n/a", "detail": str}} for one rule."""
    thunks = torch_transforms(fn, compile_backend) if framework == "torch" else jax_transforms(fn)
    want = expected(c)
    cells = {}
    for col in COLUMNS:
        if thunks[col] is None:
            cells[col] = {"status": "n/a", "detail": "no such API"}
            continue
        try:
            got = thunks[col]()
            got = got.detach().numpy() if isinstance(got, torch.Tensor) else np.asarray(got)
            ok = got.shape == want[col].shape and np.allclose(got, want[col], rtol=0, atol=1e-12)
            cells[col] = {"status": "ok" if ok else "wrong", "detail": np.asarray(got).tolist()}
        except Exception as exc:  # noqa: BLE001  a transformation that raises is the result
            cells[col] = {"status": "error", "detail": first_error_line(exc)}
    return cells


def cases(quick: bool) -> list[dict]:
    backend = "aot_eager" if quick else "inductor"
    return [{"style": style, "rule": rule, "compile_backend": backend} for style, rule in ROWS]


def run_case(device, style: str, rule: str, compile_backend: str) -> list[dict]:
    r = by_name(rule)
    c = r.convention if r.convention is not None else reverse_derivative(r, 0.0, "float64")
    return [{"style": style, "rule": rule, "framework": r.framework, "convention": c,
             "compile_backend": compile_backend, "device": device.name,
             "cells": transform_cells(r.framework, r.fn, c, compile_backend)}]


def cell_text(cell: dict) -> str:
    if cell["status"] != "error":
        return {"ok": "✓", "n/a": "—", "wrong": "✗ wrong value"}[cell["status"]]
    return "✗ " + cell["detail"][:70] + ("…" if len(cell["detail"]) > 70 else "")


def how_to_fix(rec: dict, records: list[dict]) -> str:
    """For each failing column, the first custom style of the same framework that passes it."""
    fixes = []
    for col in COLUMNS:
        if rec["cells"][col]["status"] in ("error", "wrong"):
            good = [o["style"] for o in records if o["framework"] == rec["framework"]
                    and "reference" not in o["style"] and o["cells"][col]["status"] == "ok"]
            fixes.append(f"{col}: {good[0]}" if good else f"{col}: no custom style here passes")
    return "; ".join(fixes) or "—"


def tables(runs) -> list[Table]:
    rows = []
    for run in runs:
        recs = [r for r in run.records if "case_error" not in r]
        pre = [run.label] if len(runs) > 1 else []
        for rec in recs:
            rows.append(pre + [rec["style"]] + [cell_text(rec["cells"][c]) for c in COLUMNS]
                        + [how_to_fix(rec, recs)])
        rows += [pre + [r["style"], f"failed: {r['case_error']}"] + [""] * len(COLUMNS)
                 for r in run.records if "case_error" in r]
    backends = sorted({r["compile_backend"] for run in runs for r in run.records
                       if "compile_backend" in r})
    return [Table(
        "matrix", "Transformations each custom-rule style survives",
        "Rows are rule styles (all c = 0, except the seed rule's c = 1); every cell runs the "
        "transformation on float64 inputs that include an exact 0 and compares with a numpy "
        "oracle for the rule's convention. ✓: value matches; ✗: wrong value, or the first line "
        f"of the error. torch 'compiled grad' is torch.compile(fullgraph=True, backend="
        f"{'/'.join(backends)}); JAX's is jax.jit(jax.grad). 'grad of grad' uses "
        "torch.autograd.grad(create_graph=True) twice and jax.grad twice; HVP is torch.func.jvp / "
        "jax.jvp of the gradient. The last column names, for each ✗, a style of ours that passes "
        "that column in the same matrix.",
        (["run"] if len(runs) > 1 else []) + ["style"] + list(COLUMNS) + ["how to make it work"],
        rows)]


def findings(runs) -> list[tuple[str, str]]:
    recs = [r for r in runs[0].records if "cells" in r] if runs else []
    custom = [r for r in recs if "reference" not in r["style"]]
    if not custom:
        return []
    failing = {r["style"]: [c for c in COLUMNS if r["cells"][c]["status"] in ("error", "wrong")]
               for r in custom}
    clean = [s for s, cols in failing.items() if not cols]
    fewest = min((s for s in failing if failing[s]), key=lambda s: len(failing[s]), default=None)
    text = (f"{len(clean)} of {len(custom)} custom-rule styles survive every transformation "
            f"measured ({', '.join(clean) or 'none'})")
    if fewest:
        text += f"; the closest other is {fewest}, which fails only {', '.join(failing[fewest])}"
    return [(text + ".", "matrix")]

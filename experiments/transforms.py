"""Which transformations each custom-rule style survives, in torch and JAX.

    python -m study run transforms            # torch.compile with inductor
    python -m study run transforms --quick    # torch.compile with aot_eager (no code generation)

Every cell runs the transformation on the run's device and compares with a float64 numpy
oracle for the rule's convention (inputs include an exact 0): ✓ only when the value matches.
"""
from dataclasses import dataclass

import jax
import jax.numpy as jnp
import numpy as np
import torch
import torch.autograd.forward_ad as fwAD

from study.conventions import reverse_derivative
from study.errors import first_error_line
from study.experiment import Answer, Comparison, Experiment, Finding, Rendered
from study.results import Run
from study.rules import by_key
from study.runsets import identity, run_table, stated_for_runs
from study.tables import Table, column, listed, shorten

DESCRIPTION = "which transformations (compile, export, vmap, higher order, forward mode) each rule survives"
QUESTION = ("Which transformations (compile, export, vmap, per-sample gradients, higher order, "
            "forward mode) does each way of writing a custom ReLU rule survive, in torch and JAX?")
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
COLUMNS = ("eager grad", "compiled forward", "compiled grad", "grad of compiled",
           "compiled func.grad", "export",
           "vmap forward", "per-sample grad", "grad of grad", "HVP", "jvp", "jacfwd",
           "forward_ad", "jacrev")
X = np.array([-1.5, 0.0, 0.7, 2.0])
W = np.array([0.5, -1.0, 2.0, 1.5])
V = np.array([1.0, 2.0, -1.0, 0.5])
XB = np.array([[-1.5, 0.0, 0.7, 2.0], [0.0, 3.0, -2.0, 0.0], [1.0, -1.0, 0.0, 0.25]])


def expected(c: float) -> dict:
    slope = lambda a: np.where(a > 0, 1.0, np.where(a == 0, c, 0.0))  # noqa: E731
    grad = slope(X) * W
    return {"eager grad": grad, "compiled forward": np.maximum(X, 0), "compiled grad": grad,
            "grad of compiled": grad, "compiled func.grad": grad, "export": np.concatenate([np.maximum(X, 0), grad]),
            "vmap forward": np.maximum(XB, 0), "per-sample grad": slope(XB) * W,
            "grad of grad": np.zeros_like(X), "HVP": np.zeros_like(X), "jvp": slope(X) * V,
            "jacfwd": np.diag(slope(X)), "forward_ad": slope(X) * V, "jacrev": np.diag(slope(X))}


class _Module(torch.nn.Module):
    def __init__(self, fn):
        super().__init__()
        self.fn = fn

    def forward(self, x):
        return self.fn(x)


def torch_transforms(fn, compile_backend: str, device) -> dict:
    def t(a, grad=False):
        return device.torch_tensor(a, dtype=torch.float64, requires_grad=grad)
    w, v = t(W), t(V)
    f = lambda x: (fn(x) * w).sum()  # noqa: E731

    def eager():
        x = t(X, True)
        f(x).backward()
        return x.grad

    def compiled(what):
        torch._dynamo.reset()
        if what == "forward":
            with torch.no_grad():
                return torch.compile(fn, fullgraph=True, backend=compile_backend)(t(X))
        x = t(X, True)
        compiled_f = torch.compile(lambda a: (fn(a) * w).sum(), fullgraph=True,
                                   backend=compile_backend)
        if what == "grad":
            compiled_f(x).backward()
            return x.grad
        if what == "compiled func.grad":
            return torch.compile(torch.func.grad(f), fullgraph=True, backend=compile_backend)(t(X))
        return torch.func.grad(compiled_f)(t(X))

    def exported():
        torch._dynamo.reset()
        program = torch.export.export(_Module(fn), (t(X),))
        x = t(X, True)
        y = program.module()(x)
        (y * w).sum().backward()
        return torch.cat([y.detach(), x.grad])

    def grad_of_grad():
        x = t(X, True)
        g, = torch.autograd.grad(f(x), x, create_graph=True)
        if not g.requires_grad:
            raise RuntimeError("the first gradient has no graph: autograd cannot differentiate "
                               "it again (@once_differentiable)")
        return torch.autograd.grad(g.sum(), x)[0]

    def forward_ad():
        with fwAD.dual_level():
            return fwAD.unpack_dual(fn(fwAD.make_dual(t(X), v))).tangent

    return {"eager grad": eager, "compiled forward": lambda: compiled("forward"),
            "compiled grad": lambda: compiled("grad"),
            "grad of compiled": lambda: compiled("func.grad"),
            "compiled func.grad": lambda: compiled("compiled func.grad"), "export": exported,
            "vmap forward": lambda: torch.func.vmap(fn)(t(XB)),
            "per-sample grad": lambda: torch.func.vmap(torch.func.grad(f))(t(XB)),
            "grad of grad": grad_of_grad,
            "HVP": lambda: torch.func.jvp(torch.func.grad(f), (t(X),), (v,))[1],
            "jvp": lambda: torch.func.jvp(fn, (t(X),), (v,))[1],
            "jacfwd": lambda: torch.func.jacfwd(fn)(t(X)), "forward_ad": forward_ad,
            "jacrev": lambda: torch.func.jacrev(fn)(t(X))}


def jax_transforms(fn, device) -> dict:
    x, xb, w, v = (device.to_jax(a) for a in (X, XB, W, V))
    f = lambda a: jnp.sum(fn(a) * w)  # noqa: E731

    def exported():
        from jax import export
        program = export.export(jax.jit(fn))(jax.ShapeDtypeStruct(x.shape, x.dtype))
        restored = export.deserialize(program.serialize(vjp_order=1))
        grad = jax.grad(lambda a: jnp.sum(restored.call(a) * w))(x)
        return jnp.concatenate([restored.call(x), grad])

    return {"eager grad": lambda: jax.grad(f)(x),
            "compiled forward": lambda: jax.jit(fn)(x),
            "compiled grad": lambda: jax.jit(jax.grad(f))(x),
            "grad of compiled": lambda: jax.grad(jax.jit(f))(x),
            "compiled func.grad": lambda: jax.jit(jax.grad(f))(x),
            "export": exported,
            "vmap forward": lambda: jax.vmap(fn)(xb),
            "per-sample grad": lambda: jax.vmap(jax.grad(f))(xb),
            "grad of grad": lambda: jax.grad(lambda a: jnp.sum(jax.grad(f)(a)))(x),
            "HVP": lambda: jax.jvp(jax.grad(f), (x,), (v,))[1],
            "jvp": lambda: jax.jvp(fn, (x,), (v,))[1],
            "jacfwd": lambda: jax.jacfwd(fn)(x),
            "forward_ad": None,  # JAX has no dual-number API; jvp is its forward mode
            "jacrev": lambda: jax.jacrev(fn)(x)}


def transform_cells(framework: str, fn, c: float, compile_backend: str, device) -> dict:
    """{column: {"status": "ok"|"wrong"|"error"|"n/a", "detail": ...}} for one rule."""
    thunks = (torch_transforms(fn, compile_backend, device) if framework == "torch"
              else jax_transforms(fn, device))
    want = expected(c)
    cells = {}
    for col in COLUMNS:
        if thunks[col] is None:
            cells[col] = {"status": "n/a", "detail": "no such API"}
            continue
        try:
            got = device.to_numpy(thunks[col]()).astype(np.float64)
            ok = got.shape == want[col].shape and np.allclose(got, want[col], rtol=0, atol=1e-12)
            cells[col] = {"status": "ok" if ok else "wrong", "detail": got.tolist()}
        except Exception as exc:  # noqa: BLE001  a transformation that raises is the result
            cells[col] = {"status": "error", "detail": first_error_line(exc)}
    return cells


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


# --- summary and rendering: pure functions of loaded runs -----------------------------------

@dataclass(frozen=True)
class Step:
    """One transformation of one style: ok, wrong (a silently wrong value), error or n/a (no
    such API), and its detail (the value got, or the error's line)."""
    status: str
    detail: object

    @property
    def failed(self) -> bool:
        return self.status in ("error", "wrong")


@dataclass
class StyleCells:
    number: int  # the row number within its run
    style: str
    rule: str
    framework: str
    builtin: bool  # a framework's own relu: the reference row, never a fix to recommend
    convention: float
    cells: dict[str, Step]  # column -> its step

    def failing(self) -> list[str]:
        return [c for c, cell in self.cells.items() if cell.failed]

    def wrong(self) -> list[str]:
        return [c for c, cell in self.cells.items() if cell.status == "wrong"]

    def offered(self) -> list[str]:
        """The transformations the framework has an API for ('—' cells are not)."""
        return [c for c, cell in self.cells.items() if cell.status != "n/a"]


@dataclass
class RunStyles:
    run: Run  # identity only
    styles: list[StyleCells]


@dataclass
class Summary:
    columns: list[str]
    backends: list[str]
    error_codes: dict[str, str]  # error text -> E1, E2, ... in order of first appearance
    runs: list[RunStyles]


def summarise(runs) -> Summary:
    recs = [r for run in runs for r in run.ok_records()]
    codes: dict[str, str] = {}
    for rec in recs:
        for col in rec["columns"]:
            cell = rec["cells"][col]
            if cell["status"] == "error" and cell["detail"] not in codes:
                codes[cell["detail"]] = f"E{len(codes) + 1}"
    return Summary(
        next((r["columns"] for r in recs), []), sorted({r["compile_backend"] for r in recs}),
        codes, [RunStyles(identity(run), [
            StyleCells(i, r["style"], r["rule"], r["framework"], r["kind"] == "builtin", r["convention"],
                       {c: Step(r["cells"][c]["status"], r["cells"][c]["detail"])
                        for c in r["columns"]})
            for i, r in enumerate(run.ok_records(), 1)]) for run in runs])


def how_to_fix(style: StyleCells, styles: list[StyleCells]) -> str:
    """For each failing column, the row (#) of the first custom style of the same framework
    and convention that passes it."""
    fixes = []
    for col in style.failing():
        good = [o.number for o in styles if o.framework == style.framework and not o.builtin
                and o.convention == style.convention and o.cells[col].status == "ok"]
        fixes.append(f"{col}: #{good[0]}" if good else f"{col}: none")
    return "; ".join(fixes) or "—"


def _code(cell: Step, codes: dict[str, str]) -> str:
    symbols = {"ok": "✓", "n/a": "—", "wrong": "✗w"}
    return f"✗{codes[cell.detail]}" if cell.status == "error" else symbols[cell.status]


@dataclass(frozen=True)
class Survival:
    """One framework's custom-rule styles against the transformations it offers."""
    framework: str
    styles: int
    offered: int  # transformations the framework offers
    missing: tuple[str, ...]  # transformations it has no API for
    clean: tuple[str, ...]  # styles that survive every one offered
    wrong: int  # styles that give a silently wrong value somewhere
    where: tuple[str, ...]  # the transformations where they do


def _fact(run: RunStyles) -> tuple[Survival, ...] | None:
    out = []
    for fw in dict.fromkeys(s.framework for s in run.styles):
        mine = [s for s in run.styles if s.framework == fw and not s.builtin]
        if mine:
            wrong = [s for s in mine if s.wrong()]
            missing = [c for c in mine[0].cells if c not in mine[0].offered()]
            out.append(Survival(fw, len(mine), len(mine[0].offered()), tuple(missing),
                                tuple(s.style for s in mine if not s.failing()), len(wrong),
                                tuple(dict.fromkeys(c for s in wrong for c in s.wrong()))))
    return tuple(out) or None


def _fact_text(fact: tuple[Survival, ...]) -> str:
    parts = []
    for s in fact:
        fw, clean = s.framework, s.clean
        text = (f"of {s.styles} {fw} custom-rule styles {len(clean) or 'none'} survive"
                f"{'s' if len(clean) < 2 else ''} all {s.offered} transformations {fw} offers"
                + (f" ({'; '.join(list(clean) + [f'{m} has no {fw} API' for m in s.missing])})"
                   if clean or s.missing else ""))
        if s.wrong:
            text += f" and {s.wrong} give silently wrong values ({', '.join(s.where)})"
        parts.append(text)
    text = "; ".join(parts)
    return text[:1].upper() + text[1:]


def _fact_short(fact: tuple[Survival, ...]) -> str:
    return "; ".join(f"{s.framework}: {len(s.clean)} of {s.styles} survive, {s.wrong} silently "
                     f"wrong" for s in fact)


@dataclass
class MatrixRow:
    number: int = column("#", key=True)
    style: str = column("style", key=True)
    cells: dict = column()  # transformation: its code
    fix: str | None = column("how to make it work")


@dataclass
class MatrixDetail:
    run: str = column("run")
    style: str = column("style")
    rule: str = column("rule")
    transformation: str = column("transformation")
    status: str = column("status")
    error: str | None = column("error")


def _matrix(summary: Summary) -> Table:
    columns, codes = summary.columns, summary.error_codes
    detail = [MatrixDetail(r.run.label, s.style, s.rule, c, s.cells[c].status,
                           s.cells[c].detail if s.cells[c].status == "error" else None)
              for r in summary.runs for s in r.styles for c in columns]
    legend = "Errors: " + "; ".join(f"{code}: {shorten(text, 150)}" for text, code in codes.items())
    return run_table(
        "matrix", "Transformations each custom-rule style survives",
        f"Rows are rule styles (all c = 0, except the seed rule's c = 1); every cell runs the "
        f"transformation on float64 inputs that include an exact 0 and compares with a numpy "
        f"oracle for the rule's convention. ✓: the value matches; ✗w: a wrong value, silently; "
        f"✗E<n>: an error, listed under the table; —: no such API. torch.compile uses "
        f"fullgraph=True and backend {'/'.join(summary.backends)}: 'compiled forward' compiles "
        f"the rule alone, 'compiled grad' the loss and runs its backward, 'grad of compiled' is "
        f"torch.func.grad of the compiled loss, 'compiled func.grad' compiles torch.func.grad of "
        f"the loss; JAX's counterparts are jax.jit(f), jax.jit(jax.grad), jax.grad(jax.jit), "
        f"jax.jit(jax.grad). 'export' runs torch.export's program forward and "
        f"backward, and jax.export serialised (vjp_order=1), deserialised and differentiated. "
        f"'grad of grad' uses torch.autograd.grad(create_graph=True) twice and jax.grad twice; "
        f"HVP is torch.func.jvp / jax.jvp of the gradient. A ✓ means the value matched: where a "
        f"style's convention equals the gradient its forward op (clamp) has by itself, a ✓ under "
        f"compiled func.grad or export cannot show that the custom backward ran. The last column "
        f"names, for each ✗, the row (#) of a style of ours with the same convention that passes "
        f"that column.",
        MatrixRow, summary.runs,
        lambda r: [MatrixRow(s.number, s.style, {c: _code(s.cells[c], codes) for c in columns},
                             how_to_fix(s, r.styles)) for s in r.styles],
        notes=[legend] if codes else [], detail=listed(MatrixDetail, detail))


def _answer(summary: Summary, fact: str | None) -> Answer | None:
    """The survivors, and for each failing transformation the style of ours that fixes it."""
    if not fact:
        return None
    run = summary.runs[0]
    unfixable = []
    for fw in dict.fromkeys(s.framework for s in run.styles):
        mine = [s for s in run.styles if s.framework == fw and not s.builtin]
        unfixable += [f"{fw} {col}" for col in summary.columns
                      if mine and all(s.cells[col].failed for s in mine)]
    return Answer("transforms", fact + "." + (
        f" No custom style of ours survives {', '.join(unfixable)}; for every other failure the "
        f"matrix names a style that does." if unfixable else ""), ("matrix",))


def render(summary: Summary) -> Rendered:
    runs = [r.run for r in summary.runs]
    fact = stated_for_runs([(r.run, _fact(r)) for r in summary.runs], runs, _fact_text,
                           _fact_short)
    answer = _answer(summary, fact)
    return Rendered([_matrix(summary)], [Finding(fact + ".", "matrix")] if fact else [],
                    answers=[answer] if answer else [])


EXPERIMENT = Experiment(
    name="transforms", description=DESCRIPTION, question=QUESTION, seed=None,
    tables=("matrix",), cases=cases, run_case=run_case, summarise=summarise, render=render,
    comparison=Comparison(record_key=("rule",), not_compared=("style", "name")))

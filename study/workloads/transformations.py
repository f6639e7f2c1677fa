"""Running a rule under each transformation (compile, export, vmap, higher order, forward mode)
and comparing what comes back with what it should be.

    >>> cells = transformation_cells("torch", torch.relu, expected, "aot_eager", Device("cpu"))
    >>> cells["jvp"]   # {"status": "ok", "detail": [...]}

Every thunk computes at X (a kink, 0.0, included), W and V in float64; `expected` gives, per
column, the array it should return. The transforms matrix expects a ReLU with convention c;
study.check expects the rule's own eager value and reverse derivative.
"""
import numpy as np

from study.errors import first_error_line

COLUMNS = ("eager grad", "compiled forward", "compiled grad", "grad of compiled",
           "compiled func.grad", "export",
           "vmap forward", "per-sample grad", "grad of grad", "HVP", "jvp", "jacfwd",
           "forward_ad", "jacrev")
COMPILING_COLUMNS = ("compiled forward", "compiled grad", "grad of compiled",
                     "compiled func.grad", "export")
SECOND_ORDER_COLUMNS = ("grad of grad", "HVP")
X = np.array([-1.5, 0.0, 0.7, 2.0])
W = np.array([0.5, -1.0, 2.0, 1.5])
V = np.array([1.0, 2.0, -1.0, 0.5])
XB = np.array([[-1.5, 0.0, 0.7, 2.0], [0.0, 3.0, -2.0, 0.0], [1.0, -1.0, 0.0, 0.25]])
EXACT = 1e-12  # the absolute tolerance of a first-order cell: float64 round-off only


def _module(fn):
    """fn as a torch.nn.Module, which torch.export takes."""
    import torch

    class Module(torch.nn.Module):
        def forward(self, x):
            return fn(x)
    return Module()


def _forward_ad(fn, x, v):
    import torch.autograd.forward_ad as fwAD
    with fwAD.dual_level():
        return fwAD.unpack_dual(fn(fwAD.make_dual(x, v))).tangent


def torch_transforms(fn, compile_backend: str, device) -> dict:
    import torch

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
        program = torch.export.export(_module(fn), (t(X),))
        x = t(X, True)
        y = program.module()(x)
        (y * w).sum().backward()
        return torch.cat([y.detach(), x.grad])

    def grad_of_grad():
        x = t(X, True)
        g, = torch.autograd.grad(f(x), x, create_graph=True)
        if not g.requires_grad:
            # the measured fact only: older records added "(@once_differentiable)", a guess
            # at the cause that other styles do not share (transforms.summary drops it there)
            raise RuntimeError("the first gradient has no graph: autograd cannot differentiate "
                               "it again")
        return torch.autograd.grad(g.sum(), x)[0]

    return {"eager grad": eager, "compiled forward": lambda: compiled("forward"),
            "compiled grad": lambda: compiled("grad"),
            "grad of compiled": lambda: compiled("func.grad"),
            "compiled func.grad": lambda: compiled("compiled func.grad"), "export": exported,
            "vmap forward": lambda: torch.func.vmap(fn)(t(XB)),
            "per-sample grad": lambda: torch.func.vmap(torch.func.grad(f))(t(XB)),
            "grad of grad": grad_of_grad,
            "HVP": lambda: torch.func.jvp(torch.func.grad(f), (t(X),), (v,))[1],
            "jvp": lambda: torch.func.jvp(fn, (t(X),), (v,))[1],
            "jacfwd": lambda: torch.func.jacfwd(fn)(t(X)),
            "forward_ad": lambda: _forward_ad(fn, t(X), v),
            "jacrev": lambda: torch.func.jacrev(fn)(t(X))}


def jax_transforms(fn, device) -> dict:
    import jax
    import jax.numpy as jnp
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


def expected_from(value, derivative, second_derivative) -> dict:
    """Per column, what it should return, given the rule's elementwise value, first and
    second derivative as functions of a numpy array (NaN where a cell is not judged)."""
    d = derivative
    return {"eager grad": d(X) * W, "compiled forward": value(X), "compiled grad": d(X) * W,
            "grad of compiled": d(X) * W, "compiled func.grad": d(X) * W,
            "export": np.concatenate([value(X), d(X) * W]),
            "vmap forward": value(XB), "per-sample grad": d(XB) * W,
            "grad of grad": second_derivative(X) * W, "HVP": second_derivative(X) * W * V,
            "jvp": d(X) * V, "jacfwd": np.diag(d(X)), "forward_ad": d(X) * V,
            "jacrev": np.diag(d(X))}


def _agrees(got: np.ndarray, want: np.ndarray, atol: float) -> bool:
    """Within atol where `want` is judged (not NaN): a NaN in `want` marks a cell no reference
    decides (a second derivative at a kink)."""
    if got.shape != want.shape:
        return False
    judged = ~np.isnan(want)
    return bool(np.allclose(got[judged], want[judged], rtol=0, atol=atol))


def transformation_cells(framework: str, fn, expected: dict, compile_backend: str, device,
                         columns=COLUMNS, atol: dict | None = None) -> dict:
    """{column: {"status": "ok"|"wrong"|"error"|"n/a", "detail": ...}} for one rule: "wrong"
    where the transformation returns something other than `expected` (within atol[column],
    default EXACT), "error" with the first line of what it raised."""
    thunks = (torch_transforms(fn, compile_backend, device) if framework == "torch"
              else jax_transforms(fn, device))
    cells = {}
    for col in columns:
        if thunks[col] is None:
            cells[col] = {"status": "n/a", "detail": "no such API"}
            continue
        try:
            got = device.to_numpy(thunks[col]()).astype(np.float64)
            ok = _agrees(got, expected[col], (atol or {}).get(col, EXACT))
            cells[col] = {"status": "ok" if ok else "wrong", "detail": got.tolist()}
        except Exception as exc:  # noqa: BLE001  a transformation that raises is the result
            cells[col] = {"status": "error", "detail": first_error_line(exc)}
    return cells

"""A transform_wrong reproducer's code, per framework: each column of the transforms matrix
(study.workloads.transformations) as (what it returns, what the rule's own eager value and
derivative say it should), both float64 numpy arrays; only the columns found, and the helpers
they call, are written."""
import re

TORCH_HELPERS = '''
def t(a):
    return torch.tensor(a, dtype=torch.float64, device=DEVICE)


def f(a):
    return (rule(a) * t(W)).sum()


def value(a):
    return host(rule(t(a)))


def derivative(a):
    """The rule's own eager derivative (cotangent 1) at each element of a."""
    return host(reverse(t(a)))


def second(a):
    """A central difference of that derivative, NaN (not judged) within 1e-3 of a kink."""
    a = np.asarray(a, np.float64)
    out = (derivative(a + 1e-5) - derivative(a - 1e-5)) / 2e-5
    near = np.zeros(a.shape, bool)
    for k in KINKS:
        near |= np.abs(a - k) < 1e-3
    return np.where(near, np.nan, out)


def jacobian(a):
    """diag(derivative); an off-diagonal 0 x a NaN or infinite derivative is not judged."""
    d = derivative(a)
    finite = np.isfinite(d)
    off = np.where(finite[:, None] & finite[None, :], 0.0, np.nan)
    return np.where(np.eye(d.size, dtype=bool), np.diag(d), off)


def grad_x(loss, a):
    x = t(a).requires_grad_()
    loss(x).backward()
    return host(x.grad)


def grad_of_grad():
    x = t(X).requires_grad_()
    g, = torch.autograd.grad(f(x), x, create_graph=True)
    return host(torch.autograd.grad(g.sum(), x)[0])


def exported():
    class Module(torch.nn.Module):
        def forward(self, x):
            return rule(x)
    program = torch.export.export(Module(), (t(X),))
    x = t(X).requires_grad_()
    y = program.module()(x)
    (y * t(W)).sum().backward()
    return np.concatenate([host(y), host(x.grad)])


def forward_ad():
    import torch.autograd.forward_ad as fwAD
    with fwAD.dual_level():
        return host(fwAD.unpack_dual(rule(fwAD.make_dual(t(X), t(V)))).tangent)
'''

JAX_HELPERS = '''
def t(a):
    return jax.device_put(jnp.asarray(a, jnp.float64),
                          jax.devices("gpu" if DEVICE == "cuda" else "cpu")[0])


def f(a):
    return jnp.sum(rule(a) * t(W))


def value(a):
    return host(rule(t(a)))


def derivative(a):
    """The rule's own eager derivative (cotangent 1) at each element of a."""
    return host(reverse(t(a)))


def second(a):
    """A central difference of that derivative, NaN (not judged) within 1e-3 of a kink."""
    a = np.asarray(a, np.float64)
    out = (derivative(a + 1e-5) - derivative(a - 1e-5)) / 2e-5
    near = np.zeros(a.shape, bool)
    for k in KINKS:
        near |= np.abs(a - k) < 1e-3
    return np.where(near, np.nan, out)


def jacobian(a):
    """diag(derivative); an off-diagonal 0 x a NaN or infinite derivative is not judged."""
    d = derivative(a)
    finite = np.isfinite(d)
    off = np.where(finite[:, None] & finite[None, :], 0.0, np.nan)
    return np.where(np.eye(d.size, dtype=bool), np.diag(d), off)


def exported():
    from jax import export
    program = export.export(jax.jit(rule))(jax.ShapeDtypeStruct((len(X),), jnp.float64))
    restored = export.deserialize(program.serialize(vjp_order=1))
    grad = jax.grad(lambda a: jnp.sum(restored.call(a) * t(W)))(t(X))
    return host(jnp.concatenate([restored.call(t(X)), grad]))
'''

COLUMNS = {  # per column, (what it returns, what it should): continuation lines after "\n"
    "torch": {
        "eager grad": "lambda: (grad_x(f, X), derivative(X) * W)",
        "compiled forward": "lambda: (host(compiled(rule)(t(X))), value(X))",
        "compiled grad": "lambda: (grad_x(compiled(f), X), derivative(X) * W)",
        "grad of compiled": "lambda: (host(torch.func.grad(compiled(f))(t(X))),\n"
                            "derivative(X) * W)",
        "compiled func.grad": "lambda: (host(compiled(torch.func.grad(f))(t(X))),\n"
                              "derivative(X) * W)",
        "export": "lambda: (exported(), np.concatenate([value(X), derivative(X) * W]))",
        "vmap forward": "lambda: (host(torch.func.vmap(rule)(t(XB))), value(XB))",
        "per-sample grad": "lambda: (host(torch.func.vmap(torch.func.grad(f))(t(XB))),\n"
                           "derivative(XB) * W)",
        "grad of grad": "lambda: (grad_of_grad(), second(X) * W)",
        "HVP": "lambda: (host(torch.func.jvp(torch.func.grad(f), (t(X),), (t(V),))[1]),\n"
               "second(X) * W * V)",
        "jvp": "lambda: (host(torch.func.jvp(rule, (t(X),), (t(V),))[1]),\nderivative(X) * V)",
        "jacfwd": "lambda: (host(torch.func.jacfwd(rule)(t(X))), jacobian(X))",
        "forward_ad": "lambda: (forward_ad(), derivative(X) * V)",
        "jacrev": "lambda: (host(torch.func.jacrev(rule)(t(X))), jacobian(X))",
    },
    "jax": {
        "eager grad": "lambda: (host(jax.grad(f)(t(X))), derivative(X) * W)",
        "compiled forward": "lambda: (host(jax.jit(rule)(t(X))), value(X))",
        "compiled grad": "lambda: (host(jax.jit(jax.grad(f))(t(X))), derivative(X) * W)",
        "grad of compiled": "lambda: (host(jax.grad(jax.jit(f))(t(X))), derivative(X) * W)",
        "compiled func.grad": "lambda: (host(jax.jit(jax.grad(f))(t(X))), derivative(X) * W)",
        "export": "lambda: (exported(), np.concatenate([value(X), derivative(X) * W]))",
        "vmap forward": "lambda: (host(jax.vmap(rule)(t(XB))), value(XB))",
        "per-sample grad": "lambda: (host(jax.vmap(jax.grad(f))(t(XB))),\n"
                           "derivative(XB) * W)",
        "grad of grad": "lambda: (host(jax.grad(lambda a: jnp.sum(jax.grad(f)(a)))(t(X))),\n"
                        "second(X) * W)",
        "HVP": "lambda: (host(jax.jvp(jax.grad(f), (t(X),), (t(V),))[1]),\n"
               "second(X) * W * V)",
        "jvp": "lambda: (host(jax.jvp(rule, (t(X),), (t(V),))[1]), derivative(X) * V)",
        "jacfwd": "lambda: (host(jax.jacfwd(rule)(t(X))), jacobian(X))",
        "jacrev": "lambda: (host(jax.jacrev(rule)(t(X))), jacobian(X))",
    },
}


def _snippets(code: str) -> dict[str, str]:
    return {block.split("(")[0].removeprefix("def "): block
            for block in code.strip().split("\n\n\n")}


HELPERS = {"torch": _snippets(TORCH_HELPERS), "jax": _snippets(JAX_HELPERS)}


def transform_code(framework: str, columns) -> list[str]:
    """The helpers the columns call (and those they call), then TRANSFORMS of those columns."""
    entries = {c: COLUMNS[framework][c] for c in dict.fromkeys(columns)}
    helpers, needed = HELPERS[framework], set()
    text = " ".join(entries.values())
    while True:
        called = {name for name in helpers if re.search(rf"\b{name}\b", text)} - needed
        if not called:
            break
        needed |= called
        text += " ".join(helpers[name] for name in called)
    lines = []
    for name in (n for n in helpers if n in needed):
        lines += ["", "", *helpers[name].split("\n")]
    lines += ["", "", "TRANSFORMS = {"]
    for column, entry in entries.items():
        first, *rest = entry.split("\n")
        lines += [f"    {column!r}: {first}", *(f"{' ' * 12}{r}" for r in rest)]
        lines[-1] += ","
    return lines + ["}"]

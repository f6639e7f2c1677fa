"""The code a reproducer (study.check._reproducer) is written in: per framework, its preamble,
the helpers a kind needs, and each kind's test body. The constants (the transforms' inputs,
the clone hazard's, the fill length) are the check's own, written out as literals."""
import numpy as np

from study.check._reproducer_transforms import transform_code
from study.measure.placement import FILL_LENGTH
from study.workloads import transformations

HAZARD_X = (-1.5, -0.5, 0.5, 2.0, -2.0, 1.0)  # study.workloads.clone_hazard.X (imports torch)
HAZARD_W = (0.5, -1.0, 2.0, 1.5, 3.0, -0.5)  # its W; tests check both against the module

def _snippets(code: str) -> dict[str, str]:
    """A block of helper functions as {name: its code}, in order."""
    out = {}
    for block in code.strip().split("\n\n\n"):
        out[block.split("(")[0].removeprefix("def ")] = block
    return out


TORCH_HELPERS = _snippets('''
def from_bits(bits, dtype):
    """A 1-element tensor holding exactly these IEEE bits in dtype."""
    ints = {"float16": np.int16, "bfloat16": np.int16, "float32": np.int32,
            "float64": np.int64}[dtype]
    width = 8 * np.dtype(ints).itemsize
    signed = bits - (1 << width) if bits >> (width - 1) else bits
    return torch.from_numpy(np.array([signed], ints)).view(getattr(torch, dtype)).to(DEVICE)


def host(t):
    return t.detach().to(torch.float64).cpu().numpy()


def placed(x, placement):
    """x where the finding saw it: alone, 0-d, or filling a row of FILL_LENGTH."""
    if placement == "0-d":
        return x.reshape(())
    if placement in ("fill", "2-D rows"):
        return x.repeat(FILL_LENGTH).reshape((1, -1) if placement == "2-D rows" else (-1,))
    return x


def compiled(fn):
    return torch.compile(fn, backend="inductor", fullgraph=True)


def reverse(x, cotangent=1.0, wrap=None):
    """The reverse derivative at x with a uniform cotangent, as a training step takes it
    (wrap: compiled, say, applied to the rule)."""
    x = x.detach().clone().requires_grad_()
    y = (wrap(rule) if wrap else rule)(x)
    y.backward(torch.full_like(y, cotangent))
    return torch.zeros_like(x) if x.grad is None else x.grad


def forward(x, wrap=None):
    """The forward-mode derivative at x with a tangent of 1 (wrap: applied to the jvp)."""
    jvp = lambda t: torch.func.jvp(rule, (t,), (torch.ones_like(t),))[1]  # noqa: E731
    return (wrap(jvp) if wrap else jvp)(x)
''')

JAX_HELPERS = _snippets('''
def from_bits(bits, dtype):
    """A 1-element array holding exactly these IEEE bits in dtype."""
    ints = {"float16": jnp.uint16, "bfloat16": jnp.uint16, "float32": jnp.uint32,
            "float64": jnp.uint64}[dtype]
    x = jax.lax.bitcast_convert_type(jnp.array([bits], ints), getattr(jnp, dtype))
    return jax.device_put(x, jax.devices("gpu" if DEVICE == "cuda" else "cpu")[0])


def host(a):
    return np.asarray(a, np.float64)


def placed(x, placement):
    """x where the finding saw it: alone, 0-d, or filling a row of FILL_LENGTH."""
    if placement == "0-d":
        return x.reshape(())
    if placement in ("fill", "2-D rows"):
        return jnp.tile(x, FILL_LENGTH).reshape((1, -1) if placement == "2-D rows" else (-1,))
    return x


def compiled(fn):
    return jax.jit(fn)


def reverse(x, cotangent=1.0, wrap=None):
    """The reverse derivative at x with a uniform cotangent (wrap: applied to the vjp)."""
    def vjp(t):
        y, pullback = jax.vjp(rule, t)
        return pullback(jnp.full_like(y, cotangent))[0]
    return (wrap(vjp) if wrap else vjp)(x)


def forward(x, wrap=None):
    """The forward-mode derivative at x with a tangent of 1 (wrap: applied to the jvp)."""
    jvp = lambda t: jax.jvp(rule, (t,), (jnp.ones_like(t),))[1]  # noqa: E731
    return (wrap(jvp) if wrap else jvp)(x)
''')

COMMON_HELPERS = _snippets('''
def same_bits(a, b):
    return np.array_equal(a, b, equal_nan=True) and np.array_equal(np.signbit(a), np.signbit(b))


def measured(mode, x, wrap=None):
    """The value, reverse or forward-mode derivative at x (wrap: compiled, say)."""
    if mode == "value":
        return host((wrap(rule) if wrap else rule)(x))
    return host(reverse(x, 1.0, wrap) if mode == "reverse" else forward(x, wrap))
''')
MEASURING = ("from_bits", "host", "placed", "compiled", "reverse", "forward", "measured")
NEEDS = {  # the helpers each kind's test calls, in the order they are defined
    "vjp_not_linear": ("from_bits", "host", "reverse"),
    "not_deterministic": ("from_bits", "host", "reverse", "forward", "same_bits", "measured"),
    "gradcheck_fails": ("from_bits",),
    "forward_not_finite": MEASURING, "reverse_not_finite": MEASURING,
    "compiled_differs": MEASURING,
    "convention_differs_from_twin": ("from_bits", "host", "reverse", "forward", "measured"),
    "transform_wrong": ("host", "compiled", "reverse"), "writes_grad_output": (),
}


BODY = {
    "vjp_not_linear": [
        "    x = from_bits(bits, dtype)",
        "    # linear in the cotangent: u times the derivative at cotangent 1, exactly (u is a",
        "    # power of two, so the product rounds nothing)",
        "    np.testing.assert_array_equal(host(reverse(x, cotangent)),",
        "                                  cotangent * host(reverse(x, 1.0)))"],
    "not_deterministic": [
        "    x = from_bits(bits, dtype)",
        "    calls = [(measured(\"value\", x), measured(\"reverse\", x)) for _ in range(3)]",
        "    for again in calls[1:]:",
        "        assert all(same_bits(a, b) for a, b in zip(calls[0], again)), calls"],
    "gradcheck_fails": [
        "    x = from_bits(bits, dtype)",
        "    # the derivative is the slope of the value here, away from every kink",
        "    GRADCHECK(x)"],
    "forward_not_finite": [
        "    x = placed(from_bits(bits, dtype), placement)",
        "    got = measured(\"value\", x, compiled if is_compiled else None)",
        "    assert np.isfinite(got).all(), got  # as the rule is at the neighbouring inputs"],
    "reverse_not_finite": [
        "    x = placed(from_bits(bits, dtype), placement)",
        "    got = measured(\"reverse\", x, compiled if is_compiled else None)",
        "    assert not np.isnan(got).any(), got  # a number, where the value is one"],
    "compiled_differs": [
        "    x = placed(from_bits(bits, dtype), placement)",
        "    try:",
        "        want = measured(mode, x)",
        "    except Exception:  # eager forward mode raises (an old-style Function):",
        "        want = measured(\"reverse\", x)  # tangent 1 and cotangent 1 agree elementwise",
        "    np.testing.assert_array_equal(measured(mode, x, compiled), want)"],
    "convention_differs_from_twin": [
        "    x = from_bits(bits, dtype)",
        "    ours, theirs = measured(mode, x), twin_measured(mode, bits, dtype)",
        "    np.testing.assert_array_equal(ours, theirs)"],
    "transform_wrong": [
        "    got, want = TRANSFORMS[column]()",
        "    judged = ~np.isnan(want)  # NaN: a cell no reference decides (a kink, 0 × NaN)",
        "    assert got.shape == want.shape",
        "    np.testing.assert_allclose(got[judged], want[judged], rtol=0, atol=ATOL[column])"],
    "writes_grad_output": [
        "    x = torch.tensor(HAZARD_X, dtype=torch.float64, device=DEVICE, requires_grad=True)",
        "    incoming = torch.tensor(HAZARD_W, dtype=torch.float64, device=DEVICE)",
        "    kept = incoming.clone()",
        "    rule(x).backward(incoming)",
        "    # where `incoming` also flows elsewhere (a skip connection), a write changes that",
        "    assert torch.equal(incoming, kept), f\"{graph}: grad_output was written into\""],
}
GRADCHECK = {
    "torch": "assert torch.autograd.gradcheck(rule, (x.requires_grad_(),), eps=1e-6, "
             "atol=1e-5)",
    "jax": "jax.test_util.check_grads(rule, (x,), order=1, modes=(\"rev\",), eps=1e-6)",
}
BODIES = {fw: {kind: [line.replace("GRADCHECK(x)", GRADCHECK[fw]) for line in lines]
               for kind, lines in BODY.items()} for fw in ("torch", "jax")}


def _literal(a) -> str:
    return repr(np.asarray(a).tolist())


def preamble(framework: str, kind: str, source, twin, device: str) -> list[str]:
    """The file's imports, the rule, and the helpers this kind's test calls."""
    imports = (["import jax", "import jax.numpy as jnp", "import jax.test_util", "",
                "jax.config.update(\"jax_enable_x64\", True)  # float64 as the check has it"]
               if framework == "jax" else ["import torch"])
    loads = ["import importlib"] + (["import importlib.util", "import sys"]
                                    if ".py:" in source.spec else [])
    lines = ['"""A reproducer written by study check: run it with pytest."""', *loads, "",
             "import numpy as np", "import pytest", *imports, "",
             f"DEVICE = {device!r}  # where the check measured"]
    if "placed" in NEEDS[kind]:
        lines += [f"FILL_LENGTH = {FILL_LENGTH}  # a row with a vector body and a scalar tail"]
    lines += ["", f"# the rule, as the check imported it ({source.spec})", *source.lines()]
    known = {**(TORCH_HELPERS if framework == "torch" else JAX_HELPERS), **COMMON_HELPERS}
    for name in NEEDS[kind]:
        lines += ["", "", *known[name].split("\n")]
    if twin is not None:
        lines += _twin_lines(*twin)
    return lines


def _twin_lines(source, framework: str) -> list[str]:
    """The twin imported beside the rule, and its value or derivative at the same bits."""
    if framework == "jax":
        imports = ["import jax", "import jax.numpy as jnp", "jax.config.update("
                   "\"jax_enable_x64\", True)"]
        make = ["    ints = {\"float16\": jnp.uint16, \"bfloat16\": jnp.uint16, \"float32\": "
                "jnp.uint32, \"float64\": jnp.uint64}[dtype]",
                "    x = jax.lax.bitcast_convert_type(jnp.array([bits], ints), "
                "getattr(jnp, dtype))",
                "    x = jax.device_put(x, jax.devices(\"gpu\" if DEVICE == \"cuda\" else "
                "\"cpu\")[0])",
                "    if mode == \"value\":", "        return np.asarray(twin(x), np.float64)",
                "    y, pullback = jax.vjp(twin, x)",
                "    return np.asarray(pullback(jnp.ones_like(y))[0], np.float64)"]
    else:
        imports = ["import torch"]
        make = ["    ints = {\"float16\": np.int16, \"bfloat16\": np.int16, \"float32\": "
                "np.int32, \"float64\": np.int64}[dtype]",
                "    width = 8 * np.dtype(ints).itemsize",
                "    signed = bits - (1 << width) if bits >> (width - 1) else bits",
                "    x = torch.from_numpy(np.array([signed], ints)).view(getattr(torch, dtype))",
                "    x = x.to(DEVICE).requires_grad_()", "    y = twin(x)",
                "    if mode == \"value\":", "        return y.detach().double().cpu().numpy()",
                "    y.backward(torch.ones_like(y))", "    return x.grad.double().cpu().numpy()"]
    return ["", "", f"# the twin, as the check imported it ({source.spec})", *imports,
            *source.lines("twin"),
            "", "", "def twin_measured(mode, bits, dtype):", *make]


def helpers(framework: str, kind: str, kinks, findings) -> list[str]:
    """Constants and functions only this kind's test needs."""
    if kind == "writes_grad_output":
        return [f"HAZARD_X = {list(HAZARD_X)}  # no exact zero: every convention agrees",
                f"HAZARD_W = {list(HAZARD_W)}", ""]
    if kind != "transform_wrong":
        return []
    t = transformations
    columns = [f.where.transformation for f in findings]
    constants = [f"X = {_literal(t.X)}", f"XB = {_literal(t.XB)}", f"W = {_literal(t.W)}",
                 f"V = {_literal(t.V)}", f"KINKS = {list(kinks)!r}",
                 "ATOL = {column: 1e-6 if column in (\"grad of grad\", \"HVP\") else 1e-12 "
                 "for column in TRANSFORMS}"]
    return transform_code(framework, columns)[2:] + ["", ""] + constants

"""From what a user names (MODULE_OR_FILE:ATTR, or a Python object) to a
study.measure.rules.Rule."""
import ast
import importlib
import importlib.util
import math
import sys

import numpy as np

from study.errors import StudyError, first_error_line
from study.measure.rule import Rule, SourceError, load

FRAMEWORKS = ("torch", "jax")
# the styles of a torch autograd.Function, which is called through .apply
FUNCTION_STYLES = ("autograd.Function (setup_context)", "autograd.Function (forward(ctx, ...))")
_SHAPE_PROBE = np.array([-1.5, -0.25, 0.5, 2.0], np.float32)


class UsageError(StudyError):
    """What the user asked for cannot be checked: the CLI prints it on one line, exit 2."""


def load_target(spec: str) -> tuple[object, str]:
    """(object, display name) for 'package.module:attr' or 'path/to/file.py:attr'
    (study.measure.rule.load)."""
    try:
        obj = load(spec)
    except SourceError as exc:
        raise UsageError(str(exc)) from None
    if not callable(obj) and not isinstance(obj, Rule):
        raise UsageError(f"{spec} is a {type(obj).__name__}, not callable")
    return obj, spec


def parse_args(text: str | None) -> tuple:
    """--args '0.1' or '0.1, 2': Python literals, passed after x."""
    if not text:
        return ()
    try:
        value = ast.literal_eval(f"({text},)")
    except (ValueError, SyntaxError):
        raise UsageError(f"--args {text!r} is not a comma-separated list of Python literals"
                         ) from None
    return tuple(value)


def _torch_callable(obj):
    """(callable of x, style) when obj's type says it is a torch rule, else None (and None
    where torch is not imported: then no object is torch's)."""
    torch = sys.modules.get("torch")
    if torch is None:
        return None
    if isinstance(obj, type) and issubclass(obj, torch.autograd.Function):
        modern = obj.setup_context is not torch.autograd.Function.setup_context
        return obj.apply, FUNCTION_STYLES[0 if modern else 1]
    if isinstance(obj, type) and issubclass(obj, torch.nn.Module):
        try:
            return obj(), "nn.Module class"
        except Exception as exc:  # noqa: BLE001
            raise UsageError(f"{obj.__name__}() does not construct: {first_error_line(exc)}"
                             ) from None
    if isinstance(obj, torch.nn.Module):
        return obj, "nn.Module"
    if isinstance(obj, torch._library.custom_ops.CustomOpDef):
        return obj, "torch.library.custom_op"
    if isinstance(obj, (torch._ops.OpOverload, torch._ops.OpOverloadPacket)):
        return obj, "torch operator"
    return None


def _jax_callable(obj):
    jax = sys.modules.get("jax")
    if jax is None:
        return None
    if isinstance(obj, jax.custom_vjp):
        return obj, "jax.custom_vjp"
    if isinstance(obj, jax.custom_jvp):
        return obj, "jax.custom_jvp"
    return None


def _array_type(framework: str) -> type:
    module = sys.modules[framework]
    return module.Tensor if framework == "torch" else module.Array


def _kind_of(value) -> str:
    if value is None:
        return "None"
    if isinstance(value, (tuple, list)):
        return f"a {type(value).__name__} of {len(value)}"
    module = type(value).__module__
    return f"a {'' if module == 'builtins' else module + '.'}{type(value).__qualname__}"


def output_problem(y, x_shape: tuple, framework: str) -> str | None:
    """Why `y`, what the rule returned for an input of x_shape, cannot be measured as its
    elementwise value, or None: it is one array of the framework, of x's shape, or of one
    element for a one-element x (study.measure.probe.one_element_as)."""
    if not isinstance(y, _array_type(framework)):
        return f"the rule returns {_kind_of(y)} for an input of shape {list(x_shape)}"
    if tuple(y.shape) == tuple(x_shape) or math.prod(y.shape) == 1 == math.prod(x_shape):
        return None
    return f"the rule returns shape {list(y.shape)} for an input of shape {list(x_shape)}"


def _returned(fn, framework: str) -> tuple | None:
    """(what fn returns for _SHAPE_PROBE as a framework array,), or None where it raises."""
    module = importlib.import_module(framework)
    x = (module.from_numpy(_SHAPE_PROBE) if framework == "torch"
         else module.numpy.asarray(_SHAPE_PROBE))
    try:
        return (fn(x),)
    except Exception:  # noqa: BLE001  the question is only whether it answers
        return None


def _candidates() -> list[str]:
    """The frameworks a plain callable may be of: those already imported (the user's module
    imported its own), else those installed. A torch user's check never imports JAX."""
    imported = [fw for fw in FRAMEWORKS if fw in sys.modules]
    return imported or [fw for fw in FRAMEWORKS if importlib.util.find_spec(fw) is not None]


def detect(obj, framework: str | None, args: tuple = ()) -> tuple[object, str, str]:
    """(callable of x, framework, style): by type first, then by probing a torch tensor and a
    JAX array; ambiguous or neither is a UsageError asking for --framework. `args` follow x."""
    if framework is not None and framework not in FRAMEWORKS:
        raise UsageError(f"unknown framework {framework!r}; choose torch or jax")
    for fw, by_type in (("torch", _torch_callable), ("jax", _jax_callable)):
        found = by_type(obj)
        if found:
            if framework not in (None, fw):
                raise UsageError(f"{found[1]} is a {fw} rule, not {framework}")
            return _with_args(found[0], args), fw, found[1]
    fn = _with_args(obj, args)
    if framework is not None:
        return fn, framework, "callable"
    ran = {fw: got[0] for fw in _candidates() if (got := _returned(fn, fw)) is not None}
    problems = {fw: output_problem(y, _SHAPE_PROBE.shape, fw) for fw, y in ran.items()}
    answering = [fw for fw, problem in problems.items() if problem is None]
    if len(answering) == 1:
        return fn, answering[0], "callable"
    if problems and not answering:  # it runs, but returns no elementwise value: say what
        raise UsageError(next(iter(problems.values())))
    how = ("both a torch tensor and a JAX array" if answering
           else "neither a torch tensor nor a JAX array to one of its shape")
    raise UsageError(f"cannot tell the framework: the rule maps {how}; pass --framework")


def _with_args(fn, args: tuple):
    return (lambda x: fn(x, *args)) if args else fn


def as_rule(obj, framework: str | None = None, args: tuple = (), name: str | None = None,
            kinks: tuple = ()) -> tuple[Rule, str]:
    """(Rule, style) for a user's rule: derivatives are taken with respect to x only, `args`
    follow it unchanged."""
    if isinstance(obj, Rule):
        return obj, f"registry rule ({obj.kind})"
    fn, fw, style = detect(obj, framework, args)
    label = name or getattr(obj, "__qualname__", None) or type(obj).__name__
    rule = Rule(key=f"user:{label}", framework=fw, name=label, kind="custom", fn=fn,
                kinks=tuple(sorted(set(kinks))), relu_like=False)
    return rule, style

"""From what a user names (MODULE_OR_FILE:ATTR, or a Python object) to a
study.measure.rules.Rule: a rule of x, or of several inputs of one shape (a maximum(x, y), a
clamp(x, min, max) with array bounds), by the parameters its call takes without a default (after
`args`), or, where no signature can be read, by the arrays it answers."""
import ast
import importlib
import importlib.util
import inspect
import math
import sys

import numpy as np

from study.errors import StudyError, first_error_line
from study.measure.rule import Rule, SourceError, load

FRAMEWORKS = ("torch", "jax")
# the styles of a torch autograd.Function, which is called through .apply
FUNCTION_STYLES = ("autograd.Function (setup_context)", "autograd.Function (forward(ctx, ...))")
_SHAPE_PROBE = np.array([-1.5, -0.25, 0.5, 2.0], np.float32)
SEVERAL = (2, 3)  # the inputs a rule of several inputs may take, each of x's shape
INPUT_NAMES = ("x", "y", "z")  # where its signature names none


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


def output_problem(y, x_shape: tuple, framework: str, inputs: int = 1) -> str | None:
    """Why `y`, what the rule returned for an input of x_shape (for `inputs` of that shape
    each), cannot be measured as its elementwise value, or None: it is one array of the
    framework, of x's shape, or of one element for a one-element x
    (study.measure.probe.one_element_as)."""
    given = (f"an input of shape {list(x_shape)}" if inputs == 1
             else f"{inputs} inputs of shape {list(x_shape)}")
    if not isinstance(y, _array_type(framework)):
        return f"the rule returns {_kind_of(y)} for {given}"
    if tuple(y.shape) == tuple(x_shape) or math.prod(y.shape) == 1 == math.prod(x_shape):
        return None
    return f"the rule returns shape {list(y.shape)} for {given}"


def _returned(fn, framework: str, inputs: int = 1) -> tuple | None:
    """(what fn returns for `inputs` arrays of the framework, _SHAPE_PROBE turned a step each
    time,), or None where it raises."""
    module = importlib.import_module(framework)
    arrays = [np.roll(_SHAPE_PROBE, i) for i in range(inputs)]
    xs = [module.from_numpy(a) if framework == "torch" else module.numpy.asarray(a)
          for a in arrays]
    try:
        return (fn(*xs),)
    except Exception:  # noqa: BLE001  the question is only whether it answers
        return None


def _candidates() -> list[str]:
    """The frameworks a plain callable may be of: those already imported (the user's module
    imported its own), else those installed. A torch user's check never imports JAX."""
    imported = [fw for fw in FRAMEWORKS if fw in sys.modules]
    return imported or [fw for fw in FRAMEWORKS if importlib.util.find_spec(fw) is not None]


def _required(fn) -> tuple[str, ...] | None:
    """The positional parameters fn's call takes without a default; None where it takes *args
    or has no signature to read (a builtin such as torch.maximum)."""
    try:
        params = list(inspect.signature(fn).parameters.values())
    except (TypeError, ValueError):
        return None
    if any(p.kind is p.VAR_POSITIONAL for p in params):
        return None
    return tuple(p.name for p in params if p.default is p.empty
                 and p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD))


def parameter_names(obj, fn) -> tuple[str, ...] | None:
    """What a rule's call takes without a default, by name (an autograd.Function's forward
    without ctx, a Module's forward, a custom op's schema, a custom_vjp's or custom_jvp's
    function, else the callable's own), or None where that cannot be read."""
    torch, jax = sys.modules.get("torch"), sys.modules.get("jax")
    if torch is not None and isinstance(obj, type) and issubclass(obj, torch.autograd.Function):
        names = _required(obj.forward)
        modern = obj.setup_context is not torch.autograd.Function.setup_context
        return names[1:] if names and not modern else names  # forward(ctx, ...) drops ctx
    if torch is not None and isinstance(fn, torch.nn.Module):
        return _required(fn.forward)
    if torch is not None and isinstance(obj, (torch._library.custom_ops.CustomOpDef,
                                              torch._ops.OpOverload)):
        schema = obj._opoverload._schema if hasattr(obj, "_opoverload") else obj._schema
        return tuple(a.name for a in schema.arguments
                     if not a.kwarg_only and not a.has_default_value())
    if jax is not None and isinstance(obj, (jax.custom_vjp, jax.custom_jvp)):
        return _required(obj.fun)
    return _required(obj) if callable(obj) else None


def input_names(names: tuple[str, ...] | None, args: tuple) -> tuple[str, ...] | None:
    """The inputs a rule takes before `args`: its parameters' names where they are SEVERAL
    (x, y; x, min, max), ("x",) for any other count (a rule of x, or one a call will refuse),
    None where no signature says."""
    if names is None:
        return None
    inputs = len(names) - len(args)
    return tuple(names[:inputs]) if inputs in SEVERAL else INPUT_NAMES[:1]


def _answering(fn, frameworks, inputs: int) -> tuple[list[str], dict]:
    """(the frameworks whose arrays fn maps to an elementwise value, {framework: why not}
    for those whose it maps to something else); a framework whose arrays it refuses is in
    neither."""
    ran = {fw: got[0] for fw in frameworks if (got := _returned(fn, fw, inputs)) is not None}
    problems = {fw: output_problem(y, _SHAPE_PROBE.shape, fw, inputs) for fw, y in ran.items()}
    return [fw for fw, problem in problems.items() if problem is None], problems


def _plain_callable(obj, framework: str | None, args: tuple) -> tuple:
    """detect's answer for a plain callable: its inputs by its signature, else the first count
    (1, then SEVERAL) whose arrays it answers; its framework by the arrays it answers."""
    fn = _with_args(obj, args)
    names = input_names(parameter_names(obj, obj), args)
    if framework is not None and names is not None:
        return fn, framework, "callable", names
    frameworks = [framework] if framework is not None else _candidates()
    for inputs in (len(names),) if names else (1, *SEVERAL):
        answering, problems = _answering(fn, frameworks, inputs)
        if answering or problems:  # it ran: this count of inputs is the rule's
            break
    else:
        inputs, answering, problems = 1, [], {}
    names = names or INPUT_NAMES[:inputs]
    if framework is not None:
        return fn, framework, "callable", names
    if len(answering) == 1:
        return fn, answering[0], "callable", names
    if problems and not answering:  # it runs, but returns no elementwise value: say what
        raise UsageError(next(iter(problems.values())))
    how = ("both a torch tensor and a JAX array" if answering
           else "neither a torch tensor nor a JAX array to one of its shape")
    raise UsageError(f"cannot tell the framework: the rule maps {how}; pass --framework")


def detect(obj, framework: str | None, args: tuple = ()) -> tuple[object, str, str, tuple]:
    """(callable of its inputs, framework, style, the inputs' names): by type first, then by
    probing a torch tensor and a JAX array; ambiguous or neither is a UsageError asking for
    --framework. `args` follow the inputs."""
    if framework is not None and framework not in FRAMEWORKS:
        raise UsageError(f"unknown framework {framework!r}; choose torch or jax")
    for fw, by_type in (("torch", _torch_callable), ("jax", _jax_callable)):
        found = by_type(obj)
        if found:
            if framework not in (None, fw):
                raise UsageError(f"{found[1]} is a {fw} rule, not {framework}")
            names = input_names(parameter_names(obj, found[0]), args) or INPUT_NAMES[:1]
            return _with_args(found[0], args), fw, found[1], names
    return _plain_callable(obj, framework, args)


def _with_args(fn, args: tuple):
    return (lambda *xs: fn(*xs, *args)) if args else fn


def as_rule(obj, framework: str | None = None, args: tuple = (), name: str | None = None,
            kinks: tuple = ()) -> tuple[Rule, str]:
    """(Rule, style) for a user's rule: derivatives are taken with respect to its inputs (x,
    or each of several: the Rule's `operands`, each 0-d as the ties name them; where they tie:
    study.check._ties), `args` follow them unchanged."""
    if isinstance(obj, Rule):
        return obj, f"registry rule ({obj.kind})"
    fn, fw, style, names = detect(obj, framework, args)
    label = name or getattr(obj, "__qualname__", None) or type(obj).__name__
    if len(names) > 1:
        if kinks:
            raise UsageError("--kinks are probed in a rule of x alone; a rule of several inputs "
                             "is probed where its inputs tie")
        return Rule(key=f"user:{label}", framework=fw, name=label, kind="custom", fn=fn,
                    kinks=(), relu_like=False, operands=tuple((n, ()) for n in names)), style
    rule = Rule(key=f"user:{label}", framework=fw, name=label, kind="custom", fn=fn,
                kinks=tuple(sorted(set(kinks))), relu_like=False)
    return rule, style

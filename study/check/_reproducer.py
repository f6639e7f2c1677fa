"""A minimal reproducer for each wrong finding: a self-contained pytest file that imports the
rule as the check did, builds each input from its exact bits (one element; the placement the
finding names), and asserts what a correct rule gives there. It fails on the rule checked and
passes on one that is right at those inputs.

    >>> print(reproducer(findings, Source.of(AlphaAtZero, "tests/rules.py:AlphaAtZero",
    ...                                       "autograd.Function (forward(ctx, ...))"), "torch"))
"""
import os
from dataclasses import dataclass

from study.check._findings import PROSE, Finding
from study.check._load import FUNCTION_STYLES
from study.report.prose import say


def _why_none(reason: str, **facts) -> str:
    """Why there is no reproducer, in study check's words (check.j2's why_no_reproducer)."""
    return say(PROSE, "why_no_reproducer", reason=reason, **facts)


@dataclass(frozen=True)
class Source:
    """How a reproducer imports the rule and makes it a function of x: `spec` is
    MODULE_OR_FILE:ATTR (a file by its absolute path), `call` what follows the attribute
    ('.apply' for an autograd.Function, '()' for an nn.Module class), `args` the literals
    after x."""
    spec: str
    call: str = ""
    args: tuple = ()

    @staticmethod
    def of(obj, spec: str | None, style: str, args: tuple = ()) -> "Source | str":
        """The Source of a checked object, or why there is none: the spec given (the command
        line's), else the object's own module and name where that names it again."""
        from study.measure.rule import Rule, load
        if isinstance(obj, Rule):
            from study.measure import rules
            try:  # its own framework's rules: RULES would import the other framework too
                rules.by_key(obj.key)
            except KeyError:
                return _why_none("outside_registry")
            return Source("study.measure.rules:by_key", f"({obj.key!r}).fn", args)
        if spec is None:
            module, name = getattr(obj, "__module__", None), getattr(obj, "__qualname__", None)
            if not module or not name or module == "__main__" or "<locals>" in name:
                return _why_none("unplaced")
            spec = f"{module}:{name}"
            try:
                if load(spec) is not obj:
                    return _why_none("another_object", spec=spec)
            except Exception as exc:  # noqa: BLE001
                return _why_none("does_not_load", spec=spec, error=exc)
        where, _, attr = spec.rpartition(":")
        if where.endswith(".py") or os.sep in where:
            spec = f"{os.path.abspath(where)}:{attr}"
        call = (".apply" if style in FUNCTION_STYLES else "()" if style == "nn.Module class"
                else "")
        return Source(spec, call, tuple(args))

    @property
    def where(self) -> str:
        """The module or file the rule is imported from."""
        return self.spec.rpartition(":")[0]

    @property
    def attr(self) -> str:
        return self.spec.rpartition(":")[2]

    @property
    def folder(self) -> str:
        return os.path.dirname(self.where)

    @property
    def module(self) -> str:
        """The name a file is imported under: its own, without .py."""
        return os.path.splitext(os.path.basename(self.where))[0]


def _bits(finding: Finding) -> str:
    return f"0x{int(finding.where.bits, 16):0{len(finding.where.bits) - 2}x}"


def _placement(finding: Finding) -> str:
    return (finding.where.placement or "packed").split(", ")[0]


def _case(finding: Finding) -> tuple[list[str], str | None]:
    """(the test's parameters as code, the input they stand for) for one finding."""
    w, k = finding.where, finding.kind
    label = w.input or None
    if k == "vjp_not_linear":
        return [repr(w.dtype), _bits(finding), repr(float(w.first_cotangent()))], label
    if k in ("not_deterministic", "gradcheck_fails"):
        return [repr(w.dtype), _bits(finding)], label
    if k in ("forward_not_finite", "reverse_not_finite"):
        return [repr(w.dtype), _bits(finding), repr(_placement(finding)),
                repr(w.execution == "compiled")], label
    if k == "compiled_differs":
        return [repr(w.dtype), _bits(finding), repr(_placement(finding)),
                repr(w.transformation)], label
    if k == "convention_differs_from_twin":
        return [repr(w.dtype), _bits(finding), repr(w.transformation)], label
    if k in ("transform_wrong", "writes_grad_output"):
        return [repr(w.transformation)], None
    raise ValueError(f"no reproducer for {k}")


PARAMETERS = {
    "vjp_not_linear": "dtype, bits, cotangent", "not_deterministic": "dtype, bits",
    "gradcheck_fails": "dtype, bits",
    "forward_not_finite": "dtype, bits, placement, is_compiled",
    "reverse_not_finite": "dtype, bits, placement, is_compiled",
    "compiled_differs": "dtype, bits, placement, mode",
    "convention_differs_from_twin": "dtype, bits, mode", "transform_wrong": "column",
    "writes_grad_output": "graph",
}


def why_none(findings: list[Finding], source, twin, inputs=("x",)) -> str | None:
    """Why these findings (one kind) get no reproducer, or None where they do (`twin`: the
    twin's (Source, framework), None where its import is not known; `inputs`: the rule's)."""
    if len(inputs) > 1:
        return _why_none("several_inputs", spec=", ".join(inputs))
    if isinstance(source, str):
        return source
    kind = findings[0].kind
    # a net-level difference needs more than one rule at one input
    if kind == "convention_differs_from_twin" and any(f.where.bits is None for f in findings):
        return _why_none("net_level")
    if kind == "convention_differs_from_twin" and twin is None:
        return say(PROSE, "why_no_twin_reproducer")
    return None


def reproducer(findings: list[Finding], source: Source, framework: str,
               twin: tuple[Source, str] | None = None, kinks=(), device: str = "cpu") -> str:
    """A pytest file for findings of one wrong kind: one test, parametrised by each finding's
    input (its dtype and bits, its cotangent, placement, mode or transformation)."""
    kind = findings[0].kind
    from study.check import _reproducer_code as code
    cases = []
    for f in findings:
        params, label = _case(f)
        cases.append((params[0] if len(params) == 1 else f"({', '.join(params)})", label))
    columns = [f.where.transformation for f in findings]
    return code.file_text(framework, kind, source, twin, device, PARAMETERS[kind], cases,
                          kinks, columns)

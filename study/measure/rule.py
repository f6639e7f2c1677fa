"""A rule is a value: its function, its framework, what it declares and how it relates to others.

The study's own rules are study.measure.rules's registry; a user's rule is built from their
object by study.check. Defining a Rule imports no framework. Most rules are elementwise in x
alone; a built-in of several inputs (a reduction, max pooling, sort, a norm, maximum(x, y))
declares the arrays it takes (`operands`) and where they tie (`input_ties`, InputTie). A rule
outside the registry that must cross into another process (timing's fresh processes) names
where it is defined, its `source` ("package.module:ATTR" or "path/to/file.py:ATTR"), and is
loaded there (`load`).
"""
import importlib
import importlib.util
import math
import os
import sys
from dataclasses import dataclass
from typing import Callable, NamedTuple

from study.errors import StudyError, first_error_line


@dataclass(frozen=True)
class Tie:
    """At `kink`, x ties the operand `other` names; `fn(x, other)` is the call with that operand
    free and every other argument as the rule passes it. Left of the kink (x < other) one
    operand wins and right of it the other does, so the kink's normal is (1, -1)."""
    kink: float
    other: str
    fn: Callable


@dataclass(frozen=True)
class InputTie:
    """A point where inputs of a built-in of several inputs are equal. Its inputs are counted
    flat, operand after operand, each array in row-major order: `tied` are the inputs that
    hold the tie's value t, and the others, in order, hold t + each of `apart` (distinct and
    at least 1 away, so that the pieces meeting at the point are the tie's alone)."""
    tied: tuple[int, ...]
    apart: tuple[float, ...] = ()

    @property
    def inputs(self) -> int:
        return len(self.tied) + len(self.apart)

    def point(self, at: str) -> tuple[float, ...]:
        """The inputs at the tie, where the tied ones hold `at` (one of TIE_VALUES): 0; +0 and
        −0 in turn, +0 first; NaN. The others sit `apart` from 0 (from t where t is 0)."""
        values = {"0": (0.0, 0.0), "±0": (0.0, -0.0), "NaN": (math.nan, math.nan)}[at]
        others = iter(self.apart)
        out, turn = [], 0
        for i in range(self.inputs):
            if i in self.tied:
                out.append(values[turn % 2])
                turn += 1
            else:
                out.append(next(others))
        return tuple(out)


# what the tied inputs hold: 0, +0 beside −0 (equal, of other signs), NaN (equal to nothing)
TIE_VALUES = ("0", "±0", "NaN")


@dataclass(frozen=True)
class TieDocumentation:
    """What an op's own documentation says its gradient is at a tie, and the page that says it:
    `gives` is ONE_INPUT (all of it to one of the tied inputs) or EVEN_SPLIT (1/k to each)."""
    gives: str
    url: str


ONE_INPUT, EVEN_SPLIT = "one of the tied inputs", "an even split"


@dataclass(frozen=True)
class Rule:
    key: str  # stable identifier, unique across the registry
    framework: str  # "torch" | "jax"
    name: str  # display name, unique across the registry
    kind: str  # "builtin" | "custom"
    fn: Callable
    convention: float | None = None  # declared d/dx at 0, custom rules only
    kinks: tuple[float, ...] = (0.0,)
    relu_like: bool = True  # equals max(x, 0) everywhere off its kinks
    twin: str | None = None  # key: the same rule written in the other framework
    look_alike: str | None = None  # key: the other framework's op a porting user takes as it
    timed: bool = False  # timing times it alone, at every size and mode, and its saved bytes
    timed_in_nets: tuple[str, ...] = ()  # the nets of timing (NETS) that time it in a step
    paired_as: str | None = None  # timing's label for it beside its twin, where both are timed
    trained: bool = False  # training runs SGD with it (a custom rule: one per convention)
    transforms_style: str | None = None  # its row of the transforms matrix
    source: str | None = None  # where a Rule outside the registry is defined: module:ATTR
    # a built-in's kinks where x ties another operand the call takes as an array (maximum, a
    # bound JAX promotes to an array): the conformance judges the gradient over both there
    ties: tuple[Tie, ...] = ()
    # several public calls, or a comparison's mask (torch.where(x > 0, x, 0)): the
    # conformance measures it at its kinks but never judges it (no one op's rule to hold to)
    composition: bool = False
    # a built-in of several inputs: each array fn takes, (name, shape), as fn(*arrays); none
    # where fn is elementwise in x alone (the atlas's probe). `input_ties`: where they tie;
    # `tie_documented`: what the op's own page says it gives there, where it says
    operands: tuple[tuple[str, tuple[int, ...]], ...] = ()
    input_ties: tuple[InputTie, ...] = ()
    tie_documented: TieDocumentation | None = None

    @property
    def several_inputs(self) -> bool:
        return bool(self.operands)

    def input_labels(self) -> tuple[str, ...]:
        """Each input, flat: an operand's name where it is 0-d, else name[i] in row-major order."""
        return tuple(name if not shape else f"{name}[{i}]" for name, shape in self.operands
                     for i in range(math.prod(shape)))

    def tie_name(self, tie: InputTie) -> str:
        """"x = min" where every operand is 0-d, else "2 of 4": which inputs tie."""
        labels = self.input_labels()
        if all(not shape for _, shape in self.operands):
            return " = ".join(labels[i] for i in tie.tied)
        return f"{len(tie.tied)} of {len(labels)}"

    def tie_at(self, kink: float) -> Tie | None:
        """The tie at `kink`, or None where x alone varies there."""
        return next((t for t in self.ties if t.kink == kink), None)


class SourceError(StudyError):
    """A rule's source cannot be loaded: the message says why, on one line."""


def load(spec: str) -> object:
    """The object `spec` names: 'package.module:attr' or 'path/to/file.py:attr' (a file is
    imported with its folder on sys.path, so that it can import its neighbours)."""
    where, sep, attr = spec.rpartition(":")
    if not sep or not where or not attr:
        raise SourceError(f"{spec!r} is not MODULE_OR_FILE:ATTR")
    obj = _import(where)
    for part in attr.split("."):
        try:
            obj = getattr(obj, part)
        except AttributeError:
            raise SourceError(f"{where} has no attribute {attr!r}") from None
    return obj


def _import(where: str):
    if where.endswith(".py") or os.sep in where:
        path = os.path.abspath(where)
        if not os.path.isfile(path):
            raise SourceError(f"no such file: {where}")
        folder = os.path.dirname(path)
        if folder not in sys.path:
            sys.path.insert(0, folder)
        name = os.path.splitext(os.path.basename(path))[0]
        spec = importlib.util.spec_from_file_location(name, path)
        module = importlib.util.module_from_spec(spec)
        sys.modules.setdefault(name, module)
        try:
            spec.loader.exec_module(module)
        except Exception as exc:  # noqa: BLE001  whatever the user's file raises
            raise SourceError(f"{where} does not import: {first_error_line(exc)}") from None
        return module
    try:
        return importlib.import_module(where)
    except Exception as exc:  # noqa: BLE001
        raise SourceError(f"{where} does not import: {first_error_line(exc)}") from None


class NotInRelease(Exception):
    """The installed release lacks an API a rule is written with: a case that calls the rule
    is recorded as "not in this release", never as a value and never as an import failure."""

    def __init__(self, api: str, release: str):
        super().__init__(f"{api} is not in {release}")
        self.api, self.release = api, release


def release_of(module) -> str:
    """"torch 2.4.1", "jax 0.4.38": the release a missing API is missing from."""
    return f"{module.__name__} {module.__version__}"


def not_in_release(api: str, release: str) -> Callable:
    """A stand-in for a rule the release cannot run: calling it raises NotInRelease."""
    def missing(*args, **kwargs):
        raise NotInRelease(api, release)
    missing.__name__ = f"not_in_release({api})"
    return missing


def api_or_missing(module, path: str) -> Callable:
    """`module.<path>` (dotted) where the installed release has it, else not_in_release's
    stand-in naming it: jax.nn.sparse_plus came after jax 0.4.30, for one."""
    found = module
    for part in path.split("."):
        found = getattr(found, part, None)
        if found is None:
            return not_in_release(f"{module.__name__}.{path}", release_of(module))
    return found


class Reference(NamedTuple):
    key: str  # the registry's key
    name: str  # as a reader sees it


# the built-in each framework's rules are measured against: its relu
REFERENCE_RELU = {"torch": Reference("torch_relu", "torch.relu"),
                  "jax": Reference("jax_relu", "jax.nn.relu")}


def reference_relu(framework: str) -> Rule:
    """REFERENCE_RELU[framework] as a Rule, importing that framework alone (the registry's own
    entry carries its relations too: study.measure.rules.reference_of)."""
    if framework == "torch":
        import torch
        fn = torch.relu
    else:
        import jax
        fn = jax.nn.relu
    key, name = REFERENCE_RELU[framework]
    return Rule(key, framework, name, "builtin", fn)

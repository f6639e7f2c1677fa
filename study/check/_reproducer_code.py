"""The code a reproducer (study.check._reproducer) is written in, as Jinja2 templates beside this
module: reproducer.py.j2 lays out the file and each kind's test; reproducer_torch.py.j2,
reproducer_jax.py.j2 and reproducer_common.py.j2 hold the helpers, one macro per function, and
the transforms columns. This module picks what a file holds: the helpers its kind's test calls
(and, for transform_wrong, those its columns call), the twin, and the check's own constants (the
transforms' inputs, the clone hazard's, the fill length), written out as literals."""
import functools
import os
import re

import jinja2
import numpy as np

from study.measure.placement import FILL_LENGTH
from study.workloads import transformations

HAZARD_X = (-1.5, -0.5, 0.5, 2.0, -2.0, 1.0)  # study.workloads.clone_hazard.X (imports torch)
HAZARD_W = (0.5, -1.0, 2.0, 1.5, 3.0, -0.5)  # its W; tests check both against the module

TEMPLATES = jinja2.Environment(
    loader=jinja2.FileSystemLoader(os.path.dirname(os.path.abspath(__file__))),
    undefined=jinja2.StrictUndefined, autoescape=False, keep_trailing_newline=True,
    trim_blocks=True, lstrip_blocks=True)  # a line holding only a tag leaves no trace
TEMPLATES.filters["repr"] = repr

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
# a transform_wrong test's own helpers, in the order they are defined (JAX has no grad_x,
# grad_of_grad or forward_ad)
TRANSFORM_HELPERS = ("t", "f", "value", "derivative", "second", "jacobian", "grad_x",
                     "grad_of_grad", "exported", "forward_ad")


@functools.cache
def _macros(framework: str):
    return TEMPLATES.get_template(f"reproducer_{framework}.py.j2").module


def _helper(framework: str, name: str) -> str:
    """The code of the helper function `name` (a macro of the framework's template, or of the
    common one)."""
    macros = _macros(framework)
    if not hasattr(macros, name):
        macros = _macros("common")
    return str(getattr(macros, name)())


def _transforms(framework: str, columns) -> tuple[list[str], list[tuple[str, str]]]:
    """(the helpers the columns call, and those they call; each column's TRANSFORMS entry)."""
    macros = _macros(framework)
    entries = {c: str(macros.transforms_entry(c)).strip() for c in dict.fromkeys(columns)}
    missing = [c for c, entry in entries.items() if not entry]
    if missing:
        raise ValueError(f"no {framework} reproducer for the transforms column {missing[0]!r}")
    helpers = {name: _helper(framework, name) for name in TRANSFORM_HELPERS
               if hasattr(macros, name)}
    needed, text = set(), " ".join(entries.values())
    while True:
        called = {name for name in helpers if re.search(rf"\b{name}\b", text)} - needed
        if not called:
            break
        needed |= called
        text += " ".join(helpers[name] for name in called)
    return [code for name, code in helpers.items() if name in needed], list(entries.items())


def file_text(framework: str, kind: str, source, twin, device: str, parameters: str,
              cases: list[tuple[str, str | None]], kinks, columns) -> str:
    """The reproducer of one kind: `cases` are its parametrize rows (the parameters as code,
    the input they stand for), `twin` (Source, framework) or None, `columns` the transforms
    columns found (transform_wrong)."""
    context = dict(framework=framework, kind=kind, source=source, device=device,
                   parameters=parameters, cases=cases, twin=None,
                   fill_length=FILL_LENGTH if "placed" in NEEDS[kind] else None,
                   helpers=[_helper(framework, name) for name in NEEDS[kind]])
    if twin is not None:
        twin_source, twin_framework = twin
        context.update(twin=twin_source, twin_framework=twin_framework,
                       twin_measured=_helper(twin_framework, "twin_measured"))
    if kind == "writes_grad_output":
        context.update(hazard_x=list(HAZARD_X), hazard_w=list(HAZARD_W))
    if kind == "transform_wrong":
        helpers, entries = _transforms(framework, columns)
        inputs = {name: np.asarray(getattr(transformations, name)).tolist()
                  for name in ("X", "XB", "W", "V")}
        context.update(transform_helpers=helpers, transforms=entries, inputs=inputs,
                       kinks=list(kinks))
    return TEMPLATES.get_template("reproducer.py.j2").render(context)

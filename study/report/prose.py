"""Prose from templates: each experiment keeps its captions, findings and answer in one Jinja2
file beside its report module, as macros that take the summary's facts.

    >>> say(macros("study/check/check.j2"), "verdict", code=0)

Numbers in prose go through the one formatter (`|fmt`, 3 significant figures; `|fmt(4)` to
quote a table's cell as printed there). Text quoted as it came (an error line) goes through
`|verbatim`: `say` keeps its spacing and punctuation.
"""
import os
import re
import sys

import jinja2

from study.runs.experiment import Answer
from study.runs.provenance import REPO_ROOT
from study.report.format import PROSE_FIGURES, experiment_words, names, text
from study.report.runs import pin_apart, release_span, span
from study.compare.stats import Estimate

_quoted: list = []  # every number `|fmt` printed since the last `say`


def _fmt(value, figures: int = PROSE_FIGURES) -> str:
    _quoted.extend([v for v in (value.value, value.lo, value.hi) if v is not None]
                   if isinstance(value, Estimate) else [value])
    return text(value, figures)


_HIDDEN = 0xF0000  # a verbatim value's whitespace, moved to a private-use plane until `say` ends


def _verbatim(value) -> str:
    return re.sub(r"\s", lambda m: chr(_HIDDEN + ord(m.group())), str(value))


class _CompiledTemplates(jinja2.FileSystemBytecodeCache):
    """Each template compiled once, not once a process (about 0.2 s of every report): kept in
    Jinja2's folder for its user under the system's temporary folder, keyed by the template's
    path and checked against its source. As Python's own bytecode: read where it is there,
    written unless PYTHONDONTWRITEBYTECODE says not to, passed over where it cannot be."""

    def dump_bytecode(self, bucket) -> None:
        if sys.dont_write_bytecode:
            return
        try:
            super().dump_bytecode(bucket)
        except OSError:
            pass


def _compiled_templates() -> jinja2.BytecodeCache | None:
    try:
        return _CompiledTemplates()
    except (OSError, RuntimeError):  # no private folder to be had in the temporary folder
        return None


ENV = jinja2.Environment(loader=jinja2.FileSystemLoader(REPO_ROOT),
                         undefined=jinja2.StrictUndefined, extensions=["jinja2.ext.do"],
                         autoescape=False, bytecode_cache=_compiled_templates())
ENV.filters.update(fmt=_fmt, names=names, span=span, verbatim=_verbatim, releases=release_span,
                   words=experiment_words, pin_apart=pin_apart)


def macros(path: str):
    """The macros of a template file (a path from the repository's root)."""
    return ENV.get_template(path.replace(os.sep, "/")).module


def say(module, name: str, **facts) -> str:
    """One macro's text on one line."""
    _quoted.clear()
    words = " ".join(str(getattr(module, name)(**facts)).split())
    words = re.sub(r" ([,.;:)])", r"\1", words)  # a template's line breaks before punctuation
    return re.sub("[\U000F0000-\U000FFFFF]", lambda m: chr(ord(m.group()) - _HIDDEN), words)


def answer(module, question: str, tables: tuple[str, ...], **facts) -> Answer:
    """The macro `answer_<question>` as the report's answer, with the numbers it quoted."""
    words = say(module, f"answer_{question}", **facts)
    return Answer(question, words, tables, tuple(_quoted))

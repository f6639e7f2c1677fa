"""The experiment contract: what every module in experiments/ declares, checked at registration.

An experiment measures, then summarises, then renders, in three separate steps:

    cases(scope) -> [case]                 the parameter sets to run ({"inits": K} too, where
                                           counts_inits says it takes --inits)
    run_case(device, **case) -> [record]   raw records of one case; no I/O, no formatting
    summarise(runs) -> summary             pure: typed data (dataclasses, numbers as numbers)
                                           from the loaded runs, any mix of them
    render(summary) -> Rendered            pure: tables, findings, answers and figures from the
                                           summary

    >>> EXPERIMENT = Experiment(name=NAME, ..., comparison=Comparison(("dataset", "rule")))

`Comparison` declares how a rerun is compared with the reference: which record fields name a
cell, which fields are machine noise, the tolerance, or derived cells (timing ratios) instead.
"""
import inspect
from dataclasses import dataclass, field
from typing import Callable

from study.runs.provenance import SCOPES


@dataclass(frozen=True)
class Finding:
    """One sentence of the report's Findings: the fact first, then the runs it holds for."""
    text: str
    table: str  # the id of the table that backs it


# worded in study/report/document.j2
QUESTIONS = ("twins", "zero_point", "clone", "net", "cost", "transforms")


@dataclass(frozen=True)
class Answer:
    """The report's answer to one of the study's questions (QUESTIONS): at most four plain
    sentences, each number with its interval where it has one, every number a value of a
    table it links."""
    question: str
    text: str
    tables: tuple[str, ...]
    quoted: tuple = ()  # every number the text prints, as the numbers they are


@dataclass
class Rendered:
    tables: list  # of study.report.Table
    findings: list[Finding] = field(default_factory=list)
    # path -> (a function drawing the PNG, alt text): drawn only when the report is written
    figures: dict[str, tuple[Callable[[], bytes], str]] = field(default_factory=dict)
    answers: list[Answer] = field(default_factory=list)


@dataclass(frozen=True)
class Comparison:
    """How a rerun is compared with the reference, cell by cell (study.compare.reproduction)."""
    record_key: tuple[str, ...]  # the record fields that name a cell
    not_compared: tuple[str, ...] = ()  # fields that vary with the machine, not the result
    tolerance: float = 0.0  # relative, for derived cells
    derived_cells: Callable | None = None  # run -> {name: Cell}, not record leaves
    # a key field that runs before it was recorded lack, and the value each of them had:
    # without it, no cell of such a run would meet a newer run's of the same name
    key_defaults: dict = field(default_factory=dict)


@dataclass(frozen=True)
class Experiment:
    name: str
    description: str  # one line, for `study list` and the section heading; each experiment
    # keeps these two in its prose.j2 with its other words
    question: str  # one sentence
    seed: int | None  # recorded in provenance; None where the inputs are fixed by hand
    tables: tuple[str, ...]  # table ids in report order: a table keeps its number
    cases: Callable
    run_case: Callable
    summarise: Callable
    render: Callable
    comparison: Comparison
    scopes: tuple[str, ...] = ("quick", "standard")
    counts_inits: bool = False  # cases(scope, inits=K) takes --inits
    appendix: tuple[str, ...] = ()  # tables listed in reports/APPENDIX.md, not in REPORT.md
    listings: tuple[str, ...] = ()  # tables written as CSV files only, named in the appendix
    methodology: tuple[str, ...] = ()  # tables shown in the report's Methodology section
    timed: bool = False  # measures wall time: never run beside another experiment (--jobs)
    history_scope: str | None = None  # the release history runs it at this scope (None: not)
    across_devices: bool = True  # its cells compare across devices (timing's are per device)


class ContractError(TypeError):
    """An experiment module that does not declare what the contract asks for."""


def register(experiment, module_name: str) -> Experiment:
    """Check an experiment module's EXPERIMENT before anything uses it."""
    if not isinstance(experiment, Experiment):
        raise ContractError(f"experiments.{module_name} must define EXPERIMENT = Experiment(...)")
    problems = []
    if experiment.name != module_name:
        problems.append(f"name {experiment.name!r} is not its module's")
    if not experiment.tables or len(set(experiment.tables)) != len(experiment.tables):
        problems.append("tables must be distinct ids, at least one")
    placed = experiment.appendix + experiment.listings + experiment.methodology
    if not set(placed) <= set(experiment.tables) or len(set(placed)) != len(placed):
        problems.append("appendix, listings and methodology name declared tables, once each")
    if not {"quick", "standard"} <= set(experiment.scopes) <= set(SCOPES):
        problems.append(f"scopes must include quick and standard, within {SCOPES}")
    for part in ("cases", "run_case", "summarise", "render"):
        if not callable(getattr(experiment, part)):
            problems.append(f"{part} is not callable")
    if not problems:
        takes = "inits" in inspect.signature(experiment.cases).parameters
        if takes != experiment.counts_inits:
            problems.append("cases takes inits exactly when counts_inits is set")
        if not experiment.comparison.record_key:
            problems.append("comparison.record_key names no field")
    if problems:
        raise ContractError(f"experiments.{module_name}: {'; '.join(problems)}")
    return experiment

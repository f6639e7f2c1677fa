"""Seed 002: backward() on a non-scalar output, .grad accumulation, and jax.vjp.

    python -m study run nonscalar_backward
"""
from experiments.nonscalar_backward import measure, report, summary
from study.report.prose import say
from study.runs.experiment import Comparison, Experiment

EXPERIMENT = Experiment(
    name="nonscalar_backward",
    description=say(report.PROSE, "description"),
    question=say(report.PROSE, "question"),
    seed=None, tables=("side_by_side",), appendix=("side_by_side",),
    cases=measure.cases, run_case=measure.run_case,
    summarise=summary.summarise, render=report.render,
    comparison=Comparison(record_key=("framework", "step")))

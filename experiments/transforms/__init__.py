"""Which transformations each way of writing a custom ReLU rule survives, in torch and JAX.

    python -m study run transforms
"""
from experiments.transforms import measure, report, summary
from study.report.prose import say
from study.runs.experiment import Comparison, Experiment

EXPERIMENT = Experiment(
    name="transforms", description=say(report.PROSE, "description"),
    question=say(report.PROSE, "question"),
    seed=None, tables=("matrix",), cases=measure.cases, run_case=measure.run_case,
    summarise=summary.summarise, render=report.render,
    comparison=Comparison(record_key=("part", "rule", "transformation"),
                          not_compared=("style", "name")))

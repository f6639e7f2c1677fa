"""SGD with ReLU'(0) = 0, 0.5, 1 in both frameworks and four precisions.

    python -m study run training
"""
from experiments.training import measure, report, summary
from study.report.prose import say
from study.runs.experiment import Comparison, Experiment

EXPERIMENT = Experiment(
    name="training",
    description=say(report.PROSE, "description"),
    question=say(report.PROSE, "question"),
    seed=measure.SEED, tables=("divergence", "runs"), cases=measure.cases,
    run_case=measure.run_case,
    summarise=summary.summarise, render=report.render,
    comparison=Comparison(record_key=("dataset", "dtype", "rule")), listings=("runs",))

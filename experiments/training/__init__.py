"""SGD with ReLU'(0) = 0, 0.5, 1 in both frameworks and four precisions.

    python -m study run training
"""
from experiments.training import measure, report, summary
from study.runs.experiment import Comparison, Experiment

EXPERIMENT = Experiment(
    name="training",
    description="SGD with ReLU'(0) = 0, 0.5, 1 in both frameworks and four precisions",
    question="Does the value of ReLU'(0) change a real training run, in which precisions, and how "
             "far apart do the two frameworks drift?",
    seed=measure.SEED, tables=("divergence", "runs"), cases=measure.cases,
    run_case=measure.run_case,
    summarise=summary.summarise, render=report.render,
    comparison=Comparison(record_key=("dataset", "dtype", "rule")), listings=("runs",))

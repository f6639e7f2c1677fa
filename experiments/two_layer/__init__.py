"""Seed 001's two-layer net under every ReLU rule of both frameworks.

    python -m study run two_layer

loss = sum((act(x @ w1) @ w2 - 1)^2) in float32, with seed 001's exact x, w1, w2, plus two
seeded random variants: one with no exact-zero pre-activation, one with many forced.
"""
from experiments.two_layer import measure, report, summary
from study.report.prose import say
from study.runs.experiment import Comparison, Experiment

EXPERIMENT = Experiment(
    history_scope="standard",
    name="two_layer",
    description=say(report.PROSE, "description"),
    question=say(report.PROSE, "question"),
    seed=measure.SEED, tables=("ties", "diff_vs_relu", "gradients"), cases=measure.cases,
    run_case=measure.run_case, summarise=summary.summarise, render=report.render,
    comparison=Comparison(record_key=("dataset", "rule", "dtype"), not_compared=("name",)),
    appendix=("diff_vs_relu",), listings=("gradients",))

"""Why seed 000's MyReLU clones grad_output: the same rule editing grad_output in place.

    python -m study run clone_hazard

Each case builds a graph in which autograd may hand the rule a gradient buffer that something
else also reads (fan-out, skip connections, expanded gradients of sum/mean), and compares the
in-place rule and the cloning seed rule with the built-in.
"""
from experiments.clone_hazard import measure, report, summary
from study.report.prose import say
from study.runs.experiment import Comparison, Experiment

EXPERIMENT = Experiment(
    name="clone_hazard",
    description=say(report.PROSE, "description"),
    question=say(report.PROSE, "question"),
    seed=None, tables=("hazard",), appendix=("hazard",),
    cases=measure.cases, run_case=measure.run_case,
    summarise=summary.summarise, render=report.render,
    comparison=Comparison(record_key=("case", "dtype")))

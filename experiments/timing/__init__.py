"""What custom rules cost: time and memory of ReLU rules and the two-layer net, both frameworks.

    python -m study run timing            # rules at 8, 10^6, 10^7 elements, seed and mid nets
    python -m study run timing --quick    # 10^3 and 10^6 (compiled: 10^6), no self-checks
    python -m study run timing --full     # up to 10^8, the large net, SGD steps
"""
from experiments.timing import harness, measure, records, report, summary
from study.report.prose import say
from study.runs.experiment import Comparison, Experiment

EXPERIMENT = Experiment(
    across_devices=False,
    name="timing", description=say(report.PROSE, "description"),
    question=say(report.PROSE, "question"),
    seed=harness.SEED, tables=("cost", "harness", "nets", "compile", "parts", "probes", "rules",
                               "kept", "fresh", "copies", "ways", "cross", "torch_vs_jax",
                               "bandwidth"),
    scopes=("quick", "standard", "full"), cases=measure.cases, run_case=measure.run_case,
    summarise=summary.summarise, render=report.render, timed=True,
    comparison=Comparison(record_key=("part", "framework", "mode", "rule", "n", "net", "workload",
                                      "what"),
                          tolerance=records.REPRODUCTION_TOLERANCE,
                          derived_cells=records.comparable_cells),
    appendix=("harness", "nets", "compile", "parts", "probes"),
    listings=("rules", "kept", "fresh", "copies", "ways", "cross", "torch_vs_jax", "bandwidth"))

"""What custom rules cost: time and memory of ReLU rules and the two-layer net, both frameworks.

    python -m study run timing            # rules at 8, 10^6, 10^7 elements, seed and mid nets
    python -m study run timing --quick    # 10^3 and 10^6 (compiled: 10^6), no self-checks
    python -m study run timing --full     # up to 10^8, the large net, SGD steps
"""
from experiments.timing import harness, measure, records, report, summary, upgrade
from study.runs.experiment import Comparison, Experiment

EXPERIMENT = Experiment(
    upgrade=upgrade.upgrade, across_devices=False,
    name="timing", description="time and memory of each rule and of the net, eager and compiled",
    question="What does a custom ReLU rule cost in time and memory against the built-in, eager and "
             "compiled, in each framework, and how close does it come to the machine's limits?",
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

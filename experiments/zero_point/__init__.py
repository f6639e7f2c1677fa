"""Zero-point atlas: what every rule returns at its kinks, per framework, dtype, mode, placement.

    python -m study run zero_point          # eager: torch at every placement, JAX in 2-D rows;
                                            # compiled: float32, torch in fill, JAX in 2-D rows
    python -m study run zero_point --full   # eager JAX at every placement; compiled in every
                                            # dtype and at several placements

Each op is probed at its own kinks and its look-alike's (k, k ± 1 ulp), at signed zeros, the
smallest subnormals and normal, NaN and ±inf, in value, reverse, forward and second-order mode,
at several placements (study.measure.placement), eagerly and compiled (study.measure.compiled); and
each built-in's shape at its own kinks is read off its float64 forward (study.conformance), so that
the report judges its derivative there by PyTorch's documented rule and by Clarke's. A built-in of
several inputs (reductions, pooling, sort, a norm, maximum of arrays) is measured at its ties
instead (the tables ties and tie_kinks), in every dtype, eagerly and compiled.
"""
from experiments.zero_point import atlas, measure, report, summary
from study.report.prose import say
from study.runs.experiment import Comparison, Experiment

EXPERIMENT = Experiment(
    history_scope="standard",
    name="zero_point",
    description=say(report.PROSE, "description"),
    question=say(report.PROSE, "question"),
    seed=None, tables=("conventions", "ties", "kinks", "compiled", "compiled_cells", "releases",
                       "conformance", "conformance_listing", "placement", "subnormals", "custom",
                       "atlas", "gradcheck", "pairs", "porting"),
    scopes=("quick", "standard", "full"), cases=measure.cases, run_case=measure.run_case,
    summarise=summary.summarise, render=report.render,
    comparison=Comparison(record_key=("part", "rule", "dtype", "point"),
                          derived_cells=atlas.comparable_cells),
    appendix=("kinks", "compiled", "releases", "conformance", "placement", "subnormals",
              "custom"),
    listings=("compiled_cells", "atlas", "gradcheck", "pairs", "porting", "conformance_listing"))

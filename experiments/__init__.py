"""The experiment registry: each experiment defines EXPERIMENT, a `study.runs.experiment.Experiment`
(cases, run_case, summarise, render and how reruns are compared), checked when loaded here.

Report order (and so table numbering) follows NAMES: append new experiments at the end.
"""
import importlib

from study.runs.experiment import Experiment, register

NAMES = ("two_layer", "zero_point", "transforms", "clone_hazard", "nonscalar_backward",
         "training", "bifurcation", "timing")


def load(name: str) -> Experiment:
    module = importlib.import_module(f"experiments.{name}")
    return register(getattr(module, "EXPERIMENT", None), name)


def all_experiments() -> list[Experiment]:
    return [load(name) for name in NAMES]

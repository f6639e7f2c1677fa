"""The experiment registry. Each module declares NAME, DESCRIPTION, QUESTION (one sentence),
SEED, TABLES, RECORD_KEY (the record fields that name a cell for reproduction checks), SCOPES
(default quick and standard; some add full) and

    cases(scope: str) -> list[dict]           # the parameter sets to run in that scope
    run_case(device, **case) -> list[dict]    # raw records for one case; no I/O, no formatting
    tables(runs) -> list[study.tables.Table]  # pure aggregation of loaded runs, any mix of them

and optionally findings(runs), figures(runs), comparable_cells(run) and NOT_COMPARED.

Report order (and so table numbering) follows NAMES: append new experiments at the end.
"""
import importlib

NAMES = ("two_layer", "zero_point", "transforms", "clone_hazard", "nonscalar_backward",
         "training", "bifurcation", "timing")


def load(name: str):
    return importlib.import_module(f"experiments.{name}")


def all_experiments() -> list:
    return [load(name) for name in NAMES]

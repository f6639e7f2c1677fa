"""Result files written by older code, brought to today's record shapes when loaded.

study.runs.results.ready applies each experiment's `upgrade` (its Experiment's, from its own
package) to every loaded run after its errata (which name records as they were stored), so
summaries, comparisons and the report read one shape. An upgrade fills in only what the older
code left implicit, with the value that code used, and lists the fields it filled under
"upgraded_fields" (never compared as cells), or rewrites a stored cell in today's form
(study.compare.cells); it never changes a measured number. Failed and withdrawn records are
left as stored. The files on disk keep what was measured.
"""
from typing import Callable

Fill = Callable[[dict], dict]  # a record -> the fields to fill in ({} where it is today's)


def filled(records: list[dict], fill: Fill) -> list[dict]:
    """The records with `fill`'s fields added and listed; failed and withdrawn ones as stored."""
    out = []
    for rec in records:
        more = {} if "case_error" in rec or "withdrawn" in rec else fill(rec)
        out.append({**rec, **more, "upgraded_fields": sorted(more)} if more else rec)
    return out


def standing(records: list[dict]) -> list[dict]:
    """The records that neither failed nor were withdrawn."""
    return [r for r in records if "case_error" not in r and "withdrawn" not in r]


def upgrade(experiment, records: list[dict]) -> list[dict]:
    """The records in today's shapes, by the experiment's own upgrade (the same records where
    it has none, or nothing is old)."""
    return records if experiment.upgrade is None else experiment.upgrade(records)

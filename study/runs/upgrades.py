"""Result files written by older code, brought to today's record shapes when loaded.

study.runs.results.ready applies each experiment's `upgrade` (its Experiment's, from its own
package) to every loaded run after its errata (which name records as they were stored), so
summaries, comparisons and the report read one shape. An upgrade fills in only what the older
code left implicit, with the value that code used, and lists the fields it filled under
"upgraded_fields" (never compared as cells), or rewrites a stored cell in today's form
(study.compare.cells); it never changes a measured number. Failed and withdrawn records are
left as stored. The files on disk keep what was measured.
"""
import contextlib
from typing import Callable

Fill = Callable[[dict], dict]  # a record -> the fields to fill in ({} where it is today's)

# While `shared` runs: (which upgrade, id of a record) -> (the record, its upgrade): the record
# kept beside it, so that its id is its own
_upgraded: dict | None = None


@contextlib.contextmanager
def shared():
    """Within it, each record is upgraded once by `each`, however many runs hold it: the loader
    shares a record among the files that store the same one (study.runs.results.parse_result),
    and the upgrade of one record is one record too, shared as it was."""
    global _upgraded
    outer, _upgraded = _upgraded, {} if _upgraded is None else _upgraded
    try:
        yield
    finally:
        _upgraded = outer


def each(upgrade: Callable[[dict], dict], records: list[dict], which=None) -> list[dict]:
    """[upgrade(r) for r in records], once per record within `shared`. `which` names the
    upgrade where a new function makes the same one on each call (`upgrade` itself else)."""
    if _upgraded is None:
        return list(map(upgrade, records))
    which = upgrade if which is None else which
    out = []
    for rec in records:
        known = _upgraded.get((which, id(rec)))
        if known is None:
            known = _upgraded[which, id(rec)] = rec, upgrade(rec)
        out.append(known[1])
    return out


def filled(records: list[dict], fill: Fill) -> list[dict]:
    """The records with `fill`'s fields added and listed; failed and withdrawn ones as stored."""
    def one(rec: dict) -> dict:
        more = {} if "case_error" in rec or "withdrawn" in rec else fill(rec)
        return {**rec, **more, "upgraded_fields": sorted(more)} if more else rec
    return each(one, records, (filled, fill))


def standing(records: list[dict]) -> list[dict]:
    """The records that neither failed nor were withdrawn."""
    return [r for r in records if "case_error" not in r and "withdrawn" not in r]


def upgrade(experiment, records: list[dict]) -> list[dict]:
    """The records in today's shapes, by the experiment's own upgrade (the same records where
    it has none, or nothing is old)."""
    return records if experiment.upgrade is None else experiment.upgrade(records)

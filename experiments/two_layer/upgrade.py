"""two_layer records of older code in today's shapes (study.runs.upgrades)."""
from study.measure.rule import REFERENCE_RELU
from study.runs.upgrades import filled


def _fill(rec: dict) -> dict:
    if "reference_rule" not in rec and "framework" in rec:  # each framework's relu, then as now
        return {"reference_rule": REFERENCE_RELU[rec["framework"]].key}
    return {}


def upgrade(records: list[dict]) -> list[dict]:
    return filled(records, _fill)

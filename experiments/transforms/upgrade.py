"""transforms records of older code in today's shapes (study.runs.upgrades)."""
from study.measure.rule import REFERENCE_RELU
from study.runs.upgrades import filled


def _fill(rec: dict) -> dict:
    if "kind" not in rec and "rule" in rec:  # before records said: the references were built-ins
        builtins = {r.key for r in REFERENCE_RELU.values()}
        return {"kind": "builtin" if rec["rule"] in builtins else "custom"}
    return {}


def upgrade(records: list[dict]) -> list[dict]:
    return filled(records, _fill)

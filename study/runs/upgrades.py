"""Result files written by older code, brought to today's record shapes in one place.

study.runs.results.ready applies `upgrade(experiment, records)` to every loaded run after its errata
(which name records as they were stored), so summaries, comparisons and the report read one
shape. Each step fills in only what the older code left implicit, with the value that code
used, and lists the fields it filled under "upgraded_fields" (never compared as cells); it
never changes a measured number. Failed and withdrawn records are left as stored. The files on
disk keep what was measured.
"""
from study.measure.rules import by_key

# timing before its plan record: each framework's relu was the reference, and these pairs were
# compared across frameworks
_TIMING_PLAN = {
    "part": "plan",
    "reference_rules": {"torch": "torch_relu", "jax": "jax_relu"},
    "torch_jax_pairs": [
        ["relu", "torch_relu", "jax_relu"], ["custom c=0", "torch_custom_c0", "jax_custom_c0"],
        ["custom_op / nondiff_argnums", "torch_custom_op_c0", "jax_custom_nondiff_c0"],
        ["bool mask", "torch_custom_bool_mask", "jax_custom_bool_mask"],
        ["bit mask", "torch_custom_bit_mask", "jax_custom_bit_mask"]]}

_BUILTIN_RELUS = {"torch": "torch_relu", "jax": "jax_relu"}


def _zero_point(rec: dict) -> dict:
    filled = {}
    if rec.get("part") == "atlas" and "look_alike" not in rec:
        # before atlas records named their look-alike (9aa9177 and earlier), the pairs were
        # those the registry declares today for that code's ops (the later pairs are of ops
        # it did not have)
        filled["look_alike"] = by_key(rec["rule"]).look_alike
    # eager atlas records before compiled ones
    if rec.get("part") == "atlas" and "modes" not in rec:
        filled["modes"] = ["value", "reverse", "forward", "second"]
    # the NaN probe was labelled "nan" until 2026-11-26: a label pandas reads as a missing value
    if rec.get("part") == "atlas" and "nan" in rec.get("inputs", ()):
        filled["inputs"] = ["+nan" if label == "nan" else label for label in rec["inputs"]]
    return filled


def _timing(rec: dict) -> dict:
    if rec.get("part") == "machine" and "what" in rec and "into" not in rec:
        # torch copied into an existing buffer; jax.jit's x + 0.0 wrote a new one
        return {"into": "preallocated" if rec["what"] == "copy torch" else "new buffer"}
    return {}


def _transforms(rec: dict) -> dict:
    if "kind" not in rec and "rule" in rec:
        return {"kind": "builtin" if rec["rule"] in _BUILTIN_RELUS.values() else "custom"}
    return {}


def _two_layer(rec: dict) -> dict:
    if "reference_rule" not in rec and "framework" in rec:
        return {"reference_rule": _BUILTIN_RELUS[rec["framework"]]}
    return {}


_FILLS = {"zero_point": _zero_point, "timing": _timing, "transforms": _transforms,
          "two_layer": _two_layer}


def upgrade(experiment: str, records: list[dict]) -> list[dict]:
    """The records in today's shapes (the same records where nothing is old)."""
    fill = _FILLS.get(experiment)
    if fill is None:
        return records
    out = []
    for rec in records:
        filled = {} if "case_error" in rec or "withdrawn" in rec else fill(rec)
        out.append({**rec, **filled, "upgraded_fields": sorted(filled)} if filled else rec)
    if experiment == "timing" and any("case_error" not in r and "withdrawn" not in r for r in out) \
            and not any(r.get("part") == "plan" for r in out):
        out.append({**_TIMING_PLAN, "upgraded_fields": sorted(_TIMING_PLAN)})
    return out

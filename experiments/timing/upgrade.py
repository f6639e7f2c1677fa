"""timing records of older code in today's shapes (study.runs.upgrades)."""
from study.runs.upgrades import filled, standing

# before its plan record: each framework's relu was the reference, and these pairs were compared
# across frameworks
PLAN_BEFORE_IT_WAS_RECORDED = {
    "part": "plan",
    "reference_rules": {"torch": "torch_relu", "jax": "jax_relu"},
    "torch_jax_pairs": [
        ["relu", "torch_relu", "jax_relu"], ["custom c=0", "torch_custom_c0", "jax_custom_c0"],
        ["custom_op / nondiff_argnums", "torch_custom_op_c0", "jax_custom_nondiff_c0"],
        ["bool mask", "torch_custom_bool_mask", "jax_custom_bool_mask"],
        ["bit mask", "torch_custom_bit_mask", "jax_custom_bit_mask"]]}


def _fill(rec: dict) -> dict:
    if rec.get("part") == "machine" and "what" in rec and "into" not in rec:
        # torch copied into an existing buffer; jax.jit's x + 0.0 wrote a new one
        return {"into": "preallocated" if rec["what"] == "copy torch" else "new buffer"}
    return {}


def upgrade(records: list[dict]) -> list[dict]:
    out = filled(records, _fill)
    if standing(out) and not any(r.get("part") == "plan" for r in out):
        out.append({**PLAN_BEFORE_IT_WAS_RECORDED,
                    "upgraded_fields": sorted(PLAN_BEFORE_IT_WAS_RECORDED)})
    return out

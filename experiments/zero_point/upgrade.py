"""zero_point records of older code in today's shapes (study.runs.upgrades): fields it left
implicit, and atlas cells in the one stored form (study.compare.cells), which older code wrote
with a bare string for an error and one string for a mode where every input raised."""
from study.runs.upgrades import each, filled

ALL_MODES = ["value", "reverse", "forward", "second"]

# Before atlas records named their look-alike (9aa9177 and earlier), the pairs were those the
# registry declares today for that code's ops (the later pairs are of ops it did not have).
# Written out, so that reading those records builds no registry, and so imports no framework;
# a test holds them to the registry.
OLD_LOOK_ALIKE_PAIRS = (
    ("torch_abs", "jax_abs"), ("torch_abs_average", "jax_abs_average"),
    ("torch_clamp_0_6", "jax_clip_0_6"), ("torch_clamp_min0", "jax_clip0"),
    ("torch_custom_op_c0", "jax_custom_nondiff_c0"), ("torch_hardtanh", "jax_hard_tanh"),
    ("torch_leaky_relu0", "jax_leaky_relu0"), ("torch_leaky_relu001", "jax_leaky_relu001"),
    ("torch_maximum0", "jax_maximum0"), ("torch_mul_mask", "jax_mul_mask"),
    ("torch_myrelu_seed", "jax_seed_relu"), ("torch_relu", "jax_relu"),
    ("torch_relu6", "jax_relu6"), ("torch_where_ge", "jax_where_ge"),
    ("torch_where_gt", "jax_where_gt"))
OLD_WITHOUT_LOOK_ALIKE = (
    "jax_custom_bit_mask", "jax_custom_bool_mask", "jax_custom_c0", "jax_custom_c0.5",
    "jax_custom_c1", "jax_custom_jvp_c0", "jax_custom_nondiff_c1", "jax_lax_clamp_0_6",
    "jax_lax_max_zeros", "jax_relu_nan_passes", "jax_softplus100", "torch_F_relu",
    "torch_clamp_min_fn", "torch_custom_bit_mask", "torch_custom_bool_mask", "torch_custom_c0",
    "torch_custom_c0.5", "torch_custom_c0_jvp", "torch_custom_c0_once", "torch_custom_c0_vmap",
    "torch_custom_c0_vmap_jvp", "torch_custom_c1", "torch_custom_op_c1",
    "torch_custom_op_vmap_c0", "torch_custom_op_vmap_c1", "torch_max_zeros", "torch_nn_ReLU",
    "torch_softplus100", "torch_threshold")
OLD_LOOK_ALIKES = {**{a: b for a, b in OLD_LOOK_ALIKE_PAIRS},
                   **{b: a for a, b in OLD_LOOK_ALIKE_PAIRS},
                   **dict.fromkeys(OLD_WITHOUT_LOOK_ALIKE)}


def old_look_alike(key: str) -> str | None:
    if key in OLD_LOOK_ALIKES:
        return OLD_LOOK_ALIKES[key]
    from study.measure.rules import look_alike_of  # an op not listed: the registry's word
    return look_alike_of(key)


def _fill(rec: dict) -> dict:
    more = {}
    if rec.get("part") == "atlas" and "look_alike" not in rec:
        more["look_alike"] = old_look_alike(rec["rule"])
    if rec.get("part") == "atlas" and "modes" not in rec:  # eager records before compiled ones
        more["modes"] = list(ALL_MODES)
    # the NaN probe was labelled "nan" until 2026-11-26: a label pandas reads as a missing value
    if rec.get("part") == "atlas" and "nan" in rec.get("inputs", ()):
        more["inputs"] = ["+nan" if label == "nan" else label for label in rec["inputs"]]
    return more


def stored_cell(old):
    """One cell as older code stored it, in today's form: a bare string was an error line."""
    if isinstance(old, str):
        return {"error": old}
    if isinstance(old, dict) and "values" in old:
        return {**old, "values": [stored_cell(v) for v in old["values"]]}
    return old


def _older(stored) -> bool:
    """Whether stored_cell would rewrite the cell: a bare string, here or among its values."""
    return isinstance(stored, str) or (
        isinstance(stored, dict) and "values" in stored and any(map(_older, stored["values"])))


_PLAIN = frozenset((float, int, bool, type(None)))  # cells no older form wrote otherwise


def _cells_today(rec: dict) -> dict:
    """The record, or a copy with its older cells rewritten."""
    if rec.get("part") != "atlas" or "case_error" in rec or "withdrawn" in rec:
        return rec
    today = {}
    for mode in rec.get("modes", ALL_MODES):
        cells = rec.get(mode)
        if mode in rec.get("withdrawn_fields", {}) or cells is None:
            continue
        if isinstance(cells, str):  # one error line for every input of the mode
            today[mode] = [{"error": cells}] * len(rec["inputs"])
        elif not _PLAIN.issuperset(map(type, cells)) and any(map(_older, cells)):
            today[mode] = [stored_cell(c) for c in cells]
    return {**rec, **today} if today else rec


def upgrade(records: list[dict]) -> list[dict]:
    return each(_cells_today, filled(records, _fill))

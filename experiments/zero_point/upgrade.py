"""zero_point records of older code in today's shapes (study.runs.upgrades): fields it left
implicit, and atlas cells in the one stored form (study.compare.cells), which older code wrote
with a bare string for an error and one string for a mode where every input raised."""
from study.runs.upgrades import filled

ALL_MODES = ["value", "reverse", "forward", "second"]


def _fill(rec: dict) -> dict:
    from study.measure.rules import look_alike_of
    more = {}
    if rec.get("part") == "atlas" and "look_alike" not in rec:
        # before atlas records named their look-alike (9aa9177 and earlier), the pairs were
        # those the registry declares today for that code's ops (the later pairs are of ops
        # it did not have)
        more["look_alike"] = look_alike_of(rec["rule"])
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


def _cells_today(rec: dict) -> dict:
    if rec.get("part") != "atlas" or "case_error" in rec or "withdrawn" in rec:
        return rec
    out = dict(rec)
    for mode in rec.get("modes", ALL_MODES):
        cells = rec.get(mode)
        if mode in rec.get("withdrawn_fields", {}) or cells is None:
            continue
        if isinstance(cells, str):  # one error line for every input of the mode
            out[mode] = [{"error": cells}] * len(rec["inputs"])
        elif any(isinstance(c, (str, dict)) for c in cells):
            out[mode] = [stored_cell(c) for c in cells]
    return out


def upgrade(records: list[dict]) -> list[dict]:
    return [_cells_today(r) for r in filled(records, _fill)]

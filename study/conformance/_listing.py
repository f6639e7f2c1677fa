"""Reading kink records (study.conformance._kinks) back: each stored shape as a KinkShape, both
verdicts on the derivative the run measured, and the built-ins that break the documented rule in
some release. No op is called here: the rows are a function of the records.

PyTorch's documented rule is applied to both frameworks (JAX documents none). An op judged
jointly (a tie) is judged by its joint row; its "x" row is shown beside it."""
import pandas as pd

from study.conformance._history import in_version_order
from study.conformance._kinks import shape_of
from study.conformance._verdicts import clarke_verdict, documented_verdict


# the listing's columns: the kink, the judgement's operands, the limits (Estimates: value and
# error bounds), the measured value, and both verdicts
LISTING_COLUMNS = ["framework", "release", "run", "op", "kink", "over", "operand", "f'(k−)",
                   "f'(k+)", "f'' sign (k−)", "f'' sign (k+)", "jump", "measured", "error",
                   "judged", "documented rule", "follows", "clarke", "minimum-norm"]


def _judged(key: dict, operands: list[str], stored: dict, measured, judged: bool,
            dtype: str) -> list[dict]:
    """One row per operand of one judgement: the limits, the measured value and both verdicts
    (none for a composition, or where the measured derivative raised)."""
    shape = shape_of(stored)
    over = ", ".join(operands)
    raised = measured if isinstance(measured, str) else None
    values = [None] * len(operands) if raised else [float(m) for m in (
        measured if isinstance(measured, list) else [measured])]
    documented = clarke = None
    if judged and not raised:
        documented = documented_verdict(shape, values, dtype)
        clarke = clarke_verdict(shape, values, dtype)
    return [{**key, "over": over, "operand": name, "f'(k−)": shape.gradient_left[i],
             "f'(k+)": shape.gradient_right[i], "f'' sign (k−)": shape.curvature_left[0],
             "f'' sign (k+)": shape.curvature_right[0], "jump": shape.jump_height,
             "measured": values[i], "error": raised, "judged": judged,
             "documented rule": documented.rule.value if documented else None,
             "follows": documented.follows if documented else None,
             "clarke": clarke.status.value if clarke else None,
             "minimum-norm": clarke.minimum_norm[i] if clarke and clarke.minimum_norm else None}
            for i, name in enumerate(operands)]


def conformance_rows(framework: str, release: str, run: str, records: list[dict]) -> list[dict]:
    """The listing's rows for one release: every kink record of the framework's built-ins, x
    alone and, at a tie, jointly; a kink the release could not read is one row with its error."""
    rows = []
    for rec in (r for r in records if r["framework"] == framework):
        key = {"framework": framework, "release": release, "run": run, "op": rec["name"],
               "kink": rec["point"]}
        if "error" in rec:
            rows.append({**key, "over": "x", "operand": "x", "error": rec["error"],
                         "judged": rec["judged"]})
            continue
        rows += _judged(key, ["x"], rec["shape"], rec["measured"], rec["judged"], rec["dtype"])
        if "tie" in rec:
            tie = rec["tie"]
            rows += _judged(key, tie["operands"], tie["shape"], tie["measured"], rec["judged"],
                            rec["dtype"])
    return rows


def _governing(listing: pd.DataFrame) -> pd.DataFrame:
    """Per op, kink and release, the judgement that counts: the joint one where there is a tie."""
    judged = listing[listing["follows"].map(lambda f: isinstance(f, bool))]
    operands = judged["over"].map(lambda over: len(over.split(", ")))
    most = operands.groupby([judged[c] for c in ("framework", "op", "kink", "release")]
                            ).transform("max")
    return judged[(operands == most) & (judged["operand"] == "x")]


def _allowed(judgement: pd.DataFrame) -> tuple[tuple[float, ...], ...]:
    """The gradients the documented rule allows, from one judgement's rows (one per operand):
    by continuity either one-sided limit; otherwise the minimum-norm element (the derivative
    itself where the op is differentiable, to within the limits' error bounds)."""
    rule = judgement["documented rule"].iloc[0]
    if rule == "by continuity":
        return tuple(tuple(e.value for e in judgement[side]) for side in ("f'(k−)", "f'(k+)"))
    if rule is None or rule == "undefined input":
        return ()
    return (tuple(e.value for e in judgement["minimum-norm"]),)


def judgements(listing: pd.DataFrame) -> list[dict]:
    """The judgement that counts per op, kink and release (the joint one at a tie), in the
    listing's order: `over`, the documented rule, the gradients it allows (`rule gives`), the
    gradient measured, `follows`, and Clarke's status. A composition, or a kink whose derivative
    raised, has none."""
    out = []
    for _, row in _governing(listing).iterrows():
        key = {c: row[c] for c in ("framework", "op", "kink", "release")}
        rows = listing[(listing["framework"] == row["framework"]) & (listing["op"] == row["op"])
                       & (listing["kink"] == row["kink"]) & (listing["release"] == row["release"])
                       & (listing["over"] == row["over"])]
        out.append({**key, "over": row["over"], "documented rule": row["documented rule"],
                    "rule gives": _allowed(rows), "measured": tuple(rows["measured"]),
                    "follows": row["follows"], "clarke": row["clarke"]})
    return out


def rule_breakers(listing: pd.DataFrame) -> list[dict]:
    """The built-ins that break the documented rule in some release, one row per op and kink:
    the rule(s) that apply and the gradients they allow (`rule gives`), the gradients measured
    where it breaks, the spans of consecutive
    releases (first, last) that break it, and `fixed_in`: the release after its last break,
    where it follows (None where the newest release measured breaks it)."""
    if not len(listing):
        return []
    gradients, allowed = {}, {}
    for key, g in listing.groupby(["framework", "op", "kink", "over", "release"], sort=False):
        gradients[key] = tuple(g["measured"])
        allowed[key] = _allowed(g)
    rows = []
    for (fw, op, kink), g in _governing(listing).groupby(["framework", "op", "kink"],
                                                          sort=False):
        order = in_version_order(list(g["release"]))
        g = g.iloc[sorted(range(len(g)), key=lambda i: order.index(g["release"].iloc[i]))]
        follows, releases = list(g["follows"]), list(g["release"])
        if all(follows):
            continue
        last_break = max(i for i, f in enumerate(follows) if not f)
        spans: list[list[str]] = []
        for i, (f, release) in enumerate(zip(follows, releases)):
            if not f and spans and not follows[i - 1]:
                spans[-1][1] = release
            elif not f:
                spans.append([release, release])
        breaking = g[[not f for f in follows]]
        rows.append({"framework": fw, "op": op, "kink": kink, "over": g["over"].iloc[0],
                     "documented rule": tuple(dict.fromkeys(breaking["documented rule"])),
                     "rule gives": tuple(dict.fromkeys(
                         a for o, r in zip(breaking["over"], breaking["release"])
                         for a in allowed[(fw, op, kink, o, r)])),
                     "measured": tuple(dict.fromkeys(
                         gradients[(fw, op, kink, o, r)]
                         for o, r in zip(breaking["over"], breaking["release"]))),
                     "breaks in": tuple(tuple(s) for s in spans),
                     "fixed_in": releases[last_break + 1] if last_break + 1 < len(g) else None})
    return rows

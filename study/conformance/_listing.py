"""Reading kink records (study.conformance._kinks) and tie records (study.conformance._tie_kinks)
back: each stored shape, both verdicts on the derivative the run measured, and the built-ins that
break the documented rule in some release. No op is called here: the rows are a function of the
records.

PyTorch's documented rule is applied to both frameworks (JAX documents none). An op judged
jointly (a tie with an operand) is judged by its joint row; its "x" row is shown beside it. A
built-in of several inputs is judged at each tie (`tie`: which inputs, and what they hold) and
output element (its op: torch.sort(x).values[2]), jointly over every input; where its own page
states another convention at a tie, `as documented` says whether it gives that."""
import pandas as pd

from study.conformance._history import in_version_order
from study.conformance._kinks import shape_of
from study.conformance._tie_verdicts import judge_tie_output
from study.conformance._verdicts import clarke_verdict, documented_verdict
from study.compare.stats import Estimate


# the listing's columns: the kink (and the tie, for a built-in of several inputs), the
# judgement's operands, the limits (Estimates: value and error bounds) or the pieces' gradients,
# the measured value, both verdicts, and the op's own documentation at a tie
LISTING_COLUMNS = ["framework", "release", "run", "op", "kink", "tie", "over", "operand",
                   "f'(k−)", "f'(k+)", "f'' sign (k−)", "f'' sign (k+)", "jump", "pieces",
                   "measured", "error", "judged", "documented rule", "follows", "clarke",
                   "minimum-norm", "as documented", "documentation"]
KEY = ("framework", "op", "kink", "tie")  # one judgement per key and release


def _judged(key: dict, operands: list[str], stored: dict, measured, raised: str | None,
            judged: bool, dtype: str) -> list[dict]:
    """One row per operand of one judgement: the limits, the measured value and both verdicts
    (none for a composition, or where the measured derivative raised: `raised`, its line)."""
    shape = shape_of(stored)
    over = ", ".join(operands)
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
    alone and, at a tie, jointly, and every tie record, jointly over the op's inputs; a kink or
    tie the release could not read is one row with its error."""
    return [{"framework": framework, "release": release, "run": run, "op": rec["name"],
             "kink": rec["point"], "tie": rec.get("tie_case"), **row}
            for rec in records if rec["framework"] == framework
            for row in (_tie_judgements(rec) if rec.get("inputs") else _judgements(rec))]


def _stored(stored) -> Estimate:
    return Estimate(*(float(v) for v in stored))


def _tie_judgements(rec: dict) -> list[dict]:
    """A tie record's rows, one per input: the pieces' gradients there, the measured gradient,
    both verdicts and the op's own documentation's (none where the gradient raised)."""
    operands, over = rec["inputs"], ", ".join(rec["inputs"])
    if rec.get("pieces") is None:  # the shape could not be read: its error
        return [{"over": over, "operand": operands[0], "error": rec["error"],
                 "judged": rec["judged"]}]
    pieces = tuple(tuple(_stored(g) for g in piece) for piece in rec["pieces"])
    raised = rec.get("error")
    doc = rec.get("documented") or {}
    verdict = None if raised or not rec["judged"] else judge_tie_output(
        pieces, rec["convexity"], rec["measured"], rec["dtype"], doc.get("gives"))
    return [{"over": over, "operand": name, "pieces": tuple(p[i].value for p in pieces),
             "measured": None if raised else float(rec["measured"][i]), "error": raised,
             "judged": rec["judged"],
             "documented rule": verdict.rule.value if verdict else None,
             "follows": verdict.follows if verdict else None,
             "clarke": verdict.clarke.value if verdict else None,
             "minimum-norm": verdict.minimum_norm[i] if verdict and verdict.minimum_norm
             else None, "as documented": verdict.as_documented if verdict else None,
             "documentation": doc.get("url")}
            for i, name in enumerate(operands)]


def _judgements(rec: dict) -> list[dict]:
    """A kink record's rows, without the columns conformance_rows keys them by."""
    if rec.get("shape") is None:  # the shape could not be read: its error
        return [{"over": "x", "operand": "x", "error": rec["error"], "judged": rec["judged"]}]
    rows = _judged({}, ["x"], rec["shape"], rec["measured"], rec.get("error"), rec["judged"],
                   rec["dtype"])
    if rec.get("tie"):
        tie = rec["tie"]
        rows += _judged({}, tie["operands"], tie["shape"], tie.get("measured"), tie.get("error"),
                        rec["judged"], rec["dtype"])
    return rows


def _governing(listing: pd.DataFrame) -> pd.DataFrame:
    """Per op, kink, tie and release, the judgement that counts: the joint one where an operand
    ties x, by its first operand's row."""
    judged = listing[listing["follows"].map(lambda f: isinstance(f, bool))]
    operands = judged["over"].map(lambda over: len(over.split(", ")))
    first = judged["over"].map(lambda over: over.split(", ")[0])
    most = operands.groupby([judged[c] for c in KEY + ("release",)], dropna=False,
                            sort=False).transform("max")
    return judged[(operands == most) & (judged["operand"] == first)]


def _allowed(judgement: pd.DataFrame) -> tuple[tuple[float, ...], ...]:
    """The gradients the documented rule allows, from one judgement's rows (one per operand):
    by continuity either one-sided limit, or any piece's gradient at a tie of several inputs;
    otherwise the minimum-norm element (the derivative itself where the op is differentiable,
    to within the limits' error bounds)."""
    return _allowed_by(judgement["documented rule"].iloc[0], *(
        judgement[c] for c in ("f'(k−)", "f'(k+)", "minimum-norm", "pieces")))


def _allowed_by(rule, left, right, minimum_norm, pieces=None) -> tuple[tuple[float, ...], ...]:
    """_allowed of a judgement's rule (its first row's) and its columns of limits, minimum-norm
    elements and (at a tie of several inputs) each operand's component of the pieces' values."""
    pieces = list(pieces) if pieces is not None else []
    if rule == "by continuity" and pieces and pieces[0] is not None:
        return tuple(zip(*pieces))
    if rule == "by continuity":
        return tuple(tuple(e.value for e in side) for side in (left, right))
    if rule is None or rule == "undefined input":
        return ()
    return (tuple(e.value for e in minimum_norm),)


def judgements(listing: pd.DataFrame) -> list[dict]:
    """The judgement that counts per op, kink and release (the joint one at a tie), in the
    listing's order: `over`, the documented rule, the gradients it allows (`rule gives`), the
    gradient measured, `follows`, and Clarke's status. A composition, or a kink whose derivative
    raised, has none."""
    out = []
    by_judgement = _rows_by(listing, KEY + ("release", "over"))
    for _, row in _governing(listing).iterrows():
        key = {c: row[c] for c in KEY + ("release",)}
        rows = pd.DataFrame(by_judgement[tuple(row[c] for c in KEY + ("release", "over"))])
        out.append({**key, "over": row["over"], "documented rule": row["documented rule"],
                    "rule gives": _allowed(rows), "measured": tuple(rows["measured"]),
                    "follows": row["follows"], "clarke": row["clarke"],
                    "as documented": row["as documented"], "documentation": row["documentation"]})
    return out


def _rows_by(frame: pd.DataFrame, columns: tuple[str, ...]) -> dict[tuple, list[dict]]:
    """The frame's rows (dicts) by their values in `columns`, as frame.groupby(list(columns),
    sort=False) groups them (a row with a missing value there in none, but for `tie`, which a
    kink of one input lacks), without a frame per group."""
    out: dict[tuple, list[dict]] = {}
    for row in frame.to_dict("records"):
        key = tuple(row[c] for c in columns)
        if not any(v is None or v != v for c, v in zip(columns, key) if c != "tie"):
            out.setdefault(key, []).append(row)
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
    for key, g in _rows_by(listing, KEY + ("over", "release")).items():
        gradients[key] = tuple(r["measured"] for r in g)
        allowed[key] = _allowed_by(g[0]["documented rule"], *(
            [r[c] for r in g] for c in ("f'(k−)", "f'(k+)", "minimum-norm", "pieces")))
    rows = []
    for (fw, op, kink, tie), g in _rows_by(_governing(listing), KEY).items():
        order = in_version_order([r["release"] for r in g])
        g = sorted(g, key=lambda r: order.index(r["release"]))
        follows, releases = [r["follows"] for r in g], [r["release"] for r in g]
        if all(follows):
            continue
        last_break = max(i for i, f in enumerate(follows) if not f)
        spans: list[list[str]] = []
        for i, (f, release) in enumerate(zip(follows, releases)):
            if not f and spans and not follows[i - 1]:
                spans[-1][1] = release
            elif not f:
                spans.append([release, release])
        breaking = [(r["over"], r["release"], r) for r, f in zip(g, follows) if not f]
        rows.append({"framework": fw, "op": op, "kink": kink, "tie": tie, "over": g[0]["over"],
                     "documented rule": tuple(dict.fromkeys(
                         r["documented rule"] for _, _, r in breaking)),
                     "rule gives": tuple(dict.fromkeys(
                         a for o, r, _ in breaking for a in allowed[(fw, op, kink, tie, o, r)])),
                     "measured": tuple(dict.fromkeys(
                         gradients[(fw, op, kink, tie, o, r)] for o, r, _ in breaking)),
                     "as documented": None if all(r["as documented"] is None
                                                  for _, _, r in breaking)
                     else all(r["as documented"] is True for _, _, r in breaking),
                     "documentation": g[0]["documentation"],
                     "breaks in": tuple(tuple(s) for s in spans),
                     "fixed_in": releases[last_break + 1] if last_break + 1 < len(g) else None})
    return rows

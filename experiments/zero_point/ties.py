"""Ties between inputs, read from a run's tables ties (the gradients measured) and tie_kinks (the
shape at each tie, study.conformance): each built-in of several inputs beside its look-alike at
the tie of every input it sees, the gradient PyTorch's documented rule gives there and which
follows (the report's table), the same for every dtype, execution, tie and output element (its
CSV), and what a port from torch to JAX changes (the answer). Pure functions of loaded runs."""
from dataclasses import dataclass

import numpy as np

from experiments.zero_point.atlas import RunAtlas
from study.compare.stats import Estimate
from study.conformance import allowed_at_tie, judge_tie_output

SHOWN = {"dtype": "float32", "execution": "eager", "at": "0"}  # the report table's cells
FOLLOWS, BREAKS = "follows", "breaks"


def as_documented(url: str) -> str:
    """The verdict on a break that the op's own page states, linking the page."""
    return f"breaks, [as documented]({url})"


@dataclass(frozen=True)
class Shape:
    """One output element of one op at one tie (its tie_kinks record): the pieces' gradients,
    convexity, and what the op's own page says it gives (None: nothing)."""
    pieces: tuple[tuple[Estimate, ...], ...]
    convexity: int
    documented: str | None
    url: str | None


def _shapes(a: RunAtlas) -> dict[tuple, Shape]:
    """(rule, tie, output) -> Shape, of the ties judged at 0 (a tie at ±0 has the same shape)."""
    out = {}
    for rec in a.tie_kinks:
        if rec.get("pieces") is None or not rec["tie_case"].endswith(" at 0"):
            continue
        doc = rec.get("documented") or {}
        out[(rec["rule"], rec["tie_case"][:-len(" at 0")], rec["output"])] = Shape(
            tuple(tuple(Estimate(*g) for g in piece) for piece in rec["pieces"]),
            rec["convexity"], doc.get("gives"), doc.get("url"))
    return out


def _verdict(shape: Shape | None, at: str, measured, dtype: str):
    """The judgement of one output element's measured gradient (None where its tie's shape
    was not read; an undefined input's where the tied inputs are NaN)."""
    if shape is None:
        return None
    return judge_tie_output(shape.pieces, shape.convexity, measured, dtype, shape.documented,
                            defined=at != "NaN")


def _jacobians(a: RunAtlas) -> dict[tuple, dict]:
    """(rule, dtype, execution, tie, at) -> {"rows": [gradient per output], "error", "row"}."""
    out: dict[tuple, dict] = {}
    for r in a.ties:
        key = (r["rule"], r["dtype"], r["execution"], r["tie"], r["at"])
        cell = out.setdefault(key, {"rows": {}, "error": r["error"], "row": r})
        if r["output"] is not None:
            cell["rows"].setdefault(r["output"], []).append(r["gradient"])
    for cell in out.values():
        cell["rows"] = [tuple(cell["rows"][j]) for j in sorted(cell["rows"])]
    return out


def tie_run(atlases: list[RunAtlas], main: RunAtlas | None) -> RunAtlas | None:
    """The run the table shows: the main run where it measured ties, else the main run of those
    that did (study.report.main_run)."""
    from study.report import main_run
    with_ties = [a for a in atlases if a.ties]
    if main is not None and main.ties:
        return main
    run = main_run([a.run for a in with_ties])
    return next((a for a in with_ties if a.run is run), None)


def listing_rows(a: RunAtlas) -> list[dict]:
    """The CSV's long form: every measured d output / d input of the run, with the documented
    rule, the gradient it gives (where it allows one), and whether the output follows it."""
    shapes, labels = _shapes(a), _labels(a)
    rows = []
    for (rule, dtype, execution, tie, at), cell in _jacobians(a).items():
        r = cell["row"]
        for j, measured in enumerate(cell["rows"] or [None]):
            v = None if measured is None else _verdict(shapes.get((rule, tie, j)), at, measured,
                                                      dtype)
            gives = v.allowed[0] if v is not None and len(v.allowed) == 1 else None
            for i, (label, g) in enumerate(zip(labels.get(rule, [None]) if measured else [None],
                                               measured or [None])):
                rows.append({"run": a.run.tag, "framework": r["framework"], "op": r["name"],
                             "dtype": dtype, "execution": execution, "tie": tie, "at": at,
                             "output": None if measured is None else j, "input": label,
                             "gradient": g, "error": cell["error"],
                             "documented rule": v.rule.value if v else None,
                             "rule gives": gives[i] if gives else None,
                             "follows": v.follows if v else None,
                             "as documented": v.as_documented if v else None})
    return rows


def _labels(a: RunAtlas) -> dict[str, list[str]]:
    """Each op's inputs, in order, as its rows name them."""
    out: dict[str, dict] = {}
    for r in a.ties:
        if r["input"] is not None:
            out.setdefault(r["rule"], {})[r["input"]] = None
    return {rule: list(inputs) for rule, inputs in out.items()}


def _gives(shape: Shape) -> object:
    """What the rule gives for one output element: a gradient, or, by continuity, any one
    piece's (in words)."""
    _, allowed = allowed_at_tie(shape.pieces, shape.convexity)
    return [e.value for e in allowed[0]] if len(allowed) == 1 else "any one piece's"


def _judged(cell: dict | None, shapes: list[Shape | None]) -> tuple[object, str | None]:
    """A framework's cell (its gradient, an output per row) and verdict, over its outputs."""
    if cell is None:
        return None, None
    if cell["error"]:
        return cell["error"], "error"
    verdicts = [_verdict(s, SHOWN["at"], m, SHOWN["dtype"]) for s, m in zip(shapes, cell["rows"])]
    rows = [list(m) for m in cell["rows"]]
    shown = rows[0] if len(rows) == 1 else rows
    if any(v is None for v in verdicts):
        return shown, None
    if all(v.follows for v in verdicts):
        return shown, FOLLOWS
    broken = [v for v in verdicts if not v.follows]
    if all(v.as_documented for v in broken):
        return shown, as_documented(shapes[0].url)
    return shown, BREAKS


def _widest(a: RunAtlas, rule: str) -> str | None:
    """The tie of every input the op sees: the declared tie with the most inputs tied."""
    ties = {r["tie"]: r["k"] for r in a.ties if r["rule"] == rule}
    return max(ties, key=ties.get, default=None)


def table_rows(a: RunAtlas) -> list[dict]:
    """The report's table: each torch op beside its JAX look-alike (then JAX's ops without
    one) at the tie of every input it sees, at 0, float32, eager: each one's gradient (a row
    per output element), what the documented rule gives, and which follows."""
    shapes, cells = _shapes(a), _jacobians(a)
    ops = list(dict.fromkeys((r["framework"], r["rule"], r["name"], r["look_alike"])
                             for r in a.ties))
    names = {rule: name for _, rule, name, _ in ops}
    pairs = [(rule, look) for fw, rule, _, look in ops if fw == "torch"]
    pairs += [(None, rule) for fw, rule, _, look in ops if fw == "jax" and look not in names]
    rows = []
    for torch_rule, jax_rule in pairs:
        tie = _widest(a, torch_rule or jax_rule)
        sides = {}
        for side, rule in (("torch", torch_rule), ("JAX", jax_rule)):
            cell = cells.get((rule, SHOWN["dtype"], SHOWN["execution"], tie, SHOWN["at"]))
            outputs = len(cell["rows"]) if cell and cell["rows"] else 1
            sides[side] = ([shapes.get((rule, tie, j)) for j in range(outputs)], cell)
        ruled = next((s for s, _ in sides.values() if s and s[0] is not None), None)
        rows.append({"torch op": names.get(torch_rule), "JAX op": names.get(jax_rule),
                     "tie": f"{tie} at 0",
                     **{f"{side} gradient": _judged(cell, s)[0]
                        for side, (s, cell) in sides.items()},
                     "rule gives": _rule_gives(ruled),
                     **{side: _judged(cell, s)[1] for side, (s, cell) in sides.items()}})
    return rows


def _rule_gives(shapes: list[Shape] | None) -> object:
    if not shapes:
        return None
    gives = [_gives(s) for s in shapes]
    return gives[0] if len(gives) == 1 else gives


def _same(a, b) -> bool:
    try:
        return np.array_equal(np.asarray(a, np.float64), np.asarray(b, np.float64),
                              equal_nan=True)
    except (TypeError, ValueError):  # an error line, or rows of other lengths
        return a == b


def port_changes(rows: list[dict]) -> list[tuple]:
    """(torch op, its gradient, JAX op, its gradient) of each pair whose gradients differ at
    the table's tie: what a port from torch to JAX changes. Those of one output element come
    first, and a change the pair before shows (min as max) after the others."""
    changes = [(r["torch op"], r["torch gradient"], r["JAX op"], r["JAX gradient"]) for r in rows
               if r["torch op"] and r["JAX op"] and all(isinstance(r[f"{side} gradient"], list)
                                                        for side in ("torch", "JAX"))
               and not _same(r["torch gradient"], r["JAX gradient"])]

    def order(i: int) -> tuple:
        _, t, _, j = changes[i]
        shown_before = any(_same(t, c[1]) and _same(j, c[3]) for c in changes[:i])
        return (isinstance(t[0], list), shown_before, i)
    return [changes[i] for i in sorted(range(len(changes)), key=order)]

"""A check's markdown (study.check.CheckResult.to_markdown), in the words of check.j2: the
first screen (the verdict, one row per kind of finding), every finding in detail, then a
section per measurement. A rule of several inputs has its ties where a rule of x has its
conventions and matches. Pure functions of a CheckResult; nothing here measures."""
import math

from study.check._findings import KINDS, Finding, PROSE, by_kind
from study.check._several import gradient_text
from study.compare.cells import Error, Placed, Value
from study.measure.inputs import ordinary_inputs
from study.measure.probe import MODES
from study.report.format import shorten, text
from study.report.prose import say
from study.report.table import Table, frame, markdown

ERROR_WIDTH = 60  # an error line in a table; the JSON keeps it whole
MAX_ROWS = 8  # cells shown where a list could be long; a count for the rest, all in the JSON
ORDINARY_LABELS = dict(ordinary_inputs("float64"))  # label -> value (in float64)


def _cell(value) -> str:
    """A measured cell in full precision: a number, an error line, or values by placement."""
    if isinstance(value, Placed):
        return shorten(value.where, ERROR_WIDTH)
    if isinstance(value, Error):
        return shorten(value.line, ERROR_WIDTH)  # the full line is in the JSON
    if isinstance(value, Value):
        return text(value.value, None)
    if isinstance(value, list):  # cells a rule takes across placements
        return " or ".join(_cell(v) for v in value)
    if isinstance(value, str):
        return shorten(value, ERROR_WIDTH)  # the full line is in the JSON
    return text(value, None) if value is not None else "—"


def _table(header: list[str], rows: list[list]) -> list[str]:
    """Rows of text (the cells formatted above, in full precision) as the report's markdown."""
    view = frame([dict(zip(header, row)) for row in rows], header)
    return markdown(Table("check", "", "", view)).split("\n")


def _say(name: str, **facts) -> str:
    return say(PROSE, name, **facts)


def _head(r) -> list[str]:
    return [_say("title", target=r.target), "", _say("rule", framework=r.framework,
                                                      style=r.style), ""]


def _first_screen(r) -> list[str]:
    """The verdict, then one row per kind of finding: severity, kind, what it means for the
    user's gradients, how many cells, and the first example with what was expected."""
    failing = [k for k, group in by_kind(r.findings).items() if k in r.fail_on
               and any(f.id not in r.accepted for f in group)]
    out = [_say("verdict", code=r.exit_code, failing=[f"`{k}`" for k in failing],
                known=len(r.accepted), fixed=len(r.fixed), unmeasured=len(r.unmeasured),
                source=r.known_source or ""), ""]
    if not r.findings:
        return out + [_say("no_findings"), ""] + _fixed(r)
    rows = []
    for kind, group in by_kind(r.findings).items():
        new = [f for f in group if f.id not in r.accepted]
        first = example(new or group)
        cells = sum(f.cells for f in group)
        rows.append([first.severity if new else "known", f"`{kind}`", KINDS[kind][1],
                     _say("cells", n=cells, known=sum(f.cells for f in group
                                                      if f.id in r.accepted)),
                     _say("example", where=first.where.example(),
                          seen=shorten(first.detail, 2 * ERROR_WIDTH),
                          expected=first.expected and shorten(first.expected, ERROR_WIDTH))])
    return (out + _table(["severity", "kind", "what it means for your gradients", "cells",
                          "first example"], rows) + [""] + _fixed(r))


def example(findings: list[Finding]) -> Finding:
    """The finding a reader recognises best: at an ordinary input (study.measure.inputs), the
    one nearest 1 in magnitude, where there is one (a fault there is no edge case); else the
    first found."""
    ordinary = [f for f in findings if f.where.input in ORDINARY_LABELS]
    if not ordinary:
        return findings[0]
    return min(ordinary, key=lambda f: abs(math.log(abs(ORDINARY_LABELS[f.where.input]))))


def _fixed(r) -> list[str]:
    out = [_say("fixed_entry", entry=e.text()) for e in r.fixed]
    out += [_say("unmeasured_entry", entry=e.text()) for e in r.unmeasured]
    return out + [""] if out else []


def _transforms(r) -> list[str]:
    if r.transforms is None:
        return []
    heading = _say("heading", section="transformations")
    if "error" in r.transforms:
        return [heading, "", _say("transforms_not_judged", error=r.transforms["error"]), ""]
    wrong = {f.where.transformation: f for f in r.findings if f.kind == "transform_wrong"}
    rows = [[col, {"ok": "✓", "wrong": "wrong (silently)"}.get(c["status"], c["status"]),
             _cell(c["detail"]) if c["status"] in ("error", "n/a") else
             "" if c["status"] == "ok" or col not in wrong else
             f"{wrong[col].detail}; expected {wrong[col].expected}"]
            for col, c in r.transforms.items()]
    return ([heading, "", _say("transforms_intro"), ""]
            + _table(["transformation", "result", "detail"], rows) + [""])


def _clone_hazard(r) -> list[str]:
    if r.clone_hazard is None:
        return []
    rows = [[c["graph"], text(c["changed"]), c["error"] or c["warning"] or ""]
            for c in r.clone_hazard]
    return ([_say("heading", section="clone hazard"), "", _say("clone_hazard_intro"), ""]
            + _table(["graph", "gradient changes", "error or warning"], rows) + [""])


def _details(r) -> list[str]:
    """Every finding by kind with its id, and each wrong kind's reproducer."""
    if not r.findings:
        return []
    out = [_say("heading", section="details"), ""]
    for kind, group in by_kind(r.findings).items():
        out += [_say("detail_heading", kind=kind, severity=group[0].severity,
                     meaning=KINDS[kind][1]), ""]
        rows = [[f.id, f.where.text(), shorten(f.detail, 2 * ERROR_WIDTH),
                 shorten(f.expected or "—", ERROR_WIDTH), r.accepted.get(f.id, "")]
                for f in group]
        header = ["id", "where", "seen", "expected", "known: why"]
        keep = 5 if any(row[4] for row in rows) else 4
        out += _table(header[:keep], [row[:keep] for row in rows]) + [""]
        if group[0].severity == "wrong":
            code = r.reproducers.get(kind)
            if code is None or not code.startswith('"""'):
                out += [_say("no_reproducer", why=code or "none written"), ""]
            else:
                out += [_say("reproducer_heading", n=len(group)), "", "```python",
                        *code.rstrip().split("\n"), "```", ""]
    return out


def _conventions(r) -> list[str]:
    out = [_say("heading", section="conventions"), "", _say("conventions", kinks=r.kinks), ""]
    for dtype in r.scope["dtypes"]:
        rows = [row for row in r.conventions if row["dtype"] == dtype
                and row["execution"] == "eager" and row["placement"] == "packed"]
        raising = {m: rows[0][m].line for m in MODES if rows
                   and isinstance(rows[0].get(m), Error)
                   and all(row.get(m) == rows[0][m] for row in rows)}
        shown = [m for m in MODES if m not in raising]
        out += [f"**{dtype}**", ""]
        out += _table(["input", "bits", *shown],
                      [[row["input"], row["bits"], *(_cell(row.get(m)) for m in shown)]
                       for row in rows]) + [""]
        out += [_say("raises", mode=mode, line=line) for mode, line in raising.items()]
        out += [""] if raising else []
    packed = {(row["dtype"], row["input"]): row for row in r.conventions
              if row["execution"] == "eager" and row["placement"] == "packed"}
    changed: dict = {}  # one row for the dtypes where a cell differs alike
    for row in r.conventions:
        base = packed.get((row["dtype"], row["input"]))
        if base is None or row is base:
            continue
        for mode in ("value", "reverse", "forward"):
            if mode in row and _cell(row[mode]) != _cell(base.get(mode)):
                key = (row["execution"], row["placement"], row["input"], mode,
                       _cell(row[mode]), _cell(base.get(mode)))
                changed.setdefault(key, []).append(row["dtype"])
    changed = [[", ".join(dtypes), *key] for key, dtypes in changed.items()]
    out += [_say("other_placements", compiled=r.scope["compiled"], changed=bool(changed)), ""]
    if changed:
        out += _table(["dtype", "execution", "placement", "input", "mode", "here", "above"],
                      changed) + [""]
    return out


def _vjp(r) -> list[str]:
    """A row per dtype and cotangent; a rule of several inputs has one at its ties and one at
    ordinary points (`points`)."""
    several = any("points" in v for v in r.vjp)
    rows = [[v["dtype"], *([v["points"]] if several else []), v["cotangent"],
             v.get("judged", "—"), v.get("unjudged", "—"), v.get("differ", v.get("error", "—"))]
            for v in r.vjp]
    header = ["dtype", *(["points"] if several else []), "cotangent", "judged", "unjudged",
              "differing"]
    return ([_say("heading", section="vjp"), "", _say("vjp"), ""] + _table(header, rows)
            + [""])


def _determinism_and_gradcheck(r) -> list[str]:
    out = [_say("heading", section="determinism"), ""]
    out += [_say("determinism", d=d) for d in r.determinism]
    out.append(_say("gradcheck", framework=r.framework,
                    smooth=_by_outcome([g for g in r.gradcheck if not g["at_kink"]]),
                    kinks=_by_outcome([g for g in r.gradcheck if g["at_kink"]])))
    return out + [""]


def _by_outcome(points: list[dict]) -> list[tuple[str, list[str]]]:
    """[(outcome, the points with it)], outcomes in the order first met: "passed at -2.75,
    -1.3" reads as it is meant, where "0 failed" read as "none failed"."""
    groups: dict = {}
    for g in points:
        groups.setdefault(g["outcome"], []).append(g.get("label") or f"x = {text(g['x'], None)}")
    return [(outcome, xs) for outcome, xs in groups.items()]


def _matches(r) -> list[str]:
    out = [_say("heading", section="matches"), ""]
    m = r.matches
    if m is None:
        return out + [_say("not_compared"), ""]
    if m["run"] is None:
        return out + [_say("no_atlas", why=m["why"]), ""]
    out += [_say("atlas", run=m["run"]), ""]
    if m["matches"]:
        out += [", ".join(f"`{o['name']}` ({o['framework']}; {', '.join(o['dtypes'])})"
                          for o in m["matches"]), ""]
        return out
    near = m["nearest"]
    if near is None:
        return out + [_say("not_probed"), ""]
    out += [_say("nearest", near=near), ""]
    rows = [[d["dtype"], d["input"], d["mode"], _cell(d["rule"]), _cell(d["builtin"])]
            for d in near["differing"][:MAX_ROWS]]
    more = len(near["differing"]) - len(rows)
    return (out + _table(["dtype", "input", "mode", "this rule", near["name"]], rows) + [""]
            + ([_say("more_rows", n=more), ""] if more > 0 else []))


def _twin(r) -> list[str]:
    if r.twin is None:
        return []
    rows = [[n["dataset"], "—", n["error"], "no"] if "error" in n else
            [n["dataset"], n["preactivation_zeros"], ", ".join(n["differ"]) or "none",
             text(n["judged"])] for n in r.twin["nets"]]
    return ([_say("heading", section="twin", twin=r.twin["target"]), "", _say("twin"), ""]
            + _table(["net", "exact zeros in x @ w1", "differing", "judged"], rows) + [""])


def _cost(r) -> list[str]:
    if r.cost is None:
        return []
    c = r.cost
    rows = [[execution, _cell(ratio) if isinstance(ratio, str) else text(ratio)]
            for execution, ratio in c["ratios"].items()]
    return ([_say("heading", section="cost"), "", _say("cost", c=c), ""]
            + _table(["execution", "time ÷ built-in"], rows)
            + ["", _say("kept", kept=c["bytes_per_element"]), ""])


def _scope(r) -> list[str]:
    return [_say("heading", section="scope"), "",
            _say("scope", s=r.scope, env=r.environment, device=r.device), ""]


def _gradient(g) -> str:
    """(0.5, 0.5): a gradient over several inputs; an error line where it raised."""
    return shorten(g, ERROR_WIDTH) if isinstance(g, str) else gradient_text(g)


def _tie_cells(case: dict, shown: list[dict]) -> list[str]:
    """A case's cells after its tie, value and dtype."""
    judged = case["documented rule"] is not None
    return [_gradient(case["error"] or case["gradient"]), case["reads"] or "—",
            *(_gradient(case["builtins"][b["rule"]]) for b in shown),
            _say("tie_rule", rule=case["documented rule"], error=case.get("shape_error"),
                 gives=[_gradient(a) for a in case.get("rule gives") or ()]),
            _say("tie_verdict", follows=case["follows"]) if judged else "—",
            case.get("clarke") or "—"]


def _tie_rows(cases: list[dict], shown: list[dict]) -> list[list[str]]:
    """A row per tie and the values and dtypes alike in every cell: first the dtypes alike at
    one value, then the values alike with those dtypes."""
    by_dtype: dict = {}
    for case in cases:
        by_dtype.setdefault((case["tie"], case["at"], *_tie_cells(case, shown)), []).append(
            case["dtype"])
    by_value: dict = {}
    for (tie, at, *cells), dtypes in by_dtype.items():
        by_value.setdefault((tie, ", ".join(dtypes), *cells), []).append(at)
    return [[tie, ", ".join(ats), dtypes, *cells]
            for (tie, dtypes, *cells), ats in by_value.items()]


def _ties(r) -> list[str]:
    t = r.ties
    shown = [b for b in t["builtins"] if b["measured"]]
    out = [_say("heading", section="ties"), "",
           _say("ties", t=t, framework=r.framework, shown=shown,
                unmeasured=[b for b in t["builtins"] if not b["measured"]]), ""]
    header = ["tie", "at", "dtype", f"gradient ({', '.join(t['inputs'])})", "reads",
              *(b["name"] for b in shown), "PyTorch's rule gives", "verdict", "Clarke"]
    return out + _table(header, _tie_rows(t["cases"], shown)) + [""]


def first_screen(r) -> str:
    """The verdict and one row per kind of finding of a CheckResult."""
    return "\n".join(_head(r) + _first_screen(r)).rstrip() + "\n"


def render_markdown(r) -> str:
    """All of a CheckResult, as `study check` prints it."""
    head = _head(r) + _first_screen(r) + ([_say("see_below"), ""] if r.findings else [])
    several = r.ties is not None  # a rule of several inputs: its ties in place of the probe's
    sections = (_details(r) + (_ties(r) if several else _conventions(r)) + _vjp(r)
                + _determinism_and_gradcheck(r) + ([] if several else _matches(r))
                + _transforms(r) + _clone_hazard(r) + _twin(r) + _cost(r) + _scope(r))
    return "\n".join(head + sections).rstrip() + "\n"

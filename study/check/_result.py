"""A check's result: the measurements, the findings, and their markdown (its words in
check.j2) and JSON views."""
import math
from dataclasses import dataclass, field

import numpy as np

from study.compare.cells import Error, Placed, Value, stored_rows
from study.check._findings import FAILING, KINDS, PROSE, Finding, by_kind, exit_code
from study.measure.inputs import ordinary_inputs
from study.measure.probe import MODES
from study.report.format import shorten, text
from study.report.table import Table, frame, markdown
from study.report.prose import say
from study.compare.stats import Estimate

ERROR_WIDTH = 60  # an error line in a table; the JSON keeps it whole
MAX_ROWS = 8  # cells shown where a list could be long; a count for the rest, all in the JSON
ORDINARY_LABELS = dict(ordinary_inputs("float64"))  # label -> value (in float64)

SCHEMA_VERSION = 4  # 4: numbers as numbers, a cell {"value"} | {"error"} | {"placements"},
# matches.run names its dataset; 3: findings with expected, cells, known and reproducer; `known`


@dataclass
class CheckResult:
    """What `study.check` measured. `ok` is true when no finding says a result is silently
    wrong (or, with fail_on, when none of those kinds was found); `to_markdown()` is the report
    `python -m study check` prints, `to_json()` the same content as data."""
    target: str
    framework: str
    style: str
    device: str
    scope: dict
    environment: dict
    kinks: dict
    conventions: list = field(default_factory=list)
    vjp: list = field(default_factory=list)
    determinism: list = field(default_factory=list)
    gradcheck: list = field(default_factory=list)
    matches: dict | None = None
    transforms: dict | None = None
    clone_hazard: list | None = None
    twin: dict | None = None
    cost: dict | None = None
    findings: list[Finding] = field(default_factory=list)
    fail_on: tuple = FAILING
    known_source: str | None = None  # the known file (or "known="), where one was given
    accepted: dict = field(default_factory=dict)  # finding id -> the reason it is known
    fixed: list = field(default_factory=list)  # known entries no finding matched
    unmeasured: list = field(default_factory=list)  # ... whose dtype this run did not check
    reproducers: dict = field(default_factory=dict)  # kind -> a pytest file, or why none
    reproducer_of: dict = field(default_factory=dict)  # finding id -> its own pytest file
    known_entries: list = field(default_factory=list)

    @property
    def exit_code(self) -> int:
        return exit_code(self.findings, self.fail_on, frozenset(self.accepted))

    @property
    def ok(self) -> bool:
        return self.exit_code == 0

    def to_json(self) -> dict:
        """The result as data (`study check --json`): `scope` (what --quick skipped),
        `environment`, `kinks`, `conventions` (a row per dtype, input, execution and placement:
        `value`, `reverse`, `forward`, `second`, each a cell: {"value": number}, {"error":
        line}, or {"placements": [{"placement", "positions", "value", "error"}]} where the
        position matters, as result tables store it), `vjp`,
        `determinism`, `gradcheck`, `matches` (the committed atlas of the installed releases,
        errata applied), `transforms`, `clone_hazard`, `twin`, `cost`, `findings` (`id`,
        `kind`, `severity`, `where`, `detail`: what was seen, `expected`, `cells`, `known`: the
        reason where a known entry accepts it, `reproducer` for a wrong one), `known` (`file`,
        `accepted`, `fixed`, `not_measured`), `exit_code`. Numbers are JSON numbers (-0.0 keeps
        its sign); NaN and ±inf are written NaN, Infinity and -Infinity, as Python's json
        module, JavaScript's JSON5 and pandas read them."""
        return as_json({
            "schema_version": SCHEMA_VERSION, "target": self.target,
            "framework": self.framework, "style": self.style, "device": self.device,
            "scope": self.scope, "environment": self.environment, "kinks": self.kinks,
            "conventions": self.conventions, "vjp": self.vjp, "determinism": self.determinism,
            "gradcheck": self.gradcheck, "matches": self.matches, "transforms": self.transforms,
            "clone_hazard": self.clone_hazard, "twin": self.twin, "cost": self.cost,
            "findings": [self._finding_json(f) for f in self.findings],
            "known": {"file": self.known_source,
                      "accepted": [{"id": i, "reason": r} for i, r in self.accepted.items()],
                      "fixed": [e.as_json() for e in self.fixed],
                      "not_measured": [e.as_json() for e in self.unmeasured]},
            "exit_code": self.exit_code})

    def apply_known(self, entries: list, source: str | None) -> None:
        """Accept the findings known entries match (study.check._known); an entry none
        matches is fixed, or not measured where this run did not check its dtype or
        transformation."""
        from study.check._known import apply
        self.known_entries, self.known_source = list(entries), source
        self.accepted, unmatched = apply(self.findings, entries)
        self.unmeasured = [e for e in unmatched if not self._measured(dict(e.where))]
        self.fixed = [e for e in unmatched if e not in self.unmeasured]

    def _measured(self, where: dict) -> bool:
        if where.get("dtype") not in (None, *self.scope["dtypes"]) and \
                where.get("section") != "gradcheck":
            return False
        if where.get("section") == "transforms":
            return where.get("transformation") in (self.transforms or {})
        return where.get("section") != "twin" or self.twin is not None

    def updated_known(self) -> dict:
        """A known file's content for `--update-known`: the entries still matched, and one
        per new finding of a failing kind, its reason for a person to give."""
        from study.check._known import updated
        return updated(self.findings, self.known_entries, self.fail_on)

    def _finding_json(self, f: Finding) -> dict:
        out = f.as_json()
        if f.id in self.accepted:
            out["known"] = self.accepted[f.id]
        if f.severity == "wrong":
            out["reproducer"] = self.reproducer_of.get(f.id)
        return out

    def to_markdown(self) -> str:
        return render_markdown(self)

    def first_screen(self) -> str:
        """The verdict and one row per kind of finding: what pytest shows when a test fails."""
        return "\n".join(_head(self) + _first_screen(self)).rstrip() + "\n"


def cell_json(cell) -> dict:
    """A measured cell as the check's JSON writes it: its value, its error, or its rows per
    placement where the position matters (study.compare.cells.stored_rows)."""
    if isinstance(cell, Placed):
        return {"placements": as_json(stored_rows(cell))}
    return {"error": cell.line} if isinstance(cell, Error) else {"value": as_json(cell.value)}


def as_json(value):
    """Numbers as numbers, arrays as lists, a measured cell by cell_json."""
    if isinstance(value, (Value, Error, Placed)):
        return cell_json(value)
    if isinstance(value, Estimate):
        return {"value": float(value.value), "lo": as_json(value.lo),
                "hi": as_json(value.hi), "n": value.n}
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    if isinstance(value, (float, np.floating)):
        return float(value)
    if isinstance(value, (int, np.integer)):
        return int(value)
    if isinstance(value, np.ndarray):
        return as_json(value.tolist())
    if isinstance(value, dict):
        return {str(k): as_json(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [as_json(v) for v in value]
    return value


# --- markdown -------------------------------------------------------------------------------

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


def _head(r: CheckResult) -> list[str]:
    return [_say("title", target=r.target), "", _say("rule", framework=r.framework,
                                                      style=r.style), ""]


def _first_screen(r: CheckResult) -> list[str]:
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


def _fixed(r: CheckResult) -> list[str]:
    out = [_say("fixed_entry", entry=e.text()) for e in r.fixed]
    out += [_say("unmeasured_entry", entry=e.text()) for e in r.unmeasured]
    return out + [""] if out else []


def _details(r: CheckResult) -> list[str]:
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


def _conventions(r: CheckResult) -> list[str]:
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


def _vjp(r: CheckResult) -> list[str]:
    rows = [[v["dtype"], v["cotangent"], v.get("judged", "—"), v.get("unjudged", "—"),
             v.get("differ", v.get("error", "—"))] for v in r.vjp]
    return ([_say("heading", section="vjp"), "", _say("vjp"), ""]
            + _table(["dtype", "cotangent", "judged", "unjudged", "differing"], rows) + [""])


def _determinism_and_gradcheck(r: CheckResult) -> list[str]:
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
        groups.setdefault(g["outcome"], []).append(f"x = {text(g['x'], None)}")
    return [(outcome, xs) for outcome, xs in groups.items()]


def _matches(r: CheckResult) -> list[str]:
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


def _transforms(r: CheckResult) -> list[str]:
    if r.transforms is None:
        return []
    heading = _say("heading", section="transforms")
    if "error" in r.transforms:
        return [heading, "", _say("transforms_not_judged", error=r.transforms["error"]), ""]
    wrong = {f.where.transformation: f for f in r.findings if f.kind == "transform_wrong"}
    rows = [[col, {"ok": "✓", "wrong": "wrong (silently)"}.get(c["status"], c["status"]),
             _cell(c["detail"]) if c["status"] in ("error", "n/a") else
             "" if c["status"] == "ok" or col not in wrong else
             f"{wrong[col].detail}; expected {wrong[col].expected}"]
            for col, c in r.transforms.items()]
    return ([heading, "", _say("transforms"), ""]
            + _table(["transformation", "result", "detail"], rows) + [""])


def _clone_hazard(r: CheckResult) -> list[str]:
    if r.clone_hazard is None:
        return []
    rows = [[c["graph"], text(c["changed"]), c["error"] or c["warning"] or ""]
            for c in r.clone_hazard]
    return ([_say("heading", section="clone_hazard"), "", _say("clone_hazard"), ""]
            + _table(["graph", "gradient changes", "error or warning"], rows) + [""])


def _twin(r: CheckResult) -> list[str]:
    if r.twin is None:
        return []
    rows = [[n["dataset"], "—", n["error"], "no"] if "error" in n else
            [n["dataset"], n["preactivation_zeros"], ", ".join(n["differ"]) or "none",
             text(n["judged"])] for n in r.twin["nets"]]
    return ([_say("heading", section="twin", twin=r.twin["target"]), "", _say("twin"), ""]
            + _table(["net", "exact zeros in x @ w1", "differing", "judged"], rows) + [""])


def _cost(r: CheckResult) -> list[str]:
    if r.cost is None:
        return []
    c = r.cost
    rows = [[execution, _cell(ratio) if isinstance(ratio, str) else text(ratio)]
            for execution, ratio in c["ratios"].items()]
    return ([_say("heading", section="cost"), "", _say("cost", c=c), ""]
            + _table(["execution", "time ÷ built-in"], rows)
            + ["", _say("kept", kept=c["bytes_per_element"]), ""])


def _scope(r: CheckResult) -> list[str]:
    return [_say("heading", section="scope"), "",
            _say("scope", s=r.scope, env=r.environment, device=r.device), ""]


def render_markdown(r: CheckResult) -> str:
    head = _head(r) + _first_screen(r) + ([_say("see_below"), ""] if r.findings else [])
    sections = (_details(r) + _conventions(r) + _vjp(r) + _determinism_and_gradcheck(r)
                + _matches(r) + _transforms(r) + _clone_hazard(r) + _twin(r) + _cost(r)
                + _scope(r))
    return "\n".join(head + sections).rstrip() + "\n"

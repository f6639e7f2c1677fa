"""A check's result: the measurements, the findings, and their JSON view; its markdown is
study.check._markdown's, in the words of check.j2."""
from dataclasses import dataclass, field

import numpy as np

from study.compare.cells import Error, Placed, Value, stored_rows
from study.check._findings import FAILING, Finding, exit_code
from study.compare.stats import Estimate

SCHEMA_VERSION = 5  # 5: `ties`, a rule of several inputs at its ties (null for a rule of x),
# whose findings name their point in where.transformation; 4: numbers as numbers, a cell
# {"value"} | {"error"} | {"placements"}, matches.run names its dataset; 3: findings with
# expected, cells, known and reproducer; `known`


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
    ties: dict | None = None  # a rule of several inputs: study.check._ties.tie_section
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
        errata applied), `transforms`, `clone_hazard`, `twin`, `cost`, `ties` (a rule of
        several inputs: `inputs`, `at`, `builtins` it is shown beside, and `cases`, one per
        tie, value and dtype: `point`, `gradient` over every input at cotangent 1, `at
        cotangents`, `reads`, each built-in's gradient, `documented rule`, `rule gives`,
        `follows`, `clarke`, `minimum-norm`, `pieces`, `along tie`; null for a rule of x),
        `findings` (`id`,
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
            "ties": self.ties, "findings": [self._finding_json(f) for f in self.findings],
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
        from study.check._markdown import render_markdown
        return render_markdown(self)

    def first_screen(self) -> str:
        """The verdict and one row per kind of finding: what pytest shows when a test fails."""
        from study.check._markdown import first_screen
        return first_screen(self)


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

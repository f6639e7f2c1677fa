"""`study conformance`: every built-in of the installed release at every kink, judged with the
study's own code (one-sided limits from the float64 forward, PyTorch's documented rule in its
order, Clarke), each break either known (a known file, or the committed history) or new; and
every built-in of several inputs at each of its ties (study.conformance._tie_kinks), where a
break that the op's own documentation states (torch.max(x, dim) sends the gradient to one
index) is a documented break, not a failure.

    >>> r = judge_installed("torch", ops="torch_relu6")   # doctest: +SKIP
    >>> r.exit_code, [v["status"] for v in r.verdicts]    # doctest: +SKIP
    (0, ['follows', 'follows'])
"""
import fnmatch
import importlib
from dataclasses import dataclass

from study.conformance._history import public_release
from study.conformance._kinks import MEASURED_DTYPE, kink_record
from study.conformance._known import Known, committed_known
from study.conformance._listing import LISTING_COLUMNS, conformance_rows, judgements
from study.conformance._tie_kinks import tie_records
from study.errors import StudyError
from study.measure.devices import Device
from study.report.format import text
from study.report.table import Table, frame, markdown

SCHEMA_VERSION = 1
FOLLOWS, KNOWN, NEW = "follows", "known break", "new break"
NOT_JUDGED, NOT_IN_RELEASE, ERROR = "not judged", "not in release", "error"
DOCUMENTED = "breaks, as documented"  # the general rule, as the op's own page says it does
FAILING = (NEW, ERROR)  # what exits 1: a break no known entry lists, or a kink not measured


def installed_release(framework: str) -> tuple[str, str]:
    """(the public release, the version as installed): ("2.13.0", "2.13.0+cpu")."""
    try:
        version = importlib.import_module(framework).__version__
    except ImportError:
        raise StudyError(f"{framework} is not installed here") from None
    return public_release(version), version


def builtins(framework: str, ops: str | None = None) -> list:
    """The registry's built-ins of `framework` whose key or name matches the glob `ops` (or one
    of several, comma-separated)."""
    from study.measure.rules import builtins_of
    globs = [g.strip() for g in ops.split(",") if g.strip()] if ops is not None else None
    chosen = [r for r in builtins_of(framework) if globs is None or any(
        fnmatch.fnmatchcase(r.key, g) or fnmatch.fnmatchcase(r.name, g) for g in globs)]
    if not chosen:
        raise StudyError(f"no {framework} built-in matches --ops {ops!r} (a glob on the "
                         f"registry's key or name, as torch_clamp* or '*relu*')")
    return chosen


def chosen_frameworks(framework: str | None = None, ops: str | None = None) -> list[str]:
    """`framework`, or each one installed; with `ops`, those with a built-in it matches."""
    from study.runs.requirements import installed_frameworks
    if framework:
        return [framework]
    installed = installed_frameworks()
    if not installed:
        raise StudyError("neither torch nor jax is installed here")
    if ops is None:
        return installed
    def matches(fw: str) -> bool:
        try:
            return bool(builtins(fw, ops))
        except StudyError:
            return False
    return [fw for fw in installed if matches(fw)] or installed[:1]  # [:1] says none matches


def _status(record: dict, judged: dict | None, known: Known) -> tuple[str, str | None]:
    tie = record.get("tie_case")
    if record.get("pieces" if tie else "shape") is None:  # the kink or tie could not be read
        return (ERROR if record["in_release"] else NOT_IN_RELEASE), record["error"]
    if not record["judged"]:
        return NOT_JUDGED, "a composition of several calls: measured, never judged"
    if judged is None:  # the derivative raised
        return ERROR, record.get("error") or record["tie"]["error"]
    if judged["follows"]:
        return FOLLOWS, None
    reason = known.reason(record["rule"], record["name"], record["point"], tie)
    if reason:
        return KNOWN, reason
    if judged["as documented"] is True:
        return DOCUMENTED, judged["documentation"]
    return NEW, None


def kink_verdicts(framework: str, release: str, records: list[dict], known: Known
                  ) -> list[dict]:
    """One verdict per kink or tie record: the judgement that counts (jointly at a tie) and its
    status, one of FOLLOWS, KNOWN, DOCUMENTED, NEW, NOT_JUDGED, NOT_IN_RELEASE, ERROR."""
    listing = frame(conformance_rows(framework, release, "installed", records), LISTING_COLUMNS)
    by_kink = ({(j["op"], j["kink"], j["tie"]): j for j in judgements(listing)}
               if len(listing) else {})
    out = []
    for rec in records:
        judged = by_kink.get((rec["name"], rec["point"], rec.get("tie_case")))
        status, why = _status(rec, judged, known)
        out.append({"op": rec["rule"], "name": rec["name"], "kink": rec["point"],
                    "tie": rec.get("tie_case"),
                    **{k: (judged or {}).get(k) for k in (
                        "over", "documented rule", "rule gives", "measured", "clarke")},
                    "status": status, "why": why})
    return out


@dataclass(frozen=True)
class ConformanceResult:
    """The verdicts on one framework's built-ins at the installed release. `fixed`: the known
    entries of ops judged here that now follow the rule."""
    framework: str
    release: str
    version: str
    device: str
    known: Known
    verdicts: list[dict]
    records: list[dict]  # the kink records the verdicts read (study.conformance.kink_records)

    @property
    def fixed(self) -> list[dict]:
        return [v for v in self.verdicts if v["status"] == FOLLOWS
                and self.known.reason(v["op"], v["name"], v["kink"], v["tie"])]

    @property
    def failing(self) -> list[dict]:
        return [v for v in self.verdicts if v["status"] in FAILING]

    @property
    def exit_code(self) -> int:
        return 1 if self.failing else 0

    def counts(self) -> dict[str, int]:
        return {s: n for s in (FOLLOWS, KNOWN, DOCUMENTED, NEW, NOT_JUDGED, NOT_IN_RELEASE,
                               ERROR) if (n := sum(v["status"] == s for v in self.verdicts))}

    def to_markdown(self) -> str:
        return render_markdown(self)

    def to_json(self) -> dict:
        return {"schema_version": SCHEMA_VERSION, "framework": self.framework,
                "release": self.release, "version": self.version, "device": self.device,
                "measured_dtype": MEASURED_DTYPE, "known_source": self.known.source,
                "counts": self.counts(), "verdicts": [_jsonable(v) for v in self.verdicts],
                "fixed": [{"op": v["op"], "kink": repr(float(v["kink"])), "tie": v["tie"],
                           "reason": self.known.reason(v["op"], v["name"], v["kink"], v["tie"])}
                          for v in self.fixed],
                "exit_code": self.exit_code}


def _jsonable(value):
    # floats as strings, as study check writes them: "-0.0", "inf" and "nan" survive JSON
    if isinstance(value, float):
        return repr(value)
    if isinstance(value, dict):
        return {k: _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    return value


def _gradient(g: tuple) -> str:
    return text(g[0]) if len(g) == 1 else f"({', '.join(map(text, g))})"


def _verdict_text(v: dict) -> str:
    return {FOLLOWS: "follows", KNOWN: f"breaks (known: {v['why']})",
            DOCUMENTED: f"breaks the general rule, as its documentation says ({v['why']})",
            NEW: "**breaks: not a known break**", NOT_JUDGED: "not judged (composition)",
            NOT_IN_RELEASE: "not in this release", ERROR: f"**error**: {v['why']}"}[v["status"]]


def render_markdown(result: ConformanceResult) -> str:
    """The first screen: a verdict line, where the known breaks come from, the fixed entries,
    then one row per op and kink."""
    r = result
    counts = ", ".join(f"{n} {s}" for s, n in r.counts().items())
    head = (f"study conformance: {r.framework} {r.version} ({r.device}): "
            f"{'FAILS' if r.exit_code else 'passes'}: {counts}")
    lines = [head, "", f"Known breaks: {r.known.source}."]
    if r.fixed:
        lines.append("Fixed (known, and now following the rule): " + "; ".join(
            f"{v['name']} at {v['tie'] or text(v['kink'])}" for v in r.fixed) + ".")
    rows = [{"op": v["name"], "kink": v["kink"], "tie": v["tie"], "over": v["over"],
             "documented rule": v["documented rule"],
             "rule gives": " or ".join(dict.fromkeys(_gradient(g) for g in v["rule gives"] or ()))
             or None,
             "measured": _gradient(v["measured"]) if v["measured"] else None,
             "Clarke": v["clarke"], "verdict": _verdict_text(v)} for v in r.verdicts]
    table = Table("conformance", "", "", frame(rows))
    return "\n".join(lines + ["", markdown(table), ""])


def judge_installed(framework: str, ops: str | None = None, known: Known | None = None,
                    device: Device | None = None) -> ConformanceResult:
    """Every built-in of `framework` (those `ops` matches) at each of its kinks, and each of
    several inputs at each of its ties, measured now (study.conformance.kink_records,
    tie_records) and judged; `known` defaults to the committed history of the installed
    release."""
    from study.measure.frameworks import use_shared_settings
    release, version = installed_release(framework)
    use_shared_settings((framework,))  # JAX computes the float64 forward only with x64 on
    device = device or Device("cpu")
    known = known if known is not None else committed_known(framework, release)
    records = [rec for rule in builtins(framework, ops)
               for rec in (tie_records(rule, device) if rule.several_inputs
                           else [kink_record(rule, k, device) for k in rule.kinks])]
    return ConformanceResult(framework, release, version, device.name, known,
                             kink_verdicts(framework, release, records, known), records)

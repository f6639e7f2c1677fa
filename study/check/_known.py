"""Known deviations: findings a project accepts, each with a reason, kept in a JSON file
(`study check --known FILE`, `study.check(..., known=FILE)`), as torch.library.opcheck's
generated tests keep a failures_dict.json:

    {"study_check_known": 1,
     "known": [
       {"id": "vjp_not_linear-19c2b43c", "reason": "guided backprop drops negative gradients"},
       {"kind": "vjp_not_linear", "where": {"input": "+0.0"}, "reason": "..."}
     ]}

An entry with an `id` accepts the finding of that id (kind and where beside it are only for
the reader); one without accepts every finding of its `kind` whose where has the fields given
(a field of a merged finding, "2, -1 (mixed)", matches any one of its values). A known
finding does not fail the run; an entry no finding matches is reported as fixed.
"""
import json
import os
from dataclasses import dataclass, fields

from study.check._findings import KINDS, Finding, Where
from study.check._load import UsageError

FORMAT = 1
WHERE_FIELDS = tuple(f.name for f in fields(Where))


@dataclass(frozen=True)
class Known:
    reason: str
    id: str | None = None
    kind: str | None = None
    where: tuple = ()  # (field, value) pairs

    def matches(self, f: Finding) -> bool:
        if self.id is not None:
            return f.id == self.id
        return f.kind == self.kind and all(
            getattr(f.where, k) == v or v in (getattr(f.where, k) or "").split(", ")
            for k, v in self.where)

    def as_json(self) -> dict:
        out = {"id": self.id} if self.id else {}
        out.update({"kind": self.kind} if self.kind else {})
        out.update({"where": dict(self.where)} if self.where else {})
        return {**out, "reason": self.reason}

    def text(self) -> str:
        where = ", ".join(f"{k} {v}" for k, v in self.where)
        return " ".join(p for p in (f"`{self.id or self.kind}`", where and f"({where})",
                                    f"— {self.reason}" if self.reason else "") if p)


def _entry(item, n: int, source: str, need_reason: bool) -> Known:
    def bad(why):
        return UsageError(f"{source}: entry {n} {why}")
    if not isinstance(item, dict):
        raise bad("is not an object")
    unknown = set(item) - {"id", "kind", "where", "reason"}
    if unknown:
        raise bad(f"has unknown key {sorted(unknown)[0]!r}")
    reason = item.get("reason")
    if not isinstance(reason, str) or (need_reason and not reason.strip()):
        raise bad("has no reason: say why the project accepts it")
    kind, where = item.get("kind"), item.get("where", {})
    if item.get("id") is None and kind is None:
        raise bad("names neither an id nor a kind")
    if kind is not None and kind not in KINDS:
        raise bad(f"has unknown kind {kind!r}; known: {', '.join(KINDS)}")
    if not isinstance(where, dict) or set(where) - set(WHERE_FIELDS):
        raise bad(f"has a where with fields other than {', '.join(WHERE_FIELDS)}")
    return Known(reason, item.get("id"), kind, tuple(sorted(where.items())))


def parse_known(data, source: str = "known", need_reason: bool = True) -> list[Known]:
    """The entries of a known file's content (a dict as the file holds it, or its list of
    entries); a UsageError naming the entry where one is malformed or gives no reason."""
    if isinstance(data, dict):
        if data.get("study_check_known") != FORMAT:
            raise UsageError(f"{source}: not a known file of format {FORMAT} "
                             f"(\"study_check_known\": {FORMAT})")
        data = data.get("known")
    if not isinstance(data, list):
        raise UsageError(f"{source}: \"known\" is not a list of entries")
    return [_entry(item, n, source, need_reason) for n, item in enumerate(data, 1)]


def load_known(path: str, need_reason: bool = True) -> list[Known]:
    try:
        with open(path) as f:
            data = json.load(f)
    except OSError as exc:
        raise UsageError(f"--known {path}: {exc.strerror}") from None
    except json.JSONDecodeError as exc:
        raise UsageError(f"--known {path}: not JSON ({exc.msg}, line {exc.lineno})") from None
    return parse_known(data, path, need_reason)


def as_entries(known, need_reason: bool = True) -> tuple[list[Known], str | None]:
    """(entries, where they came from) for what study.check's `known=` takes: a path, a
    file's content, a list of entries or of Known, or None."""
    if known is None:
        return [], None
    if isinstance(known, (str, os.PathLike)):
        return load_known(os.fspath(known), need_reason), os.fspath(known)
    if isinstance(known, list) and all(isinstance(k, Known) for k in known):
        return list(known), "known="
    return parse_known(known, "known=", need_reason), "known="


def apply(findings: list[Finding], entries: list[Known]) -> tuple[dict, list[Known]]:
    """({finding id: the reason it is accepted}, the entries no finding matches)."""
    accepted: dict = {}
    for f in findings:
        entry = next((e for e in entries if e.matches(f)), None)
        if entry is not None and f.severity != "usage":
            accepted[f.id] = entry.reason
    unmatched = [e for e in entries if not any(e.matches(f) for f in findings)]
    return accepted, unmatched


def updated(findings: list[Finding], entries: list[Known], fail_on) -> dict:
    """A known file's content: the entries some finding still matches, then one entry by id
    for each finding of a failing kind none accepts, its reason empty for a person to give
    (study check refuses to read a file with an empty reason)."""
    kept = [e for e in entries if any(e.matches(f) for f in findings)]
    new = [Known("", f.id, f.kind, tuple(sorted((k, v) for k, v in vars(f.where).items()
                                                 if v is not None)))
           for f in findings if f.kind in fail_on and not any(e.matches(f) for e in kept)]
    return {"study_check_known": FORMAT, "known": [e.as_json() for e in kept + new]}

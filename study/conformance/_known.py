"""Known breaks: the built-ins a project accepts breaking the documented rule at a kink, each
with its reason. A break listed here does not fail `study conformance`; an entry whose op now
follows the rule is reported as fixed.

A known file is JSON (`op` is the registry's key or the op's display name):

    {"known": [{"op": "torch_clamp_min0", "kink": 0, "reason": "pytorch#184572"}]}

Without one, the study's committed history serves: the breaks that the committed runs of the
installed release show, read from reports/results by the results loader, errata applied.
"""
import json
import math
import os
from dataclasses import dataclass
from importlib.metadata import entry_points

from study.conformance._history import public_release
from study.conformance._listing import LISTING_COLUMNS, conformance_rows, rule_breakers
from study.errors import StudyError, first_error_line
from study.report.table import frame
from study.runs import results
from study.runs.provenance import REPO_ROOT

# the experiments whose result files hold kink records (zero_point), found as study check finds
# its atlas, so that the library names no experiment
ENTRY_POINTS = "relu_gradient_study.atlas"


class KnownFileError(StudyError):
    """A known file that cannot be read: the message says why, on one line."""


@dataclass(frozen=True)
class Known:
    """(op, kink) -> reason, where op is a registry key or a display name; `source` says where
    the entries come from, in words."""
    entries: dict[tuple[str, float], str]
    source: str

    def reason(self, key: str, name: str, kink: float) -> str | None:
        return self.entries.get((key, kink), self.entries.get((name, kink)))


def load_known(path: str) -> Known:
    """The known file at `path`; a file that is not one raises KnownFileError."""
    try:
        with open(path, encoding="utf-8") as f:
            doc = json.load(f)
    except (OSError, ValueError) as e:
        raise KnownFileError(f"cannot read the known file {path}: {first_error_line(e)}") from None
    entries = doc.get("known") if isinstance(doc, dict) else None
    if not isinstance(entries, list):
        raise KnownFileError(f"{path} is not a known file: it needs a list under \"known\"")
    out = {}
    for i, e in enumerate(entries):
        if not (isinstance(e, dict) and isinstance(e.get("op"), str)
                and isinstance(e.get("kink"), (int, float)) and not isinstance(e["kink"], bool)
                and math.isfinite(e["kink"]) and isinstance(e.get("reason"), str)
                and e["reason"].strip()):
            raise KnownFileError(f"{path}: entry {i} needs \"op\" (a name), \"kink\" (a finite "
                                 f"number) and \"reason\" (why the break is accepted)")
        out[(e["op"], float(e["kink"]))] = e["reason"]
    return Known(out, f"the known file {path}")


def _kink_runs(framework: str, release: str, results_dir: str) -> list[results.Run] | str:
    """The committed runs of `release` of `framework` that hold its kink records, or why none."""
    where = os.path.relpath(results_dir, REPO_ROOT)
    if not os.path.isdir(results_dir):
        return f"no committed results here ({where})"
    try:
        experiments = [ep.load() for ep in entry_points(group=ENTRY_POINTS)]
        names = {e.name for e in experiments}
        runs, _ = results.load_runs([results_dir], names, only=tuple(names))
        runs = results.ready(runs, results.load_errata(), experiments)
    except Exception as exc:  # noqa: BLE001  said in the output: no break is then known
        return f"the committed results do not load here: {first_error_line(exc)}"
    mine = [r for r in runs if public_release(r.provenance[framework]) == release
            and any(_is_kink_record(rec, framework) for rec in r.ok_records())]
    return mine or f"no committed run of {framework} {release} in {where}"


def _is_kink_record(record: dict, framework: str) -> bool:
    return record.get("part") == "kinks" and record.get("framework") == framework


def _labels(results_dir: str) -> dict[str, str]:
    """The report's run labels (reports/labels.json beside the results), where it has them."""
    try:
        with open(os.path.join(os.path.dirname(results_dir), "labels.json"),
                  encoding="utf-8") as f:
            labels = json.load(f)
    except (OSError, ValueError):
        return {}
    return labels if isinstance(labels, dict) else {}


def committed_known(framework: str, release: str, results_dir: str = results.RESULTS_DIR
                    ) -> Known:
    """The breaks the committed runs of this release show (every such run's, together), each
    with the run it breaks in as its reason; none, and `source` says why, where no committed run
    of the release holds kink records."""
    runs = _kink_runs(framework, release, results_dir)
    if isinstance(runs, str):
        return Known({}, f"{runs}: no break is known")
    from study.report.runs import configuration
    labels = _labels(results_dir)
    names = [labels.get(configuration(run), run.path) for run in runs]
    entries: dict[tuple[str, float], str] = {}
    for run, name in zip(runs, names):
        records = [r for r in run.ok_records() if _is_kink_record(r, framework)]
        keys = {r["name"]: r["rule"] for r in records}
        listing = frame(conformance_rows(framework, release, name, records), LISTING_COLUMNS)
        for b in rule_breakers(listing):
            entries.setdefault((keys[b["op"]], float(b["kink"])),
                               f"the committed run {name}")
    where = os.path.relpath(results_dir, REPO_ROOT)
    return Known(entries, f"the committed history of {framework} {release}: runs "
                          f"{', '.join(names)} in {where}")

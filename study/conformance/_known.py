"""Known breaks: the built-ins a project accepts breaking the documented rule at a kink, each
with its reason. A break listed here does not fail `study conformance`; an entry whose op now
follows the rule is reported as fixed.

A known file is JSON (`op` is the registry's key or the op's display name; a built-in of
several inputs also names its `tie`, as the listing does, and its `op` is the listing's, which
names an output element of several, torch.sort(x).values[2]):

    {"known": [{"op": "torch_clamp_min0", "kink": 0, "reason": "pytorch#184572"},
               {"op": "torch_max_dim", "kink": 0, "tie": "2 of 4 at 0", "reason": "its docs"}]}

Without one, the study's own measurements serve (study.conventions): the breaks that the runs
of the installed release show, from the checkout's results or the dataset the package ships.
"""
import json
import math
from dataclasses import dataclass

from study.conformance._history import public_release
from study.errors import StudyError, first_error_line
from study.runs import results


class KnownFileError(StudyError):
    """A known file that cannot be read: the message says why, on one line."""


def entry(op: str, kink: float, tie: str | None = None) -> tuple:
    """A known break's key: (op, kink), and its tie at a tie of several inputs."""
    return (op, kink) if tie is None else (op, kink, tie)


@dataclass(frozen=True)
class Known:
    """entry(op, kink, tie) -> reason, where op is a registry key or a display name; `source`
    says where the entries come from, in words."""
    entries: dict[tuple, str]
    source: str

    def reason(self, key: str, name: str, kink: float, tie: str | None = None) -> str | None:
        return self.entries.get(entry(key, kink, tie), self.entries.get(entry(name, kink, tie)))


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
                and e["reason"].strip() and isinstance(e.get("tie", ""), str)):
            raise KnownFileError(f"{path}: entry {i} needs \"op\" (a name), \"kink\" (a finite "
                                 f"number) and \"reason\" (why the break is accepted), and "
                                 f"\"tie\", where given, a text")
        out[entry(e["op"], float(e["kink"]), e.get("tie"))] = e["reason"]
    return Known(out, f"the known file {path}")


def committed_known(framework: str, release: str, results_dir: str = results.RESULTS_DIR
                    ) -> Known:
    """The breaks the study measured in this release (study.conventions: the checkout's results
    where present, else the dataset the package ships), each with the runs it breaks in as its
    reason; none, and `source` says why, where no measured run of the release holds kinks."""
    from study import conventions
    try:
        dataset = conventions.load(results_dir)
    except StudyError as exc:
        return Known({}, f"{exc}: no break is known")
    held = [r for r in dataset.runs if r["kinks"] and public_release(r[framework]) == release]
    mine = dataset.breaks[(dataset.breaks["framework"] == framework)
                          & (dataset.breaks["release"] == release)]
    if not held:
        return Known({}, f"{dataset.source} holds no run of {framework} {release}: "
                         f"no break is known")
    entries = {entry(b.rule if _tie(b) is None else b.op, float(b.kink), _tie(b)):
               f"measured in {b.runs}" for b in mine.itertuples()}
    from study.conventions import label_order
    labels = sorted((r["label"] or r["run"] for r in held), key=label_order)
    return Known(entries, f"{dataset.source}, {framework} {release}: runs "
                          f"{', '.join(labels)}")


def _tie(row) -> str | None:
    """A break's tie, None for a kink of one input (and in a dataset written before ties)."""
    tie = getattr(row, "tie", None)
    return tie if isinstance(tie, str) else None

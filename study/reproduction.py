"""Did a rerun reproduce the reference? Cell-by-cell comparison of a run with its reference run.

A cell is one leaf value of one record, named by the record's identifying fields (the
experiment's RECORD_KEY) and its path inside the record; fields named in an experiment's
NOT_COMPARED (wall-clock seconds) are left out. Experiments whose raw values are not comparable
across machines (timing) give `comparable_cells(run)` instead: ratios measured within the run,
each with the interval its quartiles give (a `Spread`), compared within the experiment's
REPRODUCTION_TOLERANCE.
"""
import math
from dataclasses import dataclass, field

from study.results import Run
from study.tables import MARKDOWN_DIGITS, format_cell

ALWAYS_IGNORED = ("device", "threads")


@dataclass(frozen=True)
class Spread:
    """A measured positive value with the interval its run's spread gives, e.g. a ratio of
    medians with [q1 / q3, q3 / q1] of the two timings."""
    value: float
    lo: float
    hi: float

    def text(self, digits: int | None) -> str:
        return f"{format_cell(self.value, digits)} [{format_cell(self.lo, digits)}, " \
               f"{format_cell(self.hi, digits)}]"


def cell_text(value, digits: int | None = MARKDOWN_DIGITS) -> str:
    return value.text(digits) if isinstance(value, Spread) else format_cell(value, digits)


def _flatten(value, path: str, out: dict) -> None:
    if isinstance(value, dict):
        for k in sorted(value):
            _flatten(value[k], f"{path}.{k}" if path else str(k), out)
    elif isinstance(value, list):
        for i, v in enumerate(value):
            _flatten(v, f"{path}[{i}]", out)
    else:
        out[path] = value


def record_cells(records: list[dict], key_fields: tuple[str, ...],
                 ignored: tuple[str, ...] = ()) -> dict[str, object]:
    """{"field=value, ... :: path": leaf} over every record (failed cases included)."""
    out: dict[str, object] = {}
    for rec in records:
        ident = ", ".join(f"{k}={rec[k]}" for k in key_fields if k in rec)
        leaves: dict[str, object] = {}
        for name, value in rec.items():
            if name in key_fields or name in ignored or name in ALWAYS_IGNORED:
                continue
            _flatten(value, name, leaves)
        for path, leaf in leaves.items():
            out[f"{ident} :: {path}"] = leaf
    return out


def cells_of(experiment, run: Run) -> dict[str, object]:
    if hasattr(experiment, "comparable_cells"):
        return experiment.comparable_cells(run)
    return record_cells(run.records, experiment.RECORD_KEY,
                        getattr(experiment, "NOT_COMPARED", ()))


def equal(a, b, tolerance: float = 0.0) -> bool:
    """Exact equality (NaN equals NaN, -0 equals +0), or within a relative tolerance; two
    Spreads are equal when their intervals overlap or lie within the tolerance of each other."""
    if isinstance(a, Spread) and isinstance(b, Spread):
        return a.lo <= b.hi * (1 + tolerance) and b.lo <= a.hi * (1 + tolerance)
    if isinstance(a, bool) or isinstance(b, bool) or not (
            isinstance(a, (int, float)) and isinstance(b, (int, float))):
        return a == b
    if math.isnan(a) or math.isnan(b):
        return math.isnan(a) and math.isnan(b)
    if tolerance and a > 0 and b > 0:
        return abs(math.log(a / b)) <= math.log1p(tolerance)
    return a == b


@dataclass
class Comparison:
    run: Run
    reference: Run | None
    equal: int = 0
    different: list[tuple[str, object, object]] = field(default_factory=list)
    only_here: list[str] = field(default_factory=list)
    only_reference: list[str] = field(default_factory=list)

    @property
    def verdict(self) -> str:
        if self.reference is None:
            return "no reference run to compare with"
        if self.different:
            return f"differs in {len(self.different)} of {self.equal + len(self.different)} cells"
        if self.only_here or self.only_reference:
            return "reproduced where both have the cell"
        return "reproduced"


def compare(experiment, run: Run, reference: Run | None) -> Comparison:
    result = Comparison(run, reference)
    if reference is None:
        return result
    tolerance = getattr(experiment, "REPRODUCTION_TOLERANCE", 0.0)
    ours, theirs = cells_of(experiment, run), cells_of(experiment, reference)
    for name, value in ours.items():
        if name not in theirs:
            result.only_here.append(name)
        elif equal(value, theirs[name], tolerance):
            result.equal += 1
        else:
            result.different.append((name, value, theirs[name]))
    result.only_reference = [name for name in theirs if name not in ours]
    return result


def is_reference_run(run: Run, references: list[Run]) -> bool:
    """The same file as a reference run: same identity and the same timestamp."""
    return any(ref.key == run.key and ref.provenance["utc"] == run.provenance["utc"]
               for ref in references)


def matching_reference(run: Run, references: list[Run]) -> Run | None:
    """The reference run to compare `run` with: same experiment, device and scope; then the
    same releases if there is one, then the same host, then the newest."""
    candidates = [r for r in references if r.experiment == run.experiment
                  and r.provenance["device"] == run.provenance["device"] and r.scope == run.scope]
    if not candidates:
        return None
    p = run.provenance
    return max(candidates, key=lambda r: ((r.provenance["torch"], r.provenance["jax"])
                                          == (p["torch"], p["jax"]),
                                          r.provenance["host"] == p["host"],
                                          r.provenance["utc"]))


def comparisons(runs: list[Run], references: list[Run], experiments) -> list[Comparison]:
    """One comparison per run that is not itself a reference file, in run order."""
    by_name = {e.NAME: e for e in experiments}
    return [compare(by_name[run.experiment], run, matching_reference(run, references))
            for run in runs if not is_reference_run(run, references)]

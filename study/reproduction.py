"""Did a rerun reproduce the reference? Cell-by-cell comparison of a run with a reference run.

A cell is one leaf value of one record, named by the record's identifying fields (its
experiment's `comparison.record_key`) and its path inside the record; fields the comparison
names as not compared (wall-clock seconds), and fields an erratum withdrew, are left out. An
experiment whose raw values are not comparable across machines (timing) derives its cells
instead: ratios measured within the run, each with its interval (a `Spread`: for timing, the
95% bootstrap interval of the per-round ratio), compared within the experiment's tolerance.

A run is compared with the reference run of its own device. Where the reference has none of
that device, it is compared with the other device's and labelled a device comparison: what
differs then is a property of the devices, not a failed reproduction.
"""
import math
from dataclasses import dataclass, field

from study.results import Run
from study.tables import MARKDOWN_DIGITS, distinct_digits, format_cell

ALWAYS_IGNORED = ("device", "threads", "withdrawn_fields")
REPRODUCTION, DEVICE_COMPARISON = "reproduction", "device comparison"


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


# A cell's name: (field, value) pairs that say which record, then ("path", where in it).
CellName = tuple[tuple[str, object], ...]


def cell_text(value, digits: int | None = MARKDOWN_DIGITS) -> str:
    return value.text(digits) if isinstance(value, Spread) else format_cell(value, digits)


def pair_texts(a, b) -> tuple[str, str]:
    """Two cells that are compared, with as many figures as it takes to tell them apart."""
    spreads = [(v.value, v.lo, v.hi) if isinstance(v, Spread) else v for v in (a, b)]
    digits = distinct_digits(spreads)
    return cell_text(a, digits), cell_text(b, digits)


def name_text(name: CellName) -> str:
    """'rule=jax_relu, dtype=float32 :: reverse[3]'."""
    fields = ", ".join(f"{k}={v}" for k, v in name if k != "path")
    path = dict(name).get("path")
    return f"{fields} :: {path}" if path is not None else fields


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
                 ignored: tuple[str, ...] = ()) -> dict[CellName, object]:
    """{name: leaf} over every record (failed cases included; withdrawn ones left out)."""
    out: dict[CellName, object] = {}
    for rec in records:
        if "withdrawn" in rec:
            continue
        ident = tuple((k, rec[k]) for k in key_fields if k in rec)
        skip = set(key_fields) | set(ignored) | set(ALWAYS_IGNORED) | set(rec.get("withdrawn_fields", ()))
        leaves: dict[str, object] = {}
        for name, value in rec.items():
            if name not in skip:
                _flatten(value, name, leaves)
        for path, leaf in leaves.items():
            out[ident + (("path", path),)] = leaf
    return out


def cells_of(experiment, run: Run) -> dict[CellName, object]:
    comparison = experiment.comparison
    if comparison.derived_cells is not None:
        return comparison.derived_cells(run)
    return record_cells(run.records, comparison.record_key, comparison.not_compared)


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
class CellComparison:
    """Two runs' cells side by side: the one comparison behind reruns and devices."""
    equal: int = 0
    different: list[tuple[CellName, object, object]] = field(default_factory=list)
    only_ours: list[CellName] = field(default_factory=list)
    only_theirs: list[CellName] = field(default_factory=list)


def compare_cells(ours: dict, theirs: dict, tolerance: float = 0.0) -> CellComparison:
    """Every cell named on both sides, equal (see `equal`) or different, and those on one."""
    out = CellComparison()
    for name, value in ours.items():
        if name not in theirs:
            out.only_ours.append(name)
        elif equal(value, theirs[name], tolerance):
            out.equal += 1
        else:
            out.different.append((name, value, theirs[name]))
    out.only_theirs = [name for name in theirs if name not in ours]
    return out


@dataclass
class RunComparison:
    run: Run
    reference: Run | None
    kind: str = REPRODUCTION  # or DEVICE_COMPARISON: the reference is of the other device
    equal: int = 0
    different: list[tuple[CellName, object, object]] = field(default_factory=list)
    only_here: list[CellName] = field(default_factory=list)
    only_reference: list[CellName] = field(default_factory=list)

    @property
    def reproduced(self) -> bool:
        return self.kind == REPRODUCTION and self.reference is not None and not self.different

    @property
    def verdict(self) -> str:
        if self.reference is None:
            return "no reference run to compare with"
        total = self.equal + len(self.different)
        if self.kind == DEVICE_COMPARISON:
            return (f"device comparison (no {self.run.provenance['device']} reference): "
                    f"{self.equal} of {total} cells equal")
        if self.different:
            return f"differs in {len(self.different)} of {total} cells"
        if self.only_here or self.only_reference:
            return "reproduced where both have the cell"
        return "reproduced"


def compare(experiment, run: Run, reference: Run | None,
            kind: str = REPRODUCTION) -> RunComparison:
    if reference is None:
        return RunComparison(run, reference, kind)
    c = compare_cells(cells_of(experiment, run), cells_of(experiment, reference),
                      experiment.comparison.tolerance)
    return RunComparison(run, reference, kind, c.equal, c.different, c.only_ours, c.only_theirs)


def is_reference_run(run: Run, references: list[Run]) -> bool:
    """The same file as a reference run: same identity and the same timestamp."""
    return any(ref.key == run.key and ref.provenance["utc"] == run.provenance["utc"]
               for ref in references)


def matching_reference(run: Run, references: list[Run]) -> tuple[Run | None, str]:
    """The reference run to compare `run` with, and the kind of comparison: same experiment
    and scope; the same device if the reference has it (a reproduction), else the other
    device (a device comparison); then the same releases, the same host, the same CPU
    capability, the newest."""
    candidates = [r for r in references if r.experiment == run.experiment
                  and r.scope == run.scope]
    same_device = [r for r in candidates if r.provenance["device"] == run.provenance["device"]]
    kind = REPRODUCTION if same_device else DEVICE_COMPARISON
    candidates = same_device or candidates
    if not candidates:
        return None, REPRODUCTION
    p = run.provenance
    return max(candidates, key=lambda r: (
        (r.provenance["torch"], r.provenance["jax"]) == (p["torch"], p["jax"]),
        r.provenance["host"] == p["host"],
        r.provenance.get("torch_cpu_capability") == p.get("torch_cpu_capability"),
        r.provenance["utc"])), kind


def comparisons(runs: list[Run], references: list[Run], experiments) -> list[RunComparison]:
    """One comparison per run that is not itself a reference file, in run order."""
    by_name = {e.name: e for e in experiments}
    out = []
    for run in runs:
        if not is_reference_run(run, references):
            reference, kind = matching_reference(run, references)
            out.append(compare(by_name[run.experiment], run, reference, kind))
    return out

"""Did a rerun reproduce the reference? Cell-by-cell comparison of a run with a reference run.

A cell is one leaf value of one record, named by the record's identifying fields (its
experiment's `comparison.record_key`) and its path inside the record; fields the comparison
names as not compared (wall-clock seconds), and fields an erratum withdrew, are left out. An
experiment whose raw values are not comparable across machines (timing) derives its cells
instead: ratios measured within the run, each with its interval (a study.compare.cells.Value with lo
and hi: for timing, the 95% bootstrap interval of the per-round ratio), compared within the
experiment's tolerance. Every cell is typed (study.compare.cells): a failed case's line, and a
string in a field the experiment's comparison names as an error field, are Errors.

A run is compared with the reference run of its own device. Where the reference has none of
that device, it is compared with the other device's and labelled a device comparison: what
differs then is a property of the devices, not a failed reproduction.
"""
from dataclasses import dataclass, field

from study.compare.cells import Cell, Error, Value, Withdrawn, equal
from study.runs.results import Run

ALWAYS_IGNORED = ("device", "threads", "withdrawn_fields", "upgraded_fields")
REPRODUCTION, DEVICE_COMPARISON = "reproduction", "device comparison"


# A cell's name: (field, value) pairs that say which record, then ("path", where in it).
CellName = tuple[tuple[str, object], ...]


def name_text(name: CellName) -> str:
    """'rule=jax_relu, dtype=float32 :: reverse[3]'."""
    fields = ", ".join(f"{k}={v}" for k, v in name if k != "path")
    path = dict(name).get("path")
    return f"{fields} :: {path}" if path is not None else fields


def _flatten(value, path: str, out: dict, error: bool) -> None:
    """Leaves as cells. `error`: a string here is an error line. In a {"status": "error",
    "detail": line} step (how transforms records a raised step), the detail is one too."""
    if isinstance(value, dict):
        for k in sorted(value):
            _flatten(value[k], f"{path}.{k}" if path else str(k), out,
                     error or (k == "detail" and value.get("status") == "error"))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            _flatten(v, f"{path}[{i}]", out, error)
    else:
        out[path] = Error(value) if error and isinstance(value, str) else Value(value)


def record_cells(records: list[dict], key_fields: tuple[str, ...], ignored: tuple[str, ...] = (),
                 error_fields: tuple[str, ...] = ()) -> dict[CellName, Cell]:
    """{name: cell} over every record's leaves (failed cases included; withdrawn records and
    fields left out). A failed case's line and strings in `error_fields` are Errors."""
    out: dict[CellName, Cell] = {}
    errors = {"case_error", *error_fields}
    for rec in records:
        if "withdrawn" in rec:
            continue
        ident = tuple((k, rec[k]) for k in key_fields if k in rec)
        skip = (set(key_fields) | set(ignored) | set(ALWAYS_IGNORED)
                | set(rec.get("withdrawn_fields", ())) | set(rec.get("upgraded_fields", ())))
        leaves: dict[str, Cell] = {}
        for name, value in rec.items():
            if name not in skip:
                _flatten(value, name, leaves, name in errors)
        for path, leaf in leaves.items():
            out[ident + (("path", path),)] = leaf
    return out


def cells_of(experiment, run: Run) -> dict[CellName, Cell]:
    comparison = experiment.comparison
    if comparison.derived_cells is not None:
        return comparison.derived_cells(run)
    return record_cells(run.records, comparison.record_key, comparison.not_compared,
                        comparison.error_fields)


@dataclass
class CellComparison:
    """Two runs' cells side by side: the one comparison behind reruns and devices."""
    equal: int = 0
    different: list[tuple[CellName, Cell, Cell]] = field(default_factory=list)
    only_ours: list[CellName] = field(default_factory=list)
    only_theirs: list[CellName] = field(default_factory=list)


def compare_cells(ours: dict, theirs: dict, tolerance: float = 0.0) -> CellComparison:
    """Every cell named on both sides, equal (study.compare.cells.equal) or different, and those on
    one. A withdrawn cell is left out, as if it were not there."""
    ours = {k: v for k, v in ours.items() if not isinstance(v, Withdrawn)}
    theirs = {k: v for k, v in theirs.items() if not isinstance(v, Withdrawn)}
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


@dataclass(kw_only=True)
class RunComparison(CellComparison):
    """A run against its reference: ours are the run's cells, theirs the reference's."""
    run: Run
    reference: Run | None
    kind: str = REPRODUCTION  # or DEVICE_COMPARISON: the reference is of the other device

    @property
    def reproduced(self) -> bool:
        return self.kind == REPRODUCTION and self.reference is not None and not self.different

    @property
    def verdict(self) -> str:
        if self.reference is None:
            return "no reference run of these releases to compare with"
        total = self.equal + len(self.different)
        if self.kind == DEVICE_COMPARISON:
            return (f"device comparison (no {self.run.provenance['device']} reference): "
                    f"{self.equal} of {total} cells equal")
        if self.different:
            return f"differs in {len(self.different)} of {total} cells"
        if self.only_ours or self.only_theirs:
            return "reproduced where both have the cell"
        return "reproduced"


def compare(experiment, run: Run, reference: Run | None,
            kind: str = REPRODUCTION) -> RunComparison:
    if reference is None:
        return RunComparison(run=run, reference=reference, kind=kind)
    c = compare_cells(cells_of(experiment, run), cells_of(experiment, reference),
                      experiment.comparison.tolerance)
    return RunComparison(**vars(c), run=run, reference=reference, kind=kind)


def is_reference_run(run: Run, references: list[Run]) -> bool:
    """The same file as a reference run: same identity and the same timestamp."""
    return any(ref.key == run.key and ref.provenance["utc"] == run.provenance["utc"]
               for ref in references)


def _releases(run: Run) -> tuple[str, str]:
    return run.provenance["torch"], run.provenance["jax"]


def matching_reference(run: Run, references: list[Run]) -> tuple[Run | None, str]:
    """The reference run to compare `run` with, and the kind of comparison: same experiment
    and scope; the same device if the reference has it (a reproduction), else the other
    device (a device comparison); then the same releases (a reproduction needs them: a run of
    releases no reference holds has none), the same GPU model, the same host, the same CPU
    capability, the newest."""
    candidates = [r for r in references if r.experiment == run.experiment
                  and r.scope == run.scope]
    same_device = [r for r in candidates if r.provenance["device"] == run.provenance["device"]]
    kind = REPRODUCTION if same_device else DEVICE_COMPARISON
    if same_device:  # a reproduction reruns the same releases: other releases are new results
        candidates = [r for r in same_device if _releases(r) == _releases(run)]
    if not candidates:
        return None, REPRODUCTION
    p = run.provenance
    return max(candidates, key=lambda r: (
        (r.provenance["torch"], r.provenance["jax"]) == (p["torch"], p["jax"]),
        r.identity[5] == run.identity[5],  # the same GPU (an H100 rerun against the H100 run)
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


ERROR_WORDING, VALUE = "error wording", "value"


def difference_kind(ours: Cell, theirs: Cell) -> str:
    """What a differing cell shows: ERROR_WORDING where both sides raised the same exception
    type and only its message differs (the code that words it changed), VALUE otherwise (two
    values, a value against an error, or two exception types)."""
    if isinstance(ours, Error) and isinstance(theirs, Error) and \
            ours.line.split(":", 1)[0] == theirs.line.split(":", 1)[0]:
        return ERROR_WORDING
    return VALUE

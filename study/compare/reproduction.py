"""Did a rerun reproduce the reference? Cell-by-cell comparison of a run with a reference run.

A cell is one leaf value of one record, named by the record's identifying fields (its
experiment's `comparison.record_key`) and its path inside the record; fields the comparison
names as not compared (wall-clock seconds), and fields an erratum withdrew, are left out. An
experiment whose raw values are not comparable across machines (timing) derives its cells
instead: ratios measured within the run, each with its interval (a study.compare.cells.Value with lo
and hi: for timing, the 95% bootstrap interval of the per-round ratio), compared within the
experiment's tolerance. Every cell is typed (study.compare.cells): a failed case's line, and a
field named `error` (or ending in `_error`), are Errors.

A run is compared with the reference run of its own device. Where the reference has none of
that device, it is compared with the other device's and labelled a device comparison: what
differs then is a property of the devices, not a failed reproduction.
"""
from dataclasses import dataclass, field
from itertools import chain

from study.compare.cells import Cell, Error, Value, Withdrawn, equal
from study.runs.results import FAILED_CASES, Run

ALWAYS_IGNORED = ("device", "threads", "part")
REPRODUCTION, DEVICE_COMPARISON = "reproduction", "device comparison"


# A cell's name: (field, value) pairs that say which record, then ("path", where in it).
CellName = tuple[tuple[str, object], ...]


def name_text(name: CellName) -> str:
    """'rule=jax_relu, dtype=float32 :: reverse[3]'."""
    fields = ", ".join(f"{k}={v}" for k, v in name if k != "path")
    path = dict(name).get("path")
    return f"{fields} :: {path}" if path is not None else fields


def _leaves(value, path: str, out: dict, error: bool) -> None:
    """Leaves by path, each as stored, except that a string where `error` says it is an error
    line is an Error already."""
    if isinstance(value, dict):
        for k in sorted(value):
            _leaves(value[k], f"{path}.{k}" if path else str(k), out, error)
    elif isinstance(value, list):
        kinds = set(map(type, value))
        if not _containers_among(kinds):  # a list of numbers: its leaves without a call each
            if error and not kinds <= _NOT_TEXT:
                value = [Error(v) if isinstance(v, str) else v for v in value]
            out.update(zip(map(path.__add__, _indices(len(value))), value))
        elif not error and _is_matrix(value, kinds):  # the same, row by row
            rows = map(path.__add__, _indices(len(value)))
            widths = set(map(len, value))
            if len(widths) == 1:
                columns = _indices(widths.pop())
                paths = [row + column for row in rows for column in columns]
            else:
                paths = [row + column for row, cells in zip(rows, value)
                         for column in _indices(len(cells))]
            out.update(zip(paths, chain.from_iterable(value)))
        else:
            for i, v in enumerate(value):
                _leaves(v, f"{path}[{i}]", out, error)
    else:
        out[path] = Error(value) if error and isinstance(value, str) else value


# a leaf's path is joined from these rather than formatted: a run has 10^5 leaves or more
_INDEX = tuple(f"[{i}]" for i in range(1024))


def _indices(n: int) -> tuple[str, ...]:
    """'[0]', '[1]', ... '[n-1]'."""
    return _INDEX[:n] if n <= len(_INDEX) else _INDEX + tuple(
        f"[{i}]" for i in range(len(_INDEX), n))


_LEAF_KINDS = frozenset({float, int, bool, str, type(None)})
_NOT_TEXT = frozenset({float, int, bool, type(None)})


def _containers_among(kinds: set) -> bool:
    return not kinds <= _LEAF_KINDS and any(issubclass(kind, (dict, list)) for kind in kinds)


def _is_matrix(value: list, kinds: set) -> bool:
    """Rows of leaves (`kinds`: the types of value's items)."""
    return kinds == {list} and not _containers_among(set(map(type, chain.from_iterable(value))))


def _cell(leaf) -> Cell:
    """A leaf of _leaves as a cell."""
    return leaf if isinstance(leaf, Error) else Value(leaf)


def _leaf_count(value) -> int:
    """How many leaves _leaves finds in `value`."""
    if isinstance(value, dict):
        if not all(isinstance(k, str) and "." not in k and "[" not in k for k in value):
            leaves: dict = {}  # two keys may name one path: count the paths
            _leaves(value, "field", leaves, False)
            return len(leaves)
        return sum(map(_leaf_count, value.values()))
    if isinstance(value, list):
        kinds = set(map(type, value))
        if not _containers_among(kinds):
            return len(value)
        if _is_matrix(value, kinds):
            return sum(map(len, value))
        return sum(map(_leaf_count, value))
    return 1


def _identity(rec: dict, key_fields: tuple[str, ...], defaults: dict) -> tuple:
    """The fields that name the row's cells (a field the row lacks: its default, if any); a
    failed case's, from its case."""
    named = rec["case"] if rec.get("part") == FAILED_CASES else rec
    values = ((k, named[k] if named.get(k) is not None else defaults.get(k)) for k in key_fields)
    return tuple((k, v) for k, v in values if v is not None)


def is_error_field(name: str) -> bool:
    """Whether a row's field holds an error line: `error`, or `<what>_error`."""
    return name == "error" or name.endswith("_error")


def _compared_fields(records: list[dict], key_fields: tuple[str, ...], ignored: tuple[str, ...],
                     defaults: dict | None = None):
    """(record identity, field, value) of every compared field, in the order record_cells
    names their leaves: records in order (withdrawn ones left out), fields as stored."""
    skip = set(key_fields) | set(ignored) | set(ALWAYS_IGNORED) | {"case"}
    for rec in records:
        if "withdrawn" in rec:
            continue
        ident = _identity(rec, key_fields, defaults or {})
        for name, value in rec.items():
            if name not in skip:
                yield ident, name, value


def record_cells(records: list[dict], key_fields: tuple[str, ...], ignored: tuple[str, ...] = (),
                 defaults: dict | None = None) -> dict[CellName, Cell]:
    """{name: cell} over every record's leaves (failed cases included; withdrawn records
    left out). An error field's line (is_error_field) is an Error."""
    out: dict[CellName, Cell] = {}
    for ident, name, value in _compared_fields(records, key_fields, ignored, defaults):
        leaves: dict = {}
        _leaves(value, name, leaves, is_error_field(name))
        for path, leaf in leaves.items():
            out[ident + (("path", path),)] = _cell(leaf)
    return out


def cells_of(experiment, run: Run) -> dict[CellName, Cell]:
    comparison = experiment.comparison
    if comparison.derived_cells is not None:
        return comparison.derived_cells(run)
    return record_cells(run.records, comparison.record_key, comparison.not_compared,
                        comparison.key_defaults)


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
    out = CellComparison()
    for name, value in ours.items():
        if isinstance(value, Withdrawn):
            continue
        other = theirs.get(name, _ABSENT)
        if isinstance(other, Withdrawn):
            out.only_ours.append(name)
        elif equal(value, other, tolerance):
            out.equal += 1
        else:
            out.different.append((name, value, other))
    if out.equal + len(out.different) < _kept(theirs):  # else every one of theirs is ours too
        out.only_theirs = [name for name, value in theirs.items()
                           if not isinstance(value, Withdrawn)
                           and isinstance(ours.get(name, _ABSENT), Withdrawn)]
    return out


def _kept(cells: dict) -> int:
    """How many cells are not withdrawn."""
    if not any(issubclass(kind, Withdrawn) for kind in set(map(type, cells.values()))):
        return len(cells)
    return sum(not isinstance(cell, Withdrawn) for cell in cells.values())


_ABSENT = Withdrawn("not on this side")  # a side lacks the name: left out, as if withdrawn


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
    c = compare_runs(experiment, run, reference)
    return RunComparison(**vars(c), run=run, reference=reference, kind=kind)


def compare_runs(experiment, ours: Run, theirs: Run) -> CellComparison:
    """compare_cells(cells_of(experiment, ours), cells_of(experiment, theirs), its tolerance):
    the same counts, and the same cells in the same order. Records are compared as a join of
    the two runs' tables of (record, field, value): a field equal as stored is counted, its
    leaves never made cells; only a field that differs, or is on one side, is compared leaf by
    leaf."""
    comparison = experiment.comparison
    if comparison.derived_cells is None:
        records: dict[tuple, int] = {}  # a record's identity -> its code, shared by both tables
        tables = [_field_table(r.records, comparison, records) for r in (ours, theirs)]
        if all(t is not None for t in tables):
            return _joined(*tables, comparison)
    return compare_cells(cells_of(experiment, ours), cells_of(experiment, theirs),
                         comparison.tolerance)


# A row of a field table: (record code, record identity, field, value).
FieldRow = tuple[int, tuple, str, object]


def _field_table(records: list[dict], comparison, codes: dict) -> list[FieldRow] | None:
    """One row per compared field of each record: its record (a code for its identity, as a
    dict tells identities apart), the identity, the field and its value. None where one row's
    leaves could be named as another's (a field twice in one identity, or a field name that
    reads as a path): those runs are compared cell by cell."""
    rows = [(codes.setdefault(ident, len(codes)), ident, name, value) for ident, name, value
            in _compared_fields(records, comparison.record_key, comparison.not_compared,
                                comparison.key_defaults)]
    if len({(code, name) for code, _, name, _ in rows}) < len(rows) or not all(
            isinstance(f, str) and "." not in f and "[" not in f for f in {r[2] for r in rows}):
        return None
    return rows


def _joined(ours: list[FieldRow], theirs: list[FieldRow], comparison) -> CellComparison:
    """compare_cells over the two tables joined on (record, field): equal stored values are
    counted; the rest is compared leaf by leaf, in each side's order. The join is a dict's:
    the values are records' own lists and dicts, which no frame compares faster than Python's
    == does, and the tables are some thousand rows, which a dict joins in less time than a
    frame takes to build."""
    their_row = {(code, name): i for i, (code, _, name, _) in enumerate(theirs)}
    out = CellComparison()
    theirs_left: dict[int, list] = {}  # their row -> its leaves that ours lack, named
    known: dict = {}  # _leaf_names'
    for code, identity, name, value in ours:
        i = their_row.get((code, name))
        if i is None:  # only ours: named, never made cells
            out.only_ours += _leaf_names(identity, name, value, known)
        elif value == theirs[i][3]:
            out.equal += _leaf_count(value)
        else:
            theirs_left[i] = _compare_field(out, identity, theirs[i][1], name, value,
                                            theirs[i][3], is_error_field(name),
                                            comparison.tolerance)
    ours_named = {(code, name) for code, _, name, _ in ours}
    for i, (code, identity, name, value) in enumerate(theirs):
        out.only_theirs += theirs_left.get(i, ()) if (code, name) in ours_named else \
            _leaf_names(identity, name, value, known)
    return out


def _compare_field(out: CellComparison, identity: tuple, their_identity: tuple, name: str,
                   value, their_value, error: bool, tolerance: float) -> list[CellName]:
    """compare_cells over one field's leaves on both sides, added to `out`; their leaves that
    ours lack, named. Leaves equal as stored are counted without being made cells: without a
    tolerance, equal values are equal cells."""
    mine, other = {}, {}
    _leaves(value, name, mine, error)
    _leaves(their_value, name, other, error)
    for path, leaf in mine.items():
        their_leaf = other.get(path, _ABSENT)
        if their_leaf is _ABSENT:
            out.only_ours.append(identity + (("path", path),))
        elif leaf == their_leaf and not tolerance:
            out.equal += 1
        else:
            cells = _cell(leaf), _cell(their_leaf)
            if equal(*cells, tolerance):
                out.equal += 1
            else:
                out.different.append((identity + (("path", path),), *cells))
    return [their_identity + (("path", path),) for path in other if path not in mine]


def _leaf_names(identity: tuple, field: str, value, known: dict) -> list[CellName]:
    """The names of a field's leaves. `known`: (field, shape) -> the leaves' last name parts,
    for one comparison: a run's records of a kind share their fields' shapes, and a record
    on one side alone names its every leaf."""
    shape = _shape(value)
    ends = known.get((field, shape)) if shape is not None else None
    if ends is None:
        paths: dict = {}
        _leaves(value, field, paths, False)
        ends = [(("path", path),) for path in paths]
        if shape is not None:
            known[(field, shape)] = ends
    return list(map(identity.__add__, ends))


def _shape(value):
    """What the paths of a value's leaves depend on besides its field, where that is quick to
    tell: its length, or its rows' lengths; None for anything else (a dict)."""
    if isinstance(value, list):
        kinds = set(map(type, value))
        if not _containers_among(kinds):
            return "list", len(value)
        if _is_matrix(value, kinds):
            return "matrix", tuple(map(len, value))
        return None
    return None if isinstance(value, dict) else "leaf"


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

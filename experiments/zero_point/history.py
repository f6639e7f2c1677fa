"""The atlas across releases: one run per release of each framework, and the cells that change
between them with the first release of each outcome (study.conformance's history core)."""
import math
import operator
from dataclasses import dataclass

import pandas as pd

from experiments.zero_point.atlas import RunAtlas, cell_rows
from study.compare.cells import Error, Placed, Value
from study.conformance import changed_cells, in_version_order, public_release
from study.compare.device_comparison import machine
from study.report.format import cell_text

FRAMEWORKS = ("torch", "jax")
CELL = ("op", "dtype", "input", "mode", "execution")  # a cell, as changed_cells reads one


@dataclass(frozen=True)
class Release:
    """The run that stands for one release of a framework."""
    framework: str
    release: str  # the public version: 2.14.1, whatever build (+cpu, +cu130) was measured
    atlas: RunAtlas


def release_runs(atlases: list[RunAtlas], main: RunAtlas, with_kinks: bool = False
                 ) -> list[Release]:
    """For each framework, one run per release of it, among the runs on the main run's device
    whose other framework is at the main run's release (the pin): torch's releases measured
    with the JAX pin, and JAX's with the torch pin. The runs of one machine only (placement
    cells differ between CPUs): the one with the most releases, the main run's on a tie. With
    `with_kinks`, only runs that hold kink records. Of several runs of a release, the first of
    the main run's scope, in legend order. Releases in version order, torch's first."""
    by_machine: dict[tuple, list[RunAtlas]] = {machine(main.run): []}
    for a in atlases:
        if a.run.provenance["device"] == main.run.provenance["device"] and (
                a.kinks or a.tie_kinks or not with_kinks):
            by_machine.setdefault(machine(a.run), []).append(a)
    return max((_one_per_release(runs, main) for runs in by_machine.values()), key=len)


def _one_per_release(atlases: list[RunAtlas], main: RunAtlas) -> list[Release]:
    def preference(a: RunAtlas) -> tuple:
        return (a.run.scope != main.run.scope, len(a.run.tag), a.run.tag)
    out = []
    for fw in FRAMEWORKS:
        pin = public_release(main.run.provenance[_other(fw)])
        chosen: dict[str, RunAtlas] = {}
        for a in sorted((a for a in atlases
                         if public_release(a.run.provenance[_other(fw)]) == pin), key=preference):
            chosen.setdefault(public_release(a.run.provenance[fw]), a)
        out += [Release(fw, r, chosen[r]) for r in in_version_order(list(chosen))]
    return out


def _other(framework: str) -> str:
    return "jax" if framework == "torch" else "torch"


def _outcome(c) -> tuple:
    # what the history core compares: a value bit for bit, an error by its line, and a cell that
    # depends on placement by which value it gives where (as text, which the core compares)
    if isinstance(c, Value):
        return float(c.value), None
    if isinstance(c, Error):
        return None, c.line
    if isinstance(c, Placed):
        return None, f"placement: {cell_text(c, None)}"
    raise TypeError(f"an atlas cell cannot be {type(c).__name__}")


def _blocks(releases: list[Release]) -> list[tuple]:
    """(framework, release, (op, dtype, mode, execution), input labels, cells): each release's
    own framework's ops, eager and compiled, a mode at a time."""
    return [(r.framework, r.release, (op.name, op.dtype, mode, op.compiler or "eager"),
             op.inputs, op.cells(mode))
            for r in releases for op in r.atlas.ops + r.atlas.compiled
            if op.framework == r.framework for mode in op.modes if mode not in op.withdrawn]


def _cell_key(block: tuple, label: str) -> tuple:
    (op, dtype, mode, execution) = block[2]
    return op, dtype, label, mode, execution  # CELL


def _cells(blocks: list[tuple]) -> list[tuple]:
    """(cell key, release, Cell) of every cell, the last where a release gives one twice."""
    out = {}
    for block in blocks:
        for label, c in zip(block[3], block[4]):
            out[(_cell_key(block, label), block[1])] = c
    return [(key, release, c) for (key, release), c in out.items()]


def _distinct(c) -> object:
    """A cell's outcome, told apart at least as finely as changed_cells tells outcomes: a value
    by its number and the sign of a zero (a NaN by itself), an error by its line, a placed cell
    by what it holds."""
    if isinstance(c, Value):
        value = float(c.value)
        return value, math.copysign(1.0, value)
    return c


def _varying_cells(cells: list[tuple]) -> list[tuple]:
    """Of (key, release, cell), those whose key takes more than one outcome, in their order."""
    seen: dict[tuple, set] = {}
    for key, _, c in cells:
        seen.setdefault(key, set()).add(_distinct(c))
    return [(key, release, c) for key, release, c in cells if len(seen[key]) > 1]


def _varying(blocks: list[tuple]) -> list[tuple]:
    """The (key, release, cell) of the cells that take more than one outcome, in their order:
    the few that changed_cells' frames need to hold. Where each release gives a mode the same
    inputs, an input whose every release gives one object (a run's cells are shared within it,
    atlas._plain_cells) is not looked into."""
    if len({(b[1], b[2]) for b in blocks}) < len(blocks) or any(
            len(set(labels)) < len(labels) for labels in {tuple(b[3]) for b in blocks}):
        # a cell given twice: as stored
        return _varying_cells(_cells(blocks))
    by_mode: dict[tuple, list[tuple]] = {}
    for block in blocks:
        by_mode.setdefault(block[2], []).append(block)
    varying = set()  # (mode, label)
    for mode, (first, *others) in ((m, g) for m, g in by_mode.items() if len(g) > 1):
        if all(b[3] == first[3] and len(b[4]) == len(first[4]) for b in others):
            if all(all(map(operator.is_, b[4], first[4])) for b in others):
                continue
            varying.update((mode, label) for label, *cells in zip(first[3], first[4],
                                                                  *(b[4] for b in others))
                           if any(c is not cells[0] for c in cells)
                           and len(set(map(_distinct, cells))) > 1)
        else:
            varying.update((mode, key[2]) for key, _, _ in
                           _varying_cells(_cells([first, *others])))
    modes = {mode for mode, _ in varying}
    return [(_cell_key(b, label), b[1], c) for b in blocks if b[2] in modes
            for label, c in zip(b[3], b[4]) if (b[2], label) in varying]


def history(releases: list[Release]) -> pd.DataFrame:
    """Every cell that differs between releases, one row per cell and release, in version
    order: framework, the cell (op, dtype, input, mode, execution), release, run, the Cell
    itself (`cell`) and `first_release`, the first release that gave this outcome."""
    blocks = _blocks(releases)
    runs = {(r.framework, r.release): r.atlas.run.tag for r in releases}
    parts, cells = [], {}
    for fw in FRAMEWORKS:
        mine = [b for b in blocks if b[0] == fw]
        if len({b[1] for b in mine if b[3] and b[4]}) < 2:  # one release changes nothing
            continue
        # a value column of numbers and None is float64 (None read as NaN) as in a frame of
        # every cell, whichever cells are kept
        numbers = any(Value in set(map(type, b[4])) for b in mine)
        kept = _varying(mine) or _cells(mine)  # a frame of no rows: as changed_cells makes it
        cells.update(((key, release), c) for key, release, c in kept)
        rows = pd.DataFrame([key for key, _, _ in kept], columns=list(CELL))
        outcomes = [_outcome(c) for _, _, c in kept]
        rows["release"] = [release for _, release, _ in kept]
        rows["value"] = pd.Series([value for value, _ in outcomes],
                                  dtype="float64" if numbers else object)
        rows["error"] = [error for _, error in outcomes]
        parts.append(changed_cells(rows).assign(framework=fw))
    if not parts:
        return pd.DataFrame(columns=["framework", *CELL, "release", "run", "cell",
                                     "first_release"])
    changed = pd.concat(parts, ignore_index=True)
    keys = list(zip(*(changed[c].tolist() for c in CELL)))
    release = changed["release"].tolist()
    changed["cell"] = [cells[(key, rel)] for key, rel in zip(keys, release)]
    changed["run"] = [runs[(fw, rel)] for fw, rel in zip(changed["framework"].tolist(), release)]
    changed["first_release"] = _first_releases(keys, changed)
    return changed[["framework", *CELL, "release", "run", "cell", "first_release"]]


def _first_releases(keys: list[tuple], changed: pd.DataFrame) -> list[str]:
    # rows are in version order within each cell; the first row with an outcome names it
    first: dict[tuple, str] = {}
    return [first.setdefault((key, repr(value), error), release) for key, value, error, release
            in zip(keys, changed["value"].tolist(), changed["error"].tolist(),
                   changed["release"].tolist())]


def segments(cells: list, releases: list[str]) -> list[tuple[str, str, object]]:
    """(first release, last release, cell) for each run of consecutive releases (among those
    given, in order) whose cells are the same outcome."""
    out: list[list] = []
    keys = [_key(c) for c in cells]  # a span's cells share one key: its first cell's
    for c, key, before, release in zip(cells, keys, [None, *keys], releases):
        if out and before == key:
            out[-1][1] = release
        else:
            out.append([release, release, c])
    return [tuple(s) for s in out]


def _key(c) -> tuple:
    value, error = _outcome(c)
    return repr(value), error  # repr keeps a zero's sign, and NaN is NaN


def history_cells(changed: pd.DataFrame) -> list[dict]:
    """The history as tidy rows for the listing: one per value a cell takes in a release."""
    names = ["framework", *CELL, "release", "run", "first_release"]
    return [{**dict(zip(names, r)), **row}
            for r, c in zip(zip(*(changed[n].tolist() for n in names)), changed["cell"])
            for row in cell_rows(c)]


def history_marks(changed: pd.DataFrame, releases: list[Release]) -> list[dict]:
    """Per op that changed and each release of its framework: `changed`, how many of its cells
    give another outcome than in the release measured before, and `measured`, whether the
    release's run holds the op at all."""
    by_cell: dict[tuple, list[tuple]] = {}  # rows are in version order within each cell
    for *key, c, release in zip(*(changed[n].tolist() for n in ("framework", *CELL)),
                                changed["cell"], changed["release"].tolist()):
        by_cell.setdefault(tuple(key), []).append((_key(c), release))
    counts: dict[tuple, int] = {}
    for (fw, op, *_), outcomes in by_cell.items():
        for (before, _), (after, release) in zip(outcomes, outcomes[1:]):
            counts[(fw, op, release)] = counts.get((fw, op, release), 0) + (before != after)
    held = {(r.framework, op.name, r.release) for r in releases
            for op in r.atlas.ops + r.atlas.compiled}
    ops = dict.fromkeys(zip(changed["framework"], changed["op"]))
    return [{"framework": fw, "op": op, "release": r.release,
             "changed": counts.get((fw, op, r.release), 0),
             "measured": (fw, op, r.release) in held}
            for fw, op in ops for r in releases if r.framework == fw]

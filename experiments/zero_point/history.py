"""The atlas across releases: one run per release of each framework, and the cells that change
between them with the first release of each outcome (study.conformance's history core)."""
import math
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
                a.kinks or not with_kinks):
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


def _cells(releases: list[Release]) -> dict[tuple, object]:
    """{(cell key, release): Cell} over each release's own framework's ops, eager and compiled."""
    out = {}
    for r in releases:
        for op in (op for op in r.atlas.ops + r.atlas.compiled if op.framework == r.framework):
            for mode in (m for m in op.modes if m not in op.withdrawn):
                execution = op.compiler or "eager"
                for label, c in zip(op.inputs, op.cells(mode)):
                    out[((op.name, op.dtype, label, mode, execution), r.release)] = (
                        r.framework, c)
    return out


def _distinct(c) -> object:
    """A cell's outcome, told apart at least as finely as changed_cells tells outcomes: a value
    by its number and the sign of a zero (a NaN by itself), an error by its line, a placed cell
    by what it holds."""
    if isinstance(c, Value):
        value = float(c.value)
        return value, math.copysign(1.0, value)
    return c


def _varying(cells: list[tuple]) -> list[tuple]:
    """The (key, release, cell) of the cells that take more than one outcome, in their order:
    the few that changed_cells' frames need to hold."""
    seen: dict[tuple, set] = {}
    for key, _, c in cells:
        seen.setdefault(key, set()).add(_distinct(c))
    return [(key, release, c) for key, release, c in cells if len(seen[key]) > 1]


def history(releases: list[Release]) -> pd.DataFrame:
    """Every cell that differs between releases, one row per cell and release, in version
    order: framework, the cell (op, dtype, input, mode, execution), release, run, the Cell
    itself (`cell`) and `first_release`, the first release that gave this outcome."""
    cells = _cells(releases)
    runs = {(r.framework, r.release): r.atlas.run.tag for r in releases}
    parts = []
    for fw in FRAMEWORKS:
        mine = [(key, release, c) for (key, release), (framework, c) in cells.items()
                if framework == fw]
        if len({release for _, release, _ in mine}) < 2:  # one release changes nothing
            continue
        # a value column of numbers and None is float64 (None read as NaN) as in a frame of
        # every cell, whichever cells are kept
        numbers = any(isinstance(c, Value) for _, _, c in mine)
        mine = _varying(mine) or mine  # a frame of no rows: as changed_cells makes it
        rows = pd.DataFrame([key for key, _, _ in mine], columns=list(CELL))
        outcomes = [_outcome(c) for _, _, c in mine]
        rows["release"] = [release for _, release, _ in mine]
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
    changed["cell"] = [cells[(key, rel)][1] for key, rel in zip(keys, release)]
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
    for c, release in zip(cells, releases):
        if out and _key(out[-1][2]) == _key(c):
            out[-1][1] = release
        else:
            out.append([release, release, c])
    return [tuple(s) for s in out]


def _key(c) -> tuple:
    value, error = _outcome(c)
    return repr(value), error  # repr keeps a zero's sign, and NaN is NaN


def history_cells(changed: pd.DataFrame) -> list[dict]:
    """The history as tidy rows for the listing: one per value a cell takes in a release."""
    named = changed[["framework", *CELL, "release", "run", "first_release"]].to_dict("records")
    return [{**r, **row} for r, c in zip(named, changed["cell"]) for row in cell_rows(c)]


def history_marks(changed: pd.DataFrame, releases: list[Release]) -> list[dict]:
    """Per op that changed and each release of its framework: `changed`, how many of its cells
    give another outcome than in the release measured before, and `measured`, whether the
    release's run holds the op at all."""
    counts: dict[tuple, int] = {}
    for (fw, op), g in changed.groupby(["framework", "op"], sort=False):
        for _, cell in g.groupby(list(CELL[1:]), sort=False):
            keys, names = [_key(c) for c in cell["cell"]], list(cell["release"])
            for before, after, release in zip(keys, keys[1:], names[1:]):
                counts[(fw, op, release)] = counts.get((fw, op, release), 0) + (before != after)
    held = {(r.framework, op.name, r.release) for r in releases
            for op in r.atlas.ops + r.atlas.compiled}
    ops = dict.fromkeys(zip(changed["framework"], changed["op"]))
    return [{"framework": fw, "op": op, "release": r.release,
             "changed": counts.get((fw, op, r.release), 0),
             "measured": (fw, op, r.release) in held}
            for fw, op in ops for r in releases if r.framework == fw]

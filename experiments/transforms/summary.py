"""Transforms, summarised: one row per run, style and transformation, whether a ✓ can show the
custom rule ran, the style of ours that passes each failure, and which styles survive."""
from dataclasses import dataclass

import numpy as np
import pandas as pd

from study.report import main_run, older_code, releases

FAILED = ("error", "wrong")
# older records' line for a first gradient without a graph added this guess at the cause; the
# measurement now writes the measured fact only, so the guess goes from every style's line and
# older and newer runs of one style read (and merge) alike
_ONCE = " (@once_differentiable)"


@dataclass(frozen=True)
class Survival:
    """One framework's custom-rule styles against the transformations it offers, in one run."""
    framework: str
    clean: tuple[str, ...]  # styles that survive every transformation offered, shown to run
    wrong: tuple[str, ...]  # transformations where some style is silently wrong
    unfixable: tuple[str, ...]  # transformations no custom style survives, shown to run
    missing: tuple[str, ...]  # transformations it has no API for
    builtin_fails: tuple[str, ...] = ()  # unfixable ones the framework's own relu fails too
    builtin: str = ""  # the name of that relu
    unshown: tuple[str, ...] = ()  # unfixable ones where some style's ✓ cannot show it ran
    # (styles, transformations): the styles that fail only a few of them, by what they fail
    nearly: tuple[tuple[tuple[str, ...], tuple[str, ...]], ...] = ()


@dataclass
class Summary:
    # run, number, style, rule, framework, builtin, convention, transformation, status, shown
    # (a ✓ that can show the custom rule ran), detail (the value, or the error line)
    cells: pd.DataFrame
    columns: list[str]
    backends: list[str]
    survival: dict[str, tuple[Survival, ...]]  # run -> its facts
    runs: list[str]
    fixes: pd.DataFrame | None = None  # run, number, transformation, fix (a style's number or None)
    releases: dict | None = None  # label -> (torch, jax)
    main: str | None = None  # the main run's label (study.report.main_run)
    older: list[str] = ()  # the runs that are older code (study.report.older_code)


def _detail(cell: dict, style: str):
    """What a transformation gave (its array), the line it raised, or why it does not apply."""
    if cell["error"] is not None:
        line = cell["error"]
        return line[:-len(_ONCE)] if line.endswith(_ONCE) else line
    if cell["not_applicable"] is not None:
        return cell["not_applicable"]
    return np.reshape(cell["value"], cell["shape"]).tolist()


def _shown(cells: pd.DataFrame) -> list:
    """For each ✓: False where its value equals what another style of its framework gave, wrong,
    under the same transformation (so the transformation may have bypassed its rule); None
    for a cell that is not a ✓. Over the columns' values, not a frame filtered per cell."""
    keys = list(zip(cells["run"], cells["framework"], cells["transformation"]))
    wrong: dict[tuple, list] = {}
    for key, status, detail in zip(keys, cells["status"], cells["detail"]):
        if status == "wrong":
            wrong.setdefault(key, []).append(detail)
    return [None if status != "ok" else not any(
        np.shape(w) == np.shape(detail) and np.array_equal(w, detail) for w in wrong.get(key, ()))
        for key, status, detail in zip(keys, cells["status"], cells["detail"])]


def _fixes(run: pd.DataFrame) -> list[dict]:
    """For each failed cell, the custom style of its framework shown to pass that
    transformation: of the same convention where one is, else of any; None where none is."""
    rows = run.to_dict("records")
    passing: dict[tuple, list] = {}  # (framework, transformation) -> its passing custom cells
    for m in rows:
        if not m["builtin"] and m["status"] == "ok" and m["shown"] == True:  # noqa: E712
            passing.setdefault((m["framework"], m["transformation"]), []).append(m)
    out = []
    for c in (c for c in rows if c["status"] in FAILED):
        mates = passing.get((c["framework"], c["transformation"]), ())
        fix = min(((m["convention"] != c["convention"], m["number"]) for m in mates),
                  default=(None, None))[1]
        out.append({"run": c["run"], "number": c["number"], "transformation": c["transformation"],
                    "fix": fix})
    return out


def _survival(cells: pd.DataFrame) -> tuple[Survival, ...]:
    out = []
    for fw, group in cells.groupby("framework", sort=False):
        mine = group[~group["builtin"].astype(bool)]
        failed = mine["status"].isin(FAILED)
        unshown = mine["shown"] == False  # noqa: E712
        by_style = (failed | unshown).groupby(mine["style"], sort=False).any()
        shown = set(mine[mine["shown"] == True]["transformation"])  # noqa: E712
        order = list(dict.fromkeys(group["transformation"]))
        never = tuple(sorted((t for t in set(mine[failed]["transformation"]) if t not in shown),
                             key=order.index))
        reference = group[group["builtin"].astype(bool)]
        builtin = set(reference[reference["status"].isin(FAILED)]["transformation"])
        out.append(Survival(fw, tuple(by_style[~by_style].index),
                            tuple(dict.fromkeys(mine[mine["status"] == "wrong"]["transformation"])),
                            never,
                            tuple(dict.fromkeys(mine[mine["status"] == "n/a"]["transformation"])),
                            tuple(t for t in never if t in builtin),
                            ", ".join(dict.fromkeys(n for n in reference["name"] if n)),
                            tuple(t for t in never if t in set(mine[unshown]["transformation"])),
                            _nearly(mine, failed | unshown, order)))
    return tuple(out)


NEARLY = 3  # a style failing this many transformations or fewer is named with them


def _nearly(mine: pd.DataFrame, failing: pd.Series, order: list) -> tuple:
    """The styles that fail between 1 and NEARLY transformations, grouped by those they fail."""
    by: dict[tuple, list] = {}
    for style, group in mine[failing].groupby("style", sort=False):
        ts = tuple(sorted(set(group["transformation"]), key=order.index))
        if len(ts) <= NEARLY:
            by.setdefault(ts, []).append(style)
    return tuple((tuple(styles), ts) for ts, styles in by.items())


def summarise(runs) -> Summary:
    rows, columns, backends = [], [], set()
    numbers: dict[str, int] = {}  # a style keeps one number in every run: the first it got
    for run in runs:
        got = {(c["rule"], c["transformation"]): c for c in run.ok("transform_cells")}
        for r in run.ok("rules"):
            i = numbers.setdefault(r["style"], len(numbers) + 1)
            columns = columns or r["columns"]
            backends.add(r["compile_backend"])
            rows += [{"run": run.tag, "number": i, "style": r["style"], "rule": r["rule"],
                      "name": r.get("name"),
                      "framework": r["framework"], "builtin": r["kind"] == "builtin",
                      "convention": r["convention"], "transformation": c,
                      "status": got[(r["rule"], c)]["status"],
                      "detail": _detail(got[(r["rule"], c)], r["style"])}
                     for c in r["columns"] if (r["rule"], c) in got]  # none withdrawn
    cells = pd.DataFrame(rows, dtype=object)
    if not rows:
        return Summary(cells, columns, sorted(backends), {}, [run.tag for run in runs],
                       pd.DataFrame(), releases(runs), getattr(main_run(list(runs)), "tag", None),
                       older_code(list(runs)))
    cells.insert(len(cells.columns) - 1, "shown", pd.Series(_shown(cells), dtype=object))
    fixes = pd.DataFrame([f for _, run in cells.groupby("run", sort=False) for f in _fixes(run)],
                         columns=["run", "number", "transformation", "fix"], dtype=object)
    survival = {run: _survival(group) for run, group in cells.groupby("run", sort=False)}
    return Summary(cells, columns, sorted(backends), survival, [run.tag for run in runs], fixes,
                   releases(runs), getattr(main_run(list(runs)), "tag", None),
                   older_code(list(runs)))

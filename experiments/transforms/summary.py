"""Transforms, summarised: one row per run, style and transformation, and which styles survive."""
from dataclasses import dataclass

import pandas as pd


@dataclass(frozen=True)
class Survival:
    """One framework's custom-rule styles against the transformations it offers, in one run."""
    framework: str
    clean: tuple[str, ...]  # styles that survive every transformation offered
    wrong: tuple[str, ...]  # transformations where some style is silently wrong
    unfixable: tuple[str, ...]  # transformations no custom style survives
    missing: tuple[str, ...]  # transformations it has no API for


@dataclass
class Summary:
    cells: pd.DataFrame  # run, number, style, rule, framework, builtin, convention, transformation, status, detail
    columns: list[str]
    backends: list[str]
    survival: dict[str, tuple[Survival, ...]]  # run -> its facts
    runs: list[str]


def _survival(cells: pd.DataFrame) -> tuple[Survival, ...]:
    out = []
    for fw, mine in cells[~cells["builtin"].astype(bool)].groupby("framework", sort=False):
        failed = mine["status"].isin(["error", "wrong"])
        by_style = failed.groupby(mine["style"], sort=False).any()
        by_column = failed.groupby(mine["transformation"], sort=False).all()
        out.append(Survival(fw, tuple(by_style[~by_style].index),
                            tuple(dict.fromkeys(mine[mine["status"] == "wrong"]["transformation"])),
                            tuple(by_column[by_column].index),
                            tuple(dict.fromkeys(mine[mine["status"] == "n/a"]["transformation"]))))
    return tuple(out)


def summarise(runs) -> Summary:
    rows, columns, backends = [], [], set()
    for run in runs:
        for i, r in enumerate(run.ok_records(), 1):
            columns = columns or r["columns"]
            backends.add(r["compile_backend"])
            rows += [{"run": run.tag, "number": i, "style": r["style"], "rule": r["rule"],
                      "framework": r["framework"], "builtin": r["kind"] == "builtin",
                      "convention": r["convention"], "transformation": c,
                      "status": r["cells"][c]["status"], "detail": r["cells"][c]["detail"]}
                     for c in r["columns"]]
    cells = pd.DataFrame(rows, dtype=object)
    survival = {run: _survival(group) for run, group in cells.groupby("run", sort=False)} if rows else {}
    return Summary(cells, columns, sorted(backends), survival, [run.tag for run in runs])

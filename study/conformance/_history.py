"""Which atlas cells change between releases, and the first release with each outcome."""
import math

import pandas as pd
from packaging.version import InvalidVersion, Version

CELL = ("op", "dtype", "input", "mode", "execution")


def public_release(version: str) -> str:
    """The public version (2.14.1 for 2.14.1+cu130). A name that is no version stays as it is:
    it may stand alone, but ordering it against another raises (in_version_order)."""
    try:
        return Version(version).public
    except InvalidVersion:
        return version


def in_version_order(releases: list[str]) -> list[str]:
    """2.9 before 2.10; a release alone is not parsed."""
    return list(releases) if len(releases) < 2 else sorted(releases, key=Version)


def changed_cells(rows: pd.DataFrame) -> pd.DataFrame:
    """The cells whose outcome differs between releases, one row per cell and release.

        >>> rows = pd.DataFrame({"release": ["2.13.0", "2.14.1"], "op": "clamp", "dtype": "f32",
        ...                      "input": "0", "mode": "reverse", "execution": "eager",
        ...                      "value": [1.0, 0.0]})
        >>> changed_cells(rows)[["release", "value"]].values.tolist()
        [['2.13.0', 1.0], ['2.14.1', 0.0]]

    `rows` is tidy: release, op, dtype, input, mode, execution, value, and optionally error
    (a case that raised, or that a release cannot run: its text is the outcome, not a value).
    Releases are ordered as versions (2.9 before 2.10). Two outcomes are the same when their
    errors are, or their values are bit for bit: NaN is NaN, and -0.0 is not 0.0. A cell
    absent from a release is no outcome there. Columns: the cell, release, value, error.
    """
    frame = _outcomes(rows)
    varies = frame.groupby(list(CELL), sort=False, dropna=False)["outcome"].transform("nunique") > 1
    return _ordered(frame[varies])[list(CELL) + ["release", "value", "error"]]


def first_releases(rows: pd.DataFrame) -> pd.DataFrame:
    """For each cell that changes, each outcome it takes and the first release that gives it
    (as `changed_cells` reads `rows`). Columns: the cell, value, error, first_release."""
    changed = _outcomes(changed_cells(rows))
    firsts = changed.drop_duplicates(list(CELL) + ["outcome"], keep="first")
    return firsts.rename(columns={"release": "first_release"})[
        list(CELL) + ["value", "error", "first_release"]].reset_index(drop=True)


def _outcomes(rows: pd.DataFrame) -> pd.DataFrame:
    frame = rows.copy()
    if "error" not in frame:
        frame["error"] = None
    frame["error"] = [e if isinstance(e, str) and e else None for e in frame["error"]]
    duplicated = frame.duplicated(list(CELL) + ["release"], keep=False)
    if duplicated.any():
        first = frame[duplicated].iloc[0]
        raise ValueError(f"one cell has several rows in release {first['release']}: "
                         f"{dict(first[list(CELL)])}; pick one run per release first")
    frame["outcome"] = [("error", e) if isinstance(e, str) else ("value", _bits(v))
                        for v, e in zip(frame["value"], frame["error"])]
    return _ordered(frame)


def _bits(value) -> str | None:
    # repr keeps the sign of zero and spells every NaN alike
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return None if value is None else "nan"
    return repr(float(value))


def _ordered(frame: pd.DataFrame) -> pd.DataFrame:
    # each release's rank among the versions, parsed once a release rather than once a row
    versions = sorted({Version(r) for r in frame["release"].unique()})
    version = frame["release"].map({r: versions.index(Version(r))
                                    for r in frame["release"].unique()})
    return frame.assign(_version=version).sort_values(
        list(CELL) + ["_version"], kind="stable").drop(columns="_version").reset_index(drop=True)

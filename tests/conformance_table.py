"""The committed conformance listing (reports/tables/zero-point-conformance-listing.csv, which
`study report` renders from the committed runs) against the verdicts `study conformance` reaches
now: the oracle of tests/test_conformance_command.py and tests/bench_conformance.py."""
import math
import os

import pandas as pd

from study.conformance import conformance_rows

LISTING = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "reports",
                       "tables", "zero-point-conformance-listing.csv")
VERDICT = ("judged", "documented rule", "follows", "clarke")


def _plain(value):
    if value is None or isinstance(value, float) and math.isnan(value):
        return None
    return {"yes": True, "no": False}.get(value, value)


def _keyed(rows) -> dict[tuple, dict]:
    """Rows by (op, kink, tie, over, operand): a built-in of several inputs has a row per tie
    at the same kink (0) and inputs (its `tie` names which inputs tie and what they hold; None
    for a kink of one input, and in a listing written before ties)."""
    return {(r["op"], float(r["kink"]), _plain(r.get("tie")), r["over"], r["operand"]):
            {c: _plain(r.get(c)) for c in (*VERDICT, "measured")} for r in rows}


def committed(framework: str, release: str) -> dict[tuple, dict]:
    """(op, kink, tie, over, operand) -> judged, documented rule, follows, clarke, measured:
    the committed listing's rows of this release."""
    table = pd.read_csv(LISTING, dtype={"release": str})
    mine = table[(table["framework"] == framework) & (table["release"] == release)]
    return _keyed(mine.to_dict("records"))


def now(result) -> dict[tuple, dict]:
    """The same rows from the kink records a ConformanceResult measured."""
    return _keyed(conformance_rows(result.framework, result.release, "now", result.records))


def differences(result, sample: bool = False) -> list[str]:
    """Each row whose verdict differs from the committed listing's, or whose measured derivative
    differs by more than 1e-12 (relative); a row on one side only is a difference too (with
    `sample`, only the committed rows of the ops measured now count)."""
    ours, theirs = now(result), committed(result.framework, result.release)
    if sample:
        measured = {r["name"] for r in result.records}
        theirs = {k: v for k, v in theirs.items() if k[0] in measured}
    out = [f"{key}: only {'now' if key in ours else 'committed'}"
           for key in set(ours) ^ set(theirs)]
    for key in sorted(set(ours) & set(theirs)):
        a, b = ours[key], theirs[key]
        if any(a[c] != b[c] for c in VERDICT) or not _close(a["measured"], b["measured"]):
            out.append(f"{key}: now {a}, committed {b}")
    return out


def _close(a, b) -> bool:
    if a is None or b is None:
        return a is b
    return a == b or math.isclose(float(a), float(b), rel_tol=1e-12)

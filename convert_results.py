"""One-off: the committed results (run-shaped JSON, read by the code at 2a3b72d with its
upgrades, errata not applied: /tmp/dump.pkl from /tmp/dump_old.py) as tidy Parquet tables."""
import json
import os
import pickle
import shutil
import sys

import numpy as np

from experiments.transforms.measure import cell_row
from experiments.zero_point.measure import atlas_rows
from study.compare.cells import Error, Placed, Value
from study.runs import results

REPORTS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "reports")
DROPPED = ("upgraded_fields", "withdrawn_fields")


def old_cell(stored):
    """study.compare.cells.decode at 2a3b72d."""
    if not isinstance(stored, dict):
        assert stored is None or isinstance(stored, float), stored
        return Value(stored)
    if "error" in stored:
        return Error(stored["error"])
    return Placed(tuple(old_cell(v) for v in stored["values"]),
                  tuple((p, tuple((i, pos) for i, pos in runs))
                        for p, runs in stored["where"].items()))


def failed(rec: dict) -> dict:
    case = {k: v for k, v in rec.items() if k not in ("device", "case_error") + DROPPED}
    return {"part": results.FAILED_CASES, "case": case, "device": rec.get("device"),
            "error": rec["case_error"]}


def zero_point(rec: dict) -> list[dict]:
    if rec.get("part") == "atlas":
        op = {k: v for k, v in rec.items() if k not in DROPPED and k not in rec["modes"]
              and k != "modes"}
        op.setdefault("execution", "eager")  # records before compiled ones were all eager
        return atlas_rows(op, {m: [old_cell(c) for c in rec[m]] for m in rec["modes"]})
    if rec.get("part") == "kinks":
        out = {k: v for k, v in rec.items() if k not in DROPPED}
        out["in_release"] = not str(rec.get("error", "")).startswith("NotInRelease")
        if "measured" in rec:
            bad = isinstance(rec["measured"], str)
            out["measured"], out["error"] = (None, rec["measured"]) if bad else \
                (rec["measured"], None)
        if "tie" in rec and isinstance(rec["tie"].get("measured"), str):
            out["tie"] = {**rec["tie"], "measured": None, "error": rec["tie"]["measured"]}
        return [out]
    return [{k: v for k, v in rec.items() if k not in DROPPED}]


def transforms(rec: dict) -> list[dict]:
    row = {k: v for k, v in rec.items() if k not in DROPPED + ("cells",)}
    return [{"part": "rules", **row}] + [cell_row(rec["rule"], c, rec["cells"][c])
                                         for c in rec["columns"]]


def nonscalar(rec: dict) -> list[dict]:
    row = {k: v for k, v in rec.items() if k not in DROPPED}
    bad = isinstance(rec["result"], str)
    row["result"], row["error"] = (None, rec["result"]) if bad else (rec["result"], None)
    if isinstance(rec.get("chain_rule"), str):
        row["chain_rule"] = None
    return [{"part": "steps", **row}]


def bifurcation(rec: dict) -> list[dict]:
    row = {k: v for k, v in rec.items() if k not in DROPPED}
    if "sweeps" in rec:
        row["sweeps"] = {k: {"setting": key, "values": v} for k, (key, v) in rec["sweeps"].items()}
    return [row]


def timing(rec: dict) -> list[dict]:
    row = {k: v for k, v in rec.items() if k not in DROPPED}
    if rec.get("part") == "plan" and "targets" in rec:
        row["targets"] = [{**t, "threshold": t["threshold"][rec["scope"]]
                           if isinstance(t["threshold"], dict) else t["threshold"]}
                          for t in rec["targets"]]
    if "inductor_options" in rec:
        row["simdlen"] = (row.pop("inductor_options") or {}).get("cpp.simdlen")
    return [row]


def plain(part):
    return lambda rec: [{"part": part(rec) if callable(part) else part,
                         **{k: v for k, v in rec.items() if k not in DROPPED}}]


CONVERT = {"zero_point": zero_point, "transforms": transforms,
           "nonscalar_backward": nonscalar,
           "two_layer": plain(lambda r: "rule_alone" if r["dataset"] == "preactivations"
                              else "nets"),
           "training": plain("training"),
           "clone_hazard": plain(lambda r: "at_zero" if "seed_rule_at_0" in r else "cases"),
           "bifurcation": bifurcation, "timing": timing}


def main():
    dump = pickle.load(open(sys.argv[1], "rb"))
    for folder in ("results", "reference"):
        shutil.rmtree(os.path.join(REPORTS, folder), ignore_errors=True)
    for (folder, experiment, name), (prov, records) in sorted(dump.items()):
        rows = []
        for rec in records:
            rows += [failed(rec)] if "case_error" in rec else CONVERT[experiment](rec)
        root = os.path.join(REPORTS, folder)
        path = results.write_run(experiment, prov, rows, root)
        assert os.path.basename(path) == name, (path, name)
        print(folder, experiment, name, len(records), "records ->", len(rows), "rows")


if __name__ == "__main__":
    main()

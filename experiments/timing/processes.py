"""Timing one case in several processes, one after another: this one and fresh workers.

A case's time moves more between processes than between rounds of one process (and a rerun
is another process), so the checks that take a case apart time a share of their rounds in
each of several processes; their records are merged round for round, with the number of
rounds each process took, which a two-level bootstrap (study.workloads.timing) needs.
"""
import atexit
import json
import subprocess
import sys
import tempfile

import numpy as np

from study.runs.provenance import REPO_ROOT
from study.workloads.timing import quartiles


class Child:
    """A fresh Python process running experiments.timing.measure's `serve` function: it answers
    each JSON request on its stdin with one JSON line. Its stderr goes to a file, since a pipe
    nobody reads could fill and block it; a child that dies is named with its last line."""

    def __init__(self, serve: str, *args: str):
        self.errors = tempfile.TemporaryFile("w+")
        self.proc = subprocess.Popen(
            [sys.executable, "-c", f"from experiments.timing.measure import {serve}; {serve}()",
             *args],
            cwd=REPO_ROOT, text=True, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            stderr=self.errors)

    def reply(self, what: str):
        line = self.proc.stdout.readline()
        if not line:
            self.errors.seek(0)
            lines = [ln for ln in self.errors.read().splitlines() if ln.strip()]
            raise RuntimeError(f"{what} failed: {lines[-1] if lines else 'no output'}")
        return json.loads(line)

    def ask(self, request: dict, what: str):
        self.proc.stdin.write(json.dumps(request) + "\n")
        self.proc.stdin.flush()
        return self.reply(what)

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.stdin.close()
            self.proc.wait(timeout=60)
        self.errors.close()


class Worker(Child):
    """A child that takes its share of a case's rounds on request; started at the first case
    that needs it and kept for the run's later ones (importing torch and JAX again for each
    would cost seconds a case)."""
    running: dict[tuple[str, int], "Worker"] = {}

    @classmethod
    def started(cls, device_name: str, count: int) -> list["Worker"]:
        for i in range(count):
            if (device_name, i) not in cls.running:
                cls.running[(device_name, i)] = cls("serve_parts", device_name)
                atexit.register(cls.running[(device_name, i)].close)
        return [cls.running[(device_name, i)] for i in range(count)]

    def records(self, part: str, case: dict) -> list[dict]:
        try:
            return self.ask({"part": part, "case": case}, f"a fresh process for {part}")
        except RuntimeError:
            Worker.running = {k: w for k, w in Worker.running.items() if w is not self}
            raise


PER_ROUND = ("times_s", "dispatch_s", "minor_faults")


def merge_processes(runs: list[list[dict]]) -> list[dict]:
    """One record per thunk from the same part's records in several processes: the rounds
    of all in process order, `process_rounds` how many each took (what a two-level
    bootstrap needs), the statistics over all rounds, each process's first call."""
    merged = []
    for same in zip(*runs, strict=True):
        first = same[0]
        ident = {k: v for k, v in first.items() if k in ("rule", "piece", "probe", "mode", "signs")}
        if any({k: r.get(k) for k in ident} != ident for r in same):
            raise RuntimeError(f"fresh processes timed different thunks: {ident}")
        rec = {**first, "process_rounds": [len(r["times_s"]) for r in same],
               "first_calls_s": [r["first_call_s"] for r in same]}
        for k in PER_ROUND:
            if k in first:
                rec[k] = [x for r in same for x in r[k]]
        rec["stats"] = quartiles(rec["times_s"])
        if "minor_faults" in rec:
            rec["minor_faults_per_call"] = float(np.median(rec["minor_faults"]))
        merged.append(rec)
    return merged

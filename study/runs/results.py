"""Result files: per run, its provenance and its tables, under reports/results/<experiment>/:

    <run>.json                 {"run", "experiment", "provenance", "tables": {name: rows}}
    <table>/<run>.parquet      one tidy table (study.runs.tables), a column `run` naming the run

<run> is <host>-<machine>__<device>__torch-<v>__jax-<v>__<scope>, <machine> a 6-hex-digit hash
of its CPU model, CPU kernels, core count and GPU model (a cpu run's: its host's, where
provenance records one). A run is identified by its experiment and `identity`, so runs that
differ in any part sit side by side and never overwrite each other. The tables are written
first and the provenance last, each atomically: a run whose provenance is there is whole.

A row's table is its "part"; a case that raised is a row of the table failed_cases: the case
(`case`), its device and its `error`. Whoever reads the tables needs none of this code:
`pd.read_parquet("reports/results/zero_point/atlas_cells")`.

reports/reference/ holds the study's published runs in the same layout: the report compares
every other run with them (study.compare.reproduction).
"""
import filecmp
import json
import os
import re
import hashlib
import shutil
from dataclasses import dataclass, field, replace

from study.errors import StudyError
from study.runs.atomic import write_text_atomically
from study.runs.provenance import REPO_ROOT, SCOPES
from study.runs.tables import Table, parquet_bytes, to_arrow

RESULTS_DIR = os.path.join(REPO_ROOT, "reports", "results")
REFERENCE_DIR = os.path.join(REPO_ROOT, "reports", "reference")
ERRATA_FILE = os.path.join(REPO_ROOT, "reports", "errata.json")
REQUIRED_PROVENANCE = ("utc", "host", "device", "torch", "jax", "scope")
FAILED_CASES = "failed_cases"  # a row per case that raised: case, device, error
RUN_COLUMN = "run"  # every stored table's: the run its rows belong to


@dataclass(frozen=True)
class Run:
    experiment: str
    provenance: dict
    tables: dict  # table name -> study.runs.tables.Table
    path: str  # its provenance file, as cited in the report: relative to reports/
    tag: str = field(default="", compare=False)  # its label in the report's run legend: "C1"
    # the label and what sets it apart: "C4 (torch 2.14.1)"
    title: str = field(default="", compare=False)
    # (table, {column: value or [values]}, why) of each erratum that applies to the run
    errata: tuple = field(default=(), compare=False)
    _rows: dict = field(default_factory=dict, init=False, compare=False, repr=False)
    _derived: dict = field(default_factory=dict, init=False, compare=False, repr=False)

    @classmethod
    def of(cls, experiment: str, provenance: dict, records: list[dict], path: str = "",
           **kw) -> "Run":
        """A run made in memory from its rows, each in the table its "part" names."""
        tables: dict[str, list] = {}
        for rec in records:
            tables.setdefault(rec.get("part", experiment), []).append(rec)
        return cls(experiment, provenance, {n: Table(rows) for n, rows in tables.items()}, path,
                   **kw)

    @property
    def scope(self) -> str:
        return self.provenance["scope"]

    @property
    def identity(self) -> tuple:
        return identity(self.provenance)

    @property
    def key(self) -> tuple:
        return (self.experiment,) + self.identity

    @property
    def label(self) -> str:
        p = self.provenance
        return f"{p['host']}/{p['device']}/torch-{p['torch']}/jax-{p['jax']}/{self.scope}"

    def rows(self, table: str) -> list[dict]:
        """The table's rows, each naming its table ("part"); a row an erratum withdrew carries
        "withdrawn": why. No rows where the run has no such table."""
        if table not in self._rows:
            stored = self.tables[table].rows() if table in self.tables else []
            mine = [(match, why) for name, match, why in self.errata if name == table]
            self._rows[table] = [_withdrawn({"part": table, **row}, mine) for row in stored]
        return self._rows[table]

    def derived(self, make):
        """make(run), made once per run: what a summary and a comparison both read off it."""
        if make not in self._derived:
            self._derived[make] = make(self)
        return self._derived[make]

    def ok(self, table: str) -> list[dict]:
        """The table's rows that stand: none an erratum withdrew."""
        return [r for r in self.rows(table) if "withdrawn" not in r]

    def ok_rows(self) -> list[dict]:
        """Every table's rows that stand, table by table: no failed case, none withdrawn."""
        return [r for name in self.tables if name != FAILED_CASES for r in self.ok(name)]

    def frame(self, table: str):
        """The table as a pandas DataFrame, errata not applied (study.runs.tables.Table.frame)."""
        return self.tables[table].frame()

    def failures(self) -> list[dict]:
        """Rows of the cases that raised (case, device, error)."""
        return self.rows(FAILED_CASES)

    @property
    def records(self) -> list[dict]:
        """Every row of every table, table by table."""
        return [row for name in self.tables for row in self.rows(name)]


def _withdrawn(row: dict, errata: list) -> dict:
    for match, why in errata:
        if _matches(match, row):
            return {**row, "withdrawn": why}
    return row


IDENTITY = ("device", "host", "CPU", "CPU kernels", "cores", "GPU", "torch", "jax", "scope")


def identity(p: dict) -> tuple:
    """What tells two runs of one experiment apart (the fields IDENTITY names): device, host,
    CPU model, CPU kernels, core count (a 2-core VM and a 16-core host may share the model name,
    and every VM here is "vm"), GPU model, torch and JAX releases, scope. A cpu run's GPU is its
    host's (`host_gpu`: the CPU of an H100 host and of an H200 host are two machines); a cpu run
    written before provenance recorded it has None there, as has one on a host without a GPU."""
    gpu = p.get("gpu")
    gpu = gpu.get("name") if isinstance(gpu, dict) else gpu
    if p["device"] == "cpu":
        gpu = p.get("host_gpu")
    return (p["device"], p["host"], p.get("cpu"), p.get("torch_cpu_capability"),
            p.get("cpu_count"), gpu, p["torch"], p["jax"], p["scope"])


def _safe(part: str) -> str:
    return re.sub(r"[^A-Za-z0-9.+_-]", "_", str(part))


def run_name(p: dict) -> str:
    """The run's name in its files: <host>-<machine>__<device>__torch-<v>__jax-<v>__<scope>."""
    machine = hashlib.sha256("|".join(map(str, identity(p)[2:6])).encode()).hexdigest()[:6]
    parts = (f"{p['host']}-{machine}", p["device"], f"torch-{p['torch']}", f"jax-{p['jax']}",
             p["scope"])
    return "__".join(_safe(s) for s in parts)


def partial_path(root: str, experiment: str, provenance: dict) -> str:
    """Where a run in progress keeps its finished cases (study.runs.checkpoint)."""
    return os.path.join(root, experiment, f".partial-{run_name(provenance)}.jsonl")


def jsonable(value):
    import numpy as np
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, np.generic):
        return value.item()
    raise TypeError(f"not JSON-serialisable: {type(value).__name__}")


def ensure_writable(folder: str) -> None:
    """Fail before any work is done if results cannot be written to `folder`."""
    try:
        os.makedirs(folder, exist_ok=True)
        probe = os.path.join(folder, ".write-probe")
        with open(probe, "w") as f:
            f.write("")
        os.unlink(probe)
    except OSError as e:
        raise StudyError(f"cannot write results to {folder}: {e.strerror or e}") from None


def by_table(records: list[dict]) -> dict[str, list[dict]]:
    """The rows of each table, without the "part" that names it; every row needs one."""
    tables: dict[str, list[dict]] = {}
    for rec in records:
        if "part" not in rec:
            raise StudyError(f"a row names no table (\"part\"): {sorted(rec)}")
        tables.setdefault(rec["part"], []).append({k: v for k, v in rec.items() if k != "part"})
    return tables


def write_run(experiment: str, provenance: dict, records: list, root: str = RESULTS_DIR) -> str:
    """Write the run's tables, then its provenance; returns the provenance file's path. Tables
    an earlier run of the same name left, and this one lacks, are removed."""
    folder, name = os.path.join(root, experiment), run_name(provenance)
    tables = by_table(records)
    stored = {t: parquet_bytes(to_arrow([{RUN_COLUMN: name, **row} for row in rows], t))
              for t, rows in tables.items()}  # every table made before any is written
    try:
        os.makedirs(folder, exist_ok=True)
        for table, data in stored.items():
            os.makedirs(os.path.join(folder, table), exist_ok=True)
            write_text_atomically(os.path.join(folder, table, name + ".parquet"), data)
        path = os.path.join(folder, name + ".json")
        doc = {"run": name, "experiment": experiment, "provenance": provenance,
               "tables": {t: len(rows) for t, rows in sorted(tables.items())}}
        write_text_atomically(path, json.dumps(doc, indent=1, sort_keys=True, default=jsonable)
                              + "\n")
        for table in os.listdir(folder):
            stale = os.path.join(folder, table, name + ".parquet")
            if table not in tables and os.path.isfile(stale):
                os.unlink(stale)
    except OSError as e:
        raise StudyError(f"cannot write results to {folder}: {e.strerror or e}") from None
    return path


class _StoredTable(Table):
    """A stored table, less the run column that joins it to its provenance."""

    def arrow(self):
        if self._arrow is None:
            table = super().arrow()
            self._arrow = table.drop_columns([RUN_COLUMN]) if RUN_COLUMN in \
                table.column_names else table
        return self._arrow


def load_run(path: str, rel: str, known: set[str]) -> Run:
    """The run whose provenance file is `path` (its tables read when first asked for)."""
    try:
        with open(path, encoding="utf-8") as f:
            doc = json.load(f)
    except (OSError, ValueError) as e:
        raise StudyError(f"corrupt result file {path}: {e}") from None
    if not isinstance(doc, dict) or not {"run", "experiment", "provenance", "tables"} <= doc.keys():
        raise StudyError(f"not a study result file: {path} (needs run, experiment, provenance, "
                         f"tables)")
    experiment, prov, tables = doc["experiment"], doc["provenance"], doc["tables"]
    if experiment not in known:
        raise StudyError(f"result file {path} is for unknown experiment {experiment!r}")
    folder = os.path.dirname(path)
    if os.path.basename(folder) != experiment:
        raise StudyError(f"result file {path} says experiment {experiment!r} but sits elsewhere")
    if (not isinstance(prov, dict) or not all(k in prov for k in REQUIRED_PROVENANCE)
            or prov["scope"] not in SCOPES or not isinstance(tables, dict)):
        raise StudyError(f"malformed result file {path}: provenance or tables have the wrong "
                         f"shape")
    missing = [t for t in tables if not os.path.isfile(_table_path(folder, t, doc["run"]))]
    if missing:
        raise StudyError(f"result file {path} names tables that are not there: "
                         f"{', '.join(missing)}")
    return Run(experiment, prov, {t: _StoredTable(path=_table_path(folder, t, doc["run"]))
                                  for t in tables}, rel)


def _table_path(folder: str, table: str, run: str) -> str:
    return os.path.join(folder, table, run + ".parquet")


def _found_runs(roots: list[str], known: set[str], only: tuple[str, ...] | None) -> list[Run]:
    found = []
    for root in roots:
        if not os.path.isdir(root):
            raise StudyError(f"results folder not found: {root}")
        for experiment in sorted(os.listdir(root)):
            folder = os.path.join(root, experiment)
            if not os.path.isdir(folder) or only is not None and experiment not in only:
                continue
            for name in sorted(os.listdir(folder)):
                if name.endswith(".json") and not name.startswith("."):
                    rel = os.path.relpath(os.path.join(folder, name), os.path.dirname(root))
                    found.append(load_run(os.path.join(folder, name), rel, known))
    return found


def load_runs(roots: list[str], known: set[str], only: tuple[str, ...] | None = None
              ) -> tuple[list[Run], list[str]]:
    """All runs under `roots` (of the experiments `only` names, where given), newest per
    experiment and identity, plus notes saying which duplicates were dropped. Order is
    deterministic."""
    newest: dict[tuple, Run] = {}
    notes = []
    for run in sorted(_found_runs(roots, known, only),
                      key=lambda r: (r.provenance["utc"], r.path)):
        if run.key in newest:
            notes.append(f"{newest[run.key].path} was replaced by the newer {run.path} "
                         f"(same experiment, device, machine, releases and scope)")
        newest[run.key] = run
    runs = sorted(newest.values(), key=lambda r: (r.experiment, r.label))
    return runs, notes


# --- errata: cells measured by code that a later fix changed -----------------------------------

def load_errata(path: str = ERRATA_FILE) -> list[dict]:
    """reports/errata.json: [{"experiment", "runs": {provenance field: value}, "table", "rows":
    {column: value or [values]}, "why"}]: the rows of that table, in those runs, are
    withdrawn."""
    if not os.path.exists(path):
        return []
    try:
        with open(path, encoding="utf-8") as f:
            errata = json.load(f)
    except (OSError, ValueError) as e:
        raise StudyError(f"corrupt errata file {path}: {e}") from None
    needed = {"experiment", "runs", "table", "rows", "why"}
    if not isinstance(errata, list) or not all(isinstance(e, dict) and needed <= e.keys()
                                               for e in errata):
        raise StudyError(f"malformed errata file {path}: each entry needs "
                         f"{', '.join(sorted(needed))}")
    return errata


def _matches(values: dict, item: dict) -> bool:
    return all(item.get(k) in (v if isinstance(v, list) else [v]) for k, v in values.items())


def ready(runs: list[Run], errata: list[dict]) -> list[Run]:
    """The runs with the errata that apply to each: their rows read as withdrawn, and the
    report leaves them out or marks them, and says why; it never shows them as current."""
    return [replace(run, errata=tuple((e["table"], e["rows"], e["why"]) for e in errata
                                      if e["experiment"] == run.experiment
                                      and _matches(e["runs"], run.provenance)))
            for run in runs]


def sharing_identical(references: list[Run], runs: list[Run]) -> list[Run]:
    """The references, each whose files are byte for byte a run's of `runs` (most of
    reports/reference is a copy of reports/results) reading that run's tables instead of
    reading and converting them again; its own path kept."""
    by_key = {(r.experiment, os.path.basename(r.path)): r for r in runs}
    out = []
    for ref in references:
        run = by_key.get((ref.experiment, os.path.basename(ref.path)))
        if run is not None and _same_files(ref, run):
            ref = replace(ref, tables=run.tables)
        out.append(ref)
    return out


def _same_files(a: Run, b: Run) -> bool:
    if a.provenance != b.provenance or a.errata != b.errata or a.tables.keys() != b.tables.keys():
        return False
    paths = [(a.tables[t].path, b.tables[t].path) for t in a.tables]
    return all(p and q and filecmp.cmp(p, q, shallow=False) for p, q in paths)


def run_files(root: str, run: Run) -> list[str]:
    """The run's files under `root` (the folder above its experiments): its provenance, then
    its tables."""
    json_path = os.path.join(os.path.dirname(root.rstrip("/")), run.path)
    folder, name = os.path.dirname(json_path), os.path.basename(json_path)[:-len(".json")]
    return [json_path] + [_table_path(folder, t, name) for t in run.tables]


def promote_to_reference(results_dir: str = RESULTS_DIR, reference_dir: str = REFERENCE_DIR,
                         known: set[str] = frozenset()) -> list[str]:
    """Make the runs under results_dir the reference: replace reference_dir's files with
    copies of them (after checking that every one loads). Returns the copied provenance
    files' paths."""
    runs, _ = load_runs([results_dir], known)
    staging = reference_dir.rstrip("/") + ".new"
    shutil.rmtree(staging, ignore_errors=True)
    copied = []
    for run in runs:
        files = run_files(results_dir, run)
        for src in files:
            rel = os.path.relpath(src, results_dir)
            os.makedirs(os.path.dirname(os.path.join(staging, rel)), exist_ok=True)
            shutil.copy2(src, os.path.join(staging, rel))
        copied.append(os.path.join(reference_dir, os.path.relpath(files[0], results_dir)))
    old = reference_dir.rstrip("/") + ".old"
    shutil.rmtree(old, ignore_errors=True)
    if os.path.isdir(reference_dir):
        os.replace(reference_dir, old)
    os.replace(staging, reference_dir)
    shutil.rmtree(old, ignore_errors=True)
    return copied

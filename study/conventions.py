"""The conventions dataset: what the study measured of every built-in at its kinks, by release,
shipped inside the package so that `study check` and `study conformance` know it from any
install, without a checkout.

    study/data/conventions/runs.json      the runs it holds: label, releases, device, CPU
                                          kernels, the commit that measured, and its own build
    study/data/conventions/cells.parquet  each eager built-in's cell at each probe input, per
                                          run, dtype and mode (study.compare.cells.stored_rows)
    study/data/conventions/breaks.parquet each built-in and kink whose derivative breaks
                                          PyTorch's documented rule, per framework release

It is built from the result tables of the atlas (ATLAS, CELLS and KINKS, whichever experiment
wrote them), errata applied, and the report's run labels: `study report` writes it beside the
report, and tests/test_conventions.py holds it equal to the committed results. In a checkout
the results themselves serve, built the same way: they win where they are present.

    >>> cells = pd.read_parquet("study/data/conventions/cells.parquet")   # no study code needed
"""
import json
import os
from dataclasses import dataclass
from functools import cached_property
from importlib.metadata import PackageNotFoundError, version

import pandas as pd

from study.compare.cells import from_rows
from study.errors import StudyError
from study.runs import results
from study.runs.atomic import write_text_atomically
from study.runs.provenance import REPO_ROOT
from study.runs.tables import parquet_bytes, read_table

ATLAS, CELLS, KINKS = "atlas", "atlas_cells", "kinks"  # the result tables it is read from
SHIPPED = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data", "conventions")
RUN_FIELDS = ("torch", "jax", "device", "torch_cpu_capability", "cpu", "scope", "utc",
              "git_commit")
CELL_COLUMNS = ["run", "framework", "rule", "name", "dtype", "mode", "input", "placement",
                "positions", "value", "error"]
BREAK_COLUMNS = ["framework", "release", "rule", "op", "kink", "runs"]


@dataclass(frozen=True)
class BuiltinCells:
    """One eager built-in of one dtype in one run: every mode's cell at every probe input."""
    rule: str
    name: str
    framework: str
    dtype: str
    cells: dict  # (mode, input label) -> study.compare.cells.Cell


@dataclass(frozen=True)
class Dataset:
    runs: list[dict]  # each run's name ("run"), label, releases, device, kernels, commit
    cells: pd.DataFrame  # CELL_COLUMNS
    breaks: pd.DataFrame  # BREAK_COLUMNS; runs: the labels that show the break, ", "-joined
    source: str  # where it was read, in words

    def builtins(self, run: str) -> list[BuiltinCells]:
        """The run's eager built-ins, typed."""
        mine = self.cells[self.cells["run"] == run]
        # one pass over plain columns: a DataFrame per (op, mode, input) took 13 s a run
        texts = {c: [None if pd.isna(v) else v for v in mine[c].tolist()]
                 for c in ("rule", "name", "framework", "dtype", "mode", "input", "placement",
                           "positions", "error")}
        values = mine["value"].tolist()
        stored: dict[tuple, list[dict]] = {}  # (rule, dtype, mode, input) -> rows, in order
        names = {}
        for i, value in enumerate(values):
            rule = texts["rule"][i]
            stored.setdefault((rule, texts["dtype"][i], texts["mode"][i], texts["input"][i]),
                              []).append({"placement": texts["placement"][i],
                                          "positions": texts["positions"][i], "value": value,
                                          "error": texts["error"][i]})
            names.setdefault(rule, (texts["name"][i], texts["framework"][i]))
        out: dict[tuple, dict] = {}
        for (rule, dtype, mode, label), rows in stored.items():
            out.setdefault((rule, dtype), {})[(mode, label)] = from_rows(rows)
        return [BuiltinCells(rule, names[rule][0], names[rule][1], dtype, cells)
                for (rule, dtype), cells in out.items()]

    @cached_property
    def by_name(self) -> dict[str, dict]:
        return {r["run"]: r for r in self.runs}


def _labels(results_dir: str) -> dict[str, str]:
    """The report's run labels (labels.json beside the results), where it has given them."""
    try:
        with open(os.path.join(os.path.dirname(results_dir), "labels.json"),
                  encoding="utf-8") as f:
            labels = json.load(f)
    except (OSError, ValueError):
        return {}
    return labels if isinstance(labels, dict) else {}


def atlas_runs(results_dir: str, errata_file: str | None = results.ERRATA_FILE) -> list:
    """The runs under `results_dir` that hold the atlas's tables, errata applied."""
    folders = [f for f in sorted(os.listdir(results_dir))
               if any(os.path.isdir(os.path.join(results_dir, f, t)) for t in (CELLS, KINKS))]
    runs, _ = results.load_runs([results_dir], set(folders), only=tuple(folders))
    errata = results.load_errata(errata_file) if errata_file else []
    return [r for r in results.ready(runs, errata) if {CELLS, KINKS} & set(r.tables)]


def _name(run) -> str:
    return os.path.basename(run.path)[:-len(".json")]


def _run_entry(run, labels: dict) -> dict:
    from study.report.runs import configuration
    p = run.provenance
    gpu = p.get("gpu")
    return {"run": _name(run), "label": labels.get(configuration(run)),
            **{k: p.get(k) for k in RUN_FIELDS},
            "gpu": gpu.get("name") if isinstance(gpu, dict) else gpu,
            "kinks": bool(run.ok(KINKS))}


def _cells(run) -> pd.DataFrame:
    """The run's eager built-ins' cells that stand (no erratum withdrew them)."""
    ops = {r["rule"]: r["name"] for r in run.ok(ATLAS)
           if r["kind"] == "builtin" and r["execution"] == "eager"}
    cells = run.frame(CELLS)
    keep = cells["rule"].isin(list(ops)) & (cells["execution"] == "eager")
    for table, match, _ in run.errata:
        if table == CELLS:
            withdrawn = pd.Series(True, index=cells.index)
            for column, values in match.items():
                withdrawn &= cells[column].isin(values if isinstance(values, list) else [values])
            keep &= ~withdrawn
    mine = cells[keep].assign(run=_name(run), name=lambda f: f["rule"].map(ops))
    return mine[CELL_COLUMNS].reset_index(drop=True)


def _breaks(runs: list, labels: dict) -> pd.DataFrame:
    """Per framework and release, each built-in and kink that breaks the documented rule in
    the runs of that release, with the runs; a built-in of several inputs, at each tie (the
    column `tie`, None for a kink of one input; its `op` names the output element where the op
    has several: study.conformance.TIE_KINKS), whether or not its own page says it does."""
    from study.conformance import TIE_KINKS, conformance_rows, public_release, rule_breakers
    from study.conformance._listing import LISTING_COLUMNS
    from study.report.runs import configuration
    from study.report.table import frame
    found: dict[tuple, list[str]] = {}
    for run in runs:
        label = labels.get(configuration(run), _name(run))
        for fw in ("torch", "jax"):
            records = [r for r in run.ok(KINKS) + run.ok(TIE_KINKS) if r["framework"] == fw]
            if not records:
                continue
            release = public_release(run.provenance[fw])
            keys = {r["name"]: r["rule"] for r in records}
            listing = frame(conformance_rows(fw, release, label, records), LISTING_COLUMNS)
            for b in rule_breakers(listing):
                key = (fw, release, keys[b["op"]], b["op"], float(b["kink"]), b["tie"])
                found.setdefault(key, []).append(label)
    return pd.DataFrame([(*k[:5], ", ".join(sorted(v, key=label_order)), k[5])
                         for k, v in sorted(found.items(), key=lambda kv: (*kv[0][:5],
                                                                            kv[0][5] or ""))],
                        columns=BREAK_COLUMNS + ["tie"])


def label_order(label: str) -> tuple:
    """C2 before C10: a run label's letters, then its number."""
    head = label.rstrip("0123456789")
    tail = label[len(head):]
    return (head, int(tail) if tail else -1, label)


def build(results_dir: str = results.RESULTS_DIR, errata_file: str | None = results.ERRATA_FILE,
          labels: dict | None = None) -> Dataset:
    """The dataset that the results under `results_dir` make."""
    labels = _labels(results_dir) if labels is None else labels
    return from_runs(atlas_runs(results_dir, errata_file), labels,
                     f"the results in {os.path.relpath(results_dir, REPO_ROOT)}")


def from_runs(runs: list, labels: dict, source: str) -> Dataset:
    """The dataset of these runs (errata applied; those of the standard scope that hold the
    atlas's tables), each named by its label."""
    runs = sorted((r for r in runs if r.scope == "standard" and {CELLS, KINKS} & set(r.tables)),
                  key=lambda r: (r.provenance["utc"], r.path))
    cells = [_cells(r) for r in runs if CELLS in r.tables and ATLAS in r.tables]
    return Dataset([_run_entry(r, labels) for r in runs],
                   pd.concat(cells, ignore_index=True) if cells else pd.DataFrame(
                       columns=CELL_COLUMNS),
                   _breaks([r for r in runs if KINKS in r.tables], labels), source)


def _package_version() -> str:
    try:
        return version("relu-gradient-study")
    except PackageNotFoundError:
        return "not installed"


def write(dataset: Dataset, folder: str = SHIPPED, built_by: dict | None = None) -> None:
    """The dataset's three files in `folder`, each written atomically. `built_by`: the commit
    of the code that wrote it (study.runs.provenance.code_commit)."""
    os.makedirs(folder, exist_ok=True)
    meta = {"built_by": built_by, "runs": dataset.runs}
    for name, table in (("cells", dataset.cells), ("breaks", dataset.breaks)):
        write_text_atomically(os.path.join(folder, f"{name}.parquet"),
                              parquet_bytes(_arrow(table)))
    write_text_atomically(os.path.join(folder, "runs.json"),
                          json.dumps(meta, indent=1, sort_keys=True) + "\n")


def _arrow(table: pd.DataFrame):
    import pyarrow as pa
    return pa.Table.from_pandas(table, preserve_index=False)


def shipped(folder: str = SHIPPED) -> Dataset:
    """The dataset the package carries."""
    try:
        with open(os.path.join(folder, "runs.json"), encoding="utf-8") as f:
            meta = json.load(f)
        cells, breaks = (read_table(os.path.join(folder, f"{n}.parquet")).to_pandas()
                         for n in ("cells", "breaks"))
    except (OSError, ValueError, StudyError) as exc:
        raise StudyError(f"the conventions dataset in {folder} does not load: {exc}") from None
    commit = (meta.get("built_by") or {}).get("commit", "")
    return Dataset(meta["runs"], cells, breaks,
                   f"the conventions dataset of relu-gradient-study {_package_version()}"
                   + (f" (built at {commit[:7]})" if commit else ""))


def load(results_dir: str = results.RESULTS_DIR) -> Dataset:
    """The checkout's results where they hold the atlas, else the dataset the package ships."""
    if os.path.isdir(results_dir) and any(
            os.path.isdir(os.path.join(results_dir, f, t)) for f in os.listdir(results_dir)
            for t in (CELLS, KINKS)):
        return build(results_dir)
    return shipped()

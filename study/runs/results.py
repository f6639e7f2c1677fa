"""Result files: reports/results/<experiment>/<file>, where <file> is
<host>-<machine>__<device>__torch-<v>__jax-<v>__<scope>.json

Each holds {"experiment", "provenance", "records": [...]}; records are flat dicts of JSON
values (nested lists for arrays). Files are written atomically. A run is identified by its
experiment and `identity`, so runs that differ in any part sit side by side and never overwrite
each other; <machine> is a 6-hex-digit hash of its CPU model, CPU kernels, core count and GPU
model (a cpu run's: its host's, where provenance records one).

reports/reference/ holds the study's published runs in the same layout: the report compares
every other run with them (study.compare.reproduction).
"""
import contextlib
import gc
import hashlib
import json
import os
import re
import shutil
from dataclasses import dataclass, field, replace

import numpy as np

from study.runs.atomic import write_text_atomically
from study.errors import StudyError
from study.runs.provenance import REPO_ROOT, SCOPES

RESULTS_DIR = os.path.join(REPO_ROOT, "reports", "results")
REFERENCE_DIR = os.path.join(REPO_ROOT, "reports", "reference")
ERRATA_FILE = os.path.join(REPO_ROOT, "reports", "errata.json")
REQUIRED_PROVENANCE = ("utc", "host", "device", "torch", "jax", "scope")


@dataclass(frozen=True)
class Run:
    experiment: str
    provenance: dict
    records: list
    path: str  # as cited in the report: relative to the folder above the results folder
    tag: str = field(default="", compare=False)  # its label in the report's run legend: "C1"
    # the label and what sets it apart: "C4 (torch 2.14.1)"
    title: str = field(default="", compare=False)

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

    def ok_records(self) -> list[dict]:
        """Records of the cases that ran and stand: failed cases carry "case_error", and
        records an erratum withdrew carry "withdrawn" (see apply_errata)."""
        return [r for r in self.records if "case_error" not in r and "withdrawn" not in r]

    def failed_records(self) -> list[dict]:
        return [r for r in self.records if "case_error" in r or "withdrawn" in r]


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


def result_filename(p: dict) -> str:
    machine = hashlib.sha256("|".join(map(str, identity(p)[2:6])).encode()).hexdigest()[:6]
    parts = (f"{p['host']}-{machine}", p["device"], f"torch-{p['torch']}", f"jax-{p['jax']}",
             p["scope"])
    return "__".join(_safe(s) for s in parts) + ".json"


def partial_path(root: str, experiment: str, provenance: dict) -> str:
    """Where a run in progress keeps its finished cases (study.runs.checkpoint)."""
    return os.path.join(root, experiment, ".partial-" + result_filename(provenance) + "l")


def jsonable(value):
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


def write_run(experiment: str, provenance: dict, records: list, root: str = RESULTS_DIR) -> str:
    folder = os.path.join(root, experiment)
    path = os.path.join(folder, result_filename(provenance))
    doc = {"experiment": experiment, "provenance": provenance, "records": records}
    try:
        os.makedirs(folder, exist_ok=True)
        write_text_atomically(path, json.dumps(doc, indent=1, sort_keys=True, default=jsonable)
                              + "\n")
    except OSError as e:
        raise StudyError(f"cannot write results to {folder}: {e.strerror or e}") from None
    return path


@contextlib.contextmanager
def collector_paused():
    """The cyclic garbage collector off for a block that allocates millions of small objects
    in no cycle (parsed records, rows of cells): each of its full collections walks every
    object loaded so far, some 5 s in all for the committed results. Reference counting frees
    them as ever; a cycle made in the block is collected after it."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


# A dict's value that opens with '[' and runs LONG_ARRAY bytes without a quote: most of a result
# file's bytes are such arrays of numbers, and runs repeat the same ones many times over
LONG_ARRAY = 1000
_LONG_ARRAY_VALUE = re.compile(rb'": (\[)[^"]{%d,}' % LONG_ARRAY)
_MARK = "\x00"  # a placeholder's first character: the text read is checked for "\u0000"


def parse_json(data: bytes, arrays: dict) -> object:
    """json.loads of the UTF-8 text `data`, with each long array of numbers parsed once per
    distinct text in `arrays` (bytes -> value, shared by the files of one load): equal arrays
    share one list, so a loaded record is read, never changed in place.

    Each such array, from its '[' to the last ']' before the next quote or brace (so that it
    holds no string or object), is swapped for a placeholder string, the rest parsed by
    json.loads, and each placeholder swapped back as its dict is built. An array that is not
    the whole value, or not JSON, fails json.loads; a placeholder that lands inside a string
    ends the string with its quote, and the backslash after it is no JSON. Any such text, and
    any that json.loads rejects, is parsed whole, so that a corrupt file's error is the one
    json.loads gives."""
    pieces, found, done = [], [], 0
    for match in _LONG_ARRAY_VALUE.finditer(data):
        start, bound = match.start(1), match.end()
        for brace in b"{}":
            at = data.find(brace, start, bound)
            bound = bound if at < 0 else at
        end = data.rfind(b"]", start, bound) + 1
        if end:
            pieces += (data[done:start], b'"\\u0000%d"' % len(found))
            found.append(data[start:end])
            done = end
    pieces.append(data[done:])
    if not found or any(b"\\u0000" in text for text in pieces[::2]):
        return json.loads(data.decode("utf-8"))

    def restore(obj: dict) -> dict:
        for key, value in obj.items():
            if value.__class__ is str and value[:1] == _MARK:
                array = found[int(value[1:])]
                parsed = arrays.get(array)
                if parsed is None:
                    parsed = arrays[array] = json.loads(array.decode("utf-8"))
                obj[key] = parsed
        return obj

    try:
        return json.loads(b"".join(pieces).decode("utf-8"), object_hook=restore)
    except ValueError:
        return json.loads(data.decode("utf-8"))


# How write_run lays a file out (indented by one space, keys sorted): its records come last, each
# opening and closing on a line of its own indented by two spaces, and no other line is
_RECORDS_OPEN, _RECORDS_CLOSE = b'\n "records": [\n  {', b"\n  }\n ]\n}\n"
_BETWEEN_RECORDS = b"\n  },\n  {"


def parse_result(data: bytes, arrays: dict, records: dict) -> object:
    """parse_json of a result file, with each distinct record's text parsed once per load
    (`records`: text -> record, shared by the files of one load, as `arrays` is): reruns and
    releases measure the same records over and over, and a record, like an array, is read and
    never changed in place. A record that a file repeats is parsed again: records of one file
    are apart. A file laid out otherwise than write_run lays it out is parsed whole, and so is
    one whose pieces do not parse, so that a corrupt file's error is the one json.loads gives."""
    start, end = data.find(_RECORDS_OPEN), len(data) - len(_RECORDS_CLOSE)
    if start < 0 or not data.endswith(_RECORDS_CLOSE):
        return parse_json(data, arrays)
    try:
        doc = parse_json(data[:start] + b'\n "records": []\n}', arrays)
        texts = data[start + len(_RECORDS_OPEN):end].split(_BETWEEN_RECORDS)
        mine, parsed = set(), []  # mine: the texts of this file's records so far
        for text in texts:
            record = None if text in mine else records.get(text)
            if record is None:
                record = parse_json(b"{" + text + b"}", arrays)
                records.setdefault(text, record)
            mine.add(text)
            parsed.append(record)
    except ValueError:
        return parse_json(data, arrays)
    if not isinstance(doc, dict) or doc.get("records") != []:
        return parse_json(data, arrays)
    doc["records"] = parsed
    return doc


def _load_one(path: str, rel: str, known: set[str], arrays: dict | None = None,
              records: dict | None = None) -> Run:
    try:
        with open(path, "rb") as f:
            doc = parse_result(f.read(), {} if arrays is None else arrays,
                               {} if records is None else records)
    except (OSError, ValueError) as e:
        raise StudyError(f"corrupt result file {path}: {e}") from None
    if not isinstance(doc, dict) or not {"experiment", "provenance", "records"} <= doc.keys():
        raise StudyError(f"not a study result file: {path} (needs experiment, provenance, records)")
    experiment, prov, records = doc["experiment"], doc["provenance"], doc["records"]
    if experiment not in known:
        raise StudyError(f"result file {path} is for unknown experiment {experiment!r}")
    if os.path.basename(os.path.dirname(path)) != experiment:
        raise StudyError(f"result file {path} says experiment {experiment!r} but sits elsewhere")
    if (not isinstance(prov, dict) or not all(k in prov for k in REQUIRED_PROVENANCE)
            or prov["scope"] not in SCOPES
            or not isinstance(records, list) or not all(isinstance(r, dict) for r in records)):
        raise StudyError(f"malformed result file {path}: provenance or records have the wrong "
                         f"shape")
    return Run(experiment, prov, records, rel)


_shared_parsing: tuple[dict, dict] | None = None  # while shared_loads runs: _found_runs' caches


@contextlib.contextmanager
def shared_loads():
    """Loads within it share what they parse, each distinct long array and record once, and
    their upgrades, each record's once (study.runs.upgrades.shared): a report's results and
    reference hold many of the same records, some files the same bytes."""
    from study.runs.upgrades import shared
    global _shared_parsing
    outer = _shared_parsing
    _shared_parsing = outer or ({}, {})
    try:
        with shared():
            yield
    finally:
        _shared_parsing = outer


def _found_runs(roots: list[str], known: set[str], only: tuple[str, ...] | None) -> list[Run]:
    found = []
    # each distinct array (parse_json) and record (parse_result) of the files found, as one
    arrays, records = _shared_parsing or ({}, {})
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
                    found.append(_load_one(os.path.join(folder, name), rel, known, arrays,
                                           records))
    return found


def load_runs(roots: list[str], known: set[str], only: tuple[str, ...] | None = None
              ) -> tuple[list[Run], list[str]]:
    """All runs under `roots` (of the experiments `only` names, where given), newest per
    experiment and identity, plus notes saying which duplicates were dropped. Order is
    deterministic."""
    with collector_paused():
        found = _found_runs(roots, known, only)
    newest: dict[tuple, Run] = {}
    notes = []
    for run in sorted(found, key=lambda r: (r.provenance["utc"], r.path)):
        if run.key in newest:
            notes.append(f"{newest[run.key].path} was replaced by the newer {run.path} "
                         f"(same experiment, device, machine, releases and scope)")
        newest[run.key] = run
    runs = sorted(newest.values(), key=lambda r: (r.experiment, r.label))
    return runs, notes


# --- errata: cells measured by code that a later fix changed -----------------------------------

def load_errata(path: str = ERRATA_FILE) -> list[dict]:
    """reports/errata.json: [{"experiment", "runs": {provenance field: value}, "records":
    {record field: value or [values]}, "fields": [record fields] (optional), "why"}]."""
    if not os.path.exists(path):
        return []
    try:
        with open(path, encoding="utf-8") as f:
            errata = json.load(f)
    except (OSError, ValueError) as e:
        raise StudyError(f"corrupt errata file {path}: {e}") from None
    needed = {"experiment", "runs", "records", "why"}
    if not isinstance(errata, list) or not all(isinstance(e, dict) and needed <= e.keys()
                                               for e in errata):
        raise StudyError(f"malformed errata file {path}: each entry needs "
                         f"{', '.join(sorted(needed))}")
    return errata


def _matches(values: dict, item: dict) -> bool:
    return all(item.get(k) in (v if isinstance(v, list) else [v]) for k, v in values.items())


def withdraw(record: dict, erratum: dict) -> dict:
    """The record with the erratum's fields replaced by "withdrawn: <why>" (listed under
    "withdrawn_fields"), or, where it names no fields, marked "withdrawn" as a whole."""
    if "fields" not in erratum:
        return {**record, "withdrawn": erratum["why"]}
    fields = {f: erratum["why"] for f in erratum["fields"] if f in record}
    return {**record, **{f: f"withdrawn: {why}" for f, why in fields.items()},
            "withdrawn_fields": {**record.get("withdrawn_fields", {}), **fields}}


def apply_errata(runs: list[Run], errata: list[dict]) -> list[Run]:
    """Runs with every record or field an erratum names withdrawn: the report leaves those
    cells out, or marks them, and says why; it never shows them as current."""
    out = []
    for run in runs:
        mine = [e for e in errata if e["experiment"] == run.experiment
                and _matches(e["runs"], run.provenance)]
        if not mine:
            out.append(run)
            continue
        records = []
        for rec in run.records:
            for e in (e for e in mine if _matches(e["records"], rec)):
                rec = withdraw(rec, e)
            records.append(rec)
        out.append(replace(run, records=records))
    return out


def ready(runs: list[Run], errata: list[dict], experiments) -> list[Run]:
    """Loaded runs as the study reads them: errata applied to the records as stored, then
    older record shapes brought up to date by each experiment's upgrade (study.runs.upgrades)."""
    from study.runs.upgrades import shared, upgrade
    by_name = {e.name: e for e in experiments}
    with collector_paused(), shared():  # a record the runs share is upgraded once, and shared
        return [replace(run, records=upgrade(by_name[run.experiment], run.records))
                for run in apply_errata(runs, errata)]


def promote_to_reference(results_dir: str = RESULTS_DIR, reference_dir: str = REFERENCE_DIR,
                         known: set[str] = frozenset()) -> list[str]:
    """Make the runs under results_dir the reference: replace reference_dir's files with
    copies of them (after checking that every one loads). Returns the copied paths."""
    runs, _ = load_runs([results_dir], known)
    staging = reference_dir.rstrip("/") + ".new"
    shutil.rmtree(staging, ignore_errors=True)
    copied = []
    for run in runs:
        src = os.path.join(os.path.dirname(results_dir.rstrip("/")), run.path)
        dst_dir = os.path.join(staging, run.experiment)
        os.makedirs(dst_dir, exist_ok=True)
        shutil.copy2(src, os.path.join(dst_dir, os.path.basename(src)))
        copied.append(os.path.join(reference_dir, run.experiment, os.path.basename(src)))
    old = reference_dir.rstrip("/") + ".old"
    shutil.rmtree(old, ignore_errors=True)
    if os.path.isdir(reference_dir):
        os.replace(reference_dir, old)
    os.replace(staging, reference_dir)
    shutil.rmtree(old, ignore_errors=True)
    return copied


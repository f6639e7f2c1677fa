"""What a long run has done so far, kept case by case so that an interrupted run resumes.

While an experiment runs on a device, every finished case is appended as one JSON line to
`<results>/<experiment>/.partial-<result file name>l`, after a header that names the code
(a hash of every .py file under study/ and experiments/) and the list of cases. A rerun with
the same arguments and the same code skips the cases already there; other code, or another
case list, starts afresh. The partial file is removed once the result file is written.
"""
import hashlib
import json
import os

from study.runs.atomic import write_text_atomically
from study.runs.provenance import REPO_ROOT
from study.runs.results import jsonable, write_run
from study.measure.rules import written

CODE_FOLDERS = ("study", "experiments")


def code_fingerprint(root: str = REPO_ROOT) -> str:
    digest = hashlib.sha256()
    for folder in CODE_FOLDERS:
        for base, dirs, files in sorted(os.walk(os.path.join(root, folder))):
            dirs.sort()
            for name in sorted(f for f in files if f.endswith(".py")):
                path = os.path.join(base, name)
                digest.update(os.path.relpath(path, root).encode())
                with open(path, "rb") as f:
                    digest.update(f.read())
    return digest.hexdigest()[:16]


class Checkpoint:
    def __init__(self, path: str, cases: list[dict], fingerprint: str):
        self.path = path
        self.header = json.loads(json.dumps({"code": fingerprint, "cases": written(cases)},
                                            default=jsonable))
        self.done: dict[int, dict] = {}  # case index -> {"records", "seconds"}
        self.discarded = False

    def load(self) -> None:
        """Read the cases already done, if the file was written by this code for these cases."""
        if not os.path.exists(self.path):
            return
        with open(self.path, encoding="utf-8") as f:
            lines = f.read().splitlines()
        try:
            header = json.loads(lines[0]) if lines else None
        except ValueError:
            header = None
        if header != self.header:
            self.discarded = True
            return
        for line in lines[1:]:
            try:
                entry = json.loads(line)
            except ValueError:  # the line being written when the run stopped
                break
            self.done[entry["index"]] = entry

    def start(self) -> None:
        """Write the header, keeping the cases already done (or none, if discarded)."""
        os.makedirs(os.path.dirname(self.path) or ".", exist_ok=True)
        with open(self.path, "w", encoding="utf-8") as f:
            f.write(json.dumps(self.header) + "\n")
            for index in sorted(self.done):
                f.write(json.dumps(self.done[index], default=jsonable) + "\n")

    def add(self, index: int, records: list[dict], seconds: float) -> None:
        entry = {"index": index, "records": records, "seconds": seconds}
        self.done[index] = entry
        with open(self.path, "a", encoding="utf-8") as f:
            f.write(json.dumps(entry, default=jsonable) + "\n")
            f.flush()
            os.fsync(f.fileno())

    def remove(self) -> None:
        if os.path.exists(self.path):
            os.unlink(self.path)


# --- chunks: a run of cases I:J only (`study run NAME --cases I:J`), merged once all are in -----
#
# A chunk writes `<results>/<experiment>/.chunk-<I>-<J>-<result file name>`: a result file
# (experiment, provenance, records) for its cases, plus "cases": [I, J, total]. Its name starts
# with a dot, so the loader never reads a chunk as a run. Chunks of one run share the result
# file name (their provenance has the same identity), so they never overwrite each other, and
# merge_chunks writes the one result file once they cover cases 0 to total, in case order.

def chunk_path(root: str, experiment: str, result_name: str, start: int, stop: int) -> str:
    return os.path.join(root, experiment, f".chunk-{start}-{stop}-{result_name}")


def result_name_of_chunk(path: str) -> str:
    return os.path.basename(path).split("-", 3)[3]


def write_chunk(path: str, experiment: str, provenance: dict, records: list,
                cases: tuple[int, int, int]) -> None:
    doc = {"experiment": experiment, "provenance": provenance, "records": records,
           "cases": list(cases)}
    os.makedirs(os.path.dirname(path), exist_ok=True)
    write_text_atomically(path, json.dumps(doc, indent=1, sort_keys=True, default=jsonable)
                          + "\n")


def merge_chunks(paths: list[str]) -> str | None:
    """Write the result file that the chunk files `paths` (of one run) make up, and remove them.
    Returns its path, or None (writing nothing) while the chunks do not yet cover every case
    exactly once. The provenance is the first chunk's, with the summed wall time, and each
    chunk's own cases, node, time and wall time under "chunks"."""
    docs = []
    for path in paths:
        with open(path, encoding="utf-8") as f:
            docs.append(json.load(f))
    docs.sort(key=lambda doc: doc["cases"][0])
    names = {result_name_of_chunk(p) for p in paths}
    if len(names) != 1 or len({doc["experiment"] for doc in docs}) != 1:
        raise ValueError(f"chunks of different runs cannot be merged: {sorted(names)}")
    total = docs[0]["cases"][2]
    if [doc["cases"][:2] for doc in docs] != _tiling(docs, total):
        return None
    provenance = dict(docs[0]["provenance"])
    provenance["wall_s"] = round(sum(doc["provenance"]["wall_s"] for doc in docs), 3)
    provenance["chunks"] = [{"cases": doc["cases"][:2],
                             **{k: doc["provenance"].get(k) for k in ("node", "utc", "wall_s")}}
                            for doc in docs]
    records = [record for doc in docs for record in doc["records"]]
    root = os.path.dirname(os.path.dirname(paths[0]))
    written = write_run(docs[0]["experiment"], provenance, records, root)
    for path in paths:
        os.unlink(path)
    return written


def _tiling(docs: list[dict], total: int) -> list[list[int]]:
    """The chunk bounds that cover 0..total exactly, following the chunks' own starts."""
    bounds, position = [], 0
    for doc in docs:
        if doc["cases"][0] != position:
            return []
        position = doc["cases"][1]
        bounds.append(doc["cases"][:2])
    return bounds if position == total else []

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

from study.provenance import REPO_ROOT
from study.results import jsonable
from study.rules import written

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

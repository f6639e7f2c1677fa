"""CPU against GPU: the same experiment's cells on each device, as a result of the study.

Each cuda run is paired with a cpu run of the same experiment and scope: of the same releases
and machine (host and CPU model) where there is one, else the closest (same torch, then the
newest), marked as differing in releases or machine. Cells are compared by
study.compare.reproduction.compare_runs, as a rerun is (timing is left out: its numbers are
compared
within a run, never across devices). Each differing cell
is put in a group by what it shows, a pure function of its name and its two values:

- subnormal: at ±min_subnormal, or a value that is subnormal in the cell's dtype;
- placement: one device's value depends on where the element sits (a Placed cell);
- last bits: both finite and within a few units in the last place of the dtype;
- error: one device raised (an Error cell);
- other.
"""
import math
from dataclasses import dataclass
from functools import cache

from study.compare.cells import Cell, Error, Placed, Value
from study.measure.conventions import finfo
from study.compare.reproduction import CellComparison, compare_runs
from study.runs.results import Run

NOT_ACROSS_DEVICES = ("timing",)
ULPS = 4  # "last bits": within this many units in the last place


def machine(run: Run) -> tuple:
    """Host name, CPU model and the CPU kernels torch dispatches to: the CPU side of its
    identity."""
    return run.identity[1:4]


@dataclass(kw_only=True)
class DevicePair(CellComparison):
    """A cuda run against its cpu partner: ours are the cpu run's cells, theirs the cuda run's."""
    experiment: str
    cpu: Run
    cuda: Run
    same_releases: bool
    same_machine: bool  # the same host and CPU model


def _partner(cuda: Run, runs: list[Run]) -> Run | None:
    p = cuda.provenance
    cpus = [r for r in runs if r.experiment == cuda.experiment and r.scope == cuda.scope
            and r.provenance["device"] == "cpu"]
    if not cpus:
        return None
    return max(cpus, key=lambda r: ((r.provenance["torch"], r.provenance["jax"])
                                    == (p["torch"], p["jax"]),
                                    machine(r) == machine(cuda),
                                    r.provenance["torch"] == p["torch"], r.provenance["utc"]))


def pairs(runs: list[Run], experiments) -> list[DevicePair]:
    by_name = {e.name: e for e in experiments}
    out = []
    for cuda in (r for r in runs if r.provenance["device"] == "cuda"
                 and r.experiment not in NOT_ACROSS_DEVICES and r.experiment in by_name):
        cpu = _partner(cuda, runs)
        if cpu is None:
            continue
        c = compare_runs(by_name[cuda.experiment], cpu, cuda)
        out.append(DevicePair(
            **vars(c), experiment=cuda.experiment, cpu=cpu, cuda=cuda,
            same_releases=all(cpu.provenance[k] == cuda.provenance[k] for k in ("torch", "jax")),
            same_machine=machine(cpu) == machine(cuda)))
    return out


@cache
def _limits(dtype: str) -> tuple[float, float]:
    """(smallest normal, eps) of the dtype."""
    fi = finfo(dtype)
    return float(fi.smallest_normal), float(fi.eps)


def _number(cell: Cell):
    return cell.value if isinstance(cell, Value) else None


def _is_subnormal(value, dtype: str | None) -> bool:
    if not isinstance(value, float) or value == 0 or not math.isfinite(value) or dtype is None:
        return False
    return abs(value) < _limits(dtype)[0]


def _within_ulps(a, b, dtype: str | None) -> bool:
    if not (isinstance(a, float) and isinstance(b, float)) or dtype is None:
        return False
    if not (math.isfinite(a) and math.isfinite(b)):
        return False
    eps = _limits(dtype)[1]
    return abs(a - b) <= ULPS * eps * max(abs(a), abs(b))


def group_of(name: tuple, a: Cell, b: Cell) -> str:
    fields = dict(name)
    dtype = fields.get("dtype")
    dtype = dtype if dtype in ("float16", "bfloat16", "float32", "float64") else None
    x, y = _number(a), _number(b)
    if "subnormal" in str(fields.get("input", "")) or _is_subnormal(x, dtype) \
            or _is_subnormal(y, dtype):
        return "subnormal"
    if isinstance(a, Placed) or isinstance(b, Placed):
        return "placement"
    if _within_ulps(x, y, dtype):
        return "last bits"
    if isinstance(a, Error) or isinstance(b, Error):
        return "error"
    return "other"


def groups_of(pair: DevicePair) -> dict[str, int]:
    counts: dict[str, int] = {}
    for name, a, b in pair.different:
        g = group_of(name, a, b)
        counts[g] = counts.get(g, 0) + 1
    return counts

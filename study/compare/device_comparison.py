"""CPU against GPU: the same experiment's cells on each device, as a result of the study.

Each cuda run is paired with a cpu run of the same experiment and scope measured on the same host
(`one_host`), of the same releases where there is one: a cpu run of another host differs in
more than its device, so it is never a partner. Cells are compared by
study.compare.reproduction.compare_runs, as a rerun is (an experiment whose `across_devices` is
off, timing, is left out: its numbers are compared within a run, never across devices). Each
differing cell is put in a group by what it shows, a pure function of its name and its two
values:

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
from study.measure.inputs import finfo
from study.compare.reproduction import CellComparison, compare_runs
from study.runs.results import Run

ULPS = 4  # "last bits": within this many units in the last place


def machine(run: Run) -> tuple:
    """Host name, CPU model and the CPU kernels torch dispatches to: the CPU side of its
    identity."""
    return run.identity[1:4]


def gpu_of(run: Run) -> str | None:
    """The GPU model a cuda run computed on, or the host's a cpu run recorded (`host_gpu`)."""
    gpu = run.provenance.get("gpu")
    return gpu.get("name") if isinstance(gpu, dict) else run.provenance.get("host_gpu")


def one_host(cpu: Run, cuda: Run) -> bool:
    """Whether a cpu run and a cuda run ran on one host: the same host name, CPU model, kernels
    and core count, and the cpu run's host GPU (`host_gpu`) the cuda run's GPU. Host names and
    CPUs repeat across hosts ("vm", the same Xeon under an H100 and an H200), so a cpu run
    written before provenance recorded its host's GPU is on the cuda run's host only where both
    were measured in one session there: by the same code commit on the same UTC day."""
    if cpu.identity[1:5] != cuda.identity[1:5]:
        return False
    if "host_gpu" in cpu.provenance:
        return cpu.provenance["host_gpu"] == gpu_of(cuda)
    p, q = cpu.provenance, cuda.provenance
    return (p.get("git_commit") is not None and p.get("git_commit") == q.get("git_commit")
            and str(p["utc"])[:10] == str(q["utc"])[:10])


def host_gpu(run: Run, runs: list[Run]) -> str | None:
    """The GPU model on the host a run ran on: its own (cuda), as recorded (cpu), or that of a
    cuda run measured on its host (`one_host`); None where nothing says."""
    if gpu_of(run) is not None or run.provenance["device"] != "cpu":
        return gpu_of(run)
    return next((gpu_of(r) for r in runs if r.provenance["device"] == "cuda"
                 and one_host(run, r)), None)


@dataclass(kw_only=True)
class DevicePair(CellComparison):
    """A cuda run against a cpu run of its host: ours are the cpu run's cells, theirs the cuda
    run's."""
    experiment: str
    cpu: Run
    cuda: Run
    same_releases: bool


def _partner(cuda: Run, runs: list[Run]) -> Run | None:
    p = cuda.provenance
    cpus = [r for r in runs if r.experiment == cuda.experiment and r.scope == cuda.scope
            and r.provenance["device"] == "cpu" and one_host(r, cuda)]
    return max(cpus, key=lambda r: ((r.provenance["torch"], r.provenance["jax"])
                                    == (p["torch"], p["jax"]), r.provenance["utc"]),
               default=None)


def pairs(runs: list[Run], experiments) -> list[DevicePair]:
    """Each cuda run with a cpu partner of its host, cell by cell."""
    by_name = {e.name: e for e in experiments}
    out = []
    for cuda in (r for r in runs if r.provenance["device"] == "cuda"
                 and r.experiment in by_name and by_name[r.experiment].across_devices):
        cpu = _partner(cuda, runs)
        if cpu is None:
            continue
        c = compare_runs(by_name[cuda.experiment], cpu, cuda)
        out.append(DevicePair(
            **vars(c), experiment=cuda.experiment, cpu=cpu, cuda=cuda,
            same_releases=all(cpu.provenance[k] == cuda.provenance[k] for k in ("torch", "jax"))))
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

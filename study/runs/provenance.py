"""Where a number came from: versions, host, CPU and GPU, threads, matmul precision, git state."""
import datetime
import importlib.metadata
import os
import platform
import socket
import subprocess
import sys

import numpy as np

from study.measure.devices import Device, cuda_absence_reason
from study.measure.frameworks import matmul_settings

REPO_ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
SCOPES = ("quick", "standard", "full")


def _git(*args: str) -> str | None:
    try:
        out = subprocess.run(["git", "-C", REPO_ROOT, *args], capture_output=True, text=True,
                             timeout=10, check=True)
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip()


# what renders the report; the conventions dataset under study/data is what a render writes
RENDERING_CODE = ("study", "experiments", "pyproject.toml", "constraints.txt",
                  ":(exclude)study/data/conventions")


def code_commit() -> dict | None:
    """The newest commit that changed the code that renders (study/, experiments/ and the pins)
    and its commit date: what a rendered report names as the code that rendered it. Committing a
    re-rendered report, a README or a test leaves it unchanged, so a report stays a pure
    function of its result files and this code. None outside a git checkout."""
    out = _git("log", "-1", "--format=%H %cI", "--", *RENDERING_CODE)
    if not out:
        return None
    commit, date = out.split()
    return {"commit": commit, "date": date}


def cpu_model() -> str:
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def torch_cpu_capability() -> str | None:
    """The ATen CPU kernel set torch dispatches to (e.g. AVX2, AVX512): it decides which
    vectorised kernel bodies run, and so where a value's code path changes."""
    try:
        import torch
        return torch.backends.cpu.get_cpu_capability()
    except (ImportError, AttributeError, RuntimeError):  # no torch: a JAX user's check
        return None


def jax_plugins() -> dict:
    """Installed JAX distributions other than jax and jaxlib (the CUDA plugins), by version."""
    out = {}
    for dist in importlib.metadata.distributions():
        name = (dist.metadata["Name"] or "").lower()
        if name.startswith("jax") and name not in ("jax", "jaxlib"):
            out[name] = dist.version
    return dict(sorted(out.items()))


def _nvidia_smi(field: str) -> list[str]:
    """One line per GPU of `nvidia-smi --query-gpu=<field>`; [] where there is no nvidia-smi."""
    try:
        out = subprocess.run(["nvidia-smi", f"--query-gpu={field}", "--format=csv,noheader"],
                             capture_output=True, text=True, timeout=20, check=True)
    except (OSError, subprocess.SubprocessError):
        return []
    return [line.strip() for line in out.stdout.splitlines() if line.strip()]


def _nvidia_driver() -> str | None:
    return next(iter(_nvidia_smi("driver_version")), None)


def host_gpu() -> str | None:
    """The GPU models on the host, whatever device the run uses ("NVIDIA H200"; distinct models
    joined by ", "); None where nvidia-smi lists none. A cpu run on a GPU host records it, so
    two hosts alike but for their GPU are told apart (study.runs.results.identity)."""
    return ", ".join(dict.fromkeys(_nvidia_smi("name"))) or None


def gpu_details(device: Device) -> dict | None:
    """GPU model, CUDA runtime, driver and cuDNN as torch and JAX see them; None on CPU."""
    if device.name != "cuda":
        return None
    import torch
    props = torch.cuda.get_device_properties(0)
    jd = device.jax_device
    return {"name": torch.cuda.get_device_name(0),
            "memory_bytes": int(props.total_memory),
            "compute_capability": f"{props.major}.{props.minor}",
            "torch_cuda_runtime": torch.version.cuda,
            "cudnn": (torch.backends.cudnn.version() if torch.backends.cudnn.is_available()
                      else None),
            "driver": _nvidia_driver(),
            "jax_device_kind": getattr(jd, "device_kind", None),
            "jax_platform_version": jd.client.platform_version}


CONCURRENT_ENV = "STUDY_CONCURRENT_WITH"
# set by study.runs.engine for a shard's process: the engine ("ray 2.60.0") and the node it ran on
ENGINE_ENV, NODE_ENV = "STUDY_ENGINE", "STUDY_ENGINE_NODE"


def engine_fields() -> dict:
    """{"engine", "node"} of a run made as a shard on an engine; {} for a plain `study run`."""
    if not os.environ.get(ENGINE_ENV):
        return {}
    return {"engine": os.environ[ENGINE_ENV], "node": os.environ.get(NODE_ENV, "")}


def collect(device: Device, seed: int | None, scope: str) -> dict:
    """Provenance of one run of one experiment on one device."""
    import jax
    import jaxlib
    import torch
    status = _git("status", "--porcelain", "--", ".", ":(exclude)reports",
                  ":(exclude)study/data/conventions")  # what a render writes, as reports/
    return {
        "utc": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "git_commit": _git("rev-parse", "HEAD"),
        "git_dirty": None if status is None else bool(status),
        "host": socket.gethostname(),
        "os": platform.platform(),
        "cpu": cpu_model(),
        "cpu_count": os.cpu_count(),
        "torch_cpu_capability": torch_cpu_capability(),
        "device": device.name,
        "gpu": gpu_details(device),
        "host_gpu": host_gpu(),
        "cuda_absent": cuda_absence_reason(),
        "python": platform.python_version(),
        "torch": torch.__version__,
        "jax": jax.__version__,
        "jaxlib": jaxlib.__version__,
        "jax_plugins": jax_plugins(),
        "numpy": np.__version__,
        "jax_backend": device.jax_device.platform,  # the run's, set as JAX's default per case
        "jax_default_backend": jax.default_backend(),  # the host's (gpu on a GPU host)
        "jax_backend_version": device.jax_device.client.platform_version,
        "env": {k: os.environ.get(k, "") for k in ("XLA_PYTHON_CLIENT_PREALLOCATE",
                                                  "ATEN_CPU_CAPABILITY", "CUDA_VISIBLE_DEVICES",
                                                  "OMP_WAIT_POLICY")},
        "threads": {
            "torch_intra_op": torch.get_num_threads(),
            "torch_inter_op": torch.get_num_interop_threads(),
            "XLA_FLAGS": os.environ.get("XLA_FLAGS", ""),
            "OMP_NUM_THREADS": os.environ.get("OMP_NUM_THREADS", ""),
        },
        "matmul": matmul_settings(),
        "seed": seed,
        "scope": scope,
        "argv": sys.argv[1:],
        # `study run --jobs N`: "N:a,b": the pool of other experiments, N at a time, that
        # shared the machine with this one (absent: it ran alone)
        **({"side_by_side": {"jobs": int(os.environ[CONCURRENT_ENV].split(":")[0]),
                             "with": os.environ[CONCURRENT_ENV].split(":")[1].split(",")}}
           if os.environ.get(CONCURRENT_ENV) else {}),
        **engine_fields(),
    }

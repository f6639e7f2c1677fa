"""Where a number came from: versions, host, device, threads, matmul precision, git state."""
import datetime
import os
import platform
import socket
import subprocess
import sys

import jax
import jaxlib
import numpy as np
import torch

from study.devices import Device, cuda_absence_reason
from study.frameworks import matmul_settings

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _git(*args: str) -> str | None:
    try:
        out = subprocess.run(["git", "-C", REPO_ROOT, *args], capture_output=True, text=True,
                             timeout=10, check=True)
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip()


def cpu_model() -> str:
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def gpu_name(device: Device) -> str | None:
    return torch.cuda.get_device_name(0) if device.name == "cuda" else None


def collect(device: Device, seed: int | None) -> dict:
    """Provenance of one run of one experiment on one device."""
    status = _git("status", "--porcelain", "--", ".", ":(exclude)reports")
    return {
        "utc": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "git_commit": _git("rev-parse", "HEAD"),
        "git_dirty": None if status is None else bool(status),
        "host": socket.gethostname(),
        "os": platform.platform(),
        "cpu": cpu_model(),
        "cpu_count": os.cpu_count(),
        "device": device.name,
        "gpu": gpu_name(device),
        "cuda_absent": cuda_absence_reason(),
        "python": platform.python_version(),
        "torch": torch.__version__,
        "jax": jax.__version__,
        "jaxlib": jaxlib.__version__,
        "numpy": np.__version__,
        "jax_backend": jax.default_backend(),
        "threads": {
            "torch_intra_op": torch.get_num_threads(),
            "torch_inter_op": torch.get_num_interop_threads(),
            "XLA_FLAGS": os.environ.get("XLA_FLAGS", ""),
            "OMP_NUM_THREADS": os.environ.get("OMP_NUM_THREADS", ""),
        },
        "matmul": matmul_settings(),
        "seed": seed,
        "argv": sys.argv[1:],
    }

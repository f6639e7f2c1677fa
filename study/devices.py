"""One code path for every device: experiments take a `Device` and never branch on its name."""
import socket
from dataclasses import dataclass

import jax
import numpy as np
import torch

from study.errors import StudyError

DEVICE_CHOICES = ("cpu", "cuda", "all")


@dataclass(frozen=True)
class Device:
    name: str  # "cpu" or "cuda"

    @property
    def torch_device(self) -> torch.device:
        return torch.device(self.name)

    @property
    def jax_device(self):
        return jax.devices("gpu" if self.name == "cuda" else "cpu")[0]

    def to_torch(self, array: np.ndarray, requires_grad: bool = False) -> torch.Tensor:
        t = torch.from_numpy(np.ascontiguousarray(array)).to(self.torch_device)
        return t.requires_grad_(requires_grad)

    def to_jax(self, array: np.ndarray):
        return jax.device_put(np.ascontiguousarray(array), self.jax_device)

    def synchronize(self) -> None:
        if self.name == "cuda":
            torch.cuda.synchronize()


def cuda_absence_reason() -> str | None:
    """None when both frameworks see a GPU; otherwise why "cuda" is not available here."""
    missing = []
    if not torch.cuda.is_available():
        missing.append(f"torch {torch.__version__} sees no CUDA device")
    try:
        jax.devices("gpu")
    except RuntimeError:
        missing.append(f"jax {jax.__version__} has no gpu backend")
    if not missing:
        return None
    return f"no CUDA device on {socket.gethostname()} ({'; '.join(missing)})"


def resolve_devices(choice: str) -> list[Device]:
    """Map a --device argument to the devices to run on; asking for an absent GPU is an error."""
    if choice not in DEVICE_CHOICES:
        raise StudyError(f"unknown device {choice!r}; choose one of {', '.join(DEVICE_CHOICES)}")
    absent = cuda_absence_reason()
    if choice == "cuda" and absent:
        raise StudyError(f"--device cuda: {absent}")
    if choice == "cpu":
        return [Device("cpu")]
    if choice == "cuda":
        return [Device("cuda")]
    return [Device("cpu")] + ([] if absent else [Device("cuda")])

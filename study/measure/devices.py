"""One code path for every device: experiments take a `Device` and never branch on its name.

Every torch tensor and JAX array an experiment computes with is made through its `Device`
(`to_torch`, `to_jax`, `torch_tensor`, or from arrays that were), and comes back
to the host only through `to_numpy` / `to_python`, which check that it lives on that device.
tests/test_device_audit.py runs every experiment with the frameworks' defaults pointing
elsewhere, so an array made without the Device fails loudly.
"""
import contextlib
import socket
import sys
from dataclasses import dataclass

import numpy as np

from study.errors import StudyError

DEVICE_CHOICES = ("cpu", "cuda", "all")


class DeviceEscape(RuntimeError):
    """An array reached the host from a device other than the one the run names."""


@dataclass(frozen=True)
class Device:
    name: str  # "cpu" or "cuda"

    @property
    def torch_device(self):
        import torch
        return torch.device(self.name)

    @property
    def jax_device(self):
        import jax
        return jax.devices("gpu" if self.name == "cuda" else "cpu")[0]

    @contextlib.contextmanager
    def as_default(self):
        """JAX's default device set to this one while a case runs. JAX makes some arrays
        without being asked (the zeros of a gradient that does not depend on its input, in
        eager jax.grad), and puts them on its default device, which on a GPU host is the GPU
        even in a cpu run. torch's default stays the CPU: a stray torch tensor in a cuda run
        then fails loudly, and torch's default-device mode would slow every op it times.
        Where JAX is not imported (a torch user's check), there is nothing to set."""
        if "jax" not in sys.modules:
            yield
            return
        import jax
        with jax.default_device(self.jax_device):
            yield

    def to_torch(self, array, requires_grad: bool = False, dtype=None):
        import torch
        a = np.array(array, order="C")  # keeps 0-d, unlike np.ascontiguousarray
        if a.dtype.name == "bfloat16":  # ml_dtypes' bfloat16, which torch cannot read: widen
            a = a.astype(np.float32)  # exactly, then narrow exactly below
        t = torch.from_numpy(a).to(self.torch_device)
        if dtype is not None:
            t = t.to(dtype)
        return t.requires_grad_(requires_grad)

    def torch_tensor(self, data, dtype=None, requires_grad: bool = False):
        """torch.tensor(data) on this device (Python scalars and lists included)."""
        import torch
        return torch.tensor(data, dtype=dtype, device=self.torch_device,
                            requires_grad=requires_grad)

    def to_jax(self, array, dtype=None):
        import jax
        a = np.asarray(array, order="C")  # np.ascontiguousarray would make 0-d 1-d
        return jax.device_put(a if dtype is None else a.astype(dtype), self.jax_device)

    def check(self, value) -> None:
        """Raise DeviceEscape unless a torch tensor or JAX array lives on this device."""
        torch, jax = sys.modules.get("torch"), sys.modules.get("jax")
        if torch is not None and isinstance(value, torch.Tensor):
            if value.device.type != self.torch_device.type:
                raise DeviceEscape(f"a torch tensor on {value.device} reached the host from a "
                                   f"run on {self.name}")
        elif jax is not None and isinstance(value, jax.Array):
            if value.devices() != {self.jax_device}:
                raise DeviceEscape(f"a JAX array on {sorted(map(str, value.devices()))} reached "
                                   f"the host from a run on {self.name}")

    def to_numpy(self, value) -> np.ndarray:
        """A torch tensor or JAX array of this device as a numpy array (float64 for the
        16-bit float types numpy cannot hold natively)."""
        self.check(value)
        torch, jax = sys.modules.get("torch"), sys.modules.get("jax")
        if torch is not None and isinstance(value, torch.Tensor):
            value = value.detach()
            if value.dtype in (torch.bfloat16, torch.float16):
                value = value.to(torch.float32)
            return value.cpu().numpy()
        if jax is not None and isinstance(value, jax.Array):
            return np.asarray(jax.device_get(value))
        return np.asarray(value)

    def to_host(self, value) -> np.ndarray:
        """A result on the host as float64 (torch's ZeroTensor materialised)."""
        if hasattr(value, "_is_zerotensor") and value._is_zerotensor():
            import torch
            value = torch.zeros(value.shape, dtype=torch.float64, device=value.device)
        return self.to_numpy(value).astype(np.float64)

    def to_python(self, value):
        """A scalar or nested list for a record (float64 for float types)."""
        a = self.to_numpy(value)
        if a.dtype.kind == "f" or a.dtype.name == "bfloat16":
            a = a.astype(np.float64)
        return a.tolist()

    def synchronize(self) -> None:
        if self.name == "cuda" and "torch" in sys.modules:
            import torch
            torch.cuda.synchronize()


def cuda_absence_reason(frameworks: tuple[str, ...] = ("torch", "jax")) -> str | None:
    """None when each of `frameworks` sees a GPU; otherwise why "cuda" is not available here."""
    missing = []
    if "torch" in frameworks:
        import torch
        if not torch.cuda.is_available():
            missing.append(f"torch {torch.__version__} sees no CUDA device")
    if "jax" in frameworks:
        import jax
        try:
            jax.devices("gpu")
        except RuntimeError:
            missing.append(f"jax {jax.__version__} has no gpu backend")
    if not missing:
        return None
    return f"no CUDA device on {socket.gethostname()} ({'; '.join(missing)})"


def resolve_devices(choice: str, frameworks: tuple[str, ...] = ("torch", "jax")) -> list[Device]:
    """Map a --device argument to the devices to run on; asking for an absent GPU is an error.
    `frameworks`: those that must see the GPU (a check of a torch rule needs torch's alone)."""
    if choice not in DEVICE_CHOICES:
        raise StudyError(f"unknown device {choice!r}; choose one of {', '.join(DEVICE_CHOICES)}")
    if choice == "cpu":
        return [Device("cpu")]
    absent = cuda_absence_reason(frameworks)
    if choice == "cuda" and absent:
        raise StudyError(f"--device cuda: {absent}")
    if choice != "all":
        return [Device(choice)]
    return [Device("cpu")] + ([] if absent else [Device("cuda")])

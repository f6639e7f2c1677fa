"""Provenance says which code path ran and what was set; a missing package stops the study early."""
import os
import subprocess
import sys

import torch

from study import provenance

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def test_a_cpu_run_records_the_code_path_the_shared_gpu_setting_and_no_gpu(cpu):
    p = provenance.collect(cpu, seed=0, scope="quick")
    assert p["device"] == "cpu" and p["gpu"] is None  # no GPU details under a cpu label
    assert p["torch_cpu_capability"] == torch.backends.cpu.get_cpu_capability()
    assert p["cpu"] and p["cpu_count"] >= 1
    assert p["env"]["XLA_PYTHON_CLIENT_PREALLOCATE"] == "false"  # set by importing study
    assert p["torch"] == torch.__version__ and p["jax_backend"] == "cpu"
    if not torch.cuda.is_available():
        assert p["cuda_absent"]  # the reason is recorded, never silently empty


def test_a_missing_package_is_named_in_one_line_before_torch_or_jax_is_imported():
    # Hide tabulate from the import system, then import study in a fresh interpreter.
    code = ("import sys\n"
            "class Hide:\n"
            "    @staticmethod\n"
            "    def find_spec(name, path=None, target=None):\n"
            "        if name == 'tabulate': raise ImportError(name)\n"
            "sys.meta_path.insert(0, Hide)\n"
            "import atexit\n"
            "atexit.register(lambda: print('torch imported' if 'torch' in sys.modules else 'no torch'))\n"
            "import study\n")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True)
    assert out.returncode == 2
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1 and "tabulate" in lines[0] and "pip install tabulate" in lines[0]
    assert out.stdout.strip() == "no torch"

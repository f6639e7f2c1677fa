"""Provenance says which code path ran and what was set; a missing package stops the study early.

These tests hold on any host: a test that needs a GPU, or its absence, skips itself otherwise.
"""
import os
import subprocess
import sys

import pytest
import torch

from study.runs import provenance
from study.measure.devices import Device, cuda_absence_reason

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
NO_GPU = cuda_absence_reason()


def test_a_cpu_run_records_the_cpu_code_path_and_no_gpu_details_on_any_host(cpu):
    p = provenance.collect(cpu, seed=0, scope="quick")
    assert p["device"] == "cpu" and p["gpu"] is None  # no GPU details under a cpu label
    assert p["jax_backend"] == "cpu"  # the run's backend, even where JAX's default is a GPU
    assert p["torch_cpu_capability"] == torch.backends.cpu.get_cpu_capability()
    assert p["cpu"] and p["cpu_count"] >= 1
    assert p["env"]["XLA_PYTHON_CLIENT_PREALLOCATE"] == "false"  # set by importing study
    assert p["torch"] == torch.__version__


@pytest.mark.skipif(NO_GPU is None, reason="this host has a GPU")
def test_a_host_without_a_gpu_records_why_there_are_no_gpu_numbers(cpu):
    p = provenance.collect(cpu, seed=0, scope="quick")
    assert p["cuda_absent"] == NO_GPU and "no CUDA device on" in p["cuda_absent"]


@pytest.mark.skipif(NO_GPU is not None, reason=f"needs a GPU: {NO_GPU}")
def test_a_cuda_run_records_the_gpu_both_frameworks_use():
    p = provenance.collect(Device("cuda"), seed=0, scope="quick")
    assert p["device"] == "cuda" and p["jax_backend"] == "gpu" and p["cuda_absent"] is None
    assert p["gpu"]["name"] == torch.cuda.get_device_name(0) and p["gpu"]["torch_cuda_runtime"]


def test_a_missing_package_is_named_in_one_line_before_torch_or_jax_is_imported():
    # Hide tabulate from the import system, then start the CLI in a fresh interpreter.
    code = ("import runpy, sys\n"
            "class Hide:\n"
            "    @staticmethod\n"
            "    def find_spec(name, path=None, target=None):\n"
            "        if name == 'tabulate': raise ImportError(name)\n"
            "sys.meta_path.insert(0, Hide)\n"
            "import atexit\n"
            "atexit.register(lambda: print('torch imported' if 'torch' in sys.modules "
            "else 'no torch'))\n"
            "sys.argv = ['study', 'list']\n"
            "runpy.run_module('study', run_name='__main__')\n")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True)
    assert out.returncode == 2
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1 and "tabulate" in lines[0] and "pip install tabulate" in lines[0]
    assert out.stdout.strip() == "no torch"


def test_importing_the_package_sets_only_what_jax_needs_before_it_starts():
    code = ("import os, sys\n"
            "os.environ.pop('XLA_PYTHON_CLIENT_PREALLOCATE', None)\n"
            "import study\n"
            "print(os.environ['XLA_PYTHON_CLIENT_PREALLOCATE'], 'torch' in sys.modules, "
            "'jax' in sys.modules)\n")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True,
                         check=True)
    assert out.stdout.split() == ["false", "False", "False"]


def test_every_run_records_the_gpu_models_of_its_host(monkeypatch):
    # nvidia-smi lists one line per GPU; two alike are one model, as a cpu run on that host sees
    calls = []

    def fake_run(args, **kwargs):
        calls.append(args)
        return subprocess.CompletedProcess(args, 0, "NVIDIA H200\nNVIDIA H200\n", "")
    monkeypatch.setattr(provenance.subprocess, "run", fake_run)
    assert provenance.host_gpu() == "NVIDIA H200"
    assert calls[-1][:2] == ["nvidia-smi", "--query-gpu=name"]

    def no_smi(args, **kwargs):
        raise FileNotFoundError(args[0])
    monkeypatch.setattr(provenance.subprocess, "run", no_smi)
    assert provenance.host_gpu() is None

"""Reproducible PyTorch/JAX study of custom ReLU gradient rules.

Importing `study` checks that every package it needs is importable (one line and exit 2 if
not, before torch or jax is imported) and applies the shared framework settings (see
`study.frameworks`).
"""
import os
import sys

from study.requirements import missing_packages

_missing = missing_packages()
if _missing:
    print(f"error: {sys.executable} lacks the Python packages {', '.join(_missing)}; install "
          f"them (pip install {' '.join(_missing)}) or use make without PY= to get .venv",
          file=sys.stderr)
    sys.exit(2)

# Both frameworks share one GPU: JAX would otherwise take 75% of its memory at start-up.
# Set before JAX initialises a backend; recorded in every result's provenance.
os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")

from study import frameworks as _frameworks  # noqa: E402,F401  (side effect: settings)

"""Reproducible PyTorch/JAX study of custom ReLU gradient rules.

Importing `study` sets one thing, which must be set before JAX starts: both frameworks share
one GPU, and JAX would otherwise take 75% of its memory at start-up, so
XLA_PYTHON_CLIENT_PREALLOCATE=false (unless already set; recorded in every result's
provenance). Everything else is explicit: `python -m study` checks the packages it needs
(study.runs.requirements) before importing torch or JAX, and
`study.measure.frameworks.use_shared_settings()`
applies the numeric settings every experiment shares.
"""
import os

os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")


def __getattr__(name: str):
    """`study.check(fn)` without importing torch and JAX at `import study`."""
    if name == "check":
        import study.check
        return study.check
    raise AttributeError(f"module 'study' has no attribute {name!r}")

"""Reproducible PyTorch/JAX study of custom ReLU gradient rules.

Importing `study` applies the shared framework settings (see `study.frameworks`).
"""
from study import frameworks as _frameworks  # noqa: F401  (side effect: settings)

"""Comparing what was measured: one cell type and one equality (cells), estimates with their
intervals (stats) and the distribution functions they use (distributions), a rerun against the
reference (reproduction) and CPU against GPU (device_comparison)."""

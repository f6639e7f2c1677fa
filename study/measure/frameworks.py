"""Framework settings that every experiment shares, applied by use_shared_settings().

Both frameworks get float32 matmuls at full precision (JAX on GPU defaults to a faster,
lower precision than torch), and JAX gets float64 so the dtype sweeps can reach it. The runner
(study.runs.runner) and the test suite call use_shared_settings() before any case runs; code
that imports the library on its own calls it too. A check of one framework's rule names that
framework alone, so that the other is never imported; reading results imports neither.
"""
FRAMEWORKS = ("torch", "jax")
MATMUL_PRECISION = "highest"


def use_shared_settings(frameworks: tuple[str, ...] = FRAMEWORKS) -> None:
    if "jax" in frameworks:
        import jax
        jax.config.update("jax_enable_x64", True)
        jax.config.update("jax_default_matmul_precision", MATMUL_PRECISION)
    if "torch" in frameworks:
        import torch
        torch.set_float32_matmul_precision(MATMUL_PRECISION)


def matmul_settings() -> dict:
    import jax
    import torch
    return {
        "torch_float32_matmul_precision": torch.get_float32_matmul_precision(),
        "torch_cuda_allow_tf32": bool(torch.backends.cuda.matmul.allow_tf32),
        "jax_default_matmul_precision": str(jax.config.jax_default_matmul_precision),
        "jax_enable_x64": bool(jax.config.jax_enable_x64),
    }

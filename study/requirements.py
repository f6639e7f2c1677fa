"""The packages the study imports, checked before anything heavy is imported."""
import importlib.util

# import name -> pip name
REQUIRED = {"torch": "torch", "jax": "jax", "jaxlib": "jaxlib", "numpy": "numpy",
            "ml_dtypes": "ml_dtypes", "scipy": "scipy", "tabulate": "tabulate",
            "sklearn": "scikit-learn", "matplotlib": "matplotlib", "mlxtend": "mlxtend",
            "flatbuffers": "flatbuffers"}


def _importable(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):
        return False


def missing_packages() -> list[str]:
    return [pip for module, pip in REQUIRED.items() if not _importable(module)]

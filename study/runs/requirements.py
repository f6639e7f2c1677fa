"""The packages the study imports, checked before anything heavy is imported."""
import importlib.util
import sys

# import name -> pip name
REQUIRED = {"torch": "torch", "jax": "jax", "jaxlib": "jaxlib", "numpy": "numpy",
            "ml_dtypes": "ml_dtypes", "scipy": "scipy", "pandas": "pandas", "jinja2": "Jinja2",
            "tabulate": "tabulate", "sklearn": "scikit-learn", "matplotlib": "matplotlib",
            "mlxtend": "mlxtend", "flatbuffers": "flatbuffers"}


def _importable(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):
        return False


def missing_packages() -> list[str]:
    return [pip for module, pip in REQUIRED.items() if not _importable(module)]


def exit_if_missing() -> None:
    """Exit 2 with one line on stderr if a package the study needs cannot be imported."""
    missing = missing_packages()
    if missing:
        print(f"error: {sys.executable} lacks the Python packages {', '.join(missing)}; install "
              f"them (pip install {' '.join(missing)}) or use make without PY= to get .venv",
              file=sys.stderr)
        sys.exit(2)

"""The packages a command imports, checked before anything heavy is imported: `check` and
`conformance` need the instrument's core and one framework; every other command needs the whole
study (pip install 'relu-gradient-study[study]')."""
import importlib.util
import sys

# import name -> pip name
CORE = {"numpy": "numpy", "ml_dtypes": "ml_dtypes", "jinja2": "Jinja2", "pandas": "pandas",
        "packaging": "packaging", "pyarrow": "pyarrow"}
FRAMEWORKS = {"torch": "torch", "jax": "jax"}
STUDY = {**CORE, "torch": "torch", "jax": "jax", "jaxlib": "jaxlib", "scipy": "scipy",
         "tabulate": "tabulate", "sklearn": "scikit-learn", "matplotlib": "matplotlib",
         "mlxtend": "mlxtend", "flatbuffers": "flatbuffers"}
REQUIRED = STUDY
INSTRUMENT_COMMANDS = ("check", "conformance")


def _importable(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):
        return False


def installed_frameworks() -> list[str]:
    """The frameworks importable here, in FRAMEWORKS' order."""
    return [fw for fw in FRAMEWORKS if _importable(fw)]


def _instrument_level(command: str | None) -> bool:
    return command is None or command.startswith("-") or command in INSTRUMENT_COMMANDS


def missing_packages(command: str | None = None) -> list[str]:
    """The pip names `command` needs that cannot be imported here (no command, or an option
    such as --help, needs the instrument's)."""
    if _instrument_level(command):
        missing = [pip for module, pip in CORE.items() if not _importable(module)]
        if not any(_importable(m) for m in FRAMEWORKS):
            missing.append("torch or jax")
        return missing
    return [pip for module, pip in STUDY.items() if not _importable(module)]


def exit_if_missing(command: str | None = None) -> None:
    """Exit 2 with one line on stderr if a package the command needs cannot be imported."""
    missing = missing_packages(command)
    if missing:
        needs = (f"study {command}" if command in INSTRUMENT_COMMANDS
                 else "study" if _instrument_level(command) else "the study")
        print(f"error: {sys.executable} lacks the Python packages {', '.join(missing)} that "
              f"{needs} needs; install them (pip install {' '.join(missing)}) or use make "
              f"without PY= to get .venv", file=sys.stderr)
        sys.exit(2)

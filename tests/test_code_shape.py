"""The code keeps the shape the study promises: no function too long to hold in mind."""
import ast
import os
import re

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MAX_LINES = 60


def functions(folder: str):
    for base, _, files in os.walk(os.path.join(ROOT, folder)):
        for name in (f for f in files if f.endswith(".py")):
            path = os.path.join(base, name)
            with open(path, encoding="utf-8") as f:
                tree = ast.parse(f.read())
            for node in ast.walk(tree):
                if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    yield os.path.relpath(path, ROOT), node


def test_no_function_in_the_library_or_the_experiments_exceeds_60_lines():
    long = [f"{path}:{node.lineno} {node.name} ({node.end_lineno - node.lineno + 1} lines)"
            for folder in ("study", "experiments") for path, node in functions(folder)
            if node.end_lineno - node.lineno + 1 > MAX_LINES]
    assert not long, long


def imports() -> dict[str, set[str]]:
    """{module: the project modules it imports}, for every module of study/ and experiments/."""
    modules = {}
    for folder in ("study", "experiments"):
        for base, _, files in os.walk(os.path.join(ROOT, folder)):
            for name in (f for f in files if f.endswith(".py")):
                path = os.path.relpath(os.path.join(base, name), ROOT)
                modules[path[:-3].replace(os.sep, ".").removesuffix(".__init__")] = path
    out = {}
    for module, path in modules.items():
        with open(os.path.join(ROOT, path), encoding="utf-8") as f:
            tree = ast.parse(f.read())
        found = set()
        for node in ast.walk(tree):
            names = ([a.name for a in node.names] if isinstance(node, ast.Import) else
                     [node.module] + [f"{node.module}.{a.name}" for a in node.names]
                     if isinstance(node, ast.ImportFrom) and node.module else [])
            found |= {n for n in names if n in modules and n != module}
        out[module] = found
    return out


def test_the_library_never_imports_the_experiments():
    entry = ("study.cli", "study.__main__")  # `python -m study` runs the registered experiments
    assert not {m: i for m, i in imports().items() if m.startswith("study") and m not in entry
                and any(n.startswith("experiments") for n in i)}


EXPERIMENT_NAMES = tuple(sorted(os.listdir(os.path.join(ROOT, "experiments"))))
# strings that coincide with an experiment's name but name something else: the report's answer
# anchors (#answer-zero-point, #answer-transforms; citations hold them) and the sections of
# `study check`'s JSON and findings (its documented schema)
NOT_EXPERIMENTS = {("study/runs/experiment.py", "zero_point"),
                   ("study/runs/experiment.py", "transforms"),
                   ("study/check/_result.py", "transforms"),
                   ("study/check/_result.py", "clone_hazard"),
                   ("study/check/_sections.py", "transforms")}


def strings_naming_experiments(path: str, source: str) -> list[str]:
    """String constants of a module (docstrings included) that import or name an experiment:
    an experiment's name as a whole string, or inside one `import experiments`, a module
    `experiments.<name>` or a path `experiments/<name>` (code run from a string, an
    experiment's files)."""
    names = set(EXPERIMENT_NAMES) - {"__init__.py", "__pycache__"}
    inside = re.compile(r"\bimport experiments\b|\bexperiments\.\w|\bexperiments/("
                        + "|".join(sorted(names)) + ")")
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            text = node.value
            if text in names and (path, text) not in NOT_EXPERIMENTS or inside.search(text):
                found.append(f"{path}:{node.lineno} {text[:60]!r}")
    return found


def test_the_library_names_no_experiment_in_a_string():
    entry = ("study/cli.py", "study/__main__.py")  # the entry point registers the experiments
    found = []
    for base, _, files in os.walk(os.path.join(ROOT, "study")):
        for name in (f for f in files if f.endswith(".py")):
            path = os.path.relpath(os.path.join(base, name), ROOT)
            if path not in entry:
                with open(os.path.join(ROOT, path), encoding="utf-8") as f:
                    found += strings_naming_experiments(path, f.read())
    assert not found, found


def test_the_string_guard_catches_what_the_library_held_before():
    # study/history.py's code string, study/check/_sections.py's path, upgrades' lookup by name
    assert strings_naming_experiments("study/x.py", 'code = "import experiments; x = 1"')
    assert strings_naming_experiments("study/x.py", 'P = os.path.join("reports", "zero_point")')
    assert strings_naming_experiments("study/x.py", 'fill = FILLS.get("timing")')
    assert strings_naming_experiments("study/x.py", '"""reads experiments/zero_point/x.py"""')
    assert not strings_naming_experiments("study/x.py", 'label = "the timing of a call"')
    assert not strings_naming_experiments("study/x.py", '"""every module in experiments/"""')


def test_each_experiment_measures_summarises_and_reports_one_way():
    # measure imports study and its package's measuring helpers; summary imports study and its
    # package's reading helpers, never measure; report imports its summary and study; nobody
    # imports a report, nor another experiment's modules
    for module, found in imports().items():
        parts = module.split(".")
        if len(parts) != 3 or parts[0] != "experiments":
            continue
        package, layer = ".".join(parts[:2]), parts[2]
        others = {n for n in found if n.startswith("experiments") and n != package
                  and not n.startswith(package + ".")}
        assert not others and f"{package}.report" not in found, (module, others)
        if layer == "measure":  # study, and its own package's measuring helpers
            assert not {f"{package}.summary", f"{package}.report"} & found, module
        if layer == "summary":
            assert f"{package}.report" not in found and f"{package}.measure" not in found, module



def test_no_import_cycle():
    graph = imports()
    # a package's __init__ may import its parts
    for package in [m for m in graph if m.count(".") == 1]:
        graph[package] = {n for n in graph[package] if not n.startswith(package + ".")}
    state = {}

    def visit(m, path):
        state[m] = "open"
        for n in graph.get(m, ()):
            assert state.get(n) != "open", " -> ".join(path + [n])
            if n not in state:
                visit(n, path + [n])
        state[m] = "done"
    for m in graph:
        if m not in state:
            visit(m, [m])

"""The code keeps the shape the study promises: no function too long to hold in mind."""
import ast
import os

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

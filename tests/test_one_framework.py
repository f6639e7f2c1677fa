"""One framework at a time, in this venv where both are installed: the check of a torch rule
leaves JAX unimported, and the check of a JAX rule leaves torch unimported (a fresh process each:
the suite's conftest imports JAX). tests/test_install.py runs the same without the other
framework installed at all (make test-install)."""
import os
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

CHECK = """
import sys
import study
from study.measure.rule import load
result = study.check(load({target!r}), quick=True)
assert result.exit_code == 1 and any(f.kind == "vjp_not_linear" for f in result.findings)
print(sorted(m for m in ("torch", "jax") if m in sys.modules))
"""


@pytest.mark.slow
@pytest.mark.parametrize("framework, target", [
    ("torch", "tests/rules_torch_only.py:AlphaAtZero"),
    ("jax", "tests/rules_jax_only.py:alpha_at_zero")])
def test_the_check_of_a_rule_imports_its_framework_alone(framework, target):
    done = subprocess.run([sys.executable, "-c", CHECK.format(target=target)], cwd=ROOT,
                          capture_output=True, text=True, timeout=600)
    assert done.stdout.strip() == f"['{framework}']", done.stderr[-3000:]


def test_look_alikes_name_each_other_so_either_frameworks_rules_give_them(monkeypatch):
    from study.measure.rules import RULES, by_key, look_alike_of
    paired = [r for r in RULES if r.look_alike]
    assert len(paired) >= 40
    for r in paired:
        assert by_key(r.look_alike).look_alike == r.key
    # with JAX not imported, a JAX op's look-alike comes from torch's rules, and vice versa
    for hidden, shown in (("jax", "torch"), ("torch", "jax")):
        monkeypatch.delitem(sys.modules, hidden)
        for r in RULES:
            assert look_alike_of(r.key) == r.look_alike, r.key
        assert hidden not in sys.modules
        monkeypatch.undo()


REPORT_IMPORTS = """
import sys
from study.cli import main
code = main(sys.argv[1:])
print(sorted(m for m in ("torch", "jax") if m in sys.modules))
sys.exit(code)
"""


def test_the_report_renders_importing_neither_framework(tmp_path):
    # a report is a pure function of result files: the smallest committed file of each
    # experiment walks every summary and renderer, and zero_point's the upgrade of old records
    results_dir = tmp_path / "results"
    reports = os.path.join(ROOT, "reports", "results")
    for experiment in sorted(os.listdir(reports)):
        folder = os.path.join(reports, experiment)
        smallest = min((f for f in os.listdir(folder) if f.endswith(".json")),
                       key=lambda f: os.path.getsize(os.path.join(folder, f)))
        os.makedirs(results_dir / experiment)
        with open(os.path.join(folder, smallest), "rb") as src:
            (results_dir / experiment / smallest).write_bytes(src.read())
    done = subprocess.run([sys.executable, "-c", REPORT_IMPORTS, "report", "--results",
                           str(results_dir), "--reference", str(tmp_path / "none"),
                           "--out", str(tmp_path / "out")],
                          cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.strip().splitlines()[-1] == "[]", done.stdout[-3000:]
    assert os.path.exists(tmp_path / "out" / "REPORT.md")


def test_old_zero_point_records_get_the_look_alikes_the_registry_declares():
    from experiments.zero_point.upgrade import OLD_LOOK_ALIKES
    from study.measure.rules import by_key
    assert len(OLD_LOOK_ALIKES) >= 50
    for key, look_alike in OLD_LOOK_ALIKES.items():
        assert by_key(key).look_alike == look_alike, key

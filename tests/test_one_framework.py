"""One framework at a time, in this venv where both are installed: the check and the
conformance of one framework leave the other unimported, and the report imports neither (a fresh
process: the suite's conftest imports JAX). tests/test_install.py runs the same without the
other framework installed at all (make test-install)."""
import json
import os
import shutil
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# The frameworks imported after each command, in one process: a command that imports a
# framework shows it under its own name, whatever ran before it (which imported neither, or
# only the framework it judges).
COMMANDS = """
import json
import sys

def frameworks():
    return sorted(m for m in ("torch", "jax") if m in sys.modules)

framework, target, report_argv = sys.argv[1], sys.argv[2], json.loads(sys.argv[3])
imported = {}
if report_argv:
    from study.cli import main
    assert main(report_argv) == 0
    imported["report"] = frameworks()

import study
from study.measure.rule import load
result = study.check(load(target), quick=True)
assert result.exit_code == 1 and any(f.kind == "vjp_not_linear" for f in result.findings)
imported["check"] = frameworks()

# a registry rule's reproducer names it by key, after looking it up in its framework's rules
from study.check._reproducer import Source
from study.measure.rules import by_key
assert Source.of(by_key(f"{framework}_relu"), None, "builtin").spec.endswith(":by_key")
imported["registry rule's source"] = frameworks()

from study.conformance import Known, judge_installed
outcome = judge_installed(framework, f"{framework}_relu6", Known({}, "none"))
assert outcome.exit_code == 0, outcome.to_markdown()
imported["conformance"] = frameworks()
print(json.dumps(imported))
"""


def smallest_results(results_dir) -> None:
    """The smallest committed run of each experiment (its provenance file and its tables),
    copied to results_dir: a report of them walks every summary and renderer."""
    reports = os.path.join(ROOT, "reports", "results")
    for experiment in sorted(os.listdir(reports)):
        folder = os.path.join(reports, experiment)

        def files(provenance: str) -> list[str]:
            with open(os.path.join(folder, provenance), encoding="utf-8") as f:
                tables = json.load(f)["tables"]
            run = provenance[:-len(".json")]
            return [provenance] + [os.path.join(t, run + ".parquet") for t in tables]
        smallest = min((files(f) for f in os.listdir(folder) if f.endswith(".json")),
                       key=lambda fs: sum(os.path.getsize(os.path.join(folder, f)) for f in fs))
        for rel in smallest:
            os.makedirs((results_dir / experiment / rel).parent, exist_ok=True)
            shutil.copyfile(os.path.join(folder, rel), results_dir / experiment / rel)


@pytest.mark.slow
@pytest.mark.parametrize("framework, target, with_report", [
    ("torch", "tests/rules_torch_only.py:AlphaAtZero", True),
    ("jax", "tests/rules_jax_only.py:alpha_at_zero", False)])
def test_each_command_imports_the_framework_it_judges_alone(framework, target, with_report,
                                                           tmp_path):
    # a report is a pure function of result files: it imports neither framework; it runs
    # first in one of the two processes (a third would import numpy, scipy and matplotlib
    # again)
    report_argv = ["report", "--results", str(tmp_path / "results"), "--reference",
                   str(tmp_path / "none"), "--out", str(tmp_path / "out")] if with_report else []
    if with_report:
        smallest_results(tmp_path / "results")
    done = subprocess.run([sys.executable, "-c", COMMANDS, framework, target,
                           json.dumps(report_argv)], cwd=ROOT, capture_output=True, text=True,
                          timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    imported = json.loads(done.stdout.strip().splitlines()[-1])
    expected = {"check": [framework], "registry rule's source": [framework],
                "conformance": [framework]}
    assert imported == ({"report": []} | expected if with_report else expected)
    assert os.path.exists(tmp_path / "out" / "REPORT.md") == with_report


def test_look_alikes_name_each_other():
    from study.measure.rules import RULES, by_key
    paired = [r for r in RULES if r.look_alike]
    assert len(paired) >= 40
    for r in paired:
        assert by_key(r.look_alike).look_alike == r.key


def test_every_committed_atlas_row_names_the_look_alike_the_registry_declares():
    # the report pairs ops by the look-alike their atlas rows name (runs older than the field
    # got the registry's pairs when they were stored): a row naming another pair, or none where
    # the registry has one, would compare the wrong ops
    import pyarrow.parquet as pq

    from study.measure.rules import by_key
    folder = os.path.join(ROOT, "reports", "results", "zero_point", "atlas")
    stored = pq.read_table(folder, columns=["rule", "look_alike"]).to_pylist()
    assert len({row["rule"] for row in stored}) >= 50
    for rule, look_alike in {(row["rule"], row["look_alike"]) for row in stored}:
        assert by_key(rule).look_alike == look_alike, rule

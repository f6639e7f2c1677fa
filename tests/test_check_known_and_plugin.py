"""Known deviations from the command line (--known, --update-known) and the pytest plugin's
fixture and marker. The measurements are replaced by AlphaAtZero's linearity findings
(measured once, float32): the wiring around them, known files, reproducers and exit codes run
as they are, in a second instead of a check's half minute."""
import json
import os

import pytest

from study import cli
from study.check import CheckResult, _probe
from study.check._load import as_rule
from study.measure.devices import Device
from tests import rules_with_findings

pytest_plugins = ["pytester"]
RULES = os.path.abspath(rules_with_findings.__file__)


@pytest.fixture(scope="module")
def alpha_findings():
    rule = as_rule(rules_with_findings.AlphaAtZero)[0]
    _, found = _probe.linearity(rule, "float32", (0.0,), Device("cpu"))
    assert [f.where.input for f in found] == ["-0.0", "+0.0"]
    return found


@pytest.fixture
def measured_as(monkeypatch):
    """study.check's measurements replaced by a result holding these findings."""
    def use(findings):
        def checked(rule, style, twin_rule, dev, kinks, quick, fail_on):
            return CheckResult(
                target=rule.name, framework=rule.framework, style=style, device=dev.name,
                scope={"quick": quick, "skipped": [], "dtypes": ["float32"],
                       "placements": ["packed"], "compiled": "none"},
                environment={"torch": "T", "jax": "J", "cpu": "C", "cpu_capability": "K"},
                kinks={"scanned": [0.0], "given": [], "probed": [0.0]},
                findings=list(findings), fail_on=fail_on)
        monkeypatch.setattr("study.check._run._checked", checked)
    return use


def _cli(argv, capsys) -> tuple[int, str, str]:
    try:
        code = cli.main(["check", *argv])
    except SystemExit as e:
        code = e.code
    out, err = capsys.readouterr()
    return code, out, err


def test_update_known_then_known(tmp_path, capsys, measured_as, alpha_findings):
    measured_as(alpha_findings)
    target, known = f"{RULES}:AlphaAtZero", str(tmp_path / "known.json")
    code, out, err = _cli([target, "--quick", "--update-known", known], capsys)
    assert code == 0, out
    assert err.strip() == (f"wrote {known}: 0 kept, 2 new (give each a reason: --known "
                           "refuses an empty one), 0 no longer found, removed")
    data = json.load(open(known))
    assert [e["id"] for e in data["known"]] == [f.id for f in alpha_findings]
    assert data["known"][1]["where"]["input"] == "+0.0" and data["known"][1]["reason"] == ""
    code, out, err = _cli([target, "--quick", "--known", known], capsys)
    assert code == 2 and err.strip() == (f"error: {known}: entry 1 has no reason: say why the "
                                         "project accepts it")
    for entry in data["known"]:
        entry["reason"] = "0.5 at 0 on purpose"
    json.dump(data, open(known, "w"))
    code, out, _ = _cli([target, "--quick", "--known", known], capsys)
    assert code == 0 and f"2 known findings accepted ({known})" in out
    measured_as(alpha_findings[1:])  # -0.0 fixed
    code, out, _ = _cli([target, "--quick", "--known", known, "--json", "-"], capsys)
    report = json.loads(out)
    assert code == 0 and report["known"]["fixed"][0]["id"] == alpha_findings[0].id
    measured_as([])
    code, out, _ = _cli([target, "--quick", "--known", known], capsys)
    assert code == 0 and "2 known entries no longer found: fixed" in out


def test_the_json_holds_each_wrong_finding_s_reproducer(capsys, measured_as, alpha_findings):
    measured_as(alpha_findings)
    code, out, _ = _cli([f"{RULES}:AlphaAtZero", "--quick", "--json", "-"], capsys)
    data = json.loads(out)
    assert code == 1 and data["schema_version"] == 5
    first = data["findings"][0]
    assert first["expected"] == "2.0 × 0.5 = 1.0" and first["cells"] == 6
    assert f"# the rule, as the check imported it ({RULES}:AlphaAtZero)" in first["reproducer"]
    assert "('float32', 0x80000000, 2.0),  # x = -0.0" in first["reproducer"]
    assert "0x00000000" not in first["reproducer"]  # its own input only


INNER = f'''
import sys
import pytest
sys.path.insert(0, {os.path.dirname(RULES)!r})
from rules_with_findings import AlphaAtZero


def test_fixture(study_check):
    study_check(AlphaAtZero, quick=True, KNOWN)


@pytest.mark.study_check(AlphaAtZero, quick=True, KNOWN)
def test_marker():
    open("marked_body_ran", "w").close()
'''


def test_the_plugin_fails_a_test_with_the_first_screen(pytester, measured_as, alpha_findings,
                                                       monkeypatch):
    measured_as(alpha_findings)
    for name in ("CI", "BUILD_NUMBER"):  # on CI, pytest's summary repeats each whole message
        monkeypatch.delenv(name, raising=False)
    pytester.makepyfile(test_inner=INNER.replace(", KNOWN", ""))
    result = pytester.runpytest_inprocess("-p", "no:cacheprovider")
    result.assert_outcomes(failed=2)
    text = result.stdout.str()
    assert text.count("**fails** (exit 1): `vjp_not_linear` says a result is silently wrong.") == 2
    assert "| wrong | `vjp_not_linear` |" in text and "Findings in detail" not in text
    assert "Traceback" not in text and "DEBUG" not in text
    assert not (pytester.path / "marked_body_ran").exists()  # the check fails first


def test_a_known_file_beside_the_test_lets_it_pass(pytester, measured_as, alpha_findings,
                                                   monkeypatch):
    measured_as(alpha_findings)
    pytester.makefile(".json", known=json.dumps({"study_check_known": 1, "known": [
        {"kind": "vjp_not_linear", "where": {"input": "+0.0"}, "reason": "0.5 at 0"},
        {"kind": "vjp_not_linear", "where": {"input": "-0.0"}, "reason": "0.5 at 0"}]}))
    pytester.makepyfile(test_inner=INNER.replace("KNOWN", "known='known.json'"))
    pytester.mkdir("elsewhere")
    monkeypatch.chdir(pytester.path / "elsewhere")  # beside the test file, not the cwd
    result = pytester.runpytest_inprocess("-p", "no:cacheprovider",
                                          str(pytester.path))
    result.assert_outcomes(passed=2)
    assert (pytester.path / "elsewhere" / "marked_body_ran").exists()


def test_a_rule_the_check_cannot_take_fails_in_one_line(pytester):
    pytester.makepyfile(test_inner='''
import pytest

@pytest.mark.study_check(3)
def test_not_a_rule():
    pass

@pytest.mark.study_check(abs, abs)
def test_two_rules():
    pass
''')
    result = pytester.runpytest_inprocess("-p", "no:cacheprovider")
    result.assert_outcomes(failed=2)
    result.stdout.fnmatch_lines(["*study check cannot check this rule: cannot tell the "
                                 "framework*", "*@pytest.mark.study_check takes one rule*"])

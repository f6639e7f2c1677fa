"""study's pytest plugin: check a gradient rule inside a test, and fail the test with the
check's first screen (the verdict and one row per kind of finding) where the rule fails.

    pytest -p study.pytest_plugin      # or through its pytest11 entry point, once installed

    def test_my_relu(study_check):
        result = study_check(MyReLU, quick=True, known="known.json")

    @pytest.mark.study_check(MyReLU, quick=True)
    def test_my_relu_marked():
        ...                            # runs only where the check passes

The options are study.check's; a relative `known` path is read from the test file's folder.
A rule the check cannot take (study.check.UsageError) fails the test with its one line.
"""
import os

import pytest

MARKER = "study_check"


def pytest_configure(config) -> None:
    config.addinivalue_line(
        "markers", f"{MARKER}(rule, **options): run study.check(rule, **options) before the "
                   "test and fail it with the check's first screen where the rule fails")


def _known_beside(options: dict, folder) -> dict:
    known = options.get("known")
    if isinstance(known, (str, os.PathLike)) and not os.path.isabs(known):
        return {**options, "known": os.path.join(folder, known)}
    return options


def _check_or_fail(rule, folder, **options):
    from study.check import UsageError, check
    try:
        result = check(rule, **_known_beside(options, folder))
    except UsageError as exc:
        pytest.fail(f"study check cannot check this rule: {exc}", pytrace=False)
    if not result.ok:
        pytest.fail(result.first_screen(), pytrace=False)
    return result


@pytest.fixture
def study_check(request):
    """study_check(rule, **options): study.check(rule, **options), failing the test with the
    check's first screen where the rule fails; returns the CheckResult."""
    folder = os.path.dirname(str(request.path))
    return lambda rule, **options: _check_or_fail(rule, folder, **options)


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_call(item) -> None:
    marker = item.get_closest_marker(MARKER)
    if marker is None:
        return
    if len(marker.args) != 1:
        pytest.fail(f"@pytest.mark.{MARKER} takes one rule, then study.check's options by "
                    f"name; got {len(marker.args)} positional arguments", pytrace=False)
    _check_or_fail(marker.args[0], os.path.dirname(str(item.path)), **marker.kwargs)

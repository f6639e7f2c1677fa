"""`study check`: a user's custom ReLU-like gradient rule, measured as the study measures its
own 82, with findings a CI can act on; a rule of 2 or 3 inputs of one shape (a maximum(x, y),
a clamp(x, min, max) with array bounds) is measured where its inputs tie (study.check._ties).

    >>> import study
    >>> r = study.check(MyReLU, known="known.json")   # findings the project accepts
    >>> assert r.ok, r.first_screen()                  # the verdict, one row per kind

Command line: `python -m study check MODULE_OR_FILE:ATTR [--twin ...] [--quick] [--json -]
[--known FILE] [--update-known FILE]`; in pytest, `-p study.pytest_plugin` (study_check).
"""
from study.check._findings import FAILING, KINDS, Finding, Where, exit_code, parse_fail_on
from study.check._load import UsageError, as_rule, load_target, parse_args
from study.check._result import SCHEMA_VERSION, CheckResult
from study.check._run import check

__all__ = ["FAILING", "KINDS", "SCHEMA_VERSION", "CheckResult", "Finding", "UsageError", "Where",
           "as_rule", "check", "exit_code", "load_target", "parse_args", "parse_fail_on"]


class _CallableModule(type(__import__("sys"))):
    """Importing study.check makes `study.check` this package, not the function: calling the
    package calls check(), so that `study.check(fn)` works either way."""

    def __call__(self, *args, **kwargs) -> CheckResult:
        return check(*args, **kwargs)


__import__("sys").modules[__name__].__class__ = _CallableModule

"""The study's pytest plugin, registered as a `pytest11` entry point: pytest loads it wherever
relu-gradient-study is installed (or `pytest -p study.pytest_plugin`). Importing it imports no
framework. Two uses:

1. Check a gradient rule inside a test, and fail the test with the check's first screen (the
   verdict and one row per kind of finding) where the rule fails:

    def test_my_relu(study_check):
        result = study_check(MyReLU, quick=True, known="known.json")

    @pytest.mark.study_check(MyReLU, quick=True)
    def test_my_relu_marked():
        ...                            # runs only where the check passes

   The options are study.check's; a relative `known` path is read from the test file's folder.
   A rule the check cannot take (study.check.UsageError) fails the test with its one line.

2. `pytest --study-conformance` runs the conformance (study.conformance) as a suite, the way
data-apis/array-api-tests serves array libraries: one test per built-in of the installed release
and kink, and per built-in of several inputs, tie and output element, judged by PyTorch's
documented rule; a break the known list names is an xfail (an XPASS where it is fixed), a break
the op's own page states (torch.max(x, dim) at a tie) an xfail too, any other break fails. It
runs the conformance alone (the paths and testpaths given are not collected).

    pytest --study-conformance --study-framework torch            # each installed one by default
    pytest --study-conformance --study-known known.json --study-ops 'torch_clamp*'

`--study-known FILE` is a known file (study.conformance.load_known); without one the study's
committed history of the installed release serves. The framework option is `--study-framework`,
not `--framework`: a plugin loaded into every pytest session must not take a name a project's
own conftest may define.
"""
import os

import pytest

from study.commands import HELP

MARKER = "study_check"


def pytest_configure(config) -> None:
    config.addinivalue_line("markers", HELP["pytest"]["marker"])


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


# --- `pytest --study-conformance` hooks -----------------------------------------------------------

def pytest_addoption(parser):
    _add_conformance_options(parser)


@pytest.hookimpl(tryfirst=True)
def pytest_collection(session):
    if session.config.getoption("study_conformance"):
        return _collect_conformance(session)
    return None


# --- `pytest --study-conformance` ---------------------------------------------------------------

def _add_conformance_options(parser) -> None:
    words = HELP["pytest"]
    group = parser.getgroup("study-conformance", words["group"])
    group.addoption("--study-conformance", action="store_true", help=words["--study-conformance"])
    group.addoption("--study-framework", choices=("torch", "jax"),
                    help=words["--study-framework"])
    group.addoption("--study-ops", metavar="PATTERN", help=words["--study-ops"])
    group.addoption("--study-known", metavar="FILE", help=words["--study-known"])


class KinkBreak(AssertionError):
    """A built-in breaks PyTorch's documented rule at a kink: the message says how."""


class _VerdictItem(pytest.Item):
    """An item whose outcome is one conformance verdict (study.conformance._suite)."""

    def outcome(self, verdict: dict, where: str) -> None:
        """Skip, xfail, raise or pass as the verdict says; `where`: the measured place, named
        where it was not measured."""
        from study.conformance._suite import (DOCUMENTED, ERROR, FOLLOWS, KNOWN, NEW,
                                              NOT_IN_RELEASE)
        if verdict["status"] == NOT_IN_RELEASE:
            pytest.skip(verdict["why"])
        if verdict["status"] == ERROR:
            raise RuntimeError(f"{where} was not measured: {verdict['why']}")
        if verdict["status"] == DOCUMENTED:
            pytest.xfail(f"breaks, as documented: {verdict['why']}")
        if verdict["status"] in (KNOWN, NEW):
            raise KinkBreak(_break_text(verdict))
        assert verdict["status"] == FOLLOWS, verdict["status"]

    def repr_failure(self, excinfo, style=None):
        if isinstance(excinfo.value, (KinkBreak, RuntimeError)):
            return str(excinfo.value)
        return super().repr_failure(excinfo, style)


class KinkItem(_VerdictItem):
    """One built-in at one kink, measured when it runs."""

    def __init__(self, *, rule, kink: float, release: str, known, **kwargs):
        super().__init__(**kwargs)
        self.rule, self.kink, self.release, self.known = rule, kink, release, known

    def runtest(self) -> None:
        from study.conformance._kinks import kink_record
        from study.conformance._suite import kink_verdicts
        from study.measure.devices import Device
        record = kink_record(self.rule, self.kink, Device("cpu"))
        verdict, = kink_verdicts(self.rule.framework, self.release, [record], self.known)
        self.outcome(verdict, f"{self.rule.name} at {self.kink:g}")

    def reportinfo(self):
        return self.path, None, f"{self.rule.name} at {self.kink:g}"


class TieItem(_VerdictItem):
    """One built-in of several inputs at one tie (which inputs, what they hold) and output
    element, measured when it runs: the tie's records, one per output, once for its items."""

    def __init__(self, *, rule, tie, at: str, output: int, release: str, known, **kwargs):
        super().__init__(**kwargs)
        self.rule, self.tie, self.at, self.output = rule, tie, at, output
        self.release, self.known = release, known

    def runtest(self) -> None:
        from study.conformance._suite import kink_verdicts
        records = self.parent.tie_records(self.rule, self.tie, self.at)
        record = records[min(self.output, len(records) - 1)]
        verdict, = kink_verdicts(self.rule.framework, self.release, [record], self.known)
        self.outcome(verdict, f"{verdict['name']} at {verdict['tie']}")

    def reportinfo(self):
        return self.path, None, self.name


def _break_text(verdict: dict) -> str:
    from study.report.format import text
    gives = " or ".join(dict.fromkeys(text(list(g)) for g in verdict["rule gives"]))
    where = verdict.get("tie") or text(verdict["kink"])
    return (f"{verdict['name']} at {where} breaks PyTorch's documented rule "
            f"({verdict['documented rule']}, over {verdict['over']}): it gives "
            f"{gives}; measured {text(list(verdict['measured']))}; Clarke: {verdict['clarke']}")


class ConformanceSuite(pytest.Collector):
    """The built-ins of the frameworks chosen, each at each of its kinks, and each of several
    inputs at each of its ties and output elements; composition rules are left out (measured,
    never judged)."""

    def __init__(self, *, plan: list, **kwargs):
        super().__init__(**kwargs)
        self.plan = plan  # [(framework, release, Known, rules)]
        self._tie_records: dict = {}

    def tie_records(self, rule, tie, at: str) -> list[dict]:
        """study.conformance's records of the rule at the tie, one per output, measured once."""
        from study.conformance import tie_record
        from study.measure.devices import Device
        key = (rule.key, tie, at)
        if key not in self._tie_records:
            self._tie_records[key] = tie_record(rule, tie, at, Device("cpu"))
        return self._tie_records[key]

    def _tie_items(self, rule, release: str, known) -> list:
        """An item per tie, value of JUDGED_AT and output element, a known break's an xfail."""
        from study.conformance._tie_kinks import JUDGED_AT, output_name, tie_label
        items = []
        for tie in rule.input_ties:
            outputs = _outputs(rule, tie)
            for at in JUDGED_AT:
                case = tie_label(rule, tie, at)
                for j in range(outputs):
                    item = TieItem.from_parent(
                        self, name=f"{rule.key}[{case}]" + (f"[{j}]" if outputs > 1 else ""),
                        rule=rule, tie=tie, at=at, output=j, release=release, known=known)
                    reason = known.reason(rule.key, output_name(rule.name, j, outputs), 0.0,
                                          case)
                    if reason:
                        item.add_marker(pytest.mark.xfail(reason=f"known: {reason}",
                                                          raises=KinkBreak, strict=False))
                    items.append(item)
        return items

    def collect(self):
        items = []
        for framework, release, known, rules in self.plan:
            for rule in (r for r in rules if not r.composition):
                items += self._tie_items(rule, release, known) if rule.several_inputs else []
                for k in rule.kinks:
                    item = KinkItem.from_parent(self, name=f"{rule.key}[{k:g}]", rule=rule,
                                                kink=k, release=release, known=known)
                    reason = known.reason(rule.key, rule.name, k)
                    if reason:
                        item.add_marker(pytest.mark.xfail(reason=f"known: {reason}",
                                                          raises=KinkBreak, strict=False))
                    items.append(item)
        return items


def _outputs(rule, tie) -> int:
    """How many output elements the op gives at the tie (one where it cannot be called here:
    its item says why when it runs)."""
    from study.conformance import several_inputs_forward
    try:
        return several_inputs_forward(rule)(tie.point("0")).shape[1]
    except Exception:  # noqa: BLE001  a release without the op, say
        return 1


def _conformance_plan(config) -> list:
    from study import conformance
    from study.errors import StudyError
    from study.measure.frameworks import use_shared_settings
    ops = config.getoption("study_ops")
    try:
        known = (conformance.load_known(config.getoption("study_known"))
                 if config.getoption("study_known") else None)
        plan = []
        for fw in conformance.chosen_frameworks(config.getoption("study_framework"), ops):
            release, _ = conformance.installed_release(fw)
            use_shared_settings((fw,))
            plan.append((fw, release, known or conformance.committed_known(fw, release),
                         conformance.builtins(fw, ops)))
    except StudyError as e:
        raise pytest.UsageError(f"--study-conformance: {e}") from None
    return plan


def _collect_conformance(session) -> bool:
    """The collection phase with the conformance suite in place of the paths given."""
    hook = session.config.hook
    suite = ConformanceSuite.from_parent(session, name="study-conformance",
                                         nodeid="study-conformance",
                                         plan=_conformance_plan(session.config))
    hook.pytest_collectstart(collector=suite)
    report = hook.pytest_make_collect_report(collector=suite)
    hook.pytest_collectreport(report=report)
    session.testsfailed += int(report.failed)
    session.items = [x for x in report.result if isinstance(x, pytest.Item)]
    hook.pytest_collection_modifyitems(session=session, config=session.config,
                                       items=session.items)
    hook.pytest_collection_finish(session=session)
    session.testscollected = len(session.items)
    return True

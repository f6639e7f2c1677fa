"""Strict numerics, switched on once for every test; two virtual CPU devices for the audit."""
import os

# Before JAX starts: a second CPU device for tests/test_device_audit.py to send strays to.
os.environ["XLA_FLAGS"] = (os.environ.get("XLA_FLAGS", "")
                           + " --xla_force_host_platform_device_count=2").strip()

# Before torch starts: inductor's compiled kernels kept per forced kernel set. Its disk cache
# does not tell a kernel built with AVX-512 from one wanted under ATEN_CPU_CAPABILITY=avx2, and
# under that setting a kernel the default run left there raised "SystemError: <built-in function
# kernel> returned a result with an exception set" (the suite passed with a fresh folder).
if "ATEN_CPU_CAPABILITY" in os.environ and "TORCHINDUCTOR_CACHE_DIR" not in os.environ:
    import getpass
    import tempfile
    os.environ["TORCHINDUCTOR_CACHE_DIR"] = os.path.join(
        tempfile.gettempdir(),
        f"torchinductor_{getpass.getuser()}_{os.environ['ATEN_CPU_CAPABILITY']}")

import numpy as np  # noqa: E402
import pytest  # noqa: E402

import study  # noqa: E402,F401  sets XLA_PYTHON_CLIENT_PREALLOCATE before JAX starts
from study.measure.devices import Device  # noqa: E402
from study.measure.frameworks import use_shared_settings  # noqa: E402


def pytest_configure(config):
    # run by pytest right after it imports this file, before it collects a test; not at import,
    # so that another process can import the helpers below without torch and JAX
    # (tests/test_report.py's render with numpy's baseline kernels needs neither: 4 s of CPU)
    import jax
    use_shared_settings()  # x64 and full-precision matmuls, as the CLI sets them
    jax.config.update("jax_numpy_dtype_promotion", "strict")
    jax.config.update("jax_numpy_rank_promotion", "raise")


@pytest.fixture
def cpu() -> Device:
    return Device("cpu")


def assert_close(actual, expected, dtype: str) -> None:
    """One tolerance table for the whole suite: a few ulps of the dtype."""
    tol = {"float16": 1e-3, "bfloat16": 1e-2, "float32": 1e-6, "float64": 1e-12}[dtype]
    np.testing.assert_allclose(np.asarray(actual, np.float64), np.asarray(expected, np.float64),
                               rtol=tol, atol=tol)


def looks_like_error(text: str) -> bool:
    """Whether a string reads as an error line as study.errors.first_error_line writes it: the
    check that every recorded error was typed as one (study.compare.cells.Error), never how one is
    found."""
    import re
    return bool(re.match(r"^[A-Z]\w*(Error|Exception|Escape|Exit)\b", text))


def listed_result_files(report_text: str) -> list[str]:
    """The result files a rendered APPENDIX.md names under Provenance, relative to reports/."""
    import re
    section = re.split(r"^## Provenance(?: <a id=\"provenance\"></a>)?$", report_text,
                       flags=re.M)[1]
    return re.findall(r"^\| `([^`]+\.json)` \|", section, re.M)


def load_listed(paths: list[str], reports_dir: str):
    """Runs of exactly these provenance files (paths relative to reports_dir), errata applied,
    as results.load_runs reads a folder's."""
    import experiments
    from study.runs import results
    known = set(experiments.NAMES)
    runs = [results.load_run(os.path.join(reports_dir, p), p, known) for p in paths]
    errata = results.load_errata(os.path.join(reports_dir, "errata.json"))
    return results.ready(sorted(runs, key=lambda r: (r.experiment, r.label)), errata)


def reference_runs():
    """The study's committed reference, errata applied: what tests read instead of whatever
    happens to be in reports/results/."""
    import experiments
    from study.runs import results
    runs, _ = results.load_runs([results.REFERENCE_DIR], set(experiments.NAMES))
    return results.ready(runs, results.load_errata())


REPORTS_DIR = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "reports")


def committed_labels() -> dict:
    import json
    with open(os.path.join(REPORTS_DIR, "labels.json"), encoding="utf-8") as f:
        return json.load(f)


def committed_inputs():
    """The runs the committed APPENDIX.md lists (whatever else a host has in reports/results/)
    and the committed reference."""
    with open(os.path.join(REPORTS_DIR, "APPENDIX.md"), encoding="utf-8") as f:
        listed = listed_result_files(f.read())
    return load_listed(listed, REPORTS_DIR), reference_runs()


@pytest.fixture(scope="session")
def committed_runs():
    """committed_inputs(), loaded once per session."""
    return committed_inputs()


@pytest.fixture(scope="session")
def committed_document(committed_runs):
    """The committed report rendered once per session (a study.report.document.Document: its
    files, and each experiment's tables and answers)."""
    import experiments
    from study.runs.provenance import code_commit
    from study.report.document import render_document
    runs, refs = committed_runs
    return render_document(runs, [], experiments.all_experiments(), refs, committed_labels(),
                           code=code_commit())


@pytest.fixture(scope="session")
def committed(committed_document):
    return committed_document.files


def csv_cells(content: str) -> tuple[list[str], list[str]]:
    """A CSV's header, and the distinct cells of its other rows in the order they first appear:
    the CSV checks judge a cell by its text alone, and the committed CSVs' 2 million cells are
    16 thousand texts."""
    import csv
    import io
    from itertools import chain
    header, *rows = csv.reader(io.StringIO(content))
    return header, list(dict.fromkeys(chain.from_iterable(rows)))


@pytest.fixture(scope="session")
def committed_csv_cells(committed):
    """csv_cells of each CSV of the committed render, parsed once per session."""
    return {rel: csv_cells(content) for rel, content in committed.items()
            if rel.endswith(".csv")}


# The committed runs are loaded, and the committed report rendered, once a run, not once a
# worker: under pytest-xdist, the tests that read them go to one worker together, every other
# test to whichever worker is free (as xdist's default, load). xdist_group marks with --dist
# loadgroup would say this, but they group nothing under pytest 9.2 (pytest-xdist issue 1386).
READS_THE_RENDER = ("tests/test_report.py::", "tests/test_report_cells.py::",
                    "tests/test_report_citation.py::",
                    "tests/test_reproduction.py::test_every_cell_of_every_committed_run",
                    "tests/test_rules.py::test_every_rule_key_a_committed_result_records")
# So is tests/test_zero_point.py's quick run of every look-alike op (its module fixture
# sample_run, about 6 s): the tests that read it go to one worker together.
READS_THE_SAMPLE_RUN = tuple(
    f"tests/test_zero_point.py::{name}" for name in (
        "test_the_conventions_note_checks_every_declared_derivative_against_the_measurement",
        "test_atlas_cells_contain_the_0d_measurement_of_every_op_and_input",
        "test_porting_guide_and_pairs_hold_on_0d_measurements",
        "test_every_look_alike_pair_is_measured_at_the_same_inputs_and_at_both_kinks"))
GROUPS = {"the committed runs and render": ({"committed_runs", "committed", "committed_document"},
                                            READS_THE_RENDER),
          "zero_point's sample run": ({"sample_run"}, READS_THE_SAMPLE_RUN)}
# The longest single tests (tens of seconds each: a Ray cluster, `study check` in another
# process), started first, so that none is left to run alone at the end while the other worker
# idles. Order only: a test not named here runs all the same.
LONGEST_FIRST = (
    "tests/test_engine.py::test_shards_on_a_loopback_cluster",
    "tests/test_one_framework.py::",
    "tests/test_check_api.py::test_exit_1_on_a_finding_and_0_with_fail_on_elsewhere",
    "tests/test_timing.py::test_the_harness_check_times_the_same_case_in_a_fresh_process",
)


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(config, items):
    for group, (fixtures, prefixes) in GROUPS.items():
        elsewhere = [item.nodeid for item in items
                     if fixtures & set(getattr(item, "fixturenames", ()))
                     and not item.nodeid.startswith(prefixes)]
        if elsewhere:
            names = ", ".join(f.rstrip(":") for f in prefixes)
            raise pytest.UsageError(f"{elsewhere[0]} reads {group}: put it in one of "
                                    f"{names} (tests/conftest.py)")


try:
    from xdist.scheduler import LoadScopeScheduling
except ImportError:  # a python without pytest-xdist (make test PY=...) runs the suite in one
    pass
else:
    class RenderOnce(LoadScopeScheduling):
        """Each of GROUPS on one worker, the biggest first; then LONGEST_FIRST; then every
        other test, one at a time, in the order collected."""

        def _split_scope(self, nodeid: str) -> str:
            return next((group for group, (_, prefixes) in GROUPS.items()
                         if nodeid.startswith(prefixes)), nodeid)

        def _assign_work_unit(self, node) -> None:
            if not getattr(self, "_ordered", False):  # the first call: the queue is complete
                self._ordered = True
                rank = {scope: i for i, scope in enumerate(self.workqueue)}

                def order(scope):
                    if scope in GROUPS:
                        return (0, -len(self.workqueue[scope]))
                    first = [i for i, p in enumerate(LONGEST_FIRST) if scope.startswith(p)]
                    return (1, first[0], rank[scope]) if first else (2, rank[scope])
                for scope in sorted(self.workqueue, key=order):
                    self.workqueue.move_to_end(scope)
            super()._assign_work_unit(node)

    @pytest.hookimpl(optionalhook=True)  # a run with -p no:xdist (make mutation) has no such hook
    def pytest_xdist_make_scheduler(config, log):
        if config.getvalue("dist") == "load":
            return RenderOnce(config, log)

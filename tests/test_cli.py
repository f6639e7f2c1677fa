import json
import os
import re
import shutil
import subprocess
import sys

import pytest

from study.cli import main
from study.measure.devices import cuda_absence_reason
from study.runs.provenance import REPO_ROOT


def run_cli(capsys, *argv):
    rc = main(list(argv))
    out, err = capsys.readouterr()
    return rc, out, err


def test_list_names_every_experiment_via_the_module_entry_point():
    out = subprocess.run([sys.executable, "-m", "study", "list"], cwd=REPO_ROOT,
                         capture_output=True, text=True, check=True).stdout
    import experiments
    for name in experiments.NAMES:
        assert name in out


def test_unknown_experiment_is_one_line_listing_the_known_ones(capsys, tmp_path):
    rc, out, err = run_cli(capsys, "run", "nope", "--results-dir", str(tmp_path))
    assert rc == 2 and err.count("\n") == 1
    assert "unknown experiment 'nope'" in err and "two_layer" in err
    assert os.listdir(tmp_path) == []


def test_bad_device_is_one_line(capsys, tmp_path):
    rc, _, err = run_cli(capsys, "run", "two_layer", "--device", "tpu", "--results-dir",
                         str(tmp_path))
    assert rc == 2 and err.count("\n") == 1 and "tpu" in err


@pytest.mark.skipif(cuda_absence_reason() is None, reason="a GPU is present here")
def test_cuda_without_a_gpu_says_so_and_writes_nothing(capsys, tmp_path):
    rc, _, err = run_cli(capsys, "run", "two_layer", "--device", "cuda", "--results-dir",
                         str(tmp_path))
    assert rc == 2 and err.count("\n") == 1 and "no CUDA device on" in err
    assert os.listdir(tmp_path) == []


def test_unwritable_results_folder_fails_before_any_work(capsys, tmp_path):
    blocker = tmp_path / "results"
    blocker.write_text("a file where the folder should be")
    rc, _, err = run_cli(capsys, "run", "two_layer", "--results-dir", str(blocker))
    assert rc == 2 and err.count("\n") == 1 and "cannot write results" in err
    assert blocker.read_text() == "a file where the folder should be"


@pytest.mark.parametrize("content,message", [
    ("{not json", "corrupt result file"),
    (json.dumps({"hello": "world"}), "not a study result file"),
    (json.dumps({"run": "bad", "experiment": "other", "provenance": {}, "tables": {}}),
     "unknown experiment"),
])
def test_corrupt_or_foreign_result_file_is_named_and_nothing_is_written(
        capsys, tmp_path, content, message):
    folder = tmp_path / "results" / "two_layer"
    folder.mkdir(parents=True)
    (folder / "bad.json").write_text(content)
    out_dir = tmp_path / "out"
    rc, _, err = run_cli(capsys, "report", "--results", str(tmp_path / "results"),
                         "--out", str(out_dir))
    assert rc == 2 and err.count("\n") == 1
    assert message in err and "bad.json" in err
    assert not out_dir.exists()


def test_run_then_report_end_to_end(capsys, tmp_path):
    rc, _, err = run_cli(capsys, "run", "nonscalar_backward", "--device", "cpu", "--results-dir",
                         str(tmp_path / "results"))
    assert rc == 0 and "[nonscalar_backward cpu]" in err and "s left)" in err  # progress on stderr
    files = os.listdir(tmp_path / "results" / "nonscalar_backward")
    provenance, = [f for f in files if f.endswith(".json")]
    assert set(files) - {provenance} == {"steps"}  # its one table, beside its provenance
    assert provenance.startswith(f"{os.uname().nodename}-")
    assert "__cpu__torch-" in provenance and provenance.endswith("__standard.json")
    rc, _, _ = run_cli(capsys, "report", "--results", str(tmp_path / "results"),
                       "--out", str(tmp_path / "out"))
    assert rc == 0
    report = (tmp_path / "out" / "APPENDIX.md").read_text()  # seed 002's table sits there
    assert re.search(r"### Table \d+: Seed 002: backward on a non-scalar output.* "
                     r"<a id=\"[^\"]+\"></a>", report)
    # out = a * a: the chain rule gives backward(ones) = 2a, rows 2, 4, 6 and 8, 10, 12
    assert "| backward(ones) | 2, 4, 6; 8, 10, 12 | 2, 4, 6; 8, 10, 12 |" in report


HIDE_MLXTEND = """
import importlib.abc, runpy, sys
class Hide(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path, target=None):
        if name.split('.')[0] == 'mlxtend':
            raise ModuleNotFoundError(name)
sys.meta_path.insert(0, Hide())
sys.argv = ['study', 'run', 'all']
runpy.run_module('study', run_name='__main__')
"""


def test_a_missing_package_is_named_in_one_line_before_anything_runs(tmp_path):
    done = subprocess.run([sys.executable, "-c", HIDE_MLXTEND], cwd=REPO_ROOT,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 2 and done.stderr.count("\n") == 1, done.stderr[-500:]
    assert "lacks the Python packages mlxtend" in done.stderr and "Traceback" not in done.stderr


def test_full_applies_only_to_experiments_that_offer_it(capsys, tmp_path):
    rc, _, err = run_cli(capsys, "run", "two_layer", "--full", "--results-dir", str(tmp_path))
    assert rc == 2 and "--full applies only to" in err and "bifurcation" in err
    assert os.listdir(tmp_path) == []


def test_compare_names_a_missing_reference_in_one_line(capsys, tmp_path):
    (tmp_path / "results").mkdir()
    rc, _, err = run_cli(capsys, "compare", str(tmp_path / "results"), "--reference",
                         str(tmp_path / "nope"))
    assert rc == 2 and err.count("\n") == 1 and "no reference results" in err


def test_jobs_must_be_a_positive_number_of_processes(capsys):
    # `study run --jobs 2` side by side on Ray: in tests/test_engine.py, on its one cluster
    rc, _, err = run_cli(capsys, "run", "nonscalar_backward", "--jobs", "0")
    assert rc == 2 and err.strip() == "error: --jobs must be a positive number of processes"


def test_timing_never_runs_side_by_side_and_a_shared_wall_clock_is_named():
    import experiments
    from study.report.appendix import _beside
    assert [e.name for e in experiments.all_experiments() if e.timed] == ["timing"]
    assert _beside({"utc": "t", "host": "h", "device": "cpu"}) is None
    assert _beside({"side_by_side": {"jobs": 2, "with": ["zero_point"]}}) == (
        "2 at a time, with zero point")


def test_run_with_report_renders_in_the_same_process(capsys, tmp_path, monkeypatch):
    import study.cli
    monkeypatch.setattr(study.cli, "REPORTS_DIR", str(tmp_path / "out"))
    rc, out, err = run_cli(capsys, "run", "nonscalar_backward", "--device", "cpu", "--quiet",
                           "--results-dir", str(tmp_path / "results"), "--report")
    assert rc == 0, err
    assert out.startswith(f"wrote {tmp_path / 'out' / 'REPORT.md'} from 1 result files")
    appendix = (tmp_path / "out" / "APPENDIX.md").read_text()
    assert "Seed 002: backward on a non-scalar output" in appendix


def test_a_corrupt_labels_file_is_one_line_and_writes_nothing(capsys, tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    (out / "labels.json").write_text("{not json")
    (tmp_path / "results").mkdir()
    rc, _, err = run_cli(capsys, "report", "--results", str(tmp_path / "results"), "--out",
                         str(out))
    assert rc == 2 and err.startswith("error: cannot read the run labels in ")
    assert len(err.strip().splitlines()) == 1
    assert sorted(p.name for p in out.iterdir()) == ["labels.json"]


def test_a_section_that_raises_fails_the_report_after_writing_the_others(capsys, tmp_path,
                                                                         monkeypatch):
    import dataclasses

    import experiments.clone_hazard

    def summarise(runs):
        raise ValueError("poisoned summary")
    poisoned = dataclasses.replace(experiments.clone_hazard.EXPERIMENT, summarise=summarise)
    monkeypatch.setattr(experiments.clone_hazard, "EXPERIMENT", poisoned)
    for name in ("clone_hazard", "nonscalar_backward"):  # the two smallest committed runs
        (tmp_path / "results" / name).mkdir(parents=True)
        source = os.path.join(REPO_ROOT, "reports", "reference", name)
        first = sorted(f for f in os.listdir(source) if f.endswith(".json"))[0]
        shutil.copy(os.path.join(source, first), tmp_path / "results" / name)
        for table in json.loads(open(os.path.join(source, first)).read())["tables"]:
            parquet = f"{first[:-len('.json')]}.parquet"
            (tmp_path / "results" / name / table).mkdir()
            shutil.copy(os.path.join(source, table, parquet), tmp_path / "results" / name / table)
    out = tmp_path / "out"
    rc, said, err = run_cli(capsys, "report", "--results", str(tmp_path / "results"),
                            "--out", str(out), "--reference", str(tmp_path / "none"))
    assert rc == 1 and err.count("\n") == 1, err
    assert "clone_hazard (ValueError: poisoned summary)" in err and "nonscalar_backward" not in err
    report = (out / "REPORT.md").read_text()
    assert "**error:** the tables of `clone_hazard` could not be rendered" in report
    assert re.search(r"### Table \d+: Seed 002: backward on a non-scalar output.* "
                     r"<a id=\"[^\"]+\"></a>", (out / "APPENDIX.md").read_text())
    assert said.startswith("wrote ")

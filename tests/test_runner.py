import io
import os
from types import SimpleNamespace

import pytest

from study.measure.devices import Device
from study.runs.runner import Progress, cases_of, run_cases


def _rows(path: str) -> list[dict]:
    """Every row of the run whose provenance file is `path`, each naming its table."""
    from study.runs.results import load_run
    return load_run(path, os.path.basename(path), {"fake"}).records


def test_a_failing_case_is_recorded_with_its_error_and_the_run_goes_on():
    def run_case(device, k):
        if k == 1:
            raise ValueError("planted failure\nsecond line")
        return [{"part": "ks", "k": k, "device": device.name}]

    experiment = SimpleNamespace(name="fake", cases=lambda scope: [{"k": 0}, {"k": 1}, {"k": 2}],
                                 run_case=run_case, counts_inits=False)
    stream = io.StringIO()
    records = run_cases(experiment, Device("cpu"), cases_of(experiment, "standard"),
                        Progress(stream=stream))
    assert records == [{"part": "ks", "k": 0, "device": "cpu"},
                       {"part": "failed_cases", "case": {"k": 1}, "device": "cpu",
                        "error": "ValueError: planted failure"},
                       {"part": "ks", "k": 2, "device": "cpu"}]
    log = stream.getvalue()
    assert "[fake cpu] 3/3 k=2" in log and "s left)" in log  # progress with an estimate
    quiet = io.StringIO()
    run_cases(experiment, Device("cpu"), cases_of(experiment, "standard"),
              Progress(quiet=True, stream=quiet))
    assert quiet.getvalue() == ""


@pytest.mark.parametrize("error", [NameError("name 'timed' is not defined"), KeyError("n")])
def test_a_bug_in_the_experiments_code_stops_the_run_instead_of_becoming_a_result(error):
    def run_case(device, k):
        raise error

    experiment = SimpleNamespace(name="fake", cases=lambda scope: [{"k": 0}],
                                 run_case=run_case, counts_inits=False)
    with pytest.raises(type(error)):
        run_cases(experiment, Device("cpu"), cases_of(experiment, "standard"),
                  Progress(quiet=True))


def test_a_failed_case_shows_in_its_experiments_section():
    import experiments
    from study import report
    from study.runs.results import Run
    prov = {"utc": "t", "host": "h", "device": "cpu", "torch": "t", "jax": "j", "scope": "standard"}
    failed = {"part": "failed_cases", "case": {"dataset": "seed", "rule": "torch_relu"},
              "device": "cpu", "error": "RuntimeError: planted"}
    files = report.render([Run.of("two_layer", prov, [failed], "x.json")], [],
                          experiments.all_experiments())
    section = files["REPORT.md"].split("## two layer:", 1)[1].split("\n## ", 1)[0]
    assert "1 case failed" in " ".join(section.split())  # failed-cases.csv says which and why
    listing = files["tables/failed-cases.csv"].splitlines()
    assert listing[1:] == [
        "two_layer,C1,failed,\"dataset=seed, rule=torch_relu\",RuntimeError: planted"]


def test_an_interrupted_run_resumes_from_the_cases_it_finished(tmp_path):
    from study.runs.runner import run_experiment
    calls = []

    def run_case(device, k):
        calls.append(k)
        if k == 2 and len(calls) == 3:
            raise KeyboardInterrupt  # the run stops after cases 0 and 1
        return [{"part": "ks", "k": k, "device": device.name}]
    experiment = SimpleNamespace(name="fake", seed=None, timed=False, run_case=run_case,
                                 counts_inits=False,
                                 cases=lambda scope: [{"k": 0}, {"k": 1}, {"k": 2}])
    stream = io.StringIO()
    try:
        run_experiment(experiment, [Device("cpu")], "standard", Progress(stream=stream),
                       root=str(tmp_path))
    except KeyboardInterrupt:
        pass
    assert [p.name for p in (tmp_path / "fake").iterdir()][0].startswith(".partial-")
    path, = run_experiment(experiment, [Device("cpu")], "standard", Progress(stream=stream),
                           root=str(tmp_path))
    assert calls == [0, 1, 2, 2]  # the rerun ran only the case that had not finished
    assert "resuming: 2 of 3 cases already done" in stream.getvalue()
    assert [r["k"] for r in _rows(path)] == [0, 1, 2]
    assert sorted(p.name for p in (tmp_path / "fake").iterdir()) == ["ks",
                                                                     os.path.basename(path)]


def test_cases_that_hold_rules_are_written_down_by_key_and_resume(tmp_path):
    import json

    from study.measure.rules import by_key
    from study.runs.runner import run_experiment
    relu, c0 = by_key("torch_relu"), by_key("torch_custom_c0")
    calls = []

    def run_case(device, rule, k):
        calls.append((rule.key, k))
        if k == 1:
            raise ValueError("planted failure")
        if k == 2 and len(calls) == 3:
            raise KeyboardInterrupt  # the run stops after cases 0 and 1
        return [{"part": "ks", "rule": rule.key, "name": rule.name, "k": k}]

    def cases(scope, rules=(relu, c0)):
        return [{"rule": r, "k": k} for k, r in enumerate(rules + rules[:1])]
    experiment = SimpleNamespace(name="fake", seed=None, timed=False, run_case=run_case,
                                 counts_inits=False, cases=cases)
    stream = io.StringIO()
    with pytest.raises(KeyboardInterrupt):
        run_experiment(experiment, [Device("cpu")], "standard", Progress(stream=stream),
                       root=str(tmp_path))
    partial, = (tmp_path / "fake").iterdir()
    assert json.loads(partial.read_text().splitlines()[0])["cases"] == [
        {"rule": "torch_relu", "k": 0}, {"rule": "torch_custom_c0", "k": 1},
        {"rule": "torch_relu", "k": 2}]
    path, = run_experiment(experiment, [Device("cpu")], "standard", Progress(stream=stream),
                           root=str(tmp_path))
    assert calls[-1] == ("torch_relu", 2) and len(calls) == 4  # resumed: only the third ran
    assert "1/3 rule=torch_relu k=0" in stream.getvalue()
    assert _rows(path) == [  # table by table, in the order of their names
        {"part": "failed_cases", "case": {"rule": "torch_custom_c0", "k": 1}, "device": "cpu",
         "error": "ValueError: planted failure"},
        {"part": "ks", "rule": "torch_relu", "name": "torch.relu", "k": 0},
        {"part": "ks", "rule": "torch_relu", "name": "torch.relu", "k": 2}]


def test_rules_given_to_the_runner_reach_an_experiments_cases_and_only_one_that_takes_them():
    from study.measure.rules import by_key
    relu = by_key("torch_relu")
    takes = SimpleNamespace(name="takes", counts_inits=False,
                            cases=lambda scope, rules=(): [{"rule": r} for r in rules])
    assert cases_of(takes, "quick", rules=(relu,)) == [{"rule": relu}]
    lacks = SimpleNamespace(name="lacks", counts_inits=False, cases=lambda scope: [{"k": 0}])
    with pytest.raises(TypeError, match="experiment lacks takes no rules"):
        cases_of(lacks, "quick", rules=(relu,))


def test_chunks_of_a_run_write_what_the_whole_run_writes_once_merged(tmp_path, monkeypatch):
    import json

    from study.runs.checkpoint import merge_chunks
    from study.runs.provenance import ENGINE_ENV, NODE_ENV
    from study.runs.runner import run_experiment
    experiment = SimpleNamespace(name="fake", seed=None, timed=False, counts_inits=False,
                                 run_case=lambda device, k: [{"part": "ks", "k": k,
                                                              "device": device.name}],
                                 cases=lambda scope: [{"k": k} for k in range(5)])
    quiet = Progress(quiet=True)
    whole, = run_experiment(experiment, [Device("cpu")], "standard", quiet,
                            root=str(tmp_path / "whole"))
    monkeypatch.setenv(ENGINE_ENV, "ray 9.9")
    monkeypatch.setenv(NODE_ENV, "node-a")
    chunks = [run_experiment(experiment, [Device("cpu")], "standard", quiet,
                             root=str(tmp_path / "chunked"), chunk=part)[0]
              for part in [(3, 5), (0, 3)]]
    assert all(os.path.basename(p).startswith(".chunk-") for p in chunks)  # the loader skips them
    merged = merge_chunks(chunks)
    assert os.path.basename(merged) == os.path.basename(whole)
    with open(whole) as f, open(merged) as g:
        plain, sharded = json.load(f), json.load(g)
    assert _rows(merged) == _rows(whole) and [r["k"] for r in _rows(merged)] == list(range(5))
    assert "engine" not in plain["provenance"]
    assert (sharded["provenance"]["engine"], sharded["provenance"]["node"]) == ("ray 9.9", "node-a")
    assert [c["cases"] for c in sharded["provenance"]["chunks"]] == [[0, 3], [3, 5]]


def test_a_chunk_past_the_last_case_is_a_one_line_error(tmp_path):
    from study.errors import StudyError
    from study.runs.runner import case_slice, run_experiment
    experiment = SimpleNamespace(name="fake", seed=None, timed=False, counts_inits=False,
                                 run_case=lambda device, k: [], cases=lambda scope: [{"k": 0}])
    with pytest.raises(StudyError, match="fake has 1 cases"):
        run_experiment(experiment, [Device("cpu")], "standard", Progress(quiet=True),
                       root=str(tmp_path), chunk=case_slice("0:2"))
    for bad in ("2:1", "a:b", "3"):
        with pytest.raises(StudyError, match="--cases"):
            case_slice(bad)


def test_study_run_cases_writes_the_result_file_when_its_last_chunk_is_in(tmp_path):
    from study import cli
    folder = tmp_path / "clone_hazard"
    argv = ["run", "clone_hazard", "--quick", "--device", "cpu", "--quiet",
            "--results-dir", str(tmp_path)]
    assert cli.main([*argv, "--cases", "4:8"]) == 0
    assert [p.name[:11] for p in folder.iterdir()] == [".chunk-4-8-"]
    assert cli.main([*argv, "--cases", "0:4"]) == 0  # clone_hazard --quick has 8 cases
    merged, = (p for p in folder.iterdir() if p.suffix == ".json")
    assert not merged.name.startswith(".")

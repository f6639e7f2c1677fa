"""study.runs.engine: shards on one local Ray cluster (started once for this file, on 2 CPUs, by
`study run --jobs 2`), two small experiments in this environment, checked against a plain
`study run` of the same."""
import io
import json
import os
import signal
import sys
import time

import pytest
import torch

import experiments
from study.runs import engine, results
from study import report
from study.runs.checkpoint import chunk_path, merge_chunks, write_chunk
from study.runs.runner import Progress

# Ray starts its processes with fork and exec, which JAX's warning about fork cannot tell apart
pytestmark = pytest.mark.filterwarnings("ignore:os.fork:RuntimeWarning")

QUICK = ("nonscalar_backward", "clone_hazard")
CLONE_HAZARD_QUICK_CASES = 8  # len(cases_of(clone_hazard, "quick")): its two chunks must tile it
# torch's threads as a fresh process has them, read before any test sets them (as the timing
# experiment does): the plain run in this process runs with them, as a plain `study run` would
THREADS_OF_A_FRESH_PROCESS = torch.get_num_threads()


def _chunk(root, start, stop, total, records, wall_s=1.0):
    prov = {"utc": f"t{start}", "host": "h", "device": "cpu", "torch": "t", "jax": "j",
            "scope": "quick", "wall_s": wall_s, "node": f"node-{start}"}
    name = results.run_name(prov) + ".json"
    path = chunk_path(str(root), "clone_hazard", name, start, stop)
    write_chunk(path, "clone_hazard", prov, records, (start, stop, total))
    return path


def test_chunks_merge_into_one_result_file_in_case_order_once_they_tile_the_cases(tmp_path):
    late = _chunk(tmp_path, 2, 3, 3, [{"part": "cases", "k": 2}], wall_s=0.5)
    assert merge_chunks([late]) is None  # cases 0 and 1 missing: nothing written
    early = _chunk(tmp_path, 0, 2, 3, [{"part": "cases", "k": 0}, {"part": "cases", "k": 1}],
                   wall_s=1.25)
    assert os.listdir(tmp_path / "clone_hazard") != []
    written = merge_chunks([late, early])
    assert sorted(os.listdir(tmp_path / "clone_hazard")) == ["cases", os.path.basename(written)]
    run, = results.load_runs([str(tmp_path)], {"clone_hazard"})[0]
    assert [r["k"] for r in run.records] == [0, 1, 2]
    assert run.provenance["wall_s"] == 1.75  # 1.25 + 0.5
    assert [(c["cases"], c["node"]) for c in run.provenance["chunks"]] == [
        ([0, 2], "node-0"), ([2, 3], "node-2")]


def test_overlapping_chunks_are_not_merged(tmp_path):
    paths = [_chunk(tmp_path, 0, 2, 3, [{"part": "cases", "k": k} for k in (0, 1)]),
             _chunk(tmp_path, 1, 3, 3, [{"part": "cases", "k": k} for k in (1, 2)])]
    assert merge_chunks(paths) is None
    assert all(os.path.exists(p) for p in paths)


def test_chunks_split_the_cases_evenly_in_order():
    assert engine.chunks_of(8, 3) == [(0, 3), (3, 5), (5, 8)]  # round(8/3), round(16/3)
    assert engine.chunks_of(2, 5) == [(0, 1), (1, 2)]  # never an empty chunk


def test_the_ledger_skips_a_shard_only_for_the_same_code_while_its_files_exist(tmp_path):
    shard = engine.Shard("clone_hazard", results_dir=str(tmp_path))
    wrote = tmp_path / "result.json"
    wrote.write_text("{}")
    engine.Ledger(str(tmp_path), "code-a").record(shard, [str(wrote)])
    assert engine.Ledger(str(tmp_path), "code-a").paths(shard) == [str(wrote)]
    assert engine.Ledger(str(tmp_path), "code-b").paths(shard) is None
    assert engine.Ledger(str(tmp_path), "code-a").paths(
        engine.Shard("clone_hazard", results_dir=str(tmp_path), scope="quick")) is None
    wrote.unlink()
    assert engine.Ledger(str(tmp_path), "code-a").paths(shard) is None
    (tmp_path / engine.LEDGER).write_text("{half a ledg")  # edited by hand, say
    assert engine.Ledger(str(tmp_path), "code-a").finished == {}


def test_a_shard_failure_makes_study_run_exit_1(monkeypatch, tmp_path, capsys):
    from study import cli
    shard = engine.Shard("clone_hazard")
    monkeypatch.setattr(engine, "run_shards", lambda shards, **kw: [
        engine.ShardOutcome(shard, "failed", error="RuntimeError: exit status 1")])
    code = cli.main(["run", "clone_hazard", "--engine", "ray", "--device", "cpu",
                     "--results-dir", str(tmp_path)])
    assert code == 1
    assert "1 of 1 shards failed twice: clone_hazard" in capsys.readouterr().err


def test_engine_flags_need_the_engine(tmp_path, capsys):
    from study import cli
    assert cli.main(["run", "clone_hazard", "--chunks", "2", "--results-dir", str(tmp_path)]) == 2
    assert "--chunks applies only with --engine ray" in capsys.readouterr().err


# --- on a local Ray cluster ----------------------------------------------------------------------

def _listening_addresses(pids: set[int]) -> list[str]:
    """The local addresses (hex, as /proc/net/tcp* writes them) of TCP sockets in LISTEN state
    that processes `pids` hold."""
    inodes = set()
    for pid in pids:
        try:
            for fd in os.listdir(f"/proc/{pid}/fd"):
                target = os.readlink(f"/proc/{pid}/fd/{fd}")
                if target.startswith("socket:["):
                    inodes.add(target[8:-1])
        except OSError:  # a process that ended meanwhile
            continue
    found = []
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        with open(table) as f:
            for line in f.readlines()[1:]:
                fields = line.split()
                if fields[3] == "0A" and fields[9] in inodes:  # 0A: LISTEN
                    found.append(fields[1].split(":")[0])
    return found


def _descendants(pid: int) -> set[int]:
    parents = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as f:
                    parents[int(entry)] = int(f.read().rsplit(")", 1)[1].split()[1])
            except OSError:
                continue
    family, grew = {pid}, True
    while grew:
        more = {child for child, parent in parents.items() if parent in family} - family
        family |= more
        grew = bool(more)
    return family


LOOPBACK = {"0100007F",  # 127.0.0.1 (little-endian word)
            "0000000000000000FFFF00000100007F",  # ::ffff:127.0.0.1
            "00000000000000000000000001000000"}  # ::1


def assert_listens_on_loopback_only():
    addresses = _listening_addresses(_descendants(os.getpid()))
    assert addresses  # the GCS, the raylet and the workers listen: an empty list tests nothing
    assert set(addresses) <= LOOPBACK, addresses


def _still_running_after(seconds: float, text: str) -> list[str]:
    """The command lines that hold `text` once `seconds` have passed, or none as soon as no
    process's does."""
    deadline = time.monotonic() + seconds
    while True:
        lines = []
        for entry in filter(str.isdigit, os.listdir("/proc")):
            try:
                with open(f"/proc/{entry}/cmdline", "rb") as f:
                    lines.append(f"{entry}: " + f.read().decode(errors="replace")
                                 .replace("\0", " "))
            except OSError:
                continue
        lines = [line for line in lines if text in line]
        if not lines or time.monotonic() > deadline:
            return lines
        time.sleep(0.2)


def _sleeps_at_first_interpreter(tmp_path):
    """An "interpreter" that, called the first time, sleeps for two minutes with the shard's
    command line (till killed), and is this python every later time."""
    script, called = tmp_path / "sleeps-at-first-python", tmp_path / "called"
    script.write_text(f"#!/bin/sh\nif [ ! -e {called} ]; then\n  touch {called}\n"
                      f"  exec {sys.executable} -c 'import time; time.sleep(120)' \"$@\"\nfi\n"
                      f"exec {sys.executable} \"$@\"\n")
    script.chmod(0o755)
    return str(script)


def _failing_interpreter(tmp_path):
    """An "interpreter" that counts its calls in a file and exits 1 with an error line."""
    script, calls = tmp_path / "failing-python", tmp_path / "calls"
    script.write_text(f"#!/bin/sh\necho call >> {calls}\necho 'error: planted' >&2\nexit 1\n")
    script.chmod(0o755)
    return str(script), calls


def _rendered_tables(folder: str) -> dict[str, str]:
    runs, notes = results.load_runs([folder], set(experiments.NAMES))
    exps = experiments.all_experiments()
    files = report.render(results.ready(runs, []), notes, exps, figures=False)
    # REPORT.md and the table files hold what was measured; APPENDIX.md's provenance lists the
    # wall times, the engine and the node, which must differ
    return {name: text for name, text in files.items()
            if name == "REPORT.md" or name.startswith("tables/")}


# One test, so that pytest-xdist starts one cluster, not one per worker that gets a test: the
# one `study run --jobs 2` starts (run_shards starts one where none runs, then stops it), kept
# up for the shards that follow
@pytest.mark.slow
def test_shards_on_a_loopback_cluster_run_side_by_side_give_a_plain_runs_report_retry_and_resume(
        tmp_path, monkeypatch, capsys):
    import ray  # a dependency (constraints.txt): no skip when it is missing
    from study import cli
    shutdown, stops = ray.shutdown, []
    monkeypatch.setattr(ray, "shutdown", lambda: stops.append("ray.shutdown"))
    # the cluster's processes ignore SIGINT, as those of a shell script's background job do:
    # ray.cancel still has to stop a shard in flight (its interrupt arrives as a SIGINT would)
    sigint = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        _run_side_by_side_on_a_cluster_of_its_own(tmp_path / "side_by_side", cli, capsys)
        assert stops == ["ray.shutdown"] and ray.cluster_resources()["CPU"] == 2  # --jobs 2
        monkeypatch.setattr(ray, "shutdown", shutdown)
        _shards_give_a_plain_runs_report_retry_and_resume(ray, tmp_path, cli)
    finally:
        shutdown()
        signal.signal(signal.SIGINT, sigint)


def _run_side_by_side_on_a_cluster_of_its_own(results, cli, capsys):
    rc = cli.main(["run", *QUICK, "--jobs", "2", "--quick", "--quiet", "--device", "cpu",
                   "--results-dir", str(results)])
    assert rc == 0, capsys.readouterr().err
    for name, other in (("nonscalar_backward", "clone_hazard"),
                        ("clone_hazard", "nonscalar_backward")):
        path, = (results / name).glob("*.json")
        assert json.loads(path.read_text())["provenance"]["side_by_side"] == {"jobs": 2,
                                                                            "with": [other]}


def _shards_give_a_plain_runs_report_retry_and_resume(ray, tmp_path, cli):
    assert_listens_on_loopback_only()
    # one folder name, so that the tables' source lines (relative to its parent) agree
    plain, sharded = str(tmp_path / "plain" / "results"), str(tmp_path / "sharded" / "results")
    threads = torch.get_num_threads()
    torch.set_num_threads(THREADS_OF_A_FRESH_PROCESS)
    try:
        assert cli.main(["run", *QUICK, "--quick", "--device", "cpu", "--quiet",
                         "--results-dir", plain]) == 0
    finally:
        torch.set_num_threads(threads)
    failing, calls = _failing_interpreter(tmp_path)

    def shard(experiment, **kw):
        return engine.Shard(experiment, scope="quick", device="cpu", results_dir=sharded, **kw)
    clone_hazard_chunks = engine.chunks_of(CLONE_HAZARD_QUICK_CASES, 2)
    shards = [shard("nonscalar_backward")]
    # the first chunk is still in flight when the interrupt comes: its first try sleeps
    shards += [shard("clone_hazard", cases=clone_hazard_chunks[0],
                     python=_sleeps_at_first_interpreter(tmp_path)),
               shard("clone_hazard", cases=clone_hazard_chunks[1])]
    shards += [shard("nonscalar_backward", python=failing)]  # last: no try before the interrupt
    def interrupt_at_the_first_shard_done(line):
        if " done in " in line:
            raise KeyboardInterrupt
    with pytest.raises(KeyboardInterrupt):
        engine.run_shards(shards, progress=interrupt_at_the_first_shard_done)
    with open(os.path.join(sharded, engine.LEDGER)) as f:
        assert len(json.load(f)["shards"]) == 1  # the other shard in flight was cancelled
    # with its process (which would sleep for two minutes)
    assert _still_running_after(3, sharded) == []
    log = io.StringIO()
    outcomes = engine.run_shards(shards, progress=Progress(stream=log))

    assert sorted(o.status for o in outcomes) == ["done", "done", "failed", "skipped"]
    assert "1 finished before, 3 to run" in log.getvalue()  # the interrupted run's one shard
    assert outcomes[3].error == "RuntimeError: exit status 1: error: planted"
    assert calls.read_text().count("call") == 2  # retried once, then recorded
    assert "0 running, 0 left" in log.getvalue() and "s left;" in log.getvalue()
    assert _rendered_tables(sharded) == _rendered_tables(plain)
    runs, _ = results.load_runs([sharded], set(experiments.NAMES))
    assert {run.experiment for run in runs} == set(QUICK)  # the chunks became one result file
    threads = {run.experiment: run.provenance["threads"]
               for run in results.load_runs([plain], set(experiments.NAMES))[0]}
    for run in runs:
        assert run.provenance["threads"] == threads[run.experiment]  # not Ray's cap of 1
        assert run.provenance["engine"] == f"ray {ray.__version__}"
        assert run.provenance["node"].endswith(")") and "127.0.0.1" in run.provenance["node"]
    clone_hazard, = [r for r in runs if r.experiment == "clone_hazard"]
    assert [c["cases"] for c in clone_hazard.provenance["chunks"]] == [[0, 4], [4, 8]]

    # a rerun resumes: the shards that finished are skipped (their files untouched), the
    # failed one runs again
    def stamps_of(paths):
        return {p: os.stat(os.path.join(tmp_path, "sharded", p)).st_mtime_ns for p in paths}
    stamps = stamps_of([run.path for run in runs])
    again = engine.run_shards(shards, progress=Progress(quiet=True))
    assert [o.status for o in again] == ["skipped", "skipped", "skipped", "failed"]
    assert calls.read_text().count("call") == 4
    assert stamps_of(stamps) == stamps
    with open(os.path.join(sharded, engine.LEDGER)) as f:
        assert len(json.load(f)["shards"]) == 3

import json
import os

import pytest

from study.errors import StudyError
from study.results import load_runs, promote_to_reference, write_run

PROV = {"utc": "2026-01-01T00:00:00+00:00", "host": "h", "device": "cpu", "torch": "1",
        "jax": "2", "scope": "standard"}


def test_write_is_atomic_and_leaves_no_temp_files(tmp_path):
    path = write_run("two_layer", PROV, [{"a": 1}], str(tmp_path))
    assert os.listdir(tmp_path / "two_layer") == ["h__cpu__torch-1__jax-2__standard.json"]
    assert json.load(open(path))["records"] == [{"a": 1}]


def test_quick_full_and_standard_runs_never_overwrite_each_other(tmp_path):
    for scope in ("quick", "standard", "full"):
        write_run("two_layer", {**PROV, "scope": scope}, [{"scope": scope}], str(tmp_path))
    runs, notes = load_runs([str(tmp_path)], {"two_layer"})
    assert sorted(r.scope for r in runs) == ["full", "quick", "standard"] and notes == []


def test_files_from_before_scopes_read_their_scope_from_quick_and_full(tmp_path):
    legacy = {k: v for k, v in PROV.items() if k != "scope"}
    write_run("two_layer", {**legacy, "quick": True}, [], str(tmp_path))
    runs, _ = load_runs([str(tmp_path)], {"two_layer"})
    assert runs[0].scope == "quick"


def test_duplicates_resolve_to_the_newest_and_say_so(tmp_path):
    old, new = tmp_path / "old", tmp_path / "new"
    write_run("two_layer", PROV, [{"v": "old"}], str(old))
    write_run("two_layer", {**PROV, "utc": "2026-02-01T00:00:00+00:00"}, [{"v": "new"}], str(new))
    runs, notes = load_runs([str(old), str(new)], {"two_layer"})
    assert [r.records for r in runs] == [[{"v": "new"}]]
    assert len(notes) == 1 and "replaced by the newer" in notes[0]


def test_runs_from_two_hosts_are_both_kept(tmp_path):
    write_run("two_layer", PROV, [], str(tmp_path / "a"))
    write_run("two_layer", {**PROV, "host": "gpu-box", "device": "cuda"}, [], str(tmp_path / "b"))
    runs, notes = load_runs([str(tmp_path / "a"), str(tmp_path / "b")], {"two_layer"})
    assert [r.label for r in runs] == ["gpu-box/cuda/torch-1/jax-2/standard",
                                       "h/cpu/torch-1/jax-2/standard"]
    assert notes == []


def test_a_missing_results_folder_is_an_error(tmp_path):
    with pytest.raises(StudyError, match="not found"):
        load_runs([str(tmp_path / "nope")], {"two_layer"})


def test_promoting_results_to_the_reference_replaces_it_whole(tmp_path):
    results, reference = tmp_path / "results", tmp_path / "reference"
    write_run("two_layer", PROV, [{"v": 1}], str(results))
    write_run("zero_point", {**PROV, "host": "old"}, [], str(reference))
    copied = promote_to_reference(str(results), str(reference), {"two_layer", "zero_point"})
    assert [os.path.relpath(p, reference) for p in copied] == [
        "two_layer/h__cpu__torch-1__jax-2__standard.json"]
    assert os.listdir(reference) == ["two_layer"]
    assert not os.path.exists(str(reference) + ".new") and not os.path.exists(str(reference) + ".old")

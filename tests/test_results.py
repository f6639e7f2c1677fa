import json
import math
import os
import re

import pandas as pd
import pytest

from study.errors import StudyError
from study.runs.results import Run, load_runs, promote_to_reference, ready, run_name, write_run
from study.runs.tables import TableError, read_table, rows_of, to_arrow

PROV = {"utc": "2026-01-01T00:00:00+00:00", "host": "h", "device": "cpu", "torch": "1",
        "jax": "2", "scope": "standard"}


def _files(folder) -> list[str]:
    return sorted(os.path.relpath(os.path.join(base, f), folder)
                  for base, _, files in os.walk(folder) for f in files)


def test_a_run_is_its_provenance_file_and_a_parquet_table_per_part_and_nothing_else(tmp_path):
    path = write_run("two_layer", PROV, [{"part": "nets", "a": 1}, {"part": "rule_alone", "b": 2}],
                     str(tmp_path))
    name = run_name(PROV)
    assert _files(tmp_path / "two_layer") == [f"{name}.json", f"nets/{name}.parquet",
                                              f"rule_alone/{name}.parquet"]
    doc = json.load(open(path))
    assert doc["tables"] == {"nets": 1, "rule_alone": 1} and doc["provenance"] == PROV
    assert "records" not in open(path).read()  # no run-shaped JSON of rows
    # a reader needs no code of ours: pandas opens the table, the run column joins provenance
    table = pd.read_parquet(tmp_path / "two_layer" / "nets" / f"{name}.parquet")
    assert table.to_dict("records") == [{"run": name, "a": 1}]


def test_a_row_without_a_table_is_refused_and_nothing_is_half_written(tmp_path):
    with pytest.raises(StudyError, match="names no table"):
        write_run("two_layer", PROV, [{"a": 1}], str(tmp_path))
    assert not (tmp_path / "two_layer").exists() or _files(tmp_path / "two_layer") == []


def test_a_column_mixing_texts_and_numbers_is_refused_naming_the_column():
    # an error goes in its own column, never in a value column
    with pytest.raises(TableError, match="'value' mixes kinds of value"):
        to_arrow([{"value": 1.0}, {"value": "RuntimeError: no"}])


def test_rows_round_trip_to_the_bit_with_signed_zeros_nan_lists_and_structs():
    rows = [{"x": -0.0, "y": float("nan"), "z": [0.0, -0.0, math.inf], "m": [[1.0], [2.0]],
             "s": {"median": 1.5, "n": 3}, "t": "a", "b": True, "i": None},
            {"x": 0.0, "y": 1.0, "z": [], "m": [], "s": {"median": 2.5}, "t": None, "b": False,
             "i": 4}]
    back = rows_of(to_arrow(rows))
    assert [math.copysign(1, r["x"]) for r in back] == [-1.0, 1.0]
    assert math.isnan(back[0]["y"]) and back[1]["y"] == 1.0
    assert [math.copysign(1, v) for v in back[0]["z"][:2]] == [1.0, -1.0]
    assert back[0]["z"][2] == math.inf and back[1]["z"] == []
    assert back[0]["m"] == [[1.0], [2.0]] and back[0]["t"] == "a" and back[1]["i"] == 4
    # a struct keeps only the fields its row had, though the column's struct has both
    assert back[0]["s"] == {"median": 1.5, "n": 3} and back[1]["s"] == {"median": 2.5}
    assert back[0]["b"] is True and back[0]["i"] is None


def test_a_file_is_named_by_host_machine_device_releases_and_scope():
    # the machine part is 6 hex digits, and it changes with the CPU kernels: two VMs named
    # alike (every VM here is "vm") but dispatching to other kernels get two files
    name = run_name(PROV)
    assert re.fullmatch(r"h-[0-9a-f]{6}__cpu__torch-1__jax-2__standard", name)
    assert run_name({**PROV, "torch_cpu_capability": "AVX2"}) != name


def test_runs_of_two_machines_of_one_host_name_sit_side_by_side(tmp_path):
    for kernels in ("AVX2", "AVX512"):
        write_run("two_layer", {**PROV, "torch_cpu_capability": kernels}, [], str(tmp_path))
    runs, notes = load_runs([str(tmp_path)], {"two_layer"})
    assert sorted(r.provenance["torch_cpu_capability"] for r in runs) == ["AVX2", "AVX512"]
    assert notes == []


def test_quick_full_and_standard_runs_never_overwrite_each_other(tmp_path):
    for scope in ("quick", "standard", "full"):
        write_run("two_layer", {**PROV, "scope": scope}, [{"part": "nets", "scope": scope}],
                  str(tmp_path))
    runs, notes = load_runs([str(tmp_path)], {"two_layer"})
    assert sorted(r.scope for r in runs) == ["full", "quick", "standard"] and notes == []
    assert sorted(r.rows("nets")[0]["scope"] for r in runs) == ["full", "quick", "standard"]


def test_a_rewritten_run_drops_the_tables_it_no_longer_has(tmp_path):
    write_run("two_layer", PROV, [{"part": "nets", "a": 1}, {"part": "old", "b": 2}],
              str(tmp_path))
    write_run("two_layer", PROV, [{"part": "nets", "a": 3}], str(tmp_path))
    (run,), _ = load_runs([str(tmp_path)], {"two_layer"})
    assert set(run.tables) == {"nets"} and run.rows("nets") == [{"part": "nets", "a": 3}]
    assert not (tmp_path / "two_layer" / "old" / f"{run_name(PROV)}.parquet").exists()


def test_a_file_without_a_known_scope_is_named_as_malformed(tmp_path):
    write_run("two_layer", {**PROV, "scope": "sometimes"}, [], str(tmp_path / "a"))
    with pytest.raises(StudyError, match="malformed result file"):
        load_runs([str(tmp_path / "a")], {"two_layer"})


def test_a_provenance_file_whose_table_is_missing_is_named(tmp_path):
    write_run("two_layer", PROV, [{"part": "nets", "a": 1}], str(tmp_path))
    os.unlink(tmp_path / "two_layer" / "nets" / f"{run_name(PROV)}.parquet")
    with pytest.raises(StudyError, match="names tables that are not there: nets"):
        load_runs([str(tmp_path)], {"two_layer"})


def test_a_corrupt_table_is_one_line_naming_it(tmp_path):
    write_run("two_layer", PROV, [{"part": "nets", "a": 1}], str(tmp_path))
    path = tmp_path / "two_layer" / "nets" / f"{run_name(PROV)}.parquet"
    path.write_bytes(b"not parquet")
    with pytest.raises(StudyError, match="corrupt result table .*nets"):
        read_table(str(path))


def test_an_erratum_withdraws_the_rows_it_names_and_says_why():
    run = Run.of("timing", {**PROV, "git_commit": "abc", "device": "cuda"},
                 [{"part": "rule", "mode": "compile", "v": 1},
                  {"part": "rule", "mode": "eager", "v": 2},
                  {"part": "probe", "mode": "compile", "v": 3}], "x.json")
    errata = [{"experiment": "timing", "runs": {"git_commit": "abc"}, "table": "rule",
               "rows": {"mode": ["compile"]}, "why": "measured before the fix"},
              {"experiment": "timing", "runs": {"device": "cpu"}, "table": "rule", "rows": {},
               "why": "not this run"},
              {"experiment": "two_layer", "runs": {}, "table": "rule", "rows": {},
               "why": "another experiment"}]
    withdrawn, = ready([run], errata)
    assert [r["v"] for r in withdrawn.ok("rule")] == [2]
    assert withdrawn.rows("rule")[0]["withdrawn"] == "measured before the fix"
    assert [r["v"] for r in withdrawn.ok("probe")] == [3]  # another table: untouched
    assert withdrawn.errata == (("rule", {"mode": ["compile"]}, "measured before the fix"),)
    assert "withdrawn" not in run.rows("rule")[0]  # the run as loaded is untouched


def test_a_failed_case_is_a_row_of_failed_cases_apart_from_the_measured_rows():
    run = Run.of("two_layer", PROV, [
        {"part": "nets", "rule": "a"},
        {"part": "failed_cases", "case": {"dataset": "seed", "rule": "b"}, "device": "cpu",
         "error": "NotInRelease: b"}], "x.json")
    assert run.ok_rows() == [{"part": "nets", "rule": "a"}]
    assert [f["case"]["rule"] for f in run.failures()] == ["b"]


def test_duplicates_resolve_to_the_newest_and_say_so(tmp_path):
    old, new = tmp_path / "old", tmp_path / "new"
    write_run("two_layer", PROV, [{"part": "nets", "v": "old"}], str(old))
    write_run("two_layer", {**PROV, "utc": "2026-02-01T00:00:00+00:00"},
              [{"part": "nets", "v": "new"}], str(new))
    runs, notes = load_runs([str(old), str(new)], {"two_layer"})
    assert [r.rows("nets") for r in runs] == [[{"part": "nets", "v": "new"}]]
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
    write_run("two_layer", PROV, [{"part": "nets", "v": 1}], str(results))
    write_run("zero_point", {**PROV, "host": "old"}, [], str(reference))
    copied = promote_to_reference(str(results), str(reference), {"two_layer", "zero_point"})
    assert [os.path.relpath(p, reference) for p in copied] == [f"two_layer/{run_name(PROV)}.json"]
    assert os.listdir(reference) == ["two_layer"]
    assert _files(reference) == _files(results)  # the tables travel with their provenance
    assert not os.path.exists(str(reference) + ".new")
    assert not os.path.exists(str(reference) + ".old")
    (run,), _ = load_runs([str(reference)], {"two_layer"})
    assert run.rows("nets") == [{"part": "nets", "v": 1}]


def test_a_derived_value_is_made_once_per_run():
    calls = []
    run = Run.of("two_layer", PROV, [], "x.json")

    def count(r):
        calls.append(r)
        return len(calls)
    assert run.derived(count) == run.derived(count) == 1 and calls == [run]


def test_a_reference_whose_files_are_a_run_s_byte_for_byte_reads_that_run_s_tables(tmp_path):
    # most of reports/reference is a copy of reports/results: reading it again costs the
    # report seconds. A copy shares the run's tables (its own path kept); a reference whose
    # table differs in one value reads its own.
    from study.runs.results import sharing_identical
    for root, value in (("results", 1), ("same", 1), ("other", 2)):
        write_run("two_layer", PROV, [{"part": "nets", "a": value}], str(tmp_path / root))
    known = {"two_layer"}
    (run,), _ = load_runs([str(tmp_path / "results")], known)
    refs = [load_runs([str(tmp_path / root)], known)[0][0] for root in ("same", "other")]
    same, other = sharing_identical(refs, [run])
    assert same.tables is run.tables and same.path == refs[0].path
    assert same.rows("nets")[0]["a"] == 1
    assert other.tables is not run.tables and other.rows("nets")[0]["a"] == 2

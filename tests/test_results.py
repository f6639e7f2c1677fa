import json
import os
import re

import pytest

from study.errors import StudyError
from study.runs.results import load_runs, promote_to_reference, result_filename, write_run

PROV = {"utc": "2026-01-01T00:00:00+00:00", "host": "h", "device": "cpu", "torch": "1",
        "jax": "2", "scope": "standard"}


def test_write_is_atomic_and_leaves_no_temp_files(tmp_path):
    path = write_run("two_layer", PROV, [{"a": 1}], str(tmp_path))
    assert os.listdir(tmp_path / "two_layer") == [result_filename(PROV)]
    assert json.load(open(path))["records"] == [{"a": 1}]


def test_a_file_is_named_by_host_machine_device_releases_and_scope():
    # the machine part is 6 hex digits, and it changes with the CPU kernels: two VMs named
    # alike (every VM here is "vm") but dispatching to other kernels get two files
    name = result_filename(PROV)
    assert re.fullmatch(r"h-[0-9a-f]{6}__cpu__torch-1__jax-2__standard\.json", name)
    assert result_filename({**PROV, "torch_cpu_capability": "AVX2"}) != name


def test_runs_of_two_machines_of_one_host_name_sit_side_by_side(tmp_path):
    for kernels in ("AVX2", "AVX512"):
        write_run("two_layer", {**PROV, "torch_cpu_capability": kernels}, [], str(tmp_path))
    runs, notes = load_runs([str(tmp_path)], {"two_layer"})
    assert sorted(r.provenance["torch_cpu_capability"] for r in runs) == ["AVX2", "AVX512"]
    assert notes == []


def test_quick_full_and_standard_runs_never_overwrite_each_other(tmp_path):
    for scope in ("quick", "standard", "full"):
        write_run("two_layer", {**PROV, "scope": scope}, [{"scope": scope}], str(tmp_path))
    runs, notes = load_runs([str(tmp_path)], {"two_layer"})
    assert sorted(r.scope for r in runs) == ["full", "quick", "standard"] and notes == []


def test_a_file_without_a_known_scope_is_named_as_malformed(tmp_path):
    import pytest
    from study.errors import StudyError
    write_run("two_layer", {**PROV, "scope": "sometimes"}, [], str(tmp_path / "a"))
    with pytest.raises(StudyError, match="malformed result file"):
        load_runs([str(tmp_path / "a")], {"two_layer"})


def test_an_erratum_withdraws_the_records_or_fields_it_names_and_says_why():
    from study.runs.results import Run, apply_errata
    run = Run("timing", {**PROV, "git_commit": "abc", "device": "cuda"},
              [{"part": "rule", "mode": "compile", "v": 1},
               {"part": "rule", "mode": "eager", "v": 2},
               {"part": "atlas", "second": [1.0], "value": [0.0]}], "x.json")
    errata = [{"experiment": "timing", "runs": {"git_commit": "abc"},
               "records": {"part": "rule", "mode": ["compile"]}, "why": "measured before the fix"},
              {"experiment": "timing", "runs": {"device": "cpu"}, "records": {"part": "rule"},
               "why": "not this run"},
              {"experiment": "timing", "runs": {"git_commit": "abc"}, "records": {"part": "atlas"},
               "fields": ["second"], "why": "escaped"}]
    withdrawn, = apply_errata([run], errata)
    assert [r["v"] for r in withdrawn.ok_records() if "v" in r] == [2]
    assert withdrawn.failed_records()[0]["withdrawn"] == "measured before the fix"
    atlas = withdrawn.records[2]
    assert atlas["second"] == "withdrawn: escaped"
    assert atlas["withdrawn_fields"] == {"second": "escaped"}
    assert atlas["value"] == [0.0] and run.records[2]["second"] == [1.0]  # the run is untouched


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
        f"two_layer/{result_filename(PROV)}"]
    assert os.listdir(reference) == ["two_layer"]
    assert not os.path.exists(str(reference) + ".new")
    assert not os.path.exists(str(reference) + ".old")


# parse_json parses each long array of numbers apart, once per distinct text: its oracle is
# json.loads itself, on texts built to trip the placeholder swap (an array's text inside a
# string, an escaped quote, an object after an array, a NUL escape, NaN and the infinities)
_LONG = ", ".join(repr(i / 7) for i in range(200))  # far past results.LONG_ARRAY bytes
PARSES_AS_JSON_LOADS = {
    "plain": '{"a": [%s], "b": 1}' % _LONG,
    "nested": '{"a": [[%s], [%s]], "b": {"c": [%s]}}' % (_LONG, _LONG, _LONG),
    "array text in a string": '{"a": ["x", ": [%s]"], "b": 2}' % _LONG,
    "string opening like a value": '{"a": ": [%s] tail", "b": [%s]}' % (_LONG, _LONG),
    "escaped quote": '{"a": "\\": [%s] \\" more", "b": [%s]}' % (_LONG, _LONG),
    "string after an array": '{"a": [[%s], "s"], "b": [%s]}' % (_LONG, _LONG),
    "object after an array": '{"a": [[%s], {"k": 1}]}' % _LONG,
    "NUL escape": '{"a": "\\u00000", "b": [%s]}' % _LONG,
    "NaN and infinities": '{"a": [NaN, Infinity, -Infinity, -0.0, 1e308, %s]}' % _LONG,
    "literals": '{"a": [true, null, false, %s]}' % _LONG,
    "non-ascii": '{"é": [%s], "ü": "−"}' % _LONG,
}
REJECTED_AS_JSON_LOADS_REJECTS = {
    "extra value": '{"a": [%s], [1]}' % _LONG,
    "unbalanced": '{"a": [[%s]]], "b": 1}' % _LONG,
    "missing comma": '{"a": [1 2 %s]}' % _LONG,
    "truncated": '{"a": [%s' % _LONG,
}


def _bits(value):
    if isinstance(value, dict):
        return {k: _bits(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_bits(v) for v in value]
    return value.hex() if isinstance(value, float) else (type(value).__name__, value)


@pytest.mark.parametrize("text", PARSES_AS_JSON_LOADS.values(), ids=PARSES_AS_JSON_LOADS)
def test_parse_json_gives_json_loads_value_to_the_bit_and_reuses_equal_arrays(text):
    from study.runs.results import parse_json
    arrays = {}
    first, again = parse_json(text.encode(), arrays), parse_json(text.encode(), arrays)
    assert _bits(first) == _bits(again) == _bits(json.loads(text))


@pytest.mark.parametrize("text", REJECTED_AS_JSON_LOADS_REJECTS.values(),
                         ids=REJECTED_AS_JSON_LOADS_REJECTS)
def test_parse_json_rejects_bad_text_with_json_loads_own_error(text):
    from study.runs.results import parse_json
    with pytest.raises(ValueError) as expected:
        json.loads(text)
    with pytest.raises(ValueError) as got:
        parse_json(text.encode(), {})
    assert str(got.value) == str(expected.value)


# parse_result parses each distinct record of the files of one load once, where a file is laid
# out as write_run writes it; its oracle is json.loads too
_RECORDS = [{"rule": "a", "grad": [i / 7 for i in range(200)], "cells": {"x": {"error": "E: }"}}},
            {"rule": "b", "text": "  },\n  {", "values": [1.0, float("nan"), -0.0]},
            {"rule": "a", "grad": [i / 7 for i in range(200)], "cells": {"x": {"error": "E: }"}}}]


def _result_file(records) -> bytes:
    return (json.dumps({"experiment": "two_layer", "provenance": PROV, "records": records},
                       indent=1, sort_keys=True) + "\n").encode()


def test_parse_result_shares_a_record_among_files_never_within_one():
    from study.runs.results import parse_result
    arrays, records = {}, {}
    data = _result_file(_RECORDS)
    first, again = parse_result(data, arrays, records), parse_result(data, arrays, records)
    assert _bits(first) == _bits(again) == _bits(json.loads(data))
    assert list(first) == list(json.loads(data))
    assert [a is b for a, b in zip(first["records"], again["records"])] == [True, True, False]
    assert first["records"][0] is not first["records"][2]  # a file's records stay apart


@pytest.mark.parametrize("records", [[], [{}], [{"a": [1, 2]}]], ids=["none", "empty", "one"])
def test_parse_result_reads_few_records_as_json_loads(records):
    from study.runs.results import parse_result
    data = _result_file(records)
    assert _bits(parse_result(data, {}, {})) == _bits(json.loads(data))


@pytest.mark.parametrize("broken", [
    lambda d: d.replace(b'"rule": "b"', b'"rule": "b",'),  # a record's text is no JSON
    lambda d: d.replace(b"\n  },\n  {", b"\n  }\n  {", 1),  # no comma between records
    lambda d: d.replace(b'"experiment"', b'"experiment" "x"', 1),  # the head is no JSON
], ids=["record", "between records", "head"])
def test_parse_result_rejects_a_corrupt_file_with_json_loads_own_error(broken):
    from study.runs.results import parse_result
    data = broken(_result_file(_RECORDS))
    with pytest.raises(ValueError) as expected:
        json.loads(data)
    with pytest.raises(ValueError) as got:
        parse_result(data, {}, {})
    assert str(got.value) == str(expected.value)


def test_loads_within_shared_loads_share_their_records(tmp_path):
    from study.runs.results import shared_loads
    for folder in ("results", "reference"):
        write_run("two_layer", PROV, [{"rule": "a", "grad": [0.5] * 300}], str(tmp_path / folder))
    with shared_loads():
        (ours,), _ = load_runs([str(tmp_path / "results")], {"two_layer"})
        (theirs,), _ = load_runs([str(tmp_path / "reference")], {"two_layer"})
    (apart,), _ = load_runs([str(tmp_path / "reference")], {"two_layer"})
    assert ours.records == theirs.records == apart.records
    assert ours.records[0] is theirs.records[0] and apart.records[0] is not ours.records[0]

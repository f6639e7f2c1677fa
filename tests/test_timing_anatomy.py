"""The checks that take a timing case apart: what their thunks compute, against autograd and
jax.vjp as the oracle, and their summaries on hand-made records."""
import jax
import jax.numpy as jnp
import numpy as np
import pytest
import torch

from experiments.timing import inductor_bool_mask
from experiments.timing import checks as timing_checks
from experiments.timing import harness as timing
from experiments.timing import processes as timing_processes
from experiments.timing.measure import run_case
from experiments.timing.records import (COMPILED, EAGER, VECTOR_OFF, Timing, comparable_cells,
                                        over)
from experiments.timing.summary import summarise
from experiments.timing.targets import probe_fact
from study.measure.devices import Device
from study.measure.rules import RULES
from study.report import macros, say
from study.runs.results import Run


PROV = {"utc": "t", "host": "h", "device": "cpu", "torch": "t", "jax": "j", "scope": "quick",
        "torch_cpu_capability": "AVX2"}


def _timing(records) -> Timing:
    plan = {"part": "plan", "reference_rules": {"torch": "ref", "jax": "jax_relu"}}
    return Timing(Run.of("timing", PROV, [plan, *records], "x.json"))


def _rec(part, seconds, **fields):
    return {"part": part, "times_s": list(seconds), "stats": {"median": float(np.median(seconds))},
            **fields}


def _copy(what, into, seconds, n=1000):
    return _rec("machine", [seconds] * 3, what=what, into=into, n=n, bytes=8 * n)


def test_the_machines_copy_is_the_fastest_copy_into_an_existing_buffer():
    # numpy into an existing buffer (1 s) beats torch's (2 s); JAX's copy into a new buffer
    # is faster still (0.5 s) but is not a copy into an existing buffer, so it is not the limit
    t = _timing([_copy("copy torch", "preallocated", 2.0), _copy("copy numpy", "preallocated", 1.0),
                 _copy("copy jax", "new buffer", 0.5)])
    assert t.machine_copy(1000)["what"] == "copy numpy"
    assert t.machine_copy(10) is None


def test_copies_from_runs_before_the_into_field_keep_what_they_measured():
    # the old harness copied torch with out.copy_(x) and JAX with jit(x + 0.0), one copy per
    # library and size; the committed runs it made were converted once with "into" filled so:
    # every committed copy names its buffer, and where a run has one copy per library and size
    # torch's went into an existing buffer and JAX's into a new one
    from study.runs.results import REFERENCE_DIR, RESULTS_DIR, load_runs
    old = 0
    for root in (RESULTS_DIR, REFERENCE_DIR):
        runs, _ = load_runs([root], {"timing"}, only=("timing",))
        assert runs
        for run in runs:
            copies = [c for c in run.rows("machine") if c.get("bytes") is not None]
            assert copies and all(c.get("into") in ("preallocated", "new buffer") for c in copies)
            keys = [(c["what"], c["n"]) for c in copies]
            if len(set(keys)) == len(keys):  # the old harness's
                old += 1
                assert {(c["what"], c["into"]) for c in copies} == {
                    ("copy torch", "preallocated"), ("copy jax", "new buffer")}
    assert old  # the runs before the field are among them


def test_a_paired_ratio_is_the_median_of_the_per_round_ratios():
    # rounds (2, 4, 9) over (1, 2, 3): per-round ratios 2, 2, 3, median 2
    r = over(_rec("x", [2.0, 4.0, 9.0]), _rec("x", [1.0, 2.0, 3.0]))
    assert r.value == 2.0 and r.lo >= 2.0 and r.hi <= 3.0
    assert over(_rec("x", [1.0]), _rec("x", [1.0, 2.0])) is None  # not timed in the same rounds


def _piece(rule, piece, us, n=8):
    return _rec("eager_parts", [us * 1e-6] * 4, framework="torch", n=n, rule=rule, name=rule,
                piece=piece)


def test_each_piece_of_the_eager_step_is_divided_by_the_built_ins_same_piece():
    # the built-in's step 4 µs and backward 2 µs; the rule's 10 µs and 3 µs, and 1.5 µs on
    # sorted signs
    recs = [_piece("ref", "step", 4), _piece("ref", "backward", 2), _piece("r", "step", 10),
            _piece("r", "backward", 3), _piece("r", "backward, sorted signs", 1.5)]
    plan = {"part": "plan", "reference_rules": {"torch": "ref"}}
    parts = summarise([Run.of("timing", PROV, [plan, *recs], "x.json")]).parts
    assert [r.value if r else None for r in parts["÷ built-in's"]] == [None, None, 2.5, 1.5, None]
    of = _timing(recs).pieces()[("torch", 8, "r")]
    assert over(of["backward"], of["backward, sorted signs"]).value == 2  # 3 / 1.5


def _probe(role, way, signs, us):
    compiled = way != EAGER
    return _rec("probes", [us * 1e-6] * 5, probe=f"the {role}", role=role, signs=signs, n=10 ** 6,
                compiled=compiled,
                simdlen=0 if way == VECTOR_OFF else None)


def _probes(bool_scalar_us):
    eager, compiled, off = EAGER, COMPILED, VECTOR_OFF
    return [_probe("step", eager, "random", 100), _probe("step", eager, "sorted", 100),
            _probe("step", compiled, "random", 1000), _probe("step", compiled, "sorted", 500),
            _probe("step", off, "random", 600), _probe("step", off, "sorted", 200),
            _probe("bool store", eager, "random", 50),
            _probe("bool store", compiled, "random", 500),
            _probe("bool store", off, "random", bool_scalar_us)]


def test_the_reproducers_finding_blames_the_vector_store_only_when_turning_it_off_helps():
    # step: compiled 10x eager; vector code off 6x on random signs, 2x on sorted (3x apart)
    prose = macros("experiments/timing/prose.j2")
    fact = probe_fact(_timing(_probes(bool_scalar_us=50)))
    # each an estimate timed in the same rounds: the fixture's rounds are alike, so each
    # interval has no width (saturated) and the value is the ratio itself
    assert [e.value for e in (fact.step, fact.step_sorted, fact.store, fact.store_vector_off)
            ] == pytest.approx([10, 5, 10, 1])
    assert [e.value for e in (fact.step_vector_off, fact.step_vector_off_sorted,
                              fact.vector_off_signs)] == pytest.approx([6, 2, 3])
    text = say(prose, "finding_probe", f=fact)
    assert "takes 10 [10, 10] (saturated)× eager at 10^6 (timed in the same rounds); two causes" \
        in text
    assert "alone 10 [10, 10] (saturated)× eager, 1 [1, 1] (saturated)× with vector code off" \
        in text
    assert "6 [6, 6] (saturated)× eager on random signs, 2 [2, 2] (saturated)× on sorted" in text
    assert text.endswith("Vector code off is no workaround: eager stays faster.")
    same = say(prose, "finding_probe", f=probe_fact(_timing(_probes(bool_scalar_us=500))))
    # off or on, the store takes 10x eager
    assert "the cause" in same and "bool-mask store" not in same


def _grad(rule_fn, x, g):
    x = x.detach().requires_grad_(True)
    return torch.autograd.grad(rule_fn(x), x, g)[0]


def test_each_torch_piece_computes_what_autograd_computes():
    # the backward body alone, called outside autograd, gives autograd's dx for its rule
    # (random signs and sorted ones); the built-in's kernels give torch.relu's
    device = Device("cpu")
    thunks = timing_checks.eager_part_thunks("torch", 64, device,
                                             timing.timed_rules(RULES, "torch"))
    x_np, g_np = timing.inputs(64)
    x, g = torch.tensor(x_np), torch.tensor(g_np)  # inputs() are read-only: copies
    expected = _grad(torch.relu, x, g)
    for (rule, piece), (thunk, _) in thunks.items():
        out = thunk()
        if piece in ("step", "backward"):
            torch.testing.assert_close(out, expected, rtol=0, atol=0, msg=f"{rule} {piece}")
        if piece == "forward":
            torch.testing.assert_close(out, torch.relu(x), rtol=0, atol=0)
        if piece == "backward, sorted signs":
            torch.testing.assert_close(out, (torch.tensor(np.sort(x_np)) > 0).float(),
                                       rtol=0, atol=0, msg=rule)
    assert {r for r, _ in thunks} >= {"torch_relu", timing_checks.OVER_BUILTIN["torch"][0],
                                      "torch_myrelu_seed", "torch_custom_bit_mask"}
    assert "torch_custom_op_c0" not in {r for r, _ in thunks}  # its body is not a method


def test_each_jax_piece_computes_what_jax_vjp_computes():
    thunks = timing_checks.eager_part_thunks("jax", 64, Device("cpu"),
                                             timing.timed_rules(RULES, "jax"))
    x_np, g_np = timing.inputs(64)
    expected = jax.vjp(jax.nn.relu, jnp.asarray(x_np))[1](jnp.asarray(g_np))[0]
    for (rule, piece), (thunk, _) in thunks.items():
        out = thunk()
        if piece == "backward":
            out = out[0] if isinstance(out, tuple) else out
        if piece in ("step", "backward"):
            np.testing.assert_array_equal(np.asarray(out), np.asarray(expected), err_msg=rule)
    assert "jax_custom_nondiff_c0" not in {r for r, _ in thunks}


def test_the_three_ways_of_the_page_fault_check_compute_the_same_gradient():
    thunks = timing_checks.page_fault_thunks(Device("cpu"), 64)
    x_np, g_np = timing.inputs(64)
    expected = _grad(torch.relu, torch.tensor(x_np), torch.tensor(g_np))
    for way, (thunk, _) in thunks.items():
        torch.testing.assert_close(thunk(), expected, rtol=0, atol=0, msg=way)


def test_every_copy_copies():
    for (what, into), (thunk, sync) in timing_checks.copy_thunks(Device("cpu"), 64).items():
        out = thunk()
        sync(out)
        np.testing.assert_array_equal(np.asarray(out), timing.inputs(64)[0],
                                      err_msg=f"{what} {into}")


def test_the_reproducer_sorts_the_same_values_and_compiles_without_vector_code_only_in_cpp():
    random, sorted_ = (inductor_bool_mask.inputs(100, s) for s in inductor_bool_mask.SIGNS)
    assert torch.equal(random["x"].sort().values, sorted_["x"])
    assert torch.equal(sorted_["m"], sorted_["x"] <= 0)
    assert set(inductor_bool_mask.compile_options("cpu")) == {"compile", "compile, simdlen=0"}
    assert set(inductor_bool_mask.compile_options("cuda")) == {"compile"}


def test_the_harness_counts_each_calls_page_faults_a_new_buffer_faults_an_existing_one_not():
    # 64 MiB written on each call (above glibc's largest mmap threshold, 32 MiB, so each new
    # array is a fresh mapping that faults when first written, a page or a huge page at a
    # time); a buffer written before is already mapped
    from study.workloads.timing import time_interleaved
    src = np.ones(1 << 24, np.float32)
    dst = np.empty_like(src)
    np.copyto(dst, src)
    got = timing_checks.with_faults(time_interleaved(
        {"existing": (lambda: np.copyto(dst, src), lambda _: None),
         "fresh": (lambda: np.ones(1 << 24, np.float32), lambda _: None)}, rounds=3))
    assert len(got["fresh"]["minor_faults"]) == 3
    assert got["fresh"]["minor_faults_per_call"] >= 1
    assert got["fresh"]["minor_faults_per_call"] > got["existing"]["minor_faults_per_call"]


def test_a_rerun_compares_each_checks_ratio_measured_within_one_case():
    # step 2x the built-in's in every round, backward 3x; compiled probe 10x its eager time
    recs = [_piece(rule, piece, us, n=10 ** 6) for rule, piece, us in (
        ("ref", "step", 1), ("ref", "backward", 1), ("mine", "step", 2), ("mine", "backward", 3))]
    recs += [_probe("bool store", EAGER, "random", 1), _probe("bool store", COMPILED, "random", 10)]
    plan = {"part": "plan", "reference_rules": {"torch": "ref"}}
    cells = comparable_cells(Run.of("timing", PROV, [plan, *recs], "x.json"))
    medians = {dict(k)["ratio"]: c.value for k, c in cells.items()}
    assert medians == {"torch mine step ÷ built-in's": 2.0, "torch mine backward ÷ built-in's": 3.0,
                       "the bool store compiled ÷ eager": 10.0}


def test_the_reproducer_runs_alone_and_prints_every_op_way_and_sign(capsys):
    # what is handed upstream must run as its docstring says: 4 ops and the whole step, each
    # eager and compiled two ways (a CPU), each on two sign patterns: 30 timed cases
    inductor_bool_mask.main(["64"])
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith(f"torch {torch.__version__}") and "n = 64" in lines[0]
    cases = [ln.split() for ln in lines[1:]]
    assert len(cases) == 5 * 3 * 2
    assert all(float(case[-1]) > 0 for case in cases)


def test_records_from_several_processes_merge_round_for_round_in_process_order():
    def rec(probe, times):
        return {"part": "probes", "probe": probe, "mode": "compile", "signs": "random",
                "times_s": times, "dispatch_s": times, "minor_faults": [0] * len(times),
                "first_call_s": times[0], "stats": {}}
    first = [rec("a", [1.0, 2.0]), rec("b", [5.0, 6.0])]
    second = [rec("a", [3.0, 4.0, 9.0]), rec("b", [7.0, 8.0, 9.0])]
    a, b = timing_processes.merge_processes([first, second])
    assert a["times_s"] == [1.0, 2.0, 3.0, 4.0, 9.0] and a["process_rounds"] == [2, 3]
    assert a["first_calls_s"] == [1.0, 3.0] and a["stats"]["median"] == 3.0
    assert a["minor_faults_per_call"] == 0.0 and b["times_s"] == [5.0, 6.0, 7.0, 8.0, 9.0]
    with pytest.raises(RuntimeError, match="different thunks"):
        timing_processes.merge_processes([first, second[::-1]])


def test_a_case_in_several_processes_takes_rounds_in_each_and_names_a_failed_one():
    device = Device("cpu")
    with device.as_default():
        records = run_case(device, "page_faults", n=1000, processes=2)
    assert all(len(r["process_rounds"]) == 2 and sum(r["process_rounds"]) == len(r["times_s"])
               and min(r["process_rounds"]) >= timing.MIN_ROUNDS // 2 for r in records)
    worker = timing_processes.Worker.started("cpu", 1)[0]
    with pytest.raises(RuntimeError, match="a fresh process for page_faults failed: .*"):
        worker.records("page_faults", {"n": "not a size"})

"""study check's first screen and what feeds it: one row per kind in plain words, arrays
summarised, rules with NaN or infinite derivatives accepted and judged where the value is
finite, and no framework debug output while it runs."""
import logging

import numpy as np
import pytest

from study.check import CheckResult, Finding, Where, _judges, _probe, _sections
from study.check._load import as_rule
from study.check._run import _compile_trace_silenced
from tests import rules_with_findings as R


def _rule(fn, framework=None):
    return as_rule(fn, framework)[0]


def _result(findings, **fields) -> CheckResult:
    return CheckResult(target="t", framework="torch", style="callable", device="cpu",
                       scope={"quick": True, "skipped": [], "dtypes": ["float32"],
                              "placements": ["packed"], "compiled": "none"},
                       environment={"torch": "T", "jax": "J", "cpu": "C",
                                    "cpu_capability": "K"},
                       kinks={"scanned": [0.0], "given": [], "probed": [0.0]},
                       findings=findings, **fields)


def _vjp(input_, bits, cotangent, detail, expected, cells) -> Finding:
    return Finding("vjp_not_linear", Where("vjp", "float32", "eager", "packed", input_, bits,
                                           cotangent), detail, expected, cells)


ZERO = _vjp("+0.0", "0x00000000", "2, -1 (mixed)", "reverse 0.5 whatever the cotangent",
            "2.0 × 0.5 = 1.0", 2)
ONE = _vjp("1", "0x3f800000", "-1", "reverse 0 at cotangent -1.0", "-1.0 × 1.0 = -1.0", 1)
ERROR = Finding("transform_error", Where("transforms", "float64", transformation="vmap forward"),
                "RuntimeError: no vmap")


def test_one_row_per_kind_with_its_cells_and_an_ordinary_example_first():
    screen = _result([ZERO, ERROR, ONE]).first_screen()
    lines = screen.split("\n")
    assert lines[4] == ("**fails** (exit 1): `vjp_not_linear` says a result is silently "
                        "wrong.")
    rows = [line for line in lines if line.startswith("| ")][1:]  # after the header
    # two kinds, two rows; vjp_not_linear's 2 + 1 cells; its example at x = 1, an ordinary
    # input, before x = +0.0 found first
    assert len(rows) == 2
    assert rows[0].startswith("| wrong | `vjp_not_linear` | the backward does not scale")
    assert rows[0].endswith("| 3 | x = 1 (0x3f800000), float32, cotangent -1: reverse 0 at "
                            "cotangent -1.0; expected -1.0 × 1.0 = -1.0 |")
    assert rows[1].endswith("| 1 | vmap forward, float64: RuntimeError: no vmap |")
    assert "Findings in detail" not in screen and "id" not in screen


def test_known_findings_pass_and_an_entry_no_longer_found_is_fixed():
    from study.check._known import parse_known
    entries = parse_known({"study_check_known": 1, "known": [
        {"kind": "vjp_not_linear", "where": {"cotangent": "-1"}, "reason": "guided on purpose"},
        {"id": "gradcheck_fails-00000000", "reason": "an old fault"},
        {"kind": "not_deterministic", "where": {"dtype": "float16"}, "reason": "f16 only"}]})
    r = _result([ZERO, ONE])
    r.apply_known(entries, "known.json")
    # "-1" is one of ZERO's merged cotangents "2, -1 (mixed)"? No: "-1 (mixed)" is; ONE's is
    assert r.accepted == {ONE.id: "guided on purpose"} and r.exit_code == 1
    assert [e.id for e in r.fixed] == ["gradcheck_fails-00000000"]
    assert [e.kind for e in r.unmeasured] == ["not_deterministic"]  # float16: not checked
    md = r.to_markdown()
    assert "| wrong | `vjp_not_linear` |" in md and "| 3 (1 known) |" in md
    assert ("- fixed: `gradcheck_fails-00000000` — an old fault; remove it from the known "
            "file, or rewrite the file with --update-known") in md
    assert "| known: why |" in md and "| guided on purpose |" in md
    r.apply_known(parse_known([{"kind": "vjp_not_linear", "reason": "all of it"}]), "k.json")
    assert r.exit_code == 0 and r.first_screen().split("\n")[4] == (
        "**ok** (exit 0): no finding says a result is silently wrong; 2 known findings "
        "accepted (k.json).")
    data = r.to_json()
    assert data["known"]["accepted"][0] == {"id": ZERO.id, "reason": "all of it"}
    assert data["findings"][0]["known"] == "all of it" and data["exit_code"] == 0


@pytest.mark.parametrize("entry, message", [
    ({"kind": "vjp_not_linear"}, "entry 1 has no reason"),
    ({"kind": "vjp_not_linear", "reason": " "}, "entry 1 has no reason"),
    ({"kind": "no_such", "reason": "r"}, "entry 1 has unknown kind 'no_such'"),
    ({"reason": "r"}, "entry 1 names neither an id nor a kind"),
    ({"kind": "vjp_not_linear", "where": {"line": 3}, "reason": "r"}, "a where with fields"),
    ({"id": "x", "reason": "r", "status": "xfail"}, "unknown key 'status'"),
])
def test_a_malformed_known_entry_is_a_one_line_usage_error(entry, message):
    from study.check import UsageError
    from study.check._known import parse_known
    with pytest.raises(UsageError, match=message):
        parse_known({"study_check_known": 1, "known": [entry]}, "k.json")
    with pytest.raises(UsageError, match="not a known file of format 1"):
        parse_known({"known": []}, "k.json")


def test_updated_known_keeps_what_is_still_found_and_adds_the_new_by_id():
    from study.check._known import parse_known, updated
    entries = parse_known([{"kind": "vjp_not_linear", "where": {"input": "+0.0"},
                            "reason": "at zero on purpose"},
                           {"id": "gone-1", "reason": "fixed since"}])
    data = updated([ZERO, ONE, ERROR], entries, ("vjp_not_linear",))
    assert data["known"][0] == {"kind": "vjp_not_linear", "where": {"input": "+0.0"},
                                "reason": "at zero on purpose"}
    assert data["known"][1]["id"] == ONE.id and data["known"][1]["reason"] == ""
    assert len(data["known"]) == 2  # the fixed entry is dropped; a warning is not failing


def test_gradcheck_at_a_kink_reads_as_the_kink_s_outcome():
    r = _result([], gradcheck=[{"x": -0.6, "at_kink": False, "outcome": "passed"},
                               {"x": 0.35, "at_kink": False, "outcome": "passed"},
                               {"x": -2.0, "at_kink": False, "outcome": "value NaN: not checked"},
                               {"x": 0.0, "at_kink": True, "outcome": "failed"}],
                determinism=[])
    line = [ln for ln in r.to_markdown().split("\n") if ln.startswith("- torch.autograd")][0]
    assert line == ("- torch.autograd.gradcheck, float64: at smooth points passed at x = -0.6, "
                    "x = 0.35; value NaN: not checked at x = -2.0; at the kinks, where a "
                    "central difference straddles the kink and judges nothing (so no finding "
                    "either way): failed at x = 0.")


def test_arrays_are_summarised_by_the_elements_that_differ():
    seen, expected = _sections.differing_elements(np.arange(6.0), np.zeros(6), 0.0)
    assert seen == "1.0 at [1]; 2.0 at [2]; 3.0 at [3] (2 more differ, 1 of 6 agree)"
    assert expected == "0, 0, 0 there"
    # NaN where a reference does not judge (NaN) is no difference; NaN where it does is one
    seen, expected = _sections.differing_elements([[1.0, np.nan], [np.nan, 1.0]],
                                                  [[1.0, np.nan], [0.0, 1.0]], 0.0)
    assert (seen, expected) == ("NaN at [1, 0] (3 of 4 agree)", "0 there")
    # labels name the elements of an array of their own length, and only those: a longer array
    # (a transformation's column over more points than the inputs labelled) keeps its indices
    labels = ["x = -1", "x = 0"]
    assert _sections.differing_elements([5.0, 0.0], [0.0, 0.0], 0.0, labels)[0] == (
        "5.0 at x = -1 (1 of 2 agree)")
    assert _sections.differing_elements([0.0, 0.0, 7.0], [0.0] * 3, 0.0, labels)[0] == (
        "7.0 at [2] (2 of 3 agree)")


def test_compile_trace_is_silent_during_the_check_and_restored_after():
    import torch
    trace = logging.getLogger("torch.__trace")
    records = []

    class Keep(logging.Handler):
        def emit(self, record):
            records.append(record)
    keep = Keep()
    trace.addHandler(keep)
    try:
        with _compile_trace_silenced({"torch"}):
            torch._dynamo.reset()
            torch.compile(lambda t: t * 3, backend="eager")(torch.ones(2))
            assert keep not in trace.handlers
        assert records == [] and keep in trace.handlers
        torch._dynamo.reset()
        torch.compile(lambda t: t * 5, backend="eager")(torch.ones(2))
        assert records  # outside, the same compile logs: the test above can fail
    finally:
        trace.removeHandler(keep)


# --- rules whose derivative is NaN or infinite somewhere --------------------------------------

@pytest.mark.parametrize("fn", [R.torch_sqrt, R.torch_log, R.one_sided_sqrt])
def test_sqrt_and_log_are_elementwise(fn, cpu):
    assert _probe.check_callable(_rule(fn), cpu) == []


@pytest.mark.parametrize("fn, seen", [
    (R.mixes_elements, "d y[0] / d x[1] = -1.0"),
    # its finite off-diagonal entries are all 0 and its NaN ones 0 × NaN: only the values,
    # reversed with the input, show it
    (R.nan_from_a_neighbour, "y[0] of f(x reversed) differs from y[4] of f(x)"),
])
def test_a_rule_mixing_elements_is_refused(fn, seen, cpu):
    found, = _probe.check_callable(_rule(fn, "torch"), cpu)
    assert found.kind == "not_elementwise" and found.detail.startswith(seen)


def test_a_nan_off_the_diagonal_counts_only_where_the_diagonal_there_is_finite():
    nan = float("nan")
    # column 1: d y[1] / d x[1] is NaN (sqrt below 0), so 0 × NaN at (0, 1) is no dependence;
    # column 0's diagonal is finite, so NaN at (1, 0) is one
    jacobian = np.array([[0.5, nan], [nan, nan]])
    assert _probe.mixing_entries(jacobian) == [(1, 0)]


@pytest.mark.parametrize("fn, dtype, infinite", [
    # +inf at +0 (and -inf at -0: 1 / (2 × -0)); NaN below 0, where the value is NaN
    (R.torch_sqrt, "float32", {"-0.0", "+0.0"}),
    # -inf at ±0 and NaN below: no slope there; 1 / 2^-149 overflows float32 at +min_subnormal
    (R.torch_log, "float32", {"+min_subnormal"}),
    # JAX on a CPU flushes ±min_subnormal to 0, where its convention is +inf
    (R.one_sided_sqrt, "float32", {"-min_subnormal", "-0.0", "+0.0", "+min_subnormal"}),
])
def test_nan_and_inf_derivatives_are_judged_where_the_value_is_finite(fn, dtype, infinite,
                                                                      cpu):
    rule = _rule(fn)
    rows = _probe.conventions(rule, dtype, (0.0,), cpu, ("packed",), (), ())
    found = _judges.finiteness_findings(rows, {dtype: _probe.finite_around(rule, dtype, (0.0,),
                                                                          cpu)})
    assert {f.kind for f in found} == {"reverse_infinite"}  # a warning: exit 0
    assert {f.where.input for f in found} == infinite


def test_sqrt_passes_gradcheck_transforms_and_the_clone_hazard(cpu):
    rule = _rule(R.torch_sqrt)
    rows, found = _probe.gradcheck(rule, (0.0,), cpu)
    assert not found
    assert {r["outcome"] for r in rows if r["x"] < 0} == {"value NaN: not checked"}
    # jacfwd's and jacrev's off-diagonal NaN (0 × NaN at x = -1.5, 0 × inf at 0) is unjudged
    cells, found = _sections.transforms(rule, (0.0,), cpu, ("jacfwd", "jacrev", "jvp"),
                                        "aot_eager")
    assert not found and {c["status"] for c in cells.values()} == {"ok"}
    _, found = _sections.clone_hazards(rule, cpu)  # NaN in both gradients is no change
    assert not found


def test_a_long_nearest_builtin_list_is_cut_with_a_count():
    from study.compare.cells import Value
    differing = [{"dtype": "float32", "input": f"{k}", "mode": "reverse", "rule": [Value(1.0)],
                  "builtin": Value(0.0)} for k in range(11)]
    r = _result([], matches={"run": {"label": "C1", "device": "cpu", "torch": "T", "jax": "J",
                                     "same_releases": True, "run": "r", "dataset": "d"},
                             "matches": [], "nearest": {"name": "F.relu", "framework": "torch",
                                                        "differing": differing}}, determinism=[])
    section = r.to_markdown().split("## Built-ins it matches")[1]
    assert section.count("| float32 | ") == 8  # MAX_ROWS of 11
    assert "and 3 more cells that differ (the JSON has them all)." in section


def test_guided_backprop_s_first_screen_shows_it_at_x_equal_1(cpu):
    # its findings as the check measures them (float32 linearity): at +min_subnormal,
    # min_normal and +inf, and at the ordinary points above 0; the example is x = 1
    _, found = _probe.linearity(_rule(R.GuidedBackprop), "float32", (0.0,), cpu)
    row = [ln for ln in _result(found).first_screen().split("\n")
           if ln.startswith("| wrong |")]
    assert len(row) == 1 and row[0].endswith(
        f"| {sum(f.cells for f in found)} | x = 1 (0x3f800000), float32, cotangent -1: reverse "
        "0 at cotangent -1.0, but 1.0 at cotangent 1: the incoming gradient's sign gates it; "
        "expected -1.0 × 1.0 = -1.0 |")

"""The ties in zero_point and in the conformance: the table ties (a row per dtype, execution, tie,
output element and input), the report's table and answer, the conformance listing, the shipped
dataset's breaks and `study conformance`'s verdicts at ties, against gradients derived by hand:
torch.max(x, 0) sends the gradient to the first of the tied inputs (its page: "only propagate
to the indexed element"), jnp.max splits it evenly (1/k each), which PyTorch's rule asks for."""
import math

import pytest

import experiments.zero_point.measure as zp
from experiments.zero_point import EXPERIMENT
from study import conventions
from study.conformance import Known, judge_installed, load_known
from study.conformance._suite import DOCUMENTED, FOLLOWS, NEW
from study.measure.probe import tie_jacobians
from study.measure.rule import TIE_VALUES
from study.measure.rules import by_key
from study.runs.results import Run

PROV = {"device": "cpu", "host": "h", "cpu": "c", "gpu": None, "torch": "2.13.0+cpu",
        "jax": "0.10.2", "scope": "standard", "utc": "2026-12-02T00:00:00"}
PAIR = ("torch_max_dim", "jax_max_axis")


@pytest.fixture(scope="module")
def records():
    """A quick zero_point run of torch.max(x, 0).values, jnp.max(x, axis=0) and the relus (the
    main run's atlas and kinks): their ties and tie records, eager and compiled."""
    from study.measure.devices import Device
    rules = [by_key(k) for k in PAIR + ("torch_relu", "jax_relu")]
    cases = [c for c in zp.cases("quick", rules)
             if c["part"] in ("atlas", "kinks", "ties", "tie_kinks")]
    return [r for c in cases for r in zp.run_case(Device("cpu"), **c)]


def test_a_tie_row_holds_one_gradient_of_one_output_and_input(records):
    rows = [r for r in records if r["part"] == "ties" and r["rule"] == "torch_max_dim"]
    # 2 executions × 2 ties (2 and 4 of 4) × 3 values × 1 output × 4 inputs
    assert len(rows) == 2 * 2 * len(TIE_VALUES) * 4
    assert {(r["execution"], r["at"]) for r in rows} == {
        (e, at) for e in ("eager", "compiled") for at in TIE_VALUES}
    at_zero = [r["gradient"] for r in rows if (r["execution"], r["tie"], r["at"])
               == ("eager", "2 of 4", "0")]
    assert at_zero == [1.0, 0.0, 0.0, 0.0] and all(r["error"] is None for r in rows)
    jax = [r["gradient"] for r in records if r["part"] == "ties" and r["rule"] == "jax_max_axis"
           and (r["execution"], r["tie"], r["at"]) == ("compiled", "4 of 4", "0")]
    assert jax == [0.25] * 4


def test_the_report_table_sets_torch_beside_jax_and_the_rule_beside_both(records):
    out = EXPERIMENT.render(EXPERIMENT.summarise([Run.of("zero_point", PROV, records, "x.json",
                                                         tag="C1")]))
    table = next(t for t in out.tables if t.id == "ties")
    row, = table.frame.to_dict("records")
    assert (row["torch op"], row["JAX op"], row["tie"]) == (
        "torch.max(x, 0).values", "jnp.max(x, axis=0)", "4 of 4 at 0")
    assert row["torch gradient"] == [1.0, 0.0, 0.0, 0.0]
    assert row["JAX gradient"] == row["rule gives"] == [0.25] * 4
    # the break its own page states links the page
    assert (row["torch"], row["JAX"]) == (
        "breaks, [as documented](https://docs.pytorch.org/docs/stable/generated/torch.amax.html)",
        "follows")
    # the CSV: every dtype and execution measured, each row judged against the same rule
    csv = table.listing
    # a tie at NaN labelled as the atlas labels NaN: pandas reads "NaN" back as a missing value
    labels = {"+nan" if v == "NaN" else v for v in TIE_VALUES}
    assert set(csv["execution"]) == {"eager", "compiled"} and set(csv["at"]) == labels
    nan = csv[(csv["at"] == "+nan")]
    assert set(nan["documented rule"]) == {"undefined input"} and nan["follows"].all()
    halves = csv[(csv["op"] == "jnp.max(x, axis=0)") & (csv["tie"] == "2 of 4")
                 & (csv["at"] == "0") & (csv["execution"] == "eager")]
    assert list(halves["gradient"]) == [0.5, 0.5, 0.0, 0.0] and halves["follows"].all()
    # the answer: what a port changes, in the table's numbers
    said, = [a.text for a in out.answers]
    assert ("a port to JAX changes the gradient of 1 of the 1 ops with a look-alike, each "
            "against its own: torch.max(x, 0).values (1, 0, 0, 0 to 0.25, 0.25, 0.25, 0.25) "
            "([table:ties])") in said
    ties = next(t for t in out.tables if t.id == "ties")
    assert "Of the 1 ops with a look-alike, 1 get another gradient" in ties.caption  # as said


def test_the_conformance_lists_each_tie_and_its_break_as_documented(records):
    s = EXPERIMENT.summarise([Run.of("zero_point", PROV, records, "x.json", tag="C1")])
    listing = s.conformance[s.conformance["op"] == "torch.max(x, 0).values"]
    assert set(listing["tie"]) == {"2 of 4 at 0", "2 of 4 at ±0", "4 of 4 at 0", "4 of 4 at ±0"}
    assert set(listing["over"]) == {"x[0], x[1], x[2], x[3]"} and not listing["follows"].any()
    breaks = s.breakers[s.breakers["framework"] == "torch"]
    assert set(breaks["op"]) == {"torch.max(x, 0).values"} and breaks["as documented"].all()
    assert not len(s.breakers[s.breakers["framework"] == "jax"])


def test_the_dataset_holds_a_break_at_a_tie_by_its_op_and_tie(records):
    dataset = conventions.from_runs([Run.of("zero_point", PROV, records, "x.json", tag="C1")],
                                    {}, "here")
    ties = dataset.breaks[dataset.breaks["tie"].notna()]
    assert set(zip(ties["rule"], ties["tie"])) == {
        ("torch_max_dim", t) for t in ("2 of 4 at 0", "2 of 4 at ±0", "4 of 4 at 0",
                                        "4 of 4 at ±0")}


def test_a_documented_break_passes_the_conformance_and_an_undocumented_one_fails(tmp_path):
    documented = judge_installed("torch", "torch_max_dim", Known({}, "none"))
    assert {v["status"] for v in documented.verdicts} == {DOCUMENTED}
    assert documented.exit_code == 0
    assert "as its documentation says (https://docs.pytorch.org/docs/stable/generated/" \
           "torch.amax.html)" in documented.to_markdown()
    pooled = judge_installed("torch", "torch_max_pool1d", Known({}, "none"))
    assert {v["status"] for v in pooled.verdicts} == {NEW} and pooled.exit_code == 1
    # a known file names a tie by the listing's op and its tie
    path = tmp_path / "known.json"
    path.write_text('{"known": [{"op": "F.max_pool1d(x, 4)", "kink": 0, "tie": "2 of 4 at 0", '
                    '"reason": "picks one"}]}')
    known = judge_installed("torch", "torch_max_pool1d", load_known(str(path)))
    statuses = {v["tie"]: v["status"] for v in known.verdicts}
    assert statuses["2 of 4 at 0"] == "known break" and statuses["4 of 4 at 0"] == NEW
    assert {v["status"] for v in judge_installed("jax", "jax_max_axis",
                                                 Known({}, "none")).verdicts} == {FOLLOWS}


def test_compiled_and_eager_gradients_come_from_one_call_per_point(cpu):
    rule = by_key("jax_minimum_xy")
    points = [rule.input_ties[0].point(at) for at in TIE_VALUES]
    eager, compiled = (tie_jacobians(rule, points, "float32", cpu, c) for c in (False, True))
    assert eager[0].tolist() == compiled[0].tolist() == [[0.5, 0.5]]
    assert all(math.copysign(1, g) == 1 for g in eager[1][0])  # ±0: still a split of +0.5

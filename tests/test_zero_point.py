"""The zero-point atlas against measurements made here, in this interpreter, on 0-d inputs.

Nothing here pastes a convention: whatever release is installed, the atlas built in this test
must contain what a 0-d probe of the same op returns, and its porting guide and look-alike pairs
must hold on those probes.
"""
import functools
import math
from dataclasses import replace

import numpy as np
import pytest
import torch

import experiments.zero_point.atlas as zp_atlas
import experiments.zero_point.compiled as zp_compiled
import experiments.zero_point.measure as zp
from experiments.zero_point import EXPERIMENT
import study.measure.rules as rules_module
from study.compare.cells import Error, Placed, Value, collapse, equal
from study.measure.inputs import DTYPES, probe_inputs
from study.measure.placement import ALL_PLACEMENTS, FILL_LENGTH
from study.measure.probe import measure, reverse_derivative
from study.runs.results import Run, load_runs, write_run
from study.measure.rules import RULES, Rule, by_key

CUSTOM = [r for r in RULES if r.kind == "custom"]


def alike(a, b) -> bool:
    """Two measured cells alike by the atlas's one equality."""
    return equal(a, b)


PROV = {"utc": "t", "host": "h", "device": "cpu", "torch": "t", "jax": "j", "scope": "quick"}


def stored_op(modes: dict, labels, rule="r", framework="torch", kind="custom",
              convention=0.0, look_alike=None, execution="eager", placements=("0-d",),
              **more) -> zp_atlas.OpAtlas:
    """A hand-made op at kink 0 in float32 as the atlas reads it back: its row and cells made by
    measure.atlas_rows, read from the run's tables by atlas.run_atlas. Per mode, a cell per
    input (a number is a Value) or one error line that every input raised."""
    def cell(c):
        return c if isinstance(c, (Value, Error, Placed)) else Value(c)
    cells = {m: [Error(c)] * len(labels) if isinstance(c, str) else [cell(x) for x in c]
             for m, c in modes.items()}
    row = {"part": "atlas", "framework": framework, "rule": rule, "name": rule, "kind": kind,
           "convention": convention, "kinks": [0.0], "dtype": "float32", "execution": execution,
           "inputs": list(labels), "placements": list(placements), "look_alike": look_alike,
           **more}
    atlas = zp_atlas.run_atlas(Run.of("zero_point", PROV, zp.atlas_rows(row, cells), "x.json"))
    (op,) = atlas.ops + atlas.compiled
    return op


def tables_of(runs) -> dict:
    runs = [replace(r, tag=r.tag or "C1") for r in runs]
    return {t.id: t for t in EXPERIMENT.render(EXPERIMENT.summarise(runs)).tables}
SAMPLE = sorted(r.key for r in RULES if r.look_alike and not r.several_inputs)  # the atlas


SAMPLE_MODES = ("value", "reverse")  # all that the kinks, porting and pairs tables read


@pytest.fixture(scope="module")
def sample_run(tmp_path_factory):
    """A quick zero_point run of every look-alike op, made in this interpreter: the atlas part,
    in the modes its tests read (forward and second mode, over half of a JAX op's time, feed
    only tables no test here reads; an atlas row lists the modes it measured). Written as a
    result and read back, as the report reads it: its Parquet tables atlas and atlas_cells."""
    from study.measure.devices import Device
    device = Device("cpu")
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(zp, "measure", functools.partial(measure, modes=SAMPLE_MODES))
        records = [rec for case in zp.cases("quick", [by_key(k) for k in SAMPLE])
                   if case["part"] == "atlas" for rec in zp.run_case(device, **case)]
    ops = [rec for rec in records if rec["part"] == "atlas"]
    assert ops and all(rec["modes"] == list(SAMPLE_MODES) for rec in ops)
    assert {rec["part"] for rec in records} == {"atlas", "atlas_cells"}
    root = tmp_path_factory.mktemp("results")
    write_run("zero_point", PROV, records, str(root))
    (run,), _ = load_runs([str(root)], {"zero_point"})
    return run


@pytest.fixture(scope="module")
def sample_tables(sample_run) -> dict:
    return tables_of([sample_run])


@pytest.fixture(scope="module")
def probe_0d():
    """probe_0d(op key, mode) -> {input label: cell}: the mode's cell of a look-alike op at each
    float32 input the atlas probes it at, each input alone as a 0-d tensor; measured once."""
    from study.measure.devices import Device

    @functools.cache
    def probe(key: str, mode: str) -> dict:
        rule = by_key(key)
        inputs = probe_inputs("float32", zp.probed_kinks(rule))
        cells = measure(rule, [x for _, x in inputs], "float32", Device("cpu"), ("0-d",),
                        modes=(mode,))[mode]
        return dict(zip([label for label, _ in inputs], cells))
    return probe


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("rule", CUSTOM, ids=lambda r: r.key)
def test_custom_rules_return_their_convention_at_zero_everywhere(cpu, rule, dtype):
    placements = ALL_PLACEMENTS if rule.framework == "torch" else ("0-d",)
    out = measure(rule, [0.0, -0.0], dtype, cpu, placements, modes=("reverse", "forward"))
    for cell in out["reverse"]:
        assert cell == Value(rule.convention), cell
    # forward mode: what the rule's definition promises (its jvp's convention, or the error the
    # framework raises for a rule without one); a torch.library.custom_op has no forward rule
    # of ours at all, so what torch does there is measured (the transform matrix), not asserted
    if "custom_op" in rule.key:
        return
    promised = forward_mode_promise(rule)
    for c in out["forward"]:
        if isinstance(promised, str):
            assert isinstance(c, Error) and promised in c.line, c
        else:
            assert c == Value(promised), c


def forward_mode_promise(rule: Rule):
    """The convention of the rule's own forward-mode rule, or a phrase of the error its
    framework documents for a rule that has none."""
    import functools

    import jax
    fn = rule.fn.func if isinstance(rule.fn, functools.partial) else rule.fn
    if rule.framework == "jax":
        return rule.convention if isinstance(fn, jax.custom_jvp) else (
            "can't apply forward-mode autodiff (jvp) to a custom_vjp function")
    cls = fn.__self__
    if cls.jvp is not torch.autograd.Function.jvp:
        return rule.convention
    if cls.setup_context is torch.autograd.Function.setup_context:  # the legacy style
        return "it must override the setup_context staticmethod"
    return "You must implement the jvp function"


def test_a_docstrings_declared_derivative_is_read_from_its_math():
    def op(x):
        r"""Like jax.nn.relu6's: :math:`\nabla \mathrm{relu}(0) = 0` and
        :math:`\nabla \mathrm{relu}(6) = 0.5`."""
    rule = Rule("fake", "jax", "fake", "builtin", op)
    assert rules_module.documented_derivatives(rule) == {0.0: 0.0, 6.0: 0.5}
    assert rules_module.documented_derivatives(Rule("f", "jax", "f", "builtin", lambda x: x)) == {}


def test_the_conventions_note_checks_every_declared_derivative_against_the_measurement(
        sample_tables):
    note = next(n for n in sample_tables["kinks"].notes if "docstrings" in n)
    assert "differs" not in note
    declared = [by_key(k) for k in SAMPLE if rules_module.documented_derivatives(by_key(k))]
    for rule in declared:
        assert f"{rule.name}: " in note
    assert "no other op of the atlas declares one" in note  # a count no table prints: none


def test_atlas_cells_contain_the_0d_measurement_of_every_op_and_input(sample_run, probe_0d):
    ops = {(op.rule, op.dtype): op for op in zp_atlas.run_atlas(sample_run).ops}
    assert len(ops) == len(sample_run.rows("atlas")) == len(SAMPLE)  # quick: float32 only
    for rec in sample_run.rows("atlas"):
        op, probed = ops[(rec["rule"], rec["dtype"])], probe_0d(rec["rule"], "reverse")
        inputs = probe_inputs("float32", zp.probed_kinks(by_key(rec["rule"])))
        assert rec["dtype"] == "float32" and rec["inputs"] == [label for label, _ in inputs] and (
            np.array(rec["x"]).tobytes() == np.array([x for _, x in inputs]).tobytes()), \
            rec["rule"]  # the record's inputs are the probe's, bit for bit
        for label in rec["inputs"]:
            got = probed[label]
            assert isinstance(got, Value), (rec["rule"], label, got)
            cell = op.cell("reverse", label)
            values = cell.values if isinstance(cell, Placed) else (cell,)
            assert any(equal(got, v) for v in values), (rec["rule"], label, cell)


def test_porting_guide_and_pairs_hold_on_0d_measurements(sample_tables, probe_0d):
    def probe(key):  # value and reverse gradient of every input, each as a 0-d tensor
        inputs = probe_inputs("float32", zp.probed_kinks(by_key(key)))
        return {m: [probe_0d(key, m)[label] for label, _ in inputs] for m in ("value", "reverse")}

    names = {r.name: r.key for r in RULES}
    tables = sample_tables
    checked = 0
    porting = tables["porting"].frame
    every = porting[(porting["from"] == "torch") & (porting["inputs"] == "every input")]
    for src, dst in zip(every["op"], every["equivalent"]):
        if dst is not None:
            a, b = probe(names[src]), probe(names[dst])
            for m in ("value", "reverse"):
                assert all(alike(x, y) for x, y in zip(a[m], b[m])), (src, dst, m)
            checked += 1
    pairs = tables["pairs"].frame
    eager = pairs[pairs["execution"] == "eager"]
    verdicts = set(zip(eager["torch op"], eager["JAX op"], eager["verdict"]))
    for torch_op, jax_op, verdict in verdicts:
        a, b = probe(names[torch_op])["reverse"], probe(names[jax_op])["reverse"]
        inputs = probe_inputs("float32", zp.probed_kinks(by_key(names[torch_op])))
        keep = [i for i, (lab, _) in enumerate(inputs) if not lab.endswith("min_subnormal")]
        same = all(alike(a[i], b[i]) for i in keep)
        if verdict == "agree":
            assert same, (torch_op, jax_op)
            checked += 1
        elif verdict == "disagree":
            assert not same, (torch_op, jax_op)
            checked += 1
    assert checked >= 5


def test_a_planted_placement_dependence_is_found_and_reported(cpu):
    # Oracle by construction: a rule whose gradient is 1 on 0-d inputs and 0.5 elsewhere.
    class ByRank(torch.autograd.Function):
        @staticmethod
        def forward(x):
            return x.clamp(min=0)

        @staticmethod
        def setup_context(ctx, inputs, output):
            ctx.rank = inputs[0].dim()

        @staticmethod
        def backward(ctx, g):
            return g * (1.0 if ctx.rank == 0 else 0.5)

    rule = Rule("torch_by_rank", "torch", "by rank", "custom", ByRank.apply, 0.5)
    cell = measure(rule, [2.0], "float32", cpu, ALL_PLACEMENTS)["reverse"][0]
    assert isinstance(cell, Placed) and sorted(v.value for v in cell.values) == [0.5, 1.0]
    assert dict(cell.positions)["0-d"] == ((cell.values.index(Value(1.0)), "0"),)
    assert cell.where.count(" at ") == 2


def test_position_runs_are_reported_as_ranges():
    vals = [Value(0.0)] * 64 + [Value(1.0)] * (FILL_LENGTH - 64)
    cell = collapse({"fill": vals, "0-d": [Value(1.0)]})
    assert cell.values == (Value(0.0), Value(1.0))
    assert dict(cell.positions)["fill"] == ((0, "0-63"), (1, f"64-{FILL_LENGTH - 1}"))
    assert cell.where == f"0 at fill 0-63; 1 at fill 64-{FILL_LENGTH - 1}, 0-d"
    nan_cell = collapse({"a": [Value(math.nan)] * 2, "b": [Value(math.nan)]})
    assert isinstance(nan_cell, Value) and math.isnan(nan_cell.value)


def test_probe_inputs_are_exact_neighbours_of_each_kink():
    labels = dict(probe_inputs("float32", (0.0, 6.0)))
    assert np.float32(labels["6-ulp"]) == np.nextafter(np.float32(6), np.float32(0))
    assert np.float32(labels["6+ulp"]) == np.nextafter(np.float32(6), np.float32(7))
    assert labels["+min_subnormal"] == float(np.finfo(np.float32).smallest_subnormal)
    assert np.copysign(1, labels["-0.0"]) == -1


def test_an_op_given_to_the_experiment_appears_in_the_atlas_with_no_other_change(cpu):
    clamp_at_0 = reverse_derivative(by_key("torch_clamp_min0"), 0.0, "float32", cpu)
    new = Rule("torch_twice_clamp", "torch", "2 clamp(x, min=0) (test op)", "builtin",
               lambda x: torch.clamp(x, min=0) * 2, None, (0.0,), False)
    rules = (by_key("torch_relu"), by_key("jax_relu"), new)
    records = [rec for case in zp.cases("quick", rules) for rec in zp.run_case(cpu, **case)]
    tables = tables_of([Run.of("zero_point", PROV, records, "x.json")])
    atlas = (tables["atlas"].listing if tables["atlas"].listing is not None
             else tables["atlas"].frame)
    cell = atlas[(atlas["op"] == new.name) & (atlas["mode"] == "reverse")
                 & (atlas["input"] == "+0.0")]
    assert set(cell["execution"]) == {"eager", "torch.compile(backend='inductor', fullgraph=True)"}
    assert list(cell["value"]) == [2 * clamp_at_0] * 2  # derived from this torch's own clamp


LABELS = ("-1", "1", "+0.0", "+nan")


def op_with(forward, reverse, labels=LABELS, **more):
    """A hand-made atlas op at kink 0, with the given forward and reverse cells, as read back."""
    modes = {"value": [0.0] * len(labels), "reverse": reverse, "forward": forward,
             "second": [0.0] * len(labels)}
    return stored_op(modes, labels, **more)


def test_forward_mode_is_flagged_where_it_disagrees_with_reverse_away_from_the_kink():
    # d/dx of relu is 1 at x = 1 in both modes; a tangent of 0 there is wrong, whatever the
    # two modes say at the kink (+0.0) or at NaN, where conventions may differ
    wrong = op_with(forward=[0.0, 0.0, 0.0, 0.0], reverse=[0.0, 1.0, 0.0, 0.0])
    right = op_with(forward=[0.0, 1.0, 1.0, 1.0], reverse=[0.0, 1.0, 0.0, float("nan")])
    assert zp_atlas.forward_disagrees(wrong) == ["1"]
    assert zp_atlas.forward_disagrees(right) == []


def test_compiled_changes_read_the_eager_cell_at_the_compiled_placements_only():
    # Eagerly 0 in the vector body and 1 in the tail of the fill, 0 in 2-D rows; compiled in
    # 2-D rows it is 0: no change. Compiled in fill it is 1 everywhere: a change.
    eager_cell = Placed((Value(0.0), Value(1.0)), (("fill", ((0, "0-63"), (1, "64-66"))),
                                                   ("2-D rows", ((0, "0-66"),))))
    eager = op_with(forward=[0.0] * 4, reverse=[0.0, 1.0, eager_cell, 0.0],
                    placements=("fill", "2-D rows"))
    assert eager.cell("reverse", "+0.0") == eager_cell  # the Placed cell survives its rows
    compiled = {"execution": "compiled", "compiler": "torch.compile"}
    rows_only = op_with(forward=[0.0] * 4, reverse=[0.0, 1.0, 0.0, 0.0],
                        placements=("2-D rows",), **compiled)
    in_fill = op_with(forward=[0.0] * 4, reverse=[0.0, 1.0, 1.0, 0.0], placements=("fill",),
                      **compiled)
    assert rows_only.compiler == in_fill.compiler == "torch.compile"
    for compiled, expected in ((rows_only, []), (in_fill, [("reverse", "+0.0")])):
        run = zp_atlas.RunAtlas(Run.of("zero_point", PROV, [], "x.json"), [eager], [], [],
                                 [compiled])
        assert [(x.mode, x.input) for x in zp_compiled.compiled_changes(run)] == expected


def test_compiled_forward_mode_that_ignores_the_rule_is_flagged_and_eager_agreement_is_not():
    # A c = 0 rule: eager forward raises, compiled gives 1 at +0 (wrong: flagged); a rule whose
    # eager forward already gives the same wrong tangent is the eager finding's, not this one's.
    eager = op_with(forward="NotImplementedError: jvp", reverse=[0.0, 1.0, 0.0, 0.0])
    assert eager.modes["forward"] == Error("NotImplementedError: jvp")  # one Error, every input
    same = op_with(forward=[0.0, 1.0, 1.0, 1.0], reverse=[0.0, 1.0, 0.0, 0.0])
    compiled = op_with(forward=[0.0, 1.0, 1.0, 1.0], reverse=[0.0, 1.0, 0.0, 0.0],
                       execution="compiled", compiler="torch.compile", placements=("fill",))
    run = zp_atlas.RunAtlas(Run.of("zero_point", PROV, [], "x.json"), [eager], [], [],
                             [compiled])
    (op, before, got), = zp_compiled.compiled_forward_wrong(run)
    assert before.line.startswith("NotImplementedError") and got == Value(1.0)
    run.ops = [same]
    assert zp_compiled.compiled_forward_wrong(run) == []


def test_probe_labels_sort_by_value_with_zero_probes_in_place():
    # given out of order, with a kink beside its ulps (sorted() alone would keep "3+ulp" first)
    labels = ["+nan", "3+ulp", "+0.0", "3", "-3", "min_normal", "-min_subnormal", "-0.0",
              "3-ulp", "-0.5-ulp", "-inf", "+min_subnormal", "+inf"]
    assert sorted(labels, key=zp_atlas.label_order) == [
        "-3", "-0.5-ulp", "-min_subnormal", "-0.0", "+0.0", "+min_subnormal", "min_normal",
        "3-ulp", "3", "3+ulp", "+nan", "+inf", "-inf"]


def test_every_look_alike_pair_is_measured_at_the_same_inputs_and_at_both_kinks(sample_run):
    # a pair is compared cell by cell: an input one op was not measured at, or a kink of its
    # look-alike left out of the run's cases, would hide where the two differ
    inputs = {(r["rule"], r["dtype"]): set(r["inputs"]) for r in sample_run.rows("atlas")}
    for a, b in ((r.key, r.look_alike) for r in RULES if r.look_alike and not r.several_inputs):
        dtypes = {d for rule, d in inputs if rule == a}
        assert dtypes and dtypes == {d for rule, d in inputs if rule == b}, (a, b)
        for dtype in dtypes:
            assert inputs[(a, dtype)] == inputs[(b, dtype)], (a, b, dtype)
            for kink in by_key(a).kinks + by_key(b).kinks:
                assert set(zp_atlas.kink_labels(kink)) <= inputs[(a, dtype)], (a, b, kink)


def test_the_conventions_table_gives_each_pair_at_its_kink_and_where_a_cell_changes():
    from experiments.zero_point.summary import _kinks
    labels = ["-min_subnormal", "+0.0", "+min_subnormal"]

    def op(rule, framework, look_alike, grad_at_0):
        modes = {"value": [0.0, 0.0, 0.0], "reverse": [0.0, grad_at_0, 1.0],
                 "forward": [0.0, grad_at_0, 1.0], "second": [0.0] * 3}
        return stored_op(modes, labels, rule, framework, "builtin", None, look_alike)

    def run(tag, torch_grad):
        return zp_atlas.RunAtlas(Run.of("zero_point", PROV, [], f"{tag}.json", tag=tag),
                                  [op("clamp", "torch", "clip", torch_grad),
                                   op("clip", "jax", "clamp", 0.5)], [], [])
    runs = [run("C2", 0.0), run("C1", 1.0)]
    # read from C1, the main run; C2's torch derivative at 0 differs, so it is named as a run
    # ("in C2", with its torch release, PROV's "t"), not as a dtype or mode would be
    assert _kinks(runs, runs[1]) == [{
        "run": "C1", "torch op": "clamp", "JAX op": "clip", "kink": 0.0, "torch value": 0.0,
        "torch d/dx": 1.0, "JAX value": 0.0, "JAX d/dx": 0.5, "same d/dx": False,
        "changes in": "torch d/dx: in C2 (torch t)"}]

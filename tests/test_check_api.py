"""study check end to end: the API's typed result and the state it restores, the JSON, a
registry rule against its committed atlas row, and the command line's exit codes."""
import copy
import dataclasses
import functools
import json
import logging
import math

import jax
import numpy as np
import pytest
import torch

import study
from study import cli, conventions
from study.check import _atlas, _probe, _sections
from study.check._load import as_rule
from study.compare.cells import Error, Placed, Value, equal
from study.measure.custom_rules import MyReLU, jax_relu_custom_jvp, jax_relu_with_convention
from study.measure.rules import by_key
from study.runs import results
from study.runs.provenance import torch_cpu_capability

RULES_FILE = '''
import jax
import jax.numpy as jnp
import torch

@jax.custom_vjp
def jax_alpha_at_zero(x):
    return jnp.maximum(x, 0)

jax_alpha_at_zero.defvjp(
    lambda x: (jnp.maximum(x, 0), x),
    lambda x, g: (jnp.where(x == 0, 0.5, jnp.where(x > 0, g, 0.0)).astype(g.dtype),))

class AlphaAtZero(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x.clamp(min=0)

    @staticmethod
    def backward(ctx, g):
        x, = ctx.saved_tensors
        out = g.clone()
        out[x < 0] = 0
        out[x == 0] = 0.5
        return out

def alpha_relu(x, alpha):
    return torch.where(x > 0, x, alpha * x)

def both_frameworks(x):
    return x * 2

def mixes(x):
    return x - x.sum()

def raises(x):
    raise ValueError("no")

def reshapes(x):
    return x.reshape(-1)[:1]

not_callable = 3
'''


@pytest.fixture
def rules_file(tmp_path):
    path = tmp_path / "my_rules.py"
    path.write_text(RULES_FILE)
    return str(path)


def _run_cli(argv, capsys) -> tuple[int, str, str]:
    try:
        code = cli.main(["check", *argv])
    except SystemExit as e:
        code = e.code
    out, err = capsys.readouterr()
    return code, out, err


class _Kept(logging.Handler):
    def __init__(self):
        super().__init__()
        self.records = []

    def emit(self, record):
        self.records.append(record)


@pytest.mark.slow  # one inductor graph: about 10 s
def test_myrelu_quick_is_ok_and_the_users_settings_come_back():
    jax.config.update("jax_enable_x64", False)
    torch.manual_seed(7)
    rng = torch.get_rng_state()
    trace, kept = logging.getLogger("torch.__trace"), _Kept()  # where the DEBUG lines came from
    trace.addHandler(kept)
    try:
        r = study.check(MyReLU, quick=True)
        assert jax.config.jax_enable_x64 is False
        assert kept in trace.handlers and kept.records == []  # silent, and put back
    finally:
        jax.config.update("jax_enable_x64", True)  # the suite's setting (conftest)
        trace.removeHandler(kept)
    assert torch.equal(torch.get_rng_state(), rng)
    assert r.ok and r.exit_code == 0, r.to_markdown()
    # where compiled code returns a zero of the other sign than eager (inductor's AVX-512
    # kernels give +0 for clamp's -0.0, its AVX2 ones -0.0: the machine decides), the check
    # says so as information only: the cells it measured, compared here by their sign bits
    eager = {(row["dtype"], row["input"], row["placement"]): row for row in r.conventions
             if row["execution"] == "eager"}

    def flips(a, b) -> bool:
        return (isinstance(a, Value) and isinstance(b, Value) and a.value == 0 == b.value
                and math.copysign(1, a.value) != math.copysign(1, b.value))
    flipped = {(row["input"], mode) for row in r.conventions if row["execution"] == "compiled"
               for mode in ("value", "reverse", "forward")
               if flips(row.get(mode), eager[(row["dtype"], row["input"],
                                              row["placement"])].get(mode))}
    sign = [f for f in r.findings if f.kind == "compiled_zero_sign"]
    assert {(f.where.input, f.where.transformation) for f in sign} == flipped
    assert all(f.severity == "info" for f in sign)
    assert r.style == "autograd.Function (forward(ctx, ...))"
    assert "cost" in r.scope["skipped"] and r.cost is None
    data = json.loads(json.dumps(r.to_json()))  # numbers as numbers, NaN as the token NaN
    minus_zero = [row for row in data["conventions"] if row["input"] == "-0.0"
                  and row["dtype"] == "float32" and row["placement"] == "packed"
                  and row["execution"] == "eager"]
    # clamp's value at -0.0 is -0.0 (== 0.0 in Python: its sign is checked alone)
    assert minus_zero[0]["value"] == {"value": 0.0} and minus_zero[0]["reverse"] == {"value": 1.0}
    assert math.copysign(1, minus_zero[0]["value"]["value"]) == -1.0


@pytest.fixture(scope="module", autouse=True)
def _each_committed_atlas_loaded_once():
    """The committed atlas (the conventions dataset of the committed results, errata applied:
    about a second) loaded once a module for each set of arguments, by the tests and by each
    check they run: a pure function of committed files, the same value every time."""
    loaded, load = {}, _atlas.committed_atlas

    def committed_atlas_once(installed, *args, **kwargs):
        key = (tuple(sorted(installed.items())), args, tuple(sorted(kwargs.items())))
        if key not in loaded:
            loaded[key] = load(installed, *args, **kwargs)
        return loaded[key]
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(_atlas, "committed_atlas", committed_atlas_once)
        yield


INSTALLED = {"torch": torch.__version__, "jax": jax.__version__}


def committed_atlas():
    """The committed atlas the check reads for the releases installed here (errata applied),
    or a skip where this checkout has none."""
    atlas = _atlas.committed_atlas(INSTALLED, "torch", "cpu", torch_cpu_capability())
    if isinstance(atlas, str):
        pytest.skip(atlas)
    return atlas


def expected_run(dataset, capability: str | None) -> dict | None:
    """The dataset's run the check must compare with, as study.check._atlas documents it (the
    run of the installed releases, on a CPU, of this CPU's kernel set where the dataset has one,
    the newest of those), picked here from the dataset's run list; None where no run of the
    installed releases holds cells. Never a label written here: which run it is depends on the
    machine (an AVX-512 CPU's run differs from an AVX2 one's where a value depends on
    placement)."""
    with_cells = set(dataset.cells["run"])
    same = [r for r in dataset.runs if r["run"] in with_cells and r["device"] == "cpu"
            and (r["torch"], r["jax"]) == (INSTALLED["torch"], INSTALLED["jax"])]
    kernels = [r for r in same if r["torch_cpu_capability"] == capability]
    return max(kernels or same, key=lambda r: r["utc"]) if same else None


@functools.cache
def committed_op(run: str, rule: str, dtype: str):
    """The rule's eager op in the committed run named `run`, read from the run's result tables
    as the report reads them (experiments.zero_point.atlas, errata applied): not through the
    conventions dataset the check reads."""
    from experiments.zero_point.atlas import run_atlas
    stored, = [r for r in conventions.atlas_runs(results.RESULTS_DIR)
               if r.path.endswith(f"/{run}.json")]
    op, = [op for op in run_atlas(stored).ops if (op.rule, op.dtype) == (rule, dtype)]
    return op


def atlas_row(atlas, rule, dtype: str):
    """The rule's eager atlas op in the committed run the check chose, typed as the report
    reads it."""
    return committed_op(atlas.run["run"], rule.key, dtype)


def test_a_registry_rule_gives_exactly_the_cells_of_its_committed_atlas_row(cpu):
    # Oracle: the committed run of these releases and this CPU's kernels, errata applied. The
    # check's cells at each placement are the atlas cell read at that placement, exactly:
    # values, errors, and where a placement-dependent value sits.
    rule = by_key("torch_hardtanh")  # kinks at ±1, and a placement-dependent cell at NaN
    atlas = committed_atlas()
    if not atlas.same_releases:
        pytest.skip(f"no committed run of the releases installed here ({atlas.run['run']})")
    op = atlas_row(atlas, rule, "float32")
    rows = _probe.conventions(rule, "float32", rule.kinks, cpu, op.placements, (), ())
    for label in op.inputs:
        for row in (r for r in rows if r["input"] == label):
            for mode in ("value", "reverse", "forward", "second"):
                theirs = op.cell(mode, label)
                theirs = theirs.at([row["placement"]]) if isinstance(theirs, Placed) else theirs
                assert equal(row[mode], theirs), (label, row["placement"], mode)
    assert any(isinstance(op.cell("reverse", label), Placed) for label in op.inputs)
    # the check's own cells of the op (the conventions dataset) are the report's, cell for cell
    mine, = [b for b in atlas.ops if (b.rule, b.dtype) == (rule.key, "float32")]
    assert mine.cells.keys() == {(m, label) for m in op.modes for label in op.inputs}
    assert all(equal(c, op.cell(m, label), zero_sign=True) for (m, label), c in mine.cells.items())
    found = _sections.matches(rows, "torch", atlas)
    assert rule.name in [m["name"] for m in found["matches"]]


def test_a_rule_matching_no_builtin_names_the_nearest_and_the_cells(cpu):
    rule = as_rule(MyReLU)[0]
    rows = _probe.conventions(rule, "float32", (0.0,), cpu, ("packed",), (), ())
    found = _sections.matches(rows, "torch", committed_atlas())
    assert not found["matches"]
    # MyReLU: slope 1 at ±0 and at NaN; the nearest built-in differs in few cells, NaN among them
    assert any(d["input"] == "+nan" and d["mode"] == "reverse" and d["rule"] == [Value(1.0)]
               for d in found["nearest"]["differing"])
    expected = expected_run(conventions.load(), torch_cpu_capability())
    if expected is None:
        pytest.skip("no committed run of the releases installed here")
    assert (found["run"]["label"], found["run"]["run"]) == (expected["label"], expected["run"])
    assert found["run"]["label"] and found["run"]["same_releases"] is True


def test_the_check_names_the_dataset_and_the_release_it_compared_with(cpu, tmp_path):
    rule = as_rule(MyReLU)[0]
    rows = _probe.conventions(rule, "float32", (0.0,), cpu, ("packed",), (), ())
    # in a checkout: the committed results, read as the conventions dataset
    found = _sections.matches(rows, "torch", committed_atlas())["run"]
    assert found["dataset"] == "the results in reports/results"
    expected = expected_run(conventions.load(), torch_cpu_capability())
    if expected is not None:
        assert {k: found[k] for k in ("label", "torch", "jax")} == {
            k: expected[k] for k in ("label", "torch", "jax")}
    # without results (an install): the dataset the package ships, and the check says so
    empty = tmp_path / "results"
    empty.mkdir()
    shipped = conventions.shipped()
    atlas = _atlas.committed_atlas(INSTALLED, "torch", "cpu", torch_cpu_capability(),
                                   results_dir=str(empty))
    found = _sections.matches(rows, "torch", atlas)
    run = found["run"]
    assert run["dataset"] == shipped.source and run["dataset"].startswith(
        "the conventions dataset of relu-gradient-study ")
    chosen = expected_run(shipped, torch_cpu_capability())
    if chosen is not None:
        assert (run["label"], run["run"], run["torch"], run["jax"]) == (
            chosen["label"], chosen["run"], INSTALLED["torch"], INSTALLED["jax"])
    assert run["run"] in {r["run"] for r in shipped.runs}
    from study.check import CheckResult
    md = CheckResult(target="t", framework="torch", style="callable", device="cpu",
                     scope={"quick": True, "skipped": [], "dtypes": ["float32"],
                            "placements": ["packed"], "compiled": "none"},
                     environment={"torch": "T", "jax": "J", "cpu": "C", "cpu_capability": "K"},
                     kinks={"scanned": [0.0], "given": [], "probed": [0.0]},
                     matches=found).to_markdown()
    assert f"against run {run['label']} of {shipped.source}" in " ".join(md.split())


@pytest.mark.parametrize("target, message", [
    ("no_such_module_here:x", "does not import: ModuleNotFoundError"),
    ("{file}:missing", "has no attribute 'missing'"),
    ("{file}:not_callable", "is a int, not callable"),
    ("{file}:both_frameworks", "cannot tell the framework"),
    ("{file}:raises --framework torch", "raises on every input tried"),
    ("{file}:reshapes --framework torch", "returns shape [1]"),
    ("{file}:mixes --framework torch", "is not elementwise"),
    ("{file}:AlphaAtZero --device cuda", "--device cuda: no CUDA device"),
    ("{file}:AlphaAtZero --fail-on no_such_kind", "--fail-on: unknown kind"),
])
def test_each_usage_error_is_one_line_and_exit_2(rules_file, capsys, target, message):
    if "cuda" in target and torch.cuda.is_available():
        pytest.skip("this host has a GPU")
    code, out, err = _run_cli(target.format(file=rules_file).split(), capsys)
    assert code == 2 and out == ""
    assert len(err.strip().splitlines()) == 1 and message in err, err


@pytest.fixture
def measured_once(monkeypatch):
    """study.check's measurements (study.check._run._checked) taken once for a rule, its twin,
    kinks and scope: a second check of the same ones gets a copy with its own fail_on, the only
    argument of the measurements' result that --fail-on changes; everything around them (the
    command line, known findings, reproducers, markdown, exit code) runs as it is."""
    from study.check import _run
    measured, measure = {}, _run._checked

    def checked(rule, style, twin_rule, dev, kinks, quick, fail_on):
        key = (rule.name, style, twin_rule and twin_rule.name, dev.name, kinks, quick)
        if key not in measured:
            measured[key] = copy.deepcopy(measure(rule, style, twin_rule, dev, kinks, quick,
                                                  fail_on))
        return dataclasses.replace(copy.deepcopy(measured[key]), fail_on=fail_on)
    monkeypatch.setattr(_run, "_checked", checked)
    return measured


@pytest.mark.slow  # every eager section and jax.jit, a twin: about 10 s
def test_exit_1_on_a_finding_and_0_with_fail_on_elsewhere(rules_file, capsys, measured_once):
    check = [f"{rules_file}:jax_alpha_at_zero", "--quick", "--kinks", "0.25",
             "--twin", f"{rules_file}:AlphaAtZero"]
    code, out, _ = _run_cli([*check, "--json", "-"], capsys)
    data = json.loads(out)
    assert code == 1 and data["exit_code"] == 1 and data["schema_version"] == 5
    assert {"vjp_not_linear", "transform_wrong"} <= {f["kind"] for f in data["findings"]}
    assert data["kinks"]["given"] == [0.25] and 0.25 in data["kinks"]["probed"]
    assert {"0.25-ulp", "0.25", "0.25+ulp"} <= {row["input"] for row in data["conventions"]}
    # the twin sets 0.5 at 0 too, but JAX flushes a subnormal x to 0 (where the rule gives
    # 0.5), torch does not; and at NaN torch's clone passes the gradient, JAX's where does not
    twin = [f for f in data["findings"] if f["kind"] == "convention_differs_from_twin"]
    assert {f["where"]["input"] for f in twin} == {"-min_subnormal", "+min_subnormal", "+nan"}
    # every wrong finding has what was expected, and its reproducer importing both rules
    assert all(f["expected"] and f["reproducer"] for f in data["findings"]
               if f["severity"] == "wrong")
    assert f"({rules_file}:AlphaAtZero)" in twin[0]["reproducer"]
    assert f"({rules_file}:jax_alpha_at_zero)" in twin[0]["reproducer"]
    # the same check failing on a kind not found: the same findings (measured once), exit 0
    code, out, _ = _run_cli([*check, "--fail-on", "not_deterministic"], capsys)
    assert len(measured_once) == 1
    assert code == 0 and out.startswith("# study check:")
    first_screen = out.split("## Findings in detail")[0]  # findings come first, one row a kind
    assert first_screen.count("| wrong | `vjp_not_linear` |") == 1
    # 0.5 at 0 whatever the incoming gradient: the example shows it, and what was expected;
    # the first input found is -min_subnormal, which JAX on a CPU flushes to 0
    assert ("x = -min_subnormal (0x80000001), float32, cotangent 2: reverse 0.5 whatever the "
            "cotangent (1, 2, -1, 0.5); expected 2.0 × 0.5 = 1.0 |") in first_screen


def test_args_follow_x_and_derivatives_are_taken_in_x_only(rules_file, cpu):
    from study.check import load_target
    fn, _ = load_target(f"{rules_file}:alpha_relu")
    rule, _ = as_rule(fn, "torch", (0.25,))
    _, grad = _probe.vjp(rule, np.array([-2.0, 3.0]), "float64", 1.0, cpu)
    assert grad.tolist() == [0.25, 1.0]  # d/dx of where(x > 0, x, 0.25 x)


@pytest.mark.parametrize("fn, style", [
    (jax_relu_with_convention(0.0), "jax.custom_vjp"),
    (jax_relu_custom_jvp, "jax.custom_jvp"),
    (torch.nn.ReLU, "nn.Module class"),
    (torch.nn.ReLU(), "nn.Module"),
    (by_key("torch_custom_op_c0").fn, "torch.library.custom_op"),
    (by_key("torch_custom_c0").fn.__self__, "autograd.Function (setup_context)"),
])
def test_the_framework_comes_from_the_type(fn, style):
    rule, found_style = as_rule(fn)
    assert found_style == style
    assert rule.framework == ("jax" if style.startswith("jax") else "torch")


def test_a_bug_of_the_check_is_exit_3_in_one_line(rules_file, capsys, monkeypatch):
    def broken(*args, **kwargs):
        raise ZeroDivisionError("a bug of ours")
    monkeypatch.setattr("study.check._run._measure", broken)
    code, out, err = _run_cli([f"{rules_file}:jax_alpha_at_zero", "--quick"], capsys)
    assert code == 3 and out == ""
    assert err.strip() == "internal error of study check: ZeroDivisionError: a bug of ours"


def test_study_check_of_a_registry_rule_gives_its_atlas_row_and_matches_it():
    rule = by_key("jax_relu")
    atlas = committed_atlas()
    r = study.check(rule, quick=True)
    assert r.matches["run"]["run"] == atlas.run["run"]
    # the run of the installed releases and of the kernels the check's environment names
    expected = expected_run(conventions.load(), r.environment["cpu_capability"])
    if expected is not None:
        assert {k: r.matches["run"][k] for k in ("label", "run", "torch", "jax")} == {
            k: expected[k] for k in ("label", "run", "torch", "jax")}
    for dtype in ("float32", "float64"):
        op = atlas_row(atlas, rule, dtype)
        for row in (row for row in r.conventions if row["dtype"] == dtype
                    and row["execution"] == "eager" and row["placement"] in op.placements):
            for mode in ("value", "reverse", "forward", "second"):
                theirs = op.cell(mode, row["input"])
                theirs = theirs.at([row["placement"]]) if isinstance(theirs, Placed) else theirs
                assert equal(row[mode], theirs), (row["input"], mode)
    assert "jax.nn.relu" in [m["name"] for m in r.matches["matches"]]
    assert r.ok, r.to_markdown()


def test_the_markdown_and_json_of_a_hand_made_result():
    from study.check import CheckResult, Finding, Where
    from study.compare.stats import Estimate
    row = {"dtype": "float32", "input": "-0.0", "x": -0.0, "bits": "0x80000000",
           "execution": "eager", "placement": "packed", "value": Value(-0.0),
           "reverse": Value(1.0), "forward": Error("RuntimeError: no jvp"), "second": Value(0.0)}
    r = CheckResult(
        target="t", framework="torch", style="callable", device="cpu",
        scope={"quick": False, "skipped": [], "dtypes": ["float32"], "placements": ["packed"],
               "compiled": "none"},
        environment={"torch": "T", "jax": "J", "cpu": "C", "cpu_capability": "K"},
        kinks={"scanned": "ValueError: no", "given": [], "probed": [0.0]}, conventions=[row],
        twin={"target": "u", "framework": "jax",
              "nets": [{"dataset": "seed", "error": "ValueError: net"}]},
        cost={"elements": 10, "builtin": "torch.relu",
              "ratios": {"eager": Estimate(1.5, 1.25, 2.0, 20), "compiled": "Unsupported: x"},
              "bytes_per_element": {"rule": 4.0, "builtin": 4.0}},
        findings=[Finding("nan_swallowed", Where("conventions", input="+nan"), "value [0]")])
    md = r.to_markdown()
    assert r.ok and "**ok**" in md and "| -0.0 | 0x80000000 | -0 | 1.0 | 0 |" in md
    assert "forward raises at every input: RuntimeError: no jvp" in md
    assert "scan found none: it raises (ValueError: no)" in md
    # the interval 1.25 to 2 is 0.75 wide: printed to hundredths, its whole end without zeros
    assert "| eager | 1.50 [1.25, 2] |" in md and "| compiled | Unsupported: x |" in md
    assert "| seed | — | ValueError: net | no |" in md
    data = json.loads(json.dumps(r.to_json()))
    # numbers are numbers, -0.0 keeping its sign; a cell is {"value"} or {"error"}
    row = data["conventions"][0]
    assert row["value"] == {"value": 0.0} and math.copysign(1, row["value"]["value"]) == -1.0
    assert row["x"] == 0.0 and math.copysign(1, row["x"]) == -1.0
    assert row["reverse"] == {"value": 1.0} and isinstance(row["reverse"]["value"], float)
    assert row["forward"] == {"error": "RuntimeError: no jvp"}
    assert data["cost"]["ratios"]["eager"] == {"value": 1.5, "lo": 1.25, "hi": 2.0, "n": 20}
    assert data["cost"]["ratios"]["compiled"] == "Unsupported: x"
    assert data["findings"][0]["severity"] == "info" and data["exit_code"] == 0


def test_a_torch_rules_run_is_that_of_the_installed_jax_too_where_runs_tie_in_torch(monkeypatch):
    # two runs of one torch, one device and kernel set: a torch rule's check imports no JAX, so
    # only the installed JAX distribution tells them apart; the newer run of another JAX loses
    from study.check import _atlas
    monkeypatch.setattr(_atlas, "_distributions", lambda: {"torch": "T", "jax": "0.10.2"})
    runs = [{"run": "ours", "torch": "T", "jax": "0.10.2", "device": "cpu", "utc": "1",
             "torch_cpu_capability": "K"},
            {"run": "newer", "torch": "T", "jax": "0.9.2", "device": "cpu", "utc": "2",
             "torch_cpu_capability": "K"}]
    assert _atlas._chosen(runs, {"torch": "T"}, "torch", "cpu", "K")["run"] == "ours"
    monkeypatch.setattr(_atlas, "_distributions", lambda: {"torch": "T"})  # no JAX: the newest
    assert _atlas._chosen(runs, {"torch": "T"}, "torch", "cpu", "K")["run"] == "newer"

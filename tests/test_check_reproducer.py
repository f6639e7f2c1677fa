"""Each wrong finding's reproducer, run as the pytest file it is: it fails on the rule the
check measured and passes on one corrected there (the same file, importing the corrected rule
under the same name)."""
import os

import numpy as np
import pytest
# imported before any test: pytester takes back every module a test imported, and importing
# inductor twice registers its test operators twice, which torch refuses
import torch._inductor.compile_fx  # noqa: F401

from study.check import _judges, _probe, _reproducer, _sections
from study.check._findings import Finding, Where
from study.check._load import as_rule
from study.check._reproducer_code import HAZARD_W, HAZARD_X
from tests import rules_with_findings

pytest_plugins = ["pytester"]


@pytest.fixture(scope="module", autouse=True)
def _dynamo_imported():
    """One compile before any test's pytester starts: it takes back the modules a test
    imported, and torch refuses to register its compile-time backends twice."""
    import torch
    torch.compile(lambda t: t + 1, backend="aot_eager", fullgraph=True)(torch.ones(2))

RULES = os.path.abspath(rules_with_findings.__file__)
CORRECTED = '''
import jax
import jax.numpy as jnp
import torch

from study.measure.custom_rules import MyReLU


class AlphaAtZero(MyReLU):  # every one of these: the derivative is 1 where x >= 0, else 0
    pass


GuidedBackprop = RandomAtZero = TwiceTheSlope = NaNBelowZero = WritesGradOutput = MyReLU


def addcmul_relu(x):
    return torch.relu(x)


class WrongJvp(torch.autograd.Function):
    @staticmethod
    def forward(x):
        return x.clamp(min=0)

    @staticmethod
    def setup_context(ctx, inputs, output):
        ctx.save_for_backward(inputs[0])
        ctx.save_for_forward(inputs[0])

    @staticmethod
    def backward(ctx, grad_output):
        x, = ctx.saved_tensors
        return grad_output * (x > 0).to(x.dtype)

    @staticmethod
    def jvp(ctx, tangent):
        x, = ctx.saved_tensors
        return tangent * (x > 0).to(x.dtype)


def jax_guided(x):
    return jax.nn.relu(x)
'''


def _source(attr: str, rule) -> _reproducer.Source:
    return _reproducer.Source.of(rule, f"{RULES}:{attr}", as_rule(rule)[1])


def _outcome(pytester, code: str) -> tuple[int, int]:
    """(passed, failed) of a reproducer run in this process, where each failure is its
    assertion's (or gradcheck's), never an error of the file."""
    pytester.makepyfile(test_reproducer=code)
    result = pytester.runpytest_inprocess("-q", "-p", "no:cacheprovider")
    failed = [r for r in result.reprec.getreports("pytest_runtest_logreport") if r.failed]
    for report in failed:
        assert report.when == "call" and ("AssertionError" in report.longreprtext
                                          or "GradcheckError" in report.longreprtext), \
            report.longreprtext
    counts = result.parseoutcomes()
    return counts.get("passed", 0), counts.get("failed", 0)


def fails_then_passes_corrected(pytester, findings, attr, rule, **extra) -> str:
    """The reproducer of findings: every case fails on the rule, every case passes on the
    corrected rule of the same name; returns its code."""
    code = _reproducer.reproducer(findings, _source(attr, rule), as_rule(rule)[0].framework,
                                  **extra)
    assert _outcome(pytester, code) == (0, len(findings)), code
    corrected = pytester.path / "corrected_rules.py"
    corrected.write_text(CORRECTED)
    fixed = code.replace(RULES, str(corrected)).replace("'rules_with_findings'",
                                                        "'corrected_rules'")
    assert _outcome(pytester, fixed) == (len(findings), 0), fixed
    return code


def test_alpha_at_zero_not_linear(pytester, cpu):
    _, found = _probe.linearity(as_rule(rules_with_findings.AlphaAtZero)[0], "float32", (0.0,),
                                cpu)
    code = fails_then_passes_corrected(pytester, found, "AlphaAtZero",
                                       rules_with_findings.AlphaAtZero)
    # x = ±0 exactly, by their bits; cotangent 2, the first that differs
    assert "('float32', 0x00000000, 2.0),  # x = +0.0" in code
    assert "('float32', 0x80000000, 2.0),  # x = -0.0" in code
    assert "_module.AlphaAtZero.apply" in code and "def forward(" not in code  # only what it uses


def test_guided_backprop_not_linear_at_one(pytester, cpu):
    _, found = _probe.linearity(as_rule(rules_with_findings.GuidedBackprop)[0], "float64",
                                (0.0,), cpu)
    one = [f for f in found if f.where.input == "1"]
    code = fails_then_passes_corrected(pytester, one, "GuidedBackprop",
                                       rules_with_findings.GuidedBackprop)
    assert "('float64', 0x3ff0000000000000, -1.0),  # x = 1" in code


def test_jax_guided_backprop_not_linear(pytester, cpu):
    _, found = _probe.linearity(as_rule(rules_with_findings.jax_guided)[0], "float32", (0.0,),
                                cpu)
    fails_then_passes_corrected(pytester, found[:2], "jax_guided", rules_with_findings.jax_guided)


def test_random_at_zero_not_deterministic(pytester, cpu):
    _, found = _probe.determinism(as_rule(rules_with_findings.RandomAtZero)[0], "float32",
                                  (0.0,), cpu)
    wrong = [f for f in found if f.kind == "not_deterministic"]
    fails_then_passes_corrected(pytester, wrong, "RandomAtZero", rules_with_findings.RandomAtZero)


def test_twice_the_slope_fails_gradcheck(pytester, cpu):
    _, found = _probe.gradcheck(as_rule(rules_with_findings.TwiceTheSlope)[0], (0.0,), cpu)
    fails_then_passes_corrected(pytester, found[:1], "TwiceTheSlope",
                                rules_with_findings.TwiceTheSlope)


def test_nan_below_zero_and_addcmul_at_minus_inf(pytester, cpu):
    for attr in ("NaNBelowZero", "addcmul_relu"):
        rule = getattr(rules_with_findings, attr)
        rows = _probe.conventions(as_rule(rule)[0], "float32", (0.0,), cpu, ("packed", "fill"),
                                  (), ())
        around = _probe.finite_around(as_rule(rule)[0], "float32", (0.0,), cpu)
        found = [f for f in _judges.finiteness_findings(rows, {"float32": around})
                 if f.severity == "wrong"]
        assert found
        code = fails_then_passes_corrected(pytester, found, attr, rule)
        assert "'packed', False)" in code  # the first placement named, eagerly


def test_wrong_jvp_transform(pytester, cpu):
    rule = rules_with_findings.WrongJvp
    _, found = _sections.transforms(as_rule(rule)[0], (0.0,), cpu, ("jvp", "forward_ad"),
                                    "aot_eager")
    code = fails_then_passes_corrected(pytester, found, "WrongJvp", rule, kinks=[0.0])
    assert "    'jvp',\n    'forward_ad',\n" in code


def test_writes_grad_output(pytester, cpu):
    rule = rules_with_findings.WritesGradOutput
    _, found = _sections.clone_hazards(as_rule(rule)[0], cpu)
    fails_then_passes_corrected(pytester, found[:1], "WritesGradOutput", rule)


def test_the_hazard_inputs_written_out_are_the_check_s():
    from study.workloads import clone_hazard
    assert np.array_equal(clone_hazard.X, HAZARD_X) and np.array_equal(clone_hazard.W, HAZARD_W)


TWIN_RULES = '''
import torch
from study.measure.custom_rules import jax_relu_with_convention, torch_relu_with_convention
ours = torch_relu_with_convention(1.0)
theirs = jax_relu_with_convention(0.0)
same = jax_relu_with_convention(1.0)
def knows_it_is_compiled(x):
    return x.clamp(min=0) + (1.0 if torch.compiler.is_compiling() else 0.0)
def plain(x):
    return x.clamp(min=0)
'''


def test_a_twin_cell(pytester):
    # a hand-made finding at x = +0.0 (float32): the twin (JAX, convention 0) against the
    # rule (torch, convention 1), reverse mode; a twin of the same convention passes
    from study.measure.custom_rules import jax_relu_with_convention, torch_relu_with_convention
    pytester.makepyfile(twin_rules=TWIN_RULES)
    path = str(pytester.path / "twin_rules.py")
    ours, theirs = torch_relu_with_convention(1.0), jax_relu_with_convention(0.0)
    twin = Finding("convention_differs_from_twin", Where("twin", "float32", "eager", "packed",
                                                         "+0.0", "0x00000000",
                                                         transformation="reverse"), "1.0")
    source = _reproducer.Source.of(ours, f"{path}:ours", as_rule(ours)[1])
    code = _reproducer.reproducer([twin], source, "torch", (_reproducer.Source.of(
        theirs, f"{path}:theirs", as_rule(theirs)[1]), "jax"))
    assert _outcome(pytester, code) == (0, 1)
    assert _outcome(pytester, code.replace("theirs", "same")) == (1, 0)


def test_a_compiled_cell(pytester):
    # a hand-made finding at x = +0.0 (float32, filling a row): compiled against eager for a
    # rule that adds 1 when compiled, and for one that does not. aot_eager in place of the
    # reproducer's inductor: the same dynamo trace, seconds sooner
    pytester.makepyfile(twin_rules=TWIN_RULES)
    compiled = Finding("compiled_differs", Where("conventions", "float32", "compiled", "fill",
                                                 "+0.0", "0x00000000", transformation="value"),
                       "compiled [1.0]")
    source = _reproducer.Source(f"{pytester.path / 'twin_rules.py'}:knows_it_is_compiled")
    code = _reproducer.reproducer([compiled], source, "torch")
    assert 'backend="inductor"' in code
    code = code.replace('backend="inductor"', 'backend="aot_eager"')
    assert _outcome(pytester, code) == (0, 1)
    assert _outcome(pytester, code.replace("knows_it_is_compiled", "plain")) == (1, 0)


def test_a_rule_the_check_cannot_name_has_no_reproducer_and_says_why():
    def local(x):
        return x
    why = _reproducer.Source.of(local, None, "callable")
    assert isinstance(why, str) and "pass source='MODULE_OR_FILE:ATTR'" in why
    named = _reproducer.Source.of(rules_with_findings.AlphaAtZero, None,
                                  "autograd.Function (forward(ctx, ...))")
    assert named.spec == "tests.rules_with_findings:AlphaAtZero" and named.call == ".apply"
    finding = Finding("gradcheck_fails", Where("gradcheck", "float64", "eager", input="1",
                                               bits="0x3ff0000000000000"), "")
    code = _reproducer.reproducer([finding], _reproducer.Source("m.py:f", "", (0.25,)), "torch")
    assert "\nrule = (lambda x: _rule(x, 0.25))  # the arguments after x\n" in code


@pytest.mark.parametrize("framework, spec", [("torch", "torch.nn.functional:relu"),
                                             ("jax", "jax.nn:relu")])
def test_every_transform_column_s_code_passes_on_a_built_in(pytester, framework, spec):
    # a built-in ReLU is right under every transformation the check finds it survives: each
    # such column's code, as a reproducer writes it, passes too (aot_eager in place of
    # inductor, both in the check and in the code: the same trace, sooner)
    from study.workloads.transformations import COLUMNS
    # all but what raises for a built-in (an error, never a transform_wrong): torch's
    # torch.func.grad of a compiled function, and JAX's forward_ad, an API it does not have
    columns = [c for c in COLUMNS if c != {"torch": "grad of compiled", "jax": "forward_ad"}[
        framework]]
    findings = [Finding("transform_wrong", Where("transforms", "float64", transformation=c), "")
                for c in columns]
    code = _reproducer.reproducer(findings, _reproducer.Source(spec), framework, kinks=[0.0])
    code = code.replace('backend="inductor"', 'backend="aot_eager"')
    assert _outcome(pytester, code) == (len(columns), 0), code

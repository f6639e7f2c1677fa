"""Seed 002: backward() on a non-scalar output, in torch and the same steps in JAX.

    python -m study run nonscalar_backward
"""
from dataclasses import dataclass

import jax
import jax.numpy as jnp
import numpy as np

from study.errors import first_error_line
from study.experiment import Comparison, Experiment, Finding, Rendered
from study.results import Run
from study.runsets import identity, run_table, stated_for_runs
from study.tables import column, format_cell

DESCRIPTION = "seed 002: backward() on a non-scalar output, accumulation, and jax.vjp"
QUESTION = ("What does backward() do on seed 002's non-scalar output, how does .grad accumulate "
            "over repeated passes, and what are the same steps in JAX?")
SEED_A = np.array([[1, 2, 3], [4, 5, 6]], np.float32)  # seed 002's a
STEPS = ("backward() with no argument", "looped scalar backward, one pass",
         "looped scalar backward, second pass without zeroing", "backward(a)", "backward(ones)")


def torch_steps(a_np: np.ndarray, device) -> dict:
    """Step -> a.grad after it (nested list), or the first line of its error."""
    out = {}
    a = device.to_torch(a_np, requires_grad=True)
    try:
        (a * a).backward()
        out[STEPS[0]] = device.to_python(a.grad)
    except RuntimeError as exc:
        out[STEPS[0]] = first_error_line(exc)
    a = device.to_torch(a_np, requires_grad=True)
    for step in STEPS[1:3]:
        for i in range(a.shape[0]):
            for j in range(a.shape[1]):
                (a[i, j] * a[i, j]).backward()
        out[step] = device.to_python(a.grad)
    for step, cotangent in ((STEPS[3], a_np), (STEPS[4], np.ones_like(a_np))):
        a = device.to_torch(a_np, requires_grad=True)
        (a * a).backward(device.to_torch(cotangent))
        out[step] = device.to_python(a.grad)
    return out


def jax_steps(a_np: np.ndarray, device) -> dict:
    """The same questions in JAX: grad of a non-scalar, then vjp, which never accumulates."""
    a = device.to_jax(a_np)
    f = lambda v: v * v  # noqa: E731
    out = {}
    try:
        out[STEPS[0]] = device.to_python(jax.grad(f)(a))
    except TypeError as exc:
        out[STEPS[0]] = first_error_line(exc)
    _, vjp = jax.vjp(f, a)
    grads = []
    for _ in range(2):  # two passes of per-element cotangents: each call returns a fresh result
        total = jnp.zeros_like(a)
        for i in range(a.shape[0]):
            for j in range(a.shape[1]):
                total = total + vjp(jnp.zeros_like(a).at[i, j].set(1))[0]
        grads.append(device.to_python(total))
    out[STEPS[1]], out[STEPS[2]] = grads
    out[STEPS[3]] = device.to_python(vjp(a)[0])
    out[STEPS[4]] = device.to_python(vjp(jnp.ones_like(a))[0])
    return out


def chain_rule(a_np: np.ndarray) -> dict:
    """What the chain rule gives for out = a * a: d out_ij / d a_ij = 2 a_ij."""
    a = a_np.astype(np.float64)
    return {STEPS[1]: (2 * a).tolist(), STEPS[2]: (4 * a).tolist(),
            STEPS[3]: (2 * a * a).tolist(), STEPS[4]: (2 * a).tolist()}


def cases(scope: str) -> list[dict]:
    return [{"framework": "torch"}, {"framework": "jax"}]


def run_case(device, framework: str) -> list[dict]:
    steps = (torch_steps if framework == "torch" else jax_steps)(SEED_A, device)
    expected = chain_rule(SEED_A)
    return [{"framework": framework, "device": device.name, "step": step, "result": steps[step],
             "chain_rule": expected.get(step, "an error: the output is not a scalar"),
             "a": SEED_A.tolist(), "dtype": str(SEED_A.dtype)} for step in STEPS]


# --- summary and rendering: pure functions of loaded runs -----------------------------------

@dataclass
class RunSteps:
    run: Run  # identity only
    results: dict[tuple[str, str], object]  # (framework, step) -> a.grad, or an error line


@dataclass
class Summary:
    a: list | None
    steps: list[str]  # in the order the runs recorded them
    chain_rule: dict[str, object]  # step -> what the chain rule gives
    runs: list[RunSteps]


def summarise(runs) -> Summary:
    recs = [r for run in runs for r in run.ok_records()]
    return Summary(
        a=next((r["a"] for r in recs), None),
        steps=list(dict.fromkeys(r["step"] for r in recs)),
        chain_rule={r["step"]: r["chain_rule"] for r in recs if "chain_rule" in r},
        runs=[RunSteps(identity(run), {(r["framework"], r["step"]): r["result"]
                                       for r in run.ok_records()}) for run in runs])


def _first_passes(run: RunSteps, framework: str):
    """What backward() on the non-scalar output gave, and a.grad after one and two passes."""
    got = [run.results.get((framework, step)) for step in ("backward() with no argument",
                                                           "looped scalar backward, one pass",
                                                           "looped scalar backward, second pass"
                                                           " without zeroing")]
    return None if None in got else got


@dataclass(frozen=True)
class NonScalarFact:
    """Whether backward() / jax.grad raise on the non-scalar output, and by how much a second
    looped pass multiplies the first's result in each framework."""
    torch_raises: bool
    jax_raises: bool
    torch_growth: float
    jax_growth: float


def _fact(run: RunSteps) -> NonScalarFact | None:
    torch_steps, jax_steps = _first_passes(run, "torch"), _first_passes(run, "jax")
    if not (torch_steps and jax_steps):
        return None
    growth = [np.divide(steps[2], steps[1]).mean().round(6).item()
              for steps in (torch_steps, jax_steps)]
    return NonScalarFact(isinstance(torch_steps[0], str), isinstance(jax_steps[0], str), *growth)


def _fact_text(fact: NonScalarFact) -> str:
    verb = {True: "raises", False: "does not raise"}
    return (f"backward() on seed 002's non-scalar output {verb[fact.torch_raises]} in torch and "
            f"jax.grad {verb[fact.jax_raises]}; a second looped backward pass multiplies a.grad "
            f"by {format_cell(fact.torch_growth)} in torch (it accumulates), while jax.vjp's "
            f"result is multiplied by {format_cell(fact.jax_growth)}")


@dataclass
class StepRow:
    step: str = column("step", key=True)
    torch: list | str | None = column("torch a.grad")
    jax: list | str | None = column("JAX")
    chain_rule: list | None = column("chain rule")


def render(summary: Summary) -> Rendered:
    steps = summary.steps
    runs = [r.run for r in summary.runs]
    fact = stated_for_runs([(r.run, _fact(r)) for r in summary.runs], runs, _fact_text,
                           _fact_text)
    table = run_table(
        "side_by_side", "Seed 002: backward on a non-scalar output, torch beside JAX",
        f"a = {summary.a} and out = a * a, as in seed 002. torch accumulates into a.grad (the "
        f"second looped pass adds to the first); JAX's counterpart of backward(g) is jax.vjp "
        f"with cotangent g, which returns a fresh result every call (the second pass is summed "
        f"afresh). The last column is the chain rule evaluated in numpy.",
        StepRow, summary.runs,
        lambda r: [StepRow(step, r.results.get(("torch", step)), r.results.get(("jax", step)),
                           summary.chain_rule.get(step)) for step in steps])
    return Rendered([table], [Finding(fact + ".", "side_by_side")] if fact else [])


EXPERIMENT = Experiment(
    name="nonscalar_backward", description=DESCRIPTION, question=QUESTION, seed=None,
    tables=("side_by_side",), cases=cases, run_case=run_case, summarise=summarise,
    render=render, comparison=Comparison(record_key=("framework", "step"),
                                                      error_fields=("result",)))

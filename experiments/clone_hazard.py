"""Why seed 000's MyReLU clones grad_output: the same rule editing grad_output in place.

    python -m study run clone_hazard

Each case builds a graph in which autograd may hand the rule a gradient buffer that something
else also reads (fan-out, skip connections, expanded gradients of sum/mean), and compares the
in-place rule and the cloning seed rule with the built-in.
"""
import warnings
from dataclasses import dataclass

import jax
import jax.numpy as jnp
import numpy as np
import torch

from study.conventions import reverse_derivative
from study.errors import first_error_line
from study.experiment import Answer, Comparison, Experiment, Finding, Rendered
from study.results import Run
from study.rules import MyReLU, by_key
from study.runsets import grouped_clauses, identity, run_table, stated_for_runs
from study.tables import column

DESCRIPTION = "seed 000: what breaks when a custom backward edits grad_output in place"
QUESTION = ("Why does the textbook MyReLU clone grad_output, and what goes wrong, silently or "
            "loudly, when its backward edits grad_output in place instead?")
DTYPE = "float64"
X = np.array([-1.5, -0.5, 0.5, 2.0, -2.0, 1.0])  # no exact zero: the conventions agree here
W = np.array([0.5, -1.0, 2.0, 1.5, 3.0, -0.5])


class InPlaceReLU(MyReLU):
    """Seed 000's rule without the clone: the same forward, but zeroes grad_output itself."""

    @staticmethod
    def backward(ctx, grad_output):
        input, = ctx.saved_tensors
        grad_output[input < 0] = 0
        return grad_output


@jax.custom_vjp
def jax_inplace_style_relu(x):
    return jnp.maximum(x, 0)


jax_inplace_style_relu.defvjp(
    lambda x: (jnp.maximum(x, 0), x),
    lambda x, g: (g.at[x < 0].set(0),))  # the closest JAX spelling: arrays are immutable


def _graphs():
    """Case name -> loss(act, x, as_array), where as_array turns numpy constants into the
    framework's arrays, so one definition serves torch and JAX."""
    w = W
    two_layer_w1 = np.linspace(-1.0, 1.0, 6 * 4).reshape(6, 4)
    two_layer_w2 = np.linspace(1.0, -2.0, 4 * 2).reshape(4, 2)
    return {
        "fan-out: act(x) + act(-x)": lambda act, x, c: ((act(x) + act(-x)) * c(w)).sum(),
        "skip connection: act(x) + x": lambda act, x, c: ((act(x) + x) * c(w)).sum(),
        "loss = act(x).sum()": lambda act, x, c: act(x).sum(),
        "loss = act(x).mean()": lambda act, x, c: act(x).mean(),
        "seed 001 two-layer net": lambda act, x, c: (
            (act(x.reshape(1, 6) @ c(two_layer_w1)) @ c(two_layer_w2) - 1) ** 2).sum(),
        "output used twice: act(x) * w + act(x) ** 2": lambda act, x, c: (
            lambda y: (y * c(w) + y ** 2).sum())(act(x)),
        "activation applied twice: act(act(x) - 0.25)": lambda act, x, c: (
            act(act(x) - 0.25) * c(w)).sum(),
    }


CASES = tuple(_graphs())


def _torch_case(case: str, device):
    """(loss_of, numpy-to-torch converter, fresh leaf x) for one case, on the device."""
    def as_tensor(a):
        return device.to_torch(np.asarray(a), dtype=torch.float64)
    return _graphs()[case], as_tensor, device.to_torch(X, requires_grad=True, dtype=torch.float64)


def torch_grad(act, case: str, device):
    """(gradient or None, warning text, error text) of the case's loss w.r.t. x."""
    loss_of, c, x = _torch_case(case, device)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            loss_of(act, x, c).backward()
            grad, error = device.to_numpy(x.grad).copy(), None
        except Exception as exc:  # noqa: BLE001  the error is the measurement
            grad, error = None, first_error_line(exc)
    firsts = dict.fromkeys(str(w.message).split(". ")[0] + "." for w in caught)
    warning = " ".join(firsts) or None
    return grad, warning, error


def caught_by_gradcheck(act, case: str, device) -> bool | str:
    """Whether gradcheck flags the rule; if gradcheck itself raises, its error line, which
    the table shows as an error, never as a verdict."""
    loss_of, c, x = _torch_case(case, device)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the warning column already records them
        try:
            return not torch.autograd.gradcheck(lambda v: loss_of(act, v, c), (x,),
                                                raise_exception=False)
        except Exception as exc:  # noqa: BLE001  recorded as the error it is
            return first_error_line(exc)


def caught_by_detect_anomaly(act, case: str, device) -> bool:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # detect_anomaly announces itself with a UserWarning
        with torch.autograd.detect_anomaly(check_nan=True):
            _, _, error = torch_grad(act, case, device)
    return error is not None


def jax_grad(case: str, device) -> np.ndarray:
    loss_of = _graphs()[case]
    return device.to_numpy(jax.grad(lambda x: loss_of(jax_inplace_style_relu, x, device.to_jax))(
        device.to_jax(X)))


def cases(scope: str) -> list[dict]:
    return [{"case": c} for c in CASES] + [{"case": "at exactly 0"}]


def run_case(device, case: str) -> list[dict]:
    if case == "at exactly 0":
        seed = by_key("torch_myrelu_seed")
        return [{"case": case, "dtype": "float32",
                 "seed_rule_at_0": reverse_derivative(seed, 0.0, "float32", device),
                 "seed_rule_at_minus_0": reverse_derivative(seed, -0.0, "float32", device),
                 "builtin_at_0": reverse_derivative(by_key("torch_relu"), 0.0, "float32", device),
                 "device": device.name}]
    correct, _, _ = torch_grad(torch.relu, case, device)
    cloning, _, clone_error = torch_grad(MyReLU.apply, case, device)
    inplace, warning, error = torch_grad(InPlaceReLU.apply, case, device)
    jax_g = jax_grad(case, device)
    wrong = inplace is not None and not np.array_equal(inplace, correct)
    return [{"case": case, "device": device.name, "dtype": DTYPE, "correct": correct,
             "cloning_rule": cloning,
             "cloning_matches": cloning is not None and np.array_equal(cloning, correct),
             "inplace_rule": inplace, "silently_wrong": wrong, "warning": warning, "error": error,
             "gradcheck_catches": caught_by_gradcheck(InPlaceReLU.apply, case, device),
             "detect_anomaly_catches": caught_by_detect_anomaly(InPlaceReLU.apply, case, device),
             "jax_rule": jax_g, "jax_matches": bool(np.allclose(jax_g, correct, rtol=1e-12,
                                                                atol=1e-12))}]


# --- summary and rendering: pure functions of loaded runs -----------------------------------

@dataclass
class Hazard:
    case: str
    correct: list
    cloning_matches: bool
    inplace: list | None
    wrong: bool  # the in-place rule's gradient differs from the correct one
    warning: str | None
    error: str | None
    gradcheck: bool | str  # flags the in-place rule, or gradcheck's own error
    detect_anomaly: bool
    jax_matches: bool

    @property
    def silent(self) -> bool:
        """Wrong with neither a warning nor an error."""
        return self.wrong and not self.warning and not self.error


@dataclass
class AtZero:
    seed_rule: float
    seed_rule_at_minus_0: float
    builtin: float


@dataclass
class RunHazards:
    run: Run  # identity only
    hazards: list[Hazard]
    at_zero: AtZero | None


@dataclass
class Summary:
    dtypes: list[str]
    runs: list[RunHazards]


@dataclass
class HazardRow:
    case: str = column("case", key=True)
    correct: list = column("correct gradient")
    cloning_matches: bool = column("cloning rule correct")
    inplace: list | None = column("in-place rule gradient")
    silent: bool = column("silently wrong")
    warning: str | None = column("warning")
    error: str | None = column("error")
    gradcheck: bool | str = column("gradcheck catches")
    detect_anomaly: bool = column("detect_anomaly catches")
    jax_matches: bool = column("JAX rule correct")


def _hazard(r: dict) -> Hazard:
    return Hazard(r["case"], r["correct"], r["cloning_matches"], r["inplace_rule"],
                  r["silently_wrong"],  # the record's name: wrong, warned or not
                  r["warning"], r["error"], r["gradcheck_catches"],
                  r["detect_anomaly_catches"], r["jax_matches"])


def summarise(runs) -> Summary:
    out = []
    for run in runs:
        recs = run.ok_records()
        zero = next((r for r in recs if "seed_rule_at_0" in r), None)
        out.append(RunHazards(identity(run), [_hazard(r) for r in recs if "correct" in r],
                              AtZero(zero["seed_rule_at_0"], zero["seed_rule_at_minus_0"],
                                     zero["builtin_at_0"]) if zero else None))
    return Summary(sorted({r["dtype"] for run in runs for r in run.ok_records() if "correct" in r}),
                   out)


def _paragraph(run: RunHazards) -> str | None:
    recs = run.hazards
    if not recs:
        return None
    wrong = [r.case for r in recs if r.wrong]
    errors = [r.case for r in recs if r.error]
    fine = [r.case for r in recs if not r.wrong and not r.error]
    clone_ok = all(r.cloning_matches for r in recs)
    text = (f"Seed 000 asks why MyReLU clones grad_output. In these {len(recs)} graphs the rule "
            f"that zeroes grad_output in place was wrong in {len(wrong)} "
            f"({'; '.join(wrong) or 'none'}), raised an error in {len(errors)} "
            f"({'; '.join(errors) or 'none'}) and was right in {len(fine)} "
            f"({'; '.join(fine) or 'none'}); the cloning seed rule matched the built-in "
            f"{'in every case' if clone_ok else 'not in every case'}. grad_output is not the rule's "
            f"to edit: autograd may pass the same buffer to other consumers or hand over an "
            f"expanded view, so the clone makes a private copy before zeroing. The second question, "
            f"grad_input[input < 0] = 0, sets the gradient to 0 where the input was negative, "
            f"because ReLU is flat there.")
    zero = run.at_zero
    if zero:
        text += (f" At exactly 0 the mask input < 0 is false, so the seed rule passes the gradient "
                 f"through: its measured d/dx is {zero.seed_rule:g} at +0 and "
                 f"{zero.seed_rule_at_minus_0:g} at −0, where this torch's relu gives "
                 f"{zero.builtin:g}.")
    return text


@dataclass(frozen=True)
class HazardFact:
    """What editing grad_output in place did over the run's graphs."""
    wrong: int
    total: int
    silent: tuple[str, ...]  # cases wrong with neither a warning nor an error
    warned: tuple[str, ...]  # cases wrong with only a warning
    gradcheck: int  # wrong cases gradcheck flags
    anomaly: int  # wrong cases detect_anomaly catches


def _fact(run: RunHazards) -> HazardFact | None:
    if not run.hazards:
        return None
    wrong = [h for h in run.hazards if h.wrong]
    return HazardFact(len(wrong), len(run.hazards), tuple(h.case for h in wrong if h.silent),
                      tuple(h.case for h in wrong if h.warning and not h.error),
                      sum(h.gradcheck is True for h in wrong),
                      sum(h.detect_anomaly for h in wrong))


def _fact_text(fact: HazardFact) -> str:
    return (f"Editing grad_output in place (seed 000's MyReLU without its clone) gave wrong "
            f"gradients in {fact.wrong} of {fact.total} graphs: silently in {len(fact.silent)} "
            f"({'; '.join(fact.silent) or 'none'}), with only a deprecation warning in "
            f"{len(fact.warned)} ({'; '.join(fact.warned) or 'none'}); gradcheck flagged "
            f"{fact.gradcheck} of the {fact.wrong} and detect_anomaly {fact.anomaly}")


def _short_fact(fact: HazardFact) -> str:
    return (f"{fact.wrong} of {fact.total} ({len(fact.silent)} silently), {fact.gradcheck} "
            f"flagged by gradcheck, {fact.anomaly} by detect_anomaly")


def _answer(summary: Summary, fact_text: str | None) -> Answer | None:
    """Why the clone (the mechanism), what breaks without it (the fact), and what the seed's
    mask does at exactly 0."""
    if not fact_text:
        return None
    zero = next((r.at_zero for r in summary.runs if r.at_zero), None)
    text = ("Because grad_output is not the rule's to edit: autograd may hand the backward a "
            "buffer that other consumers of the output still read, or an expanded view of one, "
            f"so the clone makes a private copy before zeroing. {fact_text}.")
    if zero:
        text += (f" The seed's mask input < 0 is false at exactly 0, so its rule passes the "
                 f"gradient through there (d/dx {zero.seed_rule:g} at +0 and "
                 f"{zero.seed_rule_at_minus_0:g} at −0, against torch.relu's {zero.builtin:g}).")
    return Answer("clone", text, ("hazard",))


def render(summary: Summary) -> Rendered:
    runs = [r.run for r in summary.runs]
    paragraphs = {id(r.run): _paragraph(r) for r in summary.runs}
    paragraph = grouped_clauses(runs, lambda run: paragraphs[id(run)])
    table = run_table(
        "hazard", "The clone in seed 000's MyReLU: in-place gradient editing, case by case",
        f"{', '.join(summary.dtypes)} on the run's device, x without exact zeros so every "
        f"convention agrees. 'correct' is torch.relu's gradient; the in-place rule is seed 000's "
        f"rule minus the clone. gradcheck: torch.autograd.gradcheck flags the in-place rule (or "
        f"the error gradcheck itself raised); detect_anomaly: backward under "
        f"torch.autograd.detect_anomaly raises. JAX: the same rule written with "
        f"g.at[x < 0].set(0) in a custom_vjp, compared with torch's correct gradient. 'silently "
        f"wrong': a wrong gradient with neither a warning nor an error.",
        HazardRow, summary.runs, lambda r: [HazardRow(
            h.case, h.correct, h.cloning_matches, h.inplace, h.silent, h.warning, h.error,
            h.gradcheck, h.detect_anomaly, h.jax_matches) for h in r.hazards],
        notes=[paragraph] if paragraph else [])
    fact = stated_for_runs([(r.run, _fact(r)) for r in summary.runs], runs, _fact_text,
                           _short_fact)
    answer = _answer(summary, stated_for_runs([(r.run, _fact(r)) for r in summary.runs], runs,
                                              _fact_text, _short_fact))
    return Rendered([table], [Finding(fact + ".", "hazard")] if fact else [],
                    answers=[answer] if answer else [])


EXPERIMENT = Experiment(
    name="clone_hazard", description=DESCRIPTION, question=QUESTION, seed=None,
    tables=("hazard",), cases=cases, run_case=run_case, summarise=summarise, render=render,
    comparison=Comparison(record_key=("case", "dtype"),
                          error_fields=("error", "gradcheck_catches")))

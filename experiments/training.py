"""Does ReLU'(0) change training? SGD on seed 001's net and on digits, both frameworks, 4 dtypes.

    python -m study run training

Seed 003's loop (model, loss, SGD, zero_grad / backward / step) with the custom rules
c in {0, 0.5, 1} and each framework's relu; every run starts from the same numpy parameters
and sees the same batches.
"""
from dataclasses import dataclass

import numpy as np

from study.conventions import DTYPES
from study.experiment import Answer, Comparison, Experiment, Finding, Rendered
from study.nets import seed_two_layer_data
from study.results import Run
from study.rules import by_key
from study.runsets import identity, run_table, stated_for_runs
from study.tables import column, format_cell
from study.training import (accuracy, cast, digits_data, first_divergence, init_mlp,
                            train_jax, train_torch)

DESCRIPTION = "SGD with ReLU'(0) = 0, 0.5, 1 in both frameworks and four precisions"
QUESTION = ("Does the value of ReLU'(0) change a real training run, in which precisions, and "
            "how far apart do the two frameworks drift?")
SEED = 0
RULES_BY_C = {"torch": {0.0: "torch_custom_c0", 0.5: "torch_custom_c0.5", 1.0: "torch_custom_c1",
                        "relu": "torch_relu"},
              "jax": {0.0: "jax_custom_c0", 0.5: "jax_custom_c0.5", 1.0: "jax_custom_c1",
                      "relu": "jax_relu"}}
# 345 SGD steps: held-out accuracy about 0.97 in float32 (46 steps reached 0.61, too few to
# show anything); the split is a seeded permutation (the file's tail is other writers' digits)
DIGITS = {"hidden": 32, "batch": 64, "epochs": 15, "lr": 0.2, "train": 1500}
SEED_NET = {"steps": 20, "lr": 1e-4}


def setup(dataset: str, dtype: str, scope: str):
    """(initial parameters, batches, loss, lr, bias, held-out (x, y) or None, settings)."""
    quick = scope == "quick"
    if dataset == "seed":
        d = seed_two_layer_data()
        steps = SEED_NET["steps"] // (4 if quick else 1)
        batches = [(d["x"].astype(np.float64), np.zeros(4, np.int64))] * steps
        return (cast([d["w1"], d["w2"]], dtype), batches, "mse_ones", SEED_NET["lr"], False, None,
                {"steps": steps, "lr": SEED_NET["lr"], "loss": "sum((out - 1)^2)"})
    x, y = digits_data()
    rng = np.random.default_rng(SEED)
    split = rng.permutation(len(x))
    train, held_out = split[:DIGITS["train"]], split[DIGITS["train"]:]
    params = cast(init_mlp(rng, [x.shape[1], DIGITS["hidden"], 10]), dtype)
    b = DIGITS["batch"]
    epochs = 1 if quick else DIGITS["epochs"]
    batches = []
    for _ in range(epochs):
        order = train[rng.permutation(len(train))]
        batches += [(x[order[i:i + b]], y[order[i:i + b]]) for i in range(0, len(train) - b + 1, b)]
    return (params, batches, "xent", DIGITS["lr"], True, (x[held_out], y[held_out]),
            {**DIGITS, "epochs": epochs, "loss": "cross-entropy", "held_out": len(held_out),
             "split": f"numpy default_rng({SEED}).permutation of the {len(x)} images"})


def cases(scope: str) -> list[dict]:
    return [{"dataset": ds, "dtype": dt, "scope": scope} for ds in ("seed", "digits")
            for dt in DTYPES]


def run_case(device, dataset: str, dtype: str, scope: str) -> list[dict]:
    params0, batches, loss, lr, bias, held_out, settings = setup(dataset, dtype, scope)
    trainers = {"torch": train_torch, "jax": train_jax}
    runs = {(fw, c): trainers[fw](by_key(key).fn, params0, batches, loss, lr, dtype, bias, device)
            for fw, rules in RULES_BY_C.items() for c, key in rules.items()}
    preacts_per_step = len(batches[0][0]) * params0[0].shape[1]  # batch x hidden units
    records = []
    for (fw, c), run in runs.items():
        other = runs[("jax" if fw == "torch" else "torch", c)]
        base = runs[(fw, 0.0)]["snapshots"]
        rule = by_key(RULES_BY_C[fw][c])
        records.append({
            "dataset": dataset, "dtype": dtype, "framework": fw, "rule": rule.key,
            "name": rule.name, "c": None if c == "relu" else c, "device": device.name,
            "settings": settings, "steps": len(batches), "losses": run["losses"],
            "zero_preacts": run["zeros"], "preacts_per_step": preacts_per_step,
            "differs_from_c0": [not np.array_equal(a, b, equal_nan=True)
                                for a, b in zip(run["snapshots"], base)],
            "first_step_differs_from_c0": first_divergence(run["snapshots"], base),
            "first_step_differs_from_other_framework": first_divergence(run["snapshots"],
                                                                        other["snapshots"]),
            "max_param_diff_other_framework": float(np.max(np.abs(
                run["snapshots"][-1] - other["snapshots"][-1]))),
            "accuracy": None if held_out is None else accuracy(fw, rule.fn, run["params"],
                                                               *held_out, dtype, bias, device)})
    return records


# --- summary and rendering: pure functions of loaded runs -----------------------------------

@dataclass
class TrainingRun:
    dataset: str
    dtype: str
    framework: str
    name: str
    c: float | None  # None for the framework's relu
    final_loss: float
    accuracy: float | None
    zero_hits: int
    zero_fraction: float
    first_step_differs_from_c0: int | None
    first_step_differs_from_other_framework: int | None
    max_param_diff_other_framework: float


@dataclass
class RunTraining:
    run: Run  # identity only
    trainings: list[TrainingRun]


@dataclass
class Summary:
    settings: list[str]  # how each dataset was trained, as the records state it
    runs: list[RunTraining]


def _training(r: dict) -> TrainingRun:
    zeros = sum(r["zero_preacts"])
    return TrainingRun(r["dataset"], r["dtype"], r["framework"], r["name"], r["c"],
                       r["losses"][-1], r["accuracy"], zeros,
                       zeros / (r["preacts_per_step"] * r["steps"]),
                       r["first_step_differs_from_c0"],
                       r["first_step_differs_from_other_framework"],
                       r["max_param_diff_other_framework"])


def _settings_text(r: dict) -> str:
    s = r["settings"]
    if r["dataset"] == "seed":
        return (f"seed 001's net ({s['loss']}, full batch, {s['steps']} steps, lr "
                f"{format_cell(s['lr'])})")
    over = (f"{s['train']} images of a seeded split" if "split" in s
            else f"the first {s['train']} images")
    return (f"a {s['hidden']}-unit MLP on digits ({s['loss']}, batch {s['batch']}, "
            f"{s['epochs']} epoch{'s' if s['epochs'] > 1 else ''} over {over}, lr "
            f"{format_cell(s['lr'])}, accuracy on the other {s['held_out']})")


def summarise(runs) -> Summary:
    recs = [r for run in runs for r in run.ok_records()]
    return Summary(list(dict.fromkeys(_settings_text(r) for r in recs)),
                   [RunTraining(identity(run), [_training(r) for r in run.ok_records()])
                    for run in runs])


@dataclass
class TrainingRow:
    data: str = column("data", key=True)
    dtype: str = column("dtype", key=True)
    framework: str = column("framework", key=True)
    rule: str = column("rule", key=True)
    first_step_differs: int | None = column("first step ≠ c=0 run")
    final_loss: float = column("final loss")
    accuracy: float | None = column("accuracy")
    zero_hits: int = column("zero hits")
    zero_fraction: float = column("zero-hit fraction")
    first_step_differs_other: int | None = column("first step ≠ other framework")
    max_param_diff_other: float | None = column("max abs Δparam vs other framework")


def _row(t: TrainingRun) -> TrainingRow:
    return TrainingRow(t.dataset, t.dtype, t.framework, t.name, t.first_step_differs_from_c0,
                       t.final_loss, t.accuracy, t.zero_hits, t.zero_fraction,
                       t.first_step_differs_from_other_framework,
                       t.max_param_diff_other_framework)


@dataclass(frozen=True)
class Divergence:
    """Per dtype, the step at which torch's c = 1 run leaves its c = 0 run (None: never) on
    digits, whether any hidden pre-activation there was exactly 0, and the step on seed 001."""
    digits: tuple[tuple[str, int | None, bool], ...]  # (dtype, step, a zero was hit)
    seed: tuple[tuple[str, int | None], ...]  # (dtype, step)


def _fact(run: RunTraining) -> Divergence | None:
    torch_c1 = [t for t in run.trainings if t.framework == "torch" and t.c == 1.0]
    digits = tuple((t.dtype, t.first_step_differs_from_c0, t.zero_hits > 0)
                   for t in torch_c1 if t.dataset == "digits")
    seed = tuple((t.dtype, t.first_step_differs_from_c0) for t in torch_c1 if t.dataset == "seed")
    return Divergence(digits, seed) if digits else None


def _steps_text(pairs) -> str:
    """'at step 0 in every dtype' or 'at step 7 in float16, at step 0 in bfloat16'."""
    steps = {step for _, step in pairs}
    if len(steps) == 1 and len(pairs) > 1:
        step = steps.pop()
        return "in no dtype" if step is None else f"at step {step} in every dtype"
    parts = [f"at step {step} in {dtype}" for dtype, step in pairs if step is not None]
    never = [dtype for dtype, step in pairs if step is None]
    return ", ".join(parts) + (f", and never in {' or '.join(never)}" if never else "")


def _fact_text(fact: Divergence) -> str:
    digits, seed = fact.digits, fact.seed
    zero_free = [dtype for dtype, _, zeros in digits if not zeros]
    text = (f"Training on digits in torch, ReLU'(0) = 1 leaves the ReLU'(0) = 0 run "
            f"{_steps_text([(d, s) for d, s, _ in digits])}"
            + (f" (no hidden pre-activation was exactly 0 in {' or '.join(zero_free)})"
               if zero_free else ""))
    return text + (f"; on seed 001's net, whose data tie at 0, {_steps_text(seed)}" if seed else "")


def _fact_short(fact: Divergence) -> str:
    return _steps_text([(d, s) for d, s, _ in fact.digits])


def _answer(summary: Summary, fact: str | None) -> Answer | None:
    """The digits fact, what the seed net shows from step 0, and how much the digits run can
    show at all (the spread of its held-out accuracy)."""
    if not fact or not summary.runs:
        return None
    run = summary.runs[0]
    digits = [t for t in run.trainings if t.dataset == "digits" and t.accuracy is not None]
    text = fact
    if digits:
        accuracy = [t.accuracy for t in digits]
        held_out = next((s for s in summary.settings if "accuracy on the other" in s), "")
        spread = max(max(a) - min(a) for a in _accuracy_by_dtype(digits).values())
        text += (f"; held-out digits accuracy is {format_cell(min(accuracy), 3)}–"
                 f"{format_cell(max(accuracy), 3)} over every rule, dtype and framework "
                 f"({run.run.tag or run.run.label}), and ReLU'(0) moves it by at most "
                 f"{format_cell(spread, 2)} within a dtype" + (
                     f" ({held_out.rsplit('the other ', 1)[1].rstrip(')')} images held out)"
                     if held_out else ""))
    text += "."
    return Answer("net", text, ("runs",))


def _accuracy_by_dtype(trainings: list[TrainingRun]) -> dict[str, list[float]]:
    out: dict[str, list[float]] = {}
    for t in trainings:
        out.setdefault(t.dtype, []).append(t.accuracy)
    return out


def render(summary: Summary) -> Rendered:
    runs = [r.run for r in summary.runs]
    table = run_table(
        "runs", "SGD runs: when ReLU'(0) makes runs diverge, per precision",
        f"Runs: {'; '.join(summary.settings)}. Steps count from 0; '—' means never. Zero hits are "
        f"exact zeros among the hidden pre-activations over all steps. Cross-framework columns "
        f"compare with the other framework's run of the same c (relu with relu).",
        TrainingRow, summary.runs, lambda r: [_row(t) for t in r.trainings])
    fact = stated_for_runs([(r.run, _fact(r)) for r in summary.runs], runs, _fact_text,
                           _fact_short)
    answer = _answer(summary, fact)
    return Rendered([table], [Finding(fact + ".", "runs")] if fact else [],
                    answers=[answer] if answer else [])


EXPERIMENT = Experiment(
    name="training", description=DESCRIPTION, question=QUESTION, seed=SEED, tables=("runs",),
    cases=cases, run_case=run_case, summarise=summarise, render=render,
    comparison=Comparison(record_key=("dataset", "dtype", "rule")), appendix=("runs",))

"""Seed 001's two-layer net under every ReLU rule of both frameworks.

    python -m study run two_layer

loss = sum((act(x @ w1) @ w2 - 1)^2) in float32, with seed 001's exact x, w1, w2, plus two
seeded random variants: one with no exact-zero pre-activation, one with many forced.
"""
from dataclasses import dataclass

import numpy as np

from study.conventions import reverse_derivative
from study.experiment import Answer, Comparison, Experiment, Finding, Rendered
from study.nets import seed_two_layer_data, two_layer_gradients
from study.results import Run
from study.rules import REFERENCE_RELU, by_key, relu_rules
from study.runsets import identity, merged, run_table, stated_for_runs, tags
from study.tables import Table, collapse_rows, column, format_cell, shorten

DESCRIPTION = "seed 001's net: gradients of every ReLU rule, the -38 difference, torch vs JAX"
QUESTION = ("Does seed 001's two-layer net get the same gradients under every ReLU rule of both "
            "frameworks, and where do the rules differ (the seed's −38)?")
SEED = 0
DATASETS = ("seed", "random_no_ties", "random_ties")
RANDOM_SHAPES = {"x": (32, 16), "w1": (16, 24), "w2": (24, 4)}
TABLES = ("gradients", "diff_vs_relu", "cross_framework", "ties")


def make_dataset(name: str) -> dict[str, np.ndarray]:
    if name == "seed":
        return seed_two_layer_data()
    rng = np.random.default_rng(SEED)
    if name == "random_no_ties":  # continuous draws: an exact-zero pre-activation has measure 0
        return {k: rng.standard_normal(s).astype(np.float32) for k, s in RANDOM_SHAPES.items()}
    # small integers: x @ w1 is exact in float32 and hits 0 often
    return {k: rng.integers(-2, 3, s).astype(np.float32) for k, s in RANDOM_SHAPES.items()}


def cases(scope: str) -> list[dict]:
    return [{"dataset": d, "rule": r.key} for d in DATASETS for r in relu_rules()]


def run_case(device, dataset: str, rule: str) -> list[dict]:
    r = by_key(rule)
    data = make_dataset(dataset)
    out = two_layer_gradients(r, data, device)
    return [{
        "dataset": dataset, "framework": r.framework, "rule": r.key, "name": r.name,
        "kind": r.kind, "convention": r.convention, "reference_rule": REFERENCE_RELU[r.framework],
        "measured_at_0": reverse_derivative(r, 0.0, "float32", device), "device": device.name,
        "dtype": str(data["x"].dtype), "shapes": {k: list(v.shape) for k, v in data.items()},
        "data_seed": None if dataset == "seed" else SEED, "preactivation_zeros": out["zeros"],
        "zero_positions": out["zero_positions"],
        "loss": float(out["loss"]), "grad_w1": out["grad_w1"], "grad_w2": out["grad_w2"],
    }]


# --- summary and rendering: pure functions of loaded runs -----------------------------------

@dataclass
class RuleGradients:
    dataset: str
    rule: str
    name: str
    framework: str
    kind: str
    convention: float | None
    measured_at_0: float
    reference: str  # the rule key of the framework's relu, which the differences subtract from
    loss: float
    grad_w1: list
    grad_w2: list
    zeros: int  # exact zeros in x @ w1, counted by the rule's framework
    zero_positions: list | None  # where they are, in runs that recorded it
    x_shape: list


@dataclass
class RunGradients:
    run: Run  # identity only
    rules: list[RuleGradients]

    def on(self, dataset: str) -> list[RuleGradients]:
        return [r for r in self.rules if r.dataset == dataset]

    def rule(self, dataset: str, key: str) -> RuleGradients | None:
        return next((r for r in self.rules if (r.dataset, r.rule) == (dataset, key)), None)


@dataclass
class Summary:
    dtypes: list[str]
    datasets: list[str]
    runs: list[RunGradients]


def _rule_gradients(r: dict) -> RuleGradients:
    return RuleGradients(r["dataset"], r["rule"], r["name"], r["framework"], r["kind"],
                         r["convention"], r["measured_at_0"], r["reference_rule"], r["loss"],
                         r["grad_w1"], r["grad_w2"], r["preactivation_zeros"],
                         r.get("zero_positions"), r["shapes"]["x"])


def summarise(runs) -> Summary:
    recs = [r for run in runs for r in run.ok_records()]
    return Summary(sorted({r["dtype"] for r in recs}), list(dict.fromkeys(r["dataset"] for r in recs)),
                   [RunGradients(identity(run), [_rule_gradients(r) for r in run.ok_records()])
                    for run in runs])


def _flat(r: RuleGradients) -> np.ndarray:
    return np.concatenate([np.ravel(np.asarray(r.grad_w1, np.float64)),
                           np.ravel(np.asarray(r.grad_w2, np.float64))])


def _max_abs_diff(a: RuleGradients, b: RuleGradients) -> float:
    return float(np.max(np.abs(_flat(a) - _flat(b))))


def _gap_matrix(recs: list[RuleGradients]) -> np.ndarray:
    """[i, j]: the largest |Δ| over grad w1 and grad w2 between rules i and j."""
    grads = np.stack([_flat(r) for r in recs])
    return np.max(np.abs(grads[:, None, :] - grads[None, :, :]), axis=2)


@dataclass
class GradientRow:
    rule: str = column("rule", key=True)
    framework: str = column("framework", key=True)
    kind: str = column("kind")
    convention: str = column("c")
    at_0: float = column("d/dx at 0")
    loss: float = column("loss")
    grad_w1: list = column("grad w1")
    grad_w2: list = column("grad w2")


def _gradient_rows(run: RunGradients) -> list[GradientRow]:
    return [GradientRow(r.name, r.framework, r.kind, r.convention, r.measured_at_0, r.loss,
                        r.grad_w1, r.grad_w2) for r in run.on("seed")]


@dataclass
class DiffRow:
    framework: str = column("framework", key=True)
    at_0: float = column("d/dx at 0", key=True)
    d_w1: list | None = column("Δ grad w1", key=True)
    d_w2: list | None = column("Δ grad w2", key=True)
    rules: str = column("rule")


def _diff_rows(run: RunGradients) -> list[DiffRow]:
    rows = []
    for r in run.on("seed"):
        ref = run.rule("seed", r.reference)
        rows.append(DiffRow(r.framework, r.measured_at_0,
                            np.subtract(ref.grad_w1, r.grad_w1).tolist() if ref else None,
                            np.subtract(ref.grad_w2, r.grad_w2).tolist() if ref else None, r.name))
    return rows


@dataclass
class DiffByResult(DiffRow):
    rules: str = column("rules (how many)")


def _diff_rows_by_result(run: RunGradients) -> list[DiffByResult]:
    """One row per framework, value at 0 and difference, listing the rules that give it."""
    return [DiffByResult(r.framework, r.at_0, r.d_w1, r.d_w2,
                         f"{r.rules.count(', ') + 1}: {shorten(r.rules, 140)}")
            for r in collapse_rows(_diff_rows(run), ("rules",))]


@dataclass
class CrossRow:
    torch_rule: str = column("torch rule", key=True)
    at_0: float = column("d/dx at 0")
    partners: str = column("JAX rules with that value")
    gaps: dict = column()  # "max abs Δ (dataset)"


def _cross_rows(run: RunGradients, datasets: list[str], every_name: bool = False
                ) -> list[CrossRow]:
    """Each torch rule, the JAX rules with its measured convention (the first three by name in
    the markdown view, all of them in the CSV), and the largest gap on each dataset."""
    rows = []
    seed = run.on("seed")
    for t in (r for r in seed if r.framework == "torch"):
        partners = [j.name for j in seed if j.framework == "jax" and j.measured_at_0 == t.measured_at_0]
        shown = partners if every_name or len(partners) <= 3 else (
            partners[:3] + [f"and {len(partners) - 3} more"])
        row = CrossRow(t.name, t.measured_at_0, "; ".join(shown) or "none", {})
        partners = [j for j in seed if j.name in partners]
        for d in datasets:
            pairs = [(run.rule(d, t.rule), run.rule(d, j.rule)) for j in partners]
            gaps = [_max_abs_diff(a, b) for a, b in pairs if a and b]
            row.gaps[f"max abs Δ ({d})"] = max(gaps) if gaps else None
        rows.append(row)
    return rows


def _largest_gap(recs: list[RuleGradients], gaps: np.ndarray, same_framework: bool) -> float:
    return max((float(gaps[i, j]) for i, a in enumerate(recs) for j, b in enumerate(recs)
                if a.measured_at_0 == b.measured_at_0
                and (a.framework == b.framework) == same_framework), default=0.0)


@dataclass(frozen=True)
class Gaps:
    """The largest |Δ grad| on one dataset of one run, by what the two rules share."""
    dataset: str
    x_shape: str
    zeros: int
    conventions: int
    vs_reference: float | None  # against torch.relu
    same_framework: float  # same convention, same framework
    across: float  # same convention, torch against JAX
    scale: float  # the largest |grad|

    @property
    def across_ulps(self) -> float:
        """`across` in units in the last place of float32 at the largest gradient."""
        return self.across / float(np.spacing(np.float32(self.scale)))


def gaps_of(run: RunGradients, datasets: list[str]) -> list[Gaps]:
    out = []
    for d in datasets:
        recs = run.on(d)
        if not recs:
            continue
        torch_rules = [r for r in recs if r.framework == "torch"]
        ref = run.rule(d, torch_rules[0].reference) if torch_rules else None
        scale = max(float(np.max(np.abs(g))) for r in recs for g in (r.grad_w1, r.grad_w2))
        gaps = _gap_matrix(recs)
        out.append(Gaps(d, "×".join(map(str, recs[0].x_shape)), recs[0].zeros,
                        len({r.measured_at_0 for r in recs}),
                        float(gaps[recs.index(ref)].max()) if ref else None,
                        _largest_gap(recs, gaps, True), _largest_gap(recs, gaps, False), scale))
    return out


@dataclass
class TiesRow:
    dataset: str = column("dataset", key=True)
    x_shape: str = column("x shape")
    zeros: int = column("exact zeros in x @ w1")
    conventions: int = column("conventions")
    vs_reference: float | None = column("max abs Δ vs torch.relu")
    same_framework: float = column("same convention, same framework")
    across: float = column("same convention, torch vs jax")
    across_ulps: float = column("torch vs jax, ulps")
    scale: float = column("max abs grad")


def _ties_rows(run: RunGradients, datasets: list[str]) -> list[TiesRow]:
    return [TiesRow(g.dataset, g.x_shape, g.zeros, g.conventions, g.vs_reference,
                    g.same_framework, g.across, g.across_ulps, g.scale)
            for g in gaps_of(run, datasets)]


def _zero_text(summary: Summary) -> str:
    seed = [r for run in summary.runs for r in run.on("seed")]
    counts = sorted({r.zeros for r in seed})
    where = sorted({tuple(map(tuple, r.zero_positions)) for r in seed if r.zero_positions})
    at = "; ".join(", ".join(f"(x @ w1){list(p)}" for p in w) for w in where)
    return (f"Exact-zero pre-activations in seed 001's x @ w1: "
            f"{' or '.join(map(str, counts)) or 'none recorded'}" + (f", at {at}" if at else ""))


@dataclass(frozen=True)
class SeedFact:
    """Seed 001's question: clamp's and relu's measured d/dx at 0, and relu − clamp."""
    clamp_at_0: float
    relu_at_0: float
    difference: str  # '-38 at grad w1[0, 2]' or '0 everywhere'


def _seed_fact(run: RunGradients) -> SeedFact | None:
    relu, clamp = run.rule("seed", "torch_relu"), run.rule("seed", "torch_clamp_min0")
    if not (relu and clamp):
        return None
    d = np.subtract(relu.grad_w1, clamp.grad_w1)
    where = np.argwhere(d != 0)
    diff = (f"{format_cell(float(d[tuple(where[0])]))} at grad w1{[int(i) for i in where[0]]}"
            if len(where) else "0 everywhere")
    return SeedFact(clamp.measured_at_0, relu.measured_at_0, diff)


def _seed_fact_text(fact: SeedFact) -> str:
    return (f"Seed 001's relu − clamp(min=0) is {fact.difference}: clamp's gradient at 0 is "
            f"{format_cell(fact.clamp_at_0)} against relu's {format_cell(fact.relu_at_0)}")


def _seed_fact_short(fact: SeedFact) -> str:
    return f"{fact.difference}, clamp's gradient at 0 being {format_cell(fact.clamp_at_0)}"


def _tables(summary: Summary) -> list[Table]:
    return [
        run_table(
            "gradients", "Seed 001 net: loss and gradients under each ReLU rule",
            f"{', '.join(summary.dtypes)}, seed 001's x, w1, w2 and a target of ones. 'c' is "
            f"the convention a custom rule declares; 'd/dx at 0' is measured by reverse mode "
            f"on a 0-d 0.0 on the run's device.",
            GradientRow, summary.runs, _gradient_rows),
        run_table(
            "diff_vs_relu", "Seed 001's table: the framework's relu minus each rule",
            f"grad(relu) − grad(rule), as seed 001 printed w1_a.grad − w1_b.grad with a = "
            f"relu, b = clamp; relu is torch.relu for torch rules and jax.nn.relu for JAX "
            f"rules (— where that case failed). Rules that give the same row are listed "
            f"together; the CSV has one row per rule. {_zero_text(summary)}.",
            DiffByResult, summary.runs, _diff_rows_by_result,
            detail=merged(summary.runs, _diff_rows, DiffRow)[:2]),
        run_table(
            "cross_framework", "Torch rules beside the JAX rules with the same convention",
            "For each torch rule, the JAX rules whose measured d/dx at 0 is equal, and the "
            "largest |Δ| over grad w1 and grad w2 between them; 0 means bitwise equal.",
            CrossRow, summary.runs, lambda r: _cross_rows(r, summary.datasets),
            detail=merged(summary.runs, lambda r: _cross_rows(r, summary.datasets, True),
                          CrossRow)[:2]),
        run_table(
            "ties", "Where the differences come from: ties at 0, and matmul rounding across "
                      "frameworks",
            "Over every ReLU rule of both frameworks: exact-zero pre-activations in the data, "
            "the number of distinct measured conventions, the largest |Δ grad| against "
            "torch.relu, the largest |Δ grad| between rules that share a convention (within one "
            "framework, then across the two, also in float32 units in the last place (ulp) of "
            "the largest |grad|), and that largest |grad|. Within a framework, rules that "
            "share a convention agree bit for bit; across frameworks, tie-free data can still "
            "differ by the last bits, since the two frameworks' matmuls need not round alike.",
            TiesRow, summary.runs, lambda r: _ties_rows(r, summary.datasets)),
    ]


def _twins_answer(summary: Summary) -> Answer | None:
    """Q1 from the gaps: within a framework, across frameworks with ties, without them."""
    runs = [r.run for r in summary.runs]
    per_run = [(r.run, gaps_of(r, summary.datasets)) for r in summary.runs]
    if not any(g for _, g in per_run):
        return None
    within = max(g.same_framework for _, gs in per_run for g in gs)
    tied = max((g.across for _, gs in per_run for g in gs if g.zeros), default=None)
    rounding: dict[tuple, list] = {}
    for run, gs in per_run:
        for g in (g for g in gs if not g.zeros and g.across):
            rounding.setdefault((g.across, g.scale, g.across_ulps), []).append(run)
    text = (f"Within each framework, yes, bit for bit: every custom rule gives exactly the "
            f"gradients of the built-ins that share its value at 0, on seed 001's net and on "
            f"two random nets (largest difference {format_cell(within, 3)}, runs "
            f"{tags(runs, runs)}).")
    if tied is not None:
        text += (f" Across frameworks, rules with the same convention agree bit for bit where "
                 f"pre-activations tie at 0 (largest difference {format_cell(tied, 3)})")
        text += ("; on tie-free random data they differ by up to " + " and ".join(
            f"{format_cell(gap, 3)}, {format_cell(ulps, 2)} ulp of the largest gradient "
            f"{format_cell(scale, 4)} ({tags(who, runs)})" for (gap, scale, ulps), who
            in sorted(rounding.items(), reverse=True))
                 + ": the two frameworks' matmuls round differently, the rule plays no part."
                 if rounding else ".")
    return Answer("twins", text, ("ties", "cross_framework"))


def _net_answer(summary: Summary) -> Answer | None:
    fact = stated_for_runs([(r.run, _seed_fact(r)) for r in summary.runs],
                           [r.run for r in summary.runs], _seed_fact_text, _seed_fact_short)
    return Answer("net", f"{fact}.", ("diff_vs_relu",)) if fact else None


def render(summary: Summary) -> Rendered:
    runs = [r.run for r in summary.runs]
    fact = stated_for_runs([(r.run, _seed_fact(r)) for r in summary.runs], runs,
                           _seed_fact_text, _seed_fact_short)
    answers = [a for a in (_twins_answer(summary), _net_answer(summary)) if a]
    return Rendered(_tables(summary), [Finding(fact + ".", "diff_vs_relu")] if fact else [],
                    answers=answers)


EXPERIMENT = Experiment(
    name="two_layer", description=DESCRIPTION, question=QUESTION, seed=SEED, tables=TABLES,
    cases=cases, run_case=run_case, summarise=summarise, render=render,
    comparison=Comparison(record_key=("dataset", "rule", "dtype"), not_compared=("name",)),
    appendix=("gradients", "cross_framework"))

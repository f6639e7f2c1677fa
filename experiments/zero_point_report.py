"""The zero-point atlas's rendering: pure functions of its summary (zero_point_atlas).

render(summary) builds the atlas, modes, placement, extended-dtype, porting,
custom-convention, gradcheck, release and arithmetic tables, the compiled tables
(zero_point_compiled), the findings and the heatmap from that data alone.
"""
from dataclasses import dataclass

import numpy as np

from experiments import zero_point_rows as rows
from experiments.zero_point_atlas import (RunAtlas, Summary, forward_disagrees, label_order,
                                          shown)
from experiments.zero_point_compiled import (PairRow, compiled_fact, compiled_forward_fact,
                                             compiled_forward_short, compiled_forward_text,
                                             compiled_short, compiled_tables, compiled_text,
                                             natural_pair_rows, pairs_fact, pairs_short,
                                             pairs_text)
from experiments.zero_point_conventions import release_finding, release_table
from study.experiment import Finding, Rendered
from study.placement import cell_values, depends_on_placement
from study.runsets import merged, newest, run_table, stated_for_runs
from study.tables import Table


@dataclass(frozen=True)
class KinkCheck:
    """The numeric checks at x = 0: the distinct finite differences, the conventions whose
    check passed, and the step ε."""
    differences: tuple[float, ...]
    passing: tuple[float, ...]
    eps: float


def kink_check(a: RunAtlas) -> KinkCheck | None:
    at_kink = [c for c in a.checks if c.point == 0.0]
    if not at_kink:
        return None
    return KinkCheck(tuple(sorted({round(c.finite_difference, 9) for c in at_kink})),
                     tuple(sorted({c.convention for c in at_kink if c.passed is True})),
                     at_kink[0].fd_eps)


def _placement_fact(a: RunAtlas) -> tuple[tuple[str, tuple[str, ...]], ...] | None:
    """(op, inputs) of every op whose value depends on where the element sits."""
    ops: dict[str, list[str]] = {}
    for op, _, label, _ in rows.placement_cells(a):
        ops.setdefault(op.name, [])
        if label not in ops[op.name]:
            ops[op.name].append(label)
    return tuple((op, tuple(inputs)) for op, inputs in ops.items()) or None


def _placement_text(fact: tuple[tuple[str, tuple[str, ...]], ...]) -> str:
    shown_ = ", ".join(f"{op} (at {', '.join(inputs)})" for op, inputs in fact[:4])
    return (f"Where an element sits changes the value of {len(fact)} ops: {shown_}"
            + (f", … (all {len(fact)} in the table)" if len(fact) > 4 else ""))


def _placement_short(fact: tuple[tuple[str, tuple[str, ...]], ...]) -> str:
    names = [op for op, _ in fact]
    return f"{len(fact)} ops, {', '.join(names[:3])}{', …' if len(names) > 3 else ''}"


def _kink_text(fact: KinkCheck) -> str:
    fds, passing, eps = fact.differences, fact.passing, fact.eps
    return (f"A central finite difference at the kink (ε = {eps:g}) gives "
            f"{', '.join(f'{v:g}' for v in fds)} for every custom rule, so gradcheck and "
            f"check_grads pass only c in {{{', '.join(f'{c:g}' for c in passing)}}}: a numeric "
            f"check cannot validate a convention")


def _kink_short(fact: KinkCheck) -> str:
    fds, passing = fact.differences, fact.passing
    return f"{', '.join(f'{v:g}' for v in fds)}, passing c in {{{', '.join(f'{c:g}' for c in passing)}}}"


def findings(summary: Summary) -> list[Finding]:
    runs = [a.run for a in summary.runs]
    out = []
    for table, fact_of, full, short in (
            ("natural_pairs", pairs_fact, pairs_text, pairs_short),
            ("placement", _placement_fact, _placement_text, _placement_short),
            ("compiled", compiled_fact, compiled_text, compiled_short),
            ("compiled", compiled_forward_fact, compiled_forward_text,
             compiled_forward_short),
            ("gradcheck", kink_check, _kink_text, _kink_short),
            ("subnormals", _arithmetic_fact, _arithmetic_text, _arithmetic_short)):
        text = stated_for_runs([(a.run, fact_of(a)) for a in summary.runs], runs, full, short)
        if text:
            out.append(Finding(text + ".", table))
    release = release_finding(summary)
    wrong = stated_for_runs([(a.run, _forward_fact(a)) for a in summary.runs], runs,
                            _forward_text, _forward_short)
    return (out[:3] + ([release] if release else []) + out[3:]
            + ([Finding(wrong + ".", "custom_conventions")] if wrong else []))


@dataclass(frozen=True)
class ForwardFact:
    """Custom rules whose forward mode disagrees with reverse mode away from every kink, and
    the first such input with both values."""
    names: tuple[str, ...]
    at: str
    tangent: str
    reverse: str


def _forward_fact(a: RunAtlas) -> ForwardFact | None:
    wrong = [(op, where[0]) for op in a.atlas("float32") if (where := forward_disagrees(op))]
    if not wrong:
        return None
    op, at = wrong[0]
    return ForwardFact(tuple(o.name for o, _ in wrong), at, shown(op.cell("forward", at)),
                       shown(op.cell("reverse", at)))


def _forward_text(fact: ForwardFact) -> str:
    names = fact.names
    return (f"Forward mode is silently wrong, with no error or warning, for {len(names)} custom "
            f"rules ({', '.join(names[:2])}{', …' if len(names) > 2 else ''}): tangent "
            f"{fact.tangent} where reverse mode gives {fact.reverse}, e.g. at {fact.at}")


def _forward_short(fact: ForwardFact) -> str:
    return f"{len(fact.names)} rules"


def _where(summary: Summary) -> str:
    fill = next((a.fill_length for a in summary.runs if a.fill_length), None)
    return (f"Placements (study.placement): packed (all inputs in one 1-D tensor), 0-d, "
            f"1-element, fill (a 1-D tensor of {fill} copies, every position), strided (a "
            f"stride-2 view; torch only), 2-D rows (an n × {fill} batch); which of them each run "
            f"measured is recorded per op. A value that differs between placements shows as "
            f"'a or b (placement)' and is listed, with where each occurs, in the placement table.")


def _kink_note(summary: Summary) -> list[str]:
    fact = next((kink_check(a) for a in summary.runs if kink_check(a)), None)
    if not fact:
        return []
    fds, passing, eps = fact.differences, fact.passing, fact.eps
    return [f"At the kink the central difference (f(ε) − f(−ε)) / 2ε with ε = {eps:g} came "
            f"out as {', '.join(f'{v:g}' for v in fds)} for every custom rule whatever its "
            f"convention, so the numeric checks passed only rules with c in "
            f"{{{', '.join(f'{c:g}' for c in passing)}}}: a finite difference measures the "
            f"mean of the two one-sided slopes, while every c in [0, 1] is a valid "
            f"subgradient, so no numeric check can validate (or reject) a convention."]


def _atlas_tables(summary: Summary) -> list[Table]:
    where = _where(summary)
    return [
        run_table("atlas_torch", "Zero-point atlas, torch: reverse-mode gradient at each kink",
                  "float32; d(sum f(x))/dx at each probe input. For kink 0, k ± 1 ulp are the "
                  "smallest subnormals. " + where, rows.AtlasRow, summary.runs,
                  lambda a: rows.atlas_rows(a, "torch")),
        run_table("atlas_jax", "Zero-point atlas, JAX: reverse-mode gradient at each kink",
                  "As the torch atlas, for JAX ops and custom rules.", rows.AtlasRow, summary.runs,
                  lambda a: rows.atlas_rows(a, "jax")),
        run_table(
            "modes", "Every mode at exactly the kink",
            "float32. value: f(k); reverse: backward / jax.grad; forward: torch.func.jvp / "
            "jax.jvp with tangent 1; second: the derivative of the reverse-mode gradient. A mode "
            "that raises shows the first line of its error.",
            rows.ModeRow, summary.runs, rows.mode_rows),
        run_table("placement", "Cells that depend on where the element sits",
                  "Every (op, dtype, mode, input) whose value differs between placements or "
                  "positions, with each value and where it occurred (positions count from 0 "
                  "within the fill tensor or the batch row). " + where,
                  rows.PlacementRow, summary.runs, rows.placement_rows,
                  when_empty="No cell depends on placement in these runs."),
        run_table(
            "extended", "Where other dtypes differ from float32",
            "Every gradient (reverse, forward, second) at every probe input in float16, "
            "bfloat16 and float64, listed where it differs from the same run's float32 value "
            "once both are rounded to the coarser dtype (so a slope of 0.01 stored in float16 "
            "is not a difference); rows that differ only in dtype, mode or input are merged. "
            "NaN equals NaN and −0 equals +0 here.",
            rows.ExtendedRow, summary.runs, rows.extended_rows_merged),
    ]


def _porting_tables(summary: Summary) -> list[Table]:
    return [
        run_table(
            "porting_torch_to_jax", "Porting guide, torch → JAX",
            "For each torch op, the JAX ops whose forward value and reverse gradient equal it at "
            "every probe input as plain values (float32; NaN = NaN, −0 = +0); a cell that "
            "depends on placement matches nothing. The last column names the inputs where the "
            "op's own value depends on placement. Where no built-in matches, a custom rule of "
            "ours that does is named. Only ops probed at the same inputs can match: each op "
            "is probed at its own kinks and its look-alike's. 'both compiled' compares the "
            "torch.compile and jax.jit cells on every input (blank where the op's compiled "
            "value or gradient raises, or the run did not compile).",
            rows.TorchToJax, summary.runs, lambda a: rows.porting_rows(a, "torch", "jax")),
        run_table(
            "porting_jax_to_torch", "Porting guide, JAX → torch",
            "The same comparison from each JAX op to the torch ops.",
            rows.JaxToTorch, summary.runs, lambda a: rows.porting_rows(a, "jax", "torch")),
    ]


def _check_tables(summary: Summary) -> list[Table]:
    return [
        run_table(
            "custom_conventions", "Custom rules: declared convention against measurement",
            "Each custom rule's declared c beside its measured reverse gradient at +0.0 and −0.0 "
            "and forward gradient at +0.0, over every placement, in every dtype.",
            rows.CustomByDtype, summary.runs, rows.custom_rows_by_dtype,
            detail=merged(summary.runs, rows.custom_rows, rows.CustomRow)[:2]),
        run_table("gradcheck", "Numeric gradient checks away from and at the kink",
                  "torch.autograd.gradcheck and jax.test_util.check_grads (reverse) in float64 on "
                  "the run's device, beside the analytic derivative of a 0-d input, the atlas's "
                  "float64 reverse gradient at +0 over every placement, and the central difference.",
                  rows.GradcheckRow, summary.runs, rows.gradcheck_rows,
                  notes=_kink_note(summary)),
        release_table(summary),
        run_table(
            "natural_pairs", "Look-alike torch/JAX pairs: agree, disagree or depend on placement",
            "Pairs a porting user would take as equivalent, as each run's records name them, "
            "compared on every probe input but the two subnormals (float32, reverse gradient). "
            "A pair whose only differences are placement-dependent cells 'depends on "
            "placement', never 'agrees'. 'first disagreement' is the first input where plain "
            "values differ, torch then JAX. The last two columns compare the pair with both "
            "ops compiled (torch.compile and jax.jit; blank where a run did not compile).",
            PairRow, summary.runs, natural_pair_rows),
    ]


def _arithmetic_table(summary: Summary) -> Table:
    return run_table(
               "subnormals", "Does the device flush subnormals? The arithmetic under the atlas",
               "Computed by each framework on the run's device: s > 0 for the dtype's smallest "
               "subnormal s (no: subnormal inputs are read as 0), s × 1, and m × 0.5 for its smallest "
               "normal m, whose exact result is subnormal (0: subnormal results are flushed). An op that "
               "reads ±s as 0 returns at ±min_subnormal its value and gradient at 0.",
               rows.ArithmeticRow, summary.runs, rows.arithmetic_rows)


@dataclass(frozen=True)
class FlushFact:
    """From the subnormal probe: the run's device and, per framework, the dtypes it flushes."""
    device: str
    by_framework: tuple[tuple[str, tuple[str, ...]], ...]


def _arithmetic_fact(a: RunAtlas) -> FlushFact | None:
    if not a.arithmetic:
        return None
    return FlushFact(a.run.provenance["device"], tuple(
        (fw, tuple(dict.fromkeys(x.dtype for x in a.arithmetic if x.framework == fw and x.flushes)))
        for fw in dict.fromkeys(x.framework for x in a.arithmetic)))


def _arithmetic_text(fact: FlushFact) -> str:
    device, by_framework = fact.device, fact.by_framework
    if not any(dtypes for _, dtypes in by_framework):
        return (f"On the {device}, neither {' nor '.join(fw for fw, _ in by_framework)} flushes "
                f"subnormal numbers")
    said = [f"{fw} flushes subnormal numbers to zero in {', '.join(dtypes)}"
            if dtypes else f"{fw} does not flush" for fw, dtypes in by_framework]
    text = f"On the {device}, " + ", while ".join(said)
    if any(dtypes for _, dtypes in by_framework):
        text += (" (XLA's CPU backend, not the device: the probe measures each framework's "
                 "arithmetic), so there an op at ±min_subnormal returns its value and gradient "
                 "at 0")
    return text


def _arithmetic_short(fact: FlushFact) -> str:
    return f"{fact.device}: " + ", ".join(f"{fw} {'/'.join(d) if d else 'no flushing'}"
                                          for fw, d in fact.by_framework)


def heatmap_figure(summary: Summary) -> dict:
    """The float32 reverse-gradient atlas of each device's newest standard run (any run where
    it has none), torch beside JAX: 0, 0.5, 1, other, NaN, ±inf and errors told apart."""
    from study.report.figures import HeatmapPanel, heatmap
    by_run = {id(a.run): a for a in summary.runs}
    chosen = []
    for device in dict.fromkeys(a.run.provenance["device"] for a in summary.runs):
        mine = [a.run for a in summary.runs if a.run.provenance["device"] == device]
        chosen.append(by_run[id(newest(mine, key=lambda r: r.scope == "standard"))])
    panels, flushed = [], []
    for a in chosen:
        name = a.run.tag or a.run.label
        if any(x.flushes for x in a.arithmetic):
            flushed.append(name)
        for fw, title in (("torch", "torch"), ("jax", "JAX")):
            ops = [op for op in a.atlas("float32") if op.framework == fw]
            if not ops:
                continue
            labels = sorted({lab for op in ops for lab in op.inputs}, key=label_order)
            grid = [[op.cell("reverse", lab) if lab in op.inputs else None for lab in labels]
                    for op in ops]
            first = [[None if c is None else cell_values(c)[0] for c in row] for row in grid]
            panels.append(HeatmapPanel(
                f"{title}, {a.run.provenance['device']} ({name}): reverse gradient, float32",
                [op.name for op in ops], labels,
                np.array([[np.nan if isinstance(v, str) or v is None else v for v in row]
                          for row in first]),
                np.array([[isinstance(v, str) for v in row] for row in first]),
                np.array([[c is not None and depends_on_placement(c) for c in row]
                          for row in grid]),
                np.array([[c is None for c in row] for row in grid])))
    if not panels:
        return {}
    title = ("Zero-point atlas: the reverse-mode gradient of every op at every probe input, one "
             "pair of panels per device" + (f"; in {', '.join(flushed)} XLA's CPU backend flushes "
                                            f"subnormals, so JAX cells at ±min_subnormal show the "
                                            f"op at 0" if flushed else ""))
    return {"figures/zero-point-atlas.png": (
        lambda: heatmap(panels, title), "Zero-point atlas heatmap: reverse gradient per op and input, torch beside JAX, "
             "each device; colours tell 0, 0.5, 1, other values, NaN, ±inf and errors apart")}


def render(summary: Summary) -> Rendered:
    return Rendered(_atlas_tables(summary) + compiled_tables(summary) + _porting_tables(summary)
                    + _check_tables(summary)
                    + [_arithmetic_table(summary)], findings(summary), heatmap_figure(summary))

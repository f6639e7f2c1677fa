"""Bifurcation claims sized to their data: which settings are one measurement, and whether
torch and JAX flag the same initialisations more often than chance. Pure functions of the
summary (experiments.bifurcation_summary); render adds their table and findings.
"""
from dataclasses import dataclass

from study.experiment import Finding, Rendered
from study.runsets import holds_for, run_table, tags
from study.tables import Table, column, format_cell

from experiments.bifurcation_summary import P_FIGURES, Agreement, RunCounts, Summary, to_figures


@dataclass(frozen=True)
class BatchOverlap:
    """One batch size of the batch sweep against the headline batch, same weights."""
    order: str
    dtype: str
    framework: str
    batch: int
    inits: int  # initialisations both batch sizes ran
    flagged: int
    shared: int  # flagged at this batch size and at the headline's
    headline_flagged: int
    is_headline: bool

    @property
    def identical(self) -> bool | None:
        """The same set as the headline batch (None for the headline batch itself)."""
        return None if self.is_headline else self.flagged == self.shared == self.headline_flagged


def batch_overlaps(rc: RunCounts) -> list[BatchOverlap]:
    """For each order, dtype and framework: the initialisations each batch size flags, against
    those the headline batch flags (the batch sweep keeps the headline's depth, width and
    weights, so only the batching differs)."""
    h = rc.headline
    if not h:
        return []
    groups: dict[tuple, dict[int, object]] = {}
    for o in rc.outcomes:
        if (o.depth, o.width) == (h["depth"], h["width"]):
            groups.setdefault((o.order, o.dtype, o.framework), {})[o.batch] = o
    out = []
    for (order, dtype, fw), by_batch in groups.items():
        ref = by_batch.get(h["batch"])
        if ref is None or len(by_batch) < 2:
            continue
        for batch, o in sorted(by_batch.items()):
            common = [i for i in o.first if i in ref.first]
            mine = {i for i in common if o.first[i] is not None}
            theirs = {i for i in common if ref.first[i] is not None}
            out.append(BatchOverlap(order, dtype, fw, batch, len(common), len(mine),
                                    len(mine & theirs), len(theirs), batch == h["batch"]))
    return out


@dataclass(frozen=True)
class Independence:
    """Flagged by both frameworks from the same weights, against independent flagging with
    each framework's own count (a sum of hypergeometric counts, one per setting)."""
    dtype: str
    order: str
    settings: int
    both: int
    torch_only: int
    jax_only: int
    expected: float
    p_value: float  # one-sided, normal approximation: more in both than independence gives


def distinct_weights(agreements: list[Agreement]) -> list[Agreement]:
    """One agreement per depth and width (the batch sweep reuses the headline's weights, so
    its other batch sizes are not new initialisations); the most common batch is kept."""
    batches = [a.setting[2] for a in agreements]
    common = max(set(batches), key=batches.count) if batches else None
    chosen: dict[tuple, Agreement] = {}
    for a in sorted(agreements, key=lambda a: a.setting[2] != common):
        chosen.setdefault(a.setting[:2], a)
    return list(chosen.values())


def independence(rc: RunCounts, dtype: str = "float32", order: str = "mlxtend") -> Independence | None:
    from scipy.stats import norm
    agree = distinct_weights([a for a in rc.agreements if a.dtype == dtype and a.order == order])
    if not agree:
        return None
    mean = var = 0.0
    for a in agree:
        k, t, j = a.inits, a.both + a.torch_only, a.both + a.jax_only
        mean += t * j / k
        var += t * j * (k - t) * (k - j) / (k * k * (k - 1)) if k > 1 else 0.0
    both = sum(a.both for a in agree)
    p = float(norm.sf((both - mean) / var ** 0.5)) if var > 0 else (0.0 if both > mean else 1.0)
    return Independence(dtype, order, len(agree), both, sum(a.torch_only for a in agree),
                        sum(a.jax_only for a in agree), mean, to_figures(p, P_FIGURES))


@dataclass
class BatchRow:
    order: str = column("order", key=True)
    dtype: str = column("dtype", key=True)
    framework: str = column("framework", key=True)
    batch: int = column("batch", key=True)
    inits: int = column("K")
    flagged: int = column("flagged")
    shared: int = column("flagged at the headline batch too")
    headline_flagged: int = column("headline batch flagged")
    identical: bool | None = column("same set")


def _batch_rows(rc: RunCounts) -> list[BatchRow]:
    return [BatchRow(b.order, b.dtype, b.framework, b.batch, b.inits, b.flagged, b.shared,
                     b.headline_flagged, b.identical) for b in batch_overlaps(rc)]


def batch_table(summary: Summary) -> Table:
    return run_table(
        "batch_sweep", "The batch sweep: does the batch size change which initialisations are "
                       "flagged?",
        "The batch sweep keeps the headline's depth, width and initial weights, so only the "
        "batching differs. For each batch size: the initialisations both it and the headline "
        "batch ran, those it flags, those flagged at both, and those the headline batch flags. "
        "'same set' means the two batch sizes flag exactly the same initialisations: a "
        "repetition of one measurement, counted once in the cross-framework totals (— for the "
        "headline batch itself).",
        BatchRow, summary.runs, _batch_rows)


def _batch_finding(rc: RunCounts, runs) -> Finding | None:
    overlaps = [b for b in batch_overlaps(rc) if b.dtype == "float32" and b.order == "mlxtend"
                and not b.is_headline]
    if not overlaps:
        return None
    parts = []
    for fw in dict.fromkeys(b.framework for b in overlaps):
        mine = [b for b in overlaps if b.framework == fw]
        same = [b for b in mine if b.identical]
        parts.append(f"in {fw}, {len(same)} of the {len(mine)} other batch sizes flag exactly "
                     f"the initialisations the headline batch flags"
                     + (f" (the others share {', '.join(f'{b.shared} of {b.flagged}' for b in mine if not b.identical)})"
                        if len(same) < len(mine) else ""))
    return Finding("Over the float32 batch sweep (same weights, only the batching differs), "
                   + "; ".join(parts) + ": batch sizes that flag the same set are one "
                   f"measurement, not several ({holds_for([rc.run], runs)}).", "batch_sweep")


def _kernel_finding(rc: RunCounts, runs) -> Finding | None:
    ind = independence(rc)
    if ind is None:
        return None
    shared = ("more than independence predicts: proneness is partly the initialisation's"
              if ind.p_value < 0.05 else "no more than independence predicts")
    return Finding(
        f"Over the {ind.settings} float32 settings with distinct initial weights, "
        f"{ind.both} initialisations bifurcate in both frameworks, {shared} "
        f"({format_cell(ind.expected, 3)} expected, one-sided p = {format_cell(ind.p_value, 2)}); "
        f"{ind.torch_only} do in torch only and {ind.jax_only} in JAX only: the rest is each "
        f"framework's kernels on this device (torch's one fused addmm against JAX's x @ W + b "
        f"is one difference) ({holds_for([rc.run], runs)}).", "protocol")


@dataclass
class ProbeRow:
    dtype: str = column("dtype", key=True)
    a: str = column("computed as", key=True)
    b: str = column("against", key=True)
    images: int = column("images")
    elements_equal: float = column("elements equal")
    rows_equal: int = column("rows equal")


def _probe_rows(rc: RunCounts) -> list[ProbeRow]:
    return [ProbeRow(p.dtype, p.a, p.b, p.images, p.elements_equal, p.rows_equal)
            for p in rc.probes]


def kernel_table(summary: Summary) -> Table:
    return run_table(
        "kernels", "The kernels underneath: one layer's pre-activations, bit for bit",
        "Initialisation 0 at the headline, the first layer's pre-activations of the first "
        "images of the class-sorted order, computed by torch's fused F.linear (one addmm) in "
        "one batch and in batches of 16, by torch's unfused x @ W.T + b, and by JAX's jitted "
        "x @ W + b in one batch and in batches of 16; for each pair, the fraction of elements "
        "and the number of rows that are bitwise equal. Which initialisation meets an exact "
        "zero follows these bits: a kernel whose rows depend on the batch size flags other "
        "initialisations at other batch sizes.",
        ProbeRow, summary.runs, _probe_rows)


def _kernel_probe_finding(summary: Summary, runs) -> Finding | None:
    with_probes = [rc for rc in summary.runs if rc.probes]
    if not with_probes:
        return None
    rc = with_probes[0]
    f32 = {(p.a, p.b): p for p in rc.probes if p.dtype == "float32"}
    if not f32:
        return None

    def share(p):
        return f"{format_cell(100 * p.elements_equal, 3)}%"
    batch = [p for (a, b), p in f32.items() if "batches of" in b]
    fused = f32.get(("torch fused", "jax"))
    unfused = f32.get(("torch unfused", "jax"))
    text = ("In float32 the first layer's pre-activations agree bit for bit between one batch "
            "and batches of 16 in " + " and ".join(f"{share(p)} of elements in {p.a}"
                                                    for p in batch))
    if fused and unfused:
        text += (f"; torch's fused addmm agrees with JAX's x @ W + b in {share(fused)} and its "
                 f"unfused x @ W.T + b in {share(unfused)}, so fusing is "
                 + ("not what separates the two frameworks' kernels" if
                    unfused.elements_equal < 0.9 else "most of what separates them"))
    return Finding(text + f" ({holds_for([rc.run], runs)}).", "kernels")


def render(summary: Summary) -> Rendered:
    """bifurcation_report's tables, findings and figures, with the batch-sweep table, and the
    cross-framework finding counted over distinct weights."""
    from experiments import bifurcation_report
    rendered = bifurcation_report.render(summary)
    findings = rendered.findings
    if summary.runs:
        rc = max(summary.runs, key=bifurcation_report.total_inits)
        runs = [r.run for r in summary.runs]
        extra = [f for f in (_kernel_finding(rc, runs), _batch_finding(rc, runs),
                             _kernel_probe_finding(summary, runs)) if f]
        findings = findings[:1] + extra + findings[1:]
    shared = shared_machine_note([r.run for r in summary.runs])
    for table in rendered.tables:
        if table.id in ("counts", "protocol"):
            table.notes += shared
    return Rendered(rendered.tables + [batch_table(summary), kernel_table(summary)], findings,
                    rendered.figures, rendered.answers)


def shared_machine_note(runs) -> list[str]:
    """Which runs shared the machine with other experiments (`study run --jobs`): their seconds
    per initialisation are wall-clock times on a shared machine."""
    shared = [r for r in runs if r.provenance.get("side_by_side")]
    if not shared:
        return []
    jobs = sorted({r.provenance["side_by_side"]["jobs"] for r in shared})
    return [f"Seconds per initialisation are wall-clock times; {tags(shared, runs)} ran beside "
            f"other experiments ({' or '.join(map(str, jobs))} at a time, `study run --jobs`), so "
            f"theirs include the sharing of the machine."]

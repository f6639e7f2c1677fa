"""The atlas as a porting engineer cites it: one compact conventions table, the answer to the
study's second question, and the cells a reader would otherwise mis-cite (subnormal flushing,
placements measured, a forward mode that is silently wrong). Pure functions of the summary.
"""
from dataclasses import dataclass

from study.experiment import Answer, Finding
from study.placement import depends_on_placement, describe_where, same_value
from study.runsets import tag_order, tags
from study.tables import Table, collapse_rows, column, listed, typed_table

from experiments.zero_point_atlas import (SPECIAL, ReleaseChange, RunAtlas, Summary, agree,
                                          kink_labels, same_after_rounding, shown)
from experiments.zero_point_compiled import (changed_by_compiling, look_alike_pairs,
                                             natural_pairs, pairs_changed_by_compiling)


def primary(summary: Summary) -> RunAtlas:
    """The run the compact views read: the first in the run legend (the study's main run)."""
    return min(summary.runs, key=lambda a: (tag_order(a.run.tag) if a.run.tag else ("~", 0),
                                            a.run.provenance["utc"]))


def flushing(summary: Summary) -> dict[str, list]:
    """{"jax float32": [runs]}: where the subnormal probe found the framework flushing."""
    out: dict[str, list] = {}
    for a in summary.runs:
        for x in a.arithmetic:
            if x.flushes:
                runs = out.setdefault(f"{x.framework} {x.dtype}", [])
                if a.run not in runs:
                    runs.append(a.run)
    return out


def flush_note(summary: Summary) -> list[str]:
    found = flushing(summary)
    if not found:
        return []
    runs = [a.run for a in summary.runs]
    by_runs: dict[str, list[str]] = {}
    for what, who in found.items():
        by_runs.setdefault(tags(who, runs), []).append(what)
    return [f"Subnormals: the probe (the subnormal-arithmetic table) finds "
            f"{'; '.join(f'{chr(44).join(w)} flushed in {who}' for who, w in by_runs.items())}"
            f". There an input of ±min_subnormal is read as 0, so its cells (the ±1 ulp columns "
            f"at kink 0) show the op's value and gradient at 0: a property of XLA's CPU "
            f"backend, not of the op."]


def placements_note(summary: Summary) -> list[str]:
    """Which placements each run measured, per framework: the standard runs measure JAX ops in
    fewer placements than torch ops, so a JAX cell's agreement covers only those."""
    by_run: dict[str, list[str]] = {}
    for a in summary.runs:
        for fw in ("torch", "jax"):
            places = sorted({p for op in a.atlas() if op.framework == fw for p in op.placements})
            compiled = sorted({p for op in a.compiled if op.framework == fw
                               for p in op.placements})
            text = (", ".join(places) or "not recorded") + (
                f" (compiled: {', '.join(compiled)})" if compiled else "")
            by_run.setdefault(text, []).append(f"{a.run.tag or a.run.label} {fw}")
    return ["Placements measured: " + "; ".join(f"{', '.join(who)}: {places}"
                                                 for places, who in by_run.items()) + "."]


def _elsewhere(summary: Summary, side, mode: str, label: str) -> str:
    """Where the primary run's float32 cell of this op changes: another dtype of that run,
    another run (release, device, scope), or the element's placement."""
    base_run = primary(summary)
    base = side.cell(mode, label)
    marks = ["placement"] if depends_on_placement(base) else []
    marks += [op.dtype for op in base_run.atlas() if op.rule == side.rule and op.dtype != "float32"
              and label in op.inputs and mode not in op.withdrawn
              and not same_after_rounding(op.cell(mode, label), base, op.dtype)]
    if changed_by_compiling(base_run, side.rule, "float32", mode, label):
        marks.append("compiled")
    others = [a.run for a in summary.runs if a is not base_run
              for op in a.atlas("float32") if op.rule == side.rule and label in op.inputs
              and mode not in op.withdrawn and agree(op.cell(mode, label), base) is not True]
    if others:
        runs = [a.run for a in summary.runs]
        marks.append(tags(others, runs))
    return ", ".join(marks)


@dataclass
class ConventionRow:
    torch_op: str = column("torch op", key=True)
    jax_op: str = column("JAX op", key=True)
    kink: float = column("kink k", key=True)
    torch_value: str = column("torch value")
    torch_derivative: str = column("torch d/dx")
    jax_value: str = column("JAX value")
    jax_derivative: str = column("JAX d/dx")
    same: bool | None = column("same d/dx")
    changes: str | None = column("changes in")


def conventions_rows(summary: Summary) -> list[ConventionRow]:
    rows = []
    for t, j in look_alike_pairs(primary(summary)):
        for k in t.kinks:
            label = kink_labels(k)[1]
            if label not in j.inputs:
                continue
            cells = [(side, m) for side in (t, j) for m in ("value", "reverse")]
            changes = "; ".join(f"{side.framework} {'d/dx' if m == 'reverse' else m}: {where}"
                                for side, m in cells
                                if (where := _elsewhere(summary, side, m, label)))
            rows.append(ConventionRow(t.name, j.name, k,
                                      *(shown(side.cell(m, label)) for side, m in cells),
                                      agree(t.cell("reverse", label), j.cell("reverse", label)),
                                      changes or None))
    return rows


def conventions_table(summary: Summary) -> Table:
    a = primary(summary)
    return typed_table(
        "conventions", "Conventions at each kink: look-alike torch/JAX pairs, float32",
        f"Run {a.run.tag or a.run.label}: for each torch op and the JAX op a porting user would "
        f"take as the same, the value and the reverse-mode derivative (d/dx) at each kink k, "
        f"exactly. 'same d/dx' compares the two derivatives (NaN = NaN, −0 = +0; blank where "
        f"either depends on placement). The last column says where a cell changes: a dtype "
        f"(that run in float16, bfloat16 or float64, after rounding; see the dtype table), a "
        f"run label (another release, device or scope; see the release and CPU-against-GPU "
        f"tables), 'placement' (the value depends on where the element sits; see the "
        f"placement table), or 'compiled' (torch.compile or jax.jit gives another value at the "
        f"same placements; see the compiled table).",
        ConventionRow, conventions_rows(summary), flush_note(summary))


def _groups_at_zero(a: RunAtlas) -> dict[str, list[str]]:
    """{"0": [builtin names], "0.5": [...], ...}: each built-in's d/dx at +0, float32."""
    out: dict[str, list[str]] = {}
    for op in a.atlas("float32"):
        if op.kind == "builtin" and 0.0 in op.kinks and not depends_on_placement(
                op.cell("reverse", "+0.0")):
            out.setdefault(shown(op.cell("reverse", "+0.0")), []).append(op.name)
    return dict(sorted(out.items()))


def answer(summary: Summary, release_text: str | None) -> Answer | None:
    """The study's second question, in at most four sentences."""
    if not summary.runs or not primary(summary).atlas("float32"):
        return None
    a, runs = primary(summary), [x.run for x in summary.runs]
    groups = _groups_at_zero(a)
    text = (f"There is no one convention: at x = 0 in float32 ({a.run.tag or a.run.label}) the "
            f"built-ins' derivative is " + "; ".join(
                f"{value} for {', '.join(names[:3])}" + (f" and {len(names) - 3} more"
                                                        if len(names) > 3 else "")
                for value, names in groups.items()) + ".")
    pairs = natural_pairs(a)
    at_kink = [p for p in pairs if any(lab not in SPECIAL for lab in p.disagree)]
    special = [p for p in pairs if p.disagree and p not in at_kink]
    text += (f" Of {len(pairs)} look-alike torch/JAX pairs, {len(at_kink)} disagree at a kink or "
             f"±0 ({', '.join(f'{p.torch_op} vs {p.jax_op}' for p in at_kink[:3])}"
             f"{', …' if len(at_kink) > 3 else ''}) and {len(special)} more only at NaN or ±inf.")
    found = flushing(summary)
    if found:
        flushed = {r.tag for who in found.values() for r in who}
        clean = [x.run for x in summary.runs if x.arithmetic and x.run.tag not in flushed]
        release_text = ((release_text or "").rstrip(".") + (
            "; and " if release_text else "") + f"XLA's CPU backend flushes subnormals "
            f"({', '.join(found)}), so there JAX ops at ±min_subnormal return their value and "
            f"gradient at 0" + (f" (nothing flushes in {tags(clean, runs)})" if clean else "") + ".")
    if release_text:
        text += f" {release_text}"
    compiled = compiled_sentence(a)
    if compiled:
        text += f" {compiled}"
    return Answer("zero_point", text, ("conventions", "natural_pairs", "releases", "subnormals")
                  + (("compiled", "compiled_cells") if compiled else ()))


def compiled_sentence(a: RunAtlas) -> str | None:
    """'Compiling changes 30 float32 cells in 12 torch ops and 2 in 1 JAX op (…), and the
    verdict of 3 look-alike pairs.' from the primary run's compiled records."""
    if not a.compiled:
        return None
    changes = [x for x in a.changes if x.dtype == "float32"]
    parts = []
    for fw, label in (("torch", "torch"), ("jax", "JAX")):
        mine = [x for x in changes if x.framework == fw]
        ops = list(dict.fromkeys(x.op for x in mine))
        if any(c.framework == fw for c in a.compiled):
            parts.append(f"{len(mine)} cells in {len(ops)} {label} op{'s' * (len(ops) != 1)}"
                         + (f" ({', '.join(ops[:2])}{', …' if len(ops) > 2 else ''})"
                            if ops else ""))
    pairs = pairs_changed_by_compiling(a)
    return (f"Compiling (torch.compile, jax.jit) changes float32 cells against eager at the same "
            f"placements: {' and '.join(parts)}; {len(pairs)} look-alike pairs change verdict or "
            f"disagree elsewhere when both sides are compiled"
            + (f" ({', '.join(f'{e.torch_op} vs {e.jax_op}' for e, _ in pairs[:2])})"
               if pairs else "") + ".")


def release_pattern(change: ReleaseChange) -> str:
    """'1 in torch 2.11.0+cu130 and 2.13.0+cpu, 0 in 2.14.1+cu130'."""
    by_value: dict[str, list[str]] = {}
    for version, cell in change.by_release:
        by_value.setdefault(shown(cell), []).append(version)
    return ", ".join(f"{value} in {change.framework} {' and '.join(versions)}"
                     for value, versions in by_value.items())


def release_finding(summary: Summary) -> Finding | None:
    changes = summary.release_changes
    if not changes:
        return None
    parts, said = [], set()
    for fw in dict.fromkeys(c.framework for c in changes):
        for compiled in (False, True):
            mine = [c for c in changes if c.framework == fw
                    and c.mode.endswith(", compiled") == compiled]
            if not mine:
                continue
            patterns: dict[str, int] = {}
            for c in mine:
                patterns[release_pattern(c)] = patterns.get(release_pattern(c), 0) + 1
            common = max(patterns, key=patterns.get)
            ops = list(dict.fromkeys(c.op for c in mine))
            pattern = "the same" if common in said else common
            said.add(common)
            parts.append(f"{len(mine)} {fw} cells changed {'compiled' if compiled else 'eagerly'}"
                         f" in {len(ops)} ops ({ops[0]}{', …' if len(ops) > 1 else ''};"
                         f" {patterns[common]} of them: {pattern})")
    return Finding(f"Between the releases measured, {'; '.join(parts)}.", "releases")


@dataclass
class ReleaseRow:
    framework: str = column("framework")
    op: str = column("op")
    device: str = column("device")
    dtype: str = column("dtype")
    mode: str = column("mode")
    input: str = column("input")
    by_release: str = column("by release")


@dataclass
class MergedReleaseRow(ReleaseRow):
    dtype: str = column("dtypes")
    mode: str = column("modes")
    input: str = column("inputs")


def release_table(summary: Summary) -> Table:
    rows = [ReleaseRow(c.framework, c.op, c.device, c.dtype, c.mode, c.input, "; ".join(
        f"{c.framework} {v}: {shown(cell)}" + (f" [{describe_where(cell, 80)}]"
                                              if depends_on_placement(cell) else "")
        for v, cell in c.by_release)) for c in summary.release_changes]
    measured = "; ".join(f"{fw}: {', '.join(v)}" for fw, v in summary.releases.items())
    notes = ([f"Only one release of each framework has been measured ({measured}); run "
              f"`make matrix` to add others."]
             if all(len(v) < 2 for v in summary.releases.values())
             else [] if rows else [f"No cell differs between the releases measured ({measured})."])
    return typed_table("releases", "Conventions that changed between releases",
                 f"Every cell (any dtype, mode, input and placement) that differs between the "
                 f"measured releases of the framework the op belongs to, among runs of one machine "
                 f"(host and CPU), device and scope ({measured}): eager cells, and compiled cells "
                 f"(mode '…, compiled': torch.compile or jax.jit, as the atlas compiles) against "
                 f"the same compiler's in the other release; rows that differ only in dtype, mode "
                 f"or input are merged.",
                 MergedReleaseRow, collapse_rows(rows, ("dtype", "mode", "input"),
                                                 into=MergedReleaseRow),
                 notes, listed(ReleaseRow, rows))


def release_sentence(summary: Summary) -> str | None:
    """'torch.clamp(x, min=0)'s d/dx at 0 is 1 in torch 2.11.0+cu130 and 2.13.0+cpu, 0 in
    2.14.1+cu130.' from the float32 reverse-mode cells at +0 that changed between releases."""
    by_op: dict[str, str] = {}
    for c in summary.release_changes:
        if c.mode == "reverse" and c.input == "+0.0" and c.dtype == "float32":
            values: dict[str, list[str]] = {}
            for version, cell in c.by_release:
                values.setdefault(shown(cell), []).append(version)
            by_op.setdefault(c.op, ", ".join(f"{v} in {c.framework} {' and '.join(vs)}"
                                             for v, vs in values.items()))
    if not by_op:
        return None
    return ("Releases differ: " + "; ".join(f"{op}'s d/dx at 0 is {text}"
                                            for op, text in list(by_op.items())[:2]) + ".")


FLUSH_NOTED = ("atlas_jax", "porting_torch_to_jax", "porting_jax_to_torch", "extended")
PLACEMENT_NOTED = ("atlas_torch", "atlas_jax", "placement", "natural_pairs")


def documented_note(summary: Summary) -> list[str]:
    """The derivatives ops' own docstrings declare at a kink, against the float32 reverse-mode
    measurement there (at 0: at -0.0 and +0.0), in the main run; runs before the docstrings
    were read say nothing."""
    a = primary(summary)
    ops = [op for op in a.atlas("float32") if op.documented is not None]
    if not ops:
        return []
    declared = [op for op in ops if op.documented]
    clauses = []
    for op in declared:
        for k, v in op.documented:
            labels = ["-0.0", "+0.0"] if k == 0 else [f"{k:g}"]
            got = [op.cell("reverse", lab) for lab in labels if lab in op.inputs]
            agree = all(same_value(g, v) for g in got) if got else None
            clauses.append(f"{op.name}: {v:g} at {k:g}, measured "
                           f"{' and '.join(shown(g) for g in got) or 'not probed'}"
                           + ("" if agree is None else " (agrees)" if agree else " (differs)"))
    frameworks = sorted({op.framework for op in ops})
    return [f"Derivatives the ops' own docstrings declare at a kink (read from the installed "
            f"releases, run {a.run.tag or a.run.label}): " + ("; ".join(clauses) if clauses else "none")
            + f"; the other {len(ops) - len(declared)} ops of {' and '.join(frameworks)} "
              f"declare none in their docstrings."]


def render(summary: Summary):
    """zero_point_report's tables and findings, with the compact conventions table first, the
    notes a reader needs beside the cells they qualify, and the answer."""
    from study.experiment import Rendered
    from experiments import zero_point_report
    rendered = zero_point_report.render(summary)
    for table in rendered.tables:
        table.notes += (flush_note(summary) if table.id in FLUSH_NOTED else []) + (
            placements_note(summary) if table.id in PLACEMENT_NOTED else [])
    conventions = conventions_table(summary)
    conventions.notes += documented_note(summary)
    found = answer(summary, release_sentence(summary))
    return Rendered([conventions] + rendered.tables, rendered.findings,
                    rendered.figures, [found] if found else [])

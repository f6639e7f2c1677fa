"""Render REPORT.md, APPENDIX.md and reports/tables/* from loaded runs: a pure function, then
atomic writes.

REPORT.md answers first: the study's six questions, the run legend, the findings, then one
section per experiment with its key tables. APPENDIX.md holds the long listings (every other
table, the CPU-against-GPU cells, failed cases, full provenance); its tables keep their numbers.
Everything comes from the result files. An experiment whose tables or findings raise is shown
as a one-line error in its own section, and the rest of the report still renders.
"""
import os
from dataclasses import dataclass

from study import device_comparison
from study.atomic import write_text_atomically
from study.errors import first_error_line
from study.experiment import QUESTIONS, Answer, Finding, Rendered
from study.report_comparisons import device_finding, device_tables, reproduction_section
from study.report_layout import (APPENDIX, DEVICE_TABLES, DEVICES, GENERATED_FOLDERS,
                                 QUESTION_TEXT, Layout, anchor, number_tables, wrap)
from study.results import Run
from study.runsets import label_runs, run_name, tag_order, tags
from study.tables import (Table, column, format_cell, shorten, to_csv, to_latex, to_markdown,
                          typed_table)

def _machine_text(p: dict) -> str:
    gpu = p.get("gpu")
    if p["device"] != "cpu" and isinstance(gpu, dict):
        return f"{gpu.get('name')} (CUDA {gpu.get('torch_cuda_runtime')})"
    return f"{p.get('cpu', '—')} ({p.get('torch_cpu_capability') or 'capability not recorded'})"


def legend_line(group: list[Run]) -> str:
    """'C1: cpu, AMD EPYC 7B13 (AVX512) on vm, torch 2.13.0+cpu, jax 0.10.2, standard run,
    commit 83d2978'."""
    p = group[0].provenance
    return (f"{group[0].tag}: {p['device']}, {_machine_text(p)} on {p['host']}, torch "
            f"{p['torch']}, jax {p['jax']}, {group[0].scope} run, commit {_commits(group)}")


def by_label(runs: list[Run]) -> dict[str, list[Run]]:
    out: dict[str, list[Run]] = {}
    for run in runs:
        out.setdefault(run.tag, []).append(run)
    return {t: out[t] for t in sorted(out, key=tag_order)}


def _commits(group: list[Run]) -> str:
    commits = {}
    for run in group:
        p = run.provenance
        commits.setdefault(str(p.get("git_commit") or "—")[:7], set()).add(bool(p.get("git_dirty")))
    return ", ".join(c + (" (dirty)" if True in dirty else "") for c, dirty in sorted(commits.items()))


@dataclass
class LegendRow:
    run: str = column("run")
    device: str = column("device")
    model: str = column("CPU or GPU model")
    host: str = column("host")
    torch: str = column("torch")
    jax: str = column("jax")
    scope: str = column("scope")
    experiments: str = column("experiments")
    commit: str = column("commit")


def _legend_section(layout: Layout) -> list[str]:
    groups = by_label(layout.runs)
    rows = [LegendRow(t, g[0].provenance["device"], _machine_text(g[0].provenance),
                      g[0].provenance["host"], g[0].provenance["torch"], g[0].provenance["jax"],
                      g[0].scope, ", ".join(sorted({r.experiment for r in g})), _commits(g))
            for t, g in groups.items()]
    table = typed_table("runs", "Run legend", "", LegendRow, rows)
    return ['<a id="runs"></a>', "## Runs", "",
            wrap("Every run has one label, used in every section, table and standalone table "
                 "file: one per device, machine, pair of releases and scope (C: a CPU run, G: "
                 "a GPU run). The commit is the code the run measured (dirty: with uncommitted "
                 "changes); the appendix lists every result file."), "", to_markdown(table), ""]


def _table_keys(experiments) -> list[tuple[str, str]]:
    return ([(e.name, tid) for e in experiments for tid in e.tables]
            + [(DEVICES, tid) for tid in DEVICE_TABLES])


def _contents(experiments, layout: Layout) -> list[str]:
    """Each section's tables by number, in the report and in the appendix; the table index
    with every table's files is the appendix's."""
    lines = ["## Contents", "", "- [Answers](#answers) · [Runs](#runs) · [Findings](#findings) · "
             "[Reproduction](#reproduction) · [CPU against GPU](#cpu-against-gpu) · "
             "[Methodology](#methodology) · [Appendix](APPENDIX.md): long listings, every result "
             "file and its provenance, and the [table index](APPENDIX.md#tables) with each "
             "table's md, tex and csv files", "",
             "| section | tables in this report | tables in the appendix |", "|---|---|---|"]
    sections = dict.fromkeys(name for name, _ in _table_keys(experiments))
    for section in sections:
        keys = [k for k in _table_keys(experiments) if k[0] == section]
        here = ", ".join(f"[{layout.numbers[k]}]({layout.link(k)})" for k in keys
                         if k not in layout.in_appendix) or "—"
        there = [layout.numbers[k] for k in keys if k in layout.in_appendix]
        target = "cpu-against-gpu-appendix" if section == DEVICES else anchor(section, "appendix")
        lines.append(f"| {section} | {here} | "
                     + (f"[{number_ranges(there)}](APPENDIX.md#{target})" if there else "—") + " |")
    return lines + [""]


def number_ranges(numbers: list[int]) -> str:
    """[30, 31, 32, 34] -> '30–32, 34'."""
    runs: list[list[int]] = []
    for n in sorted(numbers):
        if runs and n == runs[-1][-1] + 1:
            runs[-1].append(n)
        else:
            runs.append([n])
    return ", ".join(f"{r[0]}–{r[-1]}" if len(r) > 1 else f"{r[0]}" for r in runs)


def _table_index(experiments, layout: Layout) -> list[str]:
    lines = ['<a id="tables"></a>', "## Table index", "", "| table | title | in | files |",
             "|---|---|---|---|"]
    for key in _table_keys(experiments):
        a, table = anchor(*key), layout.built.get(key)
        files = (f"[md](tables/{a}.md) · [tex](tables/{a}.tex) · [csv](tables/{a}.csv)"
                 if table else "—")
        where = "appendix" if key in layout.in_appendix else "report"
        link = f"#{a}" if key in layout.in_appendix else f"REPORT.md#{a}"
        lines.append(f"| [{layout.numbers[key]}]({link}) | "
                     f"{table.title if table else 'no results yet'} | {where} | {files} |")
    return lines + [""]


def _answers_section(answers: list[tuple[str, Answer]], layout: Layout) -> list[str]:
    lines = ['<a id="answers"></a>', "## Answers", "",
             wrap("The study's six questions, each answered from the result files; run labels "
                  "are those of the [run legend](#runs), and each answer links the tables behind "
                  "it."), ""]
    for i, question in enumerate(QUESTIONS, 1):
        mine = [(name, a) for name, a in answers if a.question == question]
        lines += [f'<a id="answer-{question.replace("_", "-")}"></a>',
                  f"### {i}. {QUESTION_TEXT[question]}", ""]
        if not mine:
            lines += ["No results yet: run `make report`.", ""]
            continue
        cited = dict.fromkeys((name, t) for name, a in mine for t in a.tables)  # report order
        lines += [wrap(" ".join(a.text for _, a in mine)), "",
                  "Tables: " + ", ".join(layout.cite(key) for key in cited
                                         if key in layout.numbers) + ".", ""]
    return lines



def _findings_section(found: list[tuple[str, Finding]], layout: Layout) -> list[str]:
    lines = ['<a id="findings"></a>', "## Findings", "",
             wrap("Each finding states a fact, then the runs it holds for (by their labels in "
                  "the [run legend](#runs)), and links to the table behind it; it is generated "
                  "from the result files, and left out where its data is missing."), ""]
    if not found:
        return lines + ["No results yet: run `make report`.", ""]
    for i, (name, finding) in enumerate(found, 1):
        lines.append(wrap(f"{i}. {finding.text} ({layout.cite((name, finding.table))})",
                          " " * (len(str(i)) + 2)))
    return lines + [""]


def _provenance_section(runs: list[Run], notes: list[str]) -> list[str]:
    lines = ['<a id="provenance"></a>', "## Provenance", "",
             "Every result file this report draws on, with where and how it was measured.", "",
             "| result file | run | host | device | torch | jax | scope | wall s | commit | dirty |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    for run in runs:
        p = run.provenance
        lines.append(f"| `{run.path}` | {run.tag} | {p['host']} | {p['device']} | {p['torch']} | "
                     f"{p['jax']} | {run.scope} | {format_cell(p.get('wall_s'))} | "
                     f"{str(p.get('git_commit') or '—')[:10]} | {format_cell(p.get('git_dirty'))} |")
    lines += ["", "Machines and settings, per run label:", ""]
    for label, group in by_label(runs).items():
        lines.append(wrap(f"- **{label}**: {_settings_text(group[0].provenance)}", "  "))
    absent = sorted({run.provenance["cuda_absent"] for run in runs
                     if run.provenance.get("cuda_absent")})
    lines.append("")
    lines += [wrap(f"- {reason}: no GPU numbers from this host; its results are labelled cpu.",
                   "  ") for reason in absent]
    lines += [wrap(f"- Duplicate resolved: {note}.", "  ") for note in notes]
    return lines + [""]


def _settings_text(p: dict) -> str:
    gpu = p.get("gpu")
    gpu_text = (f"GPU {gpu.get('name')} (CUDA runtime {gpu.get('torch_cuda_runtime')}, driver "
                f"{gpu.get('driver')}, cuDNN {gpu.get('cudnn')}, JAX "
                f"{gpu.get('jax_platform_version')})" if isinstance(gpu, dict)
                else f"GPU {gpu}" if gpu else "no GPU used")
    plugins = ", ".join(f"{k} {v}" for k, v in (p.get("jax_plugins") or {}).items()) or "none"
    threads = p.get("threads", {})
    env = ", ".join(f"{k}={v}" for k, v in sorted((p.get("env") or {}).items()) if v)
    return (f"{p['host']} / {p['device']}: CPU {p.get('cpu', '—')} "
            f"({p.get('cpu_count', '—')} cores, torch CPU capability "
            f"{p.get('torch_cpu_capability') or 'not recorded'}); {gpu_text}; "
            f"{p.get('os', '—')}; Python {p.get('python', '—')}, numpy {p.get('numpy', '—')}; "
            f"jaxlib {p.get('jaxlib', '—')}, JAX backend {p.get('jax_backend', '—')} "
            f"{p.get('jax_backend_version') or ''}, plugins {plugins}; threads: torch "
            f"{threads.get('torch_intra_op', '—')} intra-op / {threads.get('torch_inter_op', '—')}"
            f" inter-op, XLA_FLAGS '{threads.get('XLA_FLAGS', '')}'"
            + (f"; env {env}" if env else "") + ".")


def _methodology_section(runs) -> list[str]:
    seeds = sorted({f"{r.experiment}: {r.provenance.get('seed')}" for r in runs})
    matmul = sorted({", ".join(f"{k}={v}" for k, v in sorted(r.provenance.get("matmul", {}).items()))
                     for r in runs})
    dtypes = sorted({rec["dtype"] for r in runs for rec in r.records
                     if isinstance(rec.get("dtype"), str)})
    items = [
        "- Inputs are built once in numpy and copied into both frameworks, on the device the run "
        "names; every array is computed there and comes to the host only to be recorded. "
        f"Seeds recorded per experiment: {', '.join(seeds) or 'none'} (None: the inputs are "
        f"fixed by hand, as in the seeds).",
        f"- Matmul settings recorded: {'; '.join(matmul) or 'none'}.",
        f"- Dtypes in these results: {', '.join(dtypes) or 'none'}. Scopes: quick: smaller "
        f"sizes; standard: what `make report` runs; full: the paper-sized runs.",
        "- An exact zero is an element with x == 0 in the framework's own dtype on its own "
        "device (so −0.0 counts); zero counts come from the framework's computation, not numpy.",
        "- A convention is measured, never declared for a built-in: the reverse-mode gradient "
        "with cotangent 1 at the input, at every placement the atlas probes; forward mode uses "
        "tangent 1; the second derivative differentiates the reverse-mode gradient again.",
        "- A case or mode that raises is recorded with the first line of its error and shown in "
        "its table; the run carries on.",
        "- Numbers in prose carry at most 3 significant figures; tables 4, and two values that "
        "differ always print differently (with as many figures as it takes); the CSV files keep "
        "full precision.",
        "- Limits: conventions are those of the builds in the run legend and can change with "
        "release, build, CPU capability and device; subnormal handling is the backend's; the "
        "seed nets are tiny, so the two-layer tables show where ties bite, not how often."]
    return ['<a id="methodology"></a>', "## Methodology", ""] + [wrap(i, "  ") for i in items] + [""]


def _rendered(exp, exp_runs) -> tuple[Rendered | None, str | None]:
    """The experiment's tables, findings and figures, or the first line of why they failed."""
    if not exp_runs:
        return None, None
    try:
        rendered = exp.render(exp.summarise(exp_runs))
        unknown = {t.id for t in rendered.tables} - set(exp.tables)
        if unknown:
            raise ValueError(f"built undeclared tables {sorted(unknown)}")
        return rendered, None
    except Exception as exc:  # noqa: BLE001  one experiment's failure must not sink the report
        return None, first_error_line(exc)


def _standalone(table: Table, n: int, runs: list[Run]) -> str:
    """tables/<anchor>.md: the table as cited alone, its caption and run legend visible."""
    legend = [f"- {legend_line(group)}" for group in by_label(runs).values()]
    return "\n".join(
        [f"# Table {n}: {table.title}", "", wrap(f"*{table.caption}*"), "", to_markdown(table), ""]
        + [f"{wrap(note)}\n" for note in table.notes]
        + ["Runs (labels as in the report's run legend):", ""] + [wrap(ln, "  ") for ln in legend]
        + ["", wrap(f"Source: {', '.join(r.path for r in runs)}")]) + "\n"


def _table_lines(key, table: Table, layout: Layout, runs: list[Run]) -> list[str]:
    a, n = anchor(*key), layout.numbers[key]
    csv_note = (f" The CSV holds every row and column behind this view: "
                f"[tables/{a}.csv](tables/{a}.csv)." if table.detail else "")
    runs_note = f" Runs: {tags(runs, runs)}." if runs and all(r.tag for r in runs) else ""
    layout.built[key] = table
    layout.files[f"tables/{a}.md"] = _standalone(table, n, runs)
    legend = "; ".join(legend_line(g) for g in by_label(runs).values())
    layout.files[f"tables/{a}.tex"] = to_latex(table, n, a, f"Runs: {legend}." if legend else "")
    layout.files[f"tables/{a}.csv"] = to_csv(table)
    return ([f'<a id="{a}"></a>', f"### Table {n}: {table.title}", "",
             wrap(f"*{table.caption}*{csv_note}{runs_note}"), "", to_markdown(table), ""]
            + [f"{wrap(note)}\n" for note in table.notes])


def _failed_lines(exp_runs: list[Run]) -> list[str]:
    """Every case that raised and every record an erratum withdrew, with why."""
    items = []
    for run in exp_runs:
        for rec in run.failed_records():
            case = ", ".join(f"{k}={v}" for k, v in rec.items() if not isinstance(v, (list, dict))
                             and k not in ("case_error", "withdrawn", "device"))
            why = rec.get("case_error") or f"withdrawn: {rec['withdrawn']}"
            items.append(f"- {run.tag or run_name(run, exp_runs)}: {shorten(case, 150)}: {why}")
    return [wrap(i, "  ") for i in items]


def _experiment_sections(exp, exp_runs, rendered, error, layout) -> tuple[list[str], list[str]]:
    """The experiment's section of REPORT.md and of APPENDIX.md."""
    rerun = f"python -m study run {exp.name}"
    main = [f'<a id="{anchor(exp.name, "section")}"></a>', f"## {exp.name}: {exp.description}",
            "", wrap(f"*Question:* {exp.question}"), "",
            f"*Rerun:* `{rerun}`, then `python -m study report`.", ""]
    appendix = [f'<a id="{anchor(exp.name, "appendix")}"></a>', f"## {exp.name}", ""]
    if exp_runs:
        main += [wrap(f"Runs shown: {tags(exp_runs, exp_runs)} (see the [run legend](#runs))."), ""]
    if error:
        main += [f"**error:** the tables of `{exp.name}` could not be rendered from these "
                 f"results: {error}", ""]
    tables = {t.id: t for t in rendered.tables} if rendered else {}
    for tid in exp.tables:
        key = (exp.name, tid)
        into = appendix if key in layout.in_appendix else main
        if tid not in tables:
            why = "see the error in the report" if error else f"run `{rerun}` to fill this table"
            into += [f'<a id="{anchor(*key)}"></a>', f"### Table {layout.numbers[key]}: no "
                     f"results yet", "", f"({why}.)", ""]
            continue
        into += _table_lines(key, tables[tid], layout, exp_runs)
    moved = [layout.cite((exp.name, t)) for t in exp.tables if (exp.name, t) in layout.in_appendix]
    if moved:
        main += [wrap(f"In the appendix: {', '.join(moved)}."), ""]
    failed = _failed_lines(exp_runs)
    if failed:
        main += [wrap(f"{len(failed)} cases failed or were withdrawn; the appendix lists each "
                      f"with why ([{exp.name}]({APPENDIX}#{anchor(exp.name, 'appendix')})).")
                 , ""]
        appendix += [f"Failed or withdrawn cases ({len(failed)}):", ""] + failed + [""]
    for name, (draw, alt) in (rendered.figures if rendered else {}).items():
        if layout.with_figures:
            layout.files[name] = draw()
        main += [f"![{alt}]({name})", ""]
    return main, appendix


def _device_sections(runs, experiments, layout) -> tuple[list[str], list[str], Finding | None]:
    pairs = device_comparison.pairs(runs, experiments)
    main = ['<a id="cpu-against-gpu"></a>', "## CPU against GPU", ""]
    if not pairs:
        return main + ["No cuda run has a cpu run of the same experiment to compare with.",
                       ""], [], None
    summary, detail = device_tables(pairs, runs)
    paired = list({id(r): r for p in pairs for r in (p.cpu, p.cuda)}.values())
    main += _table_lines((DEVICES, "devices"), summary, layout, paired)
    appendix = ['<a id="cpu-against-gpu-appendix"></a>', "## CPU against GPU", ""]
    appendix += _table_lines((DEVICES, "differences"), detail, layout, paired)
    main += [wrap(f"Every differing cell of the same machine and releases: "
                  f"{layout.cite((DEVICES, 'differences'))} in the appendix."), ""]
    return main, appendix, device_finding(pairs, runs)


def render(runs: list[Run], notes: list[str], experiments, references: list[Run] | None = None,
           figures: bool = True) -> dict[str, str | bytes]:
    """{path relative to reports/: text or bytes} for REPORT.md, APPENDIX.md and every export
    (figures=False: every text file, no PNG drawn)."""
    labelled = label_runs(runs + (references or []))
    runs, references = labelled[:len(runs)], labelled[len(runs):]
    in_appendix = {(e.name, t) for e in experiments for t in e.appendix} | {(DEVICES, "differences")}
    layout = Layout(number_tables(experiments), in_appendix, runs, figures)
    body, appendix, found, answers = [], [], [], []
    for exp in experiments:
        exp_runs = [r for r in runs if r.experiment == exp.name]
        rendered, error = _rendered(exp, exp_runs)
        found += [(exp.name, f) for f in (rendered.findings if rendered else [])]
        answers += [(exp.name, a) for a in (rendered.answers if rendered else [])]
        main, extra = _experiment_sections(exp, exp_runs, rendered, error, layout)
        body += main
        appendix += extra
    devices, device_appendix, device_finding = _device_sections(runs, experiments, layout)
    found += [(DEVICES, device_finding)] if device_finding else []
    head = ["# ReLU gradient rules in PyTorch and JAX", "",
            wrap("Generated by `python -m study report` from the result files listed in the "
                 "appendix; do not edit by hand. Every number below comes from those files. "
                 "The answers come first; long listings are in [APPENDIX.md](APPENDIX.md)."), ""]
    layout.files["REPORT.md"] = "\n".join(
        head + _contents(experiments, layout) + _answers_section(answers, layout)
        + _legend_section(layout) + _findings_section(found, layout)
        + reproduction_section(runs, references, experiments, layout.files) + devices + body
        + _methodology_section(runs)).rstrip() + "\n"
    layout.files[APPENDIX] = "\n".join(
        ["# Appendix: long listings", "",
         wrap("Generated with [REPORT.md](REPORT.md) from the same result files: the tables "
              "too long for the report, keeping their numbers, then every failed case and the "
              "provenance of every result file. Run labels are those of the report's "
              "[run legend](REPORT.md#runs)."), ""]
        + _table_index(experiments, layout) + appendix + device_appendix + _provenance_section(runs, notes)).rstrip() + "\n"
    return layout.files


def write_report(files: dict[str, str | bytes], reports_dir: str) -> None:
    """Write every file atomically, then drop table exports that no longer exist."""
    for sub in GENERATED_FOLDERS:
        os.makedirs(os.path.join(reports_dir, sub), exist_ok=True)
    for rel, content in files.items():
        write_text_atomically(os.path.join(reports_dir, rel), content)
    for sub in GENERATED_FOLDERS:
        for name in os.listdir(os.path.join(reports_dir, sub)):
            if f"{sub}/{name}" not in files:
                os.unlink(os.path.join(reports_dir, sub, name))

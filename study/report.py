"""Render REPORT.md, APPENDIX.md and reports/tables/* from loaded runs: a pure function, then
atomic writes.

REPORT.md answers first: the study's six questions, the run legend, the findings, then one
section per experiment with its key tables. APPENDIX.md holds the long listings (every other
table, the CPU-against-GPU cells, failed cases, full provenance); its tables keep their numbers.
Everything comes from the result files. An experiment whose tables or findings raise is shown
as a one-line error in its own section, and the rest of the report still renders.
"""
import os
import textwrap
from dataclasses import dataclass, field

from study import device_comparison, reproduction
from study.atomic import write_text_atomically
from study.cells import pair_texts
from study.errors import first_error_line
from study.experiment import QUESTIONS, Answer, Finding, Rendered
from study.results import Run
from study.runsets import label_runs, run_name, tag_order, tags
from study.tables import Table, collapse_rows, format_cell, shorten, to_csv, to_latex, to_markdown

MAX_DIFFERENCES_SHOWN = 3
WIDTH = 100  # prose is wrapped to this width; table rows are kept short by their compact forms
GENERATED_FOLDERS = ("tables", "figures")  # everything in them is rewritten by each render
APPENDIX = "APPENDIX.md"
DEVICES = "cpu_vs_gpu"  # the CPU-against-GPU tables, numbered after every experiment's
DEVICE_TABLES = ("devices", "differences")
QUESTION_TEXT = {
    "twins": "Does a ReLU rule written as torch.autograd.Function give exactly the same "
             "gradients as the same rule written as jax.custom_vjp, and as each framework's "
             "built-ins?",
    "zero_point": "What does each built-in return at exactly x = 0 and at its other kinks, in "
                  "each framework, dtype, device and release?",
    "clone": "Why does the textbook MyReLU clone grad_output, and what breaks without the clone?",
    "net": "How do these choices change a real two-layer net's gradients and its training, and "
           "at which precisions?",
    "cost": "What does a custom rule cost in time and memory, eager and compiled, on CPU and GPU?",
    "transforms": "Which transformations does each custom rule survive: jit/compile, vmap, "
                  "higher order, forward mode, export?",
}


def anchor(experiment: str, table_id: str) -> str:
    return f"{experiment}-{table_id}".replace("_", "-")


def number_tables(experiments) -> dict[tuple[str, str], int]:
    """Table numbers from the declared order, the CPU-against-GPU tables last: a table missing
    its data keeps its number."""
    order = [(e.name, tid) for e in experiments for tid in e.tables]
    order += [(DEVICES, tid) for tid in DEVICE_TABLES]
    return {key: i for i, key in enumerate(order, 1)}


def wrap(text: str, indent: str = "") -> str:
    """A paragraph or list item wrapped for reading in a terminal (markdown joins the lines)."""
    return textwrap.fill(text, WIDTH, subsequent_indent=indent, break_long_words=False,
                         break_on_hyphens=False)


@dataclass
class Layout:
    """Where each table goes and how it is linked; the files written so far."""
    numbers: dict[tuple[str, str], int]
    in_appendix: set[tuple[str, str]]
    runs: list[Run]  # every run, labelled: the legend
    with_figures: bool = True  # False: the text alone, for a caller that reads no PNG
    files: dict[str, str | bytes] = field(default_factory=dict)
    built: dict[tuple[str, str], Table] = field(default_factory=dict)

    def link(self, key: tuple[str, str]) -> str:
        a = anchor(*key)
        return f"{APPENDIX}#{a}" if key in self.in_appendix else f"#{a}"

    def cite(self, key: tuple[str, str]) -> str:
        return f"[Table {self.numbers[key]}]({self.link(key)})"


# --- the run legend -----------------------------------------------------------------------

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


def _legend_section(layout: Layout) -> list[str]:
    groups = by_label(layout.runs)
    rows = [[t, g[0].provenance["device"], _machine_text(g[0].provenance), g[0].provenance["host"],
             g[0].provenance["torch"], g[0].provenance["jax"], g[0].scope,
             ", ".join(sorted({r.experiment for r in g})), _commits(g)] for t, g in groups.items()]
    table = Table("runs", "Run legend", "", ["run", "device", "CPU or GPU model", "host", "torch",
                                             "jax", "scope", "experiments", "commit"], rows)
    return ['<a id="runs"></a>', "## Runs", "",
            wrap("Every run has one label, used in every section, table and standalone table "
                 "file: one per device, machine, pair of releases and scope (C: a CPU run, G: "
                 "a GPU run). The commit is the code the run measured (dirty: with uncommitted "
                 "changes); the appendix lists every result file."), "", to_markdown(table), ""]


# --- sections ---------------------------------------------------------------------------

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


def _reproduction_rows(comps, everyone) -> tuple[list[list], list[list]]:
    rows, diffs = [], []
    for c in comps:
        shown = "; ".join(f"{shorten(reproduction.name_text(name), 70)}: "
                          + " vs ".join(pair_texts(a, b))
                          for name, a, b in c.different[:MAX_DIFFERENCES_SHOWN])
        yours = run_name(c.run, everyone)
        theirs = run_name(c.reference, everyone) if c.reference else None
        if yours == theirs:  # the same host, device and releases: tell them apart by date
            yours, theirs = (f"{name}, {r.provenance['utc'][:16].replace('T', ' ')} UTC"
                             for name, r in ((yours, c.run), (theirs, c.reference)))
        rows.append([c.run.experiment, yours, theirs, c.equal, len(c.different),
                     len(c.only_here), len(c.only_reference), c.verdict,
                     shorten(shown, 150) or None])
        diffs += [[c.run.experiment, c.kind, c.run.path, c.reference.path,
                   reproduction.name_text(name), a.text(None), b.text(None)] for name, a, b in c.different]
    return rows, diffs


def _reproduction_section(runs, references, experiments, files) -> list[str]:
    lines = ['<a id="reproduction"></a>', "## Reproduction", ""]
    if not references:
        return lines + ["No reference results are present (reports/reference/ is empty), so "
                        "nothing is compared.", ""]
    comps = reproduction.comparisons(runs, references, experiments)
    if not comps:
        return lines + [wrap(f"Every result here is the study's committed reference "
                             f"({len(references)} result files in reports/reference/). Rerun the "
                             f"study on your machine (`make report`) and this section will say, "
                             f"experiment by experiment, whether your numbers reproduce it."), ""]
    reruns = [c for c in comps if c.kind == reproduction.REPRODUCTION]
    devices = len(comps) - len(reruns)
    lines += [wrap(f"**{sum(c.reproduced for c in reruns)} of {len(reruns)} runs reproduce the "
                   f"committed reference** (cells compared exactly, wall-clock seconds left "
                   f"out; timing as ratios measured within each run, equal when their "
                   f"intervals overlap within the experiment's tolerance, never "
                   f"as absolute times across machines)"
                   + (f"; {devices} more runs have no reference of their device and are "
                      f"compared with the other device's as a device comparison, not a "
                      f"reproduction" if devices else "")
                   + ". All differing cells: [tables/reproduction-differences.csv]"
                     "(tables/reproduction-differences.csv)."), ""]
    rows, diffs = _reproduction_rows(comps, runs + references)
    table = Table("reproduction", "Your runs against the committed reference",
                  "One row per rerun result file: cells equal, cells different, cells only in "
                  "your run or only in the reference run it is compared with (same experiment "
                  "and scope; the same device where the reference has one, and then the same "
                  "releases where it has them).",
                  ["experiment", "your run", "reference run", "equal", "different", "only yours",
                   "only reference", "verdict", "first differences (yours vs reference)"], rows)
    lines += [to_markdown(table), ""]
    files["tables/reproduction.md"] = to_markdown(table) + "\n"
    files["tables/reproduction.csv"] = to_csv(table)
    files["tables/reproduction-differences.csv"] = to_csv(Table(
        "reproduction-differences", "", "", ["experiment", "comparison", "your file",
                                            "reference file", "cell", "yours", "reference"],
        diffs))
    return lines


def _device_rows(pairs, everyone) -> tuple[list[list], list[list]]:
    """The summary row of every pair, and every differing cell of the pairs measured on one
    machine with the same releases (elsewhere the counts say enough)."""
    summary, cells = [], []
    for p in pairs:
        groups = device_comparison.groups_of(p)
        summary.append([p.experiment, p.cpu.tag or run_name(p.cpu, everyone),
                        p.cuda.tag or run_name(p.cuda, everyone),
                        "same" if p.same_releases else "different",
                        "same" if p.same_machine else "different", p.equal, len(p.different),
                        p.only_cpu, p.only_cuda,
                        ", ".join(f"{g} {n}" for g, n in groups.items()) or None])
        if not (p.same_releases and p.same_machine):
            continue
        for name, a, b in p.different:
            fields = dict(name)
            what = reproduction.name_text(tuple((k, v) for k, v in name if k != "dtype"))
            cells.append([device_comparison.group_of(name, a, b), p.experiment, what,
                          fields.get("dtype"), *pair_texts(a, b)])
    return summary, cells


GROUP_WORDS = {"subnormal": "at subnormals", "placement": "placement-dependent",
               "last bits": "in the last bits", "error": "in an error message",
               "other": "otherwise"}


def _device_finding(pairs, runs) -> Finding | None:
    """One sentence: what differs on one machine with the same releases, by group, then what
    differs across releases or machines; experiments summed over their pairs."""
    if not pairs:
        return None
    same, other = {}, {}
    for p in pairs:
        into = same if p.same_releases and p.same_machine else other
        total, groups = into.setdefault(p.experiment, [0, {}])
        into[p.experiment][0] = total + p.equal + len(p.different)
        for g, n in device_comparison.groups_of(p).items():
            groups[g] = groups.get(g, 0) + n
    flushed = "; ".join(f"{fw} {'/'.join(dtypes)}"
                        for fw, dtypes in device_comparison.flushing_on_cpu(runs).items())
    parts = []
    for exp, (total, groups) in same.items():
        if groups:
            text = ", ".join(f"{n} {GROUP_WORDS[g]}" + (
                f" (XLA's CPU backend flushes subnormals to zero, the study's probe finds: "
                f"{flushed})" if g == "subnormal" and flushed else "") for g, n in groups.items())
            parts.append(f"{sum(groups.values())} of {total} {exp} cells differ: {text}")
    equal = [exp for exp, (_, groups) in same.items() if not groups]
    if equal:
        parts.append(f"{len(equal)} experiments agree in every cell")
    differ = [f"{exp} {sum(g.values())}" for exp, (_, g) in other.items() if g]
    if differ:
        parts.append(f"across releases or machines, cells differ in {', '.join(differ)}")
    return Finding("CPU against GPU on one machine and release: " + "; ".join(parts) + ".",
                   "devices")


def _device_tables(pairs, runs) -> tuple[Table, Table]:
    summary, cells = _device_rows(pairs, runs)
    table = Table("devices", "CPU against GPU, experiment by experiment",
                  "Each cuda run against a cpu run of the same experiment and scope (of the same "
                  "machine and releases where there is one), cell by cell as a rerun is compared; "
                  "timing is left out (its numbers are compared within a run, never across "
                  "devices). Differing cells are grouped by what they show: subnormal (at "
                  "±min_subnormal, or a subnormal value), placement (one device's value depends "
                  "on where the element sits), last bits (within 4 units in the last place of "
                  "the dtype), error, other. 'only cpu' and 'only cuda' count cells one side lacks: "
                  "not measured there, or withdrawn by an erratum.",
                  ["experiment", "cpu run", "cuda run", "releases", "machine", "equal",
                   "different", "only cpu", "only cuda", "groups"], summary)
    detail = Table("differences", "Every cell that differs between CPU and GPU on one machine "
                                  "with the same releases",
                   "Grouped as in the summary table; rows that differ only in dtype are merged. "
                   "Each pair of values is printed with as many figures as tell them apart.",
                   ["group", "experiment", "cell", "dtypes", "cpu", "cuda"],
                   collapse_rows(sorted(cells, key=lambda r: (r[0], r[1], r[2])), (3,)),
                   detail=(["group", "experiment", "cell", "dtype", "cpu", "cuda"], cells))
    return table, detail


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
    summary, detail = _device_tables(pairs, runs)
    paired = list({id(r): r for p in pairs for r in (p.cpu, p.cuda)}.values())
    main += _table_lines((DEVICES, "devices"), summary, layout, paired)
    appendix = ['<a id="cpu-against-gpu-appendix"></a>', "## CPU against GPU", ""]
    appendix += _table_lines((DEVICES, "differences"), detail, layout, paired)
    main += [wrap(f"Every differing cell of the same machine and releases: "
                  f"{layout.cite((DEVICES, 'differences'))} in the appendix."), ""]
    return main, appendix, _device_finding(pairs, runs)


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
        + _reproduction_section(runs, references, experiments, layout.files) + devices + body
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

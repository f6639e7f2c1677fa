"""Render REPORT.md and reports/tables/* from loaded runs: a pure function, then atomic writes.

Everything in the report comes from the result files: table cells, captions, findings,
methodology and provenance. An experiment whose tables or findings raise is shown as a
one-line error in its own section, and the rest of the report still renders.
"""
import os
import textwrap

from study import reproduction
from study.atomic import write_text_atomically
from study.errors import first_error_line
from study.results import Run
from study.runsets import run_name, varying_fields
from study.tables import Table, format_cell, to_csv, to_latex, to_markdown

MAX_DIFFERENCES_SHOWN = 3
WIDTH = 100  # prose is wrapped to this width; table rows are kept short by their compact forms
GENERATED_FOLDERS = ("tables", "figures")  # everything in them is rewritten by each render


def anchor(experiment: str, table_id: str) -> str:
    return f"{experiment}-{table_id}".replace("_", "-")


def number_tables(experiments) -> dict[tuple[str, str], int]:
    """Table numbers from the declared order: a table missing its data keeps its number."""
    order = [(e.NAME, tid) for e in experiments for tid in e.TABLES]
    return {key: i for i, key in enumerate(order, 1)}


def wrap(text: str, indent: str = "") -> str:
    """A paragraph or list item wrapped for reading in a terminal (markdown joins the lines)."""
    return textwrap.fill(text, WIDTH, subsequent_indent=indent, break_long_words=False,
                         break_on_hyphens=False)


def _short(text: str, width: int = 120) -> str:
    text = str(text)
    return text if len(text) <= width else text[: width - 1] + "…"


# --- sections ---------------------------------------------------------------------------

def _contents(experiments, numbers, built: dict) -> list[str]:
    lines = ["## Contents", "", "- [Reproduction](#reproduction) · [Findings](#findings) · "
             "[Provenance](#provenance) · [Methodology](#methodology)", "",
             "| table | title | files |", "|---|---|---|"]
    for exp in experiments:
        for tid in exp.TABLES:
            a, n = anchor(exp.NAME, tid), numbers[(exp.NAME, tid)]
            table = built.get((exp.NAME, tid))
            title = table.title if table else "no results yet"
            files = (f"[md](tables/{a}.md) · [tex](tables/{a}.tex) · [csv](tables/{a}.csv)"
                     if table else "—")
            lines.append(f"| [{n}](#{a}) | {title} | {files} |")
    return lines + [""]


def _reproduction_section(runs, references, experiments, files) -> list[str]:
    lines = ['<a id="reproduction"></a>', "## Reproduction", ""]
    if not references:
        return lines + ["No reference results are present (reports/reference/ is empty), so "
                        "nothing is compared.", ""]
    comps = reproduction.comparisons(runs, references, experiments)
    if not comps:
        return lines + [f"Every result here is the study's committed reference "
                        f"({len(references)} result files in reports/reference/). Rerun the "
                        f"study on your machine (`make report`) and this section will say, "
                        f"experiment by experiment, whether your numbers reproduce it.", ""]
    reproduced = [c for c in comps if c.verdict.startswith("reproduced")]
    everyone = runs + references
    lines += [wrap(f"**{len(reproduced)} of {len(comps)} runs reproduce the committed reference** "
                   f"(cells compared exactly, wall-clock seconds left out; timing as ratios "
                   f"measured within each run, equal when their interquartile intervals overlap "
                   f"within the experiment's tolerance, never as absolute times across "
                   f"machines). All differing cells: [tables/reproduction-differences.csv]"
                   f"(tables/reproduction-differences.csv)."), ""]
    rows, diffs = [], []
    for c in comps:
        shown = "; ".join(f"{_short(name, 70)}: {reproduction.cell_text(a)} vs "
                          f"{reproduction.cell_text(b)}"
                          for name, a, b in c.different[:MAX_DIFFERENCES_SHOWN])
        yours, theirs = run_name(c.run, everyone), run_name(c.reference, everyone) if c.reference else None
        if yours == theirs:  # the same host, device and releases: tell them apart by date
            yours, theirs = (f"{name}, {r.provenance['utc'][:16].replace('T', ' ')} UTC"
                             for name, r in ((yours, c.run), (theirs, c.reference)))
        rows.append([c.run.experiment, yours, theirs, c.equal,
                     len(c.different), len(c.only_here), len(c.only_reference), c.verdict,
                     _short(shown, 150) or None])
        diffs += [[c.run.experiment, c.run.path, c.reference.path, name,
                   reproduction.cell_text(a, None), reproduction.cell_text(b, None)]
                  for name, a, b in c.different]
    table = Table("reproduction", "Your runs against the committed reference",
                  "One row per rerun result file: cells equal, cells different, cells only in "
                  "your run or only in the reference run it is compared with (same experiment, "
                  "device and scope; the same releases where the reference has them).",
                  ["experiment", "your run", "reference run", "equal", "different", "only yours",
                   "only reference", "verdict", "first differences (yours vs reference)"], rows)
    lines += [to_markdown(table), ""]
    files["tables/reproduction.md"] = to_markdown(table) + "\n"
    files["tables/reproduction.csv"] = to_csv(table)
    files["tables/reproduction-differences.csv"] = to_csv(Table(
        "reproduction-differences", "", "", ["experiment", "your file", "reference file", "cell",
                                            "yours", "reference"], diffs))
    return lines


def _findings_section(found: list[tuple[str, str, str]], numbers) -> list[str]:
    lines = ['<a id="findings"></a>', "## Findings", "",
             wrap("Each sentence is generated from the result files and links to the table behind "
                  "it; runs that agree are named together, runs that differ are contrasted, and a "
                  "finding whose data is missing is left out."), ""]
    if not found:
        return lines + ["No results yet: run `make report`.", ""]
    for i, (name, sentence, tid) in enumerate(found, 1):
        lines.append(wrap(f"{i}. {sentence} ([Table {numbers[(name, tid)]}]"
                          f"(#{anchor(name, tid)}))", " " * (len(str(i)) + 2)))
    return lines + [""]


def _provenance_section(runs: list[Run], notes: list[str]) -> list[str]:
    lines = ['<a id="provenance"></a>', "## Provenance", "",
             "Every result file this report draws on, with where and how it was measured.", "",
             "| result file | host | device | torch | jax | scope | wall s | commit | dirty |",
             "|---|---|---|---|---|---|---|---|---|"]
    for run in runs:
        p = run.provenance
        lines.append(f"| `{run.path}` | {p['host']} | {p['device']} | {p['torch']} | {p['jax']} | "
                     f"{run.scope} | {format_cell(p.get('wall_s'))} | "
                     f"{str(p.get('git_commit') or '—')[:10]} | {format_cell(p.get('git_dirty'))} |")
    lines += ["", "Machines and settings, per host and device:", ""]
    seen = {}
    for run in runs:
        p = run.provenance
        gpu = p.get("gpu")
        gpu_text = (f"GPU {gpu.get('name')} (CUDA runtime {gpu.get('torch_cuda_runtime')}, driver "
                    f"{gpu.get('driver')}, cuDNN {gpu.get('cudnn')}, JAX "
                    f"{gpu.get('jax_platform_version')})" if isinstance(gpu, dict)
                    else f"GPU {gpu}" if gpu else "no GPU used")
        plugins = ", ".join(f"{k} {v}" for k, v in (p.get("jax_plugins") or {}).items()) or "none"
        threads = p.get("threads", {})
        env = ", ".join(f"{k}={v}" for k, v in sorted((p.get("env") or {}).items()) if v)
        text = (f"- **{p['host']} / {p['device']}**: CPU {p.get('cpu', '—')} "
                f"({p.get('cpu_count', '—')} cores, torch CPU capability "
                f"{p.get('torch_cpu_capability') or 'not recorded'}); {gpu_text}; "
                f"{p.get('os', '—')}; Python {p.get('python', '—')}, numpy {p.get('numpy', '—')}; "
                f"jaxlib {p.get('jaxlib', '—')}, JAX backend {p.get('jax_backend', '—')} "
                f"{p.get('jax_backend_version') or ''}, plugins {plugins}; threads: torch "
                f"{threads.get('torch_intra_op', '—')} intra-op / {threads.get('torch_inter_op', '—')}"
                f" inter-op, XLA_FLAGS '{threads.get('XLA_FLAGS', '')}'"
                + (f"; env {env}" if env else "") + ".")
        seen.setdefault((p["host"], p["device"], p["torch"], p["jax"]), text)
    for text in dict.fromkeys(seen.values()):
        lines.append(wrap(text, "  "))
    absent = sorted({run.provenance["cuda_absent"] for run in runs
                     if run.provenance.get("cuda_absent")})
    lines.append("")
    lines += [wrap(f"- {reason}: no GPU numbers from this host; its results are labelled cpu.",
                   "  ") for reason in absent]
    lines += [wrap(f"- Duplicate resolved: {note}.", "  ") for note in notes]
    return lines + [""]


def _methodology_section(runs) -> list[str]:
    seeds = sorted({f"{r.experiment}: {r.provenance.get('seed')}" for r in runs})
    matmul = sorted({", ".join(f"{k}={v}" for k, v in sorted(r.provenance.get("matmul", {}).items()))
                     for r in runs})
    dtypes = sorted({rec["dtype"] for r in runs for rec in r.records
                     if isinstance(rec.get("dtype"), str)})
    devices = sorted({r.provenance["device"] for r in runs})
    scopes = sorted({r.scope for r in runs})
    items = [
        "- Inputs are built once in numpy and copied into both frameworks, on the device the run "
        "names; every array is computed there and comes to the host only to be recorded. "
        f"Seeds recorded per experiment: {', '.join(seeds) or 'none'} (None: the inputs are "
        f"fixed by hand, as in the seeds).",
        f"- Matmul settings recorded: {'; '.join(matmul) or 'none'}.",
        f"- Dtypes in these results: {', '.join(dtypes) or 'none'}. Devices: "
        f"{', '.join(devices) or 'none'}. Scopes: {', '.join(scopes) or 'none'} (quick: smaller "
        f"sizes; standard: what `make report` runs; full: the paper-sized runs).",
        "- An exact zero is an element with x == 0 in the framework's own dtype on its own "
        "device (so −0.0 counts); zero counts come from the framework's computation, not numpy.",
        "- A convention is measured, never declared for a built-in: the reverse-mode gradient "
        "with cotangent 1 at the input, at every placement the atlas probes; forward mode uses "
        "tangent 1; the second derivative differentiates the reverse-mode gradient again.",
        "- A case or mode that raises is recorded with the first line of its error and shown in "
        "its table; the run carries on.",
        "- Limits: conventions are those of the builds listed under Provenance and can change "
        "with release, build, CPU capability and device; subnormal handling is the backend's; "
        "the seed nets are tiny, so the two-layer tables show where ties bite, not how often."]
    return ['<a id="methodology"></a>', "## Methodology", ""] + [wrap(i, "  ") for i in items] + [""]


def _experiment_section(exp, exp_runs, numbers, files, built) -> list[str]:
    rerun = f"python -m study run {exp.NAME}"
    lines = [f"## {exp.NAME}: {exp.DESCRIPTION}", "", wrap(f"*Question:* {exp.QUESTION}"), "",
             f"*Rerun:* `{rerun}`, then `python -m study report`.", ""]
    if exp_runs:
        everyone = varying_fields(exp_runs)
        names = "; ".join(f"{run_name(r, exp_runs) if everyone else r.label} "
                          f"(`{os.path.basename(r.path)}`)" for r in exp_runs)
        lines += [wrap(f"Runs shown ({len(exp_runs)}): {names}."), ""]
    tables: dict[str, Table] = {}
    error = None
    if exp_runs:
        try:
            tables = {t.id: t for t in exp.tables(exp_runs)}
            unknown = set(tables) - set(exp.TABLES)
            if unknown:
                raise ValueError(f"built undeclared tables {sorted(unknown)}")
        except Exception as exc:  # noqa: BLE001  one experiment's failure must not sink the report
            error, tables = first_error_line(exc), {}
            lines += [f"**error:** the tables of `{exp.NAME}` could not be rendered from these "
                      f"results: {error}", ""]
    for tid in exp.TABLES:
        n, a = numbers[(exp.NAME, tid)], anchor(exp.NAME, tid)
        if tid not in tables:
            why = "see the error above" if error else f"run `{rerun}` to fill this table"
            lines += [f'<a id="{a}"></a>', f"### Table {n}: no results yet", "", f"({why}.)", ""]
            continue
        table = tables[tid]
        built[(exp.NAME, tid)] = table
        md = to_markdown(table)
        csv_note = (f" The CSV holds every row and column behind this view: "
                    f"[tables/{a}.csv](tables/{a}.csv)." if table.detail else "")
        lines += [f'<a id="{a}"></a>', f"### Table {n}: {table.title}", "",
                  wrap(f"*{table.caption}*{csv_note}"), "", md, ""]
        lines += [f"{wrap(note)}\n" for note in table.notes]
        cite = wrap(f"Table {n}: {table.title}. {table.caption}")
        files[f"tables/{a}.md"] = (f"<!--\n{cite}\n-->\n" + md + "\n\n"
                                  + "".join(f"{wrap(note)}\n\n" for note in table.notes)
                                  + wrap(f"Source: {', '.join(r.path for r in exp_runs)}") + "\n")
        files[f"tables/{a}.tex"] = to_latex(table, n, a)
        files[f"tables/{a}.csv"] = to_csv(table)
    if exp_runs and hasattr(exp, "figures") and not error:
        try:
            for name, (data, alt) in exp.figures(exp_runs).items():
                files[name] = data
                lines += [f"![{alt}]({name})", ""]
        except Exception as exc:  # noqa: BLE001
            lines += [f"**error:** the figures of `{exp.NAME}` could not be drawn: "
                      f"{first_error_line(exc)}", ""]
    return lines


def _findings(experiments, runs) -> list[tuple[str, str, str]]:
    found = []
    for exp in experiments:
        exp_runs = [r for r in runs if r.experiment == exp.NAME]
        if not exp_runs or not hasattr(exp, "findings"):
            continue
        try:
            found += [(exp.NAME, sentence, tid) for sentence, tid in exp.findings(exp_runs)]
        except Exception as exc:  # noqa: BLE001
            found.append((exp.NAME, f"(the findings of {exp.NAME} could not be generated: "
                                    f"{first_error_line(exc)})", exp.TABLES[0]))
    return found


def render(runs: list[Run], notes: list[str], experiments,
           references: list[Run] | None = None) -> dict[str, str | bytes]:
    """{path relative to reports/: text or bytes} for REPORT.md and every export."""
    numbers = number_tables(experiments)
    files: dict[str, str | bytes] = {}
    built: dict[tuple[str, str], Table] = {}
    body: list[str] = []
    for exp in experiments:
        body += _experiment_section(exp, [r for r in runs if r.experiment == exp.NAME], numbers,
                                    files, built)
    head = ["# ReLU gradient rules in PyTorch and JAX", "",
            wrap("Generated by `python -m study report` from the result files listed under "
                 "Provenance; do not edit by hand. Every number below comes from those files."), ""]
    sections = (head + _contents(experiments, numbers, built)
                + _reproduction_section(runs, references or [], experiments, files)
                + _findings_section(_findings(experiments, runs), numbers) + body
                + _provenance_section(runs, notes) + _methodology_section(runs))
    files["REPORT.md"] = "\n".join(sections).rstrip() + "\n"
    return files


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

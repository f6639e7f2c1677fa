"""Render REPORT.md and reports/tables/* from loaded runs: a pure function, then atomic writes.

Everything in the report comes from the result files: table cells, captions, findings,
methodology and provenance. An experiment whose tables or findings raise is shown as a
one-line error in its own section, and the rest of the report still renders.
"""
import os
import textwrap

from study import device_comparison, reproduction
from study.atomic import write_text_atomically
from study.errors import first_error_line
from study.experiment import Finding, Rendered
from study.results import Run
from study.runsets import run_name, run_tag, varying_fields
from study.tables import Table, collapse_rows, format_cell, to_csv, to_latex, to_markdown

MAX_DIFFERENCES_SHOWN = 3
MAX_FAILED_SHOWN = 20
WIDTH = 100  # prose is wrapped to this width; table rows are kept short by their compact forms
GENERATED_FOLDERS = ("tables", "figures")  # everything in them is rewritten by each render


def anchor(experiment: str, table_id: str) -> str:
    return f"{experiment}-{table_id}".replace("_", "-")


def number_tables(experiments) -> dict[tuple[str, str], int]:
    """Table numbers from the declared order: a table missing its data keeps its number."""
    order = [(e.name, tid) for e in experiments for tid in e.tables]
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
             "[CPU against GPU](#cpu-against-gpu) · [Provenance](#provenance) · "
             "[Methodology](#methodology)", "",
             "| table | title | files |", "|---|---|---|"]
    for exp in experiments:
        for tid in exp.tables:
            a, n = anchor(exp.name, tid), numbers[(exp.name, tid)]
            table = built.get((exp.name, tid))
            title = table.title if table else "no results yet"
            files = (f"[md](tables/{a}.md) · [tex](tables/{a}.tex) · [csv](tables/{a}.csv)"
                     if table else "—")
            lines.append(f"| [{n}](#{a}) | {title} | {files} |")
    return lines + [""]


def _reproduction_rows(comps, everyone) -> tuple[list[list], list[list]]:
    rows, diffs = [], []
    for c in comps:
        shown = "; ".join(f"{_short(reproduction.name_text(name), 70)}: "
                          f"{reproduction.cell_text(a)} vs {reproduction.cell_text(b)}"
                          for name, a, b in c.different[:MAX_DIFFERENCES_SHOWN])
        yours = run_name(c.run, everyone)
        theirs = run_name(c.reference, everyone) if c.reference else None
        if yours == theirs:  # the same host, device and releases: tell them apart by date
            yours, theirs = (f"{name}, {r.provenance['utc'][:16].replace('T', ' ')} UTC"
                             for name, r in ((yours, c.run), (theirs, c.reference)))
        rows.append([c.run.experiment, yours, theirs, c.equal, len(c.different),
                     len(c.only_here), len(c.only_reference), c.verdict,
                     _short(shown, 150) or None])
        diffs += [[c.run.experiment, c.kind, c.run.path, c.reference.path,
                   reproduction.name_text(name), reproduction.cell_text(a, None),
                   reproduction.cell_text(b, None)] for name, a, b in c.different]
    return rows, diffs


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
    reruns = [c for c in comps if c.kind == reproduction.REPRODUCTION]
    devices = len(comps) - len(reruns)
    lines += [wrap(f"**{sum(c.reproduced for c in reruns)} of {len(reruns)} runs reproduce the "
                   f"committed reference** (cells compared exactly, wall-clock seconds left "
                   f"out; timing as ratios measured within each run, equal when their "
                   f"interquartile intervals overlap within the experiment's tolerance, never "
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
        summary.append([p.experiment, run_name(p.cpu, everyone), run_name(p.cuda, everyone),
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
                          fields.get("dtype"), reproduction.cell_text(a),
                          reproduction.cell_text(b)])
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
                f" (flushed to zero on a CPU, the study's probe finds: {flushed})"
                if g == "subnormal" and flushed else "") for g, n in groups.items())
            parts.append(f"{sum(groups.values())} of {total} {exp} cells differ: {text}")
    equal = [exp for exp, (_, groups) in same.items() if not groups]
    if equal:
        parts.append(f"{len(equal)} experiments agree in every cell")
    differ = [f"{exp} {sum(g.values())}" for exp, (_, g) in other.items() if g]
    if differ:
        parts.append(f"across releases or machines, cells differ in {', '.join(differ)}")
    return Finding("CPU against GPU on one machine and release: " + "; ".join(parts) + ".",
                   "devices")


def _device_section(runs, experiments, files) -> tuple[list[str], Finding | None]:
    pairs = device_comparison.pairs(runs, experiments)
    lines = ['<a id="cpu-against-gpu"></a>', "## CPU against GPU", ""]
    if not pairs:
        return lines + ["No cuda run has a cpu run of the same experiment to compare with.",
                        ""], None
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
    detail = Table("device-differences", "Every cell that differs between CPU and GPU on one "
                                         "machine with the same releases",
                   "Grouped as in the table above; rows that differ only in dtype are merged.",
                   ["group", "experiment", "cell", "dtypes", "cpu", "cuda"],
                   collapse_rows(sorted(cells, key=lambda r: (r[0], r[1], r[2])), (3,)),
                   detail=(["group", "experiment", "cell", "dtype", "cpu", "cuda"], cells))
    for t in (table, detail):
        files[f"tables/{t.id}.md"] = to_markdown(t) + "\n"
        files[f"tables/{t.id}.csv"] = to_csv(t)
    lines += [wrap(f"*{table.caption}*"), "", to_markdown(table), ""]
    if cells:
        lines += [wrap(f"{detail.title} (dtype by dtype: [tables/{detail.id}.csv]"
                       f"(tables/{detail.id}.csv)):"), "", to_markdown(detail), ""]
    return lines, _device_finding(pairs, runs)


def _findings_section(found: list[tuple[str, Finding]], numbers) -> list[str]:
    lines = ['<a id="findings"></a>', "## Findings", "",
             wrap("Each finding states a fact, then the runs it holds for, and links to the "
                  "table behind it; it is generated from the result files, and left out where "
                  "its data is missing."), ""]
    if not found:
        return lines + ["No results yet: run `make report`.", ""]
    for i, (name, finding) in enumerate(found, 1):
        link = (f"[Table {numbers[(name, finding.table)]}](#{anchor(name, finding.table)})"
                if name else "[CPU against GPU](#cpu-against-gpu)")
        lines.append(wrap(f"{i}. {finding.text} ({link})", " " * (len(str(i)) + 2)))
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


def _table_lines(exp, table: Table, n: int, files, exp_runs) -> list[str]:
    a = anchor(exp.name, table.id)
    md = to_markdown(table)
    csv_note = (f" The CSV holds every row and column behind this view: "
                f"[tables/{a}.csv](tables/{a}.csv)." if table.detail else "")
    lines = [f'<a id="{a}"></a>', f"### Table {n}: {table.title}", "",
             wrap(f"*{table.caption}*{csv_note}"), "", md, ""]
    lines += [f"{wrap(note)}\n" for note in table.notes]
    cite = wrap(f"Table {n}: {table.title}. {table.caption}")
    files[f"tables/{a}.md"] = (f"<!--\n{cite}\n-->\n" + md + "\n\n"
                               + "".join(f"{wrap(note)}\n\n" for note in table.notes)
                               + wrap(f"Source: {', '.join(r.path for r in exp_runs)}") + "\n")
    files[f"tables/{a}.tex"] = to_latex(table, n, a)
    files[f"tables/{a}.csv"] = to_csv(table)
    return lines


def _failed_lines(exp_runs: list[Run]) -> list[str]:
    """Every case that raised and every record an erratum withdrew, with why."""
    items = []
    for run in exp_runs:
        for rec in run.failed_records():
            case = ", ".join(f"{k}={v}" for k, v in rec.items() if not isinstance(v, (list, dict))
                             and k not in ("case_error", "withdrawn", "device"))
            why = rec.get("case_error") or f"withdrawn: {rec['withdrawn']}"
            items.append(f"- {run_name(run, exp_runs)}: {_short(case, 150)}: {why}")
    if not items:
        return []
    shown = items[:MAX_FAILED_SHOWN]
    more = [f"- … and {len(items) - len(shown)} more."] if len(items) > len(shown) else []
    return [f"Failed or withdrawn cases ({len(items)}):", ""] + [wrap(i, "  ") for i in shown] \
        + more + [""]


def _experiment_section(exp, exp_runs, rendered, error, numbers, files, built) -> list[str]:
    rerun = f"python -m study run {exp.name}"
    lines = [f"## {exp.name}: {exp.description}", "", wrap(f"*Question:* {exp.question}"), "",
             f"*Rerun:* `{rerun}`, then `python -m study report`.", ""]
    if exp_runs:
        everyone = varying_fields(exp_runs)
        names = "; ".join(f"{run_tag(r, exp_runs)} {run_name(r, exp_runs) if everyone else r.label} "
                          f"(`{os.path.basename(r.path)}`)" for r in exp_runs)
        lines += [wrap(f"Runs shown ({len(exp_runs)}): {names}."), ""]
    if error:
        lines += [f"**error:** the tables of `{exp.name}` could not be rendered from these "
                  f"results: {error}", ""]
    tables = {t.id: t for t in rendered.tables} if rendered else {}
    for tid in exp.tables:
        n, a = numbers[(exp.name, tid)], anchor(exp.name, tid)
        if tid not in tables:
            why = "see the error above" if error else f"run `{rerun}` to fill this table"
            lines += [f'<a id="{a}"></a>', f"### Table {n}: no results yet", "", f"({why}.)", ""]
            continue
        built[(exp.name, tid)] = tables[tid]
        lines += _table_lines(exp, tables[tid], n, files, exp_runs)
    lines += _failed_lines(exp_runs)
    for name, (data, alt) in (rendered.figures if rendered else {}).items():
        files[name] = data
        lines += [f"![{alt}]({name})", ""]
    return lines


def render(runs: list[Run], notes: list[str], experiments,
           references: list[Run] | None = None) -> dict[str, str | bytes]:
    """{path relative to reports/: text or bytes} for REPORT.md and every export."""
    numbers = number_tables(experiments)
    files: dict[str, str | bytes] = {}
    built: dict[tuple[str, str], Table] = {}
    body: list[str] = []
    found: list[tuple[str, Finding]] = []
    for exp in experiments:
        exp_runs = [r for r in runs if r.experiment == exp.name]
        rendered, error = _rendered(exp, exp_runs)
        found += [(exp.name, f) for f in (rendered.findings if rendered else [])]
        body += _experiment_section(exp, exp_runs, rendered, error, numbers, files, built)
    head = ["# ReLU gradient rules in PyTorch and JAX", "",
            wrap("Generated by `python -m study report` from the result files listed under "
                 "Provenance; do not edit by hand. Every number below comes from those files."), ""]
    devices, device_finding = _device_section(runs, experiments, files)
    found += [(None, device_finding)] if device_finding else []
    sections = (head + _contents(experiments, numbers, built)
                + _reproduction_section(runs, references or [], experiments, files)
                + _findings_section(found, numbers) + devices + body
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

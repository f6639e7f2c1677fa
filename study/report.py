"""Render REPORT.md and reports/tables/* from loaded runs: a pure function, then atomic writes."""
import os

from study.atomic import write_text_atomically
from study.results import Run
from study.tables import Table, to_csv, to_latex, to_markdown

PROVENANCE_COLUMNS = ("host", "device", "torch", "jax", "jaxlib", "numpy", "python",
                      "jax_backend", "cpu", "gpu", "utc", "git_commit", "git_dirty")


def anchor(experiment: str, table_id: str) -> str:
    return f"{experiment}-{table_id}".replace("_", "-")


def _provenance_section(runs: list[Run], notes: list[str]) -> list[str]:
    lines = ["## Provenance", "",
             "Every result file that this report draws on, with the environment it was measured in.",
             ""]
    header = "| result file | " + " | ".join(PROVENANCE_COLUMNS) + " | threads | matmul |"
    lines += [header, "|" + "---|" * (len(PROVENANCE_COLUMNS) + 3)]
    for run in runs:
        p = run.provenance
        cells = [str(p.get(k, "—")) for k in PROVENANCE_COLUMNS]
        cells[PROVENANCE_COLUMNS.index("git_commit")] = str(p.get("git_commit") or "—")[:12]
        threads = ", ".join(f"{k}={v}" for k, v in sorted(p.get("threads", {}).items()) if v != "")
        matmul = ", ".join(f"{k}={v}" for k, v in sorted(p.get("matmul", {}).items()))
        lines.append(f"| `{run.path}` | " + " | ".join(cells) + f" | {threads} | {matmul} |")
    absent = sorted({run.provenance["cuda_absent"] for run in runs
                     if run.provenance.get("cuda_absent")})
    lines.append("")
    lines += [f"- {reason}: no GPU numbers from this host; CPU results are labelled cpu." for
              reason in absent]
    lines += [f"- Duplicate resolved: {note}." for note in notes]
    lines.append("")
    return lines


def _source_line(experiment: str, runs: list[Run]) -> str:
    files = ", ".join(f"`{r.path}`" for r in runs)
    return f"Source: experiment `{experiment}` (`python -m study run {experiment}`); {files}."


def _findings_section(runs, experiments, numbers) -> list[str]:
    lines = ["## Findings", "",
             "Each sentence is generated from the result files and links to the table behind it; "
             "a finding whose data is missing is left out.", ""]
    n = 0
    for exp in experiments:
        exp_runs = [r for r in runs if r.experiment == exp.NAME]
        if not exp_runs or not hasattr(exp, "findings"):
            continue
        for sentence, tid in exp.findings(exp_runs):
            n += 1
            lines.append(f"{n}. {sentence} ([Table {numbers[(exp.NAME, tid)]}]"
                         f"(#{anchor(exp.NAME, tid)}))")
    if n == 0:
        lines.append("No results yet: run `make report`.")
    return lines + [""]


def _methodology_section(runs, experiments) -> list[str]:
    from study.conventions import DTYPES
    from study.frameworks import MATMUL_PRECISION
    threads = sorted({f"torch intra-op {r.provenance['threads']['torch_intra_op']}, inter-op "
                      f"{r.provenance['threads']['torch_inter_op']}, XLA_FLAGS "
                      f"'{r.provenance['threads'].get('XLA_FLAGS', '')}'"
                      for r in runs if "threads" in r.provenance})
    seeds = ", ".join(f"{e.NAME}: {getattr(e, 'SEED', None)}" for e in experiments)
    devices = sorted({r.provenance["device"] for r in runs})
    absent = sorted({r.provenance["cuda_absent"] for r in runs if r.provenance.get("cuda_absent")})
    return [
        "## Methodology", "",
        f"- Inputs are built once in numpy and copied into both frameworks. Seeds per "
        f"experiment: {seeds} (None: the inputs are fixed by hand, as in the seeds).",
        f"- float32 matmul precision is pinned to '{MATMUL_PRECISION}' in both frameworks "
        f"(torch.set_float32_matmul_precision, jax_default_matmul_precision); JAX runs with "
        f"jax_enable_x64 so float64 is real float64.",
        f"- Dtypes swept where an experiment sweeps them: {', '.join(DTYPES)}. Thread settings "
        f"seen in these results: {'; '.join(threads) or 'none recorded'}.",
        "- An exact zero is an element with x == 0 in the framework's own dtype on its own "
        "device (so −0.0 counts); zero counts come from the framework's computation, not numpy.",
        "- A convention is measured, never declared for a built-in: the reverse-mode gradient "
        "with cotangent 1 at the input, one element of a 1-D tensor; forward mode uses tangent 1; "
        "the second derivative differentiates the reverse-mode gradient again.",
        "- A case or mode that raises is recorded with the first line of its error and shown in "
        "its table; the run carries on.",
        f"- Devices in these results: {', '.join(devices) or 'none'}."
        + (f" {'; '.join(absent)}." if absent else ""),
        "- Limits: conventions are those of the builds listed under Provenance and can change "
        "with release, build and device; subnormal handling is the backend's (see the atlas); "
        "the seed nets are tiny, so the two-layer tables show where ties bite, not how often.",
        ""]


def number_tables(experiments) -> dict[tuple[str, str], int]:
    """Table numbers from the declared order: a table missing its data keeps its number."""
    order = [(e.NAME, tid) for e in experiments for tid in e.TABLES]
    return {key: i for i, key in enumerate(order, 1)}


def render(runs: list[Run], notes: list[str], experiments) -> dict[str, str]:
    """{path relative to reports/: text} for REPORT.md and every table export."""
    numbers = number_tables(experiments)
    files: dict[str, str] = {}
    body: list[str] = []
    for exp in experiments:
        exp_runs = [r for r in runs if r.experiment == exp.NAME]
        body += [f"## {exp.NAME}: {exp.DESCRIPTION}", ""]
        built: dict[str, Table] = {t.id: t for t in exp.tables(exp_runs)} if exp_runs else {}
        unknown = set(built) - set(exp.TABLES)
        assert not unknown, f"{exp.NAME} built undeclared tables {unknown}"
        for tid in exp.TABLES:
            n, a = numbers[(exp.NAME, tid)], anchor(exp.NAME, tid)
            if tid not in built:
                body += [f'<a id="{a}"></a>', f"### Table {n}: no results yet", "",
                         f"Run `python -m study run {exp.NAME}` to fill this table.", ""]
                continue
            table = built[tid]
            md = to_markdown(table)
            body += [f'<a id="{a}"></a>', f"### Table {n}: {table.title}", "",
                     f"*{table.caption}*", "", md, ""]
            body += [f"{note}\n" for note in table.notes]
            body += [_source_line(exp.NAME, exp_runs), ""]
            cite = f"Table {n}: {table.title}. {table.caption}"
            files[f"tables/{a}.md"] = (f"<!-- {cite} -->\n" + md + "\n\n"
                                      + "".join(f"{note}\n\n" for note in table.notes)
                                      + _source_line(exp.NAME, exp_runs) + "\n")
            files[f"tables/{a}.tex"] = to_latex(table, n, a)
            files[f"tables/{a}.csv"] = to_csv(table)
        if exp_runs and hasattr(exp, "figures"):
            for name, data in exp.figures(exp_runs).items():
                files[name] = data
                body += [f"![{exp.NAME}: {name}]({name})", ""]
    head = ["# ReLU gradient rules in PyTorch and JAX", "",
            "Generated by `python -m study report` from the result files listed under "
            "Provenance; do not edit by hand. Every number below comes from those files.", ""]
    sections = (head + _findings_section(runs, experiments, numbers)
                + _provenance_section(runs, notes) + _methodology_section(runs, experiments) + body)
    files["REPORT.md"] = "\n".join(sections).rstrip() + "\n"
    return files


def write_report(files: dict[str, str], reports_dir: str) -> None:
    """Write every file atomically, then drop table exports that no longer exist."""
    os.makedirs(os.path.join(reports_dir, "tables"), exist_ok=True)
    for rel, content in files.items():
        write_text_atomically(os.path.join(reports_dir, rel), content)
    tables_dir = os.path.join(reports_dir, "tables")
    for name in os.listdir(tables_dir):
        if f"tables/{name}" not in files:
            os.unlink(os.path.join(tables_dir, name))

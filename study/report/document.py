"""REPORT.md, APPENDIX.md and reports/tables/*: a pure function of the loaded runs.

REPORT.md: the six answers, the run legend, one section per experiment with its headline
tables, the reproduction verdict, CPU against GPU, the methodology with the harness checks.
APPENDIX.md: the table index (numbered tables, then CSV listings), the longer tables, the
provenance of every result file. An experiment whose tables raise shows a one-line error
there, the others render in full, and `Document.errors` names it (the CLI then exits 1).
"""
import os
from dataclasses import dataclass, field, replace

from study.errors import first_error_line
from study.runs.experiment import QUESTIONS, Rendered
from study.report import comparisons
from study.report.format import wrap
from study.report.prose import macros, say
from study.report.runs import (assign_labels, differences, label_order, labelled, labels_json,
                               machine_name, main_run, span, title)
from study.report.table import Table, csv, frame, latex, markdown
from study.runs.results import Run

APPENDIX = "APPENDIX.md"
GENERATED_FOLDERS = ("tables", "figures")  # everything in them is rewritten by each render
LABELS = "labels.json"
TEX_LEGEND_RUNS = 6
PROSE = macros("study/report/document.j2")


def anchor(experiment: str, table_id: str) -> str:
    return f"{experiment}-{table_id}".replace("_", "-")


def heading(level: int, name: str, words: str) -> str:
    """'### words <a id="name"></a>': a heading that a link can name, on one line."""
    return "#" * level + f' {words} <a id="{name}"></a>'


def place(exp, table_id: str) -> str:
    for where in ("appendix", "listings", "methodology"):
        if table_id in getattr(exp, where):
            return {"listings": "csv"}.get(where, where)
    return "report"


def number_tables(experiments) -> dict[tuple[str, str], int]:
    """Numbers in declared order, the report's tables first (methodology's last among them),
    then the appendix's; a table without data keeps its number. CSV listings get none."""
    keys = [(e.name, t, place(e, t)) for e in experiments for t in e.tables]
    keys += [(comparisons.DEVICES, "devices", "appendix")]
    order = ([k for k in keys if k[2] == "report"] + [k for k in keys if k[2] == "methodology"]
             + [k for k in keys if k[2] == "appendix"])
    return {k[:2]: i for i, k in enumerate(order, 1)}


@dataclass
class Document:
    runs: list[Run]
    numbers: dict
    places: dict
    figures: bool
    files: dict = field(default_factory=dict)
    titles: dict = field(default_factory=dict)  # key -> title, for the index
    errors: dict = field(default_factory=dict)  # experiment -> its error line, where one raised
    rendered: dict = field(default_factory=dict)  # experiment -> its Rendered tables and answers

    def link(self, key) -> str:
        where = APPENDIX if self.places[key] == "appendix" else ""
        return f"{where}#{anchor(*key)}"

    def cite(self, key) -> str:
        if self.places.get(key) == "csv":
            return f"[{anchor(*key)}.csv](tables/{anchor(*key)}.csv)"
        return f"[Table {self.numbers[key]}]({self.link(key)})"

    def table(self, key, table: Table, runs: list[Run]) -> list[str]:
        """The table's lines where it is shown, and its md, tex and csv files."""
        a = anchor(*key)
        self.titles[key] = table.title
        self.files[f"tables/{a}.csv"] = csv(table)
        if self.places[key] == "csv":
            return []
        n = self.numbers[key]
        legend = "; ".join(_legend_line(g, self.runs) for g in _by_label(runs).values())
        body = markdown(table)
        self.files[f"tables/{a}.md"] = "\n".join(
            [f"# Table {n}: {table.title}", "", wrap(f"*{table.caption}*"), "", body, ""]
            + [wrap(note) + "\n" for note in table.notes]
            + [wrap(f"Runs: {legend}."), "",
               wrap(f"Source: {', '.join(r.path for r in runs)}.")]) + "\n"
        # a caption past a few runs overflows TeX's box sizes: the .tex names the labels only
        short = (legend if len(_by_label(runs)) <= TEX_LEGEND_RUNS else
                 say(PROSE, "tex_legend", runs=span(r.tag for r in runs)))
        self.files[f"tables/{a}.tex"] = latex(table, n, a, f"Runs: {short}." if legend else "")
        return ([heading(3, a, f"Table {n}: {table.title}"), "",
                 wrap(f"*{table.caption}*"), "", body, ""]
                + [wrap(note) + "\n" for note in table.notes])


def _by_label(runs: list[Run]) -> dict[str, list[Run]]:
    out: dict[str, list[Run]] = {}
    for run in sorted(runs, key=lambda r: label_order(r.tag)):
        out.setdefault(run.tag, []).append(run)
    return out


def _commits(group: list[Run]) -> str:
    seen = {}
    for run in group:
        c = str(run.provenance.get("git_commit") or "—")[:7]
        seen[c] = seen.get(c, False) or bool(run.provenance.get("git_dirty"))
    return ", ".join(c + (" (dirty)" if dirty else "") for c, dirty in sorted(seen.items()))


def _host_gpu(group: list[Run], runs: list[Run]) -> str | None:
    from study.compare.device_comparison import host_gpu
    return next((g for g in (host_gpu(r, runs) for r in group) if g), None)


def _legend_line(group: list[Run], runs: list[Run]) -> str:
    p = group[0].provenance
    return (f"{group[0].tag}: {p['device']}, {machine_name(p, _host_gpu(group, runs))}, "
            f"torch {p['torch']}, "
            f"jax {p['jax']}, {group[0].scope} run, commit {_commits(group)}")


def _newest_result(runs: list[Run]) -> str | None:
    return max((str(r.provenance["utc"])[:10] for r in runs), default=None)


def _older(run: Run, runs: list[Run]) -> bool:
    """Measured by other code than the newest run of the same experiment."""
    same = [r for r in runs if r.experiment == run.experiment]
    newest = max(same, key=lambda r: str(r.provenance.get("utc")))
    return run.provenance.get("git_commit") != newest.provenance.get("git_commit")


def _glossary(runs: list[Run]) -> list[str]:
    """The terms the answers use before the legend and sections define them, first: each run
    label by what sets it apart from the main run, then the study's words (document.j2)."""
    described = []
    for row in _legend_rows(runs):
        labels, what = row["run"], row["what"]
        gpu = _gpu_what(labels, runs)
        described.append((labels, f"({gpu or what})" if gpu or what else
                          f"(the main run: {row['device']}, {row['machine']}, torch "
                          f"{row['torch']}, jax {row['jax']})"))
    items = say(PROSE, "glossary", runs=described).split(" |")
    return ["## Glossary", ""] + [wrap(i, "  ") for i in items] + [""]


def _gpu_what(label: str, runs: list[Run]) -> str | None:
    """A GPU run as the glossary says it: its GPU on the host of the cpu run measured there
    ('H100, on C5's host, its releases'), or what sets it apart from the first GPU run ('as G1,
    full'; 'as G1 but an H200, another host'); None for a cpu run."""
    from study.compare.device_comparison import gpu_of, one_host
    from study.report.runs import short_gpu
    mine = next((r for r in runs if r.tag == label and r.provenance["device"] == "cuda"), None)
    if mine is None:
        return None
    p = mine.provenance
    host = next((r for r in runs if r.provenance["device"] == "cpu" and one_host(r, mine)), None)
    first = min((r for r in runs if r.provenance["device"] == "cuda"),
                key=lambda r: label_order(r.tag))
    if first.tag != label:
        parts = differences(p, first.provenance)
        gpu = gpu_of(mine) != gpu_of(first)
        return (f"as {first.tag}" + (f" but an {short_gpu(gpu_of(mine))}, another host"
                                     if gpu else "") + "".join(f", {x}" for x in parts))
    if host is None:
        return None
    same = (host.provenance["torch"], host.provenance["jax"]) == (p["torch"], p["jax"])
    return f"{short_gpu(gpu_of(mine))} on {host.tag}'s host" + (", its releases" if same else "")


def _legend_rows(runs: list[Run]) -> list[dict]:
    main = main_run(runs)
    rows = []
    for label, group in _by_label(runs).items():
        p = group[0].provenance
        older = sorted(r.experiment for r in group if _older(r, runs))
        every = sorted({r.experiment for r in runs})
        named = title(group[0], main) if not group[0].title else group[0].title
        rows.append({"run": label, "what": named[len(label):].strip(" ()"),
                     "device": p["device"],
                     "machine": machine_name(p, _host_gpu(group, runs)), "torch": p["torch"],
                     "jax": p["jax"],
                     "scope": group[0].scope,
                     "experiments": _experiments(sorted(r.experiment for r in group), every),
                     "commit": _commits(group), "older code": _experiments(older, every)})
    return _releases_merged(rows, list(_by_label(runs)))


def _experiments(names: list[str], every: list[str]) -> str:
    """'two_layer, zero_point', 'all 8' where it is every experiment, '—' where none."""
    if len(names) > 2 and names == every:
        return f"all {len(every)}"
    return ", ".join(names) or "—"


def _legend(runs: list[Run]) -> list[str]:
    rows = [{k: v for k, v in row.items() if k != "what"} for row in _legend_rows(runs)]
    table = Table("runs", "Runs", "", frame(rows))
    return [heading(2, "runs", "Runs"), "", wrap(say(PROSE, "legend")), "",
            markdown(table), ""]


def _releases_merged(rows: list[dict], labels: list[str]) -> list[dict]:
    """Three or more runs alike but for their releases (a release history) as one row: their
    labels, and each framework's releases from the oldest to the newest (every run's own row
    is in the appendix's provenance)."""
    alike: dict[tuple, list[int]] = {}
    for i, row in enumerate(rows):
        key = tuple(v for k, v in row.items() if k not in ("run", "what", "torch", "jax"))
        alike.setdefault(key, []).append(i)
    out = []
    for i, row in enumerate(rows):
        group = next(g for g in alike.values() if i in g)
        if len(group) < 3:
            out.append(row)
        elif i == group[0]:
            merged = {k: ", ".join(_version_range([rows[j][k] for j in group]))
                      if k in ("torch", "jax") else v for k, v in row.items()}
            shared = [part for part in row["what"].split(", ") if all(
                part in rows[j]["what"].split(", ") for j in group)]
            out.append({**merged, "run": span(labels[j] for j in group),
                        "what": say(PROSE, "legend_releases", shared=", ".join(shared))})
    return out


def _version_range(versions: list[str]) -> list[str]:
    from packaging.version import InvalidVersion, Version
    try:
        ordered = sorted(set(versions), key=lambda v: Version(v))
    except InvalidVersion:
        ordered = sorted(set(versions))
    return ordered if len(ordered) < 3 else [f"{ordered[0]} … {ordered[-1]} ({len(ordered)})"]


def _answers(answers, doc: Document) -> list[str]:
    lines = ["## Answers", ""]
    for i, question in enumerate(QUESTIONS, 1):
        words = say(PROSE, "question", key=question)
        mine = [(name, a) for name, a in answers if a.question == question]
        lines += [heading(3, f'answer-{question.replace("_", "-")}', f"{i}. {words}"), ""]
        if not mine:
            lines += [say(PROSE, "no_answer"), ""]
            continue
        cited = dict.fromkeys((name, t) for name, a in mine for t in a.tables)
        tables = ", ".join(doc.cite(k) for k in cited if k in doc.places)
        lines += [wrap(" ".join(a.text for _, a in mine) + f" Tables: {tables}."), ""]
    return lines


def _rendered(exp, runs: list[Run]) -> tuple[Rendered | None, str | None]:
    if not runs:
        return None, None
    try:
        rendered = exp.render(exp.summarise(runs))
        unknown = {t.id for t in rendered.tables} - set(exp.tables)
        if unknown:
            raise ValueError(f"built undeclared tables {sorted(unknown)}")
        return rendered, None
    except Exception as exc:  # noqa: BLE001  one experiment's failure must not sink the report
        return None, first_error_line(exc)


def _failed(runs: list[Run]) -> list[dict]:
    out = []
    for run in runs:
        for rec in run.failed_records():
            case = ", ".join(f"{k}={v}" for k, v in rec.items()
                             if v is not None and not isinstance(v, (list, dict))
                             and k not in ("case_error", "withdrawn", "device"))
            out.append({"experiment": run.experiment, "run": run.tag, "case": case,
                        "why": rec.get("case_error") or f"withdrawn: {rec['withdrawn']}"})
    return out


def _section(exp, runs, rendered, error, doc: Document) -> tuple[list, list, list]:
    """The experiment's lines in REPORT.md, in APPENDIX.md and in the Methodology."""
    main = [heading(2, anchor(exp.name, "section"), f"{exp.name}: {exp.description}"), ""]
    appendix, method = [heading(2, anchor(exp.name, "appendix"), exp.name), ""], []
    if error:
        main += [say(PROSE, "not_rendered", experiment=exp.name, error=error), ""]
    tables = {t.id: t for t in rendered.tables} if rendered else {}
    for tid in exp.tables:
        key = (exp.name, tid)
        into = {"report": main, "appendix": appendix, "methodology": method,
                "csv": []}[doc.places[key]]
        if tid in tables:
            into += doc.table(key, tables[tid], runs)
        elif doc.places[key] != "csv":
            into += [heading(3, anchor(*key), say(PROSE, "no_table", number=doc.numbers[key])),
                     ""]
    for finding in rendered.findings if rendered else []:
        main += [wrap(f"- {finding.text} ({doc.cite((exp.name, finding.table))})", "  ")]
    main += [""] if rendered and rendered.findings else []
    numbers = [doc.numbers[(exp.name, t)] for t in exp.tables
               if doc.places[(exp.name, t)] == "appendix"]
    listings = [t for t in exp.tables if doc.places[(exp.name, t)] == "csv"]
    failed = _failed(runs)
    # one paragraph under the tables: where the rest is, which runs, how to rerun
    main += [wrap(say(PROSE, "more", numbers=numbers, listings=len(listings),
                      section=f"{APPENDIX}#{anchor(exp.name, 'appendix')}",
                      index=f"{APPENDIX}#tables", failed=len(failed), exp=exp,
                      runs=span(r.tag for r in runs))), ""]
    if len(appendix) == 2:  # no table of this experiment is in the appendix
        appendix = []
    for name, (draw, alt) in (rendered.figures if rendered else {}).items():
        if doc.figures:
            doc.files[name] = draw()
        main += [f"![{alt}]({name})", ""]
    return main, appendix, method


def _questions(experiments) -> list[str]:
    return ([heading(2, "questions", "What each experiment asks"), ""]
            + [wrap(say(PROSE, "experiment_question", exp=e), "  ") for e in experiments] + [""])


def _methodology(tables: list[str]) -> list[str]:
    """The Methodology section, where an experiment places a table there (the head of REPORT.md
    points to the appendix's methodology notes either way)."""
    return ["## Methodology", "", wrap(say(PROSE, "methodology_pointer")), ""] + tables if tables \
        else []


def _methodology_notes(runs) -> list[str]:
    seeds = sorted({f"{r.experiment} {r.provenance['seed']}" for r in runs
                    if r.provenance.get("seed") is not None})
    by_hand = sorted({r.experiment for r in runs if r.provenance.get("seed") is None})
    matmul = sorted({", ".join(f"`{k}={v}`" for k, v in sorted(r.provenance.get("matmul",
                                                                             {}).items()))
                     for r in runs})
    items = say(PROSE, "methodology", seeds=seeds, by_hand=by_hand, matmul=matmul).split(" |")
    return ([heading(2, "methodology", "Methodology"), ""] + [wrap(i, "  ") for i in items]
            + [""])


def _provenance(runs: list[Run], notes: list[str]) -> list[str]:
    rows = [{"result file": f"`{r.path}`", "run": r.tag, "device": r.provenance["device"],
             "torch": r.provenance["torch"], "jax": r.provenance["jax"], "scope": r.scope,
             "wall s": r.provenance.get("wall_s"), "UTC": str(r.provenance.get("utc"))[:16],
             "ran beside": _beside(r.provenance),
             "commit": str(r.provenance.get("git_commit") or "—")[:10]} for r in runs]
    lines = [heading(2, "provenance", "Provenance"), "",
             markdown(Table("", "", "", frame(rows))), ""]
    lines += [wrap(f"- **{label}**: {_settings(group[0].provenance)}", "  ")
              for label, group in _by_label(runs).items()]
    absent: dict[str, set] = {}
    for r in runs:
        if r.provenance.get("cuda_absent"):
            absent.setdefault(r.provenance["cuda_absent"], set()).add(r.tag)
    lines += [wrap(say(PROSE, "no_gpu", runs=span(tags), reason=reason), "  ")
              for reason, tags in sorted(absent.items())]
    return lines + [wrap(f"- Duplicate resolved: {note}.", "  ") for note in notes] + [""]


def _beside(p: dict) -> str | None:
    """What shared the machine with the run (`study run --jobs`): its wall-clock times
    include it."""
    shared = p.get("side_by_side")
    return f"{shared['jobs']} at a time, with {', '.join(shared['with'])}" if shared else None


def _settings(p: dict) -> str:
    gpu = p.get("gpu")
    gpu_text = (f"GPU {gpu.get('name')} (CUDA {gpu.get('torch_cuda_runtime')}, driver "
                f"{gpu.get('driver')}, cuDNN {gpu.get('cudnn')})" if isinstance(gpu, dict)
                else "no GPU")
    threads = p.get("threads", {})
    return (f"{p['host']}, {p.get('cpu', '—')} ({p.get('cpu_count', '—')} cores, "
            f"{p.get('torch_cpu_capability') or 'kernels not recorded'}), {gpu_text}; "
            f"{p.get('os', '—')}; Python {p.get('python', '—')}, numpy {p.get('numpy', '—')}, "
            f"jaxlib {p.get('jaxlib', '—')}, {_jax_backend(p)}; torch threads "
            f"{threads.get('torch_intra_op', '—')}/{threads.get('torch_inter_op', '—')}, "
            f"XLA_FLAGS '{threads.get('XLA_FLAGS', '')}'.")


def _jax_backend(p: dict) -> str:
    """The run's JAX backend, and the host's default where that differs. Provenance written
    before it recorded both (no jax_default_backend) recorded the host's default alone."""
    return say(PROSE, "jax_backend", recorded=p.get("jax_backend", "—"),
               default=p.get("jax_default_backend"), device=p["device"])


def _index(experiments, doc: Document) -> list[str]:
    lines = [heading(2, "tables", "Table index"), "", "| table | title | in | files |",
             "|---|---|---|---|"]
    for key, n in sorted(doc.numbers.items(), key=lambda kv: kv[1]):
        a, where = anchor(*key), doc.places[key]
        files = f"[md](tables/{a}.md) · [tex](tables/{a}.tex) · [csv](tables/{a}.csv)"
        link = f"#{a}" if where == "appendix" else f"REPORT.md#{a}"
        lines.append(f"| [{n}]({link}) | {doc.titles.get(key, 'no results yet')} | "
                     f"{'appendix' if where == 'appendix' else 'report'} | {files} |")
    lines += ["", say(PROSE, "listings"), ""]
    lines += [f"- [{anchor(*k)}.csv](tables/{anchor(*k)}.csv): {doc.titles[k]}"
              for k, where in doc.places.items() if where == "csv" and k in doc.titles]
    extra = ("failed-cases.csv", "cpu-vs-gpu-cells.csv", "reproduction-differences.csv")
    return lines + [f"- [{name}](tables/{name}): {say(PROSE, 'listed', file=name)}"
                    for name in extra if f"tables/{name}" in doc.files] + [""]


def render(runs: list[Run], notes: list[str], experiments, references: list[Run] | None = None,
           labels: dict[str, str] | None = None, figures: bool = True,
           code: dict | None = None) -> dict[str, str | bytes]:
    """{path under reports/: text or bytes}: REPORT.md, APPENDIX.md, labels.json and every
    table and figure file (figures=False: no PNG drawn). `code`: the commit and date of the code
    that renders (study.runs.provenance.code_commit), which REPORT.md states under its title."""
    return render_document(runs, notes, experiments, references, labels, figures, code).files


def render_document(runs: list[Run], notes: list[str], experiments,
                    references: list[Run] | None = None, labels: dict[str, str] | None = None,
                    figures: bool = True, code: dict | None = None) -> Document:
    """The rendered files (`.files`, as `render` returns them) and the experiments whose
    sections failed (`.errors`)."""
    from study.compare.device_comparison import host_gpu
    references = references or []
    labels = assign_labels(runs + references, labels or {})
    hosts = {r.path: host_gpu(r, runs) for r in runs if r.provenance["device"] == "cpu"}
    runs = labelled(runs, labels, {k: v for k, v in hosts.items() if v})
    references = [replace(r, title=r.tag) for r in labelled(references, labels)]
    places = {(e.name, t): place(e, t) for e in experiments for t in e.tables}
    places[(comparisons.DEVICES, "devices")] = "appendix"
    doc = Document(runs, number_tables(experiments), places, figures)
    body, appendix, method, answers = [], [], [], []
    for exp in experiments:
        exp_runs = [r for r in runs if r.experiment == exp.name]
        rendered, error = _rendered(exp, exp_runs)
        if error:
            doc.errors[exp.name] = error
        if rendered:
            doc.rendered[exp.name] = rendered
        answers += [(exp.name, a) for a in (rendered.answers if rendered else [])]
        main, extra, tables = _section(exp, exp_runs, rendered, error, doc)
        body, appendix, method = body + main, appendix + extra, method + tables
    doc.files["tables/failed-cases.csv"] = csv(Table("failed", "", "", frame(
        _failed(runs), ["experiment", "run", "case", "why"])))
    devices, device_appendix = comparisons.devices_section(runs, experiments, doc)
    head = [say(PROSE, "title"), "",
            wrap(say(PROSE, "head", code=code, cited=_newest_result(runs))), ""]
    doc.files["REPORT.md"] = "\n".join(
        head + _glossary(runs) + _answers(answers, doc) + _legend(runs) + body
        + comparisons.reproduction_section(runs, references, experiments, doc.files)
        + devices + _methodology(method)).rstrip() + "\n"
    doc.files[APPENDIX] = "\n".join(
        ["# Appendix", "", wrap(say(PROSE, "appendix_head")), ""]
        + _questions(experiments) + _index(experiments, doc) + appendix + device_appendix
        + _methodology_notes(runs)
        + _provenance(runs, notes)).rstrip() + "\n"
    doc.files[LABELS] = labels_json(labels)
    return doc


def write_report(files: dict[str, str | bytes], reports_dir: str) -> None:
    """Write every file atomically, then drop table and figure files that no longer exist."""
    from study.runs.atomic import write_text_atomically
    for sub in GENERATED_FOLDERS:
        os.makedirs(os.path.join(reports_dir, sub), exist_ok=True)
    for rel, content in files.items():
        write_text_atomically(os.path.join(reports_dir, rel), content)
    for sub in GENERATED_FOLDERS:
        for name in os.listdir(os.path.join(reports_dir, sub)):
            if f"{sub}/{name}" not in files:
                os.unlink(os.path.join(reports_dir, sub, name))

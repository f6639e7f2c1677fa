"""REPORT.md, APPENDIX.md and reports/tables/*: a pure function of the loaded runs.

REPORT.md: the six answers, the run legend, one section per experiment with its headline
tables, the reproduction verdict, CPU against GPU, the methodology with the harness checks.
APPENDIX.md: the table index (numbered tables, then CSV listings), the longer tables, the
provenance of every result file. An experiment whose tables raise shows a one-line error
there, the others render in full, and `Document.errors` names it (the CLI then exits 1).
"""
import os
import re
from dataclasses import dataclass, field, replace

import pandas as pd

from study.errors import first_error_line
from study.runs.experiment import QUESTIONS, Rendered
from study.report import comparisons
from study.report.appendix import index, methodology_notes, provenance, questions
from study.report.format import anchor, experiment_words, heading, wrap
from study.report.legend import by_label, glossary, legend, legend_line
from study.report.prose import macros, say
from study.report.runs import (assign_labels, label_order, labelled, labels_json, main_chosen,
                               main_label, older_code, older_noted, older_unsaid,
                               rows_in_one_order, span)
from study.report.table import Table, csv, error_coded, frame, latex, markdown
from study.runs.results import Run

APPENDIX = "APPENDIX.md"
GENERATED_FOLDERS = ("tables", "figures")  # everything in them is rewritten by each render
LABELS = "labels.json"
TEX_LEGEND_RUNS = 6
PROSE = macros("study/report/document.j2")
ERRORS = "Errors: "  # how a table's note names its error codes (study.report.table.error_coded)
_CODE = re.compile(r"(?<![A-Za-z0-9])E\d+\b")


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
    error_codes: list = field(default_factory=list)  # (an error's words, its code), as coded

    def coded(self, table: Table) -> Table:
        """The table with its error codes ('E1', each named in its 'Errors: ' note) numbered
        across the document, in the order tables render: an error keeps its code in every
        table and a code never names two errors (words that one table cuts, '…', where another
        goes on are one error's)."""
        local: dict[str, str] = {}
        notes = []
        for note in table.notes:
            if not note.startswith(ERRORS):
                notes.append(note)
                continue
            entries = re.findall(r"(E\d+): (.*?)(?=; E\d+: |$)", note[len(ERRORS):], flags=re.S)
            for code, said in entries:
                local[code] = self._error_code(said, set(local.values()))
            notes.append(ERRORS + "; ".join(f"{local[c]}: {said}" for c, said in entries))
        if not local:
            return table
        view = table.frame.copy()
        for col in view.columns:
            view[col] = pd.Series([_CODE.sub(lambda m: local.get(m.group(), m.group()), c)
                                   if isinstance(c, str) and _CODE.search(c) else c
                                   for c in view[col].tolist()], index=view.index, dtype=object)
        return replace(table, frame=view, notes=notes)

    def _error_code(self, said: str, taken: set[str]) -> str:
        words = said.rstrip("…").strip()
        for known, code in self.error_codes:
            if (known.startswith(words) or words.startswith(known)) and code not in taken:
                return code
        code = f"E{len({c for _, c in self.error_codes}) + 1}"
        self.error_codes.append((words, code))
        return code

    def link(self, key, source: str = "report") -> str:
        """The address of a table from a text in `source` ('report': REPORT.md, 'appendix':
        APPENDIX.md, 'tables': a file in tables/): '#anchor' where the table is in the same
        file, else the file's path from there."""
        target = "appendix" if self.places[key] == "appendix" else "report"
        if target == source:
            return f"#{anchor(*key)}"
        path = APPENDIX if target == "appendix" else "REPORT.md"
        return f"{'../' if source == 'tables' else ''}{path}#{anchor(*key)}"

    def cited(self, experiment: str, text: str, source: str = "report") -> str:
        """The text with each '[table:id]' it holds a link to that table of the experiment, as
        a text in `source` (`link`) addresses it."""
        return re.sub(r"\[table:(\w+)\]",
                      lambda m: self.cite((experiment, m.group(1)), source), text)

    def cite(self, key, source: str = "report") -> str:
        if self.places.get(key) == "csv":
            folder = "" if source == "tables" else "tables/"
            return f"[{anchor(*key)}.csv]({folder}{anchor(*key)}.csv)"
        return f"[Table {self.numbers[key]}]({self.link(key, source)})"

    def table(self, key, table: Table, runs: list[Run], older: list[str] | None = None
              ) -> list[str]:
        """The table's lines where it is shown, and its md, tex and csv files; a caption that
        leaves an older-code run the table shows unsaid ends by naming it, and so does a note
        (`older`: the older-code labels, where `runs` alone cannot tell them)."""
        a = anchor(*key)
        self.titles[key] = table.title
        if self.places[key] == "csv":  # a listing: its CSV alone, no view shown to code or caption
            self.files[f"tables/{a}.csv"] = csv(replace(table,
                                                        frame=rows_in_one_order(table.frame)))
            return []
        table = self.coded(error_coded(replace(table, frame=rows_in_one_order(table.frame))))
        older = older_code(runs) if older is None else older
        body = markdown(table)  # the frame is final here: only captions and notes change below
        unsaid = older_unsaid(table.caption, body, older)
        if unsaid:
            table = replace(table, caption=f"{table.caption.rstrip()} "
                            f"{say(PROSE, 'older_shown', runs=span(unsaid))}")
        table = replace(table, notes=[older_noted(n, older) for n in table.notes])
        own = replace(table, caption=self.cited(key[0], table.caption, "tables"),
                      notes=[self.cited(key[0], n, "tables") for n in table.notes])
        source = "appendix" if self.places[key] == "appendix" else "report"
        table = replace(table, caption=self.cited(key[0], table.caption, source),
                        notes=[self.cited(key[0], n, source) for n in table.notes])
        self.files[f"tables/{a}.csv"] = csv(table)
        n = self.numbers[key]
        legend = "; ".join(legend_line(g, self.runs) for g in by_label(runs).values())
        self.files[f"tables/{a}.md"] = "\n".join(
            [f"# Table {n}: {table.title}", "", wrap(f"*{own.caption}*"), "", body, ""]
            + [wrap(note) + "\n" for note in own.notes]
            + [wrap(f"Runs: {legend}."), "",
               wrap(f"Source: {', '.join(r.path for r in runs)}.")]) + "\n"
        # a caption past a few runs overflows TeX's box sizes: the .tex names the labels only
        short = (legend if len(by_label(runs)) <= TEX_LEGEND_RUNS else
                 say(PROSE, "tex_legend", runs=span(r.tag for r in runs)))
        self.files[f"tables/{a}.tex"] = latex(table, n, a, f"Runs: {short}." if legend else "")
        return ([heading(3, a, f"Table {n}: {table.title}"), "",
                 wrap(f"*{table.caption}*"), "", body, ""]
                + [wrap(note) + "\n" for note in table.notes])


def _newest_result(runs: list[Run]) -> str | None:
    return max((str(r.provenance["utc"])[:10] for r in runs), default=None)


def _answers(answers, doc: Document) -> list[str]:
    """Each question and its answer: a paragraph, the bullets its text marks (' |- '), each
    '[table:id]' it holds as a link to that table of its experiment, and the tables it cites."""
    lines = ["## Answers", ""]
    for i, question in enumerate(QUESTIONS, 1):
        words = say(PROSE, "question", key=question)
        mine = [(name, a) for name, a in answers if a.question == question]
        lines += [heading(3, f'answer-{question.replace("_", "-")}', f"{i}. {words}"), ""]
        if not mine:
            lines += [say(PROSE, "no_answer"), ""]
            continue
        cited = dict.fromkeys((name, t) for name, a in mine for t in a.tables)
        text = " ".join(doc.cited(name, a.text) for name, a in mine)
        if not re.search(r"\]\([^)]*#", text):  # no table cited inline: the answer's, after it
            text += " Tables: " + ", ".join(doc.cite(k) for k in cited if k in doc.places) + "."
        lead, *bullets = text.split(" |")
        lines += [wrap(lead)] + [wrap(b.strip(), "  ") for b in bullets] + [""]
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
    """A row per case that raised (status "failed", why: its error) and per erratum that
    withdrew rows of a run ("withdrawn": its table and rows, and why)."""
    out = []
    for run in runs:
        for rec in run.failures():
            out.append({"experiment": run.experiment, "run": run.tag, "status": "failed",
                        "case": _fields(rec["case"]), "why": rec["error"]})
        for table, rows, why in run.errata:
            out.append({"experiment": run.experiment, "run": run.tag, "status": "withdrawn",
                        "case": _fields({"table": table, **rows}), "why": why})
    return out


def _fields(fields: dict) -> str:
    return ", ".join(f"{k}={v}" for k, v in fields.items()
                     if v is not None and not isinstance(v, (list, dict)))


def _section(exp, runs, rendered, error, doc: Document) -> tuple[list, list, list]:
    """The experiment's lines in REPORT.md, in APPENDIX.md and in the Methodology."""
    words = experiment_words(exp.name)
    main = [heading(2, anchor(exp.name, "section"), f"{words}: {exp.description}"), ""]
    appendix, method = [heading(2, anchor(exp.name, "appendix"), words), ""], []
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
        main += [wrap(f"- {doc.cited(exp.name, finding.text)} "
                      f"({doc.cite((exp.name, finding.table))})", "  ")]
    main += [""] if rendered and rendered.findings else []
    numbers = [doc.numbers[(exp.name, t)] for t in exp.tables
               if doc.places[(exp.name, t)] == "appendix"]
    listings = [t for t in exp.tables if doc.places[(exp.name, t)] == "csv"]
    failed = _failed(runs)
    # one paragraph under the tables: where the rest is, which runs, how to rerun
    more = say(PROSE, "more", numbers=numbers, listings=len(listings),
               section=f"{APPENDIX}#{anchor(exp.name, 'appendix')}", index=f"{APPENDIX}#tables",
               exp=exp, failed=sum(f["status"] == "failed" for f in failed),
               withdrawn=sum(f["status"] == "withdrawn" for f in failed),
               failed_in=span(sorted({f["run"] for f in failed if f["status"] == "failed"},
                                     key=label_order)),
               withdrawn_in=span(sorted({f["run"] for f in failed if f["status"] == "withdrawn"},
                                        key=label_order)),
               runs=span(r.tag for r in runs))
    main += [wrap(more), ""] if more else []
    for name, (draw, alt) in (rendered.figures if rendered else {}).items():
        if doc.figures:
            doc.files[name] = draw()
        appendix += [f"![{alt}]({name})", ""]  # the figures draw what REPORT.md's tables print
    if len(appendix) == 2:  # no table or figure of this experiment is in the appendix
        appendix = []
    return main, appendix, method


def _methodology(tables: list[str]) -> list[str]:
    """The Methodology section, where an experiment places a table there (the head of REPORT.md
    points to the appendix's methodology notes either way)."""
    return ["## Methodology", "", wrap(say(PROSE, "methodology_pointer")), ""] + tables if tables \
        else []


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
    return _document(runs, notes, experiments, references, labels, figures, code)


def _document(runs, notes, experiments, references, labels, figures, code) -> Document:
    from study.compare.device_comparison import host_gpu
    references = references or []
    labels = assign_labels(runs + references, labels or {})
    hosts = {r.path: host_gpu(r, runs) for r in runs if r.provenance["device"] == "cpu"}
    runs = labelled(runs, labels, {k: v for k, v in hosts.items() if v})
    references = [replace(r, title=r.tag) for r in labelled(references, labels)]
    places = {(e.name, t): place(e, t) for e in experiments for t in e.tables}
    places[(comparisons.DEVICES, "devices")] = "appendix"
    doc = Document(runs, number_tables(experiments), places, figures)
    label = main_label(runs)
    main = next((r.provenance for r in runs if r.tag == label), None)
    with main_chosen(label, main):  # every experiment names the document's main run
        _written(doc, notes, experiments, references, code)
    doc.files[LABELS] = labels_json(labels)
    return doc


def _written(doc: Document, notes, experiments, references, code) -> None:
    """REPORT.md, APPENDIX.md and the tables' files into `doc.files`."""
    runs = doc.runs
    body, appendix, method, answers = [], [], [], []
    done = {exp.name: _rendered(exp, [r for r in runs if r.experiment == exp.name])
            for exp in experiments}
    for key in sorted(doc.numbers, key=doc.numbers.get):  # error codes in the tables' order
        rendered = done.get(key[0], (None, None))[0]
        for table in (t for t in (rendered.tables if rendered else []) if t.id == key[1]):
            doc.coded(error_coded(replace(table, frame=rows_in_one_order(table.frame))))
    for exp in experiments:
        exp_runs = [r for r in runs if r.experiment == exp.name]
        rendered, error = done[exp.name]
        if error:
            doc.errors[exp.name] = error
        if rendered:
            doc.rendered[exp.name] = rendered
        answers += [(exp.name, a) for a in (rendered.answers if rendered else [])]
        main, extra, tables = _section(exp, exp_runs, rendered, error, doc)
        body, appendix, method = body + main, appendix + extra, method + tables
    doc.files["tables/failed-cases.csv"] = csv(Table("failed", "", "", frame(
        _failed(runs), ["experiment", "run", "status", "case", "why"])))
    devices, device_appendix = comparisons.devices_section(runs, experiments, doc)
    reproduced, reproduction_appendix = comparisons.reproduction_section(
        runs, references, experiments, doc.files)
    head = [say(PROSE, "title"), "", wrap(say(PROSE, "head")), ""]
    colophon = say(PROSE, "rendered_by", code=code, cited=_newest_result(runs))
    doc.files["REPORT.md"] = "\n".join(
        head + glossary(runs, colophon, references) + _answers(answers, doc)
        + legend(runs, references) + body
        + reproduced + devices + _methodology(method)).rstrip() + "\n"
    doc.files[APPENDIX] = "\n".join(
        ["# Appendix", "", wrap(say(PROSE, "appendix_head")), ""]
        + questions(experiments) + index(experiments, doc) + appendix + device_appendix
        + reproduction_appendix
        + methodology_notes(runs)
        + provenance(runs, notes)).rstrip() + "\n"


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

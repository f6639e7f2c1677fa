"""What a careful reader checks of a report's words and runs: every term the glossary's term list
(study/report/terms.toml) holds is defined there before its first use; tables that merge runs
merge every row alike and list runs in label order; a run the legend marks as older code is
said to be older code wherever its numbers are cited; answers and captions name their runs.
Each function returns the places that fail (tests/report_reading.py reads the documents)."""
import re
import tomllib

from study.runs.results import REPO_ROOT
from tests.report_reading import (ANCHOR, LINK, SPAN, answer_items, findings, markdown_tables,
                                  notes_of, numbered_tables, numbers, paragraphs, printed,
                                  run_labels, sections, table_anchors)

TERMS = f"{REPO_ROOT}/study/report/terms.toml"
DTYPES = ("float16", "bfloat16", "float32", "float64")
LABEL = r"[CG]\d+(?:–[CG]\d+)?"
LABEL_LIST = re.compile(rf"(?<![\w–]){LABEL}(?:(?:, | and ){LABEL})+(?![\w–])")


def terms() -> list[dict]:
    """The term list the glossary is rendered from: name, uses (a pattern), definition."""
    with open(TERMS, "rb") as f:
        return tomllib.load(f)["term"]


def _order(label: str) -> tuple:
    return label[0], int(label[1:])


# --- terms before definitions --------------------------------------------------------------------

def undefined_terms(report: str, listed: list[dict] | None = None, appendix: str = "") -> list[str]:
    """Each listed term used in REPORT.md but not defined (in bold) in the glossary, or used
    before it, or used in APPENDIX.md and not defined there; a run label the glossary does not
    name; a custom rule the answers name whose name the glossary does not explain."""
    listed = terms() if listed is None else listed
    where = report.find("## Glossary")
    if where < 0 or where > report.find("## Answers"):
        return ["no glossary before the answers"]
    end = report.find("\n## ", where + 1)
    glossary = " ".join(report[where:end].split())
    rest = report[:where] + "\n" * (end - where) + report[end:]  # positions kept
    bad = []
    for term in listed:
        first = re.search(term["uses"], rest)
        if first is None:
            continue
        if f"**{term['name']}**" not in glossary:
            bad.append(f"{term['name']}: used, not defined ({_around(rest, first)})")
        elif first.start() < where:
            bad.append(f"{term['name']}: used before the glossary ({_around(rest, first)})")
    for term in listed:
        later = re.search(term["uses"], appendix)
        if later and f"**{term['name']}**" not in glossary:
            bad.append(f"{term['name']}: used in the appendix, not defined "
                       f"({_around(appendix, later)})")
    named = run_labels(glossary)
    bad += [f"run label {label}: not in the glossary"
            for label in sorted(run_labels(rest) - named, key=_order)]
    said = " ".join(text for _, text, _ in answer_items(report))
    bad += [f"rule {name}: in an answer, not in the glossary" for name in custom_rule_names()
            if name in said and _stem(name) not in glossary]
    if re.search(r"\bother code\b", rest):
        bad.append("'other code' where the legend says 'older code'")
    return bad


def _around(text: str, m: re.Match) -> str:
    return " ".join(text[max(0, m.start() - 30):m.end() + 30].split())


def custom_rule_names() -> list[str]:
    """The custom rules' display names, from the registry (a reader meets them in answers)."""
    from study.measure.rules import RULES
    return [r.name for r in RULES if r.kind == "custom"]


def _stem(name: str) -> str:
    """What names a rule's family: 'ReLUSavesBoolMask' of 'ReLUSavesBoolMask (c=0)'."""
    return re.split(r" ?\(| \+", name)[0]


# --- runs merged alike and listed in label order -------------------------------------------------

def runs_merged_and_ordered(report: str, appendix: str) -> list[str]:
    """Rows of a table that merges runs ('runs' column) that agree in every other cell, and
    lists of runs (in prose, a cell, a table's headers or its 'run' column) out of label
    order."""
    bad = []
    for header, rows in markdown_tables(report) + markdown_tables(appendix):
        if header[:1] == ["runs"]:
            seen: dict[tuple, str] = {}
            for r in rows:
                if tuple(r[1:]) in seen:
                    bad.append(f"rows of {seen[tuple(r[1:])]} and {r[0]} agree: "
                               f"{' | '.join(r[1:4])}")
                seen.setdefault(tuple(r[1:]), r[0])
            bad += _rows_out_of_order(header, rows)
        in_header = list(dict.fromkeys(label for cell in header for label in
                                       re.findall(r"\b[CG]\d+\b", cell)))
        if in_header != sorted(in_header, key=_order):
            bad.append(f"columns in the order {', '.join(in_header)}")
        if header[:1] == ["run"]:
            firsts = [_order(x) for r in rows for x in re.findall(r"[CG]\d+", _spread(r[0]))]
            if firsts != sorted(firsts):
                bad.append(f"rows in the order {', '.join(r[0] for r in rows)}: "
                           f"{' | '.join(header[:4])}")
            bad += _rows_in_another_order(header, rows)
    runs_item = re.search(r"^- \*\*Runs\*\*(.*?)(?=^- |^#|\Z)",
                          sections(report).get("Glossary", ""), flags=re.M | re.S)
    named = re.findall(r"\*\*([CG][\d, –CG]*)\*\*", runs_item.group(1)) if runs_item else []
    listed = [_order(x) for n in named for x in re.findall(r"[CG]\d+", _spread(n))]
    if listed != sorted(listed):
        bad.append(f"glossary's runs in the order {'; '.join(named)}")
    for text in paragraphs(report) + paragraphs(appendix):
        for m in LABEL_LIST.finditer(LINK.sub(r"\1", text)):
            listed = [_order(x) for x in re.findall(r"[CG]\d+", m.group())]
            if listed != sorted(listed) or len(set(listed)) < len(listed):
                bad.append(f"runs listed as {m.group()}: {text[:80]}")
    return bad


NUMERIC_CELL = re.compile(r"^(?:—|[-−]?(?:\d[\d.]*(?:e[-+]?\d+)?|NaN|inf)(?: \[[^\]]*\])?[†*]?)$")


def _rows_in_another_order(header: list[str], rows: list[list[str]]) -> list[str]:
    """A table with a 'run' column whose runs list the rows they share in different orders: a
    row is about its cells after 'run' up to the first column of numbers alone."""
    width = next((i for i in range(1, len(header)) if rows and all(
        NUMERIC_CELL.match(r[i]) for r in rows if len(r) > i)), len(header))
    if width < 2:
        return []
    order: dict[str, list[tuple]] = {}
    for r in rows:
        seen = order.setdefault(r[0], [])
        if tuple(r[1:width]) not in seen:
            seen.append(tuple(r[1:width]))
    first, *others = list(order.items()) or [("", [])]
    bad = []
    for run, keys in others:
        shared = [k for k in keys if k in first[1]]
        if shared != sorted(shared, key=first[1].index):
            bad.append(f"rows of {run} in another order than {first[0]}'s: "
                       f"{' | '.join(header[:width])}")
    return bad


def _spread(labels: str) -> str:
    """'C2, C8–C10' as 'C2, C8, C9, C10'."""
    return SPAN.sub(lambda m: ", ".join(f"{m.group(1)}{n}" for n in range(
        int(m.group(2)), int(m.group(3)) + 1)), labels)


def _rows_out_of_order(header: list[str], rows: list[list[str]]) -> list[str]:
    """A table merging runs: rows about one thing (its first column after the runs) that are not
    together, or that within it are not in label order of their first run."""
    bad, blocks = [], []
    for r in rows:
        if len(r) < 2:
            continue
        if blocks and blocks[-1][0] == r[1]:
            blocks[-1][1].append(r[0])
        else:
            blocks.append((r[1], [r[0]]))
    keys = [k for k, _ in blocks]
    bad += [f"rows of {header[1]} {k} apart: {' | '.join(header[:3])}"
            for k in dict.fromkeys(keys) if keys.count(k) > 1]
    for k, labels in blocks:
        firsts = [min((_order(x) for x in re.findall(r"[CG]\d+", _spread(a))), default=("", 0))
                  for a in labels]
        if firsts != sorted(firsts):
            bad.append(f"rows of {header[1]} {k} in the order {'; '.join(labels)}")
    return bad


# --- older code, said where its numbers are cited ------------------------------------------------

EXPERIMENT_HEADING = rf"^## {ANCHOR}([a-z][a-z ]*?)(?::| <a id=| *$)"  # '## two layer: ...'


def older_runs(report: str) -> dict[str, set[str]]:
    """label -> the experiments (in words, 'two layer') the run legend marks as older code."""
    every = set(re.findall(EXPERIMENT_HEADING, report, flags=re.M))
    out: dict[str, set[str]] = {}
    for header, rows in markdown_tables(sections(report).get("Runs", "")):
        if "older code" not in header:
            continue
        for r in rows:
            cell = r[header.index("older code")]
            marked = (every if cell.startswith("all ") else set() if cell == "—"
                      else {x.strip() for x in cell.split(",")})
            for label in run_labels(r[0]):
                out[label] = marked
    return out


def table_experiments(report: str, appendix: str) -> dict[int, str]:
    """Table number -> the experiment whose section (in either document) holds it."""
    out = {}
    for doc in (report, appendix):
        parts = re.split(rf"^## {ANCHOR}(.*)$", doc, flags=re.M)
        for heading, text in zip(parts[1::2], parts[2::2]):
            name = re.match(EXPERIMENT_HEADING, f"## {heading}")
            for n in re.findall(rf"^### {ANCHOR}Table (\d+):", text, flags=re.M):
                if name:
                    out[int(n)] = name.group(1)
    return out


def _older_rows(block: str, older: dict[str, set[str]]) -> tuple[set[str], set[str]]:
    """Of a table with an 'experiment' column: the runs its rows name that are older code for
    the row's experiment, and those of them whose row says 'older code'."""
    found, said = set(), set()
    for header, rows in markdown_tables(block):
        if "experiment" not in header:
            continue
        for r in rows:
            exp = r[header.index("experiment")]
            old = {x for x in run_labels(" ".join(r)) if exp in older.get(x, set())}
            found |= old
            said |= old if "older code" in " ".join(r) else set()
    return found, said


def older_code_unsaid(report: str, appendix: str) -> list[str]:
    """Each answer sentence, finding, note under a table, CPU-against-GPU sentence and
    Reproduction verdict that names a run the legend marks as older code for the experiment of
    a table it cites (or that it names), without saying so, or that cites only tables of
    older-code runs; each caption whose table shows an older-code run (for its section's
    experiment, or its row's) that its older-code clauses do not name; each row of an unnumbered
    table that names an older-code run for its row's experiment without saying so."""
    older = older_runs(report)
    of_table = table_experiments(report, appendix)
    anchors = table_anchors(report, appendix)
    tables = numbered_tables(report, appendix)
    def old_in(n: int) -> tuple[set, set]:  # (runs table n shows, those older code)
        shown = run_labels(printed(tables.get(n, "")))
        return shown, {x for x in shown if of_table.get(n) in older.get(x, set())} | (
            _older_rows(tables.get(n, ""), older)[0])
    def experiments(cited) -> set[str]:
        return {of_table.get(anchors.get(t.split("#")[-1])) for t in cited} - {None}
    def only_older(cited) -> bool:
        numbers = [anchors[t.split("#")[-1]] for t in cited if t.split("#")[-1] in anchors]
        return bool(numbers) and all(old_in(n)[0] and old_in(n)[0] == old_in(n)[1]
                                     for n in numbers)
    units = []
    for _, item, cited in answer_items(report):  # a sentence citing only older runs' tables
        units += [(s, experiments(cited), not run_labels(s) and only_older(
            [t for _, t in LINK.findall(s)] or cited))
            for s in re.split(r"(?<=\.)\s+(?=[A-Z])", item)]
    units += [(text, experiments(cited), not run_labels(text) and only_older(cited))
              for text, cited in findings(report)]
    for n, block in tables.items():
        units += [(note, {of_table.get(n)} - {None}, False) for note in notes_of(block)]
    for p in paragraphs(sections(report).get("CPU against GPU", "")):
        units += [(s, {s.split(":")[0]}, False) for s in re.split(r"(?<=\.)\s+(?=[A-Z])", p)]
    bad = []
    for text, exps, whole in units:
        unsaid = sorted((label for label in run_labels(text) if older.get(label, set()) & exps),
                        key=_order)
        if (unsaid or whole) and "older code" not in text:
            bad.append(f"{', '.join(unsaid) or 'only'} older code, unsaid: {text[:90]}…")
    for p in paragraphs(sections(report).get("Reproduction", "")):  # 'C1: 8 of 8 ...; G3: ...'
        for verdict in re.split(r";\s+(?=[CG]\d+\b)", p):
            rerun = re.match(r"(?:.*?:\s+)?([CG]\d+)\b[^:;]*:\s+\*\*\d+ of", verdict)
            if rerun and older.get(rerun.group(1)) and "older code" not in verdict.split("**")[0]:
                bad.append(f"{rerun.group(1)} older code, unsaid: {verdict[:90]}…")
    for n, block in tables.items():
        caption = re.search(r"^\*(.*?)\*$", block, flags=re.M | re.S)
        said = " ".join(caption.group(1).split()) if caption else ""
        covered = set().union(*(run_labels(c) for c in re.split(r";\s|\.\s|\.$", said)
                                if "older code" in c.lower()))
        unsaid = sorted(old_in(n)[1] - covered, key=_order)
        if unsaid:
            bad.append(f"Table {n} shows {', '.join(unsaid)}, older code, unsaid: {said[:90]}…")
    numbered = "".join(tables.values())
    for doc in (report, appendix):  # an unnumbered table's rows say it themselves
        for header, rows in markdown_tables(doc):
            block = "\n".join("| " + " | ".join(r) + " |" for r in [header, header] + rows)
            first = "| " + " | ".join(rows[0]) + " |" if rows else ""
            if "experiment" in header and first and first not in numbered:
                found, said = _older_rows(block, older)
                bad += [f"a row names {x}, older code, unsaid: {' | '.join(header[:3])}"
                        for x in sorted(found - said, key=_order)]
    return list(dict.fromkeys(bad))  # an answer's bullet is a finding too


# --- every answer and caption names its runs, releases and dtype ---------------------------------

def unnamed_runs(report: str, appendix: str) -> list[str]:
    """Answers that quote numbers without naming their runs, a release and a dtype; table
    captions that name no run, where the table has no runs column."""
    bad = []
    for question, text, _ in _answers(report):
        if not numbers(text):
            continue
        if not run_labels(text):
            bad.append(f"answer names no run: {question[:60]}")
        if not re.search(r"\b(torch|jax) \d", text):
            bad.append(f"answer names no release: {question[:60]}")
        if not any(d in text for d in DTYPES):
            bad.append(f"answer names no dtype: {question[:60]}")
    for n, block in numbered_tables(report, appendix).items():
        caption = re.search(r"^\*(.*?)\*$", block, flags=re.M | re.S)
        header = next((ln for ln in block.splitlines() if ln.startswith("| ")), "")
        by_run = re.search(r"\|\s*(?:\w+ )?runs?\s*\||\b[CG]\d+[: ]", header)
        if not by_run and not (caption and run_labels(caption.group(1))):
            bad.append(f"Table {n}: its caption names no run")
    return bad


def _answers(report: str) -> list[tuple[str, str, None]]:
    out: dict[str, list[str]] = {}
    for question, item, _ in answer_items(report):
        out.setdefault(question, []).append(item)
    return [(q, " ".join(items), None) for q, items in out.items()]

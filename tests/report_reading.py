"""What a careful reader checks in a rendered report, as functions of its markdown and CSV text:
each returns the places that fail, so a test asserts there are none and shows them where there
are. tests/test_report_reading.py runs them on the committed report and on tiny hand-made
reports; run on an older report, each class finds the places a reviewer listed:

    python -m tests.report_reading /tmp/old2/reports   # after `git archive 2a3b72d reports`

This module reads the documents (their parts, numbers, tables) and checks sentences against the
tables they cite; tests/report_reading_code.py checks for code where words belong, and
tests/report_reading_runs.py checks terms, runs and older code.
"""
import math
import os
import re
import sys

RUN_LABEL = re.compile(r"\b([CG])(\d+)\b")
SPAN = re.compile(r"\b([CG])(\d+)–\1(\d+)\b")
NUMBER = re.compile(r"(?<![\w.^/#-])[-−+]?\d+(?:\.\d+)?(?:e[-+]?\d+)?(?![\w.]?\d)")
LINK = re.compile(r"\[([^\]]*)\]\(([^)]*)\)")
CSV_NAME = re.compile(r"\b[\w-]+\.csv\b")
DTYPES = ("float16", "bfloat16", "float32", "float64")


def _plain(text: str) -> str:
    """Links as their words, run labels, seeds, dtypes and powers of ten out of the way."""
    text = LINK.sub(r"\1", text).replace("−", "-")
    text = re.sub(r"\bseeds? (\d{3}(/\d{3})*)", " ", text, flags=re.I)
    text = re.sub(r"\b(Tables?|Answer) \d+(–\d+)?", " ", text)
    text = SPAN.sub(" ", text)
    return RUN_LABEL.sub(" ", text)


def numbers(text: str) -> list[str]:
    """The numbers a sentence states, as written ('0.0004883', '-38', '10^6')."""
    plain = _plain(text)
    plain = re.sub(r"\b10\^(\d+)", lambda m: " " + str(10 ** int(m.group(1))) + " ", plain)
    plain = re.sub(r"\band \d+ more\b", " ", plain)  # 'and 2 more': names the sentence elides
    return [n.replace("−", "-").lstrip("+") for n in NUMBER.findall(plain)]


def _half_unit(written: str, figures: int) -> float:
    """How far a true value may lie from a number printed to `figures` significant figures, or
    to as many as it shows ('39' is 39.04 at 3 figures; '0.0004883' shows 4)."""
    x = abs(float(written))
    if x == 0:
        return 0.0
    shown = len(written.lower().lstrip("-").split("e")[0].replace(".", "").strip("0"))
    return 0.5 * 10.0 ** (math.floor(math.log10(x)) - max(figures, shown) + 1)


def printed_by(written: str, corpus_numbers: set[str]) -> bool:
    """Whether a number a sentence writes (3 significant figures) is one the corpus prints (4):
    the same text, or both roundings of one true value (0.814 and 0.8145 of 0.81447)."""
    if written in corpus_numbers:
        return True
    x = float(written)
    for y in corpus_numbers:
        try:
            if abs(float(y) - x) <= _half_unit(written, 3) + _half_unit(y, 4):
                return True
        except ValueError:
            continue
    return False


# --- the report's parts --------------------------------------------------------------------------

ANCHOR = r'(?:<a id="[^"]*"></a>)?'  # a heading's anchor, on its line
TRAILING_ANCHOR = r'\s*<a id="[^"]*"></a>\s*$'  # at a heading's end: '## Runs <a id="runs"></a>'


def sections(markdown: str) -> dict[str, str]:
    """'## Heading' -> its text (the heading without its anchor)."""
    parts = re.split(rf"^## {ANCHOR}(.+)$", markdown, flags=re.M)
    return {re.sub(TRAILING_ANCHOR, "", parts[i]): parts[i + 1]
            for i in range(1, len(parts) - 1, 2)}


def numbered_tables(*documents: str) -> dict[int, str]:
    """Table number -> its caption, body and notes, up to the next heading or bullet list."""
    out = {}
    for doc in documents:
        for m in re.finditer(rf"^### {ANCHOR}Table (\d+): (.*?)(?=^#|^- |^More:|^Runs:|^<a id|\Z)",
                             doc, flags=re.M | re.S):
            out[int(m.group(1))] = m.group(2)
    return out


def printed(block: str) -> str:
    """What a numbered table prints: its caption and rows, not the notes under it."""
    caption = re.search(r"^\*(.*?)\*$", block, flags=re.M | re.S)
    rows = [ln for ln in block.splitlines() if ln.startswith("|")]
    return "\n".join(([caption.group(1)] if caption else []) + rows)


def notes_of(block: str) -> list[str]:
    """The paragraphs under a numbered table's rows, each on one line."""
    lines = block.splitlines()
    last = max((i for i, ln in enumerate(lines) if ln.startswith("|")), default=len(lines))
    return [p for p in paragraphs("\n".join(lines[last + 1:]))
            if p and not p.startswith(("|", "!["))]  # a figure is no sentence


def paragraphs(text: str) -> list[str]:
    """Each table row alone, each paragraph of prose as one line (wrapping splits intervals)."""
    out, prose = [], []
    for line in text.splitlines() + [""]:
        if line.startswith("|") or not line.strip():
            out += [" ".join(prose)] if prose else []
            prose = []
            out += [line] if line.startswith("|") else []
        else:
            prose.append(line.strip())
    return out


def table_anchors(*documents: str) -> dict[str, int]:
    out = {}
    for doc in documents:
        # the anchor on the heading's line, or (before 2026-11-27) on the line above it
        for a, n in re.findall(r'^(?:### )?<a id="([^"]+)"></a>\n?(?:### )?Table (\d+):', doc,
                               flags=re.M):
            out[a] = int(n)
    return out


def answers(report: str) -> list[tuple[str, str, list[str]]]:
    """(question, answer text, cited targets) per answer: each target a link's address."""
    block = sections(report).get("Answers", "")
    out = []
    for m in re.finditer(rf"^### {ANCHOR}\d+\. (.*?)\n(.*?)(?=^### |\Z)", block,
                         flags=re.M | re.S):
        said, _, cited = " ".join(m.group(2).split()).rpartition(" Tables: ")
        out.append((m.group(1), said, [t for _, t in LINK.findall(cited)]))
    return out


def answer_items(report: str) -> list[tuple[str, str, list[str]]]:
    """(question, item, cited) per paragraph or bullet of each answer: an item cites the links
    it holds, or, where it holds none, the answer's closing 'Tables:' list."""
    block = sections(report).get("Answers", "")
    out = []
    for m in re.finditer(rf"^### {ANCHOR}\d+\. (.*?)\n(.*?)(?=^### |\Z)", block,
                         flags=re.M | re.S):
        body, listing, closing = m.group(2).rpartition("Tables: ")
        body, listed = (body, [t for _, t in LINK.findall(closing)]) if listing else (closing, [])
        items = re.split(r"\n\s*\n|\n(?=- )", body.strip())
        for item in (" ".join(i.split()) for i in items if i.strip()):
            own = [t for _, t in LINK.findall(item)]
            out.append((m.group(1), item.removeprefix("- "), own or listed))
    return out


def findings(report: str) -> list[tuple[str, list[str]]]:
    """Each bullet under a table that cites one: (its text, the addresses it links)."""
    out = []
    for m in re.finditer(r"^- (.*?)(?=^\S|\Z)", report, flags=re.M | re.S):
        said = " ".join(m.group(1).split())
        targets = [t for words, t in LINK.findall(said) if words.startswith("Table")
                   or t.endswith(".csv")]
        if targets:
            out.append((said, targets))
    return out


# --- sentences against the tables they cite ------------------------------------------------------

def _cited_csvs(text: str, cited: list[str]) -> list[str]:
    """The CSVs a sentence cites, by link or by name."""
    named = [os.path.basename(t) for t in cited if t.endswith(".csv")]
    return list(dict.fromkeys(named + CSV_NAME.findall(LINK.sub(r"\1", text))))


def _numbered(cited: list[str], anchors: dict[str, int]) -> list[int]:
    return [anchors[t.split("#")[-1]] for t in cited if t.split("#")[-1] in anchors]


def sentences_citing(reports_dir: str) -> list[tuple[str, list[int], list[str]]]:
    """(text, numbered tables it cites, CSVs it cites) of each answer item, finding, note under
    a table (which cites that table), and the CPU-against-GPU paragraph."""
    report, appendix = _read(reports_dir, "REPORT.md"), _read(reports_dir, "APPENDIX.md")
    anchors = table_anchors(report, appendix)
    out = [(text, _numbered(cited, anchors), _cited_csvs(text, cited))
           for _, text, cited in answer_items(report)]
    out += [(text, _numbered(cited, anchors), _cited_csvs(text, cited))
            for text, cited in findings(report)]
    for n, block in numbered_tables(report, appendix).items():
        for note in notes_of(block):
            cited = [t for _, t in LINK.findall(note)]
            out.append((note, [n] + _numbered(cited, anchors), _cited_csvs(note, cited)))
    devices = sections(report).get("CPU against GPU", "")
    for p in paragraphs(devices):
        if p and not p.startswith("|"):
            cited = [t for _, t in LINK.findall(p)]
            out.append((p, _numbered(cited, anchors), _cited_csvs(p, cited)))
    return out


def table_runs(block: str) -> set[str]:
    """The run labels a numbered table names: in its caption, its headers and its rows."""
    return run_labels(printed(block))


def unprinted_numbers(reports_dir: str) -> list[str]:
    """Each sentence's numbers that none of the numbered tables it cites prints (a CSV it cites
    does not count), a sentence with numbers that cites only CSVs, and a run label a sentence
    names that the tables it cites never show, where they show runs at all."""
    report, appendix = _read(reports_dir, "REPORT.md"), _read(reports_dir, "APPENDIX.md")
    tables = numbered_tables(report, appendix)
    bad = []
    for text, cited, csvs in sentences_citing(reports_dir):
        said = numbers(text)
        if said and csvs and not cited:
            bad.append(f"cites only {', '.join(dict.fromkeys(csvs))}: {text[:90]}…")
            continue
        corpus = set()
        for n in cited:
            corpus |= set(numbers(printed(tables.get(n, ""))))
        missing = [n for n in said if not printed_by(n, corpus)]
        if missing and cited:
            bad.append(f"{', '.join(missing)} not in Table {', '.join(map(str, cited))}: "
                       f"{text[:90]}…")
        shown = set().union(*(table_runs(tables.get(n, "")) for n in cited)) if cited else set()
        absent = sorted(run_labels(text) - shown, key=lambda s: (s[0], int(s[1:])))
        if shown and absent:
            bad.append(f"runs {', '.join(absent)} not in Table "
                       f"{', '.join(map(str, cited))}: {text[:90]}…")
    return bad + reproduction_verdicts(report, appendix)


def markdown_tables(text: str) -> list[tuple[list[str], list[list[str]]]]:
    """Each markdown table of a text: its header cells and its rows' cells."""
    out, rows = [], []
    for line in text.splitlines() + [""]:
        if line.startswith("|"):
            rows.append([c.strip() for c in re.split(r"(?<!\\)\|", line.strip())[1:-1]])
        elif rows:
            out.append((rows[0], [r for r in rows[2:]]))
            rows = []
    return out


def reproduction_verdicts(report: str, appendix: str = "") -> list[str]:
    """The Reproduction paragraph against the table of the reruns that did not reproduce: each
    run's 'k of m experiments reproduce' names every experiment that table lists for it, and
    says 'another CPU' where its reference ran on another CPU (by the run legend's machines)."""
    part = sections(report).get("Reproduction", "")
    said = " ".join(paragraphs(part)[0].split()) if paragraphs(part) else ""
    listed = "\n".join(text for heading, text in sections(appendix).items()
                       if heading.startswith("Reproduction"))
    shown = [t for t in markdown_tables(part + "\n" + listed)
             if t[0][:2] in (["experiment", "your run"], ["experiment", "rerun"])]
    rows = [dict(zip(h, r)) for h, body in shown for r in body]
    machines = legend_machines(report)
    bad = []
    verdicts = (r"\b([CG]\d+)(?: \([^)]*\))?: \*\*(\d+) of (\d+) experiments? reproduces?\*\*"
                r"((?:[^;.]|\.(?=\d))*)")  # to the clause's end: a decimal point goes on
    for m in re.finditer(verdicts, said):
        label, clause = m.group(1), m.group(0)
        mine = [r for r in rows if _label(r.get("rerun", r.get("your run", ""))) == label]
        unnamed = [r["experiment"] for r in mine if r["experiment"] not in clause]
        if unnamed:
            bad.append(f"{label}: the table lists {', '.join(unnamed)}, the verdict does not")
        if len(mine) != int(m.group(3)) - int(m.group(2)):
            bad.append(f"{label}: {len(mine)} rows against {m.group(3)} − {m.group(2)}")
        for r in mine:
            theirs = _label(r["reference run"])
            if (machines.get(label, "?").split(": ")[-1] != machines.get(theirs, "?").split(
                    ": ")[-1] and not re.search(r"another (?:CPU|GPU)", clause)):
                bad.append(f"{label} against {theirs}: another machine, unsaid")
                break
    return bad


def _label(cell: str) -> str:
    """The run label a cell leads with: 'C1' of 'C1, 2026-11-24 00:40 UTC (older code)'."""
    return re.split(r",| \(", cell)[0]


def legend_machines(report: str) -> dict[str, str]:
    """label -> its machine, from the run legend (a row of several labels gives each)."""
    out = {}
    for header, rows in markdown_tables(sections(report).get("Runs", "")):
        if header[:1] == ["run"] and "machine" in header:
            for r in rows:
                for label in run_labels(r[0]):
                    out[label] = r[header.index("machine")]
    return out


def run_labels(text: str) -> set[str]:
    text = LINK.sub(r"\1", text)
    out = {f"{p}{n}" for p, a, b in SPAN.findall(text) for n in range(int(a), int(b) + 1)}
    return out | {p + n for p, n in RUN_LABEL.findall(SPAN.sub(" ", text))}


def broken_links(reports_dir: str) -> list[str]:
    """Each link of REPORT.md, APPENDIX.md and tables/*.md whose file is missing, or whose
    '#anchor' no '<a id=...>' of the file it names holds ('(#a)': the file the link sits in)."""
    names = ["REPORT.md", "APPENDIX.md"] + [
        f"tables/{f}" for f in sorted(os.listdir(os.path.join(reports_dir, "tables")))
        if f.endswith(".md")]
    texts = {name: _read(reports_dir, name) for name in names}
    bad = []
    for name, text in texts.items():
        for _, target in LINK.findall(text):
            if re.match(r"[a-z]+:", target):
                continue  # a web address
            path, _, anchor = target.partition("#")
            where = os.path.normpath(os.path.join(os.path.dirname(name), path)) if path else name
            if not os.path.exists(os.path.join(reports_dir, where)):
                bad.append(f"{name}: {target}: no file {where}")
            elif anchor and where.endswith(".md") and f'<a id="{anchor}"></a>' not in texts.get(
                    where, _read(reports_dir, where)):
                bad.append(f"{name}: {target}: no anchor {anchor} in {where}")
    return bad


def csv_columns(reports_dir: str):
    """Each committed CSV's columns: (file name, header, the column's cells), as read back."""
    import csv
    folder = os.path.join(reports_dir, "tables")
    for name in sorted(f for f in os.listdir(folder) if f.endswith(".csv")):
        with open(os.path.join(folder, name), encoding="utf-8", newline="") as f:
            rows = list(csv.reader(f))
        for header, column in zip(rows[0], zip(*rows[1:])) if len(rows) > 1 else []:
            yield name, header, column


def cut_csv_cells(reports_dir: str) -> list[str]:
    """Each CSV column with a cell cut as a markdown cell is ('…', 'and 3 more'): a CSV is read
    whole."""
    bad = []
    for name, header, column in csv_columns(reports_dir):
        cut = next((c for c in column if "…" in c or re.search(r"\band \d+ more\b", c)), None)
        if cut is not None:
            bad.append(f"{name}: column {header} cuts {cut[-40:]}")
    return bad


COMMIT = re.compile(r"(?<![\w/.-])(?=[0-9a-f]*[a-f])(?=[0-9a-f]*\d)[0-9a-f]{7,40}(?![\w/.-])")


def commit_lengths(reports_dir: str) -> list[str]:
    """Commits written at more than one length in REPORT.md and APPENDIX.md ('f7ddc51' beside
    'f7ddc517d0'): a reader compares them by eye."""
    found: dict[int, str] = {}
    for name in ("REPORT.md", "APPENDIX.md"):
        for m in COMMIT.finditer(LINK.sub(r"\1", _read(reports_dir, name))):
            found.setdefault(len(m.group()), f"{name}: {m.group()}")
    return [] if len(found) <= 1 else [f"commits at {len(found)} lengths: "
                                        + ", ".join(found[n] for n in sorted(found))]


def long_lines(markdown: str, limit: int = 400) -> list[str]:
    return [ln[:80] + "…" for ln in markdown.splitlines() if len(ln) > limit]


def _read(reports_dir: str, name: str) -> str:
    """The document, each heading's anchor moved to its start (where reports before 2026-11-27
    wrote it), so one set of patterns reads both."""
    with open(os.path.join(reports_dir, name), encoding="utf-8") as f:
        return re.sub(r'^(#+ )(.*?) (<a id="[^"]+"></a>)$', r"\1\3\2", f.read(), flags=re.M)


def everything(reports_dir: str) -> dict[str, list[str]]:
    from tests import report_reading_code as code, report_reading_runs as runs
    report, appendix = _read(reports_dir, "REPORT.md"), _read(reports_dir, "APPENDIX.md")
    return {"sentences against the tables they cite": unprinted_numbers(reports_dir),
            "code where words belong": code.report_reprs(reports_dir),
            "terms before definitions": runs.undefined_terms(report, appendix=appendix),
            "runs merged and in label order": runs.runs_merged_and_ordered(report, appendix),
            "older code unsaid": runs.older_code_unsaid(report, appendix),
            "runs, releases, dtype": runs.unnamed_runs(report, appendix),
            "links that lead nowhere": broken_links(reports_dir),
            "CSV cells cut, commits at several lengths": cut_csv_cells(reports_dir)
            + commit_lengths(reports_dir),
            "lines over 400 characters": long_lines(report)}


if __name__ == "__main__":
    for family, places in everything(sys.argv[1]).items():
        print(f"{family}: {len(places)}")
        for p in places:
            print("   ", p)

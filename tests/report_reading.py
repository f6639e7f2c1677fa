"""What a careful reader checks in a rendered report, as functions of its markdown and CSV text:
each returns the places that fail, so a test asserts there are none and shows them where there
are. tests/test_report_reading.py runs them on the committed report and on tiny hand-made
reports; run on the report of commit 0eaa931 each class finds the places the issue listed:

    python -m tests.report_reading /tmp/old/reports   # after `git archive 0eaa931 reports`
"""
import math
import os
import re
import sys

RUN_LABEL = re.compile(r"\b([CG])(\d+)\b")
SPAN = re.compile(r"\b([CG])(\d+)–\1(\d+)\b")
NUMBER = re.compile(r"(?<![\w.^/#-])[-−+]?\d+(?:\.\d+)?(?:e[-+]?\d+)?(?![\w.]?\d)")
LINK = re.compile(r"\[([^\]]*)\]\(([^)]*)\)")
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


def sections(markdown: str) -> dict[str, str]:
    """'## Heading' -> its text."""
    parts = re.split(rf"^## {ANCHOR}(.+)$", markdown, flags=re.M)
    return {parts[i]: parts[i + 1] for i in range(1, len(parts) - 1, 2)}


def numbered_tables(*documents: str) -> dict[int, str]:
    """Table number -> its caption, body and notes, up to the next heading or bullet list."""
    out = {}
    for doc in documents:
        for m in re.finditer(rf"^### {ANCHOR}Table (\d+): (.*?)(?=^#|^- |^More:|^<a id|\Z)", doc,
                             flags=re.M | re.S):
            out[int(m.group(1))] = m.group(2)
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


def corpus(target: str, tables: dict[int, str], anchors: dict[str, int], reports_dir: str
           ) -> str:
    """What a cited target prints: a numbered table's text, or a CSV file's."""
    anchor = target.split("#")[-1]
    if anchor in anchors:
        return tables.get(anchors[anchor], "")
    if target.endswith(".csv"):
        path = os.path.join(reports_dir, target)
        return open(path, encoding="utf-8").read() if os.path.exists(path) else ""
    return ""


def table_anchors(*documents: str) -> dict[str, int]:
    out = {}
    for doc in documents:
        # the anchor on the heading's line, or (before 2026-11-27) on the line above it
        for a, n in re.findall(r'^(?:### )?<a id="([^"]+)"></a>\n?(?:### )?Table (\d+):', doc,
                               flags=re.M):
            out[a] = int(n)
    return out


# --- the four classes ----------------------------------------------------------------------------

def unprinted_numbers(reports_dir: str) -> list[str]:
    """Each answer or finding's numbers that none of the tables or CSVs it cites prints."""
    report, appendix = _read(reports_dir, "REPORT.md"), _read(reports_dir, "APPENDIX.md")
    tables, anchors = numbered_tables(report, appendix), table_anchors(report, appendix)
    said = [(text, cited) for _, text, cited in answers(report)] + findings(report)
    bad = []
    for text, cited in said:
        printed = set()
        for target in cited:
            printed |= set(numbers(corpus(target, tables, anchors, reports_dir)))
        missing = [n for n in numbers(text) if not printed_by(n, printed)]
        if missing:
            bad.append(f"{', '.join(missing)} in: {text[:100]}…")
    return bad


ERROR_TEXT = re.compile(r"\b(?:[A-Z]\w*(?:Error|Exception)|Unsupported|NotInRelease)\b:.*?"
                        r"(?=\||;\s|$)", re.M)
REPRS = {
    "a list literal": re.compile(r"(?<![\w\])])\[\[?\s*[-+]?(?:\d|nan|inf)"),
    "None": re.compile(r"\bNone\b"),
    "a float's repr 'nan'": re.compile(r"(?<![+\-\w])nan\b"),
    "a key=value pair": re.compile(r"\b[a-z][a-z_]+=\S"),
    "a membership test": re.compile(r"\bc in [-+\d{]"),
    "a set or dict literal": re.compile(r"\{[^}]*[:,][^}]*\}"),
}
INTERVAL = re.compile(r"[-+]?\d[\d.e+-]* \[[-+]?\d[\d.e+-]*, [-+]?\d[\d.e+-]*\]")


def reprs(text: str) -> list[str]:
    """Python's spellings where a reader expects words: a list literal (an interval, 'value
    [lo, hi]', is not one), None, nan, key=value outside a call's parentheses, 'c in 0.5', a set;
    quoted error messages, code spans and link addresses are left as they are."""
    bad = []
    for line in _paragraphs(text):
        plain = re.sub(r"<[^>]*>", " ", LINK.sub(r"\1", line))
        plain = re.sub(r"`[^`]*`", " ", plain)
        plain = ERROR_TEXT.sub(" ", plain)
        plain = INTERVAL.sub(" ", plain)
        while re.search(r"\([^()]*\)", plain):  # a call's arguments: torch.clamp(x, min=0)
            plain = re.sub(r"\([^()]*\)", " ", plain)
        bad += [f"{what}: {line.strip()[:120]}" for what, pattern in REPRS.items()
                if pattern.search(plain)]
    return bad


def _paragraphs(text: str) -> list[str]:
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


def report_reprs(reports_dir: str) -> list[str]:
    return [f"{name}: {b}" for name in ("REPORT.md", "APPENDIX.md")
            for b in reprs(_read(reports_dir, name))]


# Each family of terms: what a use looks like, and what its definition in the glossary names.
TERMS = {
    "seeds": (r"\bseeds? 00\d", r"seed 000.*001.*002|000, 001, 002|000/001/002"),
    "input labels": (r"[+\-−]nan\b|min_subnormal|min_normal|\d[−-]ulp|\d\+ulp", r"min_subnormal"),
    "k-ulp": (r"\d[−-]ulp|\d\+ulp", r"k[−-]ulp"),
    "placement": (r"\bplacement", r"\*\*placement\*\*"),
    "c": (r"\bc ?= ?[\d.]|\bc=", r"\*\*c\*\*"),
    "eager": (r"\beager\b", r"\*\*eager\*\*"),
    "compiled": (r"\bcompiled\b", r"\*\*compiled\*\*"),
    "op-by-op": (r"\bop-by-op\b", r"op-by-op"),
    "datasets": (r"random_no_ties|random_ties|continuous_ties", r"random_no_ties"),
    "older code": (r"\b(?:older|other) code\b", r"\*\*older code\*\*"),
}


def undefined_terms(report: str) -> list[str]:
    """Terms used in REPORT.md without a definition in its glossary, which precedes the answers;
    a run label used anywhere that the glossary does not name; the same thing under two names."""
    parts = sections(report)
    glossary = parts.get("Glossary", "")
    where = report.find("## Glossary")
    if where < 0 or where > report.find("## Answers"):
        return ["no glossary before the answers"]
    rest = report[:where] + report[report.find("\n## ", where + 1):]
    bad = [f"{family}: used, not defined" for family, (use, definition) in TERMS.items()
           if re.search(use, rest) and not re.search(definition, glossary, flags=re.S)]
    named = run_labels(glossary)
    bad += [f"run label {label}: not in the glossary" for label in sorted(
        run_labels(rest) - named)]
    if re.search(r"\bother code\b", rest):
        bad.append("'other code' where the legend says 'older code'")
    return bad


def run_labels(text: str) -> set[str]:
    text = LINK.sub(r"\1", text)
    out = {f"{p}{n}" for p, a, b in SPAN.findall(text) for n in range(int(a), int(b) + 1)}
    return out | {p + n for p, n in RUN_LABEL.findall(SPAN.sub(" ", text))}


def unnamed_runs(report: str, appendix: str) -> list[str]:
    """Answers that quote numbers without naming their runs, a release and a dtype; table
    captions that name no run, where the table has no runs column."""
    bad = []
    for question, text, _ in answers(report):
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


def long_lines(markdown: str, limit: int = 400) -> list[str]:
    return [ln[:80] + "…" for ln in markdown.splitlines() if len(ln) > limit]


def _read(reports_dir: str, name: str) -> str:
    """The document, each heading's anchor moved to its start (where reports before 2026-11-27
    wrote it), so one set of patterns reads both."""
    with open(os.path.join(reports_dir, name), encoding="utf-8") as f:
        return re.sub(r'^(#+ )(.*?) (<a id="[^"]+"></a>)$', r"\1\3\2", f.read(), flags=re.M)


def everything(reports_dir: str) -> dict[str, list[str]]:
    report, appendix = _read(reports_dir, "REPORT.md"), _read(reports_dir, "APPENDIX.md")
    return {"numbers not in the cited tables": unprinted_numbers(reports_dir),
            "reprs": report_reprs(reports_dir),
            "terms": undefined_terms(report),
            "runs, releases, dtype": unnamed_runs(report, appendix),
            "lines over 400 characters": long_lines(report)}


if __name__ == "__main__":
    for family, places in everything(sys.argv[1]).items():
        print(f"{family}: {len(places)}")
        for p in places:
            print("   ", p)

"""Code where a reader expects words, in a rendered report: Python's and the frameworks' reprs,
the study's own exception names and class paths, tuples, identifiers that are no API name and no
term the report defines (REPORT.md, APPENDIX.md and the tables' .md), and a CSV column that writes
whole numbers two ways. Each function returns the places that fail."""
import os
import re

from tests.report_reading import LINK, _read, csv_columns, paragraphs, sections

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
# Python's and the frameworks' reprs, found in quoted errors too
OBJECT_REPRS = {
    "an object's repr": re.compile(r"\b[A-Z]\w*\((?:lvl|value)=|<class '|\b\w+Variable\("),
    "a class path": re.compile(r"\bstudy\.\w+\.[A-Z]\w*"),
}
TUPLE = re.compile(r"(?<![\w)\]])\(\s*[-+−]?[\d.]+(?:e[-+]?\d+)?(?:\s*,\s*[-+−]?[\d.]+"
                   r"(?:e[-+]?\d+)?)+\s*\)")
INTERVAL = re.compile(r"[-+]?\d[\d.e+-]* \[[-+]?\d[\d.e+-]*, [-+]?\d[\d.e+-]*\]")
IDENTIFIER = re.compile(r"(?<![\w.`/-])[a-z][a-z0-9]*(?:_[a-z0-9]+)+_?(?![\w(`/-])"
                        r"(?! \()")
# the frameworks' API names the report writes as a reader types them
API = {"grad_output", "custom_vjp", "custom_jvp", "nondiff_argnums", "setup_context",
       "generate_vmap_rule", "register_autograd", "register_vmap", "once_differentiable",
       "detect_anomaly", "check_grads", "custom_op", "index_put_", "masked_fill_", "hard_swish",
       "relu6", "jax_enable_x64", "forward_ad"}


def _without_code(line: str) -> str:
    plain = re.sub(r"<[^>]*>", " ", LINK.sub(r"\1", line))
    return re.sub(r"`[^`]*`", " ", plain)


def _without_calls(text: str) -> str:
    """What a call's parentheses hold blanked, the parentheses kept: torch.clamp( ), relu( )."""
    out, depth = [], 0
    for i, ch in enumerate(text):
        if ch == "(" and (depth or (i and (text[i - 1].isalnum() or text[i - 1] in "_.]"))):
            out.append(ch if not depth else " ")
            depth += 1
            continue
        if ch == ")" and depth:
            depth -= 1
            out.append(ch if not depth else " ")
            continue
        out.append(" " if depth else ch)
    return "".join(out)


def reprs(text: str, names: set[str] = frozenset()) -> list[str]:
    """Python's spellings where a reader expects words: a list literal (an interval, 'value
    [lo, hi]', is not one), None, nan, key=value outside a call's parentheses, 'c in 0.5', a set,
    a tuple '(0.5, 0.5)', an object's repr or a class path (in a quoted error too), the study's
    own exception names, and an identifier (fwd_bwd, grad_w1) that is no API name, no term the
    glossary defines and no section's name (`names`); code spans and link addresses are left as
    they are, and quoted error messages but for reprs."""
    bad = []
    own = study_exceptions()
    for line in paragraphs(text):
        plain = _without_code(line)
        bad += [f"{what}: {line.strip()[:120]}" for what, pattern in OBJECT_REPRS.items()
                if pattern.search(plain)]
        bad += [f"the study's exception {e}: {line.strip()[:120]}" for e in sorted(own)
                if re.search(rf"\b{e}\b", plain)]
        plain = ERROR_TEXT.sub(" ", plain)
        plain = INTERVAL.sub(" ", plain)
        calls = _without_calls(plain)
        bad += [f"a tuple {m.group()}: {line.strip()[:120]}" for m in TUPLE.finditer(calls)]
        bad += [f"an identifier {m.group()}: {line.strip()[:120]}" for m in
                IDENTIFIER.finditer(calls) if m.group() not in API | set(names)]
        while re.search(r"\([^()]*\)", plain):  # a call's arguments: torch.clamp(x, min=0)
            plain = re.sub(r"\([^()]*\)", "_", plain)  # jnp.sort(x)[2]: no list
        bad += [f"{what}: {line.strip()[:120]}" for what, pattern in REPRS.items()
                if pattern.search(plain)]
    return bad


def study_exceptions() -> set[str]:
    """The exception classes the study defines: their names are code a reader cannot look up."""
    from study.runs.results import REPO_ROOT
    found = set()
    for root, _, files in os.walk(os.path.join(REPO_ROOT, "study")):
        for name in (f for f in files if f.endswith(".py")):
            with open(os.path.join(root, name), encoding="utf-8") as f:
                found |= set(re.findall(r"^class (\w+)\((?:\w*Error|Exception|\w+Error)\)",
                                        f.read(), flags=re.M))
    return found


def defined_names(report: str) -> set[str]:
    """Words the report itself names: the glossary's terms (an experiment's key, such as
    two_layer, is no word: its sections and lists name it in words)."""
    glossary = sections(report).get("Glossary", "")
    return set(re.findall(r"[a-z][a-z0-9]*(?:_[a-z0-9]+)+", glossary))


def report_reprs(reports_dir: str) -> list[str]:
    names = defined_names(_read(reports_dir, "REPORT.md"))
    documents = [(name, _read(reports_dir, name)) for name in ("REPORT.md", "APPENDIX.md")]
    folder = os.path.join(reports_dir, "tables")
    documents += [(f"tables/{f}", _read(folder, f)) for f in sorted(os.listdir(folder))
                  if f.endswith(".md")]
    return [f"{name}: {b}" for name, text in documents for b in reprs(text, names)] + \
        mixed_number_texts(reports_dir)


def mixed_number_texts(reports_dir: str) -> list[str]:
    """A CSV column that writes whole numbers two ways ('1.0' beside '0'): pandas reads it
    back alike, a reader of the file does not."""
    bad = []
    for name, header, column in csv_columns(reports_dir):
        if not all(_is_number(c) for c in column if c):
            continue  # a column of labels ('-0.0', '3-ulp') or text
        point = [c for c in column if re.fullmatch(r"-?\d+\.0", c)]
        whole = [c for c in column if re.fullmatch(r"-?\d+", c)]
        if point and whole:
            bad.append(f"{name}: column {header} writes {point[0]} beside {whole[0]}")
    return bad


def _is_number(cell: str) -> bool:
    try:
        float(cell)
    except ValueError:
        return False
    return True



"""The committed report is exactly what the result files it lists render to, and it is readable.

The committed report is rendered from the result files its Provenance section names (so the
test holds whatever other files a host has in reports/results/), with the committed
reference; the purity test renders the same with every measurement constant in code poisoned.
"""
import csv
import io
import json
import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass

import pytest

import experiments
from study import report, results
from study.tables import (Table, collapse_rows, column, format_cell, headers, key_headers,
                          latex_escape, listed, row_cells, shorten, to_csv, to_latex, to_markdown)
from study.cells import Value, pair_texts
from study.experiment import QUESTIONS
from tests.conftest import listed_result_files, load_listed, reference_runs

REPORTS = os.path.join(results.REPO_ROOT, "reports")
MAX_LINE = 400


def committed_inputs():
    with open(os.path.join(REPORTS, report.APPENDIX), encoding="utf-8") as f:
        listed = listed_result_files(f.read())
    return load_listed(listed, REPORTS), reference_runs()


def _render():
    runs, refs = committed_inputs()
    return report.render(runs, [], experiments.all_experiments(), refs)


@pytest.fixture(scope="module")
def committed():
    return _render()


def test_committed_report_is_exactly_what_its_committed_results_render_to(committed):
    # `study report` wrote these files in another process, so this is also the determinism check
    for rel, content in committed.items():
        with open(os.path.join(REPORTS, rel), "rb") as f:
            on_disk = f.read()
        if rel.endswith(".png"):  # matplotlib's bytes vary by release: check it is the picture
            assert on_disk[:8] == b"\x89PNG\r\n\x1a\n" and on_disk[16:24] == content[16:24], rel
            continue
        assert on_disk == content.encode("utf-8"), f"reports/{rel} is stale: run `python -m study report`"
    for sub in report.GENERATED_FOLDERS:
        for name in os.listdir(os.path.join(REPORTS, sub)):
            assert f"{sub}/{name}" in committed, f"reports/{sub}/{name} is left over"


BASELINE_KERNELS = {"NPY_DISABLE_CPU_FEATURES": "X86_V4,AVX512_ICL", "OPENBLAS_CORETYPE": "Haswell"}


@pytest.mark.slow
def test_committed_report_renders_the_same_with_numpys_baseline_kernels():
    # The committed report was rendered on some CPU; on another, numpy and OpenBLAS dispatch to
    # other SIMD kernels, whose last bits differ. A host with AVX-512 renders here once with
    # those kernels switched off (elsewhere the variables change nothing and this is a second
    # process's render): every text file must come out byte for byte the same.
    code = ("import json, sys; from study import report; from tests.test_report import "
            "committed_inputs; import experiments; runs, refs = committed_inputs(); "
            "files = report.render(runs, [], experiments.all_experiments(), refs, figures=False); "
            "json.dump({k: v for k, v in files.items() if isinstance(v, str)}, sys.stdout)")
    out = subprocess.run([sys.executable, "-c", code], cwd=results.REPO_ROOT, check=True,
                         capture_output=True, text=True, env={**os.environ, **BASELINE_KERNELS})
    rendered = json.loads(out.stdout)
    assert rendered
    for rel, content in rendered.items():
        with open(os.path.join(REPORTS, rel), encoding="utf-8") as f:
            assert f.read() == content, f"reports/{rel} differs under {BASELINE_KERNELS}"


def _expand(ranges: str) -> set[int]:
    out = set()
    for part in filter(None, ranges.split(", ")):
        lo, _, hi = part.partition("–")
        out |= set(range(int(lo), int(hi or lo) + 1))
    return out


def test_number_ranges_joins_consecutive_numbers():
    assert report.number_ranges([34, 30, 31, 32]) == "30–32, 34"
    assert _expand("30–32, 34") == {30, 31, 32, 34}


def test_contents_link_every_table_before_the_answers_and_the_index_gives_its_files(committed):
    text = committed["REPORT.md"]
    contents = text.split("## Contents", 1)[1].split("## Answers", 1)[0]
    index = committed["APPENDIX.md"].split("## Table index", 1)[1].split("\n## ", 1)[0]
    linked = set()
    for here, there in re.findall(r"^\| \w+ \| (.*) \| (.*) \|$", contents, re.M):
        linked |= {int(n) for n in re.findall(r"\[(\d+)\]\(#", here)}
        linked |= _expand(m.group(1)) if (m := re.match(r"\[([\d–, ]+)\]\(APPENDIX", there)) else set()
    numbers = report.number_tables(experiments.all_experiments())
    assert linked == set(numbers.values())
    for (exp, tid), n in numbers.items():
        a = report.anchor(exp, tid)
        assert f"| [{n}](REPORT.md#{a}) |" in index or f"| [{n}](#{a}) |" in index, a
        if f"tables/{a}.md" in committed:
            assert f"[md](tables/{a}.md) · [tex](tables/{a}.tex) · [csv](tables/{a}.csv)" in index


def test_every_section_opens_with_its_question_and_rerun_command(committed):
    text = committed["REPORT.md"]
    for exp in experiments.all_experiments():
        section = text.split(f"## {exp.name}: ", 1)[1]
        assert " ".join(section.split("\n\n")[1].split()) == f"*Question:* {exp.question}"
        assert f"*Rerun:* `python -m study run {exp.name}`" in section.split("\n\n")[2]


def test_no_markdown_line_is_longer_than_a_screen(committed):
    for rel, content in committed.items():
        if rel.endswith(".md"):
            long = [ln[:80] for ln in content.splitlines() if len(ln) > MAX_LINE]
            assert not long, (rel, long[:3])


def test_every_table_has_a_number_caption_anchor_and_source_in_the_report_or_appendix(committed):
    text = committed["REPORT.md"] + committed[report.APPENDIX]
    for (exp, tid), n in report.number_tables(experiments.all_experiments()).items():
        assert f'<a id="{report.anchor(exp, tid)}"></a>\n### Table {n}: ' in text


def test_the_report_answers_first_and_stays_short():
    # the committed reference, whatever a rerun has added to reports/results/ since
    refs = reference_runs()
    text = report.render(refs, [], experiments.all_experiments(), refs, figures=False)["REPORT.md"]
    assert len(text.splitlines()) <= 800
    assert text.index("## Answers") < text.index("## Runs") < text.index("## Findings")
    answers = text.split("## Answers", 1)[1].split("\n## ", 1)[0]
    subsections = answers.split("\n### ")[1:]
    assert len(subsections) == len(QUESTIONS) == 6
    for sub in subsections:
        assert "Tables: [Table " in sub, sub[:80]
        body = sub.split("\n\n")[1]
        assert len(re.findall(r"[.)] (?=[A-Z])", body)) <= 3, body[:200]  # at most 4 sentences


def test_a_standalone_table_shows_its_caption_and_run_legend_as_text(committed):
    md = committed["tables/two-layer-ties.md"]
    assert "<!--" not in md and md.startswith("# Table ")
    caption = md.split("\n\n")[1]
    assert caption.startswith("*Over every ReLU rule")
    assert "Runs (labels as in the report's run legend):" in md and "\n- C1: cpu, " in md
    assert "Runs: C1: cpu, " in committed["tables/two-layer-ties.tex"]


def test_a_table_without_results_keeps_its_number():
    files = report.render([], [], experiments.all_experiments())
    assert "### Table 1: no results yet" in files[report.APPENDIX]  # Table 1 lives there
    assert "### Table 2: no results yet" in files["REPORT.md"]


def test_an_experiment_whose_tables_raise_is_one_line_and_the_rest_renders():
    import dataclasses
    runs = [r for r in reference_runs() if r.experiment in ("two_layer", "clone_hazard")]

    def boom(summary):
        raise KeyError("planted\nsecond line")
    exps = [dataclasses.replace(e, render=boom) if e.name == "two_layer" else e
            for e in experiments.all_experiments()]
    text = report.render(runs, [], exps, figures=False)["REPORT.md"]
    line = next(ln for ln in text.splitlines() if ln.startswith("**error:** the tables of `two_layer`"))
    assert "KeyError" in line and "planted" in line
    later = report.number_tables(exps)[("clone_hazard", "hazard")]
    assert "## clone_hazard:" in text and f"### Table {later}: " in text  # a later one renders


def test_csv_cells_are_numbers_at_full_precision_and_empty_when_missing():
    t = Table("t", "T", "cap", ["a", "b|c", "c"], [[1.2345678901, "x, y", [1.0, 2.5]], [-0.0, None, 3]])
    rows = list(csv.reader(io.StringIO(to_csv(t))))
    assert rows == [["a", "b|c", "c"], ["1.2345678901", "x, y", "[1.0, 2.5]"], ["-0", "", "3"]]
    assert float(rows[1][0]) == 1.2345678901
    assert "b\\|c" in to_markdown(t) and "1.235" in to_markdown(t)


def test_cells_keep_the_sign_of_zero_and_four_significant_figures():
    assert [format_cell(v) for v in (-0.0, 0.0, float("nan"), float("-inf"), None, True, 1234.5678)] \
        == ["-0", "0", "nan", "-inf", "—", "yes", "1235"]


def test_four_figure_cells_stay_plain_decimals_in_the_readable_range():
    # 23549.7 to 4 figures is 23550; only values outside [1e-4, 1e7) use an exponent
    assert [format_cell(v) for v in (23549.7, 0.00012346, 1.5e-5, 2.5e8, 6.0078125)] \
        == ["23550", "0.0001235", "1.5e-05", "2.5e+08", "6.008"]


@dataclass
class _Cell:
    framework: str = column("framework", key=True)
    op: str = column("op", key=True)
    dtype: str = column("dtypes")
    mode: str = column("modes")
    value: int = column("value")


def test_collapsed_rows_list_what_differs():
    rows = [_Cell("torch", "op", "float16", "reverse", 1), _Cell("torch", "op", "float32", "reverse", 1),
            _Cell("torch", "op", "float32", "forward", 1), _Cell("torch", "op", "float32", "forward", 2)]
    # the first three differ only in dtype or mode; the fourth has another value
    assert collapse_rows(rows, ("dtype", "mode")) == [
        _Cell("torch", "op", "float16, float32", "reverse, forward", 1),
        _Cell("torch", "op", "float32", "forward", 2)]
    # into a subclass that names the merged columns: the same values, the subclass's type
    merged = collapse_rows(rows, ("dtype", "mode"), into=_MergedCell)
    assert [type(r) for r in merged] == [_MergedCell] * 2
    assert row_cells(merged[0]) == ["torch", "op", "float16, float32", "reverse, forward", 1]


@dataclass
class _MergedCell(_Cell):
    value: int = column("merged value")


@dataclass
class _PerSize:
    rule: str = column("rule", key=True)
    times: dict = column()


def test_a_row_dataclass_names_its_columns_and_its_key():
    assert headers(_Cell) == ["framework", "op", "dtypes", "modes", "value"]
    assert key_headers(_Cell) == ("framework", "op")
    assert row_cells(_Cell("jax", "relu", "float32", "reverse", 0)) == [
        "jax", "relu", "float32", "reverse", 0]
    # a field without a header gives a column per key of its dict, the same in every row
    rows = [_PerSize("a", {"10^3": 1.0, "10^6": 2.0}), _PerSize("b", {"10^3": 3.0, "10^6": None})]
    assert listed(_PerSize, rows) == (["rule", "10^3", "10^6"], [["a", 1.0, 2.0], ["b", 3.0, None]])
    with pytest.raises(ValueError, match="different columns"):
        listed(_PerSize, [_PerSize("a", {"10^3": 1.0}), _PerSize("b", {"10^6": 1.0})])


LATEX_SPECIALS = re.compile(r"(?<!\\)[&%$#_{}~^]")


def _latex_text_is_escaped(tex: str) -> None:
    body = tex.split(r"\midrule", 1)[1].split(r"\bottomrule", 1)[0]
    caption = re.search(r"\\caption\{(.*)\}\n\\label", tex, re.S).group(1)
    for text in [caption] + body.splitlines():
        cleaned = re.sub(r"\\[a-zA-Z]+\{\}|\\[&%$#_{}]|\$[^$]*\$|\\\\", "", text)
        cleaned = cleaned.replace(" & ", " ")
        assert not LATEX_SPECIALS.search(cleaned), text[:120]
        assert all(ord(ch) < 128 for ch in text), text[:120]
    assert tex.count("{") - tex.count(r"\{") == tex.count("}") - tex.count(r"\}")


def test_latex_escapes_everything_tex_would_misread():
    assert latex_escape("10^8 & 5% of $x_i #1 {a} ~ \\") == (
        r"10\textasciicircum{}8 \& 5\% of \$x\_i \#1 \{a\} \textasciitilde{} \textbackslash{}")
    tex = to_latex(Table("t", "Title_1", "caption with 10^8 and ≤ 1.05 and ✓", ["a_b", "c"],
                         [["x^2", 0.5], ["{a}", None]]), 3, "x-t")
    _latex_text_is_escaped(tex)


def test_every_committed_latex_table_parses(committed):
    texs = {rel: c for rel, c in committed.items() if rel.endswith(".tex")}
    assert texs
    for rel, tex in texs.items():
        assert tex.count(r"\begin{table}") == tex.count(r"\end{table}") == 1, rel
        _latex_text_is_escaped(tex)


@pytest.mark.skipif(shutil.which("pdflatex") is None, reason="no TeX engine here to compile with")
def test_every_committed_latex_table_compiles(committed, tmp_path):
    doc = ["\\documentclass{article}", "\\usepackage{booktabs,amssymb}", "\\begin{document}"]
    for rel, tex in committed.items():
        if rel.endswith(".tex"):
            (tmp_path / os.path.basename(rel)).write_text(tex)
            doc.append(f"\\input{{{os.path.basename(rel)}}}\\clearpage")
    (tmp_path / "all.tex").write_text("\n".join(doc + ["\\end{document}"]))
    done = subprocess.run(["pdflatex", "-interaction=nonstopmode", "-halt-on-error", "all.tex"],
                          cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout[-3000:]


class Poison:
    """A code constant's stand-in: any use of it while rendering fails, naming it."""

    def __init__(self, name: str):
        self._name = name

    def __repr__(self):
        return f"<poisoned {self._name}>"

    def _read(self, *args, **kwargs):
        raise AssertionError(f"rendering read the code constant {self._name}")

    __getattr__ = __iter__ = __len__ = __getitem__ = __contains__ = __call__ = _read
    __eq__ = __lt__ = __gt__ = __le__ = __ge__ = __bool__ = __str__ = __format__ = _read
    __add__ = __radd__ = __mul__ = __rmul__ = __truediv__ = __rtruediv__ = __sub__ = _read
    __hash__ = None


# The rendering layer's own form (line width, significant figures, which atlas inputs are
# columns, the 95% level of an interval), and the comparison's fixed labels: not data.
RENDERING_LAYER = ("study.report", "study.report_layout", "study.report_comparisons", "study.tables", "study.figures", "study.reproduction",
                   "study.device_comparison", "experiments.zero_point_conventions",
                   "experiments.bifurcation_checks",
                   "study.runsets", "study.results", "study.provenance", "study.experiment",
                   "experiments.zero_point_report", "experiments.zero_point_atlas",
                   "experiments.zero_point_compiled", "study.cells", "experiments.bifurcation_report",
                   "experiments.bifurcation_summary",
                   "experiments.timing_report", "experiments.timing_anatomy",
                   "experiments.timing_rows", "experiments.zero_point_rows",
                   "experiments.timing_summary", "experiments.timing_findings")


def measurement_constants():
    """(module, name) of every public upper-case module-level constant of study/ and
    experiments/ outside the rendering layer."""
    import importlib
    import pkgutil
    import study
    out = []
    for package in (study, experiments):
        for info in pkgutil.iter_modules(package.__path__):
            name = f"{package.__name__}.{info.name}"
            if name in RENDERING_LAYER or info.name.startswith("_"):
                continue
            module = importlib.import_module(name)
            out += [(module, attr) for attr in vars(module)
                    if re.fullmatch(r"[A-Z][A-Z0-9_]*", attr)]
    return out


def test_rendering_reads_no_constant_of_the_measuring_code(committed, monkeypatch):
    constants = measurement_constants()
    assert len(constants) > 60  # every experiment's settings, the registry, the dtypes, ...
    runs, refs = committed_inputs()
    exps = experiments.all_experiments()
    for module, attr in constants:
        monkeypatch.setattr(module, attr, Poison(f"{module.__name__}.{attr}"))
    after = report.render(runs, [], exps, refs, figures=False)  # every figure's data is prepared
    assert "**error:**" not in after["REPORT.md"], [
        ln for ln in after["REPORT.md"].splitlines() if "**error:**" in ln][:3]
    for rel, content in after.items():  # the same bytes as with the constants in place
        if not rel.endswith(".png"):
            assert content == committed[rel], rel


def test_values_that_differ_never_print_equal():
    # 3.72e-44 and 3.72004e-44 agree to 4 figures: the row shows 6, the CSV every digit
    t = Table("t", "T", "cap", ["cpu", "cuda", "same"], [[3.72e-44, 3.72004e-44, 1.0]])
    assert "| 3.72e-44 | 3.72004e-44 | 1 |" in to_markdown(t)
    assert pair_texts(Value(3.72e-44), Value(3.72004e-44)) == ("3.72e-44", "3.72004e-44")
    assert pair_texts(Value(0.25), Value(0.25)) == ("0.25", "0.25")
    from experiments.zero_point_atlas import shown
    assert shown({"values": [6.0078125, 6.00781], "where": {}}) == "6.00781 or 6.007812 (placement)"


def test_shortened_text_ends_on_a_word_boundary():
    text = "RuntimeError: You tried to vmap over ReLUJvp, but it does not have vmap support"
    cut = shorten(text, 40)
    assert len(cut) <= 40 and cut.endswith("…")
    assert text.startswith(cut[:-1]) and text[len(cut) - 1] == " "  # the next character is a space
    assert shorten("short", 40) == "short"


def test_a_missed_target_has_a_positive_margin_whichever_way_it_points():
    from experiments.timing_rows import margin
    assert margin(0.2016, 0.7, "≥") > 0 and margin(0.9516, 1.05, "≤") < 0  # missed, met
    assert margin(1.115, 1.05, "≤") > 0 and margin(0.8, 0.7, "≥") < 0


def test_a_target_is_met_or_missed_only_where_its_whole_interval_says_so():
    from experiments.timing_rows import met_text
    from study.cells import Value
    # threshold ≤ 1.05: [0.9, 1.04] lies below it, [1.1, 1.3] above it, [0.9, 1.1] spans it
    assert met_text(Value(1.0, 0.9, 1.04), 1.05, "≤") == "yes"
    assert met_text(Value(1.2, 1.1, 1.3), 1.05, "≤") == "no"
    assert met_text(Value(1.0, 0.9, 1.1), 1.05, "≤") == "undecided"
    # threshold ≥ 0.7, the other way round; a value without an interval is judged alone
    assert met_text(Value(0.29, 0.28, 0.30), 0.7, "≥") == "no"
    assert met_text(Value(0.75, 0.65, 0.8), 0.7, "≥") == "undecided"
    assert met_text(Value(120.0), 150.0, "≤") == "yes" and met_text(Value(0.5), 0.7, "≥") == "no"


def test_the_clone_hazard_renders_a_hand_made_summary_row_for_row():
    # two graphs by hand: one where zeroing grad_output in place is silently wrong (the
    # correct gradient [1, 0] against [0, 0]), one where it is right; no warning, no error
    from dataclasses import replace
    from experiments import clone_hazard as ch
    run = replace(results.Run("clone_hazard", {"host": "vm", "device": "cpu", "torch": "t",
                                               "jax": "j", "scope": "quick"}, [], "x.json"),
                  tag="C1")
    wrong = ch.Hazard("shared grad", [1.0, 0.0], True, [0.0, 0.0], True, None, None, False,
                      False, True)
    right = ch.Hazard("plain", [1.0, 0.0], True, [1.0, 0.0], False, None, None, False, False, True)
    rendered = ch.render(ch.Summary(["float64"], [ch.RunHazards(run, [wrong, right], None)]))
    table, = rendered.tables
    assert table.headers[:2] == ["case", "correct gradient"] and len(table.headers) == 10
    assert table.rows == [["shared grad", [1.0, 0.0], True, [0.0, 0.0], True, None, None, False,
                           False, True],
                          ["plain", [1.0, 0.0], True, [1.0, 0.0], False, None, None, False,
                           False, True]]
    finding, = rendered.findings
    # 1 of the 2 graphs is wrong, silently; gradcheck and detect_anomaly flag neither
    assert finding.text.startswith("Editing grad_output in place (seed 000's MyReLU without its "
                                   "clone) gave wrong gradients in 1 of 2 graphs: silently in 1 "
                                   "(shared grad), with only a deprecation warning in 0 (none); "
                                   "gradcheck flagged 0 of the 1 and detect_anomaly 0")

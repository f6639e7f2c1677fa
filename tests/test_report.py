"""The committed report is exactly what its result files render to; the renderers, on small
hand-made frames; the answers quote only numbers their tables hold; labels never change.

The committed report is rendered from the result files its Provenance section names (so the
test holds whatever other files a host has in reports/results/), with the committed reference
and labels; the purity test renders the same with every measurement constant in code poisoned.
"""
import csv as csvlib
import io
import json
import os
import re
import shutil
import subprocess
import sys

import pandas as pd
import pytest

import experiments
from study import report
from study.runs import results
from study.runs.provenance import code_commit
from study.report import Table, csv, frame, latex, markdown, side_by_side
from study.report.document import number_tables
from study.report.format import latex_escape, shorten, text
from study.report.runs import assign_labels, configuration
from study.compare.cells import Value
from study.report.format import pair_texts
from study.compare.stats import Estimate
from tests.conftest import committed_inputs, committed_labels

REPORTS = os.path.join(results.REPO_ROOT, "reports")
MAX_LINE = 400


def _render(figures=True):
    runs, refs = committed_inputs()
    return report.render(runs, [], experiments.all_experiments(), refs, committed_labels(),
                         figures, code_commit())


def test_committed_report_is_exactly_what_its_committed_results_render_to(committed):
    # `study report` wrote these files in another process, so this is also the determinism check
    for rel, content in committed.items():
        with open(os.path.join(REPORTS, rel), "rb") as f:
            on_disk = f.read()
        if rel.endswith(".png"):  # matplotlib's bytes vary by release: check it is the picture
            assert on_disk[:8] == b"\x89PNG\r\n\x1a\n" and on_disk[16:24] == content[16:24], rel
            continue
        assert on_disk == content.encode("utf-8"), (
            f"reports/{rel} is stale: run `python -m study report`")
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
    code = ("import json, sys; from tests.test_report import _render; "
            "json.dump({k: v for k, v in _render(False).items() if isinstance(v, str)}, "
            "sys.stdout)")
    out = subprocess.run([sys.executable, "-c", code], cwd=results.REPO_ROOT, check=True,
                         capture_output=True, text=True, env={**os.environ, **BASELINE_KERNELS})
    rendered = json.loads(out.stdout)
    assert rendered
    for rel, content in rendered.items():
        with open(os.path.join(REPORTS, rel), encoding="utf-8") as f:
            assert f.read() == content, f"reports/{rel} differs under {BASELINE_KERNELS}"


def test_the_report_holds_at_most_ten_tables_of_twenty_rows_and_twenty_five_in_all(committed):
    main, appendix = committed["REPORT.md"], committed[report.APPENDIX]
    numbered = re.findall(r"^### Table (\d+): .* <a id=\"[^\"]+\"></a>$", main, re.M)
    in_appendix = re.findall(r"^### Table \d+: .* <a id=\"[^\"]+\"></a>$", appendix, re.M)
    assert 0 < len(numbered) <= 10 and len(numbered) + len(in_appendix) <= 25
    assert len(main.splitlines()) <= 450
    blocks = re.split(r"^### (?=Table \d+: .* <a id=\"[a-z-]+\"></a>$)", main, flags=re.M)[1:]
    assert len(blocks) == len(numbered)
    for block in blocks:
        rows = [ln for ln in block.split("\n\n", 3)[2].splitlines() if ln.startswith("| ")]
        assert len(rows) - 1 <= 20, block[:80]


def _floats(value) -> list[float]:
    if isinstance(value, Estimate):
        return [v for v in (value.value, value.lo, value.hi) if v is not None]
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return [float(value)]
    if isinstance(value, (list, tuple)):
        return [x for v in value for x in _floats(v)]
    if isinstance(value, str):  # a cell that prints values in its text: '2.4.1–2.7.1: -0.5'
        return [float(n) for n in re.findall(r"(?<![\w.])-?\d+(?:\.\d+)?(?:e-?\d+)?(?![\w.]?\d)",
                                             value)]
    return []


def test_every_answer_is_four_sentences_at_most_and_quotes_only_numbers_of_its_tables(
        committed_document):
    seen = 0
    for name, a, tables in answers_and_tables(committed_document):
        seen += 1
        cells = {text(v, 3) for t in tables for row in t.frame.itertuples(index=False)
                 for c in row for v in _floats(c)}
        missing = [text(q, 3) for q in a.quoted if text(q, 3) not in cells]
        assert not missing, (name, a.question, missing)
    assert seen >= 5
    answers = committed_document.files["REPORT.md"].split("## Answers", 1)[1].split("\n## ", 1)[0]
    blocks = re.split(r"^### \d\. .* <a id=\"[^\"]+\"></a>$", answers, flags=re.M)[1:]
    assert len(blocks) == 6
    for block in blocks:
        said = block.split("Tables:", 1)[0]
        sentences = re.findall(r"[.;:]\s+[A-Z]", " ".join(said.split()))  # a new sentence starts
        assert len([s for s in sentences if s[0] == "."]) + 1 <= 4 or "No results" in said


def test_a_new_run_keeps_every_label_given_before():
    def run(device, torch, utc):
        return results.Run("two_layer", {"device": device, "host": "h", "cpu": "c", "gpu": None,
                                         "torch": torch, "jax": "j", "scope": "standard",
                                         "utc": utc}, [], "x.json")
    first = [run("cpu", "2.13", "2026-01-02"), run("cuda", "2.11", "2026-01-03")]
    labels = assign_labels(first, {})
    assert sorted(labels.values()) == ["C1", "G1"]
    earlier = run("cpu", "2.10", "2026-01-01")  # measured before the others, added after them
    after = assign_labels(first + [earlier], labels)
    assert {k: after[k] for k in labels} == labels and after[configuration(earlier)] == "C2"


def test_runs_that_agree_share_a_row_and_one_run_has_no_runs_column():
    long = frame([{"run": "C1", "x": 1.0}, {"run": "C2", "x": 1.0}, {"run": "C2", "x": 2.0}])
    assert side_by_side(long).values.tolist() == [["C1, C2", 1.0], ["C2", 2.0]]
    assert list(side_by_side(long[long["run"] == "C1"]).columns) == ["x"]


def test_an_estimate_prints_with_its_interval_and_is_four_numbers_in_the_csv():
    t = Table("t", "T", "c", frame([{"ratio": Estimate(1.0036, 1.001, 1.007, 20), "n": -0.0}]))
    assert markdown(t).splitlines()[-1] == "| 1.004 [1.001, 1.007] | -0 |"
    rows = list(csvlib.reader(io.StringIO(csv(t))))
    assert rows == [["ratio", "ratio lo", "ratio hi", "ratio n", "n"],
                    ["1.0036", "1.001", "1.007", "20", "-0"]]


def test_no_csv_cell_holds_a_number_with_its_interval(committed_csv_cells):
    number_and_interval = re.compile(r"^-?[\d.]+(e[-+]?\d+)?\s*[\[(]")
    for rel, (header, cells) in committed_csv_cells.items():
        held = [c for c in header + cells if number_and_interval.match(c)]
        assert not held, (rel, held[:3])


def test_a_row_counts_exactly_the_rules_it_lists():
    # seed 001's table groups rules that give the same row: its count is the number of names,
    # not the number of commas (a name may hold one, as "torch.maximum(x, 0)" does)
    from experiments.two_layer import report as two_layer
    from experiments.two_layer.summary import Summary
    rule = lambda key, name, at_0, g: {"run": "C1", "dataset": "seed", "framework": "torch",  # noqa: E731
                                       "rule": key, "name": name, "at_0": at_0, "grad_w1": g,
                                       "grad_w2": [0.0], "reference": "relu"}
    grads = pd.DataFrame([rule("relu", "torch.relu", 0.0, [0.0]),
                          rule("max", "torch.maximum(x, 0)", 0.5, [1.0]),
                          rule("mx", "torch.max(x, zeros)", 0.5, [1.0])], dtype=object)
    table = two_layer.diff(Summary(grads, pd.DataFrame(), [], ["C1"], {}))
    assert table.frame[["d/dx at 0", "rules", "which"]].values.tolist() == [
        [0.0, 1, "torch.relu"], [0.5, 2, "torch.maximum(x, 0), torch.max(x, zeros)"]]


def test_the_clone_hazard_renders_a_hand_made_summary_row_for_row():
    # two graphs by hand: one where zeroing grad_output in place is silently wrong (the
    # correct gradient [1, 0] against [0, 0]), one where it is right
    from experiments.clone_hazard import report as ch
    from experiments.clone_hazard.summary import Summary
    row = lambda case, inplace, wrong: {"run": "C1", "case": case, "correct": [1.0, 0.0],  # noqa: E731
                                        "seed rule (clones)": [1.0, 0.0], "in-place rule": inplace,
                                        "silently wrong": wrong, "warning or error": None,
                                        "gradcheck catches": wrong, "detect_anomaly catches": False,
                                        "JAX rule correct": True}
    cases = pd.DataFrame([row("shared grad", [0.0, 0.0], True), row("plain", [1.0, 0.0], False)],
                         dtype=object)
    table = ch.hazard(Summary(cases, pd.DataFrame(), [], ["C1"]))
    assert markdown(table).splitlines()[2:] == [
        "| shared grad | 1, 0 | 1, 0 | 0, 0 | yes | — | yes | no | yes |",  # no list literals
        "| plain | 1, 0 | 1, 0 | 1, 0 | no | — | no | no | yes |"]


def test_a_table_without_results_keeps_its_number():
    exps = experiments.all_experiments()
    text_ = report.render([], [], exps, figures=False)["REPORT.md"]
    numbers = number_tables(exps)
    assert (f"### Table {numbers[('two_layer', 'ties')]}: no results yet "
            '<a id="two-layer-ties"></a>') in text_


def test_an_experiment_whose_tables_raise_is_one_line_and_the_rest_renders(committed_runs):
    prov = {"utc": "t", "host": "h", "device": "cpu", "torch": "t", "jax": "j", "scope": "quick"}
    broken = results.Run("two_layer", prov, [{"dataset": "seed"}], "x.json")  # fields missing
    fine, _ = committed_runs
    fine = [r for r in fine if r.experiment == "clone_hazard"][:1]
    files = report.render([broken] + fine, [], experiments.all_experiments(), figures=False)
    out = files["REPORT.md"]
    errors = [ln for ln in out.splitlines() if ln.startswith("**error:**")]
    assert len(errors) == 1 and "`two_layer`" in errors[0]
    assert "clone hazard:" in out  # its section, whose table the appendix holds
    assert re.search(r'^### Table \d+: .* <a id="clone-hazard-hazard"></a>$',
                     files[report.APPENDIX], re.M)


def test_no_markdown_line_is_longer_than_a_screen(committed):
    # REPORT.md's table rows too: the legend's G1 row once ran to 411 characters
    for rel in ("REPORT.md", report.APPENDIX):
        long = [ln for ln in committed[rel].splitlines()
                if len(ln) > MAX_LINE and (rel == "REPORT.md" or not ln.startswith("|"))]
        assert not long, (rel, long[:1])


def test_cells_keep_the_sign_of_zero_and_four_significant_figures():
    assert [text(v) for v in (-0.0, 0.0, 1 / 3, 23550.0, float("nan"), None, True)] == [
        "-0", "0", "0.3333", "23550", "NaN", "—", "yes"]


def test_values_that_differ_never_print_equal():
    # 3.72e-44 and 3.72004e-44 agree to 4 figures: the row shows 6, the CSV every digit
    t = Table("t", "T", "cap", frame([{"cpu": 3.72e-44, "cuda": 3.72004e-44, "same": 1.0}]))
    assert "| 3.72e-44 | 3.72004e-44 | 1 |" in markdown(t)
    assert pair_texts(Value(3.72e-44), Value(3.72004e-44)) == ("3.72e-44", "3.72004e-44")


def test_shortened_text_ends_on_a_word_boundary():
    line = "RuntimeError: You tried to vmap over ReLUJvp, but it does not have vmap support"
    cut = shorten(line, 40)
    assert len(cut) <= 40 and cut.endswith("…")
    assert line.startswith(cut[:-1]) and line[len(cut) - 1] == " "


LATEX_SPECIALS = re.compile(r"(?<!\\)[&%$#_{}~^]")


def _latex_text_is_escaped(tex: str) -> None:
    body = tex.split(r"\midrule", 1)[1].split(r"\bottomrule", 1)[0]
    caption = re.search(r"\\caption\{(.*)\}\n\\label", tex, re.S).group(1)
    for line in [caption] + body.splitlines():
        cleaned = re.sub(r"\\[a-zA-Z]+\{\}|\\[&%$#_{}]|\$[^$]*\$|\\\\", "", line)
        cleaned = cleaned.replace(" & ", " ")
        assert not LATEX_SPECIALS.search(cleaned), line[:120]
        assert all(ord(ch) < 128 for ch in line), line[:120]
    assert tex.count("{") - tex.count(r"\{") == tex.count("}") - tex.count(r"\}")


def test_latex_escapes_everything_tex_would_misread():
    assert latex_escape("10^8 & 5% of $x_i #1 {a} ~ \\") == (
        r"10\textasciicircum{}8 \& 5\% of \$x\_i \#1 \{a\} \textasciitilde{} \textbackslash{}")
    tex = latex(Table("t", "Title_1", "caption with 10^8 and ≤ 1.05 and ✓",
                      frame([{"a_b": "x^2", "c": 0.5}, {"a_b": "{a}", "c": None}])), 3, "x-t")
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
RENDERING_LAYER = ("study.report", "study.compare.reproduction", "study.compare.stats",
                   "study.compare.device_comparison", "study.runs.results",
                   "study.runs.provenance", "study.runs.experiment", "study.compare.cells")


def measurement_constants():
    """(module, name) of every upper-case module-level constant of study/ and experiments/
    outside the rendering layer, in every module that holds it, however it was imported (a
    constant imported by name is poisoned in the importing module too)."""
    import importlib
    import pkgutil
    import study
    out = []
    for package in (study, experiments):
        for info in pkgutil.walk_packages(package.__path__, f"{package.__name__}."):
            name = info.name
            parts = name.split(".")
            if (any(name == r or name.startswith(r + ".") for r in RENDERING_LAYER) or "._" in name
                    or (len(parts) == 3 and parts[0] == "experiments" and parts[2] != "measure")):
                continue  # an experiment package's summary and report read records, not constants
            module = importlib.import_module(name)
            out += [(module, attr) for attr in vars(module)
                    if re.fullmatch(r"[A-Z][A-Z0-9_]*", attr)]
    return out


def test_rendering_reads_no_constant_of_the_measuring_code(committed_runs, monkeypatch):
    # one committed run per experiment and device walks every rendering path; rendered with the
    # measuring code's constants poisoned, it gives the same bytes as with them in place
    constants = measurement_constants()
    assert len(constants) > 60  # every experiment's settings, the registry, the dtypes, ...
    runs, refs = committed_runs
    first = {}
    for run in runs:
        first.setdefault((run.experiment, run.provenance["device"]), run)
    some = list(first.values())
    exps = experiments.all_experiments()
    before = report.render(some, [], exps, refs, committed_labels(), figures=False,
                           code=code_commit())
    for module, attr in constants:
        monkeypatch.setattr(module, attr, Poison(f"{module.__name__}.{attr}"))
    after = report.render(some, [], exps, refs, committed_labels(), figures=False,
                          code=code_commit())  # every figure's data is prepared
    assert "**error:**" not in after["REPORT.md"], [
        ln for ln in after["REPORT.md"].splitlines() if "**error:**" in ln][:3]
    assert after == before


def test_a_target_is_met_or_missed_only_where_its_whole_interval_says_so():
    from experiments.timing.summary import met
    # threshold ≤ 1.05: [0.9, 1.04] lies below it, [1.1, 1.3] above it, [0.9, 1.1] spans it
    assert met(Estimate(1.0, 0.9, 1.04), 1.05, "≤") == "yes"
    assert met(Estimate(1.2, 1.1, 1.3), 1.05, "≤") == "no"
    assert met(Estimate(1.0, 0.9, 1.1), 1.05, "≤") == "undecided"
    # threshold ≥ 0.7, the other way round; a value without an interval is judged alone
    assert met(Estimate(0.29, 0.28, 0.30), 0.7, "≥") == "no"
    assert met(Estimate(0.75, 0.65, 0.8), 0.7, "≥") == "undecided"
    assert met(Estimate(120.0), 150.0, "≤") == "yes" and met(Estimate(0.5), 0.7, "≥") == "no"


def answers_and_tables(document):
    """(experiment, answer, the answer's tables) of each answer the rendered report printed."""
    for name, rendered in document.rendered.items():
        tables = {t.id: t for t in rendered.tables}
        for a in rendered.answers:
            yield name, a, [tables[t] for t in a.tables]


def test_an_answer_names_a_quantity_as_its_table_does(committed_document):
    # answer 5 once said a bit mask "saves" 0.125 B an element where its table said "kept": a
    # word for bytes held for backward appears in an answer only as its table's header words it
    for _, a, tables in answers_and_tables(committed_document):
        headers = set(" ".join(str(c) for t in tables for c in t.frame.columns).lower().split())
        for family in ({"save", "saves", "saved"}, {"keep", "keeps", "kept"}):
            if family & set(a.text.lower().split()):
                assert family & headers, (a.question, family)
    # the check has something to check
    assert any("keep" in a.text for _, a, _ in answers_and_tables(committed_document))


def test_the_cost_answer_quotes_each_ratio_from_a_column_of_the_size_it_states(
        committed_document):
    # answer 5 and Table 37 gave the best compiled ratio at two sizes without saying so: every
    # ratio the answer quotes is a cell of a column headed with the size the answer states
    (_, a, (table,)), = [x for x in answers_and_tables(committed_document)
                         if x[1].question == "cost"]
    size = re.search(r"At (10\^\d+) elements", a.text).group(1)
    sized = {text(v, 3) for c in table.frame.columns if size in c
             for cell in table.frame[c] for v in _floats(cell)}
    kept = {text(v, 3) for cell in table.frame["kept for backward (B/element)"]
            for v in _floats(cell)}
    quoted = {text(q, 3) for q in a.quoted}
    assert quoted - kept and not (quoted - kept - sized)


def test_the_readme_gives_each_command_one_duration():
    # it once said `--full` took 6 min 20 s in one place and 16 min 28 s in another
    with open(os.path.join(results.REPO_ROOT, "README.md"), encoding="utf-8") as f:
        readme = f.read()
    said: dict[str, set] = {}
    duration_said = r"`([^`]+)`[^`.;]{0,80}?(\d+ min(?: \d+ s)?|\d+(?:\.\d+)? s)\b"
    for command, duration in re.findall(duration_said, readme):
        said.setdefault(command, set()).add(duration)
    assert said and all(len(d) == 1 for d in said.values()), said


def test_the_count_answer_quotes_the_one_row_it_names(committed_document):
    # finding 14 quoted the permuted-order row's figures while naming the headline: every number
    # the bifurcation answer quotes is a cell of the float32 row of the run it names
    (_, a, (table,)), = [x for x in answers_and_tables(committed_document)
                         if "MNIST" in x[1].text]
    run = re.search(r"float32, (\w+)(?:, older code)?\)", a.text).group(1)
    row, = [r for _, r in table.frame.iterrows()  # a row of several runs names them: "C1, G3"
            if run in str(r.get("runs", r.get("run"))).split(", ") and r["dtype"] == "float32"]
    cells = {text(v, 3) for c in row for v in _floats(c)}
    assert a.quoted and {text(q, 3) for q in a.quoted} <= cells


def test_an_interval_in_exponent_form_keeps_the_zeros_its_width_determines():
    # review 16: Table 21 printed "6e-06 [5.5e-06, 7.7e-06]". The width, 2.2e-06, has its second
    # digit at 1e-07, so the value is known to 1e-07: 6.0e-06, as a fixed-point value keeps the
    # zero of "1.000 [0.992, 1.009]"
    from study.report.format import interval_text
    assert interval_text(6e-06, 5.5e-06, 7.7e-06) == "6.0e-06 [5.5e-06, 7.7e-06]"
    assert interval_text(4e-06, 2.9e-06, 5e-06) == "4.0e-06 [2.9e-06, 5.0e-06]"

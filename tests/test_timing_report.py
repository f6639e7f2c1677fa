"""The timing report on hand-made runs: a quantity printed twice has one value or names its
other measurement; answer 5 quotes Table 9's cells as printed, with their run and size; the
CSVs are long form; the figure reads in print. Every record's rounds are the built-in's times
scaled by a constant, so each ratio is that constant exactly (a per-round ratio's median)."""
import os
import re

import numpy as np
import pytest
from matplotlib.text import Text

from experiments.timing.report import render
from experiments.timing.summary import summarise
from study.report import csv, figures, markdown, text
from study.runs.results import Run

MILLION = 10 ** 6
AGAIN = "same ratio, rule cases (another measurement)"  # the second place's other measurement
THIS_OVER_AGAIN = "this ÷ rule cases'"
LONG_NAME = "relu(x, c=0) (custom_vjp, nondiff_argnums)"  # cut to "[...]" once
PLAN = {"part": "plan", "reference_rules": {"torch": "torch_relu", "jax": "jax_relu"},
        "targets": [{"key": "compile_ratio", "target": "torch compile: best custom ÷ built-in at "
                     "≥ 10^6 elements", "threshold": 1.05, "sense": "≤"}]}
ROUNDS = (1.0, 1.1, 0.9, 1.2, 1.05, 0.95, 1.0, 1.15)  # ×1e-4 s: the built-in's rounds


def _timed(part, scale, **fields):
    seconds = [t * 1e-4 * scale for t in ROUNDS]
    return {"part": part, "times_s": seconds, "dispatch": {"median": float(np.median(seconds))},
            "stats": {"median": float(np.median(seconds)), "n": len(seconds)}, "first_call_s": 0.5,
            **fields}


def _rule(fw, mode, rule, name, n, ratio, **fields):
    return _timed("rule", ratio, framework=fw, mode=mode, rule=rule, name=name, n=n,
                  bytes_per_element=12, interleaved_with=["all"], **fields)


# (framework, mode, rule, name): ratio at 8, 10^6, 10^7; the built-ins are 1
RATIOS = {("torch", "eager", "torch_bool", "ReLUSavesBoolMask (c=0)"): (2.5, 4.285, 3.125),
          ("torch", "compile", "torch_bool", "ReLUSavesBoolMask (c=0)"): (1.5, 0.9375, 1.25),
          ("jax", "op-by-op", "jax_nondiff", LONG_NAME): (0.75, 0.6647, 0.8125),
          ("jax", "jit", "jax_nondiff", LONG_NAME): (1.125, 0.9213, 0.9971)}
BUILT_INS = {"torch": "torch.relu", "jax": "jax.nn.relu"}


def _rules(sizes, compiled_torch=True):
    out = []
    for (fw, mode, rule, name), ratios in RATIOS.items():
        if mode == "compile" and not compiled_torch:
            continue
        for n, ratio in zip((8, MILLION, 10 * MILLION), ratios):
            if n in sizes:
                out += [_rule(fw, mode, f"{fw}_relu", BUILT_INS[fw], n, 1.0),
                        _rule(fw, mode, rule, name, n, ratio)]
    return out


def _memory(fw, rule, name, saved_bytes):
    return {"part": "memory", "framework": fw, "rule": rule, "name": name, "n": 2 ** 20,
            "torch_saved" if fw == "torch" else "jax_jit_vjp": saved_bytes * 2 ** 20}


def _piece(fw, rule, name, piece, scale):
    return _timed("eager_parts", scale, framework=fw, n=MILLION, rule=rule, name=name, piece=piece)


def _probe(way, scale):
    return _timed("probes", scale, probe="torch.relu forward plus backward", role="step",
                  signs="random", n=MILLION, compiled=way != "eager", simdlen=None)


def _net(rule, name, scale):
    return _timed("net", scale, net="seed", workload="fwd_bwd", framework="torch", mode="eager",
                  rule=rule, name=name, flops=1e6)


def _case(records, rule, mode, n):
    case, = [r for r in records
             if r.get("part") == "rule" and (r["rule"], r["mode"], r["n"]) == (rule, mode, n)]
    return case


def _cpu_run():
    records = [PLAN, *_rules((8, MILLION, 10 * MILLION)),
               _memory("torch", "torch_relu", "torch.relu", 4),
               _memory("torch", "torch_bool", "ReLUSavesBoolMask (c=0)", 1),
               _memory("jax", "jax_relu", "jax.nn.relu", 5),
               _memory("jax", "jax_nondiff", LONG_NAME, 4),
               # the eager step taken apart: the rule's step 5× the built-in's (rule case: 4.285×)
               _piece("torch", "torch_relu", "torch.relu", "step", 1.0),
               _piece("torch", "torch_bool", "ReLUSavesBoolMask (c=0)", "step", 5.0),
               # the reproducer: compiled 10× eager in the same rounds; the rule cases, 12×
               _probe("eager", 1.0), _probe("compiled", 10.0),
               _net("torch_relu", "torch.relu", 1.0),
               _net("torch_bool", "ReLUSavesBoolMask (c=0)", 1.5)]
    # the rule cases time torch.relu compiled at 10^6 12× its eager time (the ratios stay)
    for rule, scale in (("torch_relu", 12.0), ("torch_bool", 12.0 * 0.9375)):
        _case(records, rule, "compile", MILLION).update(_timed("rule", scale))
    _case(records, "jax_nondiff", "jit", 8).update(  # against a fresh process, in 3 blocks
        block_medians=[1.0, 2.0, 4.0],
        fresh={"stats": {"median": 1.0}, "block_medians": [1.0, 1.0, 4.0]})
    prov = {"utc": "t", "host": "h", "device": "cpu", "torch": "t", "jax": "j", "scope": "standard",
            "git_commit": "abc", "torch_cpu_capability": "AVX2"}
    return Run.of("timing", prov, records, "c1.json", tag="C1")


def _gpu_run():
    records = [PLAN, *_rules((8, MILLION), compiled_torch=False),
               _memory("torch", "torch_relu", "torch.relu", 4),
               _memory("jax", "jax_relu", "jax.nn.relu", 5)]
    prov = {"utc": "t", "host": "g", "device": "cuda", "torch": "t", "jax": "j",
            "scope": "standard", "git_commit": "def"}
    return Run.of("timing", prov, records, "g1.json", tag="G1")


@pytest.fixture(scope="module")
def rendered():
    summary = summarise([_cpu_run(), _gpu_run()])
    return summary, render(summary)


def _table(rendered, table_id):
    return next(t for t in rendered[1].tables if t.id == table_id)


def _cost_cell(rendered, column, rule):
    view = _table(rendered, "cost").frame
    return view[view["rule"] == rule][column].iloc[0]


def test_the_compile_caption_says_which_runs_compiled_into_an_empty_inductor_folder():
    # Table 21 printed C1's torch first calls (0.05 to 1.07 s) with no word that inductor may
    # have read them back from its folder instead of compiling (here 1.5 to 8.4 s from empty)
    old = _cpu_run()
    new = Run.of("timing", old.provenance, [
        {**r, "torch_compile_cache": "empty"} if r["part"] == "plan" else r for r in old.records],
        "c2.json", tag="C2")
    caption = _table((None, render(summarise([old, new, _gpu_run()]))), "compile").caption
    assert ("Torch in C2 (torch t, jax j): compiled into an empty folder of the run's own, as in "
            "a new environment") in caption
    assert "Torch in C1: the folder's state was not recorded" in caption
    assert "G1" not in caption  # no compiled torch row


def test_the_eager_parts_step_names_the_cost_tables_measurement_and_the_difference(rendered):
    # Table 9 printed ReLUSavesBoolMask's eager step ÷ built-in at 10^6 as 4.285 and Table 21
    # as 4.482, with no word that the two are separate measurements
    parts = _table(rendered, "parts")
    cost = _cost_cell(rendered, "C1 eager, 10^6", "ReLUSavesBoolMask (c=0)")
    step, = [r for _, r in parts.frame.iterrows() if r["piece"] == "step" and r["÷ built-in's"]]
    assert cost.value == pytest.approx(4.285) and step["÷ built-in's"].value == pytest.approx(5.0)
    assert step[AGAIN] == cost  # the other measurement, as the cost table prints it
    assert step[THIS_OVER_AGAIN].value == pytest.approx(5.0 / 4.285)
    # with the interval that holds every pair of values in the two intervals: 5.0's interval
    # over 4.285's, crosswise
    both = step[THIS_OVER_AGAIN]
    assert (both.lo, both.hi) == pytest.approx((step["÷ built-in's"].lo / cost.hi,
                                                step["÷ built-in's"].hi / cost.lo))
    assert "measures again the cost table's eager ratio" in parts.caption
    assert "where it holds 1, the two measurements agree" in parts.caption
    # answer 5 cites the cost table's ratio and says the step taken apart measures it otherwise
    # (this ÷ that 5.0 / 4.285, both without width: its interval excludes 1); a note under
    # Table 23 gives both numbers
    answer, apart = rendered[1].answers[0], text(step["÷ built-in's"])
    assert ("(ReLUSavesBoolMask (c=0)), which the eager step taken apart measures otherwise"
            in answer.text)
    finding, = _table(rendered, "parts").notes  # under the table that measures it
    assert (f"the eager step taken apart gives torch's ReLUSavesBoolMask (c=0) {apart}× the "
            f"built-in's, against the cost table's {text(cost)}×: the two measurements disagree "
            f"(this ÷ that {text(step[THIS_OVER_AGAIN])})") in finding


def test_the_reproducers_compiled_over_eager_names_the_rule_cases_measurement(rendered):
    # Table 22 read compiled relu ÷ eager as 11.5× where timing-rules.csv gives 10270/727 =
    # 14.1×: the reproducer times both in the same rounds, the rule cases each in its own case
    summary, out = rendered
    step = summary.probes[summary.probes["way"] == "compiled"].iloc[0]
    assert step["÷ eager"].value == pytest.approx(10.0)
    assert step[AGAIN].value == pytest.approx(12.0)  # median ÷ median of the two rule cases
    assert step[THIS_OVER_AGAIN].value == pytest.approx(10.0 / 12.0)
    # the finding cites one measurement, the one timed in the same rounds, with its interval
    finding, = [f for f in out.findings if f.table == "probes"]
    assert "× eager at 10^6 (timed in the same rounds)" in finding.text
    assert finding.text.startswith(f"On CPU (C1, AVX2 kernels), compiled relu forward plus "
                                   f"backward takes {text(step['÷ eager'])}×")
    assert "give 12" not in finding.text
    assert "second measurement" in _table(rendered, "probes").caption


def test_a_speed_target_names_the_size_whose_value_it_prints_as_the_cost_table_does(rendered):
    # Table 10 printed the best compiled custom ÷ built-in "at ≥ 10^6 elements" as 1.004 (its
    # 10^7 value) while answer 5 quoted 0.938 at 10^6, and neither said which size it read
    target = _table(rendered, "harness").listing
    row = target[target["check"].str.startswith("torch compile")].iloc[0]
    size = re.search(r"at (10\^\d+) \(its worst of 10\^6, 10\^7\)", row["of"]).group(1)
    assert size == "10^7"  # 1.25 there against 0.9375 at 10^6
    assert row["result"] == _cost_cell(rendered, f"C1 compiled, {size}", "ReLUSavesBoolMask (c=0)")


def test_answer_5_names_each_numbers_run_and_size_and_quotes_table_9_as_printed(rendered):
    answer, = rendered[1].answers
    printed = markdown(_table(rendered, "cost"))
    quoted = re.findall(r"\d[\d.]* \[[\d.]+, [\d.]+\]", answer.text)
    assert len(quoted) == 7  # C1: torch and jax, compiled and eager; G1: jax compiled, both eager
    assert [q for q in quoted if q not in printed] == []
    assert "0.9375 [0.9375, 0.9375]" in quoted  # four figures, as Table 9 prints it
    c1, g1 = answer.text.split(" In run G1")
    # each run with its releases and dtype; G1's code the glossary's "older code"
    assert c1.startswith("At 10^6 elements (float32) in run C1 (cpu; torch ")
    assert "eager at 10^6" in c1
    assert "(run C1, measured at 2^20 elements)" in c1  # the bytes kept for backward, 2 ** 20
    assert g1.startswith(" (cuda, older code; torch ") and ") at 10^6 elements" in g1
    assert "in jax (relu(x, c=0) (custom_vjp, nondiff_argnums)), with no compiled torch ratio" in g1


def _rows_of_the_tables(rendered):
    for table in rendered[1].tables:
        yield table, table.listing if table.listing is not None else table.frame


def test_every_csv_is_long_form_no_run_or_size_in_a_column_name_no_list_in_a_cell(rendered):
    # timing-cost.csv had "C1 eager, 10^6 lo"; timing-compile.csv "first call s, 10^6";
    # timing-fresh.csv a JSON list of block ratios in one cell
    for table, data in _rows_of_the_tables(rendered):
        header = csv(table).splitlines()[0]
        assert not re.search(r"\b(C1|G1)\b|10\^|, \d+\b", header), (table.id, header)
        assert not any(isinstance(v, (list, tuple)) for v in data.to_numpy().ravel()), table.id
    cost = _table(rendered, "cost").listing
    assert list(cost.columns[:5]) == ["run", "framework", "rule", "mode", "size"]
    fresh = _table(rendered, "fresh").frame
    assert list(fresh["block"]) == [1, 2, 3] and list(fresh["in-run ÷ fresh"]) == [1.0, 2.0, 1.0]


def test_a_missing_value_stays_none_in_the_data_not_nan(rendered):
    # pandas' pivot_table filled timing-compile's missing sizes with NaN, printed "nan"
    for table, data in _rows_of_the_tables(rendered):
        for frame_ in (data, table.frame):
            nans = [v for v in frame_.to_numpy().ravel() if isinstance(v, float) and np.isnan(v)]
            assert not nans, table.id


@pytest.fixture(scope="module")
def timing_figure(rendered):
    kept = []
    original, figures._png = figures._png, lambda fig: kept.append(fig) or b""
    try:
        (draw, _), = rendered[1].figures.values()
        draw()
    finally:
        figures._png = original
    fig, = kept
    yield fig
    figures._pyplot().close(fig)


def _panels(fig):
    return [ax for ax in fig.axes if ax.axison]


def test_the_timing_figure_at_3_5_inches_a_panel_prints_no_text_under_8_pt(timing_figure):
    # 1680 × 400 px in four panels: read at a column's width its fonts were about 7 px
    fig = timing_figure
    columns = max(len({round(ax.get_position().x0, 3) for ax in _panels(fig)}), 1)
    assert columns <= 2
    scale = 3.5 / (fig.get_figwidth() / columns)  # printed at 3.5 inches a panel
    sizes = [t.get_fontsize() * scale for t in fig.findobj(Text)
             if t.get_visible() and t.get_text().strip()]
    assert sizes and min(sizes) >= 8


def test_the_timing_figure_names_rules_in_full_shows_sizes_measured_g1_beside_c1(timing_figure):
    fig = timing_figure
    texts = {t.get_text() for t in fig.findobj(Text)}
    assert LONG_NAME in texts and not any("[...]" in t for t in texts)
    titles = [ax.get_title() for ax in _panels(fig)]
    assert any("C1" in t for t in titles) and any("G1" in t for t in titles)
    for ax in _panels(fig):
        ticks = [t.get_text() for t in ax.get_xticklabels()]
        if ticks:  # 8, 10^6, 10^7 as measured: no empty decade between them
            assert ticks in (["8", "$10^{6}$", "$10^{7}$"], ["8", "$10^{6}$"]), ticks


VERDICT = re.compile(r"(slower|faster|too few rounds to decide)")
INTERVAL_X = re.compile(r"(-?[\d.]+) \[(-?[\d.]+), (-?[\d.]+)\]×")


def verdicts_against_intervals(markdown_text: str) -> list[str]:
    """Each clause (between ';' or '.') of the answers that gives a timing verdict: it must quote
    the interval it judges, and agree with it: slower where the whole interval lies above 1,
    faster where below, too few rounds to decide where it holds 1."""
    bad = []
    answers = markdown_text.split("\n## Answers", 1)[-1].split("\n## ", 1)[0]
    prose = " ".join(line for line in answers.splitlines() if not line.startswith("|"))
    for clause in re.split(r";|\.(?=\s)", prose):
        for m in VERDICT.finditer(clause):
            quoted = list(INTERVAL_X.finditer(clause[:m.start()]))
            if not quoted:
                bad.append(f"no interval for '{m.group()}': {clause.strip()[:160]}")
                continue
            lo, hi = float(quoted[-1].group(2)), float(quoted[-1].group(3))
            agrees = {"slower": lo > 1, "faster": hi < 1}.get(m.group(), lo <= 1 <= hi)
            if not agrees:
                bad.append(f"'{m.group()}' against [{lo}, {hi}]: {clause.strip()[:160]}")
    return bad


def test_a_verdict_on_a_cost_never_contradicts_its_interval():
    # the report at 25d68b2 said "eager at 10^6, in jax and torch too few rounds to decide"
    # where Table 10 printed 4.1 [3.2, 5.2] (torch, slower) and 0.56 [0.47, 0.65] (jax, faster)
    made_up = ("## Answers\n\neager, in torch too few rounds to decide. The best costs "
               "4.1 [3.2, 5.2]× in torch, faster; 0.97 [0.94, 1.01]× in jax, too few rounds "
               "to decide.")
    assert len(verdicts_against_intervals(made_up)) == 2
    from study.runs.provenance import REPO_ROOT
    with open(os.path.join(REPO_ROOT, "reports", "REPORT.md"), encoding="utf-8") as f:
        assert verdicts_against_intervals(f.read()) == []


def test_answer_5_lists_every_harness_check_the_run_failed(rendered):
    # the answer named only the harness's own checks (fresh process, wall time) where Table 20
    # also gave "no" for a speed target; here C1's best compiled torch rule, ReLUSavesBoolMask,
    # is 1.25× at 10^7 (all its rounds alike: an interval of no width) against ≤ 1.05: failed
    answer, = rendered[1].answers
    c1 = answer.text.split(" In run G1")[0]
    assert "failing its harness check" in c1 and "compiled torch cost" in c1
    harness = _table(rendered, "harness").listing
    failed = harness[(harness["run"] == "C1") & (harness["passed"] == "no")]
    assert list(failed["check"]) == [PLAN["targets"][0]["target"]]


@pytest.mark.parametrize("result, threshold, sense, passed, shown", [
    # C25's torch compile read "1.01 [0.94, 1.05] undecided" against ≤ 1.05: its upper end
    # 1.0504 rounds to 1.05, which meets the threshold; four decimals show it does not
    ((1.01, 0.94, 1.0504), 1.05, "≤", "undecided", "1.0100 [0.9400, 1.0504]"),
    # G3's eager net read "2.0 [1.2, 2.5] no" against ≤ 1.2: 1.2004 shows the lower end misses
    ((2.0, 1.2004, 2.5), 1.2, "≤", "no", "2.0000 [1.2004, 2.5000]"),
    # a factor without an interval, "1.2" against 1.15: four figures, zeros kept
    ((1.2,), 1.15, "≤", "no", "1.200"),
    # digits that already read the verdict right stay as every table prints them
    ((0.556, 0.499, 0.574), 0.7, "≥", "no", "0.556 [0.499, 0.574]")])
def test_a_harness_result_prints_the_digits_its_verdict_needs(result, threshold, sense, passed,
                                                              shown):
    from experiments.timing.report import _decisive
    from study.compare.stats import Estimate
    row = {"result": Estimate(*result), "threshold": threshold, "sense": sense, "passed": passed}
    assert _decisive(row) == shown


def test_the_best_custom_rule_is_the_one_that_meets_the_target_not_the_lowest_estimate():
    # C25's torch compile chose ReLUSavesBoolMask, 1.01 [0.94, 1.05] at its worst size
    # (undecided against ≤ 1.05), over MyReLU, 1.017 [0.982, 1.042] at its worst, which meets
    # it; and JAX's row judged a rule at 10^6 although its 10^7 interval reached 1.10
    from types import SimpleNamespace

    from experiments.timing.targets import best_judged
    from study.compare.stats import Estimate
    ratios = {("bool", MILLION): Estimate(0.92, 0.65, 1.02),
              ("bool", 10 * MILLION): Estimate(1.01, 0.94, 1.0504),
              ("mine", MILLION): Estimate(0.97, 0.90, 1.04),
              ("mine", 10 * MILLION): Estimate(1.017, 0.982, 1.042)}
    t = SimpleNamespace(
        rules=[{"framework": "torch", "mode": "compile", "rule": r} for r in ("relu", "bool",
                                                                            "mine")],
        references={"torch": "relu"}, sizes=(8, MILLION, 10 * MILLION),
        ratio=lambda fw, mode, rule, n: ratios.get((rule, n)))
    rule, spreads, at = best_judged(t, "torch", "compile", 1.05, "≤")
    assert (rule, at) == ("mine", 10 * MILLION)  # yes at both sizes; bool: undecided at 10^7
    ratios[("mine", 10 * MILLION)] = Estimate(1.017, 0.982, 1.10)  # now undecided too
    rule, spreads, at = best_judged(t, "torch", "compile", 1.05, "≤")
    assert (rule, at) == ("bool", 10 * MILLION)  # both undecided: the lower worst ratio
    ratios[("bool", MILLION)] = Estimate(0.92, 0.65, 1.2)  # undecided at both of its sizes
    rule, spreads, at = best_judged(t, "torch", "compile", 1.05, "≤")
    assert at == 10 * MILLION  # both sizes undecided: the higher ratio, 1.01, is the worst


def test_the_wrapper_sentence_calls_no_ratio_holding_1_or_below_1_a_cost():
    # "costs 1.15 [0.85, 1.45]× ... 0.58 [0.47, 0.69]× ...: what the custom rule's machinery
    # alone costs" read an interval holding 1, and a wrapper faster than jax.nn.relu, as costs
    from types import SimpleNamespace

    from experiments.timing.report import PROSE
    from study.compare.stats import Estimate
    from study.report import say

    def cost(run, older, *wrapper):
        return SimpleNamespace(run=run, older=older, again=(), eager=(), wrapper=wrapper)
    finding = say(PROSE, "finding_parts", costs=[
        cost("C25", False, ("torch", "w", Estimate(1.15, 0.85, 1.45)),
             ("jax", "w", Estimate(0.58, 0.47, 0.69))),
        cost("G3", True, ("torch", "w", Estimate(1.09, 1.01, 1.16)))])
    assert "in C25 no cost detected (1.15 [0.85, 1.45]×, an interval holding 1)" in finding
    assert "in G3 (older code) a cost of 1.09 [1.01, 1.16]×" in finding
    # and a wrapper faster than the built-in is no cost, but a built-in whose own call costs
    # more than its kernels (a reviewer: "not 'no cost'; the baseline is what it says")
    assert ("in C25 less than nothing: the wrapper runs faster than the built-in (0.58 [0.47, "
            "0.69]×)" in finding)
    assert "costs 1.15" not in finding and "costs 0.58" not in finding


def test_another_runs_reproducer_backs_the_finding_only_where_it_shows_the_same(rendered):
    # "On CPU (C25 ...; also C1 ...) ... the two measurements disagree" where C1's this ÷ that,
    # 0.81 [0.52, 1.00], held 1: C1's reproducer agreed with its rule cases
    from types import SimpleNamespace

    import pandas as pd

    from experiments.timing.report import _backing
    from study.compare.stats import Estimate
    fact = rendered[0].probe  # the same causes in every run
    over = {"C25": Estimate(0.59, 0.32, 0.91), "C1": Estimate(0.81, 0.52, 1.0),
            "C4": Estimate(0.7, 0.5, 0.9)}
    probes = pd.DataFrame([{"run": run, "role": "step", "way": "compiled", "signs": "random",
                            AGAIN: Estimate(11.5, 8.5, 18.4), THIS_OVER_AGAIN: o}
                           for run, o in over.items()], dtype=object)
    s = SimpleNamespace(probes=probes, probe_run="C25", probe=fact,
                        probe_also=[("C1", fact), ("C4", fact)])
    again, also = _backing(s)
    assert again[1] == over["C25"]  # C25's two measurements disagree: its interval is below 1
    assert [r for r, _ in also] == ["C4"]  # C4's disagree too; C1's interval holds 1


def test_the_harness_table_shows_every_check_its_csv_lists_once_per_run():
    # the committed tables (the committed-report test holds them to the results): a check
    # whose name is the same for several rows (the variance split of each framework and mode)
    # would be folded into one row of the markdown, keeping only the last
    import csv as csv_module
    folder = os.path.join(os.path.dirname(os.path.dirname(__file__)), "reports", "tables")
    with open(os.path.join(folder, "timing-harness.csv"), encoding="utf-8") as f:
        rows = list(csv_module.DictReader(f))
    keys = [(r["run"], r["check"]) for r in rows]
    assert len(keys) == len(set(keys))
    with open(os.path.join(folder, "timing-harness.md"), encoding="utf-8") as f:
        shown = {line.split(" | ")[0].lstrip("| ") for line in f if line.startswith("| ")}
    assert {check for _, check in keys} <= shown

"""Timing in the report: the cost of each custom rule against its built-in (Q5), the harness's
checks (methodology); the net, compile times and the cases taken apart in the appendix."""
import pandas as pd

from experiments.timing.records import COMPILED_MODES, size_label as _size
from experiments.timing.summary import Summary
from study.experiment import Finding, Rendered
from study.report import Table, answer, frame, macros, say
from study.report.figures import ratio_panels

PROSE = macros("experiments/timing/prose.j2")


def _cost(s: Summary, runs: list[str]) -> pd.DataFrame:
    """Rows: framework and rule; per run, eager and compiled ÷ built-in at 10^6 and compiled at
    the run's largest size; the bytes each rule keeps."""
    rows: dict[tuple, dict] = {}
    columns = ["framework", "rule"]
    for run in runs:
        mine = s.rules[s.rules["run"] == run]
        largest = max(mine["n"], default=None)
        wanted = [(10 ** 6, False), (10 ** 6, True), (largest, True)]
        columns += [f"{run} {'compiled' if c else 'eager'}, {_size(n)}" for n, c in wanted]
        for _, r in mine.iterrows():
            row = rows.setdefault((r["framework"], r["rule"]), {"framework": r["framework"], "rule": r["rule"]})
            key = (r["n"], r["mode"] in COMPILED_MODES)
            if key in wanted:
                row[f"{run} {'compiled' if key[1] else 'eager'}, {_size(r['n'])}"] = r["÷ built-in"]
    kept = {(k["framework"], k["rule"]): k["kept for backward (B/element)"] for _, k in s.kept.iterrows()
            if k["run"] == runs[0]}
    for key, row in rows.items():
        row["kept for backward (B/element)"] = kept.get(key)
    return frame(list(rows.values()), columns + ["kept for backward (B/element)"])


def _harness(s: Summary) -> pd.DataFrame:
    out: dict[tuple, dict] = {}
    for _, h in s.harness.iterrows():
        row = out.setdefault(h["check"], {"check": h["check"], "": h["sense"], "threshold": h["threshold"]})
        row[f"{h['run']}: result"] = h["result"]
        row[f"{h['run']}: of"] = h["of"]
        row[f"{h['run']}: passed"] = h["passed"]
    return frame(list(out.values()))


def render(s: Summary) -> Rendered:
    standard = [c.run for c in s.costs if c.scope == "standard"]
    compile_times = s.rules[s.rules["mode"].isin(COMPILED_MODES)].pivot_table(
        index=["run", "framework", "mode", "rule"], columns="n", values="first call s", aggfunc="first",
        sort=False) if len(s.rules) else pd.DataFrame()
    compile_times.columns = [f"first call s, {_size(n)}" for n in compile_times.columns]
    tables = [
        Table("cost", "What a custom rule costs against its built-in, and what it keeps for backward",
              say(PROSE, "caption_cost", runs=standard), _cost(s, standard) if standard else frame([])),
        Table("harness", "Harness checks: what each measures, its result, and whether it passed",
              say(PROSE, "caption_harness"), _harness(s), listing=s.harness),
        Table("nets", "The two-layer net's step under each rule", say(PROSE, "caption_nets"),
              s.nets[s.nets["run"].isin(standard[:1])].drop(columns=["run", "first call s"]), listing=s.nets),
        Table("compile", "Compile time: the first call of each compiled rule", say(PROSE, "caption_compile"),
              frame(compile_times.reset_index().to_dict("records"))),
        Table("parts", "The eager cost taken apart", say(PROSE, "caption_parts"),
              s.parts.drop(columns=["run"]) if len(s.parts) else s.parts, listing=s.parts),
        Table("probes", "The compiled-torch reproducer: which change moves the time",
              say(PROSE, "caption_probes"), s.probes.drop(columns=["run"]) if len(s.probes) else s.probes,
              listing=s.probes),
        Table("rules", "Every rule, mode and size: time, ratio to the built-in, dispatch, first call", "", s.rules),
        Table("kept", "Bytes each rule keeps for backward", "", s.kept),
        Table("fresh", "Each compiled case in-run against a fresh process", "", s.fresh),
        Table("copies", "The machine's copies: each library into new and existing buffers", "", s.copies),
        Table("ways", "torch.relu's step with new and with existing outputs: page faults", "", s.ways),
        Table("cross", "Our harness against torch.utils.benchmark.Timer", "", s.cross),
        Table("torch_vs_jax", "The same rule in torch and in JAX: torch's time ÷ JAX's", "", s.torch_vs_jax),
        Table("bandwidth", "Each rule's bytes at the largest size as a fraction of the machine's copy", "",
              s.bandwidth)]
    answers, figures = [], {}
    costs = [c for c in s.costs if c.run in standard] or s.costs
    main = next((c for c in costs if c.device == "cpu"), costs[0] if costs else None)
    if main:
        others = [c for c in costs if c.device != main.device]
        answers.append(answer(PROSE, "cost", ("cost",), c=main, others=others))
        rows = s.rules[(s.rules["run"] == main.run)].to_dict("records")
        figures["figures/timing.png"] = (
            lambda: ratio_panels(rows, f"Custom rule ÷ built-in, forward plus backward, run {main.run}"),
            "Timing: each custom rule's time ÷ its built-in's against size, per framework and mode, "
            "with 95% intervals")
    found = [Finding(say(PROSE, "finding_probe", f=s.probe), "probes")] if s.probe else []
    return Rendered(tables, found, figures, answers)

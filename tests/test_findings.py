"""Findings, merged hosts and exports: generated from data, and nothing else."""
import copy
import re

import experiments
from study import report, results
from study.results import Run
from study.tables import Table, to_latex


def committed_runs():
    runs, _ = results.load_runs([results.RESULTS_DIR], set(experiments.NAMES))
    return runs


def findings_text(runs) -> str:
    files = report.render(runs, [], experiments.all_experiments())
    return files["REPORT.md"].split("## Provenance")[0]


def test_findings_follow_the_data_and_drop_when_it_is_missing():
    runs = committed_runs()
    base = findings_text(runs)
    assert "Editing grad_output in place" in base
    without_hazard = findings_text([r for r in runs if r.experiment != "clone_hazard"])
    assert "Editing grad_output in place" not in without_hazard
    # change one fixture number: a seed-net gradient of torch.clamp moves by 4 at w1[2, 1]
    tweaked = []
    for run in runs:
        if run.experiment == "two_layer" and run.provenance["torch"].startswith("2.13"):
            records = copy.deepcopy(run.records)
            for rec in records:
                if rec.get("dataset") == "seed" and rec.get("rule") == "torch.clamp(x, min=0)":
                    rec["grad_w1"][2][1] += 4.0
            run = Run(run.experiment, run.provenance, records, run.path)
        tweaked.append(run)
    before = re.search(r"relu − clamp is (-?\d+) at grad w1\[2, 1\]", base)
    after = re.search(r"relu − clamp is (-?\d+) at grad w1\[2, 1\]", findings_text(tweaked))
    assert int(after.group(1)) == int(before.group(1)) - 4


def test_merging_two_hosts_adds_a_run_column_with_both_labels(tmp_path):
    run = next(r for r in committed_runs() if r.experiment == "two_layer")
    for host, device in (("laptop", "cpu"), ("gpu-box", "cuda")):
        results.write_run("two_layer", {**run.provenance, "host": host, "device": device},
                          run.records, str(tmp_path / host))
    runs, notes = results.load_runs([str(tmp_path / "laptop"), str(tmp_path / "gpu-box")],
                                    set(experiments.NAMES))
    table = next(t for t in experiments.load("two_layer").tables(runs) if t.id == "gradients")
    assert table.headers[0] == "run"
    labels = {row[0] for row in table.rows}
    assert labels == {f"laptop/cpu/torch-{run.provenance['torch']}/jax-{run.provenance['jax']}",
                      f"gpu-box/cuda/torch-{run.provenance['torch']}/jax-{run.provenance['jax']}"}


LATEX_UNESCAPE = [(r"\textbackslash{}", "\\"), (r"\_", "_"), (r"\&", "&"), (r"\%", "%"),
                  (r"\$", "$"), (r"\#", "#"), (r"\{", "{"), (r"\}", "}"),
                  (r"\ensuremath{<}", "<"), (r"\ensuremath{>}", ">")]


def parse_booktabs(tex: str) -> list[list[str]]:
    body = tex.split("\\toprule", 1)[1].split("\\bottomrule", 1)[0].replace("\\midrule", "")
    rows = []
    for line in filter(str.strip, body.splitlines()):
        cells = [c.strip() for c in line.rstrip().removesuffix("\\\\").split(" & ")]
        for old, new in LATEX_UNESCAPE:
            cells = [c.replace(old, new) for c in cells]
        rows.append(cells)
    return rows


def test_latex_export_parses_back_to_the_same_cells():
    t = Table("t", "T", "a_caption", ["op", "value"],
              [["x * (x > 0)", 0.5], ["relu_with_convention(c=0)", -0.0], ["{a}", None]])
    parsed = parse_booktabs(to_latex(t, 3, "x-t"))
    assert parsed == [["op", "value"], ["x * (x > 0)", "0.5"],
                      ["relu_with_convention(c=0)", "-0"], ["{a}", "—"]]

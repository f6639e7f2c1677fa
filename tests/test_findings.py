"""Findings, any mix of runs, and purity: the report is a function of the result files alone.

The runs here are the committed reference (tests/conftest.py), never whatever happens to be
in reports/results/.
"""
import copy
import re

import pytest

import experiments
from study import runsets
from study import report
from study.results import Run
from tests.conftest import reference_runs


def render_text(runs, names=None) -> str:
    exps = [e for e in experiments.all_experiments() if names is None or e.name in names]
    return report.render(runs, [], exps, figures=False)["REPORT.md"]


def findings_of(text: str) -> list[str]:
    """Each numbered finding as it is printed: a list of its lines."""
    block = text.split("## Findings", 1)[1].split("\n## ", 1)[0]
    items: list[list[str]] = []
    for line in block.splitlines():
        if re.match(r"\d+\. ", line):
            items.append([line])
        elif items and line.startswith(" "):
            items[-1].append(line)
    return items


def joined(finding: list[str]) -> str:
    return " ".join(line.strip() for line in finding)


def synthetic_copies(runs) -> list[Run]:
    """Every run again under another host, a cuda device and another torch release (the same
    records, which rendering never changes: only the identity varies)."""
    out = list(runs)
    for run in runs:
        for change in ({"host": "alice-laptop"}, {"device": "cuda"}, {"torch": "9.9.9+test"}):
            prov = {**run.provenance, **change}
            out.append(Run(run.experiment, prov, run.records,
                           run.path.replace(".json", f"-{'-'.join(change.values())}.json")))
    return out


@pytest.fixture(scope="module")
def rendered():
    base = reference_runs()
    mixed = synthetic_copies(base)
    return base, render_text(base), mixed, render_text(mixed)


def test_every_section_shows_every_run_of_any_mix_by_its_legend_label(rendered):
    _, _, runs, text = rendered
    legend = text.split("## Runs", 1)[1].split("\n## ", 1)[0]
    for exp in experiments.all_experiments():
        section = text.split(f"## {exp.name}: ", 1)[1].split("\n## ", 1)[0]
        assert "**error:**" not in section, exp.name
        mine = [r for r in runsets.label_runs(runs) if r.experiment == exp.name]
        shown = " ".join(section.split("Runs shown: ", 1)[1].split(" (see", 1)[0].split())
        assert shown == runsets.tags(mine, mine), exp.name
        assert len({r.tag for r in mine}) == len({runsets.configuration(r) for r in mine})
        for run in mine:
            assert f"\n| {run.tag} | " in legend, (exp.name, run.tag)


@pytest.mark.parametrize("which", ["reference", "with copies under another host, device and release"])
def test_findings_are_short_and_repeat_no_clause(rendered, which):
    text = rendered[1] if which == "reference" else rendered[3]
    found = findings_of(text)
    assert len(found) >= 8
    for finding in found:
        assert len(finding) <= 5, finding
        clauses = [c.strip() for c in re.split(r"[;:]", joined(finding).split(" ([Table")[0])]
        repeated = {c for c in clauses if len(c) > 20 and clauses.count(c) > 1}
        assert not repeated, (repeated, finding)


def claim(finding: list[str]) -> str:
    """A finding without its table link and its closing run attribution ('(C1)', '(cpu [C1];
    cuda [G1]: 0.704×)'): what it says, not which runs it names."""
    text = joined(finding).split(" ([Table", 1)[0].rstrip(".")
    last = re.search(r" \((?:[^()]|\([^()]*\))*\)$", text)
    named = last and re.search(r"\b[CG]\d|\d+ runs|both runs|all but", last.group())
    return text[:last.start()] if named else text


def test_claim_drops_only_a_closing_run_attribution():
    named = ["1. x is 2 (mean 3) (cpu [C1]; cuda [G1]: 4). ([Table 1](#t))"]
    assert claim(named) == "1. x is 2 (mean 3)"
    assert claim(["2. x is 2 (mean 3). ([Table 1](#t))"]) == "2. x is 2 (mean 3)"
    assert claim(["3. x is 2 (16 of 20 runs; 4 runs: 0). ([Table 1](#t))"]) == "3. x is 2"


def test_copies_that_agree_change_only_which_runs_a_finding_names(rendered):
    # copies under another release or device add pairs of releases or of CPU and GPU runs to
    # compare: the two findings that count those pairs may change, no other claim may
    _, base_text, _, mixed_text = rendered
    pairs = ("zero-point-releases", "cpu-vs-gpu-devices")

    def claims(text):
        return [claim(f) for f in findings_of(text) if not any(p in f[-1] for p in pairs)]
    assert claims(base_text) == claims(mixed_text)
    named = " ".join(joined(f) for f in findings_of(mixed_text))
    assert "alice-laptop" not in named  # the copies agree: counted, never listed


def test_findings_follow_the_data_and_drop_when_it_is_missing():
    names = ("two_layer", "clone_hazard")
    runs = [r for r in reference_runs() if r.experiment in names]
    base = "\n".join(joined(f) for f in findings_of(render_text(runs, names)))
    assert "Editing grad_output in place" in base
    without = [r for r in runs if r.experiment != "clone_hazard"]
    assert "Editing grad_output in place" not in render_text(without, names)
    # move one seed-net gradient of torch.clamp by 4 at w1[2, 1] in every two_layer run
    tweaked = []
    for run in runs:
        if run.experiment == "two_layer":
            records = copy.deepcopy(run.records)
            for rec in records:
                if rec.get("dataset") == "seed" and rec.get("rule") == "torch_clamp_min0":
                    rec["grad_w1"][2][1] += 4.0
            run = Run(run.experiment, run.provenance, records, run.path)
        tweaked.append(run)
    pattern = r"relu − clamp\(min=0\) is (-?\d+|0 everywhere)"
    before = re.findall(pattern, base)
    after = re.findall(pattern, "\n".join(joined(f) for f in findings_of(render_text(tweaked,
                                                                                     names))))
    assert before and len(before) == len(after) and before != after

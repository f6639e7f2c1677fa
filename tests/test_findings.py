"""Findings, any mix of runs, and purity: the report is a function of the result files alone."""
import copy
import os
import re

import pytest

import experiments
from study import report, results
from study.results import Run


def committed_runs():
    runs, _ = results.load_runs([results.RESULTS_DIR], set(experiments.NAMES))
    return runs


def render_text(runs) -> str:
    return report.render(runs, [], experiments.all_experiments())["REPORT.md"]


def findings_text(runs) -> str:
    """Only the findings section, as the report writes it (cheaper than a whole render)."""
    exps = experiments.all_experiments()
    numbers = report.number_tables(exps)
    return "\n".join(report._findings_section(report._findings(exps, runs), numbers))


def findings_of(text: str) -> list[str]:
    """Each numbered finding as one line (the report wraps them)."""
    block = text.split("## Findings", 1)[1].split("\n## ", 1)[0]
    items: list[str] = []
    for line in block.splitlines():
        if re.match(r"\d+\. ", line):
            items.append(line)
        elif items and line.startswith(" "):
            items[-1] += " " + line.strip()
    return items


def synthetic_copies(runs) -> list[Run]:
    """Every committed file again under another host, a cuda device and another torch release
    (records unchanged: only the identity varies)."""
    out = list(runs)
    for run in runs:
        for change in ({"host": "alice-laptop"}, {"device": "cuda"}, {"torch": "9.9.9+test"}):
            prov = {**run.provenance, **change}
            out.append(Run(run.experiment, prov, copy.deepcopy(run.records),
                           run.path.replace(".json", f"-{'-'.join(change.values())}.json")))
    return out


def one_identity(runs) -> list[Run]:
    """The committed runs of the most common (host, device, releases, scope)."""
    counts = {}
    for r in runs:
        counts[r.identity] = counts.get(r.identity, 0) + 1
    best = max(counts, key=counts.get)
    return [r for r in runs if r.identity == best]


@pytest.fixture(scope="module")
def mixed():
    runs = synthetic_copies(one_identity(committed_runs()))
    return runs, render_text(runs)


def test_every_section_shows_every_run_of_any_mix(mixed):
    runs, text = mixed
    for exp in experiments.all_experiments():
        section = text.split(f"## {exp.NAME}: ", 1)[1].split("\n## ", 1)[0]
        assert "**error:**" not in section, exp.NAME
        for run in (r for r in runs if r.experiment == exp.NAME):
            assert f"`{run.path.split('/')[-1]}`" in section, (exp.NAME, run.path)


def test_no_findings_clause_repeats_in_any_mix(mixed):
    # The copies hold the same records as ours, so each finding must say exactly what it says
    # for our runs alone, once, with the copies named beside ours.
    from study.runsets import describe
    runs, text = mixed
    base = one_identity(committed_runs())
    single = findings_of(findings_text(base))
    many = findings_of(text)
    assert len(single) == len(many) and single
    ours, all_of_them = describe(base, base), describe(runs, runs)
    for one, mixed_finding in zip(single, many):
        assert mixed_finding.replace(all_of_them, ours) == one


def test_runs_that_agree_are_named_together(mixed):
    _, text = mixed
    mentions = [f for f in findings_of(text) if "alice-laptop" in f]
    assert mentions and all("on alice-laptop and vm" in f for f in mentions)


def test_findings_follow_the_data_and_drop_when_it_is_missing():
    runs = committed_runs()
    base = findings_text(runs)
    assert "editing grad_output in place" in base
    without_hazard = findings_text([r for r in runs if r.experiment != "clone_hazard"])
    assert "editing grad_output in place" not in without_hazard
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
    before = re.findall(r"relu − clamp is (-?\d+|0 everywhere)", base)
    after = re.findall(r"relu − clamp is (-?\d+|0 everywhere)", findings_text(tweaked))
    assert before and len(before) == len(after) and before != after


CODE_CONSTANTS = [  # (module, attribute, another value): measurement settings in code
    ("experiments.zero_point", "FD_EPS", 1e-3),
    ("experiments.zero_point", "GRADCHECK_POINTS", (1.0,)),
    ("experiments.zero_point", "JAX_PLACEMENTS", {}),
    ("study.placement", "FILL_LENGTH", 5),
    ("study.conventions", "DTYPES", ("float64",)),
    ("study.frameworks", "MATMUL_PRECISION", "default"),
    ("experiments.two_layer", "SEED", 123),
    ("experiments.two_layer", "DATASETS", ("seed",)),
    ("experiments.two_layer", "RANDOM_SHAPES", {}),
    ("experiments.training", "DIGITS", {}),
    ("experiments.training", "SEED_NET", {}),
    ("experiments.training", "SEED", 9),
    ("experiments.bifurcation", "HEADLINE", {"width": 1, "depth": 1, "batch": 1}),
    ("experiments.bifurcation", "SWEEPS", {}),
    ("experiments.bifurcation", "INITS", {}),
    ("experiments.bifurcation", "SEED", 5),
    ("experiments.timing", "BUDGET_S", 9.0),
    ("experiments.timing", "BYTES_PER_ELEMENT", 99),
    ("experiments.timing", "SIZES", {}),
    ("experiments.timing", "NETS", {}),
    ("experiments.transforms", "COLUMNS", ("eager grad",)),
    ("experiments.transforms", "ROWS", ()),
    ("experiments.nonscalar_backward", "SEED_A", None),
    ("experiments.clone_hazard", "DTYPE", "float16"),
]


def test_rendering_the_committed_results_ignores_the_code_constants(monkeypatch):
    import importlib
    runs = committed_runs()
    exps = experiments.all_experiments()
    references, _ = results.load_runs([results.REFERENCE_DIR], set(experiments.NAMES))
    for module, name, value in CODE_CONSTANTS:
        monkeypatch.setattr(importlib.import_module(module), name, value)
    after = report.render(runs, [], exps, references)
    for rel, content in after.items():  # the committed files, rendered before the change
        if not rel.endswith(".png"):
            with open(os.path.join(results.REPO_ROOT, "reports", rel), encoding="utf-8") as f:
                assert f.read() == content, rel

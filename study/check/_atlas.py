"""The committed atlas a rule is matched with, read as the report reads it: the results loader,
the errata applied, older records upgraded, by the experiment that declares `builtin_cells`
(found through the `relu_gradient_study.atlas` entry point, so that this package names none).

The run is the committed one of the installed releases where there is one, else the nearest
(the rule's framework's release first, then the newest), and says which releases it compared
with. Its label is the report's (reports/labels.json), never one written here.
"""
import json
import os
from dataclasses import dataclass
from importlib.metadata import entry_points

from study.errors import StudyError, first_error_line
from study.runs import results
from study.runs.provenance import REPO_ROOT

ENTRY_POINTS = "relu_gradient_study.atlas"
LABELS_FILE = os.path.join(REPO_ROOT, "reports", "labels.json")


@dataclass(frozen=True)
class Atlas:
    run: results.Run
    label: str | None  # the report's legend label, where the report has given it one
    ops: list  # the experiment's builtin_cells(run): .rule .name .framework .dtype .cells
    same_releases: bool  # the installed releases, of every framework measured


def experiments_with_atlas() -> list:
    return [ep.load() for ep in entry_points(group=ENTRY_POINTS)]


def _releases(run) -> dict:
    return {"torch": run.provenance["torch"], "jax": run.provenance["jax"]}


def _chosen(runs: list, installed: dict, framework: str, device: str, capability: str | None):
    """The run of the installed releases, else of the rule's framework's release, else the
    newest; of the device the check ran on where there is one, and of the standard scope; of
    this CPU's kernel set (torch's capability: a kernel's vector width decides where a
    placement-dependent value sits) where there is a choice."""
    mine = [r for r in runs if r.scope == "standard"]
    same_device = [r for r in mine if r.provenance["device"] == device] or mine
    if not same_device:
        return None
    return max(same_device, key=lambda r: (
        all(_releases(r)[fw] == v for fw, v in installed.items()),
        _releases(r).get(framework) == installed.get(framework),
        r.provenance.get("torch_cpu_capability") == capability, r.provenance["utc"]))


def _label(run) -> str | None:
    from study.report.runs import configuration
    try:
        with open(LABELS_FILE, encoding="utf-8") as f:
            return json.load(f).get(configuration(run))
    except (OSError, ValueError):
        return None


def committed_atlas(installed: dict, framework: str, device: str, capability: str | None = None,
                    results_dir: str = results.RESULTS_DIR) -> Atlas | str:
    """The Atlas to match with, or why there is none (a sentence)."""
    if not os.path.isdir(results_dir):
        return f"no results folder here ({os.path.relpath(results_dir, REPO_ROOT)})"
    try:
        providers = experiments_with_atlas()
    except Exception as exc:  # noqa: BLE001  an install without the study's experiments
        return f"the study's experiments do not load here: {first_error_line(exc)}"
    for exp in providers:
        if not os.path.isdir(os.path.join(results_dir, exp.name)):
            continue
        try:
            runs, _ = results.load_runs([results_dir], {exp.name}, only=(exp.name,))
            runs = results.ready(runs, results.load_errata(), [exp])
        except StudyError as exc:
            return str(exc)
        run = _chosen(runs, installed, framework, device, capability)
        if run is not None:
            same = all(_releases(run)[fw] == v for fw, v in installed.items())
            return Atlas(run, _label(run), exp.builtin_cells(run), same)
    return "no committed atlas in this checkout"

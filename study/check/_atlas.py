"""The committed atlas a rule is matched with: the conventions dataset (study.conventions), the
checkout's results where they are present, else the dataset the package ships.

The run is the one of the installed releases where there is one, else the nearest (the rule's
framework's release first, then the newest), and the check says which dataset and releases it
compared with. Its label is the report's, never one written here.
"""
from dataclasses import dataclass

from study import conventions
from study.errors import StudyError


@dataclass(frozen=True)
class Atlas:
    run: dict  # the dataset's entry: run, label, torch, jax, device, kernels, commit
    source: str  # the dataset, in words
    ops: list  # study.conventions.BuiltinCells of the run
    same_releases: bool  # the installed releases, of every framework measured


def _releases(run: dict) -> dict:
    return {"torch": run["torch"], "jax": run["jax"]}


def _chosen(runs: list[dict], installed: dict, framework: str, device: str,
            capability: str | None) -> dict | None:
    """The run of the installed releases, else of the rule's framework's release, else the
    newest; of the device the check ran on where there is one; of this CPU's kernel set
    (torch's capability: a kernel's vector width decides where a placement-dependent value
    sits) where there is a choice."""
    same_device = [r for r in runs if r["device"] == device] or runs
    if not same_device:
        return None
    present = _distributions()
    return max(same_device, key=lambda r: (
        all(_releases(r)[fw] == v for fw, v in installed.items()),
        _releases(r).get(framework) == installed.get(framework),
        all(_releases(r)[fw] == v for fw, v in present.items()),
        r.get("torch_cpu_capability") == capability, r["utc"]))


def _distributions() -> dict:
    """The torch and JAX releases installed, imported or not (a torch rule's check imports no
    JAX): among runs alike in the imported ones, the run of these wins over a newer run of
    another JAX, as a reader of 'compared with' expects."""
    from importlib.metadata import PackageNotFoundError, version
    out = {}
    for fw in ("torch", "jax"):
        try:
            out[fw] = version(fw)
        except PackageNotFoundError:
            pass
    return out


def committed_atlas(installed: dict, framework: str, device: str, capability: str | None = None,
                    results_dir: str = conventions.results.RESULTS_DIR) -> Atlas | str:
    """The Atlas to match with, or why there is none (a sentence)."""
    try:
        dataset = conventions.load(results_dir)
    except StudyError as exc:
        return str(exc)
    with_cells = set(dataset.cells["run"])
    run = _chosen([r for r in dataset.runs if r["run"] in with_cells], installed, framework,
                  device, capability)
    if run is None:
        return f"{dataset.source} holds no atlas"
    same = all(_releases(run)[fw] == v for fw, v in installed.items())
    return Atlas(run, dataset.source, dataset.builtins(run["run"]), same)

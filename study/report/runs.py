"""Runs side by side: stable labels, names that say what differs, rows merged over runs.

A run's label (C1, C2, ... on a CPU, G1, ... on a GPU) is given once, when a report first
sees its configuration (device, machine, releases, scope), and recorded in reports/labels.json;
adding a run never renames another. A table over several runs shows a row once with the runs
that give it, and a runs column only where more than one run is shown.
"""
import json
import re
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import replace

import pandas as pd

from study.report.format import row_texts
from study.runs.results import IDENTITY, Run

DEVICE_PREFIX = {"cpu": "C", "cuda": "G"}


def configuration(run: Run) -> str:
    """What a label names: the run's identity (study.runs.results.IDENTITY: device, host, CPU model,
    kernels and cores, GPU model, releases, scope)."""
    return "|".join(map(str, run.identity))


_CORES = IDENTITY.index("cores")


def _without_cores(configuration_: str) -> str:
    """The configuration as labels.json keyed it before the core count joined the identity."""
    parts = configuration_.split("|")
    return "|".join(parts[:_CORES] + parts[_CORES + 1:])


def assign_labels(runs: list[Run], known: dict[str, str]) -> dict[str, str]:
    """`known` with a new label for each configuration it lacks: the next number of its device's
    prefix, configurations first measured earlier numbered first. A configuration known by its
    older key (without the core count) keeps that label: the first measured of those that share
    the older key does, and the older key goes."""
    labels = dict(known)
    first = {}
    for run in runs:
        c = configuration(run)
        first[c] = min(first.get(c, "~"), str(run.provenance.get("utc")))
    for c in sorted(set(first) - set(labels), key=lambda c: (first[c], c)):
        older = _without_cores(c)
        if older in labels and older.count("|") < c.count("|"):
            labels[c] = labels.pop(older)
    for c in sorted(set(first) - set(labels), key=lambda c: (first[c], c)):
        prefix = DEVICE_PREFIX.get(c.split("|")[0], c.split("|")[0].upper() + "-")
        taken = [int(v[len(prefix):]) for v in labels.values()
                 if v.startswith(prefix) and v[len(prefix):].isdigit()]
        labels[c] = f"{prefix}{max(taken, default=0) + 1}"
    return labels


def labelled(runs: list[Run], labels: dict[str, str],
             host_gpus: dict[str, str] | None = None) -> list[Run]:
    """The runs with their labels, and titles naming what sets each apart from the main run.
    `host_gpus`: the GPU on each cpu run's host, by result file, where provenance does not
    record it (study.compare.device_comparison.host_gpu)."""
    tagged = [replace(run, tag=labels[configuration(run)]) for run in runs]
    main = next((r for r in tagged if r.tag == main_label(tagged)), None)
    return [replace(run, title=title(run, main, host_gpus)) for run in tagged]


def labels_json(labels: dict[str, str]) -> str:
    ordered = dict(sorted(labels.items(), key=lambda kv: label_order(kv[1])))
    return json.dumps(ordered, indent=1) + "\n"


def label_order(label: str) -> tuple:
    digits = "".join(ch for ch in label if ch.isdigit())
    return label.rstrip("0123456789"), int(digits or 0)


def span(labels) -> str:
    """'C1–C3, C5, G1': labels in legend order, three or more consecutive ones as a range."""
    spans: list[list[str]] = []
    for label in sorted(set(labels), key=label_order):
        prefix, n = label_order(label)
        if spans and label_order(spans[-1][-1]) == (prefix, n - 1):
            spans[-1].append(label)
        else:
            spans.append([label])
    return ", ".join(s[0] if len(s) == 1 else ", ".join(s) if len(s) == 2 else f"{s[0]}–{s[-1]}"
                     for s in spans)


def labels_in(text: str) -> set[str]:
    """The run labels a text names, a span ('C8–C24') as each of its labels."""
    spans = re.compile(r"\b([CG])(\d+)–\1(\d+)\b")
    out = {f"{p}{n}" for p, a, b in spans.findall(text) for n in range(int(a), int(b) + 1)}
    return out | {p + n for p, n in re.findall(r"\b([CG])(\d+)\b", spans.sub(" ", text))}


def older_unsaid(caption: str, shown: str, older: list[str]) -> list[str]:
    """The older-code runs a table shows (in its caption or rows, `shown`) that no clause of its
    caption saying 'older code' names, in label order."""
    covered = set().union(*(labels_in(c) for c in re.split(r";\s|\.\s|\.$", caption)
                            if "older code" in c.lower()))
    return sorted((labels_in(caption + " " + shown) & set(older)) - covered, key=label_order)


def releases(runs: list[Run]) -> dict[str, tuple[str, str]]:
    """label -> (torch, jax): the releases each run measured, for answers to name."""
    return {run.tag: (run.provenance.get("torch"), run.provenance.get("jax")) for run in runs}


def release_span(labels, by_label: dict[str, tuple[str, str]]) -> str:
    """'torch 2.13.0+cpu, jax 0.10.2' for the runs named (a label, a list, or a span such as
    'C2, C8–C24'); a framework measured at several releases by its oldest and newest."""
    if isinstance(labels, str):
        labels = [f"{p}{n}" for p, a, b in re.findall(r"\b([A-Z]+)(\d+)(?:–[A-Z]+(\d+))?",
                                                     labels)
                  for n in range(int(a), int(b or a) + 1)]
    known = [by_label[label] for label in labels if label in by_label]
    parts = []
    for i, framework in enumerate(("torch", "jax")):
        versions = sorted({k[i] for k in known if k[i]}, key=lambda v: (_version_key(v), v))
        if versions:
            parts.append(f"{framework} " + (versions[0] if len(versions) == 1 else
                                            " and ".join(versions) if len(versions) == 2 else
                                            f"{versions[0]} to {versions[-1]}"))
    return ", ".join(parts)


def _version_key(version: str) -> tuple:
    return tuple(int(x) if x.isdigit() else 0 for x in re.split(r"[.+]", version)[:3])


def cpu_name(p: dict) -> str:
    """'AMD EPYC, 2 cores, AVX2': the CPU side of a run's identity."""
    kernels = p.get("torch_cpu_capability") or "kernels not recorded"
    return f"{p.get('cpu', '—')}, {p.get('cpu_count', '—')} cores, {kernels}"


def machine_name(p: dict, host_gpu: str | None = None) -> str:
    """The host and what it computed on: 'vm: AMD EPYC, 2 cores, AVX2', its GPU for a cuda run
    ('vm: NVIDIA H100 80GB HBM3, on Intel(R) Xeon(R) Processor, 16 cores, AVX512'), and the GPU
    of a cpu run's host ('vm (the H100 host): Intel(R) Xeon(R) Processor, 16 cores, AVX512')."""
    gpu = p.get("gpu")
    if p["device"] != "cpu" and isinstance(gpu, dict):
        return f"{p['host']}: {gpu.get('name')}, on {cpu_name(p)}"
    host_gpu = host_gpu or p.get("host_gpu")
    host = f"{p['host']} (the {short_gpu(host_gpu)} host)" if host_gpu else p["host"]
    return f"{host}: {cpu_name(p)}"


def short_gpu(name: str | None) -> str:
    """'H100' for 'NVIDIA H100 80GB HBM3': the first word with a digit."""
    name = str(name or "GPU not recorded")
    return next((w for w in name.split() if any(ch.isdigit() for ch in w)), name)


def _short_gpu(p: dict) -> str:
    gpu = p.get("gpu")
    return short_gpu(gpu.get("name") if isinstance(gpu, dict) else None)


def differences(p: dict, q: dict) -> list[str]:
    """Every part of run p's identity that differs from run q's, in IDENTITY's order (a cuda
    run's GPU by its short name): device, host, CPU model, cores, kernels, torch, jax, scope."""
    parts = []
    if p["device"] != q.get("device"):
        parts.append(_short_gpu(p) if p["device"] == "cuda" else p["device"])
    parts += [f"host {p['host']}"] * (p["host"] != q.get("host"))
    if p["device"] == "cpu" and p.get("host_gpu") != q.get("host_gpu"):
        parts.append(f"the {short_gpu(p['host_gpu'])} host" if p.get("host_gpu") else "no GPU")
    parts += [str(p.get("cpu"))] * (p.get("cpu") != q.get("cpu"))
    parts += [f"{p.get('cpu_count')} cores"] * (p.get("cpu_count") != q.get("cpu_count"))
    kernels = p.get("torch_cpu_capability")  # said on another CPU model, even where alike
    parts += [str(kernels)] * (kernels != q.get("torch_cpu_capability")
                               or p.get("cpu") != q.get("cpu"))
    parts += [f"{k} {p[k]}" for k in ("torch", "jax") if p[k] != q.get(k)]
    return parts + [p["scope"]] * (p["scope"] != q.get("scope", "standard"))


def title(run: Run, main: Run | None, host_gpus: dict[str, str] | None = None) -> str:
    """The label and every part of its identity that sets the run apart from the main CPU run:
    'C2 (AVX512, torch 2.11.0+cu130)', 'C6 (full)', 'C8 (host lab2)', 'C5 (the H100 host, ...)'."""
    def known(r: Run) -> dict:
        gpu = (host_gpus or {}).get(r.path)
        return {**r.provenance, "host_gpu": gpu} if gpu else r.provenance
    parts = differences(known(run), known(main) if main else {"scope": "standard"})
    return f"{run.tag} ({', '.join(parts)})" if parts else run.tag


# the main run's label while a document renders its experiments (main_run reads it): each
# experiment sees its own runs only, and must name the same main run as the document
_CHOSEN: ContextVar[str | None] = ContextVar("main_run_label", default=None)
_MAIN_PROVENANCE: ContextVar[dict | None] = ContextVar("main_run_provenance", default=None)


def main_label(runs: list[Run]) -> str | None:
    """The main run's label: the CPU run of the newest code that holds every experiment. A
    label's code is as new as the oldest commit among its runs, a commit as new as the first
    run it measured (provenance's git_commit and utc); of labels alike, the lowest. Where no
    CPU label holds every experiment, the CPU label that holds the most; without a CPU run, any
    device's."""
    if not runs:
        return None
    def commit(r: Run):
        return r.provenance.get("git_commit")
    first: dict = {}
    for r in runs:
        first[commit(r)] = min(first.get(commit(r), "~"), str(r.provenance.get("utc")))
    groups: dict[str, list[Run]] = {}
    for r in sorted(runs, key=lambda r: label_order(r.tag)):
        groups.setdefault(r.tag, []).append(r)
    cpu = {k: g for k, g in groups.items() if g[0].provenance["device"] == "cpu"} or groups
    return max(cpu, key=lambda k: (len({r.experiment for r in cpu[k]}),
                                   min(first[commit(r)] for r in cpu[k])))


def main_run(runs: list[Run]) -> Run | None:
    """The run the others are named against and the one an answer reads first: the document's
    main run (main_label over every experiment's runs, while it renders) where `runs` hold it,
    else main_label of `runs` themselves."""
    chosen = _CHOSEN.get()
    label = chosen if any(r.tag == chosen for r in runs) else main_label(runs)
    return next((r for r in runs if r.tag == label), None)


@contextmanager
def main_chosen(label: str | None, provenance: dict | None = None):
    """While rendering, main_run names `label`'s run wherever an experiment's runs hold it,
    and pin_apart compares a run with its `provenance`."""
    token, recorded = _CHOSEN.set(label), _MAIN_PROVENANCE.set(provenance)
    try:
        yield
    finally:
        _CHOSEN.reset(token)
        _MAIN_PROVENANCE.reset(recorded)


def glibc(p: dict) -> str | None:
    """The glibc release a run's platform names (provenance's os), or None."""
    m = re.search(r"glibc([\d.]+)", str(p.get("os") or ""))
    return m.group(1) if m else None


def environment_apart(p: dict, q: dict) -> list[str]:
    """Run p's Python and glibc where they differ from run q's."""
    return ([f"Python {p.get('python')}"] * (p.get("python") != q.get("python"))
            + [f"glibc {glibc(p)}"] * (glibc(p) != glibc(q)))


def pin_apart(run: Run, framework: str) -> str:
    """', torch 2.13.0+cu130, Python 3.13.5, glibc 2.41': what sets a run of one `framework`'s
    release history apart from the main run besides that release: the other framework's
    release or build (the pin), Python and glibc; '' where nothing does, or outside a render."""
    main = _MAIN_PROVENANCE.get()
    if main is None:
        return ""
    p = run.provenance
    other = "jax" if framework == "torch" else "torch"
    parts = [f"{other} {p[other]}"] * (p.get(other) != main.get(other))
    return "".join(f", {x}" for x in parts + environment_apart(p, main))


def older(run: Run, runs: list[Run]) -> bool:
    """Whether the run is older code: measured at another commit than the newest run of its
    experiment among `runs` (by provenance's utc)."""
    same = [r for r in runs if r.experiment == run.experiment] or [run]
    newest = max(same, key=lambda r: str(r.provenance.get("utc")))
    return run.provenance.get("git_commit") != newest.provenance.get("git_commit")


def older_code(runs: list[Run]) -> list[str]:
    """The labels of the runs that are older code (`older`), in label order."""
    return sorted({r.tag for r in runs if older(r, runs)}, key=label_order)


def side_by_side(long: pd.DataFrame, every: list[str] | None = None) -> pd.DataFrame:
    """Rows of several runs (a 'run' column of labels, the rest the view's columns) merged: a row
    that several runs print alike appears once, with their labels in a leading 'runs' column
    (spelled out, 'C1–C3, G1': 'all' would mean other runs in other tables). Rows are alike
    as the table prints them (study.report.format.row_texts): values that differ past the
    figures it prints read as one row, and the CSV keeps each. Rows keep the view's order of
    its first column (what a row is about), and within one value of it go in label order of
    their first run. With one run of `every`, the column is left out."""
    every = sorted(set(every if every is not None else long["run"]), key=label_order)
    columns = [c for c in long.columns if c != "run"]
    if len(every) <= 1:
        return long[columns].reset_index(drop=True)
    groups: dict[tuple, list] = {}
    for row in long.itertuples(index=False):
        cells = dict(zip(long.columns, row))
        key = tuple(row_texts([None if _missing(cells[c]) else cells[c] for c in columns]))
        groups.setdefault(key, [[], cells])[0].append(cells["run"])
    first = {}
    for cells in (c for _, c in groups.values()):
        first.setdefault(_key_text(cells[columns[0]]) if columns else "", len(first))
    merged = sorted(groups.values(), key=lambda g: (
        first[_key_text(g[1][columns[0]]) if columns else ""], label_order(min(
            g[0], key=label_order))))
    rows = [{"runs": span(who), **{c: cells[c] for c in columns}} for who, cells in merged]
    return pd.DataFrame(rows, columns=["runs"] + columns, dtype=object)


def _key_text(value) -> str:
    return "" if _missing(value) else str(value)


def _missing(value) -> bool:
    return value is None or value is pd.NA or (isinstance(value, float) and value != value)


def older_noted(note: str, older: list[str]) -> str:
    """A note under a table that names older-code runs (`older`) without saying 'older code':
    '(older code)' after the first mention of each, and 'Older code: ...' closing it for one
    it names only within a span ('C26–C44')."""
    if "older code" in note.lower():
        return note
    spanned = []
    for label in sorted(labels_in(note) & set(older), key=label_order):
        said = re.subn(rf"(?<!–)\b{label}\b(?!–)", lambda m: m.group() + " (older code)", note,
                       count=1)
        note = said[0]
        spanned += [label] * (not said[1])
    return f"{note.rstrip()} Older code: {span(spanned)}." if spanned else note


_NUMBER_TEXT = re.compile(r"^(?:—|[-−]?(?:\d[\d.]*(?:e[-+]?\d+)?|NaN|inf)(?: \[[^\]]*\])?[†*]?)$")


def rows_in_one_order(view: pd.DataFrame) -> pd.DataFrame:
    """A view whose first column is 'run' with its rows in one order in every run: each run's
    rows together, runs in the order they come, and within a run rows ordered by what they are
    about (the columns after 'run', up to the first of numbers alone), as the first run to
    hold each orders them; rows alike in those columns keep their order."""
    columns = list(view.columns)
    if columns[:1] != ["run"] or view["run"].nunique() < 2:
        return view
    about = []
    for c in columns[1:]:
        if all(_missing(v) or not isinstance(v, str) or _NUMBER_TEXT.match(v) for v in view[c]):
            break  # a column of numbers (or of their texts): what is measured, not what about
        about.append(c)
    if not about:
        return view
    keys = [tuple(map(_key_text, row)) for row in view[about].itertuples(index=False)]
    runs = view["run"].tolist()
    rank = {k: i for i, k in enumerate(dict.fromkeys(keys))}
    first = {r: i for i, r in enumerate(dict.fromkeys(runs))}
    order = sorted(range(len(view)), key=lambda i: (first[runs[i]], rank[keys[i]], i))
    return view.iloc[order].reset_index(drop=True)

"""The run legend and the glossary: each run's label (C1, G1, ...), its machine, releases and
commit, and what sets it apart from the main run; release histories as one row; then the
study's words, from the term list (terms.toml)."""
import functools
import os
import re
import tomllib

from study.report.format import experiment_words, heading, wrap
from study.report.prose import ENV, macros, say
from study.report.runs import (differences, glibc, label_order, machine_name,
                               main_run, older, span, title)
from study.report.table import Table, frame, markdown
from study.measure.placement import FILL_LENGTH
from study.runs.results import Run

PROSE = macros("study/report/document.j2")
TERMS = os.path.join(os.path.dirname(__file__), "terms.toml")


@functools.cache
def terms() -> tuple[dict, ...]:
    """The term list the glossary defines, in its order (name, definition, uses, joins)."""
    with open(TERMS, "rb") as f:
        return tuple(tomllib.load(f)["term"])


def by_label(runs: list[Run]) -> dict[str, list[Run]]:
    out: dict[str, list[Run]] = {}
    for run in sorted(runs, key=lambda r: label_order(r.tag)):
        out.setdefault(run.tag, []).append(run)
    return out


def _commits(group: list[Run]) -> str:
    seen = {}
    for run in group:
        c = str(run.provenance.get("git_commit") or "—")[:7]
        seen[c] = seen.get(c, False) or bool(run.provenance.get("git_dirty"))
    return ", ".join(c + (" (dirty)" if dirty else "") for c, dirty in sorted(seen.items()))


def _host_gpu(group: list[Run], runs: list[Run]) -> str | None:
    from study.compare.device_comparison import host_gpu
    return next((g for g in (host_gpu(r, runs) for r in group) if g), None)


def legend_line(group: list[Run], runs: list[Run]) -> str:
    p = group[0].provenance
    return (f"{group[0].tag}: {p['device']}, {machine_name(p, _host_gpu(group, runs))}, "
            f"torch {p['torch']}, "
            f"jax {p['jax']}, {group[0].scope} run, commit {_commits(group)}")


def glossary(runs: list[Run], rendered: str = "", references: list[Run] = ()) -> list[str]:
    """The terms the report uses, defined before the answers use them: each run label by what
    sets it apart from the main run (a label only a committed reference holds, which the
    Reproduction section names, by its machine and releases), then the study's words
    (terms.toml), a term that `joins` in its predecessor's item; a definition may say
    `rendered`, what rendered the report."""
    described = []
    mine = {r.tag for r in runs}
    for label, group in by_label([r for r in references if r.tag not in mine]).items():
        p = group[0].provenance
        described.append((label, f"({say(PROSE, 'reference_only')}: {machine_name(p)}, torch "
                                 f"{p['torch']}, jax {p['jax']})"))
    for row in _legend_rows(runs):
        labels, what = row["run"], row["what"]
        gpu = _gpu_what(labels, runs)
        described.append((labels, f"({gpu or what})" if gpu or what else
                          f"(the **main run**, {say(PROSE, 'main_run')})"))
    described.sort(key=lambda d: label_order(re.split(r"[,–]", d[0])[0]))
    words = [{**t, "definition": ENV.from_string(t["definition"]).render(
        rendered=rendered, fill=FILL_LENGTH)}
             for t in terms() if "within" not in t]
    for this, then in zip(words, words[1:] + [{}]):  # an item ends in a full stop, a join in ';'
        this["definition"] = this["definition"].rstrip(".") + ("" if then.get("joins") else ".")
    items = say(PROSE, "glossary", runs=described, terms=words).split(" |")
    return ["## Glossary", ""] + [wrap(i, "  ") for i in items] + [""]


def _gpu_what(label: str, runs: list[Run]) -> str | None:
    """A GPU run as the glossary says it: its GPU on the host of the cpu run measured there
    ('H100, on C5's host, its releases'), or what sets it apart from the first GPU run ('as G1,
    full'; 'as G1 but an H200, another host'); None for a cpu run."""
    from study.compare.device_comparison import gpu_of, one_host
    from study.report.runs import short_gpu
    mine = next((r for r in runs if r.tag == label and r.provenance["device"] == "cuda"), None)
    if mine is None:
        return None
    p = mine.provenance
    host = next((r for r in runs if r.provenance["device"] == "cpu" and one_host(r, mine)), None)
    first = min((r for r in runs if r.provenance["device"] == "cuda"),
                key=lambda r: label_order(r.tag))
    if first.tag != label:
        parts = differences(p, first.provenance)
        gpu = gpu_of(mine) != gpu_of(first)
        return (f"as {first.tag}" + (f" but an {short_gpu(gpu_of(mine))}, another host"
                                     if gpu else "") + "".join(f", {x}" for x in parts))
    if host is None:
        return None
    same = (host.provenance["torch"], host.provenance["jax"]) == (p["torch"], p["jax"])
    return f"{short_gpu(gpu_of(mine))} on {host.tag}'s host" + (", its releases" if same else "")


def _legend_rows(runs: list[Run], references: list[Run] = ()) -> list[dict]:
    """A row per label: each run's, and each label only a committed reference holds (its
    experiments marked 'reference'); labels alike but for their releases merged
    (_releases_merged). A row's 'what' (the glossary's) says what sets it apart from the main
    run; its Python and glibc are the legend's column."""
    main = main_run(runs)
    mine = {r.tag for r in runs}
    kept = [r for r in references if r.tag not in mine]
    everyone = list(runs) + kept
    rows = []
    for label, group in by_label(everyone).items():
        p = group[0].provenance
        old = sorted(r.experiment for r in group if older(r, everyone))
        every = sorted({r.experiment for r in runs})
        named = title(group[0], main) if not group[0].title else group[0].title
        what = [x for x in [named[len(label):].strip(" ()")] if x]  # Python, glibc: the table's
        done = _experiments(sorted(r.experiment for r in group), every)
        rows.append({"run": label, "what": ", ".join(what), "device": p["device"],
                     "machine": machine_name(p, _host_gpu(group, runs)), "torch": p["torch"],
                     "jax": p["jax"], "Python, glibc": environment(p),
                     "scope": group[0].scope,
                     "experiments": done + (" (reference)" if label not in mine else ""),
                     "commit": _commits(group), "older code": _experiments(old, every)})
    return _releases_merged(rows, list(by_label(everyone)))


def environment(p: dict) -> str:
    """'3.11.7, 2.36': the run's Python and the glibc its platform names ('—' unrecorded)."""
    return f"{p.get('python') or '—'}, {glibc(p) or '—'}"


def _experiments(names: list[str], every: list[str]) -> str:
    """'two layer, zero point' (study.report.format.experiment_words), 'all 8' where it is every
    experiment, '—' where none."""
    if len(names) > 2 and names == every:
        return f"all {len(every)}"
    return ", ".join(map(experiment_words, names)) or "—"


def legend(runs: list[Run], references: list[Run] = ()) -> list[str]:
    rows = [{k: v for k, v in row.items() if k != "what"}
            for row in _legend_rows(runs, references)]
    table = Table("runs", "Runs", "", frame(rows))
    return [heading(2, "runs", "Runs"), "", wrap(say(PROSE, "legend")), "",
            markdown(table), ""]


def _releases_merged(rows: list[dict], labels: list[str]) -> list[dict]:
    """Three or more runs alike but for their releases (a release history), with consecutive
    labels, as one row: their labels, and each framework's releases from the oldest to the
    newest (every run's own row is in the appendix's provenance). A run alike but apart from
    the others' labels keeps its own row, so rows stay in label order (C2; C3; C8–C24)."""
    alike: dict[tuple, list[int]] = {}
    stretch: dict[tuple, tuple] = {}  # a key -> its stretch of consecutive rows now open
    for i, row in enumerate(rows):
        key = tuple(v for k, v in row.items() if k not in ("run", "what", "torch", "jax"))
        if key not in stretch or alike[stretch[key]][-1] != i - 1:
            stretch[key] = key + (i,)
        alike.setdefault(stretch[key], []).append(i)
    out = []
    for i, row in enumerate(rows):
        group = next(g for g in alike.values() if i in g)
        if len(group) < 3:
            out.append(row)
        elif i == group[0]:
            merged = {k: ", ".join(_version_range([rows[j][k] for j in group]))
                      if k in ("torch", "jax") else v for k, v in row.items()}
            shared = [part for part in row["what"].split(", ") if all(
                part in rows[j]["what"].split(", ") for j in group)]
            out.append({**merged, "run": span(labels[j] for j in group),
                        "what": say(PROSE, "legend_releases", shared=", ".join(shared))})
    return out


def _version_range(versions: list[str]) -> list[str]:
    ordered = _version_list(versions)
    if len(ordered) < 3:
        return ordered
    releases = len({v.split("+")[0] for v in ordered})  # 2.13.0+cpu and +cu130: one release
    count = (f"{releases} releases" if releases == len(ordered)
             else f"{releases} releases, {len(ordered)} builds")
    return [f"{ordered[0]} … {ordered[-1]} ({count})"]


def _version_list(versions: list[str]) -> list[str]:
    """Each release once, oldest first (the glossary lists them where the legend elides)."""
    from packaging.version import InvalidVersion, Version
    try:
        return sorted(set(versions), key=lambda v: Version(v))
    except InvalidVersion:
        return sorted(set(versions))

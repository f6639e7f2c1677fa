"""The Reproduction and CPU-against-GPU sections: each rerun against the committed reference
(study.compare.reproduction) and each cuda run against its cpu partner
(study.compare.device_comparison)."""
import re
from collections import Counter

from study.compare.cells import Value
from study.report.format import (cell_text, csv_value, experiment_words, heading, names, number,
                                 shorten, wrap)
from study.report.prose import macros, say
from study.report.runs import label_order, main_run, older_code, short_gpu, span
from study.report.table import Table, csv, frame, markdown

DEVICES = "cpu_vs_gpu"
# record fields whose values name themselves (torch, float16, MyReLU): said without the field
SELF_NAMED = ("framework", "dtype", "rule", "op", "mode", "transformation", "net", "style", "case",
              "ratio")
# a record's table, where its name abbreviates (a name in words stands as it is)
PART_WORDS = {"inits": "initialisations"}
APPENDIX_FILE = "APPENDIX.md"
PROSE = macros("study/report/document.j2")


def _name(run, everyone) -> str:
    same = {r.path for r in everyone if r.tag == run.tag and r.experiment == run.experiment}
    when = f", {run.provenance['utc'][:16].replace('T', ' ')} UTC" if len(same) > 1 else ""
    return f"{run.tag}{when}"


def cell_words(name, rules: dict[str, str] | None = None) -> str:
    """A cell's name as the report words it: its record's values, then where in the record
    ('F.relu6, float32, reverse, at NaN', 'grad w1[0, 2]'); an input label in words
    (input_words), a rule by its display name (`rules`: key -> name), a record's field and a
    table's name in words (path_words)."""
    fields = [input_words(v) if k == "input" else PART_WORDS.get(v, path_words(v)) if k == "part"
              else _rule_names(v, rules or {}) if isinstance(v, str) and k in SELF_NAMED
              else f"{path_words(k)} {_rule_names(v, rules or {})}" if isinstance(v, str)
              else f"{path_words(k)} = {v}" for k, v in name if k != "path"]
    path = dict(name).get("path")
    return ", ".join(fields) + (f": {path_words(path)}" if path is not None else "")


def path_words(path) -> str:
    """Where in a record, as words: 'grad w1[0, 2]' for 'grad_w1[0][2]', 'first step differs
    from other framework' for 'first_step_differs_from_other_framework'."""
    text = re.sub(r"\]\[", ", ", str(path))
    text = re.sub(r"(?<=[A-Za-z0-9])_(?=[A-Za-z0-9])", " ", text)
    # one index of a list ('correct[2]') in words; grad w1[i, j] as the glossary writes it
    return re.sub(r"\b([A-Za-z][\w ]*?)\[(\d+)\]", r"\1, element \2", text)


def _rule_names(text: str, rules: dict[str, str]) -> str:
    """The text with each rule key it holds ('torch_myrelu_seed') as the rule's display name."""
    return re.sub(r"\b(?:torch|jax)_[\w.]*\w", lambda m: rules.get(m.group(), m.group()), text)


def rule_names(runs) -> dict[str, str]:
    """key -> display name of every rule a run's records name (a record with both)."""
    out = {}
    for run in runs:
        for table in run.tables:
            rows = run.rows(table)
            if rows and "rule" in rows[0] and "name" in rows[0]:
                out.update((r["rule"], r["name"]) for r in rows if r.get("name"))
    return out


def input_words(label) -> str:
    """'at NaN' for the atlas's '+nan', 'at +0' for '+0.0': an input label as the prose says it
    (the glossary defines the others, such as min_subnormal and 3-ulp)."""
    words = {"+nan": "NaN", "-nan": "−NaN", "+0.0": "+0", "-0.0": "−0", "+inf": "+∞",
             "-inf": "−∞"}
    label = str(label)
    return "at " + words.get(label, label)


def _against(comps, references, everyone) -> dict:
    """What a run's experiments were compared with, where it is not the reference run of the
    same label ('C1'; earlier: a reference run against an earlier reference), and the machine
    the reference ran on where it is not the run's: its GPU, or its CPU (model, cores, kernels)."""
    from study.compare.reproduction import is_reference_run
    tags = span({c.reference.tag for c in comps})
    earlier = all(is_reference_run(c.run, references) for c in comps)
    own = {c.reference.tag for c in comps} == {comps[0].run.tag} and not earlier
    when = {"own_when": _when([c.run for c in comps]), "reference_when": _when(
        [c.reference for c in comps])} if own else {}
    p, q = comps[0].run.provenance, comps[0].reference.provenance
    gpu = p["device"] == "cuda" and _gpu_name(p) != _gpu_name(q)
    return {"tags": None if own else tags, "earlier": earlier, "own": own,
            "tags_older": all(_older(c.reference, everyone) for c in comps),
            "gpu": short_gpu(_gpu_name(q)) if gpu else None,
            "cpu": _cpu(q) if not gpu and _cpu(p) != _cpu(q) else None, **when}


def _when(runs) -> str:
    """When runs were measured: '2026-11-24 04:05–04:09 UTC' (one day), else from the first to the
    last (provenance's utc)."""
    times = sorted(str(r.provenance["utc"])[:16].replace("T", " ") for r in runs)
    if times[0][:10] == times[-1][:10]:
        return f"{times[0]}–{times[-1][11:]} UTC" if times[0] != times[-1] else f"{times[0]} UTC"
    return f"{times[0]} to {times[-1]} UTC"


def _cpu(p: dict) -> str:
    """'AMD EPYC, AVX2': a CPU's model and the kernels torch chose on it."""
    return f"{p.get('cpu', '—')}, {p.get('torch_cpu_capability') or '—'}"


def _gpu_name(p: dict) -> str | None:
    return p["gpu"].get("name") if isinstance(p.get("gpu"), dict) else None


def _cell_columns(side: str, cell) -> dict:
    """A cell as CSV columns: a value with an interval as three numbers, anything else as its
    text (a number and its interval never share a cell). The first column is text already, as
    the CSV writes it: a column of text is written without a test per cell."""
    if cell.__class__ is Value and cell.lo is None and cell.value.__class__ is float:
        # most differing cells: cell_text's text of a float, without its tests of the type
        return {side: number(cell.value, None), f"{side} lo": None, f"{side} hi": None}
    lo, hi = getattr(cell, "lo", None), getattr(cell, "hi", None)
    value = csv_value(cell.value) if lo is not None else cell_text(cell, None)
    return {side: value, f"{side} lo": lo, f"{side} hi": hi}


def _verdict(c) -> str:
    """The comparison's verdict, its differing cells split by what they show
    (study.compare.reproduction.difference_kind)."""
    from study.compare.reproduction import difference_kind
    kinds = Counter(difference_kind(a, b) for _, a, b in c.different)
    split = ", ".join(say(PROSE, "difference_kind", kind=k, n=n)
                      for k, n in sorted(kinds.items()))
    largest = largest_relative(c)
    split += f"; relative differences up to {largest:.1g}" if largest is not None else ""
    return f"{c.verdict} ({split})" if split else c.verdict


def earlier_references(references, experiments) -> list:
    """Each reference run against an earlier reference of the same experiment, device, releases
    and scope (G3, H200, against G1, H100): a reference measured again by newer code."""
    from study.compare import reproduction
    by_name = {e.name: e for e in experiments}
    out = []
    for ref in references:
        earlier = [r for r in references if r.provenance["utc"] < ref.provenance["utc"]
                   and r.tag != ref.tag]
        match, kind = reproduction.matching_reference(ref, earlier)
        if match is not None and kind == reproduction.REPRODUCTION and ref.experiment in by_name:
            out.append(reproduction.compare(by_name[ref.experiment], ref, match))
    return out


def _older(run, runs) -> bool:
    """Whether the run is older code for its experiment among `runs` (study.report.runs.older)."""
    return run.tag in older_code([r for r in runs if r.experiment == run.experiment])


def _older_said(old: list, comps: list) -> str | None:
    """'older code' where every experiment compared is older code for the rerun, 'older code
    in timing and training' where some are, None where none is."""
    if not old:
        return None
    if len(old) == len(comps):
        return "older code"
    return "older code in " + names(sorted(experiment_words(c.run.experiment) for c in old))


def largest_relative(c) -> float | None:
    """The largest |ours − theirs| ÷ the larger magnitude over the comparison's differing cells
    that hold a number on both sides (None where none does): how far 'differing in values'
    goes, from the last bits of a float to a changed count."""
    out = None
    for _, a, b in c.different:
        x, y = getattr(a, "value", None), getattr(b, "value", None)
        if (a.__class__ is Value and b.__class__ is Value and isinstance(x, (int, float))
                and isinstance(y, (int, float)) and not isinstance(x, bool)
                and not isinstance(y, bool) and x == x and y == y and max(abs(x), abs(y)) > 0
                and abs(x) != float("inf") and abs(y) != float("inf")):
            r = abs(x - y) / max(abs(x), abs(y))
            out = r if out is None else max(out, r)
    return out


def _counts(reruns, references, everyone) -> list[dict]:
    """Per rerun label, in label order: its experiments that reproduce, against which
    reference and machine, those differing in error wording alone and in values, and which of
    its runs are older code."""
    from study.compare import reproduction
    by_run: dict[str, list] = {}
    for c in (c for c in reruns if c.reference is not None):
        by_run.setdefault(c.run.tag, []).append(c)
    def wording_only(c) -> bool:
        return all(reproduction.difference_kind(a, b) == reproduction.ERROR_WORDING
                   for _, a, b in c.different)
    main = main_run(everyone)
    def releases_apart(run) -> str:  # a history run's release, which the legend merges
        return ", ".join(f"{fw} {run.provenance[fw]}" for fw in ("torch", "jax")
                         if main and run.provenance[fw] != main.provenance[fw])
    return [{"label": label, "reproduced": sum(c.reproduced for c in cs), "reruns": len(cs),
             "apart": releases_apart(cs[0].run),
             "against": _against(cs, references, everyone),
             "in_wording": sorted(experiment_words(c.run.experiment) for c in cs
                                  if not c.reproduced and c.different and wording_only(c)),
             "in_values": sorted(experiment_words(c.run.experiment) for c in cs
                                 if not c.reproduced and not (c.different and wording_only(c))),
             "where_both": sorted(experiment_words(c.run.experiment) for c in cs
                                  if c.reproduced and (c.only_ours or c.only_theirs)),
             "older": _older_said([c for c in cs if _older(c.run, everyone)], cs)}
            for label, cs in sorted(by_run.items(), key=lambda kv: label_order(kv[0]))]


def reproduction_section(runs, references, experiments, files) -> tuple[list[str], list[str]]:
    """REPORT.md's Reproduction paragraph: each rerun's experiments that reproduce, what the
    others differ in, against which reference and machine; APPENDIX.md's table of those that
    did not."""
    # the compare layer prints its cells with this package's formatter
    from study.compare import reproduction
    from study.report.format import pair_texts
    lines = ["## Reproduction", ""]
    comps = reproduction.comparisons(runs, references, experiments) if references else []
    comps += earlier_references(references, experiments)
    if not comps:
        return lines + [wrap(say(PROSE, "no_reference")), ""], []
    reruns = [c for c in comps if c.kind == reproduction.REPRODUCTION]
    everyone = runs + references
    rules = rule_names({c.run.path: c.run for c in comps if c.different}.values())
    rows = [{"experiment": c.run.experiment, "rerun": _name(c.run, everyone),
             "reference run": _name(c.reference, everyone) if c.reference else None,
             "equal": c.equal, "different": len(c.different), "only in the rerun": len(c.only_ours),
             "only in the reference": len(c.only_theirs), "verdict": _verdict(c),
             "first differences": shorten(re.sub(r"(?<![+\-\w])nan\b", "NaN", "; ".join(
                 f"{cell_words(n, rules)}: " + " against ".join(pair_texts(a, b))
                 for n, a, b in c.different[:2])), 120) or None} for c in comps]
    diffs = [{"experiment": c.run.experiment, "comparison": c.kind, "your file": c.run.path,
              "reference file": c.reference.path, "cell": reproduction.name_text(n),
              "difference": reproduction.difference_kind(a, b),
              **_cell_columns("yours", a), **_cell_columns("reference", b)}
             for c in comps for n, a, b in c.different]
    table = Table("reproduction", "", "", frame(rows))
    files["tables/reproduction.csv"] = csv(table)
    files["tables/reproduction-differences.csv"] = csv(Table("", "", "", frame(
        diffs, ["experiment", "comparison", "your file", "reference file", "cell", "difference",
                "yours", "yours lo", "yours hi", "reference", "reference lo",
                "reference hi"])))
    counts = _counts(reruns, references, everyone)
    new = span(sorted({c.run.tag for c in reruns if c.reference is None}, key=label_order))
    shown = Table("", "", "", frame([  # the experiment in words, the CSV's by its key
        {**row, "experiment": experiment_words(row["experiment"]),
         "rerun": row["rerun"] + (" (older code)" if _older(c.run, everyone) else ""),
         "reference run": row["reference run"] + (" (older code)" if _older(c.reference, everyone)
                                                  else "")}
        for row, c in sorted(((row, c) for row, c in zip(rows, comps)
                              if c.reference is not None and not c.reproduced),
                             key=lambda rc: (label_order(rc[1].run.tag), rc[0]["experiment"]))]))
    where = f"{APPENDIX_FILE}#reproduction" if len(shown.frame) else None
    tolerances = [{"experiment": experiment_words(e.name), "percent": number(
        100 * e.comparison.tolerance, 3)} for e in experiments if e.comparison.tolerance]
    appendix = ([heading(2, "reproduction", say(PROSE, "reproduction_title")), "",
                 wrap(say(PROSE, "reproduction_caption", tolerances=tolerances)), "",
                 markdown(shown), ""] if where else [])
    return lines + [wrap(say(PROSE, "reproduced", counts=counts, new=new, shown=where,
                             tolerances=tolerances)), ""], appendix


def devices_section(runs, experiments, doc) -> tuple[list[str], list[str]]:
    from study.compare import device_comparison, reproduction
    from study.report.format import pair_texts
    pairs = device_comparison.pairs(runs, experiments)
    main = ["## CPU against GPU", ""]
    paired = {p.cuda.tag for p in pairs}
    across = {e.name for e in experiments if e.across_devices}
    alone = sorted({r.tag: short_gpu(device_comparison.gpu_of(r)) for r in runs
                    if r.provenance["device"] == "cuda" and r.tag not in paired
                    and r.experiment in across}.items(),
                   key=lambda kv: label_order(kv[0]))
    if not pairs:
        return main + [wrap(say(PROSE, "devices", said=[], alone=alone, table=None,
                                listing=None)), ""], []
    rows, cells, said = [], [], []
    for p in pairs:
        groups = device_comparison.groups_of(p)
        host = short_gpu(device_comparison.gpu_of(p.cuda))
        rows.append({"experiment": experiment_words(p.experiment), "cpu run": p.cpu.tag,
                     "cuda run": p.cuda.tag,
                     "host": f"the {host} host", "same releases": p.same_releases,
                     "equal": p.equal, "different": len(p.different), "only cpu": len(p.only_ours),
                     "only cuda": len(p.only_theirs),
                     "groups": ", ".join(f"{g} {n}" for g, n in groups.items()) or None})
        if p.same_releases:  # elsewhere the counts say enough
            old = older_code([r for r in runs if r.experiment == p.experiment])
            said.append({"pair": p, "host": host, "groups": rows[-1]["groups"],
                         "older": [t for t in (p.cpu.tag, p.cuda.tag) if t in old],
                         "caveats": [_caveat(r) for r in (p.cpu, p.cuda) if _caveat(r)],
                         "total": p.equal + len(p.different)})
            cells += [{"group": device_comparison.group_of(n, a, b), "experiment": p.experiment,
                       "cpu run": p.cpu.tag, "cuda run": p.cuda.tag,
                       "cell": reproduction.name_text(n), "cpu": pair_texts(a, b)[0],
                       "cuda": pair_texts(a, b)[1]} for n, a, b in p.different]
    table = Table("devices", say(PROSE, "devices_title"),
                  say(PROSE, "devices_caption", alone=alone), frame(rows))
    name = f"{DEVICES.replace('_', '-')}-cells.csv"
    doc.files[f"tables/{name}"] = csv(Table("", "", "", frame(
        cells, ["group", "experiment", "cpu run", "cuda run", "cell", "cpu", "cuda"])))
    key = (DEVICES, "devices")
    main += [wrap(say(PROSE, "devices", said=said, alone=alone, table=doc.cite(key),
                      listing=f"[{name}](tables/{name})")), ""]
    heading = ['## CPU against GPU <a id="cpu-against-gpu-appendix"></a>', ""]
    shown = [r for p in pairs for r in (p.cpu, p.cuda)]
    older = sorted({r.tag for r in shown if _older(r, runs)}, key=label_order)
    return main, heading + doc.table(key, table, shown, older)


def _caveat(run) -> str | None:
    """What a reader of a device pair must know of one of its runs: a cpu run whose provenance
    recorded another JAX backend (the host's default), and the tables errata withdrew rows of."""
    backend = run.provenance.get("jax_backend")
    tables = sorted({table for table, _, _ in run.errata})
    return say(PROSE, "device_caveat", tag=run.tag, backend=backend if run.provenance[
        "device"] == "cpu" and backend not in (None, "cpu") else None, tables=tables) or None

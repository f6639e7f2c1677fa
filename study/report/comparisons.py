"""The Reproduction and CPU-against-GPU sections: each rerun against the committed reference
(study.compare.reproduction) and each cuda run against its cpu partner
(study.compare.device_comparison)."""
from study.report.format import cell_text, shorten, wrap
from study.report.prose import macros, say
from study.report.runs import label_order, span
from study.report.table import Table, csv, frame, markdown

DEVICES = "cpu_vs_gpu"
PROSE = macros("study/report/document.j2")


def _name(run, everyone) -> str:
    same = [r for r in everyone if r.tag == run.tag and r.experiment == run.experiment]
    when = f", {run.provenance['utc'][:16].replace('T', ' ')} UTC" if len(same) > 1 else ""
    return f"{run.tag}{when}"


def reproduction_section(runs, references, experiments, files) -> list[str]:
    # the compare layer prints its cells with this package's formatter
    from study.compare import reproduction
    from study.report.format import pair_texts
    lines = ["## Reproduction", ""]
    comps = reproduction.comparisons(runs, references, experiments) if references else []
    if not comps:
        return lines + [wrap(say(PROSE, "no_reference")), ""]
    reruns = [c for c in comps if c.kind == reproduction.REPRODUCTION]
    everyone = runs + references
    rows = [{"experiment": c.run.experiment, "your run": _name(c.run, everyone),
             "reference run": _name(c.reference, everyone) if c.reference else None,
             "equal": c.equal, "different": len(c.different), "only yours": len(c.only_ours),
             "only reference": len(c.only_theirs), "verdict": c.verdict,
             "first differences": shorten("; ".join(
                 f"{reproduction.name_text(n)}: " + " vs ".join(pair_texts(a, b))
                 for n, a, b in c.different[:2]), 120) or None} for c in comps]
    diffs = [{"experiment": c.run.experiment, "comparison": c.kind, "your file": c.run.path,
              "reference file": c.reference.path, "cell": reproduction.name_text(n),
              "yours": cell_text(a, None), "reference": cell_text(b, None)}
             for c in comps for n, a, b in c.different]
    table = Table("reproduction", "", "", frame(rows))
    files["tables/reproduction.csv"] = csv(table)
    files["tables/reproduction-differences.csv"] = csv(Table("", "", "", frame(
        diffs, ["experiment", "comparison", "your file", "reference file", "cell", "yours",
                "reference"])))
    by_run: dict[str, list] = {}
    for c in (c for c in reruns if c.reference is not None):
        by_run.setdefault(c.run.tag, []).append(c)
    counts = [(label, sum(c.reproduced for c in cs), len(cs)) for label, cs in
              sorted(by_run.items(), key=lambda kv: label_order(kv[0]))]
    new = span(sorted({c.run.tag for c in reruns if c.reference is None}, key=label_order))
    shown = Table("", "", "", frame([row for row, c in zip(rows, comps)
                                     if c.reference is not None and not c.reproduced]))
    return lines + [wrap(say(PROSE, "reproduced", counts=counts, new=new)), ""] + (
        [markdown(shown), ""] if len(shown.frame) else [])


def devices_section(runs, experiments, doc) -> tuple[list[str], list[str]]:
    from study.compare import device_comparison, reproduction
    from study.report.format import pair_texts
    pairs = device_comparison.pairs(runs, experiments)
    main = ["## CPU against GPU", ""]
    if not pairs:
        return main + [say(PROSE, "no_devices"), ""], []
    rows, cells = [], []
    for p in pairs:
        groups = device_comparison.groups_of(p)
        rows.append({"experiment": p.experiment, "cpu run": p.cpu.tag, "cuda run": p.cuda.tag,
                     "same releases": p.same_releases, "same machine": p.same_machine,
                     "equal": p.equal, "different": len(p.different), "only cpu": len(p.only_ours),
                     "only cuda": len(p.only_theirs),
                     "groups": ", ".join(f"{g} {n}" for g, n in groups.items()) or None})
        if p.same_releases and p.same_machine:  # elsewhere the counts say enough
            cells += [{"group": device_comparison.group_of(n, a, b), "experiment": p.experiment,
                       "cell": reproduction.name_text(n), "cpu": pair_texts(a, b)[0],
                       "cuda": pair_texts(a, b)[1]} for n, a, b in p.different]
    same = [r for r in rows if r["same releases"] and r["same machine"]]
    table = Table("devices", say(PROSE, "devices_title"),
                  say(PROSE, "devices_caption"), frame(rows))
    name = f"{DEVICES.replace('_', '-')}-cells.csv"
    doc.files[f"tables/{name}"] = csv(Table("", "", "", frame(
        cells, ["group", "experiment", "cell", "cpu", "cuda"])))
    key = (DEVICES, "devices")
    said = "; ".join(f"{r['experiment']}: {r['different']} of {r['equal'] + r['different']} cells "
                     f"differ ({r['groups'] or 'none'})" for r in same)
    main += [wrap(say(PROSE, "devices", said=said, table=doc.cite(key),
                      listing=f"[{name}](tables/{name})")), ""]
    heading = ['<a id="cpu-against-gpu-appendix"></a>', "## CPU against GPU", ""]
    return main, heading + doc.table(key, table, runs)

"""The report's Reproduction and CPU-against-GPU sections: each rerun against the reference
(study.reproduction) and each cuda run against its cpu partner (study.device_comparison).
"""
from dataclasses import dataclass

from study import device_comparison, reproduction
from study.cells import pair_texts
from study.experiment import Finding
from study.report_layout import MAX_DIFFERENCES_SHOWN, wrap
from study.runsets import run_name
from study.tables import (Table, collapse_rows, column, listed, shorten, to_csv, to_markdown,
                          typed_table)


@dataclass
class ReproductionRow:
    experiment: str = column("experiment")
    yours: str = column("your run")
    reference: str | None = column("reference run")
    equal: int = column("equal")
    different: int = column("different")
    only_yours: int = column("only yours")
    only_reference: int = column("only reference")
    verdict: str = column("verdict")
    first: str | None = column("first differences (yours vs reference)")


@dataclass
class DifferenceRow:
    experiment: str = column("experiment")
    comparison: str = column("comparison")
    yours: str = column("your file")
    reference: str = column("reference file")
    cell: str = column("cell")
    your_value: str = column("yours")
    reference_value: str = column("reference")


def reproduction_rows(comps, everyone) -> tuple[list[ReproductionRow], list[DifferenceRow]]:
    rows, diffs = [], []
    for c in comps:
        shown = "; ".join(f"{shorten(reproduction.name_text(name), 70)}: "
                          + " vs ".join(pair_texts(a, b))
                          for name, a, b in c.different[:MAX_DIFFERENCES_SHOWN])
        yours = run_name(c.run, everyone)
        theirs = run_name(c.reference, everyone) if c.reference else None
        if yours == theirs:  # the same host, device and releases: tell them apart by date
            yours, theirs = (f"{name}, {r.provenance['utc'][:16].replace('T', ' ')} UTC"
                             for name, r in ((yours, c.run), (theirs, c.reference)))
        rows.append(ReproductionRow(c.run.experiment, yours, theirs, c.equal, len(c.different),
                                    len(c.only_here), len(c.only_reference), c.verdict,
                                    shorten(shown, 150) or None))
        diffs += [DifferenceRow(c.run.experiment, c.kind, c.run.path, c.reference.path,
                                reproduction.name_text(name), a.text(None), b.text(None))
                  for name, a, b in c.different]
    return rows, diffs


def reproduction_section(runs, references, experiments, files) -> list[str]:
    lines = ['<a id="reproduction"></a>', "## Reproduction", ""]
    if not references:
        return lines + ["No reference results are present (reports/reference/ is empty), so "
                        "nothing is compared.", ""]
    comps = reproduction.comparisons(runs, references, experiments)
    if not comps:
        return lines + [wrap(f"Every result here is the study's committed reference "
                             f"({len(references)} result files in reports/reference/). Rerun the "
                             f"study on your machine (`make report`) and this section will say, "
                             f"experiment by experiment, whether your numbers reproduce it."), ""]
    reruns = [c for c in comps if c.kind == reproduction.REPRODUCTION]
    devices = len(comps) - len(reruns)
    lines += [wrap(f"**{sum(c.reproduced for c in reruns)} of {len(reruns)} runs reproduce the "
                   f"committed reference** (cells compared exactly, wall-clock seconds left "
                   f"out; timing as ratios measured within each run, equal when their "
                   f"intervals overlap within the experiment's tolerance, never "
                   f"as absolute times across machines)"
                   + (f"; {devices} more runs have no reference of their device and are "
                      f"compared with the other device's as a device comparison, not a "
                      f"reproduction" if devices else "")
                   + ". All differing cells: [tables/reproduction-differences.csv]"
                     "(tables/reproduction-differences.csv)."), ""]
    rows, diffs = reproduction_rows(comps, runs + references)
    table = typed_table("reproduction", "Your runs against the committed reference",
                  "One row per rerun result file: cells equal, cells different, cells only in "
                  "your run or only in the reference run it is compared with (same experiment "
                  "and scope; the same device where the reference has one, and then the same "
                  "releases where it has them).",
                  ReproductionRow, rows)
    lines += [to_markdown(table), ""]
    files["tables/reproduction.md"] = to_markdown(table) + "\n"
    files["tables/reproduction.csv"] = to_csv(table)
    files["tables/reproduction-differences.csv"] = to_csv(typed_table(
        "reproduction-differences", "", "", DifferenceRow, diffs))
    return lines


@dataclass
class DeviceRow:
    experiment: str = column("experiment")
    cpu: str = column("cpu run")
    cuda: str = column("cuda run")
    releases: str = column("releases")
    machine: str = column("machine")
    equal: int = column("equal")
    different: int = column("different")
    only_cpu: int = column("only cpu")
    only_cuda: int = column("only cuda")
    groups: str | None = column("groups")


@dataclass
class CellRow:
    group: str = column("group")
    experiment: str = column("experiment")
    cell: str = column("cell")
    dtype: str | None = column("dtype")
    cpu: str = column("cpu")
    cuda: str = column("cuda")


@dataclass
class MergedCellRow(CellRow):
    dtype: str = column("dtypes")


def device_rows(pairs, everyone) -> tuple[list[DeviceRow], list[CellRow]]:
    """The summary row of every pair, and every differing cell of the pairs measured on one
    machine with the same releases (elsewhere the counts say enough)."""
    summary, cells = [], []
    for p in pairs:
        groups = device_comparison.groups_of(p)
        summary.append(DeviceRow(p.experiment, p.cpu.tag or run_name(p.cpu, everyone),
                                 p.cuda.tag or run_name(p.cuda, everyone),
                                 "same" if p.same_releases else "different",
                                 "same" if p.same_machine else "different", p.equal,
                                 len(p.different), p.only_cpu, p.only_cuda,
                                 ", ".join(f"{g} {n}" for g, n in groups.items()) or None))
        if not (p.same_releases and p.same_machine):
            continue
        for name, a, b in p.different:
            fields = dict(name)
            what = reproduction.name_text(tuple((k, v) for k, v in name if k != "dtype"))
            cells.append(CellRow(device_comparison.group_of(name, a, b), p.experiment, what,
                                 fields.get("dtype"), *pair_texts(a, b)))
    return summary, cells


GROUP_WORDS = {"subnormal": "at subnormals", "placement": "placement-dependent",
               "last bits": "in the last bits", "error": "in an error message",
               "other": "otherwise"}


def device_finding(pairs, runs) -> Finding | None:
    """One sentence: what differs on one machine with the same releases, by group, then what
    differs across releases or machines; experiments summed over their pairs."""
    if not pairs:
        return None
    same, other = {}, {}
    for p in pairs:
        into = same if p.same_releases and p.same_machine else other
        total, groups = into.setdefault(p.experiment, [0, {}])
        into[p.experiment][0] = total + p.equal + len(p.different)
        for g, n in device_comparison.groups_of(p).items():
            groups[g] = groups.get(g, 0) + n
    flushed = "; ".join(f"{fw} {'/'.join(dtypes)}"
                        for fw, dtypes in device_comparison.flushing_on_cpu(runs).items())
    parts = []
    for exp, (total, groups) in same.items():
        if groups:
            text = ", ".join(f"{n} {GROUP_WORDS[g]}" + (
                f" (XLA's CPU backend flushes subnormals to zero, the study's probe finds: "
                f"{flushed})" if g == "subnormal" and flushed else "") for g, n in groups.items())
            parts.append(f"{sum(groups.values())} of {total} {exp} cells differ: {text}")
    equal = [exp for exp, (_, groups) in same.items() if not groups]
    if equal:
        parts.append(f"{len(equal)} experiments agree in every cell")
    differ = [f"{exp} {sum(g.values())}" for exp, (_, g) in other.items() if g]
    if differ:
        parts.append(f"across releases or machines, cells differ in {', '.join(differ)}")
    return Finding("CPU against GPU on one machine and release: " + "; ".join(parts) + ".",
                   "devices")


def device_tables(pairs, runs) -> tuple[Table, Table]:
    summary, cells = device_rows(pairs, runs)
    table = typed_table("devices", "CPU against GPU, experiment by experiment",
                  "Each cuda run against a cpu run of the same experiment and scope (of the same "
                  "machine and releases where there is one), cell by cell as a rerun is compared; "
                  "timing is left out (its numbers are compared within a run, never across "
                  "devices). Differing cells are grouped by what they show: subnormal (at "
                  "±min_subnormal, or a subnormal value), placement (one device's value depends "
                  "on where the element sits), last bits (within 4 units in the last place of "
                  "the dtype), error, other. 'only cpu' and 'only cuda' count cells one side lacks: "
                  "not measured there, or withdrawn by an erratum.",
                  DeviceRow, summary)
    detail = typed_table("differences", "Every cell that differs between CPU and GPU on one machine "
                                  "with the same releases",
                   "Grouped as in the summary table; rows that differ only in dtype are merged. "
                   "Each pair of values is printed with as many figures as tell them apart.",
                   MergedCellRow, collapse_rows(sorted(
                       cells, key=lambda r: (r.group, r.experiment, r.cell)), ("dtype",),
                       into=MergedCellRow),
                   detail=listed(CellRow, cells))
    return table, detail

"""Naming and merging runs: tables and findings over any mix of hosts, devices, releases, scopes.

A table built from several runs shows a row once when every run gives it, and otherwise one
row per distinct value with the runs that gave it; a finding names the runs that agree
together and contrasts those that differ. Pure functions of loaded runs.
"""
from dataclasses import replace

from study.results import Run
from study.tables import Table, format_cell, headers, key_headers, row_cells

FIELDS = ("torch", "jax", "device", "capability", "scope", "host")
SCOPE_ORDER = ("standard", "full", "quick")
DEVICE_PREFIX = {"cpu": "C", "cuda": "G"}


def configuration(run: Run) -> tuple:
    """What a run label names: device, machine (host, CPU model and kernels, GPU model),
    releases and scope. Every experiment measured in one configuration shares its label."""
    p = run.provenance
    gpu = p.get("gpu")
    return (p["device"], p["host"], str(p.get("cpu")), str(p.get("torch_cpu_capability")),
            str(gpu.get("name") if isinstance(gpu, dict) else gpu), p["torch"], p["jax"],
            run.scope)


def label_runs(runs: list[Run]) -> list[Run]:
    """Every run with its label in the report's one run legend: C1, C2, ... on a CPU, G1, ...
    on a GPU, numbered by how many experiments ran in the configuration (the study's main
    run first), then by scope, releases and machine."""
    experiments_in: dict[tuple, set] = {}
    for run in runs:
        experiments_in.setdefault(configuration(run), set()).add(run.experiment)
    order = sorted(experiments_in, key=lambda c: (
        c[0] != "cpu", c[0], -len(experiments_in[c]),
        SCOPE_ORDER.index(c[7]) if c[7] in SCOPE_ORDER else len(SCOPE_ORDER), c[5], c[6], c[1:5]))
    labels, counts = {}, {}
    for config in order:
        prefix = DEVICE_PREFIX.get(config[0], config[0].upper() + "-")
        counts[prefix] = counts.get(prefix, 0) + 1
        labels[config] = f"{prefix}{counts[prefix]}"
    return [replace(run, tag=labels[configuration(run)]) for run in runs]


def tags(group: list[Run], runs: list[Run]) -> str:
    """'C1–C3, C5, G1': the legend labels of a group of runs, in legend order, consecutive
    labels as a range."""
    labels = sorted(dict.fromkeys(run_tag(r, runs) for r in group), key=tag_order)
    spans: list[list[str]] = []
    for label in labels:
        prefix, n = tag_order(label)
        if spans and tag_order(spans[-1][-1]) == (prefix, n - 1):
            spans[-1].append(label)
        else:
            spans.append([label])
    return ", ".join(s[0] if len(s) == 1 else ", ".join(s) if len(s) == 2 else f"{s[0]}–{s[-1]}"
                     for s in spans)


def tag_order(tag: str) -> tuple:
    digits = "".join(ch for ch in tag if ch.isdigit())
    return tag.rstrip("0123456789"), int(digits or 0)


def _tagged(text: str, group: list[Run], runs: list[Run]) -> str:
    return f"{text} [{tags(group, runs)}]" if all(r.tag for r in group) else text


def machine(run: Run) -> tuple[str, str, str]:
    """The machine a run was measured on: host name, CPU model and the CPU kernels torch
    dispatches to (two hosts may share a name, and one model may run AVX2 or AVX512 code)."""
    p = run.provenance
    return p["host"], str(p.get("cpu")), str(p.get("torch_cpu_capability"))


def field_value(run: Run, name: str) -> str:
    if name == "scope":
        return run.scope
    if name == "capability":  # the CPU kernels torch dispatches to: AVX2, AVX512, ...
        return str(run.provenance.get("torch_cpu_capability"))
    return str(run.provenance[name])


def varying_fields(runs: list[Run]) -> list[str]:
    return [f for f in FIELDS if len({field_value(r, f) for r in runs}) > 1]


def _values(runs: list[Run], name: str) -> list[str]:
    return sorted({field_value(r, name) for r in runs})


def _field_text(name: str, values: list[str]) -> str:
    joined = values[0] if len(values) == 1 else ", ".join(values[:-1]) + " and " + values[-1]
    return {"torch": f"torch {joined}", "jax": f"jax {joined}", "device": joined,
            "capability": f"{joined} CPU kernels",
            "scope": f"{joined} run{'s' if len(values) > 1 else ''}",
            "host": f"on {joined}"}[name]


def run_name(run: Run, runs: list[Run]) -> str:
    """The shortest name that tells `run` apart from the other runs: the fields that vary."""
    fields = varying_fields(runs) or ["torch", "device", "host"]
    return _tagged(", ".join(_field_text(f, [field_value(run, f)]) for f in fields), [run], runs)


def describe(group: list[Run], runs: list[Run]) -> str:
    """Who a statement holds for, e.g. 'torch 2.13.0+cpu, cpu, on vm and alice-laptop'.
    torch, device and hosts are always named; JAX release and scope where runs differ."""
    vary = varying_fields(runs)
    fields = [f for f in FIELDS if f in ("torch", "device", "host") or f in vary]
    return _tagged(", ".join(_field_text(f, _values(group, f)) for f in fields), group, runs)


def identity(run: Run) -> Run:
    """The run without its records: what a summary keeps to name the run it came from."""
    return replace(run, records=[])


def distinguish(group: list[Run], runs: list[Run]) -> str | None:
    """The shortest words that pick `group` out of `runs`: one field whose values no other run
    has ('torch 2.14.1+cu130', 'cuda', 'full run'); else a single run's name; else None."""
    others = [r for r in runs if r not in group]
    order = ("device", "torch", "jax", "capability", "scope", "host")
    for name in order:
        mine = _values(group, name)
        if not set(mine) & {field_value(r, name) for r in others}:
            return _tagged(_field_text(name, mine), group, runs)
    for i, a in enumerate(order):  # two fields whose pairs of values no other run has
        for b in order[i + 1:]:
            mine = {(field_value(r, a), field_value(r, b)) for r in group}
            if len(mine) == 1 and not mine & {(field_value(r, a), field_value(r, b))
                                              for r in others}:
                (va, vb), = mine
                return _tagged(f"{_field_text(a, [va])}, {_field_text(b, [vb])}", group, runs)
    if len(group) == 1:  # a single run that no field picks out: its legend label says which
        return group[0].tag or run_name(group[0], runs)
    return None


def holds_for(group: list[Run], runs: list[Run]) -> str:
    """Which runs a statement holds for, compactly: 'all 9 runs', 'all but torch 2.14.1',
    'cuda'; a single run by its name."""
    if len(runs) == 1:
        return runs[0].tag or run_name(runs[0], runs)
    if len(group) == len(runs):
        return _tagged("both runs" if len(runs) == 2 else f"all {len(runs)} runs", group, runs)
    if len(group) > len(runs) - len(group):
        rest = distinguish([r for r in runs if r not in group], runs)
        return f"all but {rest}" if rest else f"{len(group)} of {len(runs)} runs"
    return distinguish(group, runs) or f"{len(group)} of {len(runs)} runs"


def stated_for_runs(values: list[tuple[Run, object]], runs: list[Run], full, short,
                    lead: Run | None = None, by_label: bool = False) -> str | None:
    """A fact that each run gives a value for, stated once: the most common value in full (or,
    given `lead`, the run with the most data, that run's value), then which runs give it, then
    each other value in short with the runs that give it: 'relu − clamp is −38 (all but torch
    2.14.1; torch 2.14.1: 0 everywhere)'; with `by_label`, those others by their legend labels
    alone ('G1, G2: 2/1'). A value is a fact: a frozen dataclass (or a string), and runs whose
    facts are equal (==) give one value. Runs whose value is None say nothing."""
    groups: list[tuple[object, list[Run]]] = []
    for run, value in values:
        if value is not None:
            group = next((g for v, g in groups if v == value), None)
            if group is None:
                groups.append((value, group := []))
            group.append(run)
    if not groups:
        return None
    ordered = sorted(groups, key=lambda vg: (not any(r is lead for r in vg[1]), -len(vg[1])))
    (value, group), rest = ordered[0], ordered[1:]
    scope = [run for _, g in ordered for run in g] if len(runs) > 1 else runs
    def named(g):
        if by_label and all(r.tag for r in g):
            return tags(g, scope)
        return distinguish(g, scope) or f"{len(g)} runs"
    parts = [holds_for(group, scope)] + [f"{named(g)}: {short(v)}" for v, g in rest]
    return f"{full(value)} ({'; '.join(parts)})"


def newest(runs: list[Run], key=lambda run: 0) -> Run:
    """The run a figure draws: the largest `key`, then the newest (after a rerun elsewhere,
    the rerun's own), never whichever file happens to sort first."""
    return max(runs, key=lambda run: (key(run), run.provenance["utc"]))


def grouped_clauses(runs: list[Run], clause_of) -> str | None:
    """'<runs>: <clause>; <other runs>: <other clause>', runs with equal clauses together.
    clause_of(run) -> str or None (no statement for that run)."""
    groups: dict[str, list[Run]] = {}
    for run in runs:
        clause = clause_of(run)
        if clause:
            groups.setdefault(clause, []).append(run)
    if not groups:
        return None
    return "; ".join(f"{describe(group, runs)}: {clause}" for clause, group in groups.items())


def _row_key(row: list) -> tuple:
    return tuple(format_cell(v, None) for v in row)


def _rows_runs(who: list[Run], runs: list[Run]) -> str:
    """The runs that give a row by their legend labels: 'C1, G1' or 'all but C4'."""
    rest = [r for r in runs if r not in who]
    options = [tags(who, runs)] + ([f"all but {tags(rest, runs)}"] if rest else [])
    return min(options, key=len)


def run_tag(run: Run, runs: list[Run]) -> str:
    """The run's label in the report's run legend ('C1'); where runs were never labelled,
    its number in the list of runs given ('R3')."""
    return run.tag or f"R{runs.index(run) + 1}"


def merged(summaries: list, rows_of, row_type) -> tuple[list[str], list[list], list[str]]:
    """Several runs' rows, each run's a list of `row_type` dataclasses (rows_of(summary)), as
    one table: (headers, with a leading "runs" column where runs differ; rows; notes). A row is
    named by its key columns (study.tables.column), which must lead. Each summary keeps its run
    as `.run`."""
    typed = [(s.run, rows_of(s)) for s in summaries]
    names, key = headers(row_type, [r for _, rows in typed for r in rows]), key_headers(row_type)
    if tuple(names[:len(key)]) != key:
        raise ValueError(f"the key {key} is not the leading headers {names[:len(key)]}")
    lead, rows, notes = _merge_rows([(run, [row_cells(r) for r in rows]) for run, rows in typed],
                                    len(key))
    return lead + names, rows, notes


def run_table(table_id: str, title: str, caption: str, row_type, summaries: list, rows_of,
              detail: tuple | None = None, notes: list[str] = (),
              when_empty: str | None = None) -> Table:
    """A table over several runs' summaries: rows_of(summary) for each, merged (see merged),
    with the merge's notes, then `notes`; `when_empty` is the note of a table without rows
    (where the merge has none); `detail`, where given, is the CSV's (headers, rows)."""
    names, rows, run_notes = merged(summaries, rows_of, row_type)
    if when_empty and not rows and not run_notes:
        run_notes = [when_empty]
    return Table(table_id, title, caption, names, rows, run_notes + list(notes), detail)


def _merge_rows(per_run: list[tuple[Run, list[list]]], id_width: int
               ) -> tuple[list[str], list[list], list[str]]:
    """Rows of several runs as one table: (extra leading headers, rows, notes).

    Rows are identified by their first `id_width` cells. A row every run gives identically
    appears once; where runs differ, each distinct row appears with the runs that gave it,
    under a leading "runs" column (present only when some row differs)."""
    runs = [run for run, _ in per_run]
    order: list[tuple] = []
    variants: dict[tuple, dict[tuple, tuple[list, list[Run]]]] = {}
    for run, rows in per_run:
        for row in rows:
            ident = _row_key(row[:id_width])
            if ident not in variants:
                order.append(ident)
                variants[ident] = {}
            entry = variants[ident].setdefault(_row_key(row), (row, []))
            if run not in entry[1]:
                entry[1].append(run)
    everyone = set(map(id, runs))
    uniform = all(len(v) == 1 and set(map(id, next(iter(v.values()))[1])) == everyone
                  for v in variants.values())
    if len(runs) <= 1 or uniform:
        rows = [next(iter(variants[i].values()))[0] for i in order]
        notes = ([f"All {len(runs)} runs give exactly these rows: "
                  f"{'; '.join(run_name(r, runs) for r in runs)}."] if len(runs) > 1 else [])
        return [], rows, notes
    out = []
    for ident in order:
        for row, who in variants[ident].values():
            label = "all runs" if set(map(id, who)) == everyone else _rows_runs(who, runs)
            out.append([label] + list(row))
    return ["runs"], out, []

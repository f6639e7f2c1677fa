"""Zero-point atlas: what every rule returns at its kinks, per framework, dtype, mode, placement.

    python -m study run zero_point          # torch: every placement; JAX: eager, 2-D rows
    python -m study run zero_point --full   # JAX too: every placement, eager and under jit

Each op is probed at every kink of the registry (k, k ± 1 ulp), at signed zeros, the smallest
subnormals and normal, NaN and ±inf, in value, reverse, forward and second-order mode, and at
several placements (study.placement): a cell whose value depends on where the element sits is
recorded with every value and where it occurs.
"""
import numpy as np
import torch
from jax.test_util import check_grads

from study.conventions import DTYPES, MODES, numpy_dtype, probe_inputs, reverse_derivative
from study.placement import (ALL_PLACEMENTS, FILL_LENGTH, cell_values, depends_on_placement,
                             describe_where, measure, same_value, summarise)
from study.rules import RULES, by_key
from study.runsets import grouped_clauses, grouped_items, merge_rows, newest
from study.tables import Table, collapse_rows, format_cell

NAME = "zero_point"
DESCRIPTION = "zero-point atlas: every op at its kinks, all dtypes, modes and placements"
QUESTION = ("What does each built-in and custom rule return at exactly x = 0 and at its other "
            "kinks, in each framework, dtype, mode and placement, and which torch/JAX look-alikes "
            "disagree?")
SEED = None
SCOPES = ("quick", "standard", "full")
TABLES = ("atlas_torch", "atlas_jax", "modes", "placement", "extended", "porting_torch_to_jax",
          "porting_jax_to_torch", "custom_conventions", "gradcheck", "releases", "natural_pairs")
RECORD_KEY = ("part", "rule", "dtype", "point")
NOT_COMPARED = ("name", "kinks", "checker")
ALL_KINKS = tuple(sorted({k for r in RULES for k in r.kinks}))
GRADCHECK_POINTS = (-0.5, 0.0, 0.5)
FD_EPS = 1e-6
JAX_PLACEMENTS = {"quick": (("2-D rows",), ("eager",)), "standard": (("2-D rows",), ("eager",)),
                  "full": (("packed", "0-d", "1-element", "fill", "2-D rows"), ("eager", "jit"))}
# Ops a porting user would take as the same function: a list of names, not of results.
NATURAL_PAIRS = (("torch_relu", "jax_relu"), ("torch_relu6", "jax_relu6"),
                 ("torch_hardtanh", "jax_hard_tanh"), ("torch_abs", "jax_abs"),
                 ("torch_clamp_min0", "jax_clip0"), ("torch_clamp_0_6", "jax_clip_0_6"),
                 ("torch_maximum0", "jax_maximum0"), ("torch_where_gt", "jax_where_gt"),
                 ("torch_where_ge", "jax_where_ge"), ("torch_mul_mask", "jax_mul_mask"),
                 ("torch_abs_average", "jax_abs_average"), ("torch_leaky_relu0", "jax_leaky_relu0"),
                 ("torch_leaky_relu001", "jax_leaky_relu001"),
                 ("torch_myrelu_seed", "jax_seed_relu"), ("torch_custom_op_c0", "jax_custom_nondiff_c0"))
SUBNORMAL = ("-min_subnormal", "+min_subnormal")
ATLAS_TAIL = ("-0.0", "min_normal", "nan", "+inf", "-inf")


def cases(scope: str) -> list[dict]:
    dtypes = ("float32",) if scope == "quick" else DTYPES
    atlas = [{"part": "atlas", "rule": r.key, "dtype": d, "scope": scope}
             for d in dtypes for r in RULES]
    checks = [{"part": "gradcheck", "rule": r.key, "dtype": "float64", "scope": scope}
              for r in RULES if r.kind == "custom"]
    return atlas + checks


def run_case(device, part: str, rule: str, dtype: str, scope: str) -> list[dict]:
    r = by_key(rule)
    base = {"part": part, "framework": r.framework, "rule": r.key, "name": r.name, "kind": r.kind,
            "convention": r.convention, "kinks": list(r.kinks), "dtype": dtype,
            "device": device.name}
    if part == "gradcheck":
        return [{**base, **_gradcheck(r, x, device)} for x in GRADCHECK_POINTS]
    inputs = probe_inputs(dtype, ALL_KINKS)
    placements, jax_exec = ((ALL_PLACEMENTS, ("eager",)) if r.framework == "torch"
                            else JAX_PLACEMENTS[scope])
    measured = measure(r, [v for _, v in inputs], dtype, device, placements, jax_exec)
    rec = {**base, "inputs": [label for label, _ in inputs], "x": [v for _, v in inputs],
           "placements": sorted({p for cells in measured["value"] for p in cells}),
           "fill_length": FILL_LENGTH}
    for mode in MODES:
        cells = [summarise(c) for c in measured[mode]]
        same_error = isinstance(cells[0], str) and all(c == cells[0] for c in cells)
        rec[mode] = cells[0] if same_error else cells  # a mode-wide error is stored once
    return [rec]


def _gradcheck(rule, x0: float, device) -> dict:
    """Analytic derivative (0-d, reverse), central finite difference and the framework's own
    numeric check, all on the run's device."""
    analytic = reverse_derivative(rule, x0, "float64", device)
    if rule.framework == "torch":
        def f(v):
            return float(device.to_numpy(rule.fn(device.torch_tensor(v, dtype=torch.float64))))
        x = device.torch_tensor([x0], dtype=torch.float64, requires_grad=True)
        passed = torch.autograd.gradcheck(rule.fn, (x,), eps=FD_EPS, atol=1e-5,
                                          raise_exception=False)
        checker = "torch.autograd.gradcheck"
    else:
        def f(v):
            return float(device.to_numpy(rule.fn(device.to_jax(np.float64(v)))))
        try:
            check_grads(rule.fn, (device.to_jax(np.float64(x0)),), order=1, modes=("rev",),
                        eps=FD_EPS)
            passed = True
        except AssertionError:
            passed = False
        checker = "jax.test_util.check_grads"
    fd = (f(x0 + FD_EPS) - f(x0 - FD_EPS)) / (2 * FD_EPS)
    return {"point": x0, "analytic": analytic, "finite_difference": fd, "passed": passed,
            "checker": checker, "fd_eps": FD_EPS}


# --- aggregation: pure functions of loaded runs --------------------------------------------

def _atlas(run, dtype: str | None = None) -> list[dict]:
    return [r for r in run.ok_records() if r.get("part") == "atlas"
            and (dtype is None or r["dtype"] == dtype)]


def cell(rec: dict, mode: str, label: str):
    """The summarised cell of one input in one mode (a value, an error, or placement detail)."""
    vals = rec[mode]
    return vals if isinstance(vals, str) else vals[rec["inputs"].index(label)]


def shown(c) -> str:
    """A cell as the atlas shows it: the value, or its values marked as placement-dependent."""
    if depends_on_placement(c):
        texts = sorted(format_cell(v) if not isinstance(v, str) else v[:30] for v in c["values"])
        return " or ".join(texts) + " (placement)"
    return c if isinstance(c, str) else format_cell(c)


def agree(a, b) -> bool | None:
    """True/False for two plain cells; None when either depends on placement."""
    if depends_on_placement(a) or depends_on_placement(b):
        return None
    return same_value(a, b)


def _kink_labels(k: float) -> list[str]:
    return (["-min_subnormal", "+0.0", "+min_subnormal"] if k == 0
            else [f"{k:g}-ulp", f"{k:g}", f"{k:g}+ulp"])


def _per_run(runs, rows_of, id_width):
    return merge_rows([(run, rows_of(run)) for run in runs], id_width, runs)


def _atlas_rows(run, framework):
    rows = []
    for rec in _atlas(run, "float32"):
        if rec["framework"] == framework:
            for k in rec["kinks"]:
                rows.append([rec["name"], k] + [shown(cell(rec, "reverse", lab))
                                                for lab in _kink_labels(k) + list(ATLAS_TAIL)])
    return rows


def _modes_rows(run):
    return [[rec["framework"], rec["name"], k] + [shown(cell(rec, m, _kink_labels(k)[1]))[:60]
                                                   for m in MODES]
            for rec in _atlas(run, "float32") for k in rec["kinks"]]


def placement_rows(run) -> list[list]:
    """Every (op, dtype, mode, input) whose value depends on the placement."""
    rows = []
    for rec in _atlas(run):
        for mode in MODES:
            if isinstance(rec[mode], str):
                continue
            for label, c in zip(rec["inputs"], rec[mode]):
                if depends_on_placement(c):
                    rows.append([rec["framework"], rec["name"], rec["dtype"], mode, label,
                                 describe_where(c)])
    return rows


def _extended_rows(run):
    """Where a dtype other than float32 gives another value than float32 (same run)."""
    base = {r["rule"]: r for r in _atlas(run, "float32")}
    rows = []
    for rec in _atlas(run):
        ref = base.get(rec["rule"])
        if ref is None or rec["dtype"] == "float32":
            continue
        for mode in ("reverse", "forward", "second"):
            if isinstance(rec[mode], str) or isinstance(ref[mode], str):
                if rec[mode] != ref[mode]:
                    rows.append([rec["framework"], rec["name"], rec["dtype"], mode, "every input",
                                 rec[mode] if isinstance(rec[mode], str) else "values",
                                 ref[mode] if isinstance(ref[mode], str) else "values"])
                continue
            for label in rec["inputs"]:
                got, want = cell(rec, mode, label), cell(ref, mode, label)
                if not _same_after_rounding(got, want, rec["dtype"]):
                    rows.append([rec["framework"], rec["name"], rec["dtype"], mode, label,
                                 shown(got), shown(want)])
    return rows


def _same_after_rounding(a, b, dtype: str) -> bool:
    """Equal once both are rounded to the coarser of dtype and float32: a constant like 0.01
    is stored differently in each dtype, which is not a convention."""
    if depends_on_placement(a) or depends_on_placement(b) or isinstance(a, str) \
            or isinstance(b, str):
        return shown(a) == shown(b)  # the same set of values: where they occur is placement
    coarse = numpy_dtype(dtype if dtype in ("float16", "bfloat16") else "float32")
    return same_value(float(np.asarray(a).astype(coarse)), float(np.asarray(b).astype(coarse)))


def _matches(rec, others, labels) -> list[str]:
    """Ops whose value and reverse gradient equal rec's, as plain values, on every label."""
    return [o["name"] for o in others
            if all(agree(cell(rec, m, lab), cell(o, m, lab)) for m in ("value", "reverse")
                   for lab in labels)]


def _porting_rows(run, src: str, dst: str):
    f32 = _atlas(run, "float32")
    rows = []
    targets = [r for r in f32 if r["framework"] == dst]
    for rec in (r for r in f32 if r["framework"] == src):
        every = list(rec["inputs"])
        no_sub = [lab for lab in every if lab not in SUBNORMAL]
        depends = [lab for lab in every for m in ("value", "reverse")
                   if depends_on_placement(cell(rec, m, lab))]
        cols = []
        for labels in (every, no_sub):
            builtin = _matches(rec, [t for t in targets if t["kind"] == "builtin"], labels)
            custom = _matches(rec, [t for t in targets if t["kind"] == "custom"], labels)
            cols.append("; ".join(builtin) if builtin else
                        "none: use a custom rule, " + custom[0] if custom else
                        "none (no registry op matches)")
        rows.append([rec["name"]] + cols + [", ".join(dict.fromkeys(depends)) or None])
    return rows


def _custom_rows(run):
    rows = []
    for rec in (r for r in _atlas(run) if r["kind"] == "custom"):
        rev0 = cell(rec, "reverse", "+0.0")
        rows.append([rec["framework"], rec["name"], rec["dtype"], rec["convention"], shown(rev0),
                     shown(cell(rec, "reverse", "-0.0")), shown(cell(rec, "forward", "+0.0"))[:60],
                     agree(rev0, rec["convention"])])
    return rows


def _gradcheck_rows(run):
    f64 = {r["rule"]: r for r in _atlas(run, "float64")}
    rows = []
    for r in (r for r in run.ok_records() if r.get("part") == "gradcheck"):
        atlas = f64.get(r["rule"])
        label = {0.0: "+0.0"}.get(r["point"])
        at = shown(cell(atlas, "reverse", label)) if atlas and label else None
        rows.append([r["framework"], r["name"], r["convention"], r["point"], r["analytic"], at,
                     r["finite_difference"], r["passed"]])
    return rows


def kink_check_summary(run) -> tuple[list[float], list[float], float] | None:
    """At x = 0: the distinct finite differences, the conventions whose check passed, and ε."""
    at_kink = [r for r in run.ok_records() if r.get("part") == "gradcheck" and r["point"] == 0.0]
    if not at_kink:
        return None
    return (sorted({round(r["finite_difference"], 9) for r in at_kink}),
            sorted({r["convention"] for r in at_kink if r["passed"]}), at_kink[0]["fd_eps"])


def natural_pair_rows(run) -> list[list]:
    f32 = {r["rule"]: r for r in _atlas(run, "float32")}
    rows = []
    for t, j in NATURAL_PAIRS:
        if t not in f32 or j not in f32:
            continue
        labels = [lab for lab in f32[t]["inputs"] if lab not in SUBNORMAL]
        verdicts = [(lab, agree(cell(f32[t], "reverse", lab), cell(f32[j], "reverse", lab)))
                    for lab in labels]
        diffs = [lab for lab, ok in verdicts if ok is False]
        depends = [lab for lab, ok in verdicts if ok is None]
        first = (f"at {diffs[0]}: {shown(cell(f32[t], 'reverse', diffs[0]))} vs "
                 f"{shown(cell(f32[j], 'reverse', diffs[0]))}" if diffs else None)
        status = ("disagree" if diffs else "depends on placement" if depends else "agree")
        rows.append([f32[t]["name"], f32[j]["name"], status, len(diffs),
                     ", ".join(depends) or None, first])
    return rows


def _release_rows(runs) -> tuple[list[list], dict[str, list[str]]]:
    """Cells that differ between releases of the framework an op belongs to, among runs of
    the same host, device and scope."""
    rows, versions = [], {"torch": set(), "jax": set()}
    groups: dict[tuple, list] = {}
    for run in runs:
        groups.setdefault((run.provenance["host"], run.provenance["device"], run.scope),
                          []).append(run)
    for (host, device, _), group in groups.items():
        for fw in ("torch", "jax"):
            by_version: dict[str, dict] = {}
            for run in group:
                v = run.provenance[fw]
                versions[fw].add(v)
                for rec in _atlas(run):
                    if rec["framework"] == fw:
                        by_version.setdefault(v, {}).setdefault((rec["rule"], rec["dtype"]), rec)
            if len(by_version) < 2:
                continue
            names = sorted(by_version)
            for key in sorted(set.intersection(*(set(v) for v in by_version.values()))):
                recs = [by_version[v][key] for v in names]
                for mode in MODES:
                    for label in recs[0]["inputs"]:
                        if label not in recs[-1]["inputs"]:
                            continue
                        cells = [cell(r, mode, label) for r in recs]
                        if any(shown(c) != shown(cells[0]) or describe_where(c)
                               != describe_where(cells[0]) for c in cells):
                            detail = "; ".join(f"{fw} {v}: {shown(c)}" + (
                                f" [{describe_where(c, 80)}]" if depends_on_placement(c) else "")
                                for v, c in zip(names, cells))
                            rows.append([fw, recs[0]["name"], device, key[1], mode, label,
                                         detail])
    return rows, {k: sorted(v) for k, v in versions.items()}


def tables(runs) -> list[Table]:
    any_run = runs[0]
    fill = next((r["fill_length"] for r in _atlas(any_run)), None)
    where = (f"Placements (study.placement): packed (all inputs in one 1-D tensor), 0-d, "
             f"1-element, fill (a 1-D tensor of {fill} copies, every position), strided (a "
             f"stride-2 view; torch only), 2-D rows (an n × {fill} batch); which of them each run "
             f"measured is recorded per op. A value that differs between placements shows as "
             f"'a or b (placement)' and is listed, with where each occurs, in the placement table.")
    atlas_cols = ["op", "kink k", "k − 1 ulp", "k", "k + 1 ulp"] + list(ATLAS_TAIL)
    atlas = {}
    for fw in ("torch", "jax"):
        extra, rows, notes = _per_run(runs, lambda run: _atlas_rows(run, fw), 2)
        atlas[fw] = (extra + atlas_cols, rows, notes)
    m_extra, m_rows, m_notes = _per_run(runs, _modes_rows, 3)
    p_extra, p_rows, p_notes = _per_run(runs, placement_rows, 5)
    e_extra, e_rows, e_notes = _per_run(
        runs, lambda run: collapse_rows(_extended_rows(run), (2, 3, 4)), 2)
    porting = {}
    for src, dst in (("torch", "jax"), ("jax", "torch")):
        porting[src] = _per_run(runs, lambda run: _porting_rows(run, src, dst), 1)
    c_extra, c_rows, c_notes = _per_run(runs, _custom_rows, 3)
    g_extra, g_rows, g_notes = _per_run(runs, _gradcheck_rows, 4)
    n_extra, n_rows, n_notes = _per_run(runs, natural_pair_rows, 2)
    release_rows, versions = _release_rows(runs)
    release_compact = collapse_rows(release_rows, (3, 4, 5))
    measured = "; ".join(f"{fw}: {', '.join(v)}" for fw, v in versions.items())
    release_notes = ([f"Only one release of each framework has been measured ({measured}); run "
                      f"`make matrix` to add others."] if all(len(v) < 2 for v in versions.values())
                     else [] if release_rows else
                     [f"No cell differs between the releases measured ({measured})."])
    grad_notes = list(g_notes)
    for run in runs:
        summary = kink_check_summary(run)
        if summary:
            fds, passing, eps = summary
            grad_notes.append(
                f"At the kink the central difference (f(ε) − f(−ε)) / 2ε with ε = {eps:g} came "
                f"out as {', '.join(f'{v:g}' for v in fds)} for every custom rule whatever its "
                f"convention, so the numeric checks passed only rules with c in "
                f"{{{', '.join(f'{c:g}' for c in passing)}}}: a finite difference measures the "
                f"mean of the two one-sided slopes, while every c in [0, 1] is a valid "
                f"subgradient, so no numeric check can validate (or reject) a convention.")
            break
    return [
        Table("atlas_torch", "Zero-point atlas, torch: reverse-mode gradient at each kink",
              "float32; d(sum f(x))/dx at each probe input. For kink 0, k ± 1 ulp are the "
              "smallest subnormals. " + where, *atlas["torch"]),
        Table("atlas_jax", "Zero-point atlas, JAX: reverse-mode gradient at each kink",
              "As the torch atlas, for JAX ops and custom rules.", *atlas["jax"]),
        Table("modes", "Every mode at exactly the kink",
              "float32. value: f(k); reverse: backward / jax.grad; forward: torch.func.jvp / "
              "jax.jvp with tangent 1; second: the derivative of the reverse-mode gradient. A mode "
              "that raises shows the first line of its error.",
              m_extra + ["framework", "op", "kink k", "value", "reverse", "forward", "second"],
              m_rows, m_notes),
        Table("placement", "Cells that depend on where the element sits",
              "Every (op, dtype, mode, input) whose value differs between placements or positions, "
              "with each value and where it occurred (positions count from 0 within the fill "
              "tensor or the batch row). " + where,
              p_extra + ["framework", "op", "dtype", "mode", "input", "values and where"], p_rows,
              p_notes or ([] if p_rows else ["No cell depends on placement in these runs."])),
        Table("extended", "Where other dtypes differ from float32",
              "Every gradient (reverse, forward, second) at every probe input in float16, "
              "bfloat16 and float64, listed where it differs from the same run's float32 value "
              "once both are rounded to the coarser dtype (so a slope of 0.01 stored in float16 "
              "is not a difference); rows that differ only in dtype, mode or input are merged. "
              "NaN equals NaN and −0 equals +0 here.",
              e_extra + ["framework", "op", "dtypes", "modes", "inputs", "value", "float32 value"],
              e_rows, e_notes),
        Table("porting_torch_to_jax", "Porting guide, torch → JAX",
              "For each torch op, the JAX ops whose forward value and reverse gradient equal it at "
              "every probe input as plain values (float32; NaN = NaN, −0 = +0); a cell that "
              "depends on placement matches nothing. The last column names the inputs where the "
              "op's own value depends on placement. Where no built-in matches, a custom rule of "
              "ours that does is named.",
              porting["torch"][0] + ["torch op", "JAX equivalent, every input",
                                     "JAX equivalent, subnormals aside",
                                     "inputs that depend on placement"],
              porting["torch"][1], porting["torch"][2]),
        Table("porting_jax_to_torch", "Porting guide, JAX → torch",
              "The same comparison from each JAX op to the torch ops.",
              porting["jax"][0] + ["JAX op", "torch equivalent, every input",
                                   "torch equivalent, subnormals aside",
                                   "inputs that depend on placement"],
              porting["jax"][1], porting["jax"][2]),
        Table("custom_conventions", "Custom rules: declared convention against measurement",
              "Each custom rule's declared c beside its measured reverse gradient at +0.0 and −0.0 "
              "and forward gradient at +0.0, over every placement, in every dtype.",
              c_extra + ["framework", "rule", "dtype", "declared c", "reverse at +0",
                         "reverse at −0", "forward at +0", "reverse at +0 = c"], c_rows, c_notes),
        Table("gradcheck", "Numeric gradient checks away from and at the kink",
              "torch.autograd.gradcheck and jax.test_util.check_grads (reverse) in float64 on the "
              "run's device, beside the analytic derivative of a 0-d input, the atlas's float64 "
              "reverse gradient at +0 over every placement, and the central difference.",
              g_extra + ["framework", "rule", "c", "x", "analytic (0-d)", "atlas at +0",
                         "finite difference", "check passes"], g_rows, grad_notes),
        Table("releases", "Conventions that changed between releases",
              f"Every cell (any dtype, mode, input and placement) that differs between the "
              f"measured releases of the framework the op belongs to, among runs of one host, "
              f"device and scope ({measured}); rows that differ only in dtype, mode or input are merged.",
              ["framework", "op", "device", "dtypes", "modes", "inputs", "by release"],
              release_compact, release_notes, detail=(
                  ["framework", "op", "device", "dtype", "mode", "input", "by release"],
                  release_rows)),
        Table("natural_pairs", "Look-alike torch/JAX pairs: agree, disagree or depend on placement",
              "Pairs a porting user would take as equivalent, compared on every probe input but "
              "the two subnormals (float32, reverse gradient). A pair whose only differences are "
              "placement-dependent cells 'depends on placement', never 'agrees'. 'first "
              "disagreement' is the first input where plain values differ, torch then JAX.",
              n_extra + ["torch op", "JAX op", "verdict", "inputs that disagree",
                         "inputs that depend on placement", "first disagreement"],
              n_rows, n_notes),
    ]


def findings(runs) -> list[tuple[str, str]]:
    out = []

    def pairs(run):
        rows = natural_pair_rows(run)
        if not rows:
            return None
        return ([f"{t} vs {j} disagree ({first})" for t, j, v, _, _, first in rows
                 if v == "disagree"]
                + [f"{t} vs {j} depend on placement" for t, j, v, *_ in rows
                   if v == "depends on placement"])
    text = grouped_items(runs, pairs)
    if text:
        out.append(("Look-alike torch/JAX pairs that do not simply agree at their kinks, "
                    f"{text}.", "natural_pairs"))

    def placed(run):
        rows = placement_rows(run)
        if not rows:
            return []
        return [f"{op} at {inp} ({modes}; {dtypes})" for op, inp, modes, dtypes in
                collapse_rows([[r[1], r[4], r[3], r[2]] for r in rows], (2, 3))]
    text = grouped_items(runs, placed)
    if text:
        out.append((f"Cells whose value depends on where the element sits, {text}.", "placement"))
    release_rows, versions = _release_rows(runs)
    if release_rows:
        by_fw = {}
        for r in release_rows:
            by_fw.setdefault(r[0], set()).add(r[1])
        clamp = [r for r in release_rows if r[1] == "torch.clamp(x, min=0)" and r[3] == "float32"
                 and r[4] == "reverse" and r[5] == "+0.0"]
        out.append(("Between releases, " + "; ".join(
            f"{len([r for r in release_rows if r[0] == fw])} {fw} cells changed "
            f"({', '.join(sorted(ops))}; releases {', '.join(versions[fw])})"
            for fw, ops in by_fw.items())
            + (f"; clamp(min=0) at +0 gave {clamp[0][6]}, so seed 001's −38 depends on the "
               f"torch release" if clamp else "") + ".", "releases"))

    def checks(run):
        summary = kink_check_summary(run)
        if not summary:
            return None
        fds, passing, _ = summary
        return (f"a central finite difference at the kink gives {', '.join(f'{v:g}' for v in fds)}"
                f" for every custom rule, so gradcheck and check_grads pass only c in "
                f"{{{', '.join(f'{c:g}' for c in passing)}}}")
    text = grouped_clauses(runs, checks)
    if text:
        out.append((text + ": a numeric check cannot validate a convention.", "gradcheck"))
    return out


def figures(runs) -> dict[str, tuple[bytes, str]]:
    """The float32 reverse-gradient atlas of the newest run as a heatmap, torch beside JAX
    (after a rerun elsewhere, the rerun's own atlas)."""
    import numpy as np

    from study.figures import HeatmapPanel, heatmap
    run = newest(runs)
    panels = []
    for fw, title in (("torch", "torch"), ("jax", "JAX")):
        recs = [r for r in _atlas(run, "float32") if r["framework"] == fw]
        if not recs:
            continue
        labels = recs[0]["inputs"]
        grid = [[cell(r, "reverse", lab) for lab in labels] for r in recs]
        first = [[cell_values(c)[0] for c in row] for row in grid]
        panels.append(HeatmapPanel(
            f"{title} ops (reverse gradient, float32)", [r["name"] for r in recs], labels,
            np.array([[np.nan if isinstance(v, str) else v for v in row] for row in first]),
            np.array([[isinstance(v, str) for v in row] for row in first]),
            np.array([[depends_on_placement(c) for c in row] for row in grid])))
    if not panels:
        return {}
    png = heatmap(panels, f"Zero-point atlas, run {run.label}: colour = gradient (clipped to "
                          f"[-1, 1.5]; the value is written in each cell); hatched = depends on "
                          f"placement (first value shown); white = NaN or error", "gradient")
    return {"figures/zero-point-atlas.png": (
        png, "Zero-point atlas heatmap: reverse gradient per op and input, torch beside JAX; "
             "hatched cells depend on placement")}

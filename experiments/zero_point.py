"""Zero-point atlas: what every rule returns at its kinks, per framework, dtype, mode, device.

    python -m study run zero_point

Each op is probed at every kink of the registry (k, k +- 1 ulp), at signed zeros, the
smallest subnormals and normal, NaN and +-inf, in value, reverse, forward and second-order mode.
"""
import math

import jax
import numpy as np
import torch
from jax.test_util import check_grads

from study.conventions import (DTYPES, MODES, numpy_dtype, probe_inputs, probe_modes,
                                reverse_derivative)
from study.rules import RULES, by_name
from study.tables import Table, format_cell

NAME = "zero_point"
DESCRIPTION = "zero-point atlas: every op at its kinks, all dtypes and modes, plus a porting guide"
SEED = None
ALL_KINKS = tuple(sorted({k for r in RULES for k in r.kinks}))
GRADCHECK_POINTS = (-0.5, 0.0, 0.5)
FD_EPS = 1e-6
TABLES = ("atlas_torch", "atlas_jax", "modes", "extended", "porting_torch_to_jax",
          "porting_jax_to_torch", "custom_conventions", "gradcheck", "releases", "natural_pairs")
# Ops a porting user would take as the same function: a list of names, not of results.
NATURAL_PAIRS = (("torch.relu", "jax.nn.relu"), ("F.relu6", "jax.nn.relu6"),
                 ("F.hardtanh", "jax.nn.hard_tanh"), ("torch.abs", "jnp.abs"),
                 ("torch.clamp(x, min=0)", "jnp.clip(x, 0)"),
                 ("torch.clamp(x, 0, 6)", "jnp.clip(x, 0, 6)"),
                 ("torch.maximum(x, 0)", "jnp.maximum(x, 0)"),
                 ("torch.where(x > 0, x, 0)", "jnp.where(x > 0, x, 0)"),
                 ("torch.where(x >= 0, x, 0)", "jnp.where(x >= 0, x, 0)"),
                 ("x * (x > 0)", "x * (x > 0).astype(x.dtype)"),
                 ("(x + x.abs()) / 2", "(x + jnp.abs(x)) / 2"),
                 ("F.leaky_relu(x, 0)", "jax.nn.leaky_relu(x, 0)"),
                 ("F.leaky_relu(x, 0.01)", "jax.nn.leaky_relu(x, 0.01)"),
                 ("MyReLU (seed 000)", "seed_relu (custom_vjp)"))
SUBNORMAL = ("-min_subnormal", "+min_subnormal")


def cases(quick: bool) -> list[dict]:
    dtypes = ("float32",) if quick else DTYPES
    return ([{"part": "atlas", "rule": r.name, "dtype": d} for r in RULES for d in dtypes]
            + [{"part": "gradcheck", "rule": r.name, "dtype": "float64"}
               for r in RULES if r.kind == "custom"])


def run_case(device, part: str, rule: str, dtype: str) -> list[dict]:
    r = by_name(rule)
    base = {"part": part, "framework": r.framework, "rule": r.name, "kind": r.kind,
            "convention": r.convention, "kinks": list(r.kinks), "dtype": dtype,
            "device": device.name}
    if part == "gradcheck":
        return [{**base, **_gradcheck(r, x, device)} for x in GRADCHECK_POINTS]
    inputs = probe_inputs(dtype, ALL_KINKS)
    return [{**base, "inputs": [label for label, _ in inputs], "x": [v for _, v in inputs],
             **probe_modes(r, [v for _, v in inputs], dtype, device)}]


def _gradcheck(rule, x0: float, device) -> dict:
    """Analytic derivative, central finite difference, and the framework's own numeric check."""
    analytic = reverse_derivative(rule, x0, "float64", device)
    if rule.framework == "torch":
        f = lambda v: float(rule.fn(torch.tensor(v, dtype=torch.float64)))  # noqa: E731
        x = torch.tensor([x0], dtype=torch.float64, device=device.torch_device, requires_grad=True)
        passed = torch.autograd.gradcheck(rule.fn, (x,), eps=FD_EPS, atol=1e-5,
                                          raise_exception=False)
        checker = "torch.autograd.gradcheck"
    else:
        f = lambda v: float(rule.fn(jax.numpy.float64(v)))  # noqa: E731
        try:
            check_grads(rule.fn, (jax.numpy.float64(x0),), order=1, modes=("rev",), eps=FD_EPS)
            passed = True
        except AssertionError:
            passed = False
        checker = "jax.test_util.check_grads"
    fd = (f(x0 + FD_EPS) - f(x0 - FD_EPS)) / (2 * FD_EPS)
    return {"point": x0, "analytic": analytic, "finite_difference": fd, "passed": passed,
            "checker": checker}


# --- tables ----------------------------------------------------------------------------

def same(a, b) -> bool:
    """Equal as a porting user needs: NaN matches NaN, and -0.0 matches +0.0."""
    if isinstance(a, str) or isinstance(b, str):
        return a == b
    return (math.isnan(a) and math.isnan(b)) or a == b


def same_after_rounding(a, b, dtype: str) -> bool:
    """Equal once both are rounded to `dtype` and to float32, whichever is coarser: a
    constant like 0.01 is stored differently in each dtype, which is not a convention."""
    if isinstance(a, str) or isinstance(b, str):
        return a == b
    coarse = numpy_dtype(dtype if DTYPES.index(dtype) < 2 else "float32")  # coarsest first
    return same(float(np.asarray(a).astype(coarse)), float(np.asarray(b).astype(coarse)))


def _short(cell, width=90):
    if isinstance(cell, str) and len(cell) > width:
        return cell[: width - 1] + "…"
    return cell


def _atlas(run) -> list[dict]:
    return [r for r in run.records if r.get("part") == "atlas" and "case_error" not in r]


def _at(rec, mode, label):
    vals = rec[mode]
    return vals if isinstance(vals, str) else vals[rec["inputs"].index(label)]


def _kink_labels(k: float) -> list[str]:
    return (["-min_subnormal", "+0.0", "+min_subnormal"] if k == 0
            else [f"{k:g}-ulp", f"{k:g}", f"{k:g}+ulp"])


def _reference(runs):
    cpu = [r for r in runs if r.provenance["device"] == "cpu"]
    return (cpu or runs)[0]


def _matches(rec, others, labels) -> list[str]:
    return [o["rule"] for o in others
            if all(same(_at(rec, m, lab), _at(o, m, lab)) for m in ("value", "reverse")
                   for lab in labels)]


def tables(runs) -> list[Table]:
    ref = _reference(runs)
    f32 = {r["rule"]: r for r in _atlas(ref) if r["dtype"] == "float32"}
    tail = ["-0.0", "min_normal", "nan", "+inf", "-inf"]
    atlas = {"torch": [], "jax": []}
    modes = []
    for rec in f32.values():
        for k in rec["kinks"]:
            labels = _kink_labels(k)
            atlas[rec["framework"]].append(
                [rec["rule"], k] + [_short(_at(rec, "reverse", lab), 40) for lab in labels + tail])
            modes.append([rec["framework"], rec["rule"], k]
                         + [_short(_at(rec, m, labels[1])) for m in MODES])
    extended = []
    for run in runs:
        for rec in _atlas(run):
            base = f32.get(rec["rule"])
            if base is None or (run is ref and rec["dtype"] == "float32"):
                continue
            for m in ("reverse", "forward", "second"):
                where = [rec["framework"], rec["rule"], run.provenance["device"], rec["dtype"], m]
                if isinstance(rec[m], str) or isinstance(base[m], str):  # a mode-wide error
                    if rec[m] != base[m]:
                        extended.append(where + ["all", _short(rec[m], 50), _short(base[m], 50)])
                    continue
                for lab in rec["inputs"]:
                    got, want = _at(rec, m, lab), _at(base, m, lab)
                    if not same_after_rounding(got, want, rec["dtype"]):
                        extended.append(where + [lab, got, want])
    every = list(f32["torch.relu"]["inputs"]) if "torch.relu" in f32 else []
    flush = (f"In this run JAX's float32 jax.nn.relu(+min_subnormal) returned "
             f"{_at(f32['jax.nn.relu'], 'value', '+min_subnormal'):g} and torch.relu returned "
             f"{_at(f32['torch.relu'], 'value', '+min_subnormal'):g}"
             if {"jax.nn.relu", "torch.relu"} <= f32.keys() else "")
    no_sub = [lab for lab in every if lab not in SUBNORMAL]
    porting = {}
    for src, dst in (("torch", "jax"), ("jax", "torch")):
        rows = []
        targets = [r for r in f32.values() if r["framework"] == dst]
        for rec in (r for r in f32.values() if r["framework"] == src):
            cols = []
            for labels in (every, no_sub):
                builtin = _matches(rec, [t for t in targets if t["kind"] == "builtin"], labels)
                custom = _matches(rec, [t for t in targets if t["kind"] == "custom"], labels)
                cols.append("; ".join(builtin) if builtin else
                            "none: use a custom rule, " + custom[0] if custom else
                            "none: use a custom rule (none in the registry matches)")
            rows.append([rec["rule"]] + cols)
        porting[src] = rows
    customs = []
    for rec in (r for r in _atlas(ref) if r["kind"] == "custom"):
        rev0, fwd0 = _at(rec, "reverse", "+0.0"), _at(rec, "forward", "+0.0")
        customs.append([rec["framework"], rec["rule"], rec["dtype"], rec["convention"], rev0,
                        _at(rec, "reverse", "-0.0"), _short(fwd0, 60),
                        same(rev0, rec["convention"])])
    checks = [r for r in ref.records if r.get("part") == "gradcheck" and "case_error" not in r]
    grad_rows = [[r["framework"], r["rule"], r["convention"], r["point"], r["analytic"],
                  r["finite_difference"], r["passed"]] for r in checks]
    notes = []
    summary = kink_check_summary(ref)
    if summary:
        fds, passing = summary
        notes.append(
            f"At the kink the central difference (f(ε) − f(−ε)) / 2ε with ε = {FD_EPS:g} came "
            f"out as {', '.join(f'{v:g}' for v in fds)} for every custom rule whatever its "
            f"convention, so the numeric checks passed only rules with c in "
            f"{{{', '.join(f'{c:g}' for c in passing)}}}: a finite difference measures the mean "
            f"of the two one-sided slopes, while every c in [0, 1] is a valid subgradient, so no "
            f"numeric check can validate (or reject) a convention.")
    return [
        Table("atlas_torch", "Zero-point atlas, torch: reverse-mode gradient at each kink",
              f"float32 on {ref.provenance['device']}, run {ref.label}; d(sum f(x))/dx with every "
              "input one element of a single 1-D tensor. For kink 0, k ± 1 ulp are the smallest "
              "subnormals. Other dtypes and devices appear in the extended table only where they "
              "differ from these values.",
              ["op", "kink k", "k − 1 ulp", "k", "k + 1 ulp"] + tail, atlas["torch"]),
        Table("atlas_jax", "Zero-point atlas, JAX: reverse-mode gradient at each kink",
              f"As the torch atlas (float32, {ref.label}), for JAX ops and custom rules.",
              ["op", "kink k", "k − 1 ulp", "k", "k + 1 ulp"] + tail, atlas["jax"]),
        Table("modes", "Every mode at exactly the kink",
              "float32. value: f(k); reverse: backward / jax.grad; forward: torch.func.jvp / "
              "jax.jvp with tangent 1; second: the derivative of the reverse-mode gradient. A "
              "mode that raises shows the first line of its error.",
              ["framework", "op", "kink k", "value", "reverse", "forward", "second"], modes),
        Table("extended", "Where other dtypes and devices differ from float32 on CPU",
              "Every gradient (reverse, forward, second) at every probe input, for float16, "
              "bfloat16, float64 and every other device, listed only where it differs from the "
              "float32 atlas once both values are rounded to the coarser of the two dtypes (so "
              "a slope of 0.01 stored in float16 is not a difference). NaN equals NaN and −0 "
              "equals +0 here.",
              ["framework", "op", "device", "dtype", "mode", "input", "value", "float32 value"],
              extended),
        Table("porting_torch_to_jax", "Porting guide, torch → JAX",
              "For each torch op, the JAX ops whose forward value and reverse-mode gradient equal "
              "it at every probe input (float32; NaN = NaN, −0 = +0), computed from the atlas. "
              f"{flush}, so the second column repeats the match without the two subnormal "
              "inputs. Where no built-in matches, a custom rule of ours that does is named.",
              ["torch op", "JAX equivalent, every input", "JAX equivalent, subnormals aside"],
              porting["torch"]),
        Table("porting_jax_to_torch", "Porting guide, JAX → torch",
              "The same comparison from each JAX op to the torch ops.",
              ["JAX op", "torch equivalent, every input", "torch equivalent, subnormals aside"],
              porting["jax"]),
        Table("custom_conventions", "Custom rules: declared convention against measurement",
              f"Each custom rule's declared c beside its measured gradient at +0.0 and −0.0 "
              f"(reverse) and at +0.0 (forward), in every dtype, run {ref.label}.",
              ["framework", "rule", "dtype", "declared c", "reverse at +0", "reverse at −0",
               "forward at +0", "reverse at +0 = c"], customs),
        Table("gradcheck", "Numeric gradient checks away from and at the kink",
              f"torch.autograd.gradcheck and jax.test_util.check_grads (reverse) in float64, "
              f"ε = {FD_EPS:g}, beside the analytic derivative and the central difference.",
              ["framework", "rule", "c", "x", "analytic", "finite difference", "check passes"],
              grad_rows, notes),
        _release_table(runs),
        Table("natural_pairs", "Look-alike torch/JAX pairs that disagree at a kink",
              "Pairs a porting user would take as equivalent, compared on every probe input "
              "except the two subnormals (float32, reverse-mode gradient). 'first disagreement' "
              "is the first input where the gradients differ, torch value then JAX value.",
              ["torch op", "JAX op", "gradients agree", "disagreements", "first disagreement"],
              natural_pair_rows(f32)),
    ]


def kink_check_summary(run) -> tuple[list[float], list[float]] | None:
    """At x = 0: the distinct finite differences, and the conventions whose check passed."""
    at_kink = [r for r in run.records if r.get("part") == "gradcheck" and "case_error" not in r
               and r["point"] == 0.0]
    if not at_kink:
        return None
    return (sorted({round(r["finite_difference"], 9) for r in at_kink}),
            sorted({r["convention"] for r in at_kink if r["passed"]}))


def natural_pair_rows(f32: dict) -> list[list]:
    rows = []
    for t, j in NATURAL_PAIRS:
        if t not in f32 or j not in f32:
            continue
        diffs = [(lab, _at(f32[t], "reverse", lab), _at(f32[j], "reverse", lab))
                 for lab in f32[t]["inputs"] if lab not in SUBNORMAL
                 and not same(_at(f32[t], "reverse", lab), _at(f32[j], "reverse", lab))]
        first = (f"at {diffs[0][0]}: {format_cell(diffs[0][1])} vs {format_cell(diffs[0][2])}"
                 if diffs else None)
        rows.append([t, j, not diffs, len(diffs), first])
    return rows


def findings(runs) -> list[tuple[str, str]]:
    ref = _reference(runs)
    f32 = {r["rule"]: r for r in _atlas(ref) if r["dtype"] == "float32"}
    out = []
    rows = natural_pair_rows(f32)
    pairs = [r for r in rows if not r[2]]
    if pairs:
        out.append((f"{len(pairs)} of {len(rows)} look-alike torch/JAX pairs "
                    f"disagree at a kink (torch {ref.provenance['torch']}, jax "
                    f"{ref.provenance['jax']}): " + "; ".join(
                        f"{t} vs {j} ({first})" for t, j, _, _, first in pairs) + ".",
                    "natural_pairs"))
    release = _release_table(runs)
    if release.rows:
        ops = sorted({(r[1]) for r in release.rows if r[0] == "torch"})
        clamp = [r for r in release.rows if r[1] == "torch.clamp(x, min=0)" and r[2] == "float32"
                 and r[3] == "reverse" and r[4] == "+0.0"]
        out.append((f"Between torch releases, {len(release.rows)} kink gradients changed, in "
                    f"{', '.join(ops)}" + (f"; clamp(min=0) at +0 gave {clamp[0][5]}, so seed "
                                            f"001's −38 depends on the torch release"
                                            if clamp else "") + ".", "releases"))
    summary = kink_check_summary(ref)
    if summary:
        fds, passing = summary
        out.append((f"At the kink a central finite difference gives {', '.join(map(str, fds))} "
                    f"for every custom rule, so gradcheck and check_grads pass only c in "
                    f"{passing}: a numeric check cannot validate a convention.", "gradcheck"))
    return out


def _release_table(runs) -> Table:
    versions = {fw: sorted({r.provenance[fw] for r in runs}) for fw in ("torch", "jax")}
    rows = []
    for fw in ("torch", "jax"):
        if len(versions[fw]) < 2:
            continue
        by_version = {}
        for run in runs:
            if run.provenance["device"] != "cpu":
                continue
            for rec in _atlas(run):
                if rec["framework"] == fw:
                    by_version.setdefault(run.provenance[fw], {})[(rec["rule"], rec["dtype"])] = rec
        keys = sorted(set.intersection(*(set(v) for v in by_version.values())))
        for key in keys:
            recs = [by_version[v][key] for v in versions[fw]]
            for m in MODES:
                for lab in recs[0]["inputs"]:
                    vals = [_at(r, m, lab) for r in recs]
                    if m != "value" and not all(same(v, vals[0]) for v in vals):
                        rows.append([fw, key[0], key[1], m, lab, "; ".join(
                            f"{ver}: {format_cell(_short(v, 50))}"
                            for ver, v in zip(versions[fw], vals))])
    measured = "; ".join(f"{fw}: {', '.join(v)}" for fw, v in versions.items())
    notes = [] if any(len(v) > 1 for v in versions.values()) else [
        f"Only one release of each framework has been measured ({measured}); run `make matrix` "
        f"to add others."]
    if any(len(v) > 1 for v in versions.values()) and not rows:
        notes.append(f"No gradient differs between the releases measured ({measured}).")
    return Table("releases", "Conventions that changed between releases",
                 f"Every gradient at every probe input, dtype and mode that differs between the "
                 f"measured releases of the same framework on CPU ({measured}).",
                 ["framework", "op", "dtype", "mode", "input", "gradient by release"], rows, notes)

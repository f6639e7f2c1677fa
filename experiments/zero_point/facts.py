"""What the zero_point answer and findings state, as facts read from the main run
(study.report.main_run) against the others: the conventions at +0, the look-alike pairs that
differ and where, what compiling changes, subnormal flushing, the conventions that changed
between releases, the documented derivatives, and the conformance's breaks and fixes."""
import re
from dataclasses import dataclass

import pandas as pd

from experiments.zero_point.atlas import (SPECIAL, RunAtlas, equal_unless_placed, flushes,
                                          forward_disagrees, frame_value, input_kind,
                                          kink_labels)
from experiments.zero_point.compiled import compiled_forward_wrong, look_alike_pairs, natural_pairs
from experiments.zero_point.history import Release, segments
from study.compare.cells import Value


@dataclass(frozen=True)
class Facts:
    """What the answer and findings state, from the main run (study.report.main_run)."""
    run: str
    at_zero: tuple[tuple[float, tuple[str, ...]], ...]  # (d/dx at +0, ops of the conventions table)
    pairs: int  # look-alike pairs compared
    # the pairs whose d/dx differs, in four groups, each the rows of the table it names:
    differ_at_zero: tuple[str, ...]  # at x = +0: the conventions table's rows
    differ_at_kink: tuple[tuple[str, tuple[float, ...]], ...]  # (pair, kinks): the kinks table
    differ_beside_kink: tuple[tuple[str, tuple[str, ...]], ...]  # (pair, inputs) 1 ulp away only
    differ_special_only: tuple[str, ...]  # only at NaN or ±inf, eager
    differ_special_only_compiled: tuple[str, ...]  # the same, compiled, of the other pairs
    special_at: str  # the inputs the eager ones differ at, in words: "NaN", "±inf", "NaN or ±inf"
    compiled_ops: tuple[tuple[str, tuple[str, ...]], ...]  # framework -> ops compiling changes
    # custom rules whose compiled forward mode at +0 ignores the rule: those whose own jvp gives
    # eager's value ((rule, eager, compiled)), and those whose eager forward mode raises
    compiled_forward_jvp: tuple[tuple[str, float, float], ...]
    compiled_forward: tuple[str, ...]
    forward_wrong: tuple[str, ...]  # custom rules whose forward mode disagrees with reverse
    # (framework, device, dtypes, runs, in every run that probed it, executions, executions
    # probed): where the subnormal probe found flushing; and where a framework that flushes in
    # every run of one device flushes in no run of another
    flushed: tuple[tuple[str, str, tuple[str, ...], tuple[str, ...], bool, tuple[str, ...],
                         tuple[str, ...]], ...]
    kept: tuple[tuple[str, str, tuple[str, ...]], ...]  # (framework, device, runs): no flushing
    # look-alike ops whose float32 eager d/dx at a kink changed: (framework, op, kink,
    # ((first release, value), ...)), each value from the first release that gave it
    convention_changes: tuple[tuple[str, str, float, tuple[tuple[str, object], ...]], ...]
    finite_differences: tuple[float, ...]  # central differences at the kink, custom rules
    passing: tuple[float, ...]  # conventions a numeric check passes at the kink
    # (op, kink, declared, measured, agrees)
    documented: tuple[tuple[str, float, float, tuple, bool], ...]
    undocumented: int  # ops whose docstrings declare no derivative at a kink
    # (framework, its newest release with kink records, the ops breaking the documented rule
    # there), and (op, kink, the release that fixed it): the conformance table's rows
    breaking: tuple[tuple[str, str, tuple[str, ...]], ...] = ()
    fixed: tuple[tuple[str, float, str], ...] = ()
    # the ties table (zero_point.ties): its run, its rows, and (torch op, its gradient, JAX op,
    # its gradient) of the pairs whose gradients differ there
    ties_run: str | None = None
    tie_pairs: int = 0
    port_changes: tuple[tuple[str, object, str, object], ...] = ()


def _convention_changes(atlases: list[RunAtlas], changed: pd.DataFrame) -> tuple:
    """Each look-alike op's float32 eager d/dx at its kinks, where it changed: the value from
    each release on (history.segments)."""
    ops = {op.name: op for a in atlases for op in a.atlas("float32") if op.look_alike}
    out = []
    for (fw, name, label), g in changed[(changed["mode"] == "reverse")
                                        & (changed["execution"] == "eager")
                                        & (changed["dtype"] == "float32")].groupby(
            ["framework", "op", "input"], sort=False):
        kinks = [k for k in ops[name].kinks if kink_labels(k)[1] == label] if name in ops else []
        if kinks:
            out.append((fw, name, kinks[0], tuple(
                (first, frame_value(c))
                for first, _, c in segments(list(g["cell"]), list(g["release"])))))
    return tuple(out)


def _documented(main: RunAtlas) -> tuple[tuple, int]:
    ops = [op for op in main.atlas("float32") if op.documented is not None]
    out = []
    for op in ops:
        for k, v in op.documented:
            labels = ["-0.0", "+0.0"] if k == 0 else [f"{k:g}"]
            got = [op.cell("reverse", lab) for lab in labels if lab in op.inputs]
            out.append((op.name, k, v, tuple(frame_value(g) for g in got),
                        all(equal_unless_placed(g, Value(v)) for g in got)))
    return tuple(out), len([op for op in ops if not op.documented])


def _differing_pairs(main: RunAtlas, kinks: list[dict]) -> tuple:
    """The pairs whose d/dx differs, grouped as the tables show them: at +0 (the conventions
    table's rows), at another kink (the kinks table's), and, of the rest, only 1 ulp beside a
    kink or only at NaN or ±inf (the pairs listing's)."""
    def pair(torch_op, jax_op):
        return f"{torch_op} vs {jax_op}"
    differs = [r for r in kinks if r["same d/dx"] is False]
    at_zero = tuple(dict.fromkeys(pair(r["torch op"], r["JAX op"]) for r in differs
                                  if r["kink"] == 0))
    at_kink: dict[str, list[float]] = {}
    for r in (r for r in differs if r["kink"] != 0):
        at_kink.setdefault(pair(r["torch op"], r["JAX op"]), []).append(r["kink"])
    rest = [p for p in natural_pairs(main) if p.disagree
            and pair(p.torch_op, p.jax_op) not in set(at_zero) | set(at_kink)]
    beside = tuple((pair(p.torch_op, p.jax_op), tuple(p.disagree)) for p in rest
                   if {input_kind(lab) for lab in p.disagree} == {"next to a kink"})
    special = tuple(pair(p.torch_op, p.jax_op) for p in rest
                    if all(lab in SPECIAL for lab in p.disagree))
    compiled = tuple(pair(p.torch_op, p.jax_op) for p in natural_pairs(main, compiled=True)
                     if p.disagree and all(lab in SPECIAL for lab in p.disagree)
                     and pair(p.torch_op, p.jax_op) not in special)
    labels = {lab for p in rest if pair(p.torch_op, p.jax_op) in special for lab in p.disagree}
    return (at_zero, tuple((p, tuple(ks)) for p, ks in at_kink.items()), beside, special,
            compiled, _special_words(labels))


def _special_words(labels: set[str]) -> str:
    """'NaN', '+inf', '±inf' or 'NaN or ±inf': the special inputs among `labels`."""
    infs = sorted(lab for lab in labels if lab.endswith("inf"))
    inf = "±inf" if len(infs) == 2 else infs[0] if infs else ""
    nan = "NaN" if any(lab.endswith("nan") for lab in labels) else ""
    return " or ".join(w for w in (nan, inf) if w)


def _flushing(atlases) -> dict:
    """Where the subnormal probe found flushing, by framework and device: the dtypes, runs and
    executions, and whether every run that probed it there flushed; and where a framework that
    flushes in every run of one device flushes in no run of another."""
    found: dict[tuple, dict] = {}
    for a in atlases:
        for x in a.arithmetic:
            e = found.setdefault((x["framework"], a.run.provenance["device"]),
                                 {"dtypes": {}, "runs": {}, "probed": {}, "executions": {},
                                  "ran": {}})
            e["probed"][a.run.tag] = e["ran"][x["exec"]] = True
            if flushes(x):
                e["dtypes"][x["dtype"]] = e["runs"][a.run.tag] = e["executions"][x["exec"]] = True
    flushed = tuple((fw, dev, tuple(e["dtypes"]), tuple(e["runs"]), e["runs"] == e["probed"],
                     tuple(e["executions"]), tuple(e["ran"]))
                    for (fw, dev), e in found.items() if e["runs"])
    always = {fw for fw, _, _, _, every, _, _ in flushed if every}
    kept = tuple((fw, dev, tuple(e["probed"])) for (fw, dev), e in found.items()
                 if not e["runs"] and fw in always)
    return {"flushed": flushed, "kept": kept}


def _whole_op(op: str) -> str:
    """An op without the output it is judged at ('torch.sort(x).values' for each of its
    '...values[2]'): a sentence counts ops, as Table 4 does, not their outputs."""
    return re.sub(r"\[\d+\]$", "", op)


def conformance_facts(breakers: list[dict], releases: list[Release]) -> dict:
    newest = {r.framework: r.release for r in releases}  # releases are in version order
    oldest = {fw: next(r.release for r in releases if r.framework == fw) for fw in newest}
    def since_the_oldest(fw: str) -> str | None:  # each op breaks it in every release tested
        rows = [b for b in breakers if b["framework"] == fw and not b["fixed_in"]]
        return oldest[fw] if rows and all(b["breaks in"][0][0] == oldest[fw] and
                                          len(b["breaks in"]) == 1 for b in rows) else None
    breaking = [(fw, release, tuple(dict.fromkeys(_whole_op(b["op"]) for b in breakers
                                                   if b["framework"] == fw and not b["fixed_in"])),
                 since_the_oldest(fw))
                for fw, release in newest.items()]
    return {"breaking": tuple(b for b in breaking if b[2]),
            "fixed": tuple((b["op"], b["kink"], b["fixed_in"]) for b in breakers if b["fixed_in"])}


def facts(atlases, main: RunAtlas, kinks: list[dict], changed: pd.DataFrame) -> Facts:
    at_zero: dict[float, list[str]] = {}
    for r in (r for r in kinks if r["kink"] == 0):
        for side in ("torch", "JAX"):
            if isinstance(r[f"{side} d/dx"], float):
                at_zero.setdefault(r[f"{side} d/dx"], []).append(r[f"{side} op"])
    changes = [x for x in main.changes if x.dtype == "float32"]
    at_kink_checks = [c for c in main.checks if c["point"] == 0.0]
    ignored = compiled_forward_wrong(main)
    return Facts(
        main.run.tag, tuple((v, tuple(dict.fromkeys(ops))) for v, ops in sorted(at_zero.items())),
        len(look_alike_pairs(main)), *_differing_pairs(main, kinks),
        tuple((fw, tuple(dict.fromkeys(x.op for x in changes if x.framework == fw)))
              for fw in ("torch", "jax") if any(c.framework == fw for c in main.compiled)),
        tuple((c.name, before.value, got.value) for c, before, got in ignored
              if isinstance(before, Value)),
        tuple(c.name for c, before, _ in ignored if not isinstance(before, Value)),
        tuple(op.name for op in main.atlas("float32") if forward_disagrees(op)),
        *_flushing(atlases).values(), _convention_changes(atlases, changed),
        tuple(sorted({round(c["finite_difference"], 9) for c in at_kink_checks})),
        tuple(sorted({c["convention"] for c in at_kink_checks if c["passed"] is True})),
        *_documented(main))

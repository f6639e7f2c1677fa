"""What the timing records add up to beside the ratios: the machine's copy bandwidth and each
rule's fraction of it, the best custom rule per framework and mode, the harness check (in-run ÷
fresh process), and the speed targets' measured values.
"""
import numpy as np

from experiments.timing import anatomy
from experiments.timing.records import (RuleTiming, RunTiming, keys, ratio, ratio_spread, sizes, size_label,
                                        unpaired_spread)
from study.stats import Estimate


def copy_bandwidth(t: RunTiming, n: int | None = None) -> float | None:
    """The machine's copy of n float32 elements, in bytes per second: the fastest copy into an
    existing buffer, whichever library (n = None: the largest size measured)."""
    n = n if n is not None else max((c.n for c in t.copies), default=None)
    best = anatomy.machine_copy(t.copies, n)
    return best.rate if best else None


def kernel_bytes(r: RuleTiming) -> float | None:
    """Bytes per element the rule's kernels move: for a jitted step, what XLA's cost analysis
    counts; for a compiled torch step, its forward graph reads x and writes y and the saved
    tensor, and its backward graph reads that and g and writes dx. None where the run did not
    record it (and for eager steps, whose intermediates are not counted)."""
    if r.mode == "jit":
        return r.xla_bytes_per_element
    if r.mode != "compile" or r.saved_bytes_per_element is None:
        return None
    return 16 + 2 * r.saved_bytes_per_element


def fractions(t: RunTiming) -> dict[tuple[str, str, str], tuple[float, float | None]]:
    """(fw, mode, rule) -> (useful, kernel) bytes per second over the copy bandwidth, at
    the largest size."""
    largest = max(sizes(t), default=None)
    bw = copy_bandwidth(t, largest)
    if not bw:
        return {}
    out = {}
    for r in (r for r in t.rules if r.n == largest):
        per_s = r.n / r.stats.median / bw
        kb = kernel_bytes(r)
        out[(r.framework, r.mode, r.rule)] = (r.bytes_per_element * per_s,
                                              kb * per_s if kb is not None else None)
    return out


def best_custom(t: RunTiming, fw: str, mode: str, min_n: int = 10 ** 6):
    """(rule, worst ratio over sizes >= min_n) of the custom rule with the lowest worst ratio."""
    scores = {}
    for f, m, rule in keys(t):
        if (f, m) != (fw, mode) or rule == t.references.get(fw):
            continue
        ratios = [ratio(t, fw, mode, rule, n) for n in sizes(t) if n >= min_n]
        if ratios and None not in ratios:
            scores[rule] = max(ratios)
    return min(scores.items(), key=lambda kv: kv[1]) if scores else (None, None)


def off_by(ratio_: float) -> float:
    """How far a ratio is from 1, as a factor of at least 1, either way."""
    return max(ratio_, 1 / ratio_)


def block_ratios(t: RunTiming, k: tuple) -> list[float]:
    """In-run ÷ fresh of each alternating block of the harness check."""
    mine, theirs = t.blocks.get(k), t.fresh[k].block_medians if k in t.fresh else None
    return list(np.divide(mine, theirs)) if mine and theirs else []


def harness_ratios(t: RunTiming) -> dict[tuple, float]:
    """(fw, mode, rule, n) -> in-run ÷ fresh-process time of the same case: the median over
    the alternating blocks of the ratio of the two sides' block medians (each block pair is
    timed seconds apart, so the machine's drift cancels), else the ratio of the medians."""
    idx, out = t.index(), {}
    for k, fresh in t.fresh.items():
        if k not in idx:
            continue
        blocks = block_ratios(t, k)
        out[k] = (float(np.median(blocks)) if blocks
                  else idx[k].stats.median / fresh.median)
    return out


def fraction_spread(t: RunTiming, fw: str, mode: str, rule: str, frac: float) -> Estimate:
    """A rule's useful fraction of the copy bandwidth at the largest size, with the interval
    of copy time ÷ rule time (the fraction is that ratio times a constant)."""
    largest = max(sizes(t))
    r, copy = t.index()[(fw, mode, rule, largest)], anatomy.machine_copy(t.copies, largest)
    if copy is None:
        return Estimate(frac)
    return unpaired_spread(frac, copy.timed.times, tuple(r.times),
                     frac * r.stats.median / copy.timed.median)


def target_values(t: RunTiming) -> dict[str, tuple[Estimate | None, str]]:
    """key -> (measured value, with its 95% interval where the run kept the rounds behind it;
    what it is of) for each target the run states."""
    names = t.names()
    out = {}
    for key, (fw, mode) in (("compile_ratio", ("torch", "compile")), ("jit_ratio", ("jax", "jit"))):
        rule, worst = best_custom(t, fw, mode)
        spreads = [s for n in sizes(t) if rule and n >= 10 ** 6
                   and (s := ratio_spread(t, fw, mode, rule, n))]
        out[key] = (max(spreads, key=lambda s: s.value) if spreads else
                    None if worst is None else Estimate(worst), f"best custom: {names.get(rule, rule)}")
    compiled = {k: v for k, v in fractions(t).items() if k[1] in ("compile", "jit")}
    if compiled:
        (fw, m, rule), (frac, _) = max(compiled.items(), key=lambda kv: kv[1][0])
        out["copy_fraction"] = (fraction_spread(t, fw, m, rule, frac),
                                f"{fw} {m} {names.get(rule, rule)}")
    seed = {(n.framework, n.mode, n.rule): n for n in t.nets
            if n.net == "seed" and n.workload == "fwd_bwd"}
    base = seed.get(("torch", "eager", t.references.get("torch")))
    if base:
        ratios = {r: v.stats.median / base.stats.median for (fw, m, r), v in seed.items()
                  if (fw, m) == ("torch", "eager") and r != t.references.get("torch")}
        if ratios:
            best = min(ratios, key=ratios.get)
            out["seed_net_eager"] = (
                unpaired_spread(ratios[best], seed[("torch", "eager", best)].times, base.times),
                f"best: {names.get(best, best)}")
    harness = harness_ratios(t)
    if harness:
        worst = max(harness, key=lambda k: off_by(harness[k]))
        out["harness"] = (Estimate(off_by(harness[worst])),
                          f"worst: {worst[0]} {worst[1]} {names.get(worst[2], worst[2])} at "
                          f"{size_label(worst[3])}")
    wall = t.run.provenance.get("wall_s")
    out["wall"] = (None if wall is None else Estimate(wall), f"{t.run.scope} run")
    return out

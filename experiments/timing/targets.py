"""What the timing records add up to beside the ratios: each rule's fraction of the machine's
copy bandwidth, the harness check (in-run ÷ fresh process), the speed targets' measured values,
and what the compiled-torch reproducer shows.
"""
from dataclasses import dataclass

import numpy as np

from experiments.timing.records import (COMPILED, COMPILED_MODES, EAGER, VECTOR_OFF, Timing, median,
                                        blocks, over, size_label, times, unpaired_spread)
from study.compare.levels import variance_components
from study.compare.stats import Estimate


def kernel_bytes(r: dict) -> float | None:
    """Bytes per element the rule's kernels move: for a jitted step, what XLA's cost analysis
    counts; for a compiled torch step, its forward graph reads x and writes y and the saved
    tensor, and its backward graph reads that and g and writes dx. None where the run did not
    record it (and for eager steps, whose intermediates are not counted)."""
    if r["mode"] == "jit":
        return r.get("xla_bytes_per_element")
    if r["mode"] != "compile" or r.get("saved_bytes_per_element") is None:
        return None
    return 16 + 2 * r["saved_bytes_per_element"]


def fractions(t: Timing) -> dict[tuple[str, str, str], tuple[float, float | None]]:
    """(fw, mode, rule) -> (useful, kernel) bytes per second over the machine's copy bandwidth
    (bytes per second of the fastest copy into an existing buffer), at the largest size."""
    largest = max(t.sizes, default=None)
    copy = t.machine_copy(largest)
    if not copy:
        return {}
    bw = copy["bytes"] / median(copy)
    out = {}
    for r in (r for r in t.rules if r["n"] == largest):
        per_s = r["n"] / median(r) / bw
        kb = kernel_bytes(r)
        out[(r["framework"], r["mode"], r["rule"])] = (r["bytes_per_element"] * per_s,
                                                       kb * per_s if kb is not None else None)
    return out


def met(value: Estimate, threshold: float, sense: str) -> str:
    """'yes' or 'no' where the whole interval meets or misses the threshold, 'undecided' where it
    spans it; a value without an interval is judged alone."""
    ends = (value.lo, value.hi) if value.lo is not None else (value.value,)
    ok = [v <= threshold if sense == "≤" else v >= threshold for v in ends]
    return "yes" if all(ok) else "no" if not any(ok) else "undecided"


# a verdict's rank: a rule that meets a target beats one left undecided, which beats one missing it
RANK = {"yes": 0, "undecided": 1, "no": 2}


def best_judged(t: Timing, fw: str, mode: str, threshold: float, sense: str,
                min_n: int = 10 ** 6):
    """(rule, {size: ratio}, the size it is judged at) of the custom rule that best meets the
    target at every size >= min_n, or None: each rule is judged at its worst size (the worst
    verdict there, then the highest ratio), and the rules are ranked by that verdict, then by
    that ratio; so a rule whose every interval meets the target is never passed over for one
    with a lower point estimate whose interval spans it."""
    best = None
    for rule in dict.fromkeys(r["rule"] for r in t.rules
                              if (r["framework"], r["mode"]) == (fw, mode)):
        if rule == t.references.get(fw):
            continue
        spreads = {n: t.ratio(fw, mode, rule, n) for n in t.sizes if n >= min_n}
        if not spreads or None in spreads.values():
            continue
        def score(n):
            return RANK[met(spreads[n], threshold, sense)], spreads[n].value
        at = max(spreads, key=score)
        if best is None or score(at) < best[0]:
            best = (score(at), rule, spreads, at)
    return best[1:] if best else None


def best_custom(t: Timing, fw: str, mode: str, min_n: int = 10 ** 6):
    """(rule, worst ratio over sizes >= min_n) of the custom rule with the lowest worst ratio."""
    scores = {}
    for rule in dict.fromkeys(r["rule"] for r in t.rules
                              if (r["framework"], r["mode"]) == (fw, mode)):
        if rule == t.references.get(fw):
            continue
        ratios = [t.ratio(fw, mode, rule, n) for n in t.sizes if n >= min_n]
        if ratios and None not in ratios:
            scores[rule] = max(r.value for r in ratios)
    return min(scores.items(), key=lambda kv: kv[1]) if scores else (None, None)


def off_by(ratio: float) -> float:
    """How far a ratio is from 1, as a factor of at least 1, either way."""
    return max(ratio, 1 / ratio)


def variance_split(t: Timing) -> dict[tuple[str, bool], tuple[float, float, int, float]]:
    """(framework, compiled) -> the median over the rule cases timed in several blocks of the
    SD of log(rule ÷ built-in) between blocks and within one, the blocks and the median
    rounds a block: what sets the width of a ratio's interval."""
    per: dict[tuple[str, bool], list[tuple]] = {}
    for (fw, mode, rule, n), r in t.index.items():
        base = t.index.get((fw, mode, t.references.get(fw), n))
        if rule == t.references.get(fw) or base is None or len(blocks(r)) < 2 \
                or len(times(r)) != len(times(base)):
            continue
        between, within = variance_components(np.log(np.divide(times(r), times(base))),
                                               blocks(r))
        per.setdefault((fw, mode in COMPILED_MODES), []).append(
            (np.sqrt(between), np.sqrt(within), len(blocks(r)), np.median(blocks(r))))
    return {key: tuple(float(np.median(column)) for column in zip(*rows))
            for key, rows in per.items()}


def block_ratios(r: dict) -> list[float]:
    """In-run ÷ fresh of each alternating block of the harness check."""
    mine, theirs = r.get("block_medians"), (r.get("fresh") or {}).get("block_medians")
    return list(np.divide(mine, theirs)) if mine and theirs else []


def harness_ratios(t: Timing) -> dict[tuple, float]:
    """(fw, mode, rule, n) -> in-run ÷ fresh-process time of the same case: the median over
    the alternating blocks of the ratio of the two sides' block medians (each block pair is
    timed seconds apart, so the machine's drift cancels), else the ratio of the medians."""
    return {k: float(np.median(blocks)) if (blocks := block_ratios(r))
            else median(r) / r["fresh"]["stats"]["median"]
            for k, r in t.index.items() if r.get("fresh")}


def target_values(t: Timing) -> dict[str, tuple[Estimate | None, str]]:
    """key -> (measured value, with its 95% interval where the run kept the rounds behind it;
    what it is of) for each target the run states."""
    names = t.names
    out = {}
    for key, (fw, mode) in (("compile_ratio", ("torch", "compile")), ("jit_ratio", ("jax", "jit"))):
        target = next((x for x in t.targets if x["key"] == key), {})
        judged = (best_judged(t, fw, mode, target["threshold"], target["sense"])
                  if isinstance(target.get("threshold"), (int, float)) else None)
        if judged:
            rule, spreads, at = judged
            out[key] = (spreads[at], f"best custom: {names.get(rule, rule)}, at {size_label(at)} "
                        f"(its worst of {', '.join(size_label(n) for n in spreads)})")
            continue
        rule, worst = best_custom(t, fw, mode)
        spreads = {n: s for n in t.sizes
                   if rule and n >= 10 ** 6 and (s := t.ratio(fw, mode, rule, n))}
        at = max(spreads, key=lambda n: spreads[n].value) if spreads else None
        sizes = ", ".join(size_label(n) for n in spreads)
        out[key] = (spreads[at] if spreads else None if worst is None else Estimate(worst),
                    f"best custom: {names.get(rule, rule)}"
                    + (f", at {size_label(at)} (its worst of {sizes})" if spreads else ""))
    compiled = {k: v for k, v in fractions(t).items() if k[1] in COMPILED_MODES}
    if compiled:
        (fw, m, rule), (frac, _) = max(compiled.items(), key=lambda kv: kv[1][0])
        # the interval of copy time ÷ rule time: the fraction is that ratio times a constant
        r, copy = t.index[(fw, m, rule, max(t.sizes))], t.machine_copy(max(t.sizes))
        out["copy_fraction"] = (
            unpaired_spread(frac, copy, r, frac * median(r) / median(copy)),
            f"{fw} {m} {names.get(rule, rule)} at {size_label(max(t.sizes))}")
    seed = {(n["framework"], n["mode"], n["rule"]): n for n in t.part("net")
            if n["net"] == "seed" and n["workload"] == "fwd_bwd"}
    base = seed.get(("torch", "eager", t.references.get("torch")))
    if base:
        ratios = {r: median(v) / median(base) for (fw, m, r), v in seed.items()
                  if (fw, m) == ("torch", "eager") and r != t.references.get("torch")}
        if ratios:
            best = min(ratios, key=ratios.get)
            out["seed_net_eager"] = (
                unpaired_spread(ratios[best], seed[("torch", "eager", best)], base),
                f"best: {names.get(best, best)}")
    harness = harness_ratios(t)
    if harness:
        worst = max(harness, key=lambda k: off_by(harness[k]))
        fw, mode, rule, n = worst
        out["harness"] = (Estimate(off_by(harness[worst])),
                          f"worst: {fw} {mode} {names.get(rule, rule)} at {size_label(n)}")
    wall = t.run.provenance.get("wall_s")
    out["wall"] = (None if wall is None else Estimate(wall), f"{t.run.scope} run")
    return out


@dataclass(frozen=True)
class ProbeFact:
    """What the compiled-torch reproducer shows, as ratios timed in the same rounds, each with
    its interval (None: not measured): the step compiled ÷ eager (random and sorted signs);
    the bool store compiled with and without vector code ÷ eager; the step with vector code
    off ÷ eager on random and sorted signs, and random ÷ sorted."""
    release: str  # the CPU kernels the run used
    n: str
    step: Estimate | None
    step_sorted: Estimate | None
    store: Estimate | None
    store_vector_off: Estimate | None
    step_vector_off: Estimate | None
    step_vector_off_sorted: Estimate | None
    vector_off_signs: Estimate | None

    @property
    def store_is_a_cause(self) -> bool:
        """Turning inductor's vector code off takes the bool store's time down by half or more,
        the whole intervals apart."""
        return (self.store is not None and self.store_vector_off is not None
                and self.store.lo > 2 * self.store_vector_off.hi)

    @property
    def signs_are_a_cause(self) -> bool:
        """With vector code off, the step's time still follows the pattern of signs."""
        return self.vector_off_signs is not None and self.vector_off_signs.lo > 1.5

    @property
    def vector_off_is_slower(self) -> bool:
        return self.step_vector_off is not None and self.step_vector_off.lo > 1


def probe_fact(t: Timing) -> ProbeFact | None:
    """None for runs whose probes carry no roles."""
    at = {(p["role"], p["way"], p["signs"]): p for p in t.probes if p.get("role")}
    if ("step", COMPILED, "random") not in at:
        return None

    def ratio(a: tuple, b: tuple) -> Estimate | None:
        return over(at[a], at[b]) if a in at and b in at else None
    return ProbeFact(
        str(t.run.provenance.get("torch_cpu_capability")),
        size_label(at[("step", COMPILED, "random")]["n"]),
        ratio(("step", COMPILED, "random"), ("step", EAGER, "random")),
        ratio(("step", COMPILED, "sorted"), ("step", EAGER, "sorted")),
        ratio(("bool store", COMPILED, "random"), ("bool store", EAGER, "random")),
        ratio(("bool store", VECTOR_OFF, "random"), ("bool store", EAGER, "random")),
        ratio(("step", VECTOR_OFF, "random"), ("step", EAGER, "random")),
        ratio(("step", VECTOR_OFF, "sorted"), ("step", EAGER, "sorted")),
        ratio(("step", VECTOR_OFF, "random"), ("step", VECTOR_OFF, "sorted")))


# every check the harness states a threshold for, in words: a number the run measured is cited
# with the checks the run failed, and those it left undecided (Table 20 has each)
OWN = {"compile_ratio": "compiled torch cost", "jit_ratio": "jitted JAX cost",
       "copy_fraction": "copy bandwidth", "seed_net_eager": "seed-size net's eager cost",
       "harness": "in-run against fresh-process times",
       "wall": "wall time"}


def checks_with(t: Timing, verdict: str) -> tuple[str, ...]:
    """The keys (OWN) of the checks whose verdict in the run is `verdict`."""
    measured = target_values(t)
    out = []
    for target in t.targets:
        value = measured.get(target["key"], (None, ""))[0]
        if (target["key"] in OWN and value is not None and target["threshold"] is not None
                and met(value, target["threshold"], target["sense"]) == verdict):
            out.append(target["key"])
    return tuple(out)

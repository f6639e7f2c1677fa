"""One run's timing records by part, and the estimates every summary takes from them: a
record's time, one record over another timed in the same rounds, a rule over its built-in;
and what a rerun is compared on (comparable_cells).

A record times one thunk: `times_s` holds every timed round (runs before kept only `stats`),
and `process_rounds` how many rounds each process (block) took, where it ran in several: a
rule case or a net is stored as a row per block, which in_blocks makes one.
"""
import numpy as np

from study.compare.cells import Value
from study.compare.stats import (MIN_BOOTSTRAP, Estimate, median_interval, paired_ratio,
                                 together, unpaired_ratio)
from study.runs.results import Run
from study.workloads.timing import quartiles

# A rerun's ratio reproduces ours when the two 95% intervals overlap or lie within
# 25% of each other; see the README for how two runs on this machine compare.
REPRODUCTION_TOLERANCE = 0.25
COMPILED_MODES = ("compile", "jit")  # the records' mode names for compiled code
PREALLOCATED = "preallocated"
EAGER, COMPILED, VECTOR_OFF = "eager", "compiled", "vector code off"  # the reproducer's ways


def size_label(n: int) -> str:
    return f"10^{int(round(np.log10(n)))}" if n >= 10 and 10 ** round(np.log10(n)) == n else str(n)


def times(r: dict) -> tuple:
    return tuple(r.get("times_s") or ())


def median(r: dict) -> float:
    return r["stats"]["median"]


# the parts whose cases are timed in blocks across the run, a row per block, and their key
BLOCKED = {"rule": ("framework", "mode", "rule", "n"),
           "net": ("framework", "mode", "rule", "net", "workload"),
           "eager_parts": ("framework", "rule", "piece", "n"),
           "probes": ("probe", "mode", "simdlen", "signs", "n")}
PER_ROUND = ("times_s", "dispatch_s", "minor_faults")


def in_blocks(rows: list[dict], key: tuple[str, ...]) -> list[dict]:
    """One row per key from a row per block (timing.measure: a case's blocks in turn across
    the run): the rounds of every block in block order, `process_rounds` how many each took,
    the statistics over them all, and the first block's other fields (its first call, the
    fresh-process check); a key with one row, as every run before blocks kept, as it is."""
    by_key: dict[tuple, list[dict]] = {}
    for i, r in enumerate(rows):  # a row of no block (a run before blocks) stands alone
        by_key.setdefault(tuple(r.get(k) for k in key) if r.get("block") is not None else i,
                          []).append(r)
    out = []
    for group in by_key.values():
        if len(group) == 1:
            out.append(group[0])
            continue
        group = sorted(group, key=lambda r: r.get("block") or 0)
        first = group[0]
        merged = {**first, "process_rounds": [len(r["times_s"]) for r in group],
                  "first_calls_s": [r["first_call_s"] for r in group]}
        for k in PER_ROUND:
            if first.get(k) is not None:
                merged[k] = [x for r in group for x in r[k]]
        merged["stats"] = quartiles(merged["times_s"])
        if first.get("dispatch_s") is not None:
            merged["dispatch"] = quartiles(merged["dispatch_s"])
        if first.get("minor_faults") is not None:
            merged["minor_faults_per_call"] = float(np.median(merged["minor_faults"]))
        out.append(merged)
    return out


def blocks(r: dict) -> tuple:
    """The rounds each process (block) took, where several took the record's rounds."""
    return tuple(r.get("process_rounds") or ())


def time(r: dict, n: int | None = None) -> Estimate:
    """The median over the record's rounds with its 95% interval (two levels where several
    processes took them); the median alone, of n rounds, where the rounds were not kept."""
    if not times(r):
        return Estimate(median(r), None, None, n)
    return median_interval(times(r), blocks=blocks(r))


def over(a: dict, b: dict) -> Estimate | None:
    """a ÷ b, round by round (both timed in the same rounds): the median of the per-round
    ratios with its interval, two levels where several processes took the rounds."""
    if len(times(a)) != len(times(b)) or not times(a):
        return None
    return paired_ratio(times(a), times(b), blocks=blocks(a))


def unpaired_spread(value: float, a: dict, b: dict, scale: float = 1.0) -> Estimate:
    """value (scale × median(a) ÷ median(b), of two records timed apart) with the bootstrap
    interval of that ratio (each side in two levels where several processes took it), where
    both kept at least MIN_BOOTSTRAP rounds."""
    if min(len(times(a)), len(times(b))) < MIN_BOOTSTRAP:
        return Estimate(value)
    r = unpaired_ratio(times(a), times(b), blocks=(blocks(a), blocks(b)))
    return Estimate(value, r.lo * scale, r.hi * scale, r.n)


def paired_spread(a: tuple, b: tuple) -> Estimate | None:
    """a ÷ b round by round, the median of the per-round ratios with its interval: one
    statistic for both (a ratio of medians beside the interval of another statistic once
    fell outside it), where both kept the same rounds, at least MIN_BOOTSTRAP of them."""
    if len(a) != len(b) or len(a) < MIN_BOOTSTRAP:
        return None
    return paired_ratio(a, b)


def kept(m: dict) -> float | None:
    """Bytes a rule keeps for backward per element: torch's saved tensors, or the residuals
    of a jitted jax.vjp (study.workloads.memory)."""
    field = "torch_saved" if m["framework"] == "torch" else "jax_jit_vjp"
    return per_element(m, field)


def per_element(r: dict, *fields: str) -> float | None:
    present = [r[k] for k in fields if r.get(k) is not None]
    return (present[0] or 0) / r["n"] if present else None


def way(r: dict) -> str | None:
    """A reproducer record's way: EAGER, COMPILED or VECTOR_OFF (inductor's cpp.simdlen=0).
    None for records without the 'compiled' flag: that harness reset dynamo before each
    compile, so its cells do not say which code they timed."""
    if r.get("compiled") is None:
        return None
    if not r["compiled"]:
        return EAGER
    return VECTOR_OFF if r.get("simdlen") == 0 else COMPILED


class Timing:
    """One run's records by part, with its plan: the built-in every ratio divides by, the
    torch and JAX rules doing the same work, the speed targets."""

    def __init__(self, run: Run):
        self.run = run
        self.parts: dict[str, list[dict]] = {}
        for r in run.ok_rows():
            self.parts.setdefault(r.get("part"), []).append(r)
        for part, key in BLOCKED.items():
            self.parts[part] = in_blocks(self.part(part), key)
        plan = next(iter(self.part("plan")), {})
        self.references = plan.get("reference_rules") or {}
        self.pairs = [tuple(p) for p in plan.get("torch_jax_pairs") or []]
        self.targets = plan.get("targets") or []
        self.torch_compile_cache = plan.get("torch_compile_cache")  # None: not recorded
        self.rules = self.part("rule")
        self.index = {(r["framework"], r["mode"], r["rule"], r["n"]): r for r in self.rules}
        self.sizes = sorted({r["n"] for r in self.rules})
        self.names = {r["rule"]: r["name"] for r in self.rules} | {
            m["rule"]: m["name"] for m in self.part("memory") if m.get("name") is not None}
        self.probes = [{**r, "way": w, "signs": r.get("signs") or "random"}
                       for r in self.part("probes") if (w := way(r))]
        self._ratios: dict[tuple, Estimate | None] = {}  # bootstrapped once, however often asked

    def part(self, name: str) -> list[dict]:
        return self.parts.get(name, [])

    def custom(self, r: dict) -> bool:
        return r["rule"] != self.references.get(r["framework"])

    def ratio(self, fw: str, mode: str, rule: str, n: int) -> Estimate | None:
        """The rule's time ÷ the built-in's, with its 95% bootstrap interval: the median of the
        per-round ratios where the two were timed in the same rounds (interleaved), else the
        ratio of medians, each side resampled on its own."""
        key = (fw, mode, rule, n)
        if key not in self._ratios:
            a, b = self.index.get(key), self.index.get((fw, mode, self.references.get(fw), n))
            paired = (a and b and a.get("interleaved_with") is not None
                      and b.get("interleaved_with") is not None
                      and len(times(a)) == len(times(b)))
            self._ratios[key] = None if not (a and b and times(a) and times(b)) else (
                paired_ratio(times(a), times(b), blocks=blocks(a)) if paired
                else unpaired_ratio(times(a), times(b), blocks=(blocks(a), blocks(b))))
        return self._ratios[key]

    def pieces(self) -> dict[tuple, dict[str, dict]]:
        """The eager cost taken apart: (framework, n, rule) -> {piece: record}."""
        out: dict = {}
        for p in self.part("eager_parts"):
            out.setdefault((p["framework"], p["n"], p["rule"]), {})[p["piece"]] = p
        return out

    def machine_copy(self, n: int) -> dict | None:
        """The machine's copy at n: the fastest copy into an existing buffer, whichever library."""
        into = [c for c in self.part("machine")
                if c.get("bytes") is not None and c["n"] == n and c["into"] == PREALLOCATED]
        return max(into, key=lambda c: c["bytes"] / median(c)) if into else None


def rule_case_ratio(t: "Timing", fw: str, rule: str, n: int) -> Estimate | None:
    """The eager rule case's rule ÷ built-in at n: what the cost table prints."""
    mode = next((m for (f, m, _, _) in t.index if f == fw and m not in COMPILED_MODES), None)
    return t.ratio(fw, mode, rule, n) if mode else None


def rule_cases_compiled_over_eager(t: "Timing", n: int) -> Estimate | None:
    """torch's built-in compiled ÷ eager at n from the rule cases, which time each mode in its
    own case: the ratio of the two medians, each side resampled on its own."""
    ref = t.references.get("torch")
    a, b = t.index.get(("torch", "compile", ref, n)), t.index.get(("torch", "eager", ref, n))
    return unpaired_spread(median(a) / median(b), a, b) if a and b else None


def comparable_cells(run: Run) -> dict:
    """What a rerun elsewhere can reproduce, each measured within the run with its 95%
    bootstrap interval: each rule ÷ built-in; a rule's eager step and backward body over the
    built-in's; each way of torch.relu's step over the autograd step; each compiled probe
    over its eager time; and the bytes kept for backward."""
    return together(lambda: _comparable_cells(run))


def _comparable_cells(run: Run) -> dict:
    t, out = Timing(run), {}

    def put(name, r):
        if r:
            out[name] = Value(r.value, r.lo, r.hi)
    for fw, mode, rule in dict.fromkeys((r["framework"], r["mode"], r["rule"]) for r in t.rules):
        for n in t.sizes:
            if rule != t.references.get(fw):
                put((("ratio", f"{fw} {mode} {rule} ÷ built-in"), ("n", size_label(n))),
                    t.ratio(fw, mode, rule, n))
    for m in t.part("memory"):
        out[(("saved bytes per element", m["rule"]),)] = Value(kept(m))
    pieces = t.pieces()
    for (fw, n, rule), of in pieces.items():
        ref = pieces.get((fw, n, t.references.get(fw)), {})
        for piece in ("step", "backward"):
            if rule != t.references.get(fw) and piece in of and piece in ref:
                put((("ratio", f"{fw} {rule} {piece} ÷ built-in's"), ("n", size_label(n))),
                    over(of[piece], ref[piece]))
    ways = t.part("page_faults")
    for w in ways:
        base = next(b for b in ways if b["n"] == w["n"])
        if w is not base:
            put((("ratio", f"{w['way']} ÷ {base['way']}"), ("n", size_label(w["n"]))),
                over(w, base))
    eager = {(p["probe"], p["signs"]): p for p in t.probes if p["way"] == EAGER}
    for p in t.probes:
        e = eager.get((p["probe"], p["signs"]))
        if p["way"] != EAGER and e:
            put((("ratio", f"{p['probe']} {p['way']} ÷ eager"), ("signs", p["signs"])),
                over(p, e))
    return out


def rate(flops: float, spent: Estimate, per: float) -> Estimate:
    """flops ÷ the time, over `per`, with the interval the time's interval gives it (the rate's
    digits are no surer than the time's)."""
    if spent.lo is None or not spent.lo > 0:
        return Estimate(flops / spent.value / per)
    return Estimate(flops / spent.value / per, flops / spent.hi / per, flops / spent.lo / per)


def shape_words(shape) -> str | None:
    """A net's shape (batch, inputs, hidden units, outputs, as harness.NETS gives it) in words."""
    if not shape or len(shape) != 4:
        return None
    b, i, h, o = shape
    return f"batch {b}, {i} inputs, {h} hidden units, {o} outputs"


def builtin_compiled_over_eager(t: Timing, fw: str, n: int) -> Estimate | None:
    """The built-in's compiled time ÷ its eager time at n, from the rule cases (each mode timed
    in its own case): the ratio of the two medians, each side resampled on its own. The
    baseline every compiled ratio of the framework divides by."""
    ref = t.references.get(fw)
    modes = [m for (f, m, r, size) in t.index if (f, r, size) == (fw, ref, n)]
    compiled = next((m for m in modes if m in COMPILED_MODES), None)
    eager = next((m for m in modes if m not in COMPILED_MODES), None)
    if compiled is None or eager is None:
        return None
    a, b = t.index[(fw, compiled, ref, n)], t.index[(fw, eager, ref, n)]
    return unpaired_spread(median(a) / median(b), a, b)

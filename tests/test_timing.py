import threading
import time

import jax.numpy as jnp
import pytest
import torch

from study.memory import jax_residual_bytes, torch_saved_bytes
from study.rules import by_name
from study.timing import summarize, time_thunk


def test_harness_synchronises_so_dispatch_is_shorter_than_the_synchronised_time():
    # A fake asynchronous op: the call returns at once, the work finishes 20 ms later.
    def dispatch():
        done = threading.Event()
        threading.Timer(0.02, done.set).start()
        return done

    t = time_thunk(dispatch, lambda done: done.wait(), repeats=5, warmup=0)
    assert max(t["dispatch_s"]) < 0.01 < 0.019 < min(t["times_s"])
    assert len(t["times_s"]) == 5 and t["first_call_s"] >= 0.019


def test_budget_stops_early_but_keeps_the_minimum_number_of_repeats():
    t = time_thunk(lambda: time.sleep(0.01), lambda _: None, repeats=100, warmup=0,
                   budget_s=0.0, min_repeats=3)
    assert len(t["times_s"]) == 3


def test_statistics_on_hand_computed_fixtures():
    # numpy's linear interpolation: for [1, 2, 3, 4], positions 0.75, 1.5, 2.25 of 0..3
    s = summarize([4.0, 1.0, 3.0, 2.0])
    assert (s["median"], s["q1"], s["q3"], s["iqr"], s["min"], s["n"]) == \
        (2.5, 1.75, 3.25, 1.5, 1.0, 4)
    assert summarize([7.0])["iqr"] == 0.0


N = 1 << 16


@pytest.mark.parametrize("rule,expected", [
    ("MyReLU (seed 000)", 4.0),  # saves its float32 input: 4 bytes an element
    ("ReLUSavesBoolMask (c=0)", 1.0),  # a torch.bool mask: 1 byte
    ("ReLUSavesBitMask (c=0)", 0.125),  # eight mask bits a uint8: 1/8 byte
])
def test_torch_saved_bytes_match_what_the_code_saves(rule, expected):
    assert torch_saved_bytes(by_name(rule).fn, torch.randn(N)) / N == expected


@pytest.mark.parametrize("rule,expected", [
    ("relu_with_convention(c=0) (custom_vjp)", 4.0),  # residual x, float32
    ("relu_saves_bool_mask (custom_vjp, c=0)", 1.0),
    ("relu_saves_bit_mask (custom_vjp, c=0)", 0.125),  # jnp.packbits: N/8 uint8
])
@pytest.mark.parametrize("jit", [False, True])
def test_jax_residual_bytes_match_what_the_code_saves(rule, expected, jit):
    assert jax_residual_bytes(by_name(rule).fn, jnp.ones(N, jnp.float32), jit=jit) / N == expected

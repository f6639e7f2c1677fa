"""Rules of several inputs, each with one behaviour where its inputs tie that `study check` must
report: the fixtures of tests/test_check_ties.py, and rules to point the command at:

    .venv/bin/python -m study check tests/rules_with_ties.py:MaxToX --quick     # exit 0
    .venv/bin/python -m study check tests/rules_with_ties.py:MaxToX --quick \\
        --fail-on tie_breaks_documented_rule                                     # exit 1
"""
import jax
import jax.numpy as jnp
import torch


# --- maximum(x, y) in torch -------------------------------------------------------------------

class MaxSplit(torch.autograd.Function):
    """maximum(x, y), half the incoming gradient to each where x == y."""

    @staticmethod
    def forward(ctx, x, y):
        ctx.save_for_backward(x, y)
        return torch.maximum(x, y)

    @staticmethod
    def backward(ctx, g):
        x, y = ctx.saved_tensors
        half = (x == y).to(g.dtype) / 2
        return g * ((x > y).to(g.dtype) + half), g * ((y > x).to(g.dtype) + half)


class MaxToX(torch.autograd.Function):
    """maximum(x, y), all of the incoming gradient to x where x == y."""

    @staticmethod
    def forward(ctx, x, y):
        ctx.save_for_backward(x, y)
        return torch.maximum(x, y)

    @staticmethod
    def backward(ctx, g):
        x, y = ctx.saved_tensors
        to_x = (x >= y).to(g.dtype)
        return g * to_x, g * (1 - to_x)


class MaxToBoth(torch.autograd.Function):
    """maximum(x, y), all of the incoming gradient to each of x and y where x == y: maximum(x,
    x) gets twice its derivative."""

    @staticmethod
    def forward(ctx, x, y):
        ctx.save_for_backward(x, y)
        return torch.maximum(x, y)

    @staticmethod
    def backward(ctx, g):
        x, y = ctx.saved_tensors
        return g * (x >= y).to(g.dtype), g * (y >= x).to(g.dtype)


# --- clamp(x, lo, hi) with tensor bounds ------------------------------------------------------

class ClampToX(torch.autograd.Function):
    """clamp(x, lo, hi) = min(max(x, lo), hi), each of max and min sending the gradient to its
    first argument at a tie: to x wherever lo <= x and max(x, lo) <= hi."""

    @staticmethod
    def forward(ctx, x, lo, hi):
        ctx.save_for_backward(x, lo, hi)
        return torch.clamp(x, lo, hi)

    @staticmethod
    def backward(ctx, g):
        x, lo, hi = ctx.saved_tensors
        through_min = (torch.maximum(x, lo) <= hi).to(g.dtype)
        through_max = (x >= lo).to(g.dtype)
        return g * through_max * through_min, g * (1 - through_max) * through_min, \
            g * (1 - through_min)


# --- not a rule of several elementwise inputs: usage errors -------------------------------------

def max_with_sum(x, y):
    """y's elements summed: y[0] changes every output."""
    return torch.maximum(x, y.sum())


def max_and_which(x, y):
    """A tuple: the maximum and where x wins."""
    return torch.maximum(x, y), x >= y


# --- maximum(x, y) in JAX ----------------------------------------------------------------------

def _max_saving_both(x, y):
    return jnp.maximum(x, y), (x, y)


@jax.custom_vjp
def jax_max_split(x, y):
    """maximum(x, y), half the incoming gradient to each where x == y."""
    return jnp.maximum(x, y)


def _split(saved, g):
    x, y = saved
    half = (x == y).astype(g.dtype) / 2
    return g * ((x > y).astype(g.dtype) + half), g * ((y > x).astype(g.dtype) + half)


jax_max_split.defvjp(_max_saving_both, _split)


@jax.custom_vjp
def jax_max_to_x(x, y):
    """maximum(x, y), all of the incoming gradient to x where x == y."""
    return jnp.maximum(x, y)


def _to_x(saved, g):
    x, y = saved
    to_x = (x >= y).astype(g.dtype)
    return g * to_x, g * (1 - to_x)


jax_max_to_x.defvjp(_max_saving_both, _to_x)

"""Two torch rules in a file that imports torch alone: what a PyTorch user without JAX checks
(tests/test_install.py, tests/test_one_framework.py).

    study check tests/rules_torch_only.py:AlphaAtZero --quick     # exit 1
"""
import torch


class Relu(torch.autograd.Function):
    """d/dx at 0 is 0, and the backward is linear in the incoming gradient: exit 0."""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x.clamp(min=0)

    @staticmethod
    def backward(ctx, g):
        x, = ctx.saved_tensors
        return g * (x > 0).to(g.dtype)


class AlphaAtZero(Relu):
    """0.5 at x == 0 whatever the incoming gradient: vjp_not_linear, exit 1."""

    @staticmethod
    def backward(ctx, g):
        x, = ctx.saved_tensors
        out = g * (x > 0).to(g.dtype)
        out[x == 0] = 0.5
        return out

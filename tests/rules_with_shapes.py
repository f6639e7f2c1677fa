"""Rules whose output shape is not their input's: the fixtures of tests/test_check_shapes.py,
and rules to point the command at:

    .venv/bin/python -m study check tests/rules_with_shapes.py:LearnedClipQuant --quick
"""
import jax
import jax.numpy as jnp
import numpy as np
import torch

STEP = 0.125  # the quantisers' step: 1/8, so that 0.35 and the other smooth points are no edge
CLIP = 6.0


# --- a 0-d input broadcast to shape (1,) by a one-element parameter: measured -----------------

class LearnedClipQuant(torch.nn.Module):
    """ReLU clipped at a learned bound and rounded to steps of 1/8, the gradient passed straight
    through: the bound has shape (1,), so a 0-d x gives shape (1,)."""

    def __init__(self):
        super().__init__()
        self.clip = torch.nn.Parameter(torch.tensor([CLIP]))

    def forward(self, x):
        y = torch.minimum(torch.relu(x), self.clip.to(x.dtype))
        return y + (torch.round(y / STEP) * STEP - y).detach()


class LearnedScaleQuant(torch.autograd.Function):
    """x clamped to [0, 6] and rounded to a learned scale of shape (1,), a straight-through
    backward."""

    scale = torch.tensor([STEP])

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        scale = LearnedScaleQuant.scale.to(x.dtype)
        return torch.round(x.clamp(0, CLIP) / scale) * scale

    @staticmethod
    def backward(ctx, grad_output):
        x, = ctx.saved_tensors
        return grad_output * ((x > 0) & (x < CLIP)).to(grad_output.dtype)


class GainReLU(torch.nn.Module):
    """relu(x) times a learned gain of shape (1,): a correct gradient."""

    def __init__(self):
        super().__init__()
        self.gain = torch.nn.Parameter(torch.ones(1))

    def forward(self, x):
        return torch.relu(x) * self.gain.to(x.dtype)


JAX_SCALE = np.array([STEP])


@jax.custom_vjp
def jax_learned_scale_quant(x):
    scale = jnp.asarray(JAX_SCALE, x.dtype)
    return jnp.round(jnp.clip(x, 0, CLIP) / scale) * scale


def _jax_quant_forward(x):
    return jax_learned_scale_quant(x), x


def _jax_quant_backward(x, g):
    inside = (x > 0) & (x < CLIP)
    return (jnp.sum(jnp.where(inside, g, 0), axis=tuple(range(g.ndim - x.ndim))),)


jax_learned_scale_quant.defvjp(_jax_quant_forward, _jax_quant_backward)


# --- a tuple --------------------------------------------------------------------------------

def relu_and_mask(x):
    return torch.relu(x), x > 0


class ReLUAndMask(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        mask = x > 0
        ctx.save_for_backward(mask)
        ctx.mark_non_differentiable(mask)
        return x.clamp(min=0), mask

    @staticmethod
    def backward(ctx, grad_output, _):
        mask, = ctx.saved_tensors
        return grad_output * mask.to(grad_output.dtype)


@jax.custom_vjp
def jax_relu_and_mask(x):
    return jnp.maximum(x, 0), x > 0


jax_relu_and_mask.defvjp(lambda x: (jax_relu_and_mask(x), x),
                         lambda x, g: (jnp.where(x > 0, g[0], 0),))


# --- a scalar from an array, or no array at all --------------------------------------------

def relu_sum(x):
    return torch.relu(x).sum()


def relu_sum_as_float(x):
    return float(torch.relu(x).sum())


def jax_relu_sum_as_numpy(x):
    return np.float64(jnp.sum(jnp.maximum(x, 0)))


def relu_without_return(x):
    torch.relu(x)


# --- another shape --------------------------------------------------------------------------

def relu_column(x):
    return torch.relu(x).reshape(-1, 1)


def relu_max_kept(x):
    return torch.relu(x).amax(dim=-1, keepdim=True)


def jax_relu_column(x):
    return jnp.maximum(x, 0).reshape(-1, 1)


def relu_flattened(x):
    """Elementwise on a vector; a batch comes back flat."""
    return torch.relu(x).reshape(-1)


def relu_tripled_at_0d(x):
    """Elementwise on a vector; a 0-d x gives three copies of its value."""
    y = torch.relu(x)
    return y.expand(3) if x.dim() == 0 else y

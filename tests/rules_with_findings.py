"""Small rules of our own, each with one behaviour that `study check` must find: the fixtures of
tests/test_check.py, and rules to point the command at:

    .venv/bin/python -m study check tests/rules_with_findings.py:AlphaAtZero --quick
"""
import jax
import jax.numpy as jnp
import torch

from study.measure.custom_rules import MyReLU


# --- rules of our own, each with one behaviour ------------------------------------------------

class AlphaAtZero(torch.autograd.Function):
    """A value assigned at x == 0 whatever the incoming gradient, as copied from a repository."""

    @staticmethod
    def forward(ctx, input):
        ctx.save_for_backward(input)
        return input.clamp(min=0)

    @staticmethod
    def backward(ctx, grad_output):
        input, = ctx.saved_tensors
        grad_input = grad_output.clone()
        grad_input[input < 0] = 0
        grad_input[input == 0] = 0.5
        return grad_input


class GuidedBackprop(torch.autograd.Function):
    """Guided backprop: the gradient is zeroed where it is negative, and where x <= 0."""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x.clamp(min=0)

    @staticmethod
    def backward(ctx, grad_output):
        x, = ctx.saved_tensors
        return grad_output.clamp(min=0) * (x > 0).to(grad_output.dtype)


class RandomAtZero(torch.autograd.Function):
    """A backward that draws its derivative at 0 at random."""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x.clamp(min=0)

    @staticmethod
    def backward(ctx, grad_output):
        x, = ctx.saved_tensors
        at_zero = torch.rand(x.shape, dtype=x.dtype) * grad_output
        return torch.where(x > 0, grad_output, torch.where(x == 0, at_zero, 0 * grad_output))


def addcmul_relu(x):
    """max(x, 0) as 0 + x * (x > 0): -inf * 0 is NaN at -inf."""
    return torch.addcmul(torch.zeros_like(x), x, (x > 0).to(x.dtype))


class NaNBelowZero(torch.autograd.Function):
    """A backward dividing by the mask: 0 / 0 where x < 0."""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x.clamp(min=0)

    @staticmethod
    def backward(ctx, grad_output):
        x, = ctx.saved_tensors
        return grad_output * (x > 0).to(x.dtype) / (x >= 0).to(x.dtype)


def where_relu(x):
    return torch.where(x > 0, x, 0.0)  # NaN > 0 is false: NaN in, 0 out


class TwiceTheSlope(torch.autograd.Function):
    """Linear in the cotangent, but the derivative is 2 where x > 0."""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x.clamp(min=0)

    @staticmethod
    def backward(ctx, grad_output):
        x, = ctx.saved_tensors
        return 2 * grad_output * (x > 0).to(x.dtype)


class WrongJvp(torch.autograd.Function):
    """A correct backward with a jvp staticmethod that triples the tangent."""

    @staticmethod
    def forward(x):
        return x.clamp(min=0)

    @staticmethod
    def setup_context(ctx, inputs, output):
        ctx.save_for_backward(inputs[0])
        ctx.save_for_forward(inputs[0])

    @staticmethod
    def backward(ctx, grad_output):
        x, = ctx.saved_tensors
        return grad_output * (x > 0).to(x.dtype)

    @staticmethod
    def jvp(ctx, tangent):
        x, = ctx.saved_tensors
        return 3 * tangent * (x > 0).to(x.dtype)


class WritesGradOutput(MyReLU):
    """MyReLU without its clone: zeroes grad_output itself."""

    @staticmethod
    def backward(ctx, grad_output):
        input, = ctx.saved_tensors
        grad_output[input < 0] = 0
        return grad_output


def mixes_elements(x):
    return x - x.sum()


@jax.custom_vjp
def jax_guided(x):
    return jnp.maximum(x, 0)


jax_guided.defvjp(lambda x: (jnp.maximum(x, 0), x),
                  lambda x, g: (jnp.where(x > 0, jnp.maximum(g, 0), 0.0),))


# --- rules whose derivative is NaN or infinite somewhere: accepted as elementwise --------------

def torch_sqrt(x):
    return torch.sqrt(x)  # derivative NaN below 0 (where the value is NaN), +inf at +0


def torch_log(x):
    return torch.log(x)  # value -inf at 0 and NaN below it


@jax.custom_jvp
def one_sided_sqrt(x):
    """A square root whose derivative convention is one-sided: +inf at 0 (the right-hand
    limit), NaN for x < 0, where the value is NaN too."""
    return jnp.sqrt(x)


@one_sided_sqrt.defjvp
def _one_sided_sqrt_jvp(primals, tangents):
    x, = primals
    t, = tangents
    y = jnp.sqrt(x)
    slope = jnp.where(x > 0, 0.5 / jnp.where(x > 0, y, 1.0), jnp.where(x == 0, jnp.inf, jnp.nan))
    return y, slope * t


def nan_from_a_neighbour(x):
    """Mixes elements, and only a NaN shows it: y[i] = x[i] + 0 × sqrt(x[i - 1]) is NaN where
    its neighbour is negative; every finite off-diagonal entry of the Jacobian is 0."""
    return x + 0 * torch.sqrt(torch.roll(x, 1))

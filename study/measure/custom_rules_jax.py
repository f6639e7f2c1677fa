"""The study's custom JAX rules: custom_vjp and custom_jvp ReLUs, each with a declared
convention c, the factor its backward applies to the incoming gradient at exactly x == 0.
Imports JAX alone (study.measure.custom_rules names both frameworks' rules).
"""
import functools
from typing import Callable

import jax
import jax.numpy as jnp
import numpy as np

# --- jax custom rules ----------------------------------------------------------------

def jax_relu_slope_times(grad, x, c: float):
    return jnp.where(x > 0, grad, jnp.where(x == 0, grad * c, jnp.zeros_like(grad)))


def _jax_custom_vjp(backward_mask: Callable) -> Callable:
    @jax.custom_vjp
    def relu(x):
        return jnp.maximum(x, 0)

    def relu_fwd(x):
        return jnp.maximum(x, 0), x

    def relu_bwd(x, grad):
        return (backward_mask(grad, x),)

    relu.defvjp(relu_fwd, relu_bwd)
    return relu


jax_seed_relu = _jax_custom_vjp(lambda g, x: jnp.where(x < 0, jnp.zeros_like(g), g))
"""JAX twin of seed 000's MyReLU: pass the gradient, zeroed where x < 0."""


jax_relu_torch_nan = _jax_custom_vjp(lambda g, x: jnp.where(x <= 0, jnp.zeros_like(g), g))
"""c = 0 like jax.nn.relu, but passes the gradient at NaN, as torch.relu does."""


def _jax_relu_saving(save: Callable, positive_from: Callable) -> Callable:
    """c = 0 custom_vjp ReLU whose residual is save(x > 0), and only that."""
    @jax.custom_vjp
    def relu(x):
        return jnp.maximum(x, 0)

    def relu_fwd(x):
        return jnp.maximum(x, 0), save(x > 0)

    def relu_bwd(residual, grad):
        return (jnp.where(positive_from(residual, grad.shape), grad, jnp.zeros_like(grad)),)

    relu.defvjp(relu_fwd, relu_bwd)
    return relu


jax_relu_saves_bool_mask = _jax_relu_saving(lambda m: m, lambda r, shape: r)
jax_relu_saves_bit_mask = _jax_relu_saving(
    lambda m: jnp.packbits(m.reshape(-1), bitorder="little"),
    lambda r, shape: jnp.unpackbits(r, count=int(np.prod(shape)), bitorder="little")
    .reshape(shape).astype(bool))


@functools.cache
def jax_relu_with_convention(c: float) -> Callable:
    """`jax.custom_vjp` ReLU whose backward multiplies the gradient by c at 0."""
    return _jax_custom_vjp(lambda g, x: jax_relu_slope_times(g, x, c))


@functools.partial(jax.custom_vjp, nondiff_argnums=(1,))
def jax_relu_nondiff_convention(x, c: float):
    """custom_vjp ReLU whose convention c is a static, non-differentiable argument."""
    return jnp.maximum(x, 0)


jax_relu_nondiff_convention.defvjp(
    lambda x, c: (jnp.maximum(x, 0), x),
    lambda c, x, grad: (jax_relu_slope_times(grad, x, c),))


@jax.custom_jvp
def jax_relu_custom_jvp(x):
    """c = 0 ReLU written with jax.custom_jvp instead of custom_vjp."""
    return jnp.maximum(x, 0)


@jax_relu_custom_jvp.defjvp
def _jax_relu_custom_jvp_rule(primals, tangents):
    (x,), (t,) = primals, tangents
    return jax_relu_custom_jvp(x), jax_relu_slope_times(t, x, 0.0)

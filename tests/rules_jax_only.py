"""Two JAX rules in a file that imports JAX alone: what a JAX user without torch checks
(tests/test_install.py, tests/test_one_framework.py).

    study check tests/rules_jax_only.py:alpha_at_zero --quick     # exit 1
"""
import jax
import jax.numpy as jnp


@jax.custom_vjp
def relu(x):
    """d/dx at 0 is 0, and the backward is linear in the incoming gradient: exit 0."""
    return jnp.maximum(x, 0)


relu.defvjp(lambda x: (relu(x), x), lambda x, g: (g * (x > 0).astype(g.dtype),))


@jax.custom_vjp
def alpha_at_zero(x):
    """0.5 at x == 0 whatever the incoming gradient: vjp_not_linear, exit 1."""
    return jnp.maximum(x, 0)


alpha_at_zero.defvjp(lambda x: (alpha_at_zero(x), x),
                     lambda x, g: (jnp.where(x == 0, 0.5, g * (x > 0)).astype(g.dtype),))

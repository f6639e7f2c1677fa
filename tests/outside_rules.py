"""A rule defined outside the registry, as a user defines one: a value naming where it is
defined (`source`), so that another process (timing's fresh processes) loads it from there."""
import jax
import jax.numpy as jnp

from study.measure.rule import Rule


@jax.custom_vjp
def relu_c0(x):
    return jnp.maximum(x, 0)


relu_c0.defvjp(lambda x: (jnp.maximum(x, 0), x),
               lambda x, g: (jnp.where(x > 0, g, jnp.zeros_like(g)),))

OUTSIDE = Rule("jax_outside_relu", "jax", "relu (custom_vjp, c=0; a rule outside the registry)",
               "custom", relu_c0, 0.0, timed=True, source=f"{__file__}:OUTSIDE")

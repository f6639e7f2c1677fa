"""The custom ReLU rules the registry (study.measure.rules) lists: torch autograd.Functions in each
style, torch.library custom ops, and JAX custom_vjp / custom_jvp rules, each with a declared
convention c, the factor its backward applies to the incoming gradient at exactly x == 0.

Each framework's rules live in their own module (custom_rules_torch, custom_rules_jax), so that
the registry can build one framework's rules importing that framework alone; this module names
both, and imports both.
"""
from study.measure.custom_rules_jax import (jax_relu_custom_jvp,  # noqa: F401
                                            jax_relu_nondiff_convention, jax_relu_saves_bit_mask,
                                            jax_relu_saves_bool_mask, jax_relu_slope_times,
                                            jax_relu_torch_nan, jax_relu_with_convention,
                                            jax_seed_relu)
from study.measure.custom_rules_torch import (CUSTOM_OP_NAMESPACE, MyReLU,  # noqa: F401
                                              ReLUSavesBitMask, ReLUSavesBoolMask,
                                              torch_custom_op_relu, torch_pack_bits,
                                              torch_relu_slope_times, torch_relu_style,
                                              torch_relu_with_convention, torch_unpack_bits)
# a rule the release cannot run: defined beside the Rule (no framework), named here as well
from study.measure.rule import (NotInRelease, api_or_missing, not_in_release,  # noqa: F401
                                release_of)

"""The ReLU rule registry: built-ins and custom gradient rules of both frameworks.

    >>> from study.rules import RULES, by_key
    >>> by_key("torch_relu").fn(torch.tensor([-1.0, 2.0]))
    tensor([0., 2.])

Every rule has a stable `key` (what records, tables and experiments refer to) and a display
`name` (what a reader sees; records carry it, so renaming a rule never rewrites old results).
A custom rule declares `convention`: the factor its backward applies to the incoming
gradient at exactly x == 0. A built-in's convention is measured, never declared (None).
Adding a rule is one line in `_torch_builtins`, `_jax_builtins` or `RULES`.
"""
import functools
import re
from dataclasses import dataclass
from typing import Callable

import jax
import jax.numpy as jnp
import torch
import torch.nn.functional as F
from jax import lax

from study.custom_rules import (MyReLU, ReLUSavesBitMask, ReLUSavesBoolMask, jax_relu_custom_jvp,
                                jax_relu_nondiff_convention, jax_relu_saves_bit_mask,
                                jax_relu_saves_bool_mask, jax_relu_torch_nan, jax_relu_with_convention,
                                jax_seed_relu, torch_custom_op_relu, torch_relu_style,
                                torch_relu_with_convention)


@dataclass(frozen=True)
class Rule:
    key: str  # stable identifier, unique across the registry
    framework: str  # "torch" | "jax"
    name: str  # display name, unique across the registry
    kind: str  # "builtin" | "custom"
    fn: Callable
    convention: float | None = None  # declared d/dx at 0, custom rules only
    kinks: tuple[float, ...] = (0.0,)
    relu_like: bool = True  # equals max(x, 0) everywhere off its kinks
    twin: str | None = None  # custom rules with the same twin key share masks and convention


def _torch_zero(x):
    return torch.zeros((), dtype=x.dtype, device=x.device)


def _builtin(framework, key, name, fn, kinks=(0.0,), relu_like=True) -> Rule:
    return Rule(key, framework, name, "builtin", fn, None, tuple(kinks), relu_like)


def _torch_builtins() -> list[Rule]:
    t = functools.partial(_builtin, "torch")
    return [
        t("torch_relu", "torch.relu", torch.relu),
        t("torch_F_relu", "F.relu", F.relu),
        t("torch_nn_ReLU", "nn.ReLU()", torch.nn.ReLU()),
        t("torch_threshold", "F.threshold(x, 0, 0)", lambda x: F.threshold(x, 0.0, 0.0)),
        t("torch_clamp_min0", "torch.clamp(x, min=0)", lambda x: torch.clamp(x, min=0)),
        t("torch_clamp_min_fn", "torch.clamp_min(x, 0)", lambda x: torch.clamp_min(x, 0)),
        t("torch_maximum0", "torch.maximum(x, 0)", lambda x: torch.maximum(x, _torch_zero(x))),
        t("torch_max_zeros", "torch.max(x, zeros)", lambda x: torch.max(x, torch.zeros_like(x))),
        t("torch_where_gt", "torch.where(x > 0, x, 0)", lambda x: torch.where(x > 0, x, 0.0)),
        t("torch_where_ge", "torch.where(x >= 0, x, 0)", lambda x: torch.where(x >= 0, x, 0.0)),
        t("torch_mul_mask", "x * (x > 0)", lambda x: x * (x > 0)),
        t("torch_abs_average", "(x + x.abs()) / 2", lambda x: (x + x.abs()) / 2),
        t("torch_leaky_relu0", "F.leaky_relu(x, 0)", lambda x: F.leaky_relu(x, 0.0)),
        t("torch_clamp_0_6", "torch.clamp(x, 0, 6)", lambda x: torch.clamp(x, 0, 6), (0.0, 6.0),
          False),
        t("torch_relu6", "F.relu6", F.relu6, (0.0, 6.0), False),
        t("torch_hardtanh", "F.hardtanh", F.hardtanh, (-1.0, 1.0), False),
        t("torch_abs", "torch.abs", torch.abs, (0.0,), False),
        t("torch_leaky_relu001", "F.leaky_relu(x, 0.01)", lambda x: F.leaky_relu(x, 0.01), (0.0,),
          False),
        t("torch_softplus100", "F.softplus(x, beta=100)", lambda x: F.softplus(x, beta=100.0),
          (0.0,), False),
    ] + _torch_piecewise()


def _torch_piecewise() -> list[Rule]:
    """torch.nn.functional's other piecewise activations, with their default parameters; kinks
    are where the definition switches branch (softplus: beta * x = threshold = 20)."""
    t = functools.partial(_builtin, "torch", relu_like=False)
    return [
        t("torch_hardswish", "F.hardswish", F.hardswish, (-3.0, 3.0)),
        t("torch_hardsigmoid", "F.hardsigmoid", F.hardsigmoid, (-3.0, 3.0)),
        t("torch_hardshrink", "F.hardshrink (λ=0.5)", F.hardshrink, (-0.5, 0.5)),
        t("torch_softshrink", "F.softshrink (λ=0.5)", F.softshrink, (-0.5, 0.5)),
        t("torch_elu", "F.elu", F.elu),
        t("torch_celu", "F.celu", F.celu),
        t("torch_selu", "F.selu", F.selu),
        t("torch_prelu025", "F.prelu(x, 0.25)",
          lambda x: F.prelu(x, torch.tensor(0.25, dtype=x.dtype, device=x.device))),
        t("torch_rrelu_eval", "F.rrelu(x, training=False)", lambda x: F.rrelu(x, training=False)),
        t("torch_threshold_1_20", "F.threshold(x, 1, 20)", lambda x: F.threshold(x, 1.0, 20.0),
          (1.0,)),
        t("torch_softplus", "F.softplus", F.softplus, (20.0,)),
        t("torch_softsign", "F.softsign", F.softsign),
    ]


def _jax_builtins() -> list[Rule]:
    j = functools.partial(_builtin, "jax")
    return [
        j("jax_relu", "jax.nn.relu", jax.nn.relu),
        j("jax_maximum0", "jnp.maximum(x, 0)", lambda x: jnp.maximum(x, 0)),
        j("jax_lax_max_zeros", "lax.max(x, zeros)", lambda x: lax.max(x, jnp.zeros_like(x))),
        j("jax_clip0", "jnp.clip(x, 0)", lambda x: jnp.clip(x, 0)),
        j("jax_where_gt", "jnp.where(x > 0, x, 0)", lambda x: jnp.where(x > 0, x, 0)),
        j("jax_where_ge", "jnp.where(x >= 0, x, 0)", lambda x: jnp.where(x >= 0, x, 0)),
        j("jax_mul_mask", "x * (x > 0).astype(x.dtype)", lambda x: x * (x > 0).astype(x.dtype)),
        j("jax_abs_average", "(x + jnp.abs(x)) / 2", lambda x: (x + jnp.abs(x)) / 2),
        j("jax_leaky_relu0", "jax.nn.leaky_relu(x, 0)", lambda x: jax.nn.leaky_relu(x, 0.0)),
        j("jax_relu6", "jax.nn.relu6", jax.nn.relu6, (0.0, 6.0), False),
        j("jax_clip_0_6", "jnp.clip(x, 0, 6)", lambda x: jnp.clip(x, 0, 6), (0.0, 6.0), False),
        j("jax_lax_clamp_0_6", "lax.clamp(0, x, 6)",
          lambda x: lax.clamp(x.dtype.type(0), x, x.dtype.type(6)), (0.0, 6.0), False),
        j("jax_hard_tanh", "jax.nn.hard_tanh", jax.nn.hard_tanh, (-1.0, 1.0), False),
        j("jax_abs", "jnp.abs", jnp.abs, (0.0,), False),
        j("jax_leaky_relu001", "jax.nn.leaky_relu(x, 0.01)", lambda x: jax.nn.leaky_relu(x, 0.01),
          (0.0,), False),
        j("jax_softplus100", "jax.nn.softplus(100x)/100",
          lambda x: jax.nn.softplus(100 * x) / 100, (0.0,), False),
    ] + _jax_piecewise()


def _jax_piecewise() -> list[Rule]:
    """jax.nn's other piecewise (or piecewise-looking) activations, default parameters.
    softplus and squareplus are smooth: softplus is probed at torch's switch to the linear
    branch (its look-alike's kink), squareplus at 0."""
    j = functools.partial(_builtin, "jax", relu_like=False)
    return [
        j("jax_hard_silu", "jax.nn.hard_silu (= hard_swish)", jax.nn.hard_silu, (-3.0, 3.0)),
        j("jax_hard_sigmoid", "jax.nn.hard_sigmoid", jax.nn.hard_sigmoid, (-3.0, 3.0)),
        j("jax_elu", "jax.nn.elu", jax.nn.elu),
        j("jax_celu", "jax.nn.celu", jax.nn.celu),
        j("jax_selu", "jax.nn.selu", jax.nn.selu),
        j("jax_leaky_relu025", "jax.nn.leaky_relu(x, 0.25)", lambda x: jax.nn.leaky_relu(x, 0.25)),
        j("jax_sparse_plus", "jax.nn.sparse_plus", jax.nn.sparse_plus, (-1.0, 1.0)),
        j("jax_sparse_sigmoid", "jax.nn.sparse_sigmoid", jax.nn.sparse_sigmoid, (-1.0, 1.0)),
        j("jax_squareplus", "jax.nn.squareplus", jax.nn.squareplus),
        j("jax_softplus", "jax.nn.softplus", jax.nn.softplus, (20.0,)),
        j("jax_soft_sign", "jax.nn.soft_sign", jax.nn.soft_sign),
    ]


CONVENTIONS = (0.0, 0.5, 1.0)
CUSTOM_OP_CONVENTIONS = (0.0, 1.0)
TORCH_STYLES = {"vmap": "generate_vmap_rule = True", "jvp": "a jvp staticmethod",
                "vmap+jvp": "generate_vmap_rule and a jvp staticmethod",
                "once": "@once_differentiable backward"}
_STYLE_KEYS = {"vmap": "vmap", "jvp": "jvp", "vmap+jvp": "vmap_jvp", "once": "once"}


def _custom(key, framework, name, fn, c, twin=None) -> Rule:
    return Rule(key, framework, name, "custom", fn, c, twin=twin)


def _c(c: float) -> str:
    return f"{c:g}"


RULES: tuple[Rule, ...] = tuple(
    _torch_builtins()
    + [_custom("torch_myrelu_seed", "torch", "MyReLU (seed 000)", MyReLU.apply, 1.0, "seed")]
    + [_custom(f"torch_custom_c{_c(c)}", "torch", f"ReLUWithConvention(c={_c(c)})",
               torch_relu_with_convention(c).apply, c, f"c={_c(c)}") for c in CONVENTIONS]
    + [_custom(f"torch_custom_c0_{_STYLE_KEYS[style]}", "torch",
               f"ReLUWithConvention(c=0) + {feature}", torch_relu_style(style).apply, 0.0, "c=0")
       for style, feature in TORCH_STYLES.items()]
    + [_custom("torch_custom_bool_mask", "torch", "ReLUSavesBoolMask (c=0)",
               ReLUSavesBoolMask.apply, 0.0, "bool mask"),
       _custom("torch_custom_bit_mask", "torch", "ReLUSavesBitMask (c=0)",
               ReLUSavesBitMask.apply, 0.0, "bit mask")]
    + [_custom(f"torch_custom_op_c{_c(c)}", "torch", f"custom_op relu (c={_c(c)})",
               torch_custom_op_relu(c), c, f"nondiff c={_c(c)}") for c in CUSTOM_OP_CONVENTIONS]
    + [_custom(f"torch_custom_op_vmap_c{_c(c)}", "torch",
               f"custom_op relu + register_vmap (c={_c(c)})", torch_custom_op_relu(c, True), c,
               f"nondiff c={_c(c)}") for c in CUSTOM_OP_CONVENTIONS]
    + _jax_builtins()
    + [_custom("jax_seed_relu", "jax", "seed_relu (custom_vjp)", jax_seed_relu, 1.0, "seed")]
    + [_custom(f"jax_custom_c{_c(c)}", "jax", f"relu_with_convention(c={_c(c)}) (custom_vjp)",
               jax_relu_with_convention(c), c, f"c={_c(c)}") for c in CONVENTIONS]
    + [_custom("jax_relu_nan_passes", "jax", "relu_nan_passes (custom_vjp)", jax_relu_torch_nan,
               0.0)]
    + [_custom("jax_custom_jvp_c0", "jax", "relu (custom_jvp, c=0)", jax_relu_custom_jvp, 0.0)]
    + [_custom("jax_custom_bool_mask", "jax", "relu_saves_bool_mask (custom_vjp, c=0)",
               jax_relu_saves_bool_mask, 0.0, "bool mask"),
       _custom("jax_custom_bit_mask", "jax", "relu_saves_bit_mask (custom_vjp, c=0)",
               jax_relu_saves_bit_mask, 0.0, "bit mask")]
    + [_custom(f"jax_custom_nondiff_c{_c(c)}", "jax",
               f"relu(x, c={_c(c)}) (custom_vjp, nondiff_argnums)",
               functools.partial(jax_relu_nondiff_convention, c=c), c, f"nondiff c={_c(c)}")
       for c in CUSTOM_OP_CONVENTIONS]
)
_BY_KEY = {r.key: r for r in RULES}


def by_key(key: str) -> Rule:
    try:
        return _BY_KEY[key]
    except KeyError:
        raise KeyError(f"no rule with key {key!r}") from None


def relu_rules(framework: str | None = None) -> list[Rule]:
    """Rules that equal max(x, 0) off x == 0: the ones a two-layer ReLU net can swap in."""
    return [r for r in RULES if r.relu_like and r.kinks == (0.0,)
            and (framework is None or r.framework == framework)]


REFERENCE_RELU = {"torch": "torch_relu", "jax": "jax_relu"}

# ':math:`\\nabla \\mathrm{relu}(0) = 0`', as jax.nn.relu's docstring declares its convention
_DOCUMENTED = re.compile(r"\\nabla\s*\\mathrm\{\w+\}\((-?\d+(?:\.\d+)?)\)\s*=\s*(-?\d+(?:\.\d+)?)")


def documented_derivatives(rule: Rule) -> dict[float, float]:
    """{kink: derivative} that the op's own docstring, in the installed release, declares
    (jax.nn.relu's: 0 at 0); {} where it declares none. Read at run time, never typed here."""
    return {float(k): float(v) for k, v in _DOCUMENTED.findall(getattr(rule.fn, "__doc__", "") or "")}


assert len(_BY_KEY) == len(RULES), "rule keys must be unique"
assert len({r.name for r in RULES}) == len(RULES), "rule names must be unique"

"""The frameworks' own ReLU-like ops as registry entries (study.measure.rules): each with its
display name, its kinks, whether it equals max(x, 0) off 0, and the relations it declares (twin,
look-alike, the designs that take it; for the conformance, `ties` and `composition`). A built-in's
convention is measured, never declared. Each list imports its framework alone.

Beside them, the built-ins of several inputs, whose non-differentiable points are ties between
inputs (max and min reductions, max pooling, sort and top-k, median, a norm at 0, maximum,
minimum and clamp of arrays): each declares the arrays it takes, its ties, and what its own
documentation says it gives there, where it says (the PyTorch page quoted at TORCH_PAGE)."""
import functools
from typing import Callable

from study.measure.rule import (EVEN_SPLIT, ONE_INPUT, InputTie, Rule, Tie, TieDocumentation,
                                api_or_missing)

EVERY_NET = ("seed", "mid", "large")  # timing.NETS


def _torch_zero(x):
    import torch
    return torch.zeros((), dtype=x.dtype, device=x.device)


def _builtin(framework, key, name, fn, kinks=(0.0,), relu_like=True, **relations) -> Rule:
    return Rule(key, framework, name, "builtin", fn, None, tuple(kinks), relu_like, **relations)


def torch_builtins() -> list[Rule]:
    import torch
    import torch.nn.functional as F
    t = functools.partial(_builtin, "torch")
    return [
        t("torch_relu", "torch.relu", torch.relu, twin="jax_relu", look_alike="jax_relu",
          timed=True, timed_in_nets=EVERY_NET, paired_as="relu", trained=True,
          transforms_style="torch reference: torch.relu"),
        t("torch_F_relu", "F.relu", F.relu),
        t("torch_nn_ReLU", "nn.ReLU()", torch.nn.ReLU()),
        t("torch_threshold", "F.threshold(x, 0, 0)", lambda x: F.threshold(x, 0.0, 0.0)),
        t("torch_clamp_min0", "torch.clamp(x, min=0)", lambda x: torch.clamp(x, min=0),
          look_alike="jax_clip0"),
        t("torch_clamp_min_fn", "torch.clamp_min(x, 0)", lambda x: torch.clamp_min(x, 0)),
        t("torch_maximum0", "torch.maximum(x, 0)", lambda x: torch.maximum(x, _torch_zero(x)),
          look_alike="jax_maximum0", ties=(Tie(0.0, "other", torch.maximum),)),
        t("torch_max_zeros", "torch.max(x, zeros)", lambda x: torch.max(x, torch.zeros_like(x)),
          ties=(Tie(0.0, "other", torch.max),)),
        t("torch_where_gt", "torch.where(x > 0, x, 0)", lambda x: torch.where(x > 0, x, 0.0),
          look_alike="jax_where_gt", composition=True),
        t("torch_where_ge", "torch.where(x >= 0, x, 0)", lambda x: torch.where(x >= 0, x, 0.0),
          look_alike="jax_where_ge", composition=True),
        t("torch_mul_mask", "x * (x > 0)", lambda x: x * (x > 0), look_alike="jax_mul_mask",
          composition=True),
        t("torch_abs_average", "(x + x.abs()) / 2", lambda x: (x + x.abs()) / 2,
          look_alike="jax_abs_average", composition=True),
        t("torch_leaky_relu0", "F.leaky_relu(x, 0)", lambda x: F.leaky_relu(x, 0.0),
          look_alike="jax_leaky_relu0"),
        t("torch_clamp_0_6", "torch.clamp(x, 0, 6)", lambda x: torch.clamp(x, 0, 6), (0.0, 6.0),
          False, look_alike="jax_clip_0_6"),
        t("torch_relu6", "F.relu6", F.relu6, (0.0, 6.0), False, look_alike="jax_relu6"),
        t("torch_hardtanh", "F.hardtanh", F.hardtanh, (-1.0, 1.0), False,
          look_alike="jax_hard_tanh"),
        t("torch_abs", "torch.abs", torch.abs, (0.0,), False, look_alike="jax_abs"),
        t("torch_leaky_relu001", "F.leaky_relu(x, 0.01)", lambda x: F.leaky_relu(x, 0.01), (0.0,),
          False, look_alike="jax_leaky_relu001"),
        t("torch_softplus100", "F.softplus(x, beta=100)", lambda x: F.softplus(x, beta=100.0),
          (0.0,), False),
    ] + _torch_piecewise() + _torch_several()


def _torch_piecewise() -> list[Rule]:
    """torch.nn.functional's other piecewise activations, with their default parameters; kinks
    are where the definition switches branch (softplus: beta * x = threshold = 20)."""
    import torch
    import torch.nn.functional as F
    t = functools.partial(_builtin, "torch", relu_like=False)
    return [
        t("torch_hardswish", "F.hardswish", F.hardswish, (-3.0, 3.0), look_alike="jax_hard_silu"),
        t("torch_hardsigmoid", "F.hardsigmoid", F.hardsigmoid, (-3.0, 3.0),
          look_alike="jax_hard_sigmoid"),
        t("torch_hardshrink", "F.hardshrink (λ=0.5)", F.hardshrink, (-0.5, 0.5)),
        t("torch_softshrink", "F.softshrink (λ=0.5)", F.softshrink, (-0.5, 0.5)),
        t("torch_elu", "F.elu", F.elu, look_alike="jax_elu"),
        t("torch_celu", "F.celu", F.celu, look_alike="jax_celu"),
        t("torch_selu", "F.selu", F.selu, look_alike="jax_selu"),
        t("torch_prelu025", "F.prelu(x, 0.25)",
          lambda x: F.prelu(x, torch.tensor(0.25, dtype=x.dtype, device=x.device)),
          look_alike="jax_leaky_relu025"),
        t("torch_rrelu_eval", "F.rrelu(x, training=False)", lambda x: F.rrelu(x, training=False)),
        t("torch_threshold_1_20", "F.threshold(x, 1, 20)", lambda x: F.threshold(x, 1.0, 20.0),
          (1.0,)),
        t("torch_softplus", "F.softplus", F.softplus, (20.0,), look_alike="jax_softplus"),
        t("torch_softsign", "F.softsign", F.softsign, look_alike="jax_soft_sign"),
    ]


def _jax_nn(name: str) -> Callable:
    """jax.nn's `name`, or a stand-in that raises NotInRelease where the release lacks it."""
    import jax
    return api_or_missing(jax, f"nn.{name}")


def jax_builtins() -> list[Rule]:
    import jax
    import jax.numpy as jnp
    from jax import lax
    j = functools.partial(_builtin, "jax")
    return [
        j("jax_relu", "jax.nn.relu", _jax_nn("relu"), twin="torch_relu", look_alike="torch_relu",
          timed=True, timed_in_nets=EVERY_NET, trained=True,
          transforms_style="jax reference: jax.nn.relu"),
        j("jax_maximum0", "jnp.maximum(x, 0)", lambda x: jnp.maximum(x, 0),
          look_alike="torch_maximum0", ties=(Tie(0.0, "y", jnp.maximum),)),
        j("jax_lax_max_zeros", "lax.max(x, zeros)", lambda x: lax.max(x, jnp.zeros_like(x)),
          ties=(Tie(0.0, "y", lax.max),)),
        j("jax_clip0", "jnp.clip(x, 0)", lambda x: jnp.clip(x, 0), look_alike="torch_clamp_min0",
          ties=(Tie(0.0, "min", lambda x, lo: jnp.clip(x, lo)),)),
        j("jax_where_gt", "jnp.where(x > 0, x, 0)", lambda x: jnp.where(x > 0, x, 0),
          look_alike="torch_where_gt", composition=True),
        j("jax_where_ge", "jnp.where(x >= 0, x, 0)", lambda x: jnp.where(x >= 0, x, 0),
          look_alike="torch_where_ge", composition=True),
        j("jax_mul_mask", "x * (x > 0).astype(x.dtype)", lambda x: x * (x > 0).astype(x.dtype),
          look_alike="torch_mul_mask", composition=True),
        j("jax_abs_average", "(x + jnp.abs(x)) / 2", lambda x: (x + jnp.abs(x)) / 2,
          look_alike="torch_abs_average", composition=True),
        j("jax_leaky_relu0", "jax.nn.leaky_relu(x, 0)", lambda x: jax.nn.leaky_relu(x, 0.0),
          look_alike="torch_leaky_relu0"),
        j("jax_relu6", "jax.nn.relu6", _jax_nn("relu6"), (0.0, 6.0), False,
          look_alike="torch_relu6"),
        j("jax_clip_0_6", "jnp.clip(x, 0, 6)", lambda x: jnp.clip(x, 0, 6), (0.0, 6.0), False,
          look_alike="torch_clamp_0_6",
          ties=(Tie(0.0, "min", lambda x, lo: jnp.clip(x, lo, 6)),
                Tie(6.0, "max", lambda x, hi: jnp.clip(x, 0, hi)))),
        j("jax_lax_clamp_0_6", "lax.clamp(0, x, 6)",
          lambda x: lax.clamp(x.dtype.type(0), x, x.dtype.type(6)), (0.0, 6.0), False,
          ties=(Tie(0.0, "min", lambda x, lo: lax.clamp(lo, x, x.dtype.type(6))),
                Tie(6.0, "max", lambda x, hi: lax.clamp(x.dtype.type(0), x, hi)))),
        j("jax_hard_tanh", "jax.nn.hard_tanh", _jax_nn("hard_tanh"), (-1.0, 1.0), False,
          look_alike="torch_hardtanh"),
        j("jax_abs", "jnp.abs", jnp.abs, (0.0,), False, look_alike="torch_abs"),
        j("jax_leaky_relu001", "jax.nn.leaky_relu(x, 0.01)", lambda x: jax.nn.leaky_relu(x, 0.01),
          (0.0,), False, look_alike="torch_leaky_relu001"),
        j("jax_softplus100", "jax.nn.softplus(100x)/100",
          lambda x: jax.nn.softplus(100 * x) / 100, (0.0,), False, composition=True),
    ] + _jax_piecewise() + _jax_several()


def _jax_piecewise() -> list[Rule]:
    """jax.nn's other piecewise (or piecewise-looking) activations, default parameters.
    softplus and squareplus are smooth: softplus is probed at torch's switch to the linear
    branch (its look-alike's kink), squareplus at 0."""
    import jax
    j = functools.partial(_builtin, "jax", relu_like=False)
    return [
        j("jax_hard_silu", "jax.nn.hard_silu (= hard_swish)", _jax_nn("hard_silu"), (-3.0, 3.0),
          look_alike="torch_hardswish"),
        j("jax_hard_sigmoid", "jax.nn.hard_sigmoid", _jax_nn("hard_sigmoid"), (-3.0, 3.0),
          look_alike="torch_hardsigmoid"),
        j("jax_elu", "jax.nn.elu", _jax_nn("elu"), look_alike="torch_elu"),
        j("jax_celu", "jax.nn.celu", _jax_nn("celu"), look_alike="torch_celu"),
        j("jax_selu", "jax.nn.selu", _jax_nn("selu"), look_alike="torch_selu"),
        j("jax_leaky_relu025", "jax.nn.leaky_relu(x, 0.25)", lambda x: jax.nn.leaky_relu(x, 0.25),
          look_alike="torch_prelu025"),
        j("jax_sparse_plus", "jax.nn.sparse_plus", _jax_nn("sparse_plus"), (-1.0, 1.0)),
        j("jax_sparse_sigmoid", "jax.nn.sparse_sigmoid", _jax_nn("sparse_sigmoid"), (-1.0, 1.0)),
        j("jax_squareplus", "jax.nn.squareplus", _jax_nn("squareplus")),
        j("jax_softplus", "jax.nn.softplus", _jax_nn("softplus"), (20.0,),
          look_alike="torch_softplus"),
        j("jax_soft_sign", "jax.nn.soft_sign", _jax_nn("soft_sign"), look_alike="torch_softsign"),
    ]


# the arrays a built-in of several inputs takes, (name, shape), and its ties
VECTOR, TRIPLE, SQUARE = (("x", (4,)),), (("x", (3,)),), (("x", (2, 2)),)
PAIR, BOUNDED = (("x", ()), ("y", ())), (("x", ()), ("min", ()), ("max", ()))


def _two_and_all(n: int, others: float) -> tuple[InputTie, ...]:
    """Two of n inputs tied, the others `others` × 1, 2, ... away (below a maximum's tie, above
    a minimum's), and all n."""
    return (InputTie((0, 1), tuple(others * j for j in range(1, n - 1))),
            InputTie(tuple(range(n))))


AT_MAXIMUM, AT_MINIMUM, MEDIAN_TIES = _two_and_all(4, -1.0), _two_and_all(4, 1.0), \
    _two_and_all(3, -1.0)
PAIR_TIE, ZERO_VECTOR = (InputTie((0, 1)),), (InputTie((0, 1, 2)),)
BOUND_TIES = (InputTie((0, 1), (1.0,)), InputTie((0, 2), (-1.0,)), InputTie((0, 1, 2)))
# PyTorch's page on max and min at a tie, torch.amax's: "Both amax/amin evenly distribute
# gradients between equal values when there are multiple input elements with the same minimum or
# maximum value. For max/min: If reduce over all dimensions (no dim specified), gradients evenly
# distribute between equally max/min values. If reduce over one specified axis, only propagate
# to the indexed element." (torch.max's page says the same of max and min)
TORCH_PAGE = "https://docs.pytorch.org/docs/stable/generated/torch.amax.html"


def _several(framework, key, name, fn, operands, ties, look_alike=None, documented=None) -> Rule:
    return Rule(key, framework, name, "builtin", fn, None, (), False, look_alike=look_alike,
                operands=operands, input_ties=ties, tie_documented=documented)


def _torch_several() -> list[Rule]:
    import torch
    import torch.nn.functional as F
    t = functools.partial(_several, "torch")
    split, one = TieDocumentation(EVEN_SPLIT, TORCH_PAGE), TieDocumentation(ONE_INPUT, TORCH_PAGE)
    return [
        t("torch_amax", "torch.amax(x)", lambda x: torch.amax(x), VECTOR, AT_MAXIMUM, "jax_amax",
          split),
        t("torch_amin", "torch.amin(x)", lambda x: torch.amin(x), VECTOR, AT_MINIMUM, "jax_amin",
          split),
        t("torch_max_all", "torch.max(x)", lambda x: torch.max(x), VECTOR, AT_MAXIMUM,
          "jax_max_all", split),
        t("torch_min_all", "torch.min(x)", lambda x: torch.min(x), VECTOR, AT_MINIMUM,
          "jax_min_all", split),
        t("torch_max_dim", "torch.max(x, 0).values", lambda x: torch.max(x, 0).values, VECTOR,
          AT_MAXIMUM, "jax_max_axis", one),
        t("torch_min_dim", "torch.min(x, 0).values", lambda x: torch.min(x, 0).values, VECTOR,
          AT_MINIMUM, "jax_min_axis", one),
        t("torch_max_pool1d", "F.max_pool1d(x, 4)", lambda x: F.max_pool1d(x[None, None], 4)[0, 0],
          VECTOR, AT_MAXIMUM, "jax_max_pool1d"),
        t("torch_max_pool2d", "F.max_pool2d(x, 2)", lambda x: F.max_pool2d(x[None, None], 2)[0, 0],
          SQUARE, AT_MAXIMUM, "jax_max_pool2d"),
        t("torch_sort", "torch.sort(x).values", lambda x: torch.sort(x).values, VECTOR,
          AT_MAXIMUM, "jax_sort"),
        t("torch_topk2", "torch.topk(x, 2).values", lambda x: torch.topk(x, 2).values, VECTOR,
          AT_MAXIMUM, "jax_top_k2"),
        t("torch_median", "torch.median(x)", lambda x: torch.median(x), TRIPLE, MEDIAN_TIES,
          "jax_median"),
        t("torch_vector_norm", "torch.linalg.vector_norm(x)", lambda x: torch.linalg.vector_norm(x),
          TRIPLE, ZERO_VECTOR, "jax_norm"),
        t("torch_maximum_xy", "torch.maximum(x, y)", torch.maximum, PAIR, PAIR_TIE,
          "jax_maximum_xy"),
        t("torch_minimum_xy", "torch.minimum(x, y)", torch.minimum, PAIR, PAIR_TIE,
          "jax_minimum_xy"),
        t("torch_clamp_tensors", "torch.clamp(x, min, max)",
          lambda x, lo, hi: torch.clamp(x, lo, hi), BOUNDED, BOUND_TIES, "jax_clip_arrays"),
    ]


def _jax_several() -> list[Rule]:
    import jax.numpy as jnp
    import numpy as np
    from jax import lax
    j = functools.partial(_several, "jax")

    def max_pool(window):  # a numpy -inf: concrete under jit, so JAX takes it for max pooling
        return lambda x: lax.reduce_window(x, np.array(-np.inf, x.dtype), lax.max, window,
                                           window, "VALID")
    return [
        j("jax_amax", "jnp.amax(x)", lambda x: jnp.amax(x), VECTOR, AT_MAXIMUM, "torch_amax"),
        j("jax_amin", "jnp.amin(x)", lambda x: jnp.amin(x), VECTOR, AT_MINIMUM, "torch_amin"),
        j("jax_max_all", "jnp.max(x)", lambda x: jnp.max(x), VECTOR, AT_MAXIMUM, "torch_max_all"),
        j("jax_min_all", "jnp.min(x)", lambda x: jnp.min(x), VECTOR, AT_MINIMUM, "torch_min_all"),
        j("jax_max_axis", "jnp.max(x, axis=0)", lambda x: jnp.max(x, axis=0), VECTOR, AT_MAXIMUM,
          "torch_max_dim"),
        j("jax_min_axis", "jnp.min(x, axis=0)", lambda x: jnp.min(x, axis=0), VECTOR, AT_MINIMUM,
          "torch_min_dim"),
        j("jax_max_pool1d", "lax.reduce_window(x, -inf, lax.max, (4,), (4,))", max_pool((4,)),
          VECTOR, AT_MAXIMUM, "torch_max_pool1d"),
        j("jax_max_pool2d", "lax.reduce_window(x, -inf, lax.max, (2, 2), (2, 2))",
          max_pool((2, 2)), SQUARE, AT_MAXIMUM, "torch_max_pool2d"),
        j("jax_sort", "jnp.sort(x)", jnp.sort, VECTOR, AT_MAXIMUM, "torch_sort"),
        j("jax_top_k2", "lax.top_k(x, 2) values", lambda x: lax.top_k(x, 2)[0], VECTOR, AT_MAXIMUM,
          "torch_topk2"),
        j("jax_median", "jnp.median(x)", jnp.median, TRIPLE, MEDIAN_TIES, "torch_median"),
        j("jax_norm", "jnp.linalg.norm(x)", jnp.linalg.norm, TRIPLE, ZERO_VECTOR,
          "torch_vector_norm"),
        j("jax_maximum_xy", "jnp.maximum(x, y)", jnp.maximum, PAIR, PAIR_TIE, "torch_maximum_xy"),
        j("jax_minimum_xy", "jnp.minimum(x, y)", jnp.minimum, PAIR, PAIR_TIE, "torch_minimum_xy"),
        j("jax_clip_arrays", "jnp.clip(x, min, max)", lambda x, lo, hi: jnp.clip(x, lo, hi),
          BOUNDED, BOUND_TIES, "torch_clamp_tensors"),
        j("jax_lax_max_xy", "lax.max(x, y)", lax.max, PAIR, PAIR_TIE),
        j("jax_lax_min_xy", "lax.min(x, y)", lax.min, PAIR, PAIR_TIE),
        j("jax_lax_clamp_bounds", "lax.clamp(min, x, max)", lambda x, lo, hi: lax.clamp(lo, x, hi),
          BOUNDED, BOUND_TIES),
    ]

"""The ReLU rule registry: built-ins and custom gradient rules of both frameworks.

    >>> from study.measure.rules import RULES, by_key
    >>> by_key("torch_relu").fn(torch.tensor([-1.0, 2.0]))
    tensor([0., 2.])

Every rule has a stable `key` (what records, tables and experiments refer to) and a display
`name` (what a reader sees; records carry it, so renaming a rule never rewrites old results).
A custom rule declares `convention`: the factor its backward applies to the incoming
gradient at exactly x == 0. A built-in's convention is measured, never declared (None).

A rule also declares its relations where it is defined: its twin and its look-alike in the
other framework (keys, since pairs name each other; `related` resolves them), and which
experiments' designs take it (timed, trained, a row of the transforms matrix). A built-in also
declares how the conformance reads it: `ties`, where x ties another operand the call takes as an
array, and `composition`, several calls measured but never judged. The built-in it is measured
against is its framework's relu (`reference_of`). Experiments take a collection of rules
(`cases(scope, rules)`, this registry by default) and pick what these fields say, so that adding
a rule is one entry here, or one `Rule` value passed in.
"""
import functools
import re
import sys
from typing import Callable, Iterable

from study.measure.rule import REFERENCE_RELU, Rule, SourceError, Tie, api_or_missing, load

FRAMEWORKS = ("torch", "jax")


def _torch_zero(x):
    import torch
    return torch.zeros((), dtype=x.dtype, device=x.device)


def _builtin(framework, key, name, fn, kinks=(0.0,), relu_like=True, **relations) -> Rule:
    return Rule(key, framework, name, "builtin", fn, None, tuple(kinks), relu_like, **relations)


EVERY_NET = ("seed", "mid", "large")  # timing.NETS


def _torch_builtins() -> list[Rule]:
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
    ] + _torch_piecewise()


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


def _jax_builtins() -> list[Rule]:
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
    ] + _jax_piecewise()


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


CONVENTIONS = (0.0, 0.5, 1.0)
CUSTOM_OP_CONVENTIONS = (0.0, 1.0)
TORCH_STYLES = (  # (style, its key's suffix, what its name adds, its transforms row)
    ("vmap", "vmap", "generate_vmap_rule = True", "torch modern + generate_vmap_rule"),
    ("jvp", "jvp", "a jvp staticmethod", "torch modern + jvp staticmethod"),
    ("vmap+jvp", "vmap_jvp", "generate_vmap_rule and a jvp staticmethod",
     "torch modern + generate_vmap_rule + jvp"),
    ("once", "once", "@once_differentiable backward", "torch modern + @once_differentiable"))


def _custom(key, framework, name, fn, c, **relations) -> Rule:
    return Rule(key, framework, name, "custom", fn, c, **relations)


def _c(c: float) -> str:
    return f"{c:g}"


def _torch_customs() -> list[Rule]:
    from study.measure.custom_rules_torch import (MyReLU, ReLUSavesBitMask, ReLUSavesBoolMask,
                                                  torch_custom_op_relu, torch_relu_style,
                                                  torch_relu_with_convention)
    t = functools.partial(_custom, framework="torch")
    out = [t("torch_myrelu_seed", name="MyReLU (seed 000)", fn=MyReLU.apply, c=1.0,
             twin="jax_seed_relu", look_alike="jax_seed_relu", timed=True,
             timed_in_nets=("seed", "mid"),
             transforms_style="torch legacy: forward(ctx, ...) (seed 000)")]
    out += [t(f"torch_custom_c{_c(c)}", name=f"ReLUWithConvention(c={_c(c)})",
              fn=torch_relu_with_convention(c).apply, c=c, twin=f"jax_custom_c{_c(c)}",
              trained=True, **(dict(timed=True, timed_in_nets=EVERY_NET, paired_as="custom c=0",
                                    transforms_style="torch modern: setup_context")
                               if c == 0 else {}))
            for c in CONVENTIONS]
    out += [t(f"torch_custom_c0_{suffix}", name=f"ReLUWithConvention(c=0) + {feature}",
              fn=torch_relu_style(style).apply, c=0.0, twin="jax_custom_c0",
              transforms_style=row)
            for style, suffix, feature, row in TORCH_STYLES]
    out += [t("torch_custom_bool_mask", name="ReLUSavesBoolMask (c=0)",
              fn=ReLUSavesBoolMask.apply, c=0.0, twin="jax_custom_bool_mask", timed=True,
              paired_as="bool mask"),
            t("torch_custom_bit_mask", name="ReLUSavesBitMask (c=0)", fn=ReLUSavesBitMask.apply,
              c=0.0, twin="jax_custom_bit_mask", timed=True, paired_as="bit mask")]
    out += [t(f"torch_custom_op_c{_c(c)}", name=f"custom_op relu (c={_c(c)})",
              fn=torch_custom_op_relu(c), c=c, twin=f"jax_custom_nondiff_c{_c(c)}",
              **(dict(look_alike="jax_custom_nondiff_c0", timed=True,
                      timed_in_nets=("seed", "mid"), paired_as="custom_op / nondiff_argnums",
                      transforms_style="torch.library.custom_op + register_autograd")
                 if c == 0 else {}))
            for c in CUSTOM_OP_CONVENTIONS]
    out += [t(f"torch_custom_op_vmap_c{_c(c)}", name=f"custom_op relu + register_vmap (c={_c(c)})",
              fn=torch_custom_op_relu(c, True), c=c, twin=f"jax_custom_nondiff_c{_c(c)}",
              **(dict(transforms_style="torch.library.custom_op + register_autograd"
                                       " + register_vmap") if c == 0 else {}))
            for c in CUSTOM_OP_CONVENTIONS]
    return out


def _jax_customs() -> list[Rule]:
    from study.measure.custom_rules_jax import (jax_relu_custom_jvp,
                                                jax_relu_nondiff_convention,
                                                jax_relu_saves_bit_mask, jax_relu_saves_bool_mask,
                                                jax_relu_torch_nan, jax_relu_with_convention,
                                                jax_seed_relu)
    j = functools.partial(_custom, framework="jax")
    out = [j("jax_seed_relu", name="seed_relu (custom_vjp)", fn=jax_seed_relu, c=1.0,
             twin="torch_myrelu_seed", look_alike="torch_myrelu_seed")]
    out += [j(f"jax_custom_c{_c(c)}", name=f"relu_with_convention(c={_c(c)}) (custom_vjp)",
              fn=jax_relu_with_convention(c), c=c, twin=f"torch_custom_c{_c(c)}", trained=True,
              **(dict(timed=True, timed_in_nets=EVERY_NET, transforms_style="jax custom_vjp")
                 if c == 0 else {}))
            for c in CONVENTIONS]
    out += [j("jax_relu_nan_passes", name="relu_nan_passes (custom_vjp)", fn=jax_relu_torch_nan,
              c=0.0),
            j("jax_custom_jvp_c0", name="relu (custom_jvp, c=0)", fn=jax_relu_custom_jvp, c=0.0,
              transforms_style="jax custom_jvp"),
            j("jax_custom_bool_mask", name="relu_saves_bool_mask (custom_vjp, c=0)",
              fn=jax_relu_saves_bool_mask, c=0.0, twin="torch_custom_bool_mask", timed=True),
            j("jax_custom_bit_mask", name="relu_saves_bit_mask (custom_vjp, c=0)",
              fn=jax_relu_saves_bit_mask, c=0.0, twin="torch_custom_bit_mask", timed=True)]
    out += [j(f"jax_custom_nondiff_c{_c(c)}",
              name=f"relu(x, c={_c(c)}) (custom_vjp, nondiff_argnums)",
              fn=functools.partial(jax_relu_nondiff_convention, c=c), c=c,
              twin=f"torch_custom_op_c{_c(c)}",
              **(dict(look_alike="torch_custom_op_c0", timed=True, timed_in_nets=("seed", "mid"),
                      transforms_style="jax custom_vjp, c via nondiff_argnums")
                 if c == 0 else {}))
            for c in CUSTOM_OP_CONVENTIONS]
    return out


@functools.cache
def _builtins(framework: str) -> tuple[Rule, ...]:
    if framework not in FRAMEWORKS:
        raise ValueError(f"no framework {framework!r}; the registry's: {', '.join(FRAMEWORKS)}")
    return tuple(_torch_builtins() if framework == "torch" else _jax_builtins())


@functools.cache
def _framework_rules(framework: str) -> dict[str, Rule]:
    """One framework's rules by key, built-ins first, importing that framework alone. Every key
    starts with its framework's name, so that `by_key` builds one framework only."""
    rules = (*_builtins(framework), *(_torch_customs() if framework == "torch"
                                      else _jax_customs()))
    assert all(r.key.startswith(f"{framework}_") and r.framework == framework for r in rules)
    return {r.key: r for r in rules}


@functools.cache
def _rules() -> tuple[Rule, ...]:
    rules = tuple(r for fw in FRAMEWORKS for r in _framework_rules(fw).values())
    assert len({r.key for r in rules}) == len(rules), "rule keys must be unique"
    assert len({r.name for r in rules}) == len(rules), "rule names must be unique"
    return rules


def __getattr__(name: str):
    # RULES is built on first use: the whole registry imports both frameworks, where one
    # framework's rules (builtins_of, by_key) import that framework alone
    if name == "RULES":
        return _rules()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def registry_unless(rules: Iterable[Rule] | None) -> Iterable[Rule]:
    """`rules`, or the whole registry where None: an experiment's cases default to it, built
    at the call (both frameworks), not when the experiment is imported to read results."""
    return _rules() if rules is None else rules


def by_key(key: str) -> Rule:
    framework = key.split("_", 1)[0]
    found = _framework_rules(framework).get(key) if framework in FRAMEWORKS else None
    if found is None:
        raise KeyError(f"no rule with key {key!r}")
    return found


def look_alike_of(key: str) -> str | None:
    """by_key(key).look_alike, building the rules of a framework already imported where there
    is one: look-alikes name each other (a test holds the registry to it), so the other
    framework's rules give a key's look-alike as the rule that names it. Reading old records
    (zero_point's upgrade) then imports no framework that a torch or JAX user's check does not."""
    own = key.split("_", 1)[0]
    other = next((fw for fw in FRAMEWORKS if fw != own), None)
    if own in FRAMEWORKS and own not in sys.modules and other in sys.modules:
        return next((r.key for r in _framework_rules(other).values() if r.look_alike == key),
                    None)
    return by_key(key).look_alike


def builtins_of(framework: str) -> list[Rule]:
    """The framework's built-ins, as the registry lists them (the same values as in RULES),
    importing that framework alone: what `study conformance` judges."""
    return list(_builtins(framework))


def related(rule: Rule, relation: str) -> Rule | None:
    """The registry's rule that `rule.<relation>` ("twin", "look_alike") names, or None."""
    key = getattr(rule, relation)
    return None if key is None else by_key(key)


def relu_rules(framework: str | None = None, rules: Iterable[Rule] | None = None) -> list[Rule]:
    """Rules that equal max(x, 0) off x == 0 (of `rules`, the registry's by default): the ones a
    two-layer ReLU net can swap in."""
    return [r for r in (_rules() if rules is None else rules) if r.relu_like and r.kinks == (0.0,)
            and (framework is None or r.framework == framework)]


def reference_of(rule: Rule) -> Rule:
    """The built-in a rule is measured against: its framework's relu (study.measure.rule)."""
    return by_key(REFERENCE_RELU[rule.framework].key)


def written(value):
    """A case's value as it is written down (checkpoints, progress lines, a failed case's
    record, a request to another process): each Rule in it as its key."""
    if isinstance(value, Rule):
        return value.key
    if isinstance(value, dict):
        return {k: written(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(written(v) for v in value)
    return value


def registered(rule: Rule) -> bool:
    """Whether `rule` is the registry's own: what another process can read back by its key."""
    framework = rule.key.split("_", 1)[0]
    return framework in FRAMEWORKS and _framework_rules(framework).get(rule.key) is rule


def sent(value):
    """A case's value as it goes to another process: each Rule as its key where it is the
    registry's, else as {"key", "source"}, where the other process loads it from (its
    `source`, study.measure.rule.load); a Rule with neither is refused in one line."""
    if isinstance(value, Rule):
        if registered(value):
            return value.key
        if value.source is None:
            raise SourceError(f"the rule {value.key!r} is not the registry's and names no "
                              f"source (Rule(..., source='module:ATTR')): another process "
                              f"cannot load it")
        return {"key": value.key, "source": value.source}
    if isinstance(value, dict):
        return {k: sent(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(sent(v) for v in value)
    return value


def _received_rule(ref) -> Rule:
    if isinstance(ref, str):
        return by_key(ref)
    rule = load(ref["source"])
    if not isinstance(rule, Rule) or rule.key != ref["key"]:
        raise SourceError(f"{ref['source']} is not the rule {ref['key']!r}")
    return rule


def received(case: dict) -> dict:
    """A case as `sent` wrote it, with its "rule" and "rules" resolved: by key in the registry,
    or loaded from where they are defined."""
    out = dict(case)
    if "rule" in case and isinstance(case["rule"], (str, dict)):
        out["rule"] = _received_rule(case["rule"])
    if "rules" in case:
        out["rules"] = tuple(_received_rule(r) for r in case["rules"])
    return out


# ':math:`\\nabla \\mathrm{relu}(0) = 0`', as jax.nn.relu's docstring declares its convention
_DOCUMENTED = re.compile(r"\\nabla\s*\\mathrm\{\w+\}\((-?\d+(?:\.\d+)?)\)\s*=\s*(-?\d+(?:\.\d+)?)")


def documented_derivatives(rule: Rule) -> dict[float, float]:
    """{kink: derivative} that the op's own docstring, in the installed release, declares
    (jax.nn.relu's: 0 at 0); {} where it declares none. Read at run time, never typed here."""
    return {float(k): float(v)
            for k, v in _DOCUMENTED.findall(getattr(rule.fn, "__doc__", "") or "")}


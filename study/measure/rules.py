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
experiments' designs take it (timed, trained, a row of the transforms matrix). A built-in
(their entries: study.measure.builtin_rules) also declares how the conformance reads it: `ties`,
where x ties another operand the call takes as an array, and `composition`, several calls
measured but never judged. The built-in it is measured against is its framework's relu
(`reference_of`). Experiments take a collection of rules (`cases(scope, rules)`, this registry
by default) and pick what these fields say, so that adding a rule is one entry here (or there),
or one `Rule` value passed in.
"""
import functools
import re
from typing import Iterable

from study.measure.builtin_rules import EVERY_NET, jax_builtins, torch_builtins
from study.measure.rule import REFERENCE_RELU, Rule, SourceError, load

FRAMEWORKS = ("torch", "jax")
CONVENTIONS = (0.0, 0.5, 1.0)
CUSTOM_OP_CONVENTIONS = (0.0, 1.0)
TORCH_STYLES = (  # (style, its key's suffix, what its name adds, its transforms row)
    ("vmap", "vmap", "generate_vmap_rule = True", "torch modern + generate_vmap_rule"),
    ("jvp", "jvp", "a jvp staticmethod", "torch modern + jvp staticmethod"),
    ("vmap+jvp", "vmap_jvp", "generate_vmap_rule and a jvp staticmethod",
     "torch modern + generate_vmap_rule + jvp"),
    ("once", "once", "@once_differentiable backward", "torch modern + @once_differentiable"))
CUSTOM_OP_ROW = "torch.library.custom_op + register_autograd"  # its transforms row


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
                      transforms_style=CUSTOM_OP_ROW)
                 if c == 0 else {}))
            for c in CUSTOM_OP_CONVENTIONS]
    out += [t(f"torch_custom_op_vmap_c{_c(c)}", name=f"custom_op relu + register_vmap (c={_c(c)})",
              fn=torch_custom_op_relu(c, True), c=c, twin=f"jax_custom_nondiff_c{_c(c)}",
              **(dict(transforms_style=f"{CUSTOM_OP_ROW} + register_vmap") if c == 0 else {}))
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
    return tuple(torch_builtins() if framework == "torch" else jax_builtins())


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


"""The registry as values: a rule's relations are fields on it, experiments take rules, and a
case names its rules by key wherever it is written down."""
import json
from dataclasses import replace

import pytest
import torch

import experiments.timing.measure as timing
import experiments.training.measure as training
import experiments.transforms.measure as transforms
import experiments.two_layer.measure as two_layer
import experiments.zero_point.measure as zero_point
from experiments.timing.harness import timed_rules, twin_pairs
from study.measure.probe import reverse_derivative
from study.runs.results import Run
from study.measure.rule import SourceError
from study.measure.rules import RULES, Rule, by_key, received, related, sent, written

PROV = {"utc": "t", "host": "h", "device": "cpu", "torch": "t", "jax": "j", "scope": "quick"}

# One Rule value, declared once: in the atlas beside its look-alike, a row of the transforms
# matrix, timed alone and in the seed net
CLAMP = Rule("torch_test_clamp", "torch", "clamp(x, min=0) (test rule)", "builtin",
             lambda x: torch.clamp(x, min=0), look_alike="jax_relu", timed=True,
             timed_in_nets=("seed",), transforms_style="test rule: a plain clamp")
WITH_CLAMP = RULES + (CLAMP,)


def rendered(experiment: str, records: list[dict]) -> dict:
    import experiments
    exp = experiments.load(experiment)
    run = Run.of(experiment, PROV, records, "x.json", tag="C1")
    return {t.id: t for t in exp.render(exp.summarise([run])).tables}


def test_a_rule_given_to_the_zero_point_experiment_is_in_its_atlas_beside_its_look_alike(cpu):
    chosen = [c for c in zero_point.cases("quick", WITH_CLAMP)
              if c["part"] == "atlas" and c["rule"].key in (CLAMP.key, "jax_relu")]
    assert len(chosen) == 2
    records = [rec for case in chosen for rec in zero_point.run_case(cpu, **case)]
    mine, = [r for r in records if r["rule"] == CLAMP.key and r["part"] == "atlas"]
    assert (mine["name"], mine["look_alike"]) == (CLAMP.name, "jax_relu")
    atlas = rendered("zero_point", records)["atlas"]
    atlas = atlas.listing if atlas.listing is not None else atlas.frame
    cell = atlas[(atlas["op"] == CLAMP.name) & (atlas["mode"] == "reverse")
                 & (atlas["input"] == "+0.0")]
    # the oracle: this torch's own clamp at 0, probed as a 0-d tensor
    assert list(cell["value"]) == [reverse_derivative(by_key("torch_clamp_min0"), 0.0,
                                                      "float32", cpu)]


def test_a_rule_given_to_the_transforms_experiment_is_a_row_of_its_matrix(cpu):
    case, = [c for c in transforms.cases("quick", WITH_CLAMP) if c["rule"] is CLAMP]
    assert case["style"] == CLAMP.transforms_style
    records = transforms.run_case(cpu, **case)
    assert records[0]["rule"] == CLAMP.key and records[0]["name"] == CLAMP.name
    matrix = rendered("transforms", records)["matrix"].frame
    row, = matrix[matrix["style"] == CLAMP.transforms_style].to_dict("records")
    assert row["eager grad"] == "✓"  # torch.clamp's gradient is the ReLU's with c = 0


def test_a_rule_given_to_the_timing_experiment_is_timed_alone_in_its_net_and_for_memory():
    cases = timing.cases("quick", WITH_CLAMP)
    alone = [c for c in cases if c["part"] == "rules" and c["framework"] == "torch"]
    assert alone and all(CLAMP in c["rules"] for c in alone)
    assert {c["net"] for c in cases if c["part"] == "net" and c["rule"] is CLAMP} == {"seed"}
    assert [c for c in cases if c["part"] == "memory" and c["rule"] is CLAMP]
    assert not any(CLAMP in c["rules"] for c in cases if c.get("framework") == "jax"
                   and "rules" in c)
    # and nowhere when it is not given
    assert not any(CLAMP.key in json.dumps(written(c)) for c in timing.cases("quick"))


def test_every_look_alike_and_twin_names_a_rule_of_the_other_framework():
    for rule in RULES:
        for relation in ("look_alike", "twin"):
            other = related(rule, relation)
            if other is not None:
                assert other.framework != rule.framework, (rule.key, relation)
        look_alike = related(rule, "look_alike")
        if look_alike is not None:  # pairs are symmetric, so both are probed at the same kinks
            assert look_alike.look_alike == rule.key
            assert zero_point.probed_kinks(rule) == zero_point.probed_kinks(look_alike)
        twin = related(rule, "twin")
        if twin is not None:  # the same rule: the same convention (built-ins: none declared)
            assert twin.convention == rule.convention and twin.kind == rule.kind, rule.key
            assert related(twin, "twin").twin == rule.twin  # a style variant names the base


def test_a_relation_to_a_key_the_registry_lacks_says_so():
    with pytest.raises(KeyError, match="no rule with key 'jax_nothing'"):
        related(replace(CLAMP, look_alike="jax_nothing"), "look_alike")


def test_a_written_case_names_rules_by_key_and_one_sent_to_a_process_comes_back_whole():
    from tests.outside_rules import OUTSIDE
    relu, c0 = by_key("torch_relu"), by_key("torch_custom_c0")
    case = {"part": "rules", "rule": relu, "rules": (relu, c0, OUTSIDE), "n": 8}
    assert written(case)["rules"] == ("torch_relu", "torch_custom_c0", OUTSIDE.key)
    text = json.dumps(sent(case))  # the registry's by key, another by where it is defined
    assert json.loads(text)["rules"] == ["torch_relu", "torch_custom_c0",
                                         {"key": OUTSIDE.key, "source": OUTSIDE.source}]
    back = received(json.loads(text))
    assert back["rule"] is relu and back["rules"][:2] == (relu, c0) and back["n"] == 8
    assert back["rules"][2].key == OUTSIDE.key and back["rules"][2].name == OUTSIDE.name


def test_timing_pairs_a_torch_rule_with_its_twin_only_where_both_are_timed():
    relu, c0 = by_key("torch_relu"), by_key("torch_custom_c0")
    jax_relu, jax_c0 = by_key("jax_relu"), by_key("jax_custom_c0")
    assert twin_pairs([relu, c0, jax_relu, jax_c0]) == [
        ["relu", "torch_relu", "jax_relu"], ["custom c=0", "torch_custom_c0", "jax_custom_c0"]]
    assert twin_pairs([relu, c0, jax_relu, replace(jax_c0, timed=False)]) == [
        ["relu", "torch_relu", "jax_relu"]]


def test_timing_refuses_rules_without_their_frameworks_relu():
    with pytest.raises(ValueError, match="timing needs torch_relu"):
        timed_rules([by_key("torch_custom_c0")], "torch")
    assert timed_rules([by_key("jax_custom_c0")], "torch") == ()


def test_training_takes_each_trained_custom_rule_by_convention_with_its_counterparts():
    keys = {k: r.key for k, r in training.trained(RULES).items()}
    assert keys[("torch", 0.5)] == "torch_custom_c0.5" and keys[("jax", "relu")] == "jax_relu"
    lonely = replace(by_key("torch_custom_c0.5"), key="torch_other", name="other", twin=None)
    without_jax_half = [r for r in RULES if r.key != "jax_custom_c0.5"]
    with pytest.raises(ValueError, match="lack their counterparts"):
        training.trained(without_jax_half)
    with pytest.raises(ValueError, match="share a convention"):
        training.trained(RULES + (lonely,))


def test_two_layer_swaps_in_only_the_relu_like_rules_it_is_given():
    given = (by_key("torch_relu"), by_key("torch_relu6"), CLAMP)
    assert {c["rule"].key for c in two_layer.cases("quick", given)} == {"torch_relu", CLAMP.key}


def test_timing_checks_take_a_rule_outside_the_registry_only_where_it_names_its_source():
    # the standard scope's checks time a case's rules again in fresh processes, which load a
    # rule outside the registry from its source (tests/test_timing.py times one there); one
    # that names none is refused in one line
    from tests.outside_rules import OUTSIDE
    assert timing.cases("quick", WITH_CLAMP)
    with pytest.raises(SourceError, match="'torch_test_clamp' is not the registry's and names no"):
        timing.cases("standard", WITH_CLAMP)
    assert timing.cases("standard", RULES + (OUTSIDE,))

"""Older result files brought to today's record shapes when loaded, by each experiment's own
upgrade (study.runs.upgrades), on hand-made records in the shapes older code wrote."""
import experiments
from study.compare import reproduction
from study.runs.results import Run, ready
from study.runs.upgrades import upgrade as by_experiment


def upgrade(name: str, records: list[dict]) -> list[dict]:
    return by_experiment(experiments.load(name), records)

PROV = {"utc": "2026-01-01T00:00:00+00:00", "host": "vm", "device": "cuda", "torch": "1",
        "jax": "2", "scope": "standard", "git_commit": "old"}


def test_fields_older_code_left_implicit_are_filled_and_listed_and_nothing_measured_changes():
    atlas = {"part": "atlas", "rule": "torch_relu6", "reverse": [0.0, 1.0]}
    got, = upgrade("zero_point", [atlas])
    # before atlas records named it, torch_relu6's look-alike was jax_relu6 (the old list), and
    # before compiled records an atlas record measured the four modes
    assert got == {**atlas, "look_alike": "jax_relu6",
                   "modes": ["value", "reverse", "forward", "second"],
                   "upgraded_fields": ["look_alike", "modes"]}
    got, = upgrade("two_layer", [{"framework": "jax", "rule": "jax_custom_c0", "loss": 1.5}])
    assert got["reference_rule"] == "jax_relu" and got["loss"] == 1.5
    builtin, custom = upgrade("transforms", [{"rule": "torch_relu"}, {"rule": "torch_custom_c0"}])
    assert (builtin["kind"], custom["kind"]) == ("builtin", "custom")
    # a record already in today's shape, a failed case and a withdrawn one stay as stored
    today = {"part": "atlas", "rule": "r", "look_alike": None, "modes": ["value"]}
    failed = {"rule": "torch_relu", "case_error": "RuntimeError: x"}
    withdrawn = {"rule": "torch_relu", "withdrawn": "why"}
    assert upgrade("zero_point", [today]) == [today]
    assert upgrade("zero_point", [{**today, "inputs": ["a"], "value": [0.5]}]) == \
        [{**today, "inputs": ["a"], "value": [0.5]}]
    assert upgrade("transforms", [failed, withdrawn]) == [failed, withdrawn]
    assert upgrade("clone_hazard", [failed]) == [failed]


def test_a_timing_run_before_the_plan_record_gets_the_plan_it_used():
    copy = {"part": "machine", "what": "copy torch", "n": 8, "bytes": 64}
    recs = upgrade("timing", [copy])
    assert recs[0]["into"] == "preallocated" and recs[0]["upgraded_fields"] == ["into"]
    plan, = [r for r in recs if r.get("part") == "plan"]
    assert plan["reference_rules"] == {"torch": "torch_relu", "jax": "jax_relu"}
    assert upgrade("timing", [{"part": "plan", "reference_rules": {}}]) == \
        [{"part": "plan", "reference_rules": {}}]


def test_errata_match_records_as_stored_and_filled_fields_are_never_cells():
    stored = {"framework": "torch", "rule": "torch_custom_c0", "dataset": "d", "dtype": "float32",
              "loss": 2.0}
    errata = [{"experiment": "two_layer", "runs": {"git_commit": "old"},
               "records": {"rule": "torch_custom_c0", "reference_rule": None}, "why": "w"}]
    # the erratum names the record by a field it lacked when stored (reference_rule: None):
    # applied before the upgrade, it matches
    two_layer = [experiments.load("two_layer")]
    run, = ready([Run("two_layer", PROV, [stored], "x")], errata, two_layer)
    assert run.records[0]["withdrawn"] == "w"
    run, = ready([Run("two_layer", PROV, [stored], "x")], [], two_layer)
    cells = reproduction.record_cells(run.records, ("dataset", "rule", "dtype"))
    assert {dict(name)["path"] for name in cells} == {"framework", "loss"}


def test_older_atlas_cells_are_read_in_the_one_stored_form():
    # older code stored an error as a bare string, and one string for a mode where every input
    # raised; a placement-dependent cell's values held bare strings too
    placed = {"values": [0.0, "E: tail"], "where": {"fill": [[0, "0-63"], [1, "64-66"]]}}
    old = {"part": "atlas", "rule": "r", "look_alike": None, "modes": ["value", "forward"],
           "inputs": ["+0.0", "+nan"], "value": [0.0, placed], "forward": "E: every input"}
    got, = upgrade("zero_point", [old])
    assert got["value"] == [0.0, {"values": [0.0, {"error": "E: tail"}],
                                  "where": placed["where"]}]
    assert got["forward"] == [{"error": "E: every input"}] * 2
    assert upgrade("zero_point", [got]) == [got]  # today's form stays as it is


def test_a_record_runs_share_is_upgraded_once_into_one_record_and_a_runs_own_stay_apart():
    from study.runs.upgrades import shared
    atlas = {"part": "atlas", "rule": "torch_relu6", "reverse": "RuntimeError: x",
             "inputs": ["nan"], "modes": ["reverse"]}
    twin = dict(atlas)  # equal, but another record of the same run
    with shared():
        first = upgrade("zero_point", [atlas, twin])
        again = upgrade("zero_point", [atlas])
    assert first[0] is again[0] and first[1] is not first[0]
    assert first[0] == first[1] == upgrade("zero_point", [atlas])[0]
    assert upgrade("zero_point", [atlas])[0] is not first[0]  # outside, each call its own

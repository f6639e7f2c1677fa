"""`study conformance` and `pytest --study-conformance` on the installed release: verdicts equal to
the committed listing's for the same release, the committed history as the known list, exit
codes, the JSON and the known file. That it imports one framework at a time:
tests/test_one_framework.py, in the process that checks a rule of that framework."""
import json
import os

import pytest

from study import cli
from study.conformance import (KnownFileError, committed_known, installed_release,
                               judge_installed, load_known)
from study.measure.rules import builtins_of
from tests import conformance_table
from tests.conftest import REPORTS_DIR

ROOT = os.path.dirname(REPORTS_DIR)
# a sample of every shape the listing holds: a convex kink broken (clamp) and followed (relu6),
# ties judged jointly (maximum, jnp.clip, lax.clamp), a jump (hardshrink), a kink by continuity
# (selu), a smooth op (softplus100, elu), compositions (where), and JAX's breaks (abs, leaky_relu)
SAMPLE = {"torch": "torch_clamp_0_6,torch_relu6,torch_maximum0,torch_hardshrink,torch_selu,"
                   "torch_where_gt,torch_softplus100",
          "jax": "jax_clip_0_6,jax_lax_clamp_0_6,jax_abs,jax_leaky_relu0,jax_elu,jax_where_ge,"
                 "jax_sparse_sigmoid"}


def test_the_sample_names_registry_keys_only():
    for framework, ops in SAMPLE.items():
        assert {r.key for r in builtins_of(framework)} >= set(ops.split(","))


@pytest.fixture(scope="module")
def judged():
    """The sample of each framework, judged now (no known list: the verdicts alone)."""
    from study.conformance import Known
    return {fw: judge_installed(fw, SAMPLE[fw], Known({}, "none")) for fw in ("torch", "jax")}


@pytest.mark.parametrize("framework", ["torch", "jax"])
def test_the_verdicts_equal_the_committed_listing_of_the_same_release(judged, framework):
    # the oracle: reports/tables/zero-point-conformance-listing.csv, rendered by `study report`
    # from the committed runs (tests/bench_conformance.py compares every built-in)
    result = judged[framework]
    assert conformance_table.committed(framework, result.release), (
        f"no committed listing rows of {framework} {result.release}")
    assert conformance_table.differences(result, sample=True) == []
    assert len(result.records) >= 8


def test_the_rules_ties_and_compositions_are_those_the_committed_records_hold():
    # the kink rows of the main CPU run of these releases (C25), measured from the registry's
    # Rule values: each row's tie and composition must be what its Rule says, read back
    from study.measure.rules import by_key
    from study.runs import results
    from study.runs.tables import read_table, rows_of
    name = "vm-a817f5__cpu__torch-2.13.0+cpu__jax-0.10.2__standard"
    rows = rows_of(read_table(os.path.join(results.RESULTS_DIR, "zero_point", "kinks",
                                           name + ".parquet")))
    assert len(rows) > 60
    for rec in rows:
        rule = by_key(rec["rule"])
        assert rec["judged"] is not rule.composition, rec["rule"]
        # a row without a tie reads back with tie None (the table's column)
        assert (rec["tie"] is not None) == (rule.tie_at(rec["point"]) is not None), rec["rule"]
        if rec["tie"] is not None:
            assert rec["tie"]["operands"] == ["x", rule.tie_at(rec["point"]).other]
    assert any(rec["tie"] is not None for rec in rows)
    assert any(not rec["judged"] for rec in rows)


@pytest.mark.parametrize("framework", ["torch", "jax"])
def test_the_committed_history_of_the_release_lists_its_breaks_as_known(framework):
    # the oracle: the committed listing's rows of this release, the judgement that counts per
    # op, kink and tie being the one over the most operands (a tie's joint one), read by its
    # first operand's row; a kink of one input is known by its rule's key, a tie between
    # inputs by the listing's op and its tie
    import pandas as pd
    release, _ = installed_release(framework)
    known = committed_known(framework, release)
    table = pd.read_csv(conformance_table.LISTING, dtype={"release": str})
    table = table[(table["framework"] == framework) & (table["release"] == release)]
    governing: dict[tuple, tuple[int, bool]] = {}
    for r in table.to_dict("records"):
        over, tie = r["over"].split(", "), r.get("tie")
        key = (r["op"], float(r["kink"])) + ((tie,) if isinstance(tie, str) else ())
        follows = {"yes": True, "no": False}.get(r["follows"])
        if r["operand"] == over[0] and follows is not None and len(over) >= governing.get(
                key, (0, None))[0]:
            governing[key] = (len(over), follows)
    names = {r.key: r.name for r in builtins_of(framework)}
    assert {(names[e[0]], *e[1:]) if len(e) == 2 else e for e in known.entries} == {
        key for key, (_, follows) in governing.items() if follows is False}
    # the checkout's results serve (study.conventions.load), and the source says so
    assert governing and known.source.startswith("the results in reports/results, "
                                                 f"{framework} {release}: runs ")


def test_a_release_with_no_committed_run_says_so_and_knows_no_break(tmp_path):
    known = committed_known("torch", "99.0.0")
    assert known.entries == {} and known.source == (
        "the results in reports/results holds no run of torch 99.0.0: no break is known")
    # without results (an install), the dataset the package ships is asked, and says so
    # (tests/test_conventions.py: the breaks it knows for a release it holds)
    known = committed_known("torch", "99.0.0", results_dir=str(tmp_path / "nowhere"))
    assert known.entries == {} and known.source.startswith(
        "the conventions dataset of relu-gradient-study ")
    assert known.source.endswith(" holds no run of torch 99.0.0: no break is known")


def run_cli(capsys, *argv) -> tuple[int, str, str]:
    try:
        code = cli.main(list(argv))
    except SystemExit as e:
        code = e.code
    out, err = capsys.readouterr()
    return code, out, err


def known_file(tmp_path, entries) -> str:
    path = tmp_path / "known.json"
    path.write_text(json.dumps({"known": entries}))
    return str(path)


def test_exit_0_when_each_break_is_known_and_1_on_a_break_the_known_file_lacks(capsys, tmp_path):
    accepted = known_file(tmp_path, [{"op": "torch_clamp_min0", "kink": 0, "reason": "#184572"},
                                     {"op": "torch.relu", "kink": 0, "reason": "was wrong"}])
    code, out, _ = run_cli(capsys, "conformance", "--framework", "torch", "--ops",
                           "torch_clamp_min0", "--known", accepted)
    assert code == 0 and "breaks (known: #184572)" in out and "1 known break" in out
    code, out, _ = run_cli(capsys, "conformance", "--framework", "torch", "--ops",
                           "torch_clamp_min*", "--known", accepted)
    assert code == 1 and out.count("not a known break") == 1 and "FAILS" in out
    code, out, _ = run_cli(capsys, "conformance", "--framework", "torch", "--ops", "torch_relu",
                           "--known", accepted)  # known, and follows now: fixed
    assert code == 0 and "Fixed (known, and now following the rule): torch.relu at 0" in out


def test_json_holds_each_verdict_with_floats_as_strings(capsys, tmp_path):
    none = known_file(tmp_path, [])
    code, out, _ = run_cli(capsys, "conformance", "--framework", "jax", "--ops",
                           "jax_lax_clamp_0_6", "--known", none, "--json", "-")
    doc = json.loads(out)
    assert code == doc["exit_code"] == 1 and doc["schema_version"] == 1
    [jax] = doc["frameworks"]
    # lax.clamp(0, x, 6) at its bounds: the tie over (x, bound) is convex at 0, concave at 6,
    # so the rule gives (0.5, 0.5); reverse mode gives (0, 0) at both (the committed table)
    assert [(v["kink"], v["over"], v["status"], v["measured"]) for v in jax["verdicts"]] == [
        ("0.0", "x, min", "new break", ["0.0", "0.0"]),
        ("6.0", "x, max", "new break", ["0.0", "0.0"])]


@pytest.mark.parametrize("argv, message", [
    (["--ops", "no_such_op"], "no torch built-in matches --ops 'no_such_op'"),
    (["--known", "missing.json"], "cannot read the known file missing.json"),
])
def test_usage_errors_are_one_line_and_exit_2(capsys, argv, message):
    code, out, err = run_cli(capsys, "conformance", "--framework", "torch", *argv)
    assert (code, out, err.count("\n")) == (2, "", 1) and message in err


@pytest.mark.parametrize("doc", [[], {"known": [{"op": "torch_relu", "kink": "0"}]},
                                 {"known": [{"op": "torch_relu", "kink": 0, "reason": " "}]}])
def test_a_malformed_known_file_is_refused_in_one_line(tmp_path, doc):
    path = tmp_path / "known.json"
    path.write_text(json.dumps(doc))
    with pytest.raises(KnownFileError) as raised:
        load_known(str(path))
    assert "\n" not in str(raised.value)


PLUGIN = ["-p", "no:cacheprovider", "-p", "no:xdist", "--study-conformance", "--study-framework",
          "torch"]


@pytest.mark.slow
def test_pytest_study_conformance_is_one_test_per_kink_with_known_breaks_as_xfail(
        tmp_path, monkeypatch, capsys):
    # pytest run in this process, as `pytest` would be, loading the plugin from its entry point:
    # not pytester's inline run, which takes back every module the run imported (torch's
    # among them, which torch refuses to register twice); tests/test_install.py runs it as a
    # command in a fresh venv
    accepted = known_file(tmp_path, [{"op": "torch_clamp_min0", "kink": 0, "reason": "#184572"}])
    monkeypatch.chdir(tmp_path)
    code = pytest.main([*PLUGIN, "--study-ops", "torch_clamp_min*,torch_relu6",
                        "--study-known", accepted, "-rxXf"])
    stdout = capsys.readouterr().out
    assert code == 1, stdout[-3000:]
    # relu6 follows at 0 and 6; clamp(x, min=0) breaks, as known; clamp_min breaks, unknown
    assert "1 failed, 2 passed, 1 xfailed" in stdout, stdout[-3000:]
    assert "FAILED study-conformance::torch_clamp_min_fn[0]" in stdout
    assert "XFAIL study-conformance::torch_clamp_min0[0] - known: #184572" in stdout
    assert "torch.clamp_min(x, 0) at 0 breaks PyTorch's documented rule" in stdout


def test_pytest_study_conformance_is_one_test_per_tie_with_a_documented_break_as_xfail(
        tmp_path, monkeypatch, capsys):
    # no break known, so that a break the op's own page states is told from a known one
    nothing_known = known_file(tmp_path, [])
    monkeypatch.chdir(tmp_path)
    code = pytest.main([*PLUGIN, "--study-ops", "torch_maximum_xy,torch_max_dim",
                        "--study-known", nothing_known, "-rxXf"])
    stdout = capsys.readouterr().out
    # torch.maximum(x, y) splits its one tie, at 0 and at ±0: 2 follow; torch.max(x, 0) sends
    # each of its ties (2 of 4, 4 of 4) to one index, as its page says: 4 xfail
    assert code == 0, stdout[-3000:]
    assert "2 passed, 4 xfailed" in stdout, stdout[-3000:]
    assert "XFAIL study-conformance::torch_max_dim[2 of 4 at 0] - breaks, as documented" in stdout

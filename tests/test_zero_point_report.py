"""The zero-point report on hand-made atlas ops, stored as the experiment stores them: every
count the answer prints is the rows of the table it names, no cell holds a Python repr, the CSVs
are long, and each title says what its table holds. Every expected value below is read off the
ops built here."""
import re

from experiments.zero_point import EXPERIMENT
from experiments.zero_point.measure import atlas_rows
from study.compare.cells import Placed, Value
from study.report import csv
from study.runs.results import Run

PROV = {"utc": "t", "host": "h", "device": "cpu", "torch": "2.0", "jax": "0.1", "scope": "quick"}
NAN = float("nan")


MODES = ("value", "reverse", "forward", "second")


def atlas_record(rule, framework, look_alike, kinks, reverse: dict, value=None,
                 execution="eager") -> dict:
    """One float32 op as measured: its row of the table atlas, and per mode a cell per input
    (`stored` makes its rows): `reverse` maps each probe label to its d/dx; value and the other
    modes are 0 (or `value`'s cells) at every input."""
    inputs = list(reverse)
    other = [0.0] * len(inputs)
    rec = {"part": "atlas", "rule": rule, "name": rule, "framework": framework,
           "kind": "builtin", "convention": None, "kinks": list(kinks), "dtype": "float32",
           "inputs": inputs,
           "value": [value.get(lab, 0.0) for lab in inputs] if value else other,
           "reverse": list(reverse.values()), "forward": other, "second": other,
           "look_alike": look_alike, "placements": ["0-d"], "execution": execution,
           "documented": []}
    if execution == "compiled":
        rec["compiler"] = "jax.jit" if framework == "jax" else "torch.compile"
    return rec


def stored(records) -> list[dict]:
    """The rows the experiment stores for these ops (measure.atlas_rows: a row of atlas per op,
    a row of atlas_cells per cell, a number as a Value); any other row as it is."""
    def cell(c):
        return c if isinstance(c, Placed) else Value(c)
    return [row for rec in records for row in (
        atlas_rows({k: v for k, v in rec.items() if k not in MODES},
                   {m: [cell(c) for c in rec[m]] for m in MODES})
        if rec["part"] == "atlas" else [rec])]


def run_of(records, provenance=PROV, path="x.json", tag="C1") -> Run:
    return Run.of("zero_point", provenance, stored(records), path, tag=tag)


def pair(name, kinks, torch_reverse: dict, jax_reverse: dict) -> list[dict]:
    return [atlas_record(f"t_{name}", "torch", f"j_{name}", kinks, torch_reverse),
            atlas_record(f"j_{name}", "jax", f"t_{name}", kinks, jax_reverse)]


# Five pairs, one of each kind: their d/dx differ at +0 (and -0); at the kink 6 only; only at
# 3 - 1 ulp; only at NaN; nowhere.
RECORDS = (pair("zero", [0.0], {"-0.0": 0.0, "+0.0": 0.0, "1": 1.0, "+nan": NAN},
                {"-0.0": 1.0, "+0.0": 1.0, "1": 1.0, "+nan": NAN})
           + pair("six", [0.0, 6.0], {"+0.0": 0.0, "6-ulp": 1.0, "6": 1.0, "+nan": NAN},
                  {"+0.0": 0.0, "6-ulp": 1.0, "6": 0.5, "+nan": NAN})
           + pair("ulp", [3.0], {"3-ulp": 1.5, "3": 1.0, "+nan": NAN},
                  {"3-ulp": 1.0, "3": 1.0, "+nan": NAN})
           + pair("nan", [0.0], {"+0.0": 0.0, "+nan": 1.0}, {"+0.0": 0.0, "+nan": 0.0})
           + pair("same", [0.0], {"+0.0": 1.0, "+nan": NAN}, {"+0.0": 1.0, "+nan": NAN}))


def rendered(runs):
    return EXPERIMENT.render(EXPERIMENT.summarise(runs))


def one_run():
    return run_of(RECORDS)


def differing(frame) -> set[str]:
    # pairs alike share a row, their ops in order, "; " between them
    rows = frame[frame["same d/dx"] == False]  # noqa: E712  the cells are bools or None
    return {f"{t} vs {j}" for ts, js in zip(rows["torch op"], rows["JAX op"])
            for t, j in zip(ts.split("; "), js.split("; "))}


def test_every_pair_the_answer_names_is_a_row_of_the_numbered_table_its_clause_cites():
    # Answer 2 counted 10 pairs that "disagree at a kink or ±0", two of which differ only at
    # 3 - 1 ulp, and named no table that shows them; then it cited zero-point-pairs.csv, a CSV,
    # for those beside a kink or at NaN: each pair it names is now a row of the numbered table
    # its clause cites, the kinks table holding those beside a kink and at NaN too
    out = rendered([one_run()])
    tables = {t.id: t for t in out.tables}
    (said,) = [a.text for a in out.answers]
    clauses = dict((table, text) for text, table in re.findall(r"([^(]*(?:\([^[][^)]*\)[^(]*)*)"
                                                               r"\(\[table:(\w+)\]\)", said))
    for table, expected in (("conventions", {"t_zero vs j_zero"}),
                            ("kinks", {"t_six vs j_six", "t_ulp vs j_ulp", "t_nan vs j_nan"})):
        rows = differing(tables[table].frame)
        assert rows == expected, (table, rows)
        assert all(name in clauses[table] for name in rows), (table, clauses[table])
    listing = tables["pairs"].frame
    differs = listing[(listing["execution"] == "eager") & (listing["why"] == "differs")]
    assert set(differs["input"]) >= {"3-ulp", "+nan"}  # the kinks table's extra rows' inputs
    assert "t_same vs j_same" not in said
    assert re.search(r"of its 5 look-alike pairs", said)
    assert "t_ulp vs j_ulp at 3-ulp" in said


def release_runs():
    """Two releases of one machine: the second's d/dx of t_zero at +0 is placement-dependent
    (0 in a vector body, 1 in its tail)."""
    placed = Placed((Value(0.0), Value(1.0)), (("fill", ((0, "0-63"), (1, "64-66"))),))
    old = one_run()
    newer = [dict(r) for r in RECORDS]
    newer[0] = {**newer[0], "reverse": [0.0, placed, 1.0, NAN]}
    new = run_of(newer, {**PROV, "torch": "2.1"}, "y.json", "C2")
    return [old, new]


def test_release_changes_print_values_never_a_python_repr():
    # Table 13's F.celu row read "Placed(values=(Value(value=0.0, lo=None, ...": the cell of a
    # release that depends on placement is printed by the formatter, as its values
    tables = {t.id: t for t in rendered(release_runs()).tables}
    view = tables["releases"].frame
    (by_release,) = set(view["by release"])
    assert by_release == "2.0: 0; 2.1: 0 or 1 (placement)"
    for cell in (c for column in view.columns for c in view[column]):
        assert not re.search(r"\w+\(\w+=", str(cell)), cell
    listing = tables["releases"].listing
    rows = listing[listing["release"] == "2.1"]
    assert sorted(zip(rows["value"], rows["where"])) == [(0.0, "fill 0-63"), (1.0, "fill 64-66")]


def test_the_listings_are_long_one_value_per_row():
    tables = {t.id: t for t in rendered(release_runs()).tables}
    for table_id, table in tables.items():  # a list, a dict or a span of runs is no value
        text = csv(table)
        assert "[" not in text and "{" not in text, (table_id, text[:300])
        assert "runs" not in text.splitlines()[0].split(","), (table_id, text[:300])
    atlas = tables["atlas"].frame
    placed = atlas[(atlas["run"] == "C2") & (atlas["op"] == "t_zero") & (atlas["mode"] == "reverse")
                   & (atlas["input"] == "+0.0")]
    assert sorted(zip(placed["value"], placed["where"])) == [(0.0, "fill 0-63"),
                                                             (1.0, "fill 64-66")]
    porting = tables["porting"].frame
    # t_same equals j_same on every input; t_nan equals none (its d/dx at NaN is 1, j_nan's 0)
    same = porting[(porting["op"] == "t_same") & (porting["inputs"] == "every input")]
    assert list(same["equivalent"]) == ["j_same"]
    alone = porting[(porting["op"] == "t_nan") & (porting["inputs"] == "every input")]
    assert list(alone["equivalent"]) == [None]
    pairs = tables["pairs"].frame
    zero = pairs[(pairs["run"] == "C1") & (pairs["torch op"] == "t_zero")]
    assert list(zip(zero["input"], zero["torch d/dx"], zero["JAX d/dx"])) == [
        ("-0.0", 0.0, 1.0), ("+0.0", 0.0, 1.0)]
    agree = pairs[(pairs["run"] == "C1") & (pairs["torch op"] == "t_same")]
    assert list(zip(agree["verdict"], agree["input"])) == [("agree", None)]


def test_the_subnormal_table_names_the_runs_that_hold_no_probe():
    # Table 15 said "per device" and held CPU runs only: a run without the probe is named
    probe = {"part": "arithmetic", "framework": "jax", "exec": "eager", "dtype": "float32",
             "subnormal_is_positive": False, "subnormal_times_one": 0.0, "half_min_normal": 0.0}
    probed = run_of(list(RECORDS) + [probe])
    gpu = run_of(RECORDS, {**PROV, "device": "cuda"}, "g.json", "G1")
    table = {t.id: t for t in rendered([probed, gpu]).tables}["subnormals"]
    assert "per device" not in table.title
    assert "G1 hold no probe" in table.caption and "C1" not in table.caption
    assert list(table.frame["runs"]) == ["C1"]


def test_the_compiled_table_gives_the_values_compiling_changes():
    # Table 12 promised what compiling changes and gave only counts: it gives the values
    compiled = atlas_record("t_nan", "torch", "j_nan", [0.0], {"+0.0": 0.0, "+nan": 1.0},
                            value={"+nan": 0.0}, execution="compiled")
    eager_nan = {**RECORDS[6], "value": [0.0, NAN]}
    records = [r for r in RECORDS if r["rule"] != "t_nan"] + [eager_nan, compiled]
    run = run_of(records)
    table = {t.id: t for t in rendered([run]).tables}["compiled"]
    assert list(table.frame["eager → compiled"]) == ["NaN → 0"]
    assert list(table.frame["mode"]) == ["value"]


def test_a_sign_of_zero_is_equal_in_the_atlas_and_a_change_between_releases():
    # One equality (study.compare.cells.equal): -0 equals +0 for a porting user, a pair and compiled
    # code against eager; with zero_sign, between releases, a flipped zero is a change
    torch_grad = {"-1": -0.0, "+0.0": 1.0, "1": 1.0}
    signed = pair("sign", [0.0], torch_grad, {"-1": 0.0, "+0.0": 1.0, "1": 1.0})
    compiled = atlas_record("t_sign", "torch", "j_sign", [0.0], {**torch_grad, "-1": 0.0},
                            execution="compiled")
    old = run_of(signed + [compiled])
    newer = [atlas_record("t_sign", "torch", "j_sign", [0.0], {**torch_grad, "-1": 0.0}),
             signed[1], compiled]
    new = run_of(newer, {**PROV, "torch": "2.1"}, "y.json", "C2")
    tables = {t.id: t for t in rendered([old, new]).tables}
    pairs = tables["pairs"].frame
    assert set(pairs[pairs["run"] == "C1"]["verdict"]) == {"agree"}
    porting = tables["porting"].frame
    assert list(porting[(porting["op"] == "t_sign") & (porting["inputs"] == "every input")]
                ["equivalent"]) == ["j_sign"]
    assert not len(tables["compiled_cells"].frame)
    releases = tables["releases"].frame
    assert list(zip(releases["op"], releases["input"], releases["by release"])) == [
        ("t_sign", "-1", "2.0: -0; 2.1: 0")]

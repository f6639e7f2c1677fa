"""zero_point's history and conformance tables on hand-made records with exact rows: a cell that
changes between releases and the first release of each value, one run per release with the
other framework pinned, a rule-breaker and the release that fixed it, a tie judged jointly, and
runs without kink records. Every expected row is read off the rows built here, stored as the
experiment stores them (an op: measure.atlas_rows; a kink: a row of the table kinks)."""
from experiments.zero_point import EXPERIMENT
from experiments.zero_point.measure import atlas_rows
from study.compare.cells import Value
from study.report.figures import history_map
from study.runs.results import Run

PROV = {"utc": "t", "host": "h", "device": "cpu", "scope": "standard"}


def atlas_record(name: str, framework: str, reverse_at_zero: float) -> list[dict]:
    """One float32 eager op with kink 0 whose d/dx at +0 is `reverse_at_zero` (1 elsewhere):
    its row of the table atlas and its rows of atlas_cells."""
    op = {"part": "atlas", "rule": name, "name": name, "framework": framework,
          "kind": "builtin", "convention": None, "kinks": [0.0], "dtype": "float32",
          "inputs": ["-1", "+0.0", "1"], "look_alike": "other", "placements": ["0-d"],
          "execution": "eager", "documented": []}
    return atlas_rows(op, {"value": [Value(0.0), Value(0.0), Value(1.0)],
                           "reverse": [Value(0.0), Value(reverse_at_zero), Value(1.0)]})


def relu_shape(point=(0.0,), normal=(1.0,), left=((0.0,),), right=((1.0,),)) -> dict:
    """A kink record's shape of max(x, 0) at 0: f'(0−) = 0, f'(0+) = 1, both sides linear
    (f'' = 0), continuous: locally convex, whose minimum-norm subgradient is 0."""
    def exact(gradient):
        return [[g, g, g] for g in gradient[0]]
    return {"point": list(point), "normal": list(normal), "value": 0.0,
            "value_left": [0.0, 0.0, 0.0], "value_right": [0.0, 0.0, 0.0],
            "gradient_left": exact(left), "gradient_right": exact(right),
            "curvature_left": [0] * len(point), "curvature_right": [0] * len(point),
            "jump_height": 0.0}


def kink_record(name: str, framework: str, measured, **extra) -> dict:
    """A row of the table kinks: the op's shape at 0 and its measured d/dx there."""
    return {"part": "kinks", "framework": framework, "rule": name, "name": name,
            "kind": "builtin", "dtype": "float64", "device": "cpu", "point": 0.0,
            "judged": True, "method": "by hand", "in_release": True, "shape": relu_shape(),
            "measured": measured, "error": None, **extra}


def run(tag: str, torch: str, jax: str, records: list[dict]) -> Run:
    """A run of the rows given, beside an atlas op (every run measures the atlas)."""
    atlas = atlas_record("t_relu", "torch", 0.0) if not any(
        r["part"] == "atlas" for r in records) else []
    return Run.of("zero_point", {**PROV, "torch": torch, "jax": jax}, records + atlas,
                  f"{tag}.json", tag=tag)


def tables_of(runs) -> tuple[dict, list[str]]:
    out = EXPERIMENT.render(EXPERIMENT.summarise(runs))
    return {t.id: t for t in out.tables}, [a.text for a in out.answers]


def clamp_history() -> list[Run]:
    """torch 2.9, 2.10 and 2.11 with the JAX pin 0.5; t_clamp's d/dx at +0 is 1, then 0, then
    0; a fourth run, torch 2.12 with JAX 0.6, is off the pin and in neither history."""
    return [run("C1", "2.9", "0.5", atlas_record("t_clamp", "torch", 1.0)),
            run("C2", "2.11", "0.5", atlas_record("t_clamp", "torch", 0.0)),
            run("C3", "2.10+cpu", "0.5", atlas_record("t_clamp", "torch", 0.0)),
            run("C4", "2.12", "0.6", atlas_record("t_clamp", "torch", 5.0))]


def test_a_changed_cell_gives_each_value_with_the_releases_in_version_order():
    # by hand: 2.9 < 2.10 < 2.11 as versions (not as text); the cell is 1 in 2.9 and 0 from
    # 2.10 on, so 2.10 is the first release with 0; 2.10+cpu is release 2.10
    tables, _ = tables_of(clamp_history())
    view = tables["releases"].frame
    assert list(zip(view["op"], view["by release"], view["input"])) == [
        ("t_clamp", "2.9: 1; 2.10–2.11: 0", "+0.0")]
    listing = tables["releases"].listing
    assert list(zip(listing["release"], listing["run"], listing["value"],
                    listing["first_release"])) == [("2.9", "C1", 1.0, "2.9"),
                                                   ("2.10", "C3", 0.0, "2.10"),
                                                   ("2.11", "C2", 0.0, "2.10")]


def test_the_answer_names_the_release_where_a_look_alike_convention_changed():
    _, (said,) = tables_of(clamp_history())
    assert "t_clamp at 0: 1 → 0 in torch 2.10" in said  # changes alike are said once


def test_the_figure_marks_the_release_where_a_cell_changed():
    summary = EXPERIMENT.summarise(clamp_history())
    assert [(m["release"], m["changed"], m["measured"]) for m in summary.history_marks] == [
        ("2.9", 0, True), ("2.10", 1, True), ("2.11", 0, True)]


def test_runs_without_kink_records_give_history_but_no_conformance_rows():
    tables, _ = tables_of(clamp_history())
    assert not len(tables["conformance_listing"].frame)
    assert not len(tables["conformance"].frame)
    caption = tables["conformance"].caption
    assert "No run holds kink records" in caption
    assert "C1–C3 hold no kink records" in caption


def breaker_runs() -> list[Run]:
    """t_clamp breaks the convex rule (measured 1, the rule gives 0) in torch 2.9 and 2.10 and
    follows it in 2.11; t_relu follows it throughout; t_where is a composition measured 1."""
    def records(clamp: float) -> list[dict]:
        return [kink_record("t_clamp", "torch", clamp), kink_record("t_relu", "torch", 0.0),
                kink_record("t_where", "torch", 1.0, judged=False)]
    return [run("C1", "2.9", "0.5", records(1.0)), run("C2", "2.10", "0.5", records(1.0)),
            run("C3", "2.11", "0.5", records(0.0))]


def test_a_rule_breaker_is_listed_with_the_release_that_fixed_it():
    tables, _ = tables_of(breaker_runs())
    view = tables["conformance"].frame
    assert view.to_dict("records") == [
        {"framework": "torch", "op": "t_clamp", "kink": 0.0, "tie": None, "over": "x",
         "documented rule": "locally convex", "rule gives": "0", "measured": "1",
         "as documented": None, "breaks in": "2.9–2.10",
         "fixed in": "2.11"}]
    listing = tables["conformance_listing"].frame
    rows = listing[listing["op"] == "t_clamp"]
    assert list(zip(rows["release"], rows["follows"], rows["clarke"])) == [
        ("2.9", False, "inside"), ("2.10", False, "inside"),
        ("2.11", True, "minimum-norm element")]
    assert [m.value for m in rows["minimum-norm"]] == [0.0] * 3
    where = listing[listing["op"] == "t_where"]
    assert list(zip(where["judged"], where["documented rule"], where["clarke"])) == [
        (False, None, None)] * 3


def test_a_breaker_not_fixed_in_the_newest_release_has_no_fix():
    tables, _ = tables_of(breaker_runs()[:2])
    assert list(tables["conformance"].frame["fixed in"]) == [None]


def test_a_tie_is_judged_jointly_and_x_alone_is_shown_beside_it():
    # by hand: maximum(x, y) at x = y = 0 is y on the left (gradient (0, 1)) and x on the right
    # ((1, 0)): convex along the normal (1, -1), and the minimum-norm element of the segment is
    # (0.5, 0.5); x alone, y held at 0, is relu, whose minimum-norm element is 0. Measured
    # (0.5, 0.5): the joint verdict follows, x alone (0.5) breaks; the op is judged jointly
    tie = {"operands": ["x", "y"], "measured": [0.5, 0.5], "error": None,
           "shape": relu_shape((0.0, 0.0), (2 ** -0.5, -(2 ** -0.5)), ((0.0, 1.0),),
                               ((1.0, 0.0),))}
    record = kink_record("j_maximum", "jax", 0.5, tie=tie)
    tables, _ = tables_of([run("C1", "2.9", "0.5", [record])])
    listing = tables["conformance_listing"].frame
    assert list(zip(listing["over"], listing["operand"], listing["measured"],
                    listing["follows"], listing["clarke"])) == [
        ("x", "x", 0.5, False, "inside"),
        ("x, y", "x", 0.5, True, "minimum-norm element"),
        ("x, y", "y", 0.5, True, "minimum-norm element")]
    assert not len(tables["conformance"].frame)


def test_a_kink_the_release_could_not_read_is_one_row_with_its_error():
    missing = {**kink_record("j_sparse", "jax", None), "in_release": False, "shape": None,
               "error": "AttributeError: no such op"}
    tables, _ = tables_of([run("C1", "2.9", "0.5", [missing])])
    listing = tables["conformance_listing"].frame
    assert list(zip(listing["op"], listing["error"], listing["follows"])) == [
        ("j_sparse", "AttributeError: no such op", None)]


def test_the_history_figure_of_twelve_releases_fits_2400_pixels():
    # the PNG header holds the width as a big-endian int at bytes 16-19
    releases = [f"2.{minor}.0" for minor in range(4, 16)]
    rows = [{"framework": "torch", "op": "ReLUWithConvention(c=0) + generate_vmap_rule and a jvp "
             "staticmethod", "release": r, "changed": int(r == "2.14.0"), "measured": True}
            for r in releases]
    png = history_map(rows, "Cells that changed, by op and release")
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    assert int.from_bytes(png[16:20], "big") <= 2400


def test_the_answer_names_the_rule_breakers_of_the_newest_release_and_the_fixes():
    _, (fixed,) = tables_of(breaker_runs())
    assert "fixed in 2.11: t_clamp ([table:conformance])" in fixed and "breaks it in" not in fixed
    _, (broken,) = tables_of(breaker_runs()[:2])
    # both releases break it: "torch 2.10 breaks it" read as if the newest had begun to
    # (review 17); the answer says every release tested does
    assert ("every torch release tested (2.9–2.10) breaks it in t_clamp ([table:conformance])"
            in broken)
    assert "fixed" not in broken

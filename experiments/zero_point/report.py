"""The atlas in the report: conventions at 0 (Q2), and in the appendix the other kinks, what
compiling and releases change, placement, subnormal flushing and the custom rules."""
import re

import pandas as pd

from experiments.zero_point.summary import Summary
from study.runs.experiment import Rendered
from study.report import Table, answer, frame, macros, names, say, side_by_side
from study.report.figures import convention_map, history_map
from study.report.format import Cut, distinct_figures, error_words, shorten, text, uncut

PROSE = macros("experiments/zero_point/prose.j2")


def _grouped(rows: pd.DataFrame, by: list[str], listed: list[str]) -> pd.DataFrame:
    """Rows that agree in `by` merged, the `listed` columns' distinct values named, and counted
    (groups in the order they first occur, a row with a missing key left out, as pandas
    groups)."""
    columns = {c: rows[c].tolist() for c in dict.fromkeys(by + listed)}
    groups: dict[tuple, list[int]] = {}
    for i, key in enumerate(zip(*(columns[c] for c in by))):
        if None not in key and all(k == k for k in key):  # NaN is not itself
            groups.setdefault(key, []).append(i)
    return frame([{**dict(zip(by, key)), "cells": len(rows_of),
                   **{c: names([str(columns[c][i]) for i in rows_of], 4) for c in listed}}
                  for key, rows_of in groups.items()])


def _by_release(spans) -> str:
    """'2.4.1–2.13.0: 1; 2.14.1: 0', each value with as many figures as tell them apart."""
    digits = distinct_figures([v for _, _, v in spans])
    return "; ".join(f"{first if first == last else f'{first}–{last}'}: {text(v, digits)}"
                     for first, last, v in spans)


def _releases(s: Summary) -> pd.DataFrame:
    h = s.history_by_cell
    if not len(h):
        return frame([])
    shown = h.assign(**{"by release": [_by_release(b) for b in h["by release"]],
                        "mode": [m if e == "eager" else f"{m} (compiled)"
                                 for m, e in zip(h["mode"], h["execution"])]})
    return _grouped(shown, ["framework", "op", "by release"], ["dtype", "mode", "input"])


def _gradient(measured: tuple, over: str) -> str:
    """A gradient over the operands the row names ('x, min'): its one value, or each operand's
    ('x 0.5, min 0.5')."""
    if len(measured) == 1:
        return text(measured[0])
    return ", ".join(f"{name} {text(v)}" for name, v in zip(over.split(", "), measured))


def _breakers(s: Summary) -> pd.DataFrame:
    if not len(s.breakers):
        return frame([], ["framework", "op", "kink", "tie", "over", "documented rule",
                          "rule gives", "measured", "as documented", "breaks in", "fixed in"])
    b = s.breakers.drop(columns=["documentation"])
    return _signs_of_zero_merged(b.assign(**{
        "documented rule": [names(r) for r in b["documented rule"]],
        "rule gives": [" or ".join(dict.fromkeys(_gradient(g, over) for g in gs))
                       for gs, over in zip(b["rule gives"], b["over"])],
        "measured": [" or ".join(dict.fromkeys(_gradient(m, over) for m in ms))
                     for ms, over in zip(b["measured"], b["over"])],
        "breaks in": [", ".join(f if f == last else f"{f}–{last}" for f, last in spans)
                      for spans in b["breaks in"]]}).rename(columns={"fixed_in": "fixed in"}))


def _signs_of_zero_merged(view: pd.DataFrame) -> pd.DataFrame:
    """One row for a tie at 0 and the same tie at ±0 where every other cell agrees ('2 of 4 at
    0 or ±0'); the listing keeps both."""
    def bare(tie) -> str:
        return re.sub(r" at ±?0$", "", tie) if isinstance(tie, str) else tie
    rows = view.to_dict("records")
    others = [c for c in view.columns if c != "tie"]
    def key(r) -> tuple:
        return (bare(r["tie"]),) + tuple(str(r[c]) for c in others)
    seen: dict[tuple, dict] = {}
    for r in rows:
        if key(r) in seen and isinstance(r["tie"], str):
            seen[key(r)]["tie"] = f"{bare(r['tie'])} at 0 or ±0"
        else:
            seen[key(r)] = dict(r)
    return pd.DataFrame(list(seen.values()), columns=view.columns)


SHARED = "; "  # between the ops that share a row (an op's name may hold a comma)


def _sharing_rows(rows: pd.DataFrame, names: tuple[str, str], joins=None) -> pd.DataFrame:
    """The rows whose cells agree but for their `names` in one row, each name column's names in
    order, SHARED between them ("torch.amax(x); torch.max(x)" beside "jnp.amax(x);
    jnp.max(x)"); `joins`, where given, names the cells a row without a first name must agree
    in to join another (a JAX op alone beside the jnp ops it equals)."""
    same = [c for c in rows.columns if c not in names]
    groups: dict[str, list[dict]] = {}
    for row in rows.to_dict("records"):
        key = repr([row[c] for c in same])
        if joins is not None and row[names[0]] is None:
            key = next((k for k, g in groups.items()
                        if [g[0][c] for c in joins] == [row[c] for c in joins]), key)
        groups.setdefault(key, []).append(row)
    return frame([{**{n: SHARED.join(r[n] for r in g if r[n] is not None) or None
                      for n in names},
                   **{c: g[0][c] for c in same}} for g in groups.values()])


def _ties(s: Summary) -> pd.DataFrame:
    """The ties table, ops whose cells agree sharing a row."""
    if not len(s.ties):
        return s.ties
    shared = _sharing_rows(s.ties, ("torch op", "JAX op"),
                           joins=["tie", "JAX gradient", "rule gives", "JAX"])
    return shared[shared["torch op"].notna()]  # a JAX op like no torch op: the CSV


def _breaker_rows(s: Summary) -> pd.DataFrame:
    """The listing's rows of the ops the headline names, for its CSV."""
    if not len(s.breakers):
        return frame([])
    named = set(zip(s.breakers["framework"], s.breakers["op"], s.breakers["kink"]))
    c = _listed(s.conformance)
    return c[[k in named for k in zip(c["framework"], c["op"], c["kink"])]]


def _listed(conformance: pd.DataFrame) -> pd.DataFrame:
    """The conformance listing as its CSV holds it: without the pieces' gradients at a tie (a
    list per row, one per piece, not a value), which its 'clarke' and 'minimum-norm' columns
    summarise and the op's tie defines."""
    return conformance.drop(columns=["pieces"])


def _compiled(s: Summary) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The view (runs that agree merged) and its CSV: one row per run and group, long, not the
    cell listing (zero-point-compiled-cells.csv)."""
    if not len(s.compiled):
        return frame([]), frame([])
    def shown(c, digits):
        return shorten(error_words(c), 30) if isinstance(c, str) else text(c, digits)
    changes = [Cut(f"{a} → {b}", f"{uncut(a)} → {uncut(b)}")  # the CSV: whole errors
               for e, c in zip(s.compiled["eager"], s.compiled["compiled"])
               for d in [distinct_figures([e, c])] for a, b in [(shown(e, d), shown(c, d))]]
    changes = pd.Series(changes, index=s.compiled.index, dtype=object)
    grouped = _grouped(s.compiled.assign(**{"eager → compiled": changes}),
                       ["run", "framework", "shares"], ["op", "dtype", "mode", "eager → compiled"])
    return side_by_side(grouped, s.runs), grouped


def _changes_alike(changes) -> list[tuple]:
    """The convention changes, those that changed alike in one framework's releases together:
    (framework, ((release, value), ...), ((op, (kinks, ...)), ...))."""
    out: dict[tuple, dict[str, list]] = {}
    for fw, op, k, by in changes:
        key = (fw, tuple((release, text(v) if not hasattr(v, "positions") else "placement")
                         for release, v in by))
        out.setdefault(key, {"by": by, "ops": {}})["ops"].setdefault(op, []).append(k)
    return [(fw, g["by"], tuple((op, tuple(ks)) for op, ks in g["ops"].items()))
            for (fw, _), g in out.items()]


def _placed_cells(s: Summary) -> pd.DataFrame:
    """The eager atlas cells that depend on placement, one row per value."""
    if not len(s.cells):
        return frame([])
    placed = s.cells["where"].notna() & (s.cells["execution"] == "eager")  # a where or None
    return s.cells[placed]


def _kink_cells(s: Summary, at_zero: bool) -> pd.DataFrame | None:
    k = s.kink_cells
    return k[(k["kink"] == 0) == at_zero] if len(k) else None


def _kinks(s: Summary, at_zero: bool) -> pd.DataFrame:
    if not len(s.kinks):  # no look-alike pair measured
        return frame([])
    k = s.kinks[(s.kinks["kink"] == 0) == at_zero].drop(columns=["run"])
    if not at_zero:  # then the pairs that differ only beside a kink or at NaN or ±inf
        k = k.rename(columns={"kink": "at"})
        return pd.concat([k, s.away], ignore_index=True).astype(object).where(
            lambda f: f.notna(), None) if len(s.away) else k
    return _sharing_rows(k.drop(columns=["kink", "torch value", "JAX value"]),
                         ("torch op", "JAX op"))


def _without_kinks(s: Summary) -> list[str]:
    """The runs of the history that hold no kink records (measured before they existed)."""
    return list(dict.fromkeys(r.atlas.run.tag for r in s.history_runs if not r.atlas.kinks))


def _history_tables(s: Summary) -> list[Table]:
    return [
        Table("releases", say(PROSE, "title_releases"),
              say(PROSE, "caption_releases", releases=s.history_runs, older=s.older),
              _releases(s), listing=s.history_cells),
        Table("conformance", say(PROSE, "title_conformance"),
              say(PROSE, "caption_conformance", releases=s.conformance_runs,
                  without=_without_kinks(s), older=s.older), _breakers(s),
              listing=_breaker_rows(s)),
        Table("conformance_listing", say(PROSE, "title_conformance_listing"), "",
              _listed(s.conformance))]


def _smooth_at_0(s: Summary) -> list[str]:
    """The torch ops of the conventions table that PyTorch's documented rule, as the
    conformance listing applies it, judges differentiable at 0 (in every release it holds)."""
    c, k = s.conformance, s.kinks
    if not (len(c) and len(k)) or "documented rule" not in c.columns:
        return []
    shown = set(k[k["kink"] == 0]["torch op"])
    at_0 = c[(c["kink"] == 0) & c["op"].isin(shown)]
    verdicts = at_0.groupby("op", sort=False)["documented rule"].agg(set)
    return [op for op, v in verdicts.items() if v == {"differentiable"}]


def render(s: Summary) -> Rendered:
    run = s.facts.run if s.facts else None
    probed = [r for r in s.runs if len(s.subnormals) and r in set(s.subnormals["run"])]
    tables = [
        Table("conventions", say(PROSE, "title_conventions"),
              say(PROSE, "caption_conventions", run=run, releases=s.releases,
                  shown=int((s.kinks["kink"] == 0).sum()) if len(s.kinks) else 0,
                  pairs=s.facts.pairs if s.facts else 0, smooth=_smooth_at_0(s)),
              _kinks(s, True), listing=_kink_cells(s, True)),
        Table("ties", say(PROSE, "title_ties"),
              say(PROSE, "caption_ties", run=s.ties_run, releases=s.releases,
                  pairs=s.facts.tie_pairs if s.facts else 0,
                  changed=len(s.facts.port_changes) if s.facts else 0), _ties(s),
              listing=s.ties_listing),
        Table("kinks", say(PROSE, "title_kinks"),
              say(PROSE, "caption_kinks", run=run, releases=s.releases),
              _kinks(s, False), listing=_kink_cells(s, False)),
        Table("compiled", say(PROSE, "title_compiled"),
              say(PROSE, "caption_compiled"), *_compiled(s)),
        Table("compiled_cells", say(PROSE, "title_compiled_cells"), "", s.compiled_cells),
        *_history_tables(s),
        Table("placement", say(PROSE, "title_placement"),
              say(PROSE, "caption_placement"),
              side_by_side(_grouped(s.placement, ["run", "framework", "op"],
                                    ["dtype", "mode", "input"]), s.runs)
              if len(s.placement) else frame([]), listing=_placed_cells(s)),
        Table("subnormals", say(PROSE, "title_subnormals"),
              say(PROSE, "caption_subnormals", unprobed=[r for r in s.runs if r not in probed],
                  older=s.older),
              side_by_side(s.subnormals, s.runs), listing=s.subnormals),
        Table("custom", say(PROSE, "title_custom"),
              say(PROSE, "caption_custom"), side_by_side(s.custom, s.runs), listing=s.custom),
        Table("atlas", say(PROSE, "title_atlas"), "",
              s.cells[(s.cells["dtype"] == "float32") | (s.cells["run"] == run)]
              if len(s.cells) else frame([])),
        Table("gradcheck", say(PROSE, "title_gradcheck"), "", s.gradcheck),
        Table("pairs", say(PROSE, "title_pairs"), "", s.pairs),
        Table("porting", say(PROSE, "title_porting"), "", s.porting)]
    if s.facts:
        next(t for t in tables if t.id == "kinks").notes.append(
            say(PROSE, "documented", f=s.facts))
    found, answers, figures = [], [], {}
    if s.facts:
        answers.append(answer(PROSE, "zero_point", ("conventions", "kinks", "ties", "releases",
                                                    "conformance", "subnormals", "compiled"),
                              f=s.facts, releases=s.releases, older=s.older,
                              changes=_changes_alike(s.facts.convention_changes)))
        if s.facts.finite_differences or s.facts.forward_wrong:  # under the custom rules' table
            next(t for t in tables if t.id == "custom").notes.append(
                say(PROSE, "finding_custom", f=s.facts))
        rows = s.kinks.to_dict("records")
        title = say(PROSE, "figure_conventions", run=run)
        figures["figures/zero-point-conventions.png"] = (
            lambda: convention_map(rows, title), say(PROSE, "alt_conventions"))
    if s.history_marks:
        marks, title_history = s.history_marks, say(PROSE, "figure_history")
        figures["figures/zero-point-history.png"] = (
            lambda: history_map(marks, title_history), say(PROSE, "alt_history"))
    return Rendered(tables, found, figures, answers)

"""The conventions dataset (study.conventions) that the package ships in study/data/conventions:
equal to what the committed results make, what `study conformance` knows without a checkout, a
label for every run, and a placement-dependent cell carried through it whole."""
import os
import re

import numpy as np
import pandas as pd
import pytest

from experiments.zero_point.atlas import run_atlas
from study import conventions
from study.compare.cells import Placed, equal
from study.conformance import committed_known
from study.runs import results


@pytest.fixture(scope="module")
def built() -> conventions.Dataset:
    """The dataset the committed results make (reports/results, errata and labels applied)."""
    return conventions.build()


@pytest.fixture(scope="module")
def shipped() -> conventions.Dataset:
    return conventions.shipped()


def _sorted(frame: pd.DataFrame, columns: list[str]) -> pd.DataFrame:
    """The frame's rows in one order (by every column, a missing text or number first), its
    cells as Python objects: two frames of the same rows compare equal however each was read."""
    plain = frame[columns].astype(object).where(frame[columns].notna(), None)
    keys = list(zip(*([(v is not None, repr(v)) for v in plain[c].tolist()] for c in columns)))
    order = sorted(range(len(plain)), key=keys.__getitem__)
    return plain.iloc[order].reset_index(drop=True)


def test_the_shipped_dataset_is_what_the_committed_results_make(built, shipped):
    # what holds the package data to the results: `study report` writes one from the other,
    # and a result committed without the report rewritten shows here
    assert shipped.runs == built.runs
    assert len(built.runs) >= 10 and len(built.cells) > 100_000  # the committed atlas, whole
    cells, ours = (_sorted(d.cells, conventions.CELL_COLUMNS) for d in (shipped, built))
    pd.testing.assert_frame_equal(cells, ours)  # NaN equals NaN; -0.0 equals 0.0 here, so:
    signs = [np.signbit(np.array([v if v is not None else np.nan for v in f["value"]], float))
             for f in (cells, ours)]
    assert (signs[0] == signs[1]).all()  # a flipped zero is a changed value
    pd.testing.assert_frame_equal(_sorted(shipped.breaks, conventions.BREAK_COLUMNS),
                                  _sorted(built.breaks, conventions.BREAK_COLUMNS))
    assert len(built.breaks)  # the committed runs show breaks (torch.clamp's at 0 among them)


def test_without_results_conformance_knows_the_breaks_from_the_shipped_dataset(tmp_path):
    empty = tmp_path / "results"
    empty.mkdir()
    known = committed_known("torch", "2.13.0", results_dir=str(empty))
    # torch.clamp(x, min=0) breaks the convex rule at 0 in torch 2.13.0 (pytorch#184572; the
    # committed conformance listing): known, with the runs that show it as the reason
    assert ("torch_clamp_min0", 0.0) in known.entries
    assert known.entries[("torch_clamp_min0", 0.0)].startswith("measured in C")
    assert known.source.startswith("the conventions dataset of relu-gradient-study ")
    assert ", torch 2.13.0: runs " in known.source
    # the same breaks the checkout's results give for the release
    assert known.entries == committed_known("torch", "2.13.0").entries


@pytest.mark.parametrize("which", ["shipped", "built"])
def test_every_run_in_the_dataset_has_a_label(which, request):
    dataset = request.getfixturevalue(which)
    labels = [r["label"] for r in dataset.runs]
    assert labels and all(isinstance(lab, str) and re.fullmatch(r"[A-Z]+\d+", lab)
                          for lab in labels), labels
    assert len(set(labels)) == len(labels)  # one label names one run


def test_a_placement_dependent_cell_comes_through_the_dataset_as_the_results_hold_it(shipped):
    # the oracle: the report's reading of the run's result tables (experiments.zero_point.atlas,
    # errata applied); the dataset is that run's cells written to Parquet and read back
    stored = {os.path.basename(r.path)[:-len(".json")]: r
              for r in conventions.atlas_runs(results.RESULTS_DIR)}
    placed = 0
    for name in sorted(set(shipped.cells["run"])):
        ops = {(op.rule, op.dtype): op for op in run_atlas(stored[name]).ops
               if op.kind == "builtin"}
        for b in shipped.builtins(name):
            op = ops[(b.rule, b.dtype)]
            assert (b.name, b.framework) == (op.name, op.framework)
            assert b.cells.keys() == {(m, label) for m in op.modes if m not in op.withdrawn
                                      for label in op.inputs}, (name, b.rule, b.dtype)
            for (mode, label), cell in b.cells.items():
                theirs = op.cell(mode, label)
                if isinstance(theirs, Placed):
                    placed += 1
                    assert isinstance(cell, Placed) and cell.where == theirs.where
                assert equal(cell, theirs, zero_sign=True), (name, b.rule, mode, label)
    assert placed  # the committed runs hold placement-dependent cells (hardtanh's at NaN)

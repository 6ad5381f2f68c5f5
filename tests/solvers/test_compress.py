"""The one-call path (compress), the selection registry and the fidelity benchmark driver."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from support.data import needs_data

import benchsel
from benchsel.benchmarks._data import default_data_dir
from benchsel.benchmarks.suites import irt_responses
from benchsel.formulations.core.errors import InvalidInputError
from benchsel.solvers.compression import anchor_kmedoids, register_selection, select_items, selection_names

DATA = default_data_dir()
SST2 = None if DATA is None else Path(DATA) / "responses" / "benchmark_prediction" / "glue_sst2.npz"


@pytest.fixture(scope="module")
def Y():
    Y = irt_responses(50, 90, seed=4)  # rows sorted by score: shuffle, so that rows 40.. are not the best
    return Y[np.random.default_rng(0).permutation(50)]


def test_compress_one_call(Y):
    c = benchsel.compress(Y[:40], k=12, selection="kmedoids", estimator="ridge")
    assert c.items.shape == (12,) and np.all(np.diff(c.items) > 0)
    p = c.predict(Y[40:, c.items])
    assert p.shape == (10,)
    assert np.abs(p - Y[40:].mean(1)).mean() < 0.08
    assert np.allclose(c.predict(c.subset(Y[40:])), p)
    assert c.selection.result.feasible and c.k == 12


def test_compress_default_and_selections(Y):
    c = benchsel.compress(Y[:40], k=10)  # the default selection and estimator
    assert c.estimator.name == "auto" and c.selection.selection == "stratified"
    assert c.selection.weights is not None and c.selection.weights.sum() == pytest.approx(1.0)
    assert np.allclose(c.estimator.params["weights"], c.selection.weights)
    for sel in ("random", "irt-anchor", "kmedoids-highs", "stratified"):
        r = select_items(Y[:30, :40], 4, sel, seed=1, time_limit=20)
        assert r.items.size == 4 and r.result.feasible
    assert {"stratified", "random", "kmedoids", "kmedoids-highs", "irt-anchor"} <= set(selection_names())


def test_compress_dataframe_labels(Y):
    pd = pytest.importorskip("pandas")
    df = pd.DataFrame(Y[:40], columns=[f"q{i}" for i in range(90)])
    c = benchsel.compress(df, k=5, estimator="mean", verbose=False)
    assert list(c.item_labels) == [f"q{i}" for i in c.items]


def test_compress_says_which_axis_is_which(Y, capsys):
    # 90 items x 40 models given transposed: k = 60 cannot be taken from 40 "items"
    with pytest.raises(InvalidInputError, match=r"k: expected 1 <= k < 40.*40 items \(columns\).*pass Y\.T"):
        benchsel.compress(Y[:40].T, k=60)
    with pytest.raises(InvalidInputError, match=r"Y: expected at least 2 models \(rows\)"):
        benchsel.compress(Y[:1], k=3)
    with pytest.raises(InvalidInputError, match="unknown estimator"):
        benchsel.compress(Y[:40], k=3, estimator="nope")
    with pytest.raises(InvalidInputError, match="unknown selection 'nope'; selections: stratified, random"):
        benchsel.compress(Y[:40], k=3, selection="nope")
    c = benchsel.compress(Y[:40], k=4, estimator="mean", verbose=True)
    assert "selection 'stratified'" in capsys.readouterr().err
    with pytest.raises(InvalidInputError, match="looks transposed"):
        c.subset(Y[40:].T)
    more_models = irt_responses(120, 30, seed=1)  # more models than items is fine
    assert benchsel.compress(more_models, k=5, estimator="ridge").items.size == 5


def test_register_selection(Y):
    register_selection("test-first-k-medoids", anchor_kmedoids, "build", description="greedy BUILD medoids")
    r = select_items(Y[:40], 6, "test-first-k-medoids")
    assert r.items.size == 6 and r.result.method == "build"
    with pytest.raises(InvalidInputError, match="name"):
        register_selection("bad:name", anchor_kmedoids, "build")


@needs_data("responses", "benchmark_prediction", "glue_sst2.npz")
def test_fidelity_driver_resumes(tmp_path):
    from benchsel.benchmarks import fidelity

    kw = dict(datasets=["glue_sst2"], protocols=["interpolation", "extrapolation"], ks=[10], splits=2,
              selections=["random", "kmedoids"], estimators=["mean", "ridge"], time_limit=10, jobs=1, progress=False)
    rows = fidelity.run(tmp_path, DATA, **kw)
    assert len(rows) == 2 * 2 * 2 * 2
    assert all(r["mae"] is not None and r["mae"] >= 0 for r in rows)
    assert {r["pipeline"] for r in rows} == {"random+mean", "random+ridge", "kmedoids+mean", "kmedoids+ridge"}
    n_lines = len((tmp_path / fidelity.JSONL).read_text().splitlines())
    again = fidelity.run(tmp_path, DATA, **kw)  # resumed: nothing new runs
    assert len(again) == len(rows) and len((tmp_path / fidelity.JSONL).read_text().splitlines()) == n_lines
    text, written = fidelity.report(rows, tmp_path)
    assert "random+ridge" in text and written and written[0].suffix == ".png"
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert all(s["splits"] == 2 for s in summary)
    _, tgt = fidelity.split_models(np.arange(20.0)[:, None] * np.ones((1, 3)), "extrapolation", 0)
    assert list(tgt) == [15, 16, 17, 18, 19]


@needs_data("responses", "benchmark_prediction", "glue_sst2.npz")
def test_benchsel_run_fidelity(tmp_path, monkeypatch, capsys):
    from benchsel.benchmarks import fidelity
    from benchsel.benchmarks.cli import main

    monkeypatch.setattr(fidelity, "KS", (10,))
    monkeypatch.setattr(fidelity, "DEFAULT_ESTIMATORS", ("mean", "repcore-ridge"))
    rc = main(["run", "fidelity", "--instances", "glue*", "--methods", "random", "--seeds", "2", "--out",
               str(tmp_path), "--no-progress"])
    out = capsys.readouterr()
    assert rc == 0, out.err
    assert "random+repcore-ridge" in out.out
    assert (tmp_path / "fidelity_glue_sst2.png").is_file()
    rc = main(["run", "fidelity", "--instances", "nope*", "--out", str(tmp_path)])
    assert rc == 2 and "no dataset matches" in capsys.readouterr().err


def test_compress_refuses_scores_beyond_the_float_range_of_their_squares():
    """compress on scores near 1e300: a numpy argmax error or NaN estimates; now a named error."""
    Y = np.random.default_rng(0).random((10, 30))
    for scale, match in ((1e300, r"^Y: expected values whose magnitude stays below 1e\+75"),
                         (1e-300, r"^Y: expected scores whose largest magnitude is 0 or at least 1e-75")):
        for selection in ("kmedoids", "random"):
            with pytest.raises(InvalidInputError, match=match):
                benchsel.compress(Y * scale, 5, selection=selection, estimator="ridge", time_limit=10)


# ------------------------------------------------------------ issue 30: intervals and labels end to end
def test_contract_arrays_estimates_and_intervals(Y):
    c = benchsel.compress(Y[:40], 12, seed=3)
    p = c.predict(Y[40:][:, c.items])
    lo, hi = c.predict_interval(Y[40:][:, c.items], alpha=0.1)
    assert isinstance(p, np.ndarray) and p.shape == lo.shape == hi.shape == (10,)
    assert np.all(lo <= p) and np.all(p <= hi) and np.all(lo >= 0) and np.all(hi <= 1)
    assert set(c.route(Y[40:][:, c.items])) <= {"stacked", "model-assisted"}
    again = benchsel.compress(Y[:40], 12, seed=3)
    assert np.array_equal(again.items, c.items) and np.array_equal(again.predict(Y[40:][:, c.items]), p)
    with pytest.raises(InvalidInputError, match=r"^alpha: expected a miscoverage level 0 < alpha < 1"):
        c.predict_interval(Y[40:][:, c.items], alpha=1.0)
    with pytest.raises(InvalidInputError, match=r"^Y_target: expected shape \(targets, 12\).*got shape \(10, 11\)"):
        c.predict(Y[40:][:, c.items[:11]])


def test_labels_end_to_end(Y):
    pd = pytest.importorskip("pandas")
    cols = [f"q{i}" for i in range(90)]
    df = pd.DataFrame(Y[:40], columns=cols, index=[f"old{i}" for i in range(40)])
    new = pd.DataFrame(Y[40:], columns=cols, index=[f"new{i}" for i in range(10)])
    c = benchsel.compress(df, 10, seed=1)
    sub = c.subset(new)
    assert list(sub.columns) == list(c.item_labels) and list(sub.index) == list(new.index)
    est = c.predict(sub)
    assert isinstance(est, pd.Series) and list(est.index) == list(new.index)
    shuffled = sub[list(sub.columns[::-1])]  # columns in another order: matched by label
    assert np.array_equal(c.predict(shuffled).to_numpy(), est.to_numpy())
    assert np.array_equal(est.to_numpy(), c.predict(Y[40:][:, c.items]))
    lo, hi = c.predict_interval(shuffled)
    assert list(lo.index) == list(new.index) and (lo <= est).all() and (est <= hi).all()
    assert list(c.route(sub).index) == list(new.index)
    first = c.item_labels[0]
    with pytest.raises(InvalidInputError, match=rf"^Y_items: .*missing 1 selected item label\(s\): '{first}'"):
        c.predict(sub.drop(columns=[c.item_labels[0]]))
    with pytest.raises(InvalidInputError, match=r"^Y_items: .*1 label\(s\) that are not selected items: 'extra'"):
        c.predict(sub.assign(extra=0.0))
    with pytest.raises(InvalidInputError, match=r"Y_items: .*c\.subset\(Y_full\)"):
        c.predict(new)  # the whole benchmark: every other column is extra
    with pytest.raises(InvalidInputError, match=r"^Y: expected columns for every selected item label, missing 1"):
        c.subset(new.drop(columns=[c.item_labels[3]]))


def test_kmedoids_selection_that_would_not_fit_is_refused_by_name(Y, monkeypatch):
    """Issue 32: no dense N x N matrix when it would not fit; the default selection builds none."""
    import benchsel.solvers.selections as comp

    monkeypatch.setattr(comp, "available_bytes", lambda: 100_000)  # 100 kB available
    with pytest.raises(InvalidInputError, match=r"^selection: 'kmedoids' builds a dense 90 x 90 dissimilarity .*"
                                                r"use selection='stratified'"):
        benchsel.compress(Y[:40], 5, selection="kmedoids")
    c = benchsel.compress(Y[:40], 5)  # stratified: O(models x items) memory
    assert c.k == 5


@needs_data("responses", "psn_irt", "opencompass_11bench.npz")
def test_the_whole_opencompass_matrix_compresses_without_an_n_by_n_matrix():
    """Issue 32: 12 x 41 871 items; the default selection is a sampling design (stated in the result)."""
    Y = np.load(Path(DATA) / "responses" / "psn_irt" / "opencompass_11bench.npz")["Y"].astype(float)
    c = benchsel.compress(Y, 100, seed=0)
    assert c.k == 100 and c.n_items == 41_871
    assert c.selection.result.formulation == "sampling design" and c.selection.result.termination == "converged"
    lo, hi = c.predict_interval(Y[:, c.items])
    truth = Y.mean(axis=1)
    assert np.mean((lo <= truth) & (truth <= hi)) >= 0.5  # the sources themselves, 12 models


def test_paper_extrapolation_split():
    from benchsel.benchmarks import fidelity

    Y = np.arange(20.0)[::-1, None] * np.ones((1, 3))  # model 19 weakest, model 0 strongest
    src, tgt = fidelity.split_models(Y, "paper-extrapolation", 3)
    assert list(src) == list(range(10, 20)) and list(tgt) == list(range(0, 6))  # weakest 50 %, strongest 30 %
    with pytest.raises(InvalidInputError, match="protocols: expected one of interpolation, extrapolation, "
                                                "paper-extrapolation"):
        fidelity.split_models(Y, "nope", 0)


@needs_data("responses", "benchmark_prediction", "glue_rte.npz")
def test_fidelity_pipelines_pass_the_design_weights_and_report_coverage(tmp_path):
    from benchsel.benchmarks import fidelity

    rows = fidelity.run(tmp_path, DATA, datasets=["glue_rte"], protocols=["paper-extrapolation"], ks=[25], splits=2,
                        pipelines=["stratified+auto", "random+mean"], jobs=1, progress=False)
    assert {r["pipeline"] for r in rows} == {"stratified+auto", "random+mean"} and len(rows) == 4
    assert all(0.0 <= r["coverage"] <= 1.0 and r["width"] > 0 for r in rows)
    auto = [r for r in rows if r["pipeline"] == "stratified+auto"]
    assert all(r["share_model_assisted"] > 0.5 for r in auto)  # the strongest models: beyond the sources' range
    text = fidelity.acceptance_text(fidelity.summarise(rows))
    assert "| stratified+auto |" in text and "paper-extrapolation: 1 cells" in text
    with pytest.raises(InvalidInputError, match="pipelines: expected 'selection\\+estimator'"):
        fidelity.run(tmp_path, DATA, datasets=["glue_rte"], pipelines=["auto"], progress=False)
    plain = fidelity.run(tmp_path, DATA, datasets=["glue_rte"], protocols=["paper-extrapolation"], ks=[25],
                         splits=1, pipelines=["stratified:draws=1+auto"], jobs=1, progress=False)
    assert [r["selection"] for r in plain] == ["stratified:draws=1"] and plain[0]["mae"] > 0


def test_relative_change_interval_is_paired_over_splits():
    from benchsel.benchmarks import fidelity

    rows = [{"dataset": d, "protocol": "p", "k": 10, "split": sp, "pipeline": pipe, "mae": mae}
            for d in ("a", "b") for sp in range(4)
            for pipe, mae in (("stratified+auto", 2.0 + sp), ("random+mean", 4.0 + 2 * sp))]
    change, lo, hi = fidelity.relative_change_interval(rows, "p")
    assert change == pytest.approx(100 * (3.5 / 7.0 - 1))  # -50 %: every split halves
    assert lo == pytest.approx(-50.0) and hi == pytest.approx(-50.0)  # paired: no spread
    assert fidelity.relative_change_interval(rows[:-1], "p") is None  # a split missing in one cell
    assert fidelity.relative_change_interval(rows, "other") is None


def test_a_sampling_design_selection(Y):
    with pytest.raises(InvalidInputError, match=r"^draw: expected a callable draw"):
        register_selection("test-bad-draw", None, "x", draw=3)
    with pytest.raises(InvalidInputError, match=r"^options: selection 'stratified' takes the options draws; got n_"):
        select_items(Y[:40], 5, "stratified", n_restarts=3)
    from benchsel.solvers import selections

    register_selection("test-first-k", None, "first-k", draw=lambda Y, k, seed: (np.arange(k), None))
    try:
        with pytest.raises(InvalidInputError, match=r"^options: selection 'test-first-k' is a sampling design and "
                                                    r"takes no options, got draws"):
            select_items(Y[:40], 5, "test-first-k", draws=3)
        assert np.array_equal(select_items(Y[:40], 5, "test-first-k").items, np.arange(5))
    finally:
        selections.SELECTIONS.unregister("test-first-k")
    r = select_items(Y[:40], 7, "stratified", seed=2)
    assert r.items.size == 7 and np.all(np.diff(r.items) > 0) and r.weights.sum() == pytest.approx(1.0)
    assert r.result.termination == "converged" and r.result.formulation == "sampling design"


def test_subset_and_predict_take_one_new_model():
    rng = np.random.default_rng(0)
    Y = (rng.random((30, 100)) < 0.6).astype(float)
    c = benchsel.compress(Y[:25], 10, seed=0)
    one = c.subset(Y[25:26])
    assert one.shape == (1, 10) and np.array_equal(one[0], Y[25, c.items])
    assert np.array_equal(c.subset(Y[25]), Y[25, c.items])
    assert np.allclose(c.predict(c.subset(Y[25:26])), c.predict(Y[25:26, c.items]))
    with pytest.raises(InvalidInputError, match="Y: expected 100 items"):
        c.subset(Y[25:26, :50])

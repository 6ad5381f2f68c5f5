"""Compressed.save / load_compressed: the JSON + npz format, the deterministic refit, refusals by name."""
from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

import benchsel
from benchsel.benchmarks.suites import irt_responses
from benchsel.formulations.core.errors import InvalidInputError
from benchsel.formulations.estimation import estimator_names
from benchsel.instances.hidden import make_hidden_states
from benchsel.solvers.compression import load_compressed
from benchsel.solvers.saved import (
    FORMAT,
    VERSION,
    align_scores,
    estimate_table,
    fingerprint_scores,
    save_compressed,
    save_digest,
)
from benchsel.solvers.selections import get_selection, selection_names


def resign(folder, meta=None, arrays=None):
    """Write ``meta`` / ``arrays`` into a saved compression with a matching digest (as a later benchsel would)."""
    p = folder / "compression.json"
    meta = json.loads(p.read_text()) if meta is None else meta
    if arrays is None:
        arrays = dict(np.load(folder / "arrays.npz", allow_pickle=False))
    np.savez_compressed(folder / "arrays.npz", **arrays)
    meta["digest"] = save_digest(meta, arrays)
    p.write_text(json.dumps(meta))


@pytest.fixture(scope="module")
def Y():
    Y = irt_responses(46, 70, seed=2)
    return Y[np.random.default_rng(1).permutation(46)]


@pytest.fixture(scope="module")
def frame(Y):
    return pd.DataFrame(Y[:36], index=[f"org/m{i}" for i in range(36)], columns=[f"task/{j}" for j in range(70)])


@pytest.mark.parametrize("estimator", estimator_names())  # every registered estimator
def test_round_trip_predicts_identically(Y, frame, tmp_path, estimator):
    c = benchsel.compress(frame, k=9, estimator=estimator, seed=3)
    path = c.save(tmp_path / "c")
    c2 = load_compressed(path)
    assert np.array_equal(c2.items, c.items) and c2.n_items == 70 and c2.k == 9
    assert list(c2.item_labels) == list(c.item_labels)
    assert c2.estimator.name == estimator and c2.selection.selection == "stratified"
    new = Y[36:, c.items]
    assert np.array_equal(c2.estimator.predict(new), c.estimator.predict(new))
    assert np.array_equal(c2.predict_interval(new)[0], c.predict_interval(new)[0])
    if estimator in ("auto", "model-assisted"):  # the design weights went to the estimator and came back
        assert np.array_equal(c2.estimator.params["weights"], c.selection.weights)
    # saved again from the loaded one: the same content (but the time stamps)
    c2.save(tmp_path / "again")
    a, b = (json.loads((p / "compression.json").read_text()) for p in (tmp_path / "c", tmp_path / "again"))
    for d in (a, b):
        d.pop("created"), d.pop("digest")  # the digest covers the time stamps
        d["selection"].pop("seconds")
        d["selection"]["result"] = {k: v for k, v in d["selection"]["result"].items() if "seconds" not in k}
    assert a == b


def _selection_input(name, Y):
    """Source scores and options each registered selection takes (3-D scores, hidden states)."""
    if get_selection(name).ndim == 3:
        rng = np.random.default_rng(0)
        P = 1 / (1 + np.exp(-(rng.normal(size=(24, 1, 1)) - rng.normal(size=(1, 60, 3)))))
        return (rng.random(P.shape) < P).astype(float), {}
    if name == "repcore":
        hs = make_hidden_states(n_items=70, n_models=6, n_targets=2, widths=16, seed=1)
        return hs.Y[:6], {"hidden_states": hs.hidden_states, "epochs": 5}
    return Y[:36], {}


@pytest.mark.parametrize("selection", selection_names())  # every registered selection
def test_round_trip_of_every_selection(Y, tmp_path, selection):
    src, opts = _selection_input(selection, Y)
    c = benchsel.compress(src, k=6, selection=selection, seed=2, selection_options=opts, time_limit=20.0)
    c2 = load_compressed(c.save(tmp_path / "c"))
    assert np.array_equal(c2.items, c.items) and c2.selection.selection == selection
    assert c2.estimator.name == c.estimator.name
    new = c.subset(src) if src.ndim == 3 else src[:, c.items]
    assert np.array_equal(c2.predict(new), c.predict(new))


def test_the_json_carries_what_the_format_promises(frame, tmp_path):
    c = benchsel.compress(frame, k=6, estimator="stacked", seed=4, selection="random")
    c.save(tmp_path / "c")
    meta = json.loads((tmp_path / "c" / "compression.json").read_text())
    assert meta["format"] == FORMAT and meta["version"] == VERSION == 1
    assert meta["items"] == c.items.tolist() and meta["item_labels"] == list(c.item_labels)
    assert meta["seed"] == 4 and meta["k"] == 6 and meta["n_items"] == 70
    src = meta["source"]
    assert src["model_labels"] == list(frame.index) and src["item_labels"] == list(frame.columns)
    assert src["fingerprint"] == fingerprint_scores(frame.to_numpy(float)) and src["fingerprint"].startswith("sha256:")
    assert meta["selection"]["name"] == "random" and meta["selection"]["method"] == "random"
    est = meta["estimator"]
    assert est["name"] == "stacked" and est["params"]["seed"] == 0 and est["params"]["folds"] == 5
    assert est["params"]["members"]["tuple"][1] == {"tuple": ["irt", {"dict": {"variant": "p-irt"}}]}
    z = np.load(tmp_path / "c" / "arrays.npz", allow_pickle=False)
    assert z["source_scores"].shape == (36, 70) and z["source_predictions"].shape == (36,)


def test_array_parameters_and_a_plain_array(Y, tmp_path):
    w = np.linspace(1, 2, 70)
    c = benchsel.compress(Y[:36], k=5, estimator="cluster-weighted", estimator_options={"item_weights": w})
    c.save(tmp_path / "c")
    c2 = load_compressed(tmp_path / "c")
    assert np.array_equal(c2.estimator.params["item_weights"], w) and c2.item_labels is None
    meta = json.loads((tmp_path / "c" / "compression.json").read_text())
    assert meta["estimator"]["params"]["item_weights"] == {"array": "param:0"}
    assert meta["source"]["model_labels"] is None
    assert np.allclose(c2.estimator.predict(Y[36:, c.items]), c.estimator.predict(Y[36:, c.items]))


def test_refuses_another_version_or_format_by_name(frame, tmp_path):
    c = benchsel.compress(frame, k=4, estimator="ridge")
    c.save(tmp_path / "c")
    p = tmp_path / "c" / "compression.json"
    meta = json.loads(p.read_text())
    p.write_text(json.dumps({**meta, "version": 2}))
    with pytest.raises(InvalidInputError, match=r"format version 2 .*reads version 1 only; upgrade benchsel"):
        load_compressed(tmp_path / "c")
    p.write_text(json.dumps({**meta, "format": "benchsel-instance"}))
    with pytest.raises(InvalidInputError, match=r"is not a saved benchsel compression .*'benchsel-instance'"):
        load_compressed(tmp_path / "c")
    p.write_text("{")
    with pytest.raises(InvalidInputError, match="cannot read"):
        load_compressed(tmp_path / "c")
    with pytest.raises(InvalidInputError, match="no saved compression at"):
        load_compressed(tmp_path / "nope")
    (tmp_path / "empty").mkdir()
    with pytest.raises(InvalidInputError, match=r"has no compression\.json"):
        load_compressed(tmp_path / "empty")


def test_refit_checked_against_the_stored_estimates(frame, tmp_path):
    c = benchsel.compress(frame, k=5, estimator="ridge")
    c.save(tmp_path / "c")
    arrays = tmp_path / "c" / "arrays.npz"
    z = dict(np.load(arrays, allow_pickle=False))
    z["source_predictions"] = z["source_predictions"] + 1e-3
    np.savez_compressed(arrays, **z)
    with pytest.raises(InvalidInputError, match=r"field \$\.digest: the saved compression does not match"):
        load_compressed(tmp_path / "c")
    resign(tmp_path / "c", arrays=z)  # the same arrays under a matching digest: as if the estimator changed
    with pytest.raises(InvalidInputError, match=r"does not reproduce the saved estimates .*largest difference "
                                                r"0.001 > 1e-06.*check=False"):
        load_compressed(tmp_path / "c")
    assert load_compressed(tmp_path / "c", check=False).estimator.name == "ridge"
    z["source_scores"][0, 0] = 1 - z["source_scores"][0, 0]
    resign(tmp_path / "c", arrays=z)
    with pytest.raises(InvalidInputError, match="do not match the fingerprint"):
        load_compressed(tmp_path / "c")
    arrays.write_bytes(b"PK\x03\x04 truncated")
    with pytest.raises(InvalidInputError, match="cannot read"):
        load_compressed(tmp_path / "c")


def test_save_refuses_without_source_or_after_the_source_changed(Y, tmp_path):
    A = Y[:36].copy()
    c = benchsel.compress(A, k=4, estimator="mean")
    A[0, 0] = 1 - A[0, 0]
    with pytest.raises(InvalidInputError, match="changed in place"):
        c.save(tmp_path / "c")
    c.source = None
    with pytest.raises(InvalidInputError, match="does not carry its source scores"):
        save_compressed(c, tmp_path / "c")
    (tmp_path / "f").write_text("")
    c2 = benchsel.compress(Y[:36], k=4, estimator="mean")
    with pytest.raises(InvalidInputError, match="is a file; a saved compression is a folder"):
        c2.save(tmp_path / "f")


def test_new_scores_matched_by_label(Y, frame, tmp_path):
    c = benchsel.compress(frame, k=7, estimator="bayes-aipw")
    c.save(tmp_path / "c")
    c2 = load_compressed(tmp_path / "c")
    full = pd.DataFrame(Y[36:], index=[f"new{i}" for i in range(10)], columns=frame.columns)
    only = full[list(c.item_labels)[::-1]]  # the saved items only, in another order
    X, models = align_scores(c2, only)
    assert np.array_equal(X, Y[36:, c.items]) and models == list(full.index)
    t = estimate_table(c2, full, alpha=0.05)
    assert list(t.columns) == ["estimate", "low", "high", "interval", "method"]
    assert np.allclose(t["estimate"], c.estimator.predict(Y[36:, c.items]))
    assert (t["low"] <= t["estimate"]).all() and (t["estimate"] <= t["high"]).all()
    assert t["interval"].iloc[0] == "95% (bayes-aipw)"
    with pytest.raises(InvalidInputError, match=r"scores: 1 of the 7 items of the compression are not among the new "
                                                rf"scores' 6 columns \(missing e.g. '{c.item_labels[2]}'"):
        align_scores(c2, only.drop(columns=[c.item_labels[2]]))
    gap = only.copy()
    gap.iloc[3, 1] = np.nan
    with pytest.raises(InvalidInputError, match=r"1 scores on the selected items are missing .*model 'new3', item"):
        align_scores(c2, gap)


def test_new_scores_as_arrays_and_the_interval_said_in_a_column(Y, tmp_path):
    c = benchsel.compress(Y[:36], k=6, estimator="ridge")
    X, models = align_scores(c, Y[36:])  # the full benchmark
    assert np.array_equal(X, Y[36:, c.items]) and models == list(range(10))
    assert np.array_equal(align_scores(c, Y[36:, c.items])[0], X)
    with pytest.raises(InvalidInputError, match=r"expected one row per new model and 6 columns .*or 70 .*got shape "
                                                r"\(10, 5\)"):
        align_scores(c, Y[36:, :5])
    t = estimate_table(c, Y[36:, c.items])  # ridge: split-conformal intervals from held-out sources
    lo, hi = c.predict_interval(Y[36:, c.items])
    assert np.array_equal(t["low"], lo) and np.array_equal(t["high"], hi)
    assert t["interval"].iloc[0] == "90% (ridge)" and (t["method"] == "ridge").all()


# ------------------------------------------------------------ options added after a save was written
def _strip_option(folder, drop):
    """Rewrite a save as an older benchsel wrote it: without the option, digest recomputed."""
    import json

    from benchsel.solvers.saved import ARRAYS, META, save_digest

    meta = json.loads((folder / META).read_text())
    drop(meta["estimator"]["params"])
    with np.load(folder / ARRAYS, allow_pickle=False) as z:
        arrays = {k: z[k] for k in z.files}
    meta["digest"] = save_digest(meta, arrays)
    (folder / META).write_text(json.dumps(meta))


@pytest.mark.parametrize("tasks", [None, "suite"])
def test_a_save_without_the_sure_option_keeps_its_intervals(tmp_path, tasks):
    """``sure`` (the sure end) came after saves of this format: a save that lacks it loads without it, so its
    intervals are those it had; a new save writes it out (a suite's inner option too) and keeps it on."""
    from benchsel import compress, load_compressed

    rng = np.random.default_rng(0)
    Y = (rng.random((40, 120)) < np.linspace(0.2, 0.9, 40)[:, None]).astype(float)
    t = None if tasks is None else ["a"] * 60 + ["b"] * 60
    c = compress(Y, 20, seed=0, tasks=t)
    c.save(tmp_path / "new")
    new = load_compressed(tmp_path / "new")
    X = np.vstack([np.ones(20), Y[:3][:, c.items]])
    np.testing.assert_allclose(new.predict_interval(X), c.predict_interval(X))
    if tasks is None:
        assert new.estimator.get_params()["sure"] is True
        _strip_option(tmp_path / "new", lambda p: p.pop("sure"))
        assert load_compressed(tmp_path / "new").estimator.get_params()["sure"] is False
    else:
        assert new.estimator.get_params()["estimator_options"]["sure"] is True
        _strip_option(tmp_path / "new", lambda p: p["estimator_options"]["dict"].pop("sure"))  # encoded mapping
        old = load_compressed(tmp_path / "new")
        assert old.estimator.get_params()["estimator_options"]["sure"] is False
    off = compress(Y, 20, seed=0, tasks=t, estimator_options={"sure": False})
    got = load_compressed(tmp_path / "new").predict_interval(X)
    np.testing.assert_allclose(got, off.predict_interval(X))

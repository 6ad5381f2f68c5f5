"""RepCore: alignment (gradients, contract, reproducibility), spherical k-means / k-means on KMedoids,
hidden-state files and the synthetic generator, bad input."""
from __future__ import annotations

import zipfile

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import benchsel.formulations.repcore as rc
from benchsel import KMedoids, solve
from benchsel.formulations.repcore import RepCoreAligner, align_hidden_states, roc_auc
from benchsel.heuristics.repcore import _Geometry, anchors_of, lloyd
from benchsel.instances import HiddenStates, load_hidden_states, make_hidden_states, save_hidden_states
from benchsel.solvers import InvalidInputError, MethodNotApplicableError, available_methods
from benchsel.solvers.conformance import check_method


@pytest.fixture(scope="module")
def small():
    return make_hidden_states(n_items=240, n_models=4, n_targets=6, widths=(12, 20, 8, 16), n_groups=4, seed=3)


def _fast(**kw):
    return dict(epochs=kw.pop("epochs", 15), batch_size=64, **kw)


# ----------------------------------------------------------------- gradients
def test_gradient_matches_finite_differences(monkeypatch):
    monkeypatch.setattr(rc, "_DTYPE", np.float64)
    rng = np.random.default_rng(0)
    X = [rng.normal(size=(7, 5)), rng.normal(size=(7, 3))]
    y = rng.integers(0, 2, size=14).astype(float)
    for act in ("relu", "tanh", "leaky_relu"):
        net = rc._Net([5, 3], [5, 3], [6, 4, 3], np.random.default_rng(1), act)
        for p in net.params:  # non-zero biases so every term is exercised
            p += 0.1 * rng.normal(size=p.shape)
        _, grads = net.loss_grad(X, y)
        for j, p in enumerate(net.params):
            flat = p.reshape(-1)
            for t in rng.choice(flat.size, size=min(4, flat.size), replace=False):
                old = flat[t]
                flat[t] = old + 1e-6
                up, _ = net.loss_grad(X, y)
                flat[t] = old - 1e-6
                down, _ = net.loss_grad(X, y)
                flat[t] = old
                num = (up - down) / 2e-6
                assert grads[j].reshape(-1)[t] == pytest.approx(num, rel=1e-4, abs=1e-7), (act, j, t)


def test_roc_auc_matches_pair_counting():
    rng = np.random.default_rng(0)
    s = rng.integers(0, 5, size=40).astype(float)  # ties on purpose
    y = rng.integers(0, 2, size=40)
    pos, neg = s[y == 1], s[y == 0]
    pairs = (pos[:, None] > neg[None, :]).mean() + 0.5 * (pos[:, None] == neg[None, :]).mean()
    assert roc_auc(s, y) == pytest.approx(pairs)
    assert np.isnan(roc_auc(s, np.ones(40)))


# ------------------------------------------------------------------ contract
def test_contract_unit_rows_and_reproducible(small):
    E1 = align_hidden_states(small.hidden_states, small.Y[:4], dim=32, seed=0, epochs=10)
    E2 = align_hidden_states(small.hidden_states, small.Y[:4], dim=32, seed=0, epochs=10)
    E3 = align_hidden_states(small.hidden_states, small.Y[:4], dim=32, seed=1, epochs=10)
    assert E1.shape == (240, 32)
    np.testing.assert_allclose(np.linalg.norm(E1, axis=1), 1.0, atol=1e-12)
    assert np.array_equal(E1, E2)
    assert not np.allclose(E1, E3)


def test_fit_attributes(small):
    al = RepCoreAligner(8, **_fast(hidden=(16,))).fit(small.hidden_states, small.Y[:4])
    assert [P.shape for P in al.projections_] == [(12, 20), (20, 20), (8, 20), (16, 20)]  # width = max d_m
    assert [W.shape for W, _ in al.layers_] == [(20, 16), (16, 8)]
    assert al.head_[0].shape == (8,)
    sizes = {k: v.size for k, v in al.split_.items()}
    assert sizes == {"train": 168, "val": 24, "test": 48}
    allidx = np.concatenate(list(al.split_.values()))
    assert np.array_equal(np.sort(allidx), np.arange(240))
    h = al.history_
    assert h.epoch.size == al.n_epochs_ == h.val_loss.size and 1 <= al.best_epoch_ <= al.n_epochs_
    assert al.best_epoch_ == int(h.epoch[np.argmin(h.val_loss)])
    assert 0.0 <= al.test_auc_ <= 1.0 and al.test_auc_per_model_.shape == (4,)
    assert al.stopped_ in ("early_stopping", "max_epochs")
    assert set(h.as_dict()) == {"epoch", "train_loss", "val_loss", "val_auc", "seconds"}
    P = al.predict_proba(small.hidden_states)
    assert P.shape == (4, 240) and np.all((P > 0) & (P < 1))


def test_transform_is_per_item_and_matches_fit(small):
    al = RepCoreAligner(16, **_fast()).fit(small.hidden_states, small.Y[:4])
    np.testing.assert_allclose(al.transform(small.hidden_states), al.embedding_, atol=1e-6)
    part = [h[50:60] for h in small.hidden_states]
    np.testing.assert_allclose(al.transform(part), al.embedding_[50:60], atol=1e-6)
    Z = al.embeddings(small.hidden_states)
    assert Z.shape == (4, 240, 16)
    e = Z.mean(axis=0)
    np.testing.assert_allclose(e / np.linalg.norm(e, axis=1, keepdims=True), al.embedding_, atol=1e-6)


def test_wide_states_train_in_their_row_space():
    """d_m > N: the fit works on the thin SVD; the full projections reproduce its embedding."""
    hs = make_hidden_states(n_items=60, n_models=2, widths=(150, 40), seed=5)
    al = RepCoreAligner(4, **_fast(hidden=(8,))).fit(hs.hidden_states, hs.Y)
    assert al.projections_[0].shape == (150, 150)
    np.testing.assert_allclose(al.transform(hs.hidden_states), al.embedding_, atol=1e-5)


def test_no_validation_split_runs_every_epoch(small):
    al = RepCoreAligner(4, epochs=3, split=(0.8, 0.0, 0.2)).fit(small.hidden_states, small.Y[:4])
    assert al.n_epochs_ == 3 and al.stopped_ == "max_epochs" and np.isnan(al.history_.val_loss).all()


def test_time_limit_keeps_best_epoch(small):
    al = RepCoreAligner(4, epochs=10_000, patience=10_000, time_limit=0.3).fit(small.hidden_states, small.Y[:4])
    assert al.stopped_ == "time_limit" and al.fit_seconds_ < 5.0
    assert al.embedding_.shape == (240, 4)


def test_verbose_progress(small, capsys):
    RepCoreAligner(4, epochs=2, verbose=True).fit(small.hidden_states, small.Y[:4])
    err = capsys.readouterr().err
    assert "repcore alignment epoch 1" in err and "test AUC" in err


def test_three_d_array_and_integer_states_accepted():
    rng = np.random.default_rng(0)
    H = rng.integers(-3, 4, size=(3, 30, 5))
    Y = rng.integers(0, 2, size=(3, 30))
    E = align_hidden_states(H, Y, dim=3, epochs=2)
    assert E.shape == (30, 3)


def test_huge_and_tiny_states_are_standardised_without_overflow():
    H, Y = _hs()
    E = align_hidden_states(H, Y, dim=3, epochs=3)
    for scale in (1e300, 1e-300):
        np.testing.assert_allclose(align_hidden_states([h * scale for h in H], Y, dim=3, epochs=3), E, atol=1e-9)


# ------------------------------------------------------------------ bad input
def _hs(n=20, widths=(4, 6), seed=0):
    rng = np.random.default_rng(seed)
    return [rng.normal(size=(n, w)) for w in widths], rng.integers(0, 2, size=(len(widths), n))


@pytest.mark.parametrize("mutate,match", [
    (lambda H, Y: ([H[0], H[1][:-1]], Y), r"hidden_states\[1\]: expected 20 items"),
    (lambda H, Y: ([H[0], np.where(np.eye(20, 6, dtype=bool), np.nan, H[1])], Y),
     r"hidden_states\[1\]: expected finite values, got 6 non-finite \(NaN\)"),
    (lambda H, Y: ([np.full((20, 4), np.inf), H[1]], Y), r"hidden_states\[0\]: expected finite values.*infinite"),
    (lambda H, Y: ([H[0], np.zeros((20, 0))], Y), r"hidden_states\[1\]: expected a width d_m >= 1.*zero width"),
    (lambda H, Y: (H, Y[:1]), r"Y_source: expected one row per source model \(2 arrays"),
    (lambda H, Y: ([H[0]], Y), r"Y_source: expected one row per source model \(1 arrays"),
    (lambda H, Y: (H, Y[:, :-1]), r"Y_source: expected one column per item \(20"),
    (lambda H, Y: (H, Y * 0.5), r"Y_source: expected binary correctness \(0 or 1\) for the cross-entropy"),
    (lambda H, Y: (H, np.where(Y > 0, np.nan, 0.0)), r"Y_source: expected finite values"),
    (lambda H, Y: ([], Y), r"hidden_states: expected at least one source model"),
    (lambda H, Y: (H[0], Y), r"hidden_states: expected a list of arrays"),
    (lambda H, Y: ([H[0], H[1][:, :, None]], Y), r"hidden_states\[1\]: expected an array of shape \(N, d_m\)"),
    (lambda H, Y: ([H[0], np.array([["a"] * 6] * 20)], Y), r"hidden_states\[1\]: expected"),
])
def test_bad_inputs_name_the_argument(mutate, match):
    H, Y = mutate(*_hs())
    with pytest.raises(InvalidInputError, match=match):
        align_hidden_states(H, Y, epochs=1)


@pytest.mark.parametrize("kw,match", [
    ({"dim": 0}, r"dim: expected an integer >= 1, got 0"),
    ({"dim": 2.5}, r"dim: expected an integer"),
    ({"dim": True}, r"dim: expected an integer"),
    ({"width": 0}, r"width: expected an integer >= 1"),
    ({"hidden": (8, 0)}, r"hidden\[1\]: expected an integer >= 1"),
    ({"hidden": "8"}, r"hidden: expected a sequence"),
    ({"lr": 0.0}, r"lr: expected 0.0 < lr"),
    ({"split": (0.5, 0.5)}, r"split: expected shape \(3,\)"),
    ({"split": (0.5, 0.1, 0.1)}, r"split: expected \(train, validation, test\) shares summing to 1"),
    ({"activation": "sigmoid"}, r"activation: expected one of 'relu'"),
    ({"time_limit": 0}, r"time_limit: expected 0.0 < time_limit"),
    ({"threads": 0}, r"threads: expected an integer >= 1"),
    ({"seed": -1}, r"seed: expected a non-negative int"),
    ({"verbose": 1}, r"verbose: expected true or false"),
])
def test_bad_parameters(kw, match):
    with pytest.raises(InvalidInputError, match=match):
        RepCoreAligner(**kw)


def test_unknown_option_and_transform_checks():
    H, Y = _hs()
    with pytest.raises(InvalidInputError, match=r"depth: unknown option of align_hidden_states"):
        align_hidden_states(H, Y, depth=3)
    al = RepCoreAligner(2, epochs=1)
    with pytest.raises(InvalidInputError, match=r"call fit"):
        al.transform(H)
    al.fit(H, Y)
    with pytest.raises(InvalidInputError, match=r"hidden_states: expected 2 arrays"):
        al.transform(H[:1])
    with pytest.raises(InvalidInputError, match=r"hidden_states\[1\]: expected width 6 \(as fitted\)"):
        al.transform([H[0], H[0]])
    with pytest.raises(InvalidInputError, match=r"too few for the split"):
        RepCoreAligner(2, split=(0.02, 0.49, 0.49)).fit([h[:4] for h in H], Y[:, :4])


# ------------------------------------------------------------ spherical k-means
def _unit(X):
    return X / np.linalg.norm(X, axis=1, keepdims=True)


def test_spherical_kmeans_contract(small):
    E = align_hidden_states(small.hidden_states, small.Y[:4], dim=32, seed=0, epochs=5)
    res = solve(KMedoids.from_features(E, k=30, metric="cosine"), "spherical-kmeans", seed=0)
    assert res.feasible and res.selection.size == 30 and np.unique(res.selection).size == 30
    again = solve(KMedoids.from_features(E, k=30, metric="cosine"), "spherical-kmeans", seed=0)
    assert np.array_equal(res.selection, again.selection)
    assert res.extra["restarts"] == 10 and res.extra["within_cosine"] <= 240 + 1e-9


def test_spherical_kmeans_matches_feature_space_computation():
    rng = np.random.default_rng(4)
    X = _unit(rng.normal(size=(60, 5)))
    w = rng.uniform(0.5, 2.0, size=60)
    f = KMedoids.from_features(X, 4, metric="cosine", weights=w)
    geo = _Geometry(f, "spherical")
    labels, obj, _, early = lloyd(geo, 4, np.array([0, 1, 2, 3]))
    assert not early
    sums = np.stack([(w[labels == c, None] * X[labels == c]).sum(axis=0) for c in range(4)])
    mu = _unit(sums)
    cos = X @ mu.T
    assert obj == pytest.approx(float((w * cos[np.arange(60), labels]).sum()))
    assert np.array_equal(labels, np.argmax(cos, axis=1))  # a fixed point of the Lloyd step
    anchors = anchors_of(geo, labels, 4, np.arange(60))
    for c in range(4):
        members = np.flatnonzero(labels == c)
        assert anchors[c] == members[np.argmax(cos[members, c])]


def test_kmeans_matches_feature_space_computation():
    rng = np.random.default_rng(5)
    X = rng.normal(size=(50, 3))
    f = KMedoids.from_features(X, 3, metric="euclidean")
    geo = _Geometry(f, "euclidean")
    labels, obj, _, _ = lloyd(geo, 3, np.array([0, 1, 2]))
    cent = np.stack([X[labels == c].mean(axis=0) for c in range(3)])
    d2 = ((X[:, None, :] - cent[None]) ** 2).sum(axis=2)
    assert -obj == pytest.approx(float(d2[np.arange(50), labels].sum()))
    assert np.array_equal(labels, np.argmin(d2, axis=1))
    res = solve(f, "kmeans", seed=0)
    assert res.feasible and res.extra["within_ss"] <= -obj + 1e-9  # restarts keep the best


def test_objective_never_worse_than_its_start():
    rng = np.random.default_rng(6)
    X = _unit(rng.normal(size=(80, 4)))
    f = KMedoids.from_features(X, 6, metric="cosine")
    geo = _Geometry(f, "spherical")
    start = rng.choice(80, 6, replace=False)
    lab0 = np.argmax(X @ X[start].T, axis=1)
    lab0[start] = np.arange(6)
    _, obj0 = geo.stats(lab0, 6)
    _, obj, _, _ = lloyd(geo, 6, start)
    assert obj >= obj0 - 1e-12


def test_candidates_and_weights_respected():
    rng = np.random.default_rng(7)
    X = _unit(rng.normal(size=(40, 3)))
    cand = np.arange(0, 40, 3)
    f = KMedoids.from_features(X, 5, metric="cosine", candidates=cand, weights=rng.uniform(0, 1, 40))
    res = solve(f, "spherical-kmeans", seed=1)
    assert res.feasible and np.isin(res.selection, cand).all() and res.selection.size == 5


def test_duplicate_points_still_give_k_distinct_anchors():
    X = np.repeat(_unit(np.eye(3)), 10, axis=0)  # 3 distinct directions, 30 items
    res = solve(KMedoids.from_features(X, 5, metric="cosine"), "spherical-kmeans", seed=0)
    assert res.feasible and np.unique(res.selection).size == 5


def test_refusals_name_the_reason():
    rng = np.random.default_rng(8)
    fe = KMedoids.from_features(rng.normal(scale=5, size=(20, 2)), 3, metric="euclidean")
    assert "spherical-kmeans" not in available_methods(fe) and "kmeans" in available_methods(fe)
    with pytest.raises(MethodNotApplicableError, match=r"dissimilarities exceed 2.*metric='cosine'"):
        solve(fe, "spherical-kmeans")
    D = rng.uniform(0, 1, size=(6, 6))
    np.fill_diagonal(D, 0)
    with pytest.raises(MethodNotApplicableError, match=r"not symmetric"):
        solve(KMedoids(D, 2), "spherical-kmeans")
    with pytest.raises(MethodNotApplicableError, match=r"k-means reads D as Euclidean.*not symmetric"):
        solve(KMedoids(D, 2), "kmeans")


@pytest.mark.parametrize("method", ["spherical-kmeans", "kmeans"])
def test_conformance_on_cosine_instances(method):
    rng = np.random.default_rng(9)
    for seed in range(3):
        f = KMedoids.from_features(rng.normal(size=(9, 3)), 3, metric="cosine",
                                   weights=rng.uniform(0.5, 2, 9) if seed else None)
        assert check_method(f, method, seed=seed) == []


def test_bad_method_options():
    f = KMedoids.from_features(np.random.default_rng(0).normal(size=(10, 3)), 2, metric="cosine")
    with pytest.raises(InvalidInputError, match=r"n_restarts: expected an integer >= 1"):
        solve(f, "spherical-kmeans", n_restarts=0)
    with pytest.raises(InvalidInputError, match=r"init: expected one of 'kmeans\+\+', 'random'"):
        solve(f, "spherical-kmeans", init="build")


def test_time_limit_and_progress(capsys):
    X = _unit(np.random.default_rng(1).normal(size=(300, 8)))
    f = KMedoids.from_features(X, 20, metric="cosine")
    res = solve(f, "spherical-kmeans", time_limit=1e-4, n_restarts=50, verbose=True)
    assert res.feasible and res.termination == "time_limit" and res.extra["restarts"] < 50
    assert "spherical-kmeans restart 1/50" in capsys.readouterr().err


@settings(max_examples=25, deadline=None)
@given(st.integers(2, 25), st.integers(1, 6), st.integers(0, 10_000))
def test_property_k_distinct_candidate_anchors(n, d, seed):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n + 1, d))
    k = int(rng.integers(1, n + 1))
    f = KMedoids.from_features(X, k, metric="cosine")
    res = solve(f, "spherical-kmeans", seed=seed, n_restarts=2)
    assert res.feasible and res.selection.size == k


# ----------------------------------------------------------------- instances
def test_generator_reproducible_and_shaped():
    a = make_hidden_states(n_items=50, n_models=3, n_targets=4, n_groups=5, seed=2)
    b = make_hidden_states(n_items=50, n_models=3, n_targets=4, n_groups=5, seed=2)
    assert isinstance(a, HiddenStates) and a.n_models == 3 and a.n_items == 50
    assert all(np.array_equal(x, y) for x, y in zip(a.hidden_states, b.hidden_states))
    assert a.Y.shape == (7, 50) and set(np.unique(a.Y)) <= {0.0, 1.0}
    assert np.bincount(a.groups).tolist() == [10] * 5
    assert set(a.widths) <= {64, 96, 128, 192, 256}
    c = make_hidden_states(n_items=50, n_models=3, widths=(5, 6, 7), seed=2)
    assert c.widths == (5, 6, 7)
    with pytest.raises(InvalidInputError, match=r"widths: expected an int or 3 widths"):
        make_hidden_states(n_items=50, n_models=3, widths=(5, 6))
    with pytest.raises(InvalidInputError, match=r"n_groups: expected an integer"):
        make_hidden_states(n_items=5, n_groups=6)


def test_npz_round_trip_and_item_ids(tmp_path):
    hs = make_hidden_states(n_items=12, n_models=3, widths=(2, 3, 4), seed=0)
    ids = np.array([f"q{i}" for i in range(12)])
    p = save_hidden_states(tmp_path / "h.npz", hs.hidden_states, models=["a", "b", "c"], item_ids=ids, Y=hs.Y)
    got = load_hidden_states(p)
    assert list(got.models) == ["a", "b", "c"] and got.widths == (2, 3, 4)
    assert np.array_equal(got.item_ids, ids) and np.array_equal(got.Y, hs.Y)
    np.testing.assert_allclose(got.hidden_states[1], hs.hidden_states[1])
    order = ids[::-1]
    rev = load_hidden_states(p, item_ids=order)
    np.testing.assert_allclose(rev.hidden_states[2], hs.hidden_states[2][::-1])
    np.testing.assert_allclose(rev.Y, hs.Y[:, ::-1])
    only = load_hidden_states(p, models=["c", "a"])
    assert list(only.models) == ["c", "a"] and only.widths == (4, 2)
    with pytest.raises(InvalidInputError, match=r"item_ids: 1 of the given ids are not in"):
        load_hidden_states(p, item_ids=np.array([*ids[:-1], "zz"]))
    with pytest.raises(InvalidInputError, match=r"item_ids: expected 12 item ids"):
        load_hidden_states(p, item_ids=ids[:5])
    with pytest.raises(InvalidInputError, match=r"models: 'x' is not an array"):
        load_hidden_states(p, models=["x"])
    assert len(load_hidden_states(save_hidden_states(tmp_path / "g.npz", hs)).hidden_states) == 3


def test_folder_of_npy(tmp_path):
    rng = np.random.default_rng(0)
    for name, w in (("m2", 3), ("m1", 5)):
        np.save(tmp_path / f"{name}.npy", rng.normal(size=(8, w)))
    np.save(tmp_path / "item_ids.npy", np.arange(100, 108))
    got = load_hidden_states(tmp_path, item_ids=np.arange(100, 108))
    assert list(got.models) == ["m1", "m2"] and got.widths == (5, 3)
    np.save(tmp_path / "m3.npy", rng.normal(size=(7, 2)))
    with pytest.raises(InvalidInputError, match=r"'m3': expected 8 items"):
        load_hidden_states(tmp_path)
    np.save(tmp_path / "m3.npy", np.full((8, 2), np.nan))
    with pytest.raises(InvalidInputError, match=r"'m3': expected finite values"):
        load_hidden_states(tmp_path)


def test_unreadable_files(tmp_path):
    with pytest.raises(InvalidInputError, match=r"neither a folder"):
        load_hidden_states(tmp_path / "nope.npz")
    bad = tmp_path / "bad.npz"
    bad.write_bytes(b"PK\x03\x04 not a zip")
    with pytest.raises(InvalidInputError, match=r"path: cannot read"):
        load_hidden_states(bad)
    good = tmp_path / "g.npz"
    np.savez(good, a=np.ones((4, 2)), b=np.ones((4, 3)))
    cut = tmp_path / "cut.npz"
    cut.write_bytes(good.read_bytes()[:-40])
    with pytest.raises(InvalidInputError, match=r"path: cannot read"):
        load_hidden_states(cut)
    (tmp_path / "empty").mkdir()
    with pytest.raises(InvalidInputError, match=r"has no .npy files"):
        load_hidden_states(tmp_path / "empty")
    only_ids = tmp_path / "ids.npz"
    np.savez(only_ids, item_ids=np.arange(3))
    with pytest.raises(InvalidInputError, match=r"holds no model's hidden states"):
        load_hidden_states(only_ids)
    strings = tmp_path / "s.npz"
    np.savez(strings, a=np.array([["x"]]))
    with pytest.raises(InvalidInputError, match=r"dtype <U1, expected numbers"):
        load_hidden_states(strings)
    assert zipfile.is_zipfile(good)


# ----------------------------------------------------------------- benchmark helpers
def test_adjusted_rand_index():
    from benchsel.benchmarks.studies.repcore import adjusted_rand_index

    a = np.array([0, 0, 1, 1, 2, 2])
    assert adjusted_rand_index(a, a) == pytest.approx(1.0)
    assert adjusted_rand_index(a, np.array([5, 5, 3, 3, 9, 9])) == pytest.approx(1.0)  # label names do not matter
    # hand-computed: contingency [[2, 0], [1, 1]] of 4 items -> ARI 0
    assert adjusted_rand_index([0, 0, 1, 1], [0, 0, 0, 1]) == pytest.approx(0.0)
    rng = np.random.default_rng(0)
    vals = [adjusted_rand_index(rng.integers(0, 4, 400), rng.integers(0, 4, 400)) for _ in range(20)]
    assert abs(np.mean(vals)) < 0.01  # chance level


def test_repcore_suite_and_fidelity():
    from benchsel.benchmarks.suites import estimator_fidelity, suite_instances

    specs = {s.name: s for s in suite_instances("repcore", None)}
    spaces = ("consensus", "binary", "correlation", "irt")
    assert {f"repcore-{sp}-s{S}-k30" for sp in spaces for S in (5, 10, 20)} == set(specs)
    irt = specs["repcore-irt-s5-k30"]  # tinyBenchmarks: IRT anchors, gp-IRT estimate
    assert irt.fidelity[1]["estimator"] == "irt" and irt.make().n_items == 600
    spec = specs["repcore-binary-s5-k30"]
    f = spec.make()
    assert isinstance(f, KMedoids) and f.n_items == 600 and "kmeans" in spec.methods
    fn, kw = spec.fidelity
    res = solve(f, "kmeans", seed=0, n_restarts=2)
    out = fn(f, res.selection, **kw)
    assert set(out) == {"mae", "mean_nmae", "mean_sp", "mean_tau"} and 0 <= out["mae"] < 0.5
    assert out == estimator_fidelity(f, res.selection, **kw)
    assert kw["estimator"] == "repcore-ridge" and kw["targets"].shape == (60, 600)


def test_paired_differences_and_reprint(tmp_path, capsys):
    import json

    from benchsel.benchmarks.studies.repcore import main

    rows = [{"part": "synthetic", "seed": s, "n_sources": 5, "k": 10, "pipeline": p, "mae": m,
             "spearman": 0.9, "kendall": 0.8, "select_seconds": 0.0}
            for s, (a, b) in enumerate([(0.10, 0.12), (0.11, 0.12), (0.13, 0.12)])
            for p, m in (("RepCore", a), ("0/1 K-means + Ridge", b))]
    path = tmp_path / "rows.json"
    path.write_text(json.dumps([*rows, {"part": "settings"}]))
    assert main(["--from-json", str(path)]) == 0
    out = capsys.readouterr().out
    # differences -0.02, -0.01, +0.01: mean -0.0067, RepCore lower on 2 of 3 seeds; no Random column in the rows
    line = next(x for x in out.splitlines() if x.startswith("| 5 | 10 |") and "wins" in x)
    assert "-0.0067 ±" in line and "(wins 2/3)" in line and line.count("wins") == 1
    assert "| 5 | 10 | 0.1133 ± " in out  # the MAE table of RepCore

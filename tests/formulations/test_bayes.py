"""BayesAME model and batch problem: buckets, prior, posterior forms, Var(R|C), estimator, marginal
likelihood, BatchInformationGain, and the "exhaustive" / "smc" / "greedy" methods."""
from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from benchsel.formulations import BatchInformationGain
from benchsel.formulations.bayes import BatchData, BayesModel, SequentialPosterior, bucketize
from benchsel.formulations.bayes.search import count_vectors, exhaustive_search, greedy_search, smc_search
from benchsel.formulations.bayes.starts import kdpp_mcmc, kdpp_sample, kmeans_starts, lars_start
from benchsel.formulations.bayes.swap import SwapState, local_search
from benchsel.solvers import InvalidInputError, MethodNotApplicableError, available_methods, solve
from benchsel.solvers.conformance import brute_force, check_method


# ------------------------------------------------------------------ helpers
def _instance(seed: int, *, N: int = 14, Kr: int = 3, binary: bool = True, n_coreset: int = 4, k: int = 3, **kw):
    rng = np.random.default_rng(seed)
    R = rng.integers(0, 2, (Kr, N)).astype(float) if binary else rng.uniform(size=(Kr, N))
    C = rng.choice(N, n_coreset, replace=False)
    return BatchInformationGain(R, coreset=C, observed=rng.uniform(size=n_coreset), k=k, **kw), R, C


def _joint(model: BayesModel, alpha: float, beta: float):
    """Item-level prior mean and covariance of all N scores: H mean, H Sigma H^T + D."""
    lab = model.buckets.labels
    Sig = model.covariance(alpha, beta)
    return model.prior_mean[lab], Sig[np.ix_(lab, lab)] + np.diag(model.noise[lab])


def _condition(mu, K, obs, s):
    """Gaussian conditioning of all items on obs (brute force)."""
    rest = np.setdiff1d(np.arange(mu.size), obs)
    if obs.size == 0:
        return rest, mu[rest], K[np.ix_(rest, rest)]
    A = K[np.ix_(rest, obs)]
    Koo = K[np.ix_(obs, obs)]
    m = mu[rest] + A @ np.linalg.solve(Koo, s - mu[obs])
    V = K[np.ix_(rest, rest)] - A @ np.linalg.solve(Koo, A.T)
    return rest, m, V


# =================================================================== buckets
def test_bucketize_exact_binary_groups_identical_vectors():
    R = np.array([[1, 0, 1, 1, 0], [0, 0, 0, 0, 1]], dtype=float)
    b = bucketize(R)
    assert b.n_buckets == 3 and b.sizes.sum() == 5
    np.testing.assert_array_equal(b.phi[b.labels], R.T)
    assert b.labels[0] == b.labels[2] == b.labels[3]
    assert b.labels[1] != b.labels[4]


def test_bucketize_continuous_default_exact_and_tolerance():
    R = np.array([[0.10, 0.11, 0.5, 0.52], [0.30, 0.31, 0.9, 0.9]])
    assert bucketize(R).n_buckets == 4  # by default only identical vectors share a bucket
    b = bucketize(R, tol=0.1)
    assert b.n_buckets == 2
    assert b.labels[0] == b.labels[1] and b.labels[2] == b.labels[3]
    np.testing.assert_allclose(b.phi, [[0.1, 0.3], [0.5, 0.9]])
    with pytest.raises(InvalidInputError, match=r"tol: expected 0.0 < tol, got 0"):
        bucketize(R, tol=0.0)
    with pytest.raises(InvalidInputError, match=r"tol: expected 0.0 < tol, got -0.1"):
        bucketize(R, tol=-0.1)


def test_prior_se_and_matern_formulas():
    R = np.array([[0.0, 1.0, 0.5], [1.0, 1.0, 0.0]])
    se = BayesModel(R, kernel="se")
    phi = se.buckets.phi
    S = se.covariance(0.7, 1.3)
    for i in range(3):
        for j in range(3):
            d2 = np.sum((phi[i] - phi[j]) ** 2)
            assert S[i, j] == pytest.approx(0.7 * math.exp(-(1.3 / 2) * d2))
            d = math.sqrt(d2)
            assert BayesModel(R, kernel="matern32").covariance(0.7, 1.3)[i, j] == pytest.approx(
                0.7 * (1 + math.sqrt(3) * 1.3 * d) * math.exp(-math.sqrt(3) * 1.3 * d))
    np.testing.assert_allclose(se.prior_mean, phi.mean(axis=1))
    assert np.linalg.eigvalsh(S).min() > -1e-12


# ================================================================= posterior
@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 10_000), n=st.integers(0, 12), binary=st.booleans(),
       kernel=st.sampled_from(["se", "matern32"]))
def test_posterior_forms_agree_and_match_brute_force(seed, n, binary, kernel):
    rng = np.random.default_rng(seed)
    N = 12
    R = rng.integers(0, 2, (3, N)).astype(float) if binary else rng.uniform(size=(3, N))
    m = BayesModel(R, sigma2=float(rng.choice([1e-4, 1e-2, 1e-1])), kernel=kernel)
    a, b = float(rng.uniform(0.2, 2)), float(rng.uniform(0.2, 3))
    C = rng.choice(N, n, replace=False)
    s = rng.uniform(size=n)
    pi = m.posterior(C, s, alpha=a, beta=b, form="item")
    pb = m.posterior(C, s, alpha=a, beta=b, form="bucket")
    np.testing.assert_allclose(pi.mean, pb.mean, atol=1e-9)
    np.testing.assert_allclose(pi.cov, pb.cov, atol=1e-9)
    # Var(R|C) and E[R|C] against item-level Gaussian conditioning of all N scores
    mu, K = _joint(m, a, b)
    _rest, mr, Vr = _condition(mu, K, C, s)
    r = (m.buckets.sizes - pi.counts).astype(float)
    assert m.var_R(pi.cov @ r, pi.counts) == pytest.approx(Vr.sum() / N ** 2, rel=1e-7, abs=1e-13)
    assert m.mean_R(pi.mean, pi.counts, s.sum()) == pytest.approx((s.sum() + mr.sum()) / N, abs=1e-9)


@settings(max_examples=20, deadline=None)
@given(seed=st.integers(0, 10_000), form=st.sampled_from(["auto", "item", "bucket"]))
def test_sequential_posterior_matches_batch_through_form_switch(seed, form):
    rng = np.random.default_rng(seed)
    N = 16
    R = rng.integers(0, 2, (3, N)).astype(float)  # few buckets: the auto form switches, downdates happen
    m = BayesModel(R, sigma2=1e-2)
    order = rng.permutation(N)[: int(rng.integers(1, N + 1))]
    s = rng.uniform(size=order.size)
    sp = SequentialPosterior(m, 0.8, 1.4, form=form)
    for t, (i, v) in enumerate(zip(order, s)):
        sp.add(int(i), float(v))
        if t in (0, order.size // 2, order.size - 1):
            p = m.posterior(order[: t + 1], s[: t + 1], alpha=0.8, beta=1.4)
            np.testing.assert_allclose(sp.mean, p.mean, atol=1e-8)
            np.testing.assert_allclose(sp.cov(), p.cov, atol=1e-8)
            np.testing.assert_allclose(sp.cov_diag, np.diag(p.cov), atol=1e-8)
            r = (m.buckets.sizes - p.counts).astype(float)
            np.testing.assert_allclose(sp.cov_r(), p.cov @ r, atol=1e-8)
            assert sp.var_R() == pytest.approx(m.var_R(p.cov @ r, p.counts), rel=1e-7, abs=1e-14)
    if form == "auto":
        assert sp.form == ("item" if order.size < m.B else "bucket")
    sp.set_hyper(0.5, 2.0)  # rebuild with new hyper-parameters
    p = m.posterior(order, s, alpha=0.5, beta=2.0)
    np.testing.assert_allclose(sp.mean, p.mean, atol=1e-8)


def test_sequential_posterior_refuses_repeats_and_bad_scores():
    m = BayesModel(np.eye(3, 5))
    sp = SequentialPosterior(m)
    sp.add(1, 0.5)
    with pytest.raises(InvalidInputError, match="item: item 1 is already in the coreset"):
        sp.add(1, 0.2)
    with pytest.raises(InvalidInputError, match="score: expected a finite score, got nan"):
        sp.add(2, float("nan"))
    with pytest.raises(InvalidInputError, match=r"item: expected an item index in \[0, 5\), got 7"):
        sp.add(7, 0.0)


def test_single_item_gain_is_entropy_reduction():
    f, _R, _C = _instance(3, N=12, n_coreset=3, k=1, binary=False, sigma2=1e-2)
    m = f.model
    p = f.posterior
    r = (m.buckets.sizes - p.counts).astype(float)
    g = m.gains(p.cov @ r, np.diag(p.cov), p.counts)
    mu, K = _joint(m, 1.0, 1.0)
    _, _, V0 = _condition(mu, K, f.coreset, np.zeros(f.coreset.size))
    for i in f.unevaluated[:4]:
        _, _, V1 = _condition(mu, K, np.append(f.coreset, i), np.zeros(f.coreset.size + 1))
        assert g[m.buckets.labels[i]] == pytest.approx(0.5 * math.log(V0.sum() / V1.sum()), rel=1e-6)
    assert np.all(np.isneginf(g[p.counts >= m.buckets.sizes]))


def test_estimator_regimes():
    rng = np.random.default_rng(0)
    R = rng.uniform(size=(3, 20))  # unique regime (B = N)
    m = BayesModel(R)
    C = rng.choice(20, 5, replace=False)
    s = rng.uniform(size=5)
    p = m.posterior(C, s)
    assert m.estimate(p.mean, p.counts, s.sum(), 5) == pytest.approx(m.mean_R(p.mean, p.counts, s.sum()))
    Rb = rng.integers(0, 2, (2, 30)).astype(float)  # non-unique: w = 1/n (control variate form)
    mb = BayesModel(Rb, sigma2=0.1)
    pb = mb.posterior(C, s)
    want = s.mean() + (mb.buckets.sizes / 30 - pb.counts / 5) @ pb.mean
    assert mb.estimate(pb.mean, pb.counts, s.sum(), 5) == pytest.approx(want)
    y = rng.uniform(size=30)  # every item evaluated: exact in both regimes
    for mm in (BayesModel(rng.uniform(size=(3, 30))), mb):
        pa = mm.posterior(np.arange(30), y)
        assert mm.estimate(pa.mean, pa.counts, y.sum(), 30) == pytest.approx(y.mean())
        assert mm.var_R(pa.cov @ np.zeros(mm.B), pa.counts) == 0.0


# ======================================================== marginal likelihood
@pytest.mark.parametrize("kernel", ["se", "matern32"])
def test_nll_forms_differ_by_constant_and_gradient(kernel):
    rng = np.random.default_rng(5)
    R = rng.integers(0, 3, (3, 25)).astype(float)
    m = BayesModel(R, sigma2=1e-2, kernel=kernel)
    C = rng.choice(25, 15, replace=False)
    s = rng.uniform(size=15)
    d = [m.nll(a, b, C, s, form="item") - m.nll(a, b, C, s, form="bucket") for a, b in [(1, 1), (0.2, 3), (3, 0.1)]]
    assert max(d) - min(d) < 1e-8
    v, g = m.nll(0.7, 1.3, C, s, gradient=True)
    e = 1e-6
    num = [(m.nll(0.7 * math.exp(e), 1.3, C, s) - v) / e, (m.nll(0.7, 1.3 * math.exp(e), C, s) - v) / e]
    np.testing.assert_allclose(g, num, rtol=1e-4, atol=1e-5)


def test_fit_bounds_and_never_worse():
    rng = np.random.default_rng(1)
    R = rng.uniform(size=(4, 40))
    m = BayesModel(R, sigma2=1e-2)
    C = rng.choice(40, 20, replace=False)
    s = rng.uniform(size=20)
    a, b, info = m.fit(C, s)
    assert a >= 1e-5 and b >= 1e-5
    assert info["nll"] <= m.nll(1.0, 1.0, C, s) + 1e-12
    assert info["nll"] == pytest.approx(m.nll(a, b, C, s))
    _a2, _b2, info2 = m.fit(C, s, alpha0=a, beta0=b, extra_starts=[(1.0, 1.0), (0.1, 10.0)])
    assert info2["starts"] == 3 and info2["nll"] <= info["nll"] + 1e-9
    assert m.fit([], [], alpha0=0.3, beta0=2.0)[:2] == (0.3, 2.0)
    a3, b3, _ = m.fit(C, s, alpha0=1e-9, beta0=1e-9)  # starts are clipped to the bounds
    assert a3 >= 1e-5 and b3 >= 1e-5


# ============================================================= formulation
def test_contract_and_beta_is_variance_reduction():
    f, _R, C = _instance(11, N=15, n_coreset=5, k=3, binary=False, sigma2=1e-2)
    assert f.sense == "max" and f.n_items == 15
    mu, K = _joint(f.model, 1.0, 1.0)
    z = np.zeros(C.size)
    _, _, V0 = _condition(mu, K, np.sort(C), z)
    rng = np.random.default_rng(0)
    for _ in range(5):
        A = f.random_selection(rng)
        assert f.check(A).feasible
        _, _, V1 = _condition(mu, K, np.concatenate([np.sort(C), A]), np.zeros(C.size + A.size))
        assert f.evaluate(A) == pytest.approx((V0.sum() - V1.sum()) / 15 ** 2, rel=1e-7)
        assert f.var_R == pytest.approx(V0.sum() / 15 ** 2, rel=1e-9)
    g = type(f)(**f.get_params())
    assert g.evaluate(A) == f.evaluate(A) and g.result_extras(A) == f.result_extras(A)
    assert f.evaluate([]) == 0.0


def test_check_reports_size_and_coreset_items():
    f, _R, C = _instance(2, k=2)
    chk = f.check([int(C[0]), int(f.unevaluated[0])])
    assert not chk.feasible and "already in the coreset" in chk.reasons[0]
    chk = f.check(f.unevaluated[:3])
    assert not chk.feasible and "3 items selected, k = 2 required" in chk.reasons[0]


def test_observed_alignment_and_extras():
    rng = np.random.default_rng(4)
    R = rng.uniform(size=(3, 10))
    y = rng.uniform(size=10)
    C = np.array([7, 2, 5])
    f1 = BatchInformationGain(R, coreset=C, observed=y[C], k=2)
    f2 = BatchInformationGain(R, coreset=C, observed=y, k=2)  # full target vector of length N
    f3 = BatchInformationGain(R, coreset=np.sort(C), observed=y[np.sort(C)], k=2)
    A = f1.unevaluated[:2]
    e = [f.result_extras(A)["estimate"] for f in (f1, f2, f3)]
    assert e[0] == pytest.approx(e[1]) == pytest.approx(e[2])
    ex = f1.result_extras(A)
    assert ex["information_gain"] > 0 and 0 <= ex["var_R_after"] < ex["var_R"]
    assert "estimate" not in BatchInformationGain(R, coreset=C, k=2).result_extras(A)


@pytest.mark.parametrize(
    "kwargs,match",
    [
        (dict(R=np.full((2, 5), np.nan)), r"reference_scores: expected finite values, got 10 non-finite \(NaN\)"),
        (dict(R=np.array([[0.0, np.inf, 1.0]])),
         r"reference_scores: expected finite values, got 1 non-finite \(infinite\)"),
        (dict(observed=[0.1, np.nan]), r"observed: expected finite values"),
        (dict(observed=[0.1, 0.2, 0.3]),
         r"observed: target scores must match the coreset \(2 items\) or the reference item count N = 6; got 3"),
        (dict(k=5),
         r"k: expected an integer with 1 <= k <= the number of unevaluated items \|U\| = N - \|coreset\| = 4, got 5"),
        (dict(k=0), r"k: expected an integer with 1 <= k"),
        (dict(coreset=[0, 0]), r"coreset: expected distinct item indices"),
        (dict(coreset=[0, 9]), r"coreset: expected item indices in \[0, 6\)"),
        (dict(alpha=0.0), r"alpha: expected 0.0 < alpha, got 0"),
        (dict(beta=-1.0), r"beta: expected 0.0 < beta, got -1"),
        (dict(sigma2=0.0), r"sigma2: expected 0.0 < sigma2, got 0"),
        (dict(tol=-0.5), r"tol: expected 0.0 < tol, got -0.5"),
        (dict(kernel="rbf"), r"kernel: expected one of 'se', 'matern32', got 'rbf'"),
        (dict(R=np.ones(6)), r"reference_scores: expected an array of shape \(Kr, N\), got shape \(6,\)"),
    ],
)
def test_bad_input(kwargs, match):
    args = dict(R=np.arange(12.0).reshape(2, 6), coreset=[1, 3], observed=[0.2, 0.4], k=2)
    args.update(kwargs)
    R = args.pop("R")
    with pytest.raises(InvalidInputError, match=match):
        BatchInformationGain(R, **args)


def test_noise_numerically_zero_next_to_the_prior_is_refused_by_name():
    """sigma2=1e-30 reached SCIP as 'error in input data' (coefficients alpha / (sigma2 N_b) past its infinity)."""
    rng = np.random.default_rng(0)
    R = rng.random((3, 15)).round(1)
    for alpha, sigma2 in ((1.0, 1e-30), (1.0, 1e-9), (1e3, 1e-6)):
        with pytest.raises(InvalidInputError, match=rf"^sigma2: expected sigma2 >= 1e-08 \* alpha = {alpha * 1e-8:.3g} "
                                                    rf"\(a smaller noise is numerically zero .*\), got {sigma2:.3g}$"):
            BatchInformationGain(R, k=3, alpha=alpha, sigma2=sigma2)
    f = BatchInformationGain(R, k=3, coreset=[0, 1], sigma2=1e-8)  # the smallest accepted noise
    opt = brute_force(f)[0]
    for method in ("scip", "pyomo"):
        if method in available_methods(f):
            res = solve(f, method, time_limit=60)
            assert res.termination == "optimal" and res.objective == pytest.approx(opt, rel=1e-6), method


def test_linear_backends_refuse_with_reason():
    f, _, _ = _instance(0)
    assert set(available_methods(f)) >= {"exhaustive", "smc", "greedy", "random"}
    for m in ("highs", "cpsat"):
        with pytest.raises(MethodNotApplicableError, match="stated with a quadratic objective") as e:
            solve(f, m)
        assert "reads mixed-integer linear models only; backends that take it" in str(e.value)
    assert not f.is_linear and f.quadratic_statement and "l0-constrained QP" in f.not_linear_reason


@pytest.mark.parametrize("seed", range(4))
def test_miqp_statement_minimum_over_w_is_minus_beta(seed):
    """For a fixed support, the program's minimum over w is -beta(A), and that w is within the bounds."""
    f, _, _ = _instance(seed, N=16, Kr=2 + seed % 2, binary=seed % 2 == 0, k=3, n_coreset=3)
    m = f.linear_model()
    assert m.is_quadratic and m.objective_sign == -1 and m.meta["variant"] == "miqp-counts"
    z, w, g = (m.col_block(n) for n in ("z", "w", "g"))
    Q = m.Q.toarray()
    assert np.count_nonzero(Q - np.diag(np.diag(Q))) == 0  # diagonal: perspective-ready squares
    rng = np.random.default_rng(seed)
    items = m.selection_items
    for _ in range(5):
        # a support of k copies taken in order within their buckets (the order rows)
        buckets = f.data.to_buckets(items)
        chosen = []
        for b in rng.permutation(np.unique(buckets)):
            take = np.flatnonzero(buckets == b)[: rng.integers(1, 3)]
            chosen.extend(take.tolist())
            if len(chosen) >= f.k:
                break
        chosen = np.asarray(chosen[: f.k])
        sel = np.sort(items[chosen])
        S = f.sigma_U(sel)
        wA = np.linalg.solve(S, f.v(sel)) / f.n_items  # the optimal weights of the support
        x = np.zeros(m.n_cols)
        by_item = chosen[np.argsort(items[chosen])]
        x[z.start + by_item] = 1.0
        x[w.start + by_item] = wA
        # g from the factor rows g - G H^T w = 0
        F = m.A[m.row_block("factor").start:m.row_block("factor").stop]
        x[g.start:g.stop] = -(F[:, :g.start] @ x[:g.start])
        assert m.max_violation(x) < 1e-7
        assert m.objective_value(x) == pytest.approx(f.evaluate(sel), rel=1e-8)


# =================================================================== methods
@pytest.mark.parametrize("seed", range(6))
def test_exhaustive_modes_agree_with_brute_force(seed):
    f, _, _ = _instance(seed, N=13, Kr=2 + seed % 3, binary=seed % 2 == 0, k=2 + seed % 3, n_coreset=3)
    opt, _ = brute_force(f)
    vals = {}
    for mode in ("items", "counts"):
        b, v, info = exhaustive_search(f.data, mode=mode)
        vals[mode] = v
        assert (info["complete"] and info["evaluated"] == info["n_candidates"]) or mode == "counts"
        assert f.evaluate(f.data.to_items(b)) == pytest.approx(opt, rel=1e-9)
    res = solve(f, "exhaustive")
    assert res.termination == "optimal" and res.objective == pytest.approx(opt, rel=1e-9)
    assert res.bound == pytest.approx(opt, rel=1e-9) and res.gap == pytest.approx(0.0, abs=1e-9)


def test_count_vectors_counts():
    assert count_vectors(np.array([1, 1, 1, 1]), 2) == 6
    assert count_vectors(np.array([2, 1]), 2) == 2  # {0,0}, {0,1}
    assert count_vectors(np.array([5, 5, 5]), 3) == 10  # multisets of size 3 from 3
    f, _, _ = _instance(1, N=30, Kr=2, k=3, n_coreset=2)
    X = [c for c in __import__("itertools").combinations_with_replacement(range(f.data.n_buckets), 3)
         if all(c.count(b) <= f.data.avail[b] for b in set(c))]
    assert count_vectors(f.data.avail, 3) == len(X)


def test_exhaustive_refuses_too_large_and_time_limit():
    rng = np.random.default_rng(0)
    f = BatchInformationGain(rng.uniform(size=(3, 60)), k=5)
    with pytest.raises(InvalidInputError, match=r"max_candidates: exhaustive search would enumerate 5461512 item sets"):
        solve(f, "exhaustive")
    res = solve(f, "exhaustive", max_candidates=10**7, time_limit=0.05)
    assert res.termination == "time_limit" and res.feasible and res.bound is None


@pytest.mark.parametrize("seed", range(8))
def test_smc_reaches_exhaustive_optimum(seed):
    f, _, _ = _instance(100 + seed, N=30, Kr=2 + seed % 4, binary=seed % 2 == 1, k=2 + seed % 3,
                        n_coreset=6, beta=(0.3, 1.0, 3.0)[seed % 3])
    ex = solve(f, "exhaustive")
    sm = solve(f, "smc", seed=seed)
    assert sm.feasible and sm.objective == pytest.approx(ex.objective, rel=1e-9)
    gr = solve(f, "greedy")
    assert gr.feasible and gr.objective <= ex.objective * (1 + 1e-9)


def test_smc_is_seeded_and_options():
    f, _, _ = _instance(7, N=40, k=4, n_coreset=5, binary=False)
    a = solve(f, "smc", seed=3, n_particles=8, n_generations=5)
    b = solve(f, "smc", seed=3, n_particles=8, n_generations=5)
    np.testing.assert_array_equal(a.selection, b.selection)
    for starts in (("lars",), ("dpp",), ("kmeans",)):
        r = solve(f, "smc", seed=0, starts=starts, n_particles=4, n_generations=3)
        assert r.feasible
    r = solve(f, "smc", seed=0, dpp_exact_max=0, n_particles=4, n_generations=2)  # MCMC k-DPP path
    assert r.feasible and r.extra["start_dpp"] > 0
    r = solve(f, "smc", seed=0, time_limit=0.01)
    assert r.feasible
    assert solve(f, "smc", seed=0, temperature=0.01, n_particles=6, n_generations=3).feasible
    with pytest.raises(InvalidInputError, match=r"temperature: expected 0\.0 < temperature, got 0"):
        solve(f, "smc", temperature=0.0)
    with pytest.raises(InvalidInputError, match="options: 'particles' not understood by method 'smc'"):
        solve(f, "smc", particles=3)
    with pytest.raises(InvalidInputError, match="starts: expected a subset of 'lars', 'dpp', 'kmeans', got 'grid'"):
        solve(f, "smc", starts=("grid",))
    with pytest.raises(InvalidInputError, match="n_particles: expected an integer >= 1, got 0"):
        solve(f, "smc", n_particles=0)


def test_conformance_of_bayes_methods():
    for f in BatchInformationGain.conformance_instances(seed=1):
        opt, _ = brute_force(f)
        for m in ("exhaustive", "smc", "greedy", "random"):
            assert check_method(f, m, optimum=opt) == []


# ============================================================ search pieces
@settings(max_examples=20, deadline=None)
@given(seed=st.integers(0, 10_000), k=st.integers(1, 6))
def test_woodbury_swap_values_and_det_ratios(seed, k):
    rng = np.random.default_rng(seed)
    f = BatchInformationGain(rng.integers(0, 2, (4, 40)).astype(float), coreset=rng.choice(40, 5, replace=False),
                             k=k, sigma2=float(rng.choice([1e-4, 1e-2])))
    d = f.data
    b0 = d.labels[rng.choice(d.items.size, k, replace=False)]
    stt = SwapState(d, b0)
    assert stt.value == pytest.approx(d.value(b0), rel=1e-9)
    for m in range(k):
        c = stt.candidates(m)
        if c.size == 0:
            continue
        X = np.tile(stt.b, (c.size, 1))
        X[:, m] = c
        # rank-one (Woodbury) updates lose about cond(M) * eps against a fresh factorisation; with
        # sigma2 = 1e-4 that reaches ~1e-7 relative
        np.testing.assert_allclose(stt.swap_values(m, c), d.values(X), rtol=1e-6, atol=1e-12)
        M0 = d.S[np.ix_(stt.b, stt.b)] + np.diag(d.noise[stt.b])
        dets = [np.linalg.det(d.S[np.ix_(x, x)] + np.diag(d.noise[x])) / np.linalg.det(M0) for x in X[:5]]
        np.testing.assert_allclose(stt.det_ratios(m, c[:5]), dets, rtol=1e-6)
    for _ in range(10):  # Woodbury-updated inverse stays accurate
        m = int(rng.integers(k))
        c = stt.candidates(m)
        if c.size:
            stt.apply(m, int(rng.choice(c)))
    assert stt.value == pytest.approx(d.value(stt.b), rel=1e-8)
    assert np.all(np.bincount(stt.b, minlength=d.n_buckets) <= d.avail)


def test_local_search_reaches_local_optimum():
    f, _, _ = _instance(9, N=30, k=3, n_coreset=3, binary=False)
    rng = np.random.default_rng(0)
    stt = SwapState(f.data, f.data.labels[:3])
    _, opt = local_search(stt, rng)
    assert opt
    for m in range(3):
        c = stt.candidates(m)
        assert np.all(stt.swap_values(m, c) <= stt.value * (1 + 1e-9))


def test_warm_starts_are_feasible():
    f, _, _ = _instance(21, N=40, Kr=3, k=5, n_coreset=4, binary=True)
    d = f.data
    rng = np.random.default_rng(0)
    pos = lars_start(d, 5)
    assert np.unique(pos).size == 5
    lab = d.labels
    L = d.S[np.ix_(lab, lab)] + np.diag(d.noise[lab])
    for s in kdpp_sample(L, 5, rng, 3):
        assert np.unique(s).size == 5 and s.max() < d.items.size
    for b in [kdpp_mcmc(d, 5, rng), *kmeans_starts(d, 5, rng, 3), greedy_search(d)[0]]:
        assert b.size == 5 and np.all(np.bincount(b, minlength=d.n_buckets) <= d.avail)
        items = d.to_items(b)
        assert items.size == 5 and f.check(items).feasible
    b, v, info = smc_search(d, rng, n_particles=6, n_generations=3)
    assert v == pytest.approx(d.value(b)) and info["generations"] <= 3


def test_batchdata_to_items_refuses_overuse():
    f, _, _ = _instance(1, N=12, Kr=1, k=2, n_coreset=2)
    d = f.data
    b = int(np.argmin(d.avail))
    with pytest.raises(InvalidInputError, match="buckets: a bucket is used more often"):
        d.to_items(np.full(int(d.avail[b]) + 1, b))
    assert isinstance(d, BatchData)

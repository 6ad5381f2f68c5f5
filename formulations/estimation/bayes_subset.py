"""BayesAME's estimate on a fixed subset: the bucket model's posterior (SPEC F5) after the target's scores
on the selected items, as an :class:`~benchsel.formulations.estimation.base.Estimator`.

The sequential evaluator (:func:`benchsel.formulations.bayes.evaluate.bayesame_evaluate`) chooses
its items one by one for one target; this estimator takes a subset chosen once (by
``compress(..., selection="bayesame")``, say) and gives every new model the same estimate the
evaluator would report with that coreset: the unified estimator ``Rhat`` and a credible interval
``E[R | C] -/+ z sd(R | C)``, with ``alpha, beta`` fitted on the target's own observations by the
marginal likelihood once ``k >= F`` (the evaluator refits every ``F`` items).
"""
from __future__ import annotations

import numpy as np
from scipy.stats import norm

from benchsel.formulations.core.options import Option

from ..bayes.model import KERNELS, BayesModel, _group_items
from .base import Estimator, register_estimator

#: Further starts of the marginal-likelihood fit: the likelihood has flat regions and several optima, and a
#: fit from (1, 1) alone can stop far from the optimum the sequential evaluator's warm-started refits reach.
FIT_STARTS = tuple((a, b) for a in (1.0, 1e-2) for b in (1.0, 1e2, 1e4))


@register_estimator
class BayesAMEEstimate(Estimator):
    """BayesAME's posterior estimate of the full score from a fixed subset.

    The sources are the reference models of the bucket model (SPEC F5). For a
    target with scores ``s`` on the subset ``C`` (``|C| = k``):
    ``Rhat = w sum_{i in C} s_i + sum_b (N_b/N - n_b w) mu|C[b]`` (``w = 1/N``
    in the unique regime ``B >= N - N0``, else ``1/k``), and the ``1 - alpha``
    interval ``E[R|C] -/+ z_{1-alpha/2} sqrt(Var(R|C))``, clipped to the
    sources' score range.

    ``sigma2`` defaults to the paper's regime rule (``1e-4`` in the unique
    regime, ``1e-1`` otherwise); ``alpha, beta`` start at ``alpha0, beta0`` and
    are fitted per target (L-BFGS-B on the marginal likelihood, from the start
    and the grid :data:`FIT_STARTS`) when ``k >= F``.
    """

    name = "bayesame"
    description = "BayesAME: the bucket model's posterior estimate and credible interval on a fixed subset"
    min_sources = 1
    options = (
        Option("sigma2", None, "float", low=0.0, low_open=True,
               doc="noise variance (default: 1e-4 in the unique regime, 1e-1 otherwise)"),
        Option("tol", None, "float", low=0.0, low_open=True,
               doc="bucketing tolerance for continuous scores (default: identical vectors only)"),
        Option("kernel", "se", "choice", choices=KERNELS, doc="prior covariance family"),
        Option("N0", 10, "int", low=0, doc="margin of the unique regime B >= N - N0"),
        Option("alpha0", 1.0, "float", low=0.0, low_open=True, doc="initial prior scale alpha"),
        Option("beta0", 1.0, "float", low=0.0, low_open=True, doc="initial prior length beta"),
        Option("F", 50, "int", low=1, doc="fit alpha, beta on the target's scores when k >= F"),
    )

    def _fit(self, Y: np.ndarray | None, sel: np.ndarray) -> None:
        assert Y is not None
        p = self.params
        buckets = _group_items(Y, p["tol"])
        self.unique_ = bool(buckets.unique_regime(p["N0"]))
        sigma2 = p["sigma2"] if p["sigma2"] is not None else (1e-4 if self.unique_ else 1e-1)
        # Y checked by fit; tol, sigma2 and kernel are options, checked when they were given
        self.model_ = BayesModel._from_checked(buckets, sigma2=sigma2, kernel=p["kernel"])
        self.sigma2_ = float(sigma2)

    def _posterior(self, y: np.ndarray) -> tuple[float, float, float]:
        """(Rhat, E[R|C], Var(R|C)) for one target's scores on the subset, shape (k,)."""
        p, m, sel = self.params, self.model_, self.selection_
        a, b = p["alpha0"], p["beta0"]
        if sel.size >= p["F"]:
            a, b, _ = m.fit(sel, y, alpha0=a, beta0=b, extra_starts=FIT_STARTS)
        post = m.posterior(sel, y, alpha=a, beta=b)
        r = (m.buckets.sizes - post.counts).astype(float)
        var = m.var_R(post.cov @ r, post.counts)
        total = float(y.sum())
        est = m.estimate(post.mean, post.counts, total, sel.size, p["N0"])
        return est, m.mean_R(post.mean, post.counts, total), float(var)

    def _all(self, Yt: np.ndarray) -> np.ndarray:
        """Rows (Rhat, E[R|C], Var(R|C)) per target, shape (T, 3)."""
        return np.array([self._posterior(y) for y in Yt], dtype=float).reshape(-1, 3)

    def _predict(self, Yt: np.ndarray) -> np.ndarray:
        return self._all(Yt)[:, 0]

    def _interval(self, Yt: np.ndarray, alpha: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        out = self._all(Yt)
        half = float(norm.ppf(1 - alpha / 2)) * np.sqrt(np.maximum(out[:, 2], 0.0))
        return out[:, 0], out[:, 1] - half, out[:, 1] + half

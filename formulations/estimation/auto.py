"""The default estimator: stacking where the new model is inside the sources' range, model-assisted
where it is outside.

A new model is usually stronger than every source model. Stacking (:class:`~.linear.Stacked`) learns a map
from coreset scores to full scores across the sources, which is the most accurate estimate among models
like the sources and biased beyond them; the model-assisted estimate (:class:`~.design.ModelAssisted`)
is corrected by the target's own residuals and stays close to unbiased there. Per target, the
model-assisted estimate decides: inside the sources' full-score range (widened by ``range_margin``) the
target gets the stacked estimate, outside it the model-assisted one. :meth:`Auto.route` says which.
"""
from __future__ import annotations

import math
from typing import Any

import numpy as np

from benchsel.formulations.core.errors import InvalidInputError
from benchsel.formulations.core.options import Option

from .base import Estimator, conformal_quantile, get_estimator, register_estimator
from .design import FLOOR_QUANTILE, TOP_SHARE, ModelAssisted
from .linear import Stacked

__all__ = ["Auto"]

INSIDE, OUTSIDE = "stacked", "model-assisted"
#: Default of ``ambiguous_z`` (chosen on the fidelity benchmark's nine matrices, docs/results/new_models.md).
AMBIGUOUS_Z = 1.0


@register_estimator
class Auto(Estimator):
    """Per target: ``"stacked"`` inside the sources' full-score range, ``"model-assisted"`` outside.

    Intervals (SPEC F11: they must hold for every kind of model, not only on average): inside, the stacked
    estimate plus or minus the split-conformal quantile of the stacked estimator's errors on held-out sources
    (with ``scaled``, each error over that source's model-assisted standard error, the quantile times the
    target's: narrower near the ends of the score range, wider in the middle), joined with the
    model-assisted interval, so that a model the stacked estimate is biased for is still
    covered; when the model-assisted estimate lies within ``ambiguous_z`` of its standard errors of the
    range's edge, the side toward that edge reaches one more standard error (a strong model whose noisy
    estimate fell just inside: extrapolation is likely, and the route selected a low draw). Outside, the
    model-assisted interval, joined with the stacked one within ``ambiguous_z`` standard errors of the range
    (a model of the sources' kind whose noisy estimate fell just outside). Sources that carry no information
    (every source scores alike on every item) give a warning and the model-assisted (design-based) estimate
    and interval for every target.
    """

    name = "auto"
    description = ("stacked estimate for models inside the sources' range, model-assisted (GREG) estimate "
                   "outside it, decided per model")
    options = (
        Option("stacked", None, "any",
               doc="options of the stacked estimator (a mapping); its members default to ridge, cluster-weighted "
                   "and model-assisted (no IRT fit: fast on large matrices)"),
        Option("weights", None, "any", doc="(k,) design weights of the selected items, for the model-assisted part"),
        Option("top_share", TOP_SHARE, "float", low=0.0, high=1.0,
               doc="share of the strongest sources whose item means are a feature (model-assisted part)"),
        Option("floor_quantile", FLOOR_QUANTILE, "float", low=0.0, high=1.0,
               doc="the model-assisted part's variance floor (its option of the same name)"),
        Option("components", None, "any",
               doc="the model-assisted parts' item components (its option of the same name; None: one per 20 "
                   "selected items, at most 5)"),
        Option("range_margin", 0.0, "float", doc="widen the sources' full-score range by this much on both sides"),
        Option("route_z", 0.0, "float", low=0.0,
               doc="outside only when the model-assisted estimate is this many of its standard errors beyond "
                   "the range"),
        Option("ambiguous_z", AMBIGUOUS_Z, "float", low=0.0,
               doc="within this many standard errors of the range's edge: outside, the interval also covers the "
                   "stacked one; inside, its side toward the edge reaches one standard error beyond the "
                   "model-assisted interval"),
        Option("scaled", True, "bool",
               doc="inside, the conformal half-width scales with each model's model-assisted standard error "
                   "(the quantile of the sources' errors over their own standard errors): narrow near the ends "
                   "of the range, wide in the middle (just outside the range, at least the unscaled one); False: "
                   "one half-width for every model"),
        Option("sure", True, "bool",
               doc="0/1 scores: a target scoring 1 (0) on every selected item gets a low (high) end at most the "
                   "one-sided Clopper-Pearson end of the stratified sample (the model-assisted part's option)"),
        Option("seed", 0, "int", low=0, doc="seeds the stacked estimator's folds"),
    )
    #: with fewer sources than the stacked estimator needs (4), every target gets the model-assisted estimate
    min_sources = 2
    routes = True

    def _check_params(self, params: dict[str, Any]) -> dict[str, Any]:
        st = params["stacked"]
        if st is not None and not isinstance(st, dict):
            raise InvalidInputError(f"stacked: expected a mapping of the stacked estimator's options, got {st!r}")
        #: the unfitted members, their options checked now, once (every fit copies them)
        self._prototypes = self._members(params)
        return params

    @staticmethod
    def _members(params: dict[str, Any]) -> tuple[Estimator, ModelAssisted]:
        ma = {"components": params["components"]}
        if params["weights"] is not None:
            ma["weights"] = params["weights"]
        st = {"seed": params["seed"], "members": (("ridge", {}), ("cluster-weighted", {}), ("model-assisted", ma)),
              **dict(params["stacked"] or {})}
        return (get_estimator("stacked", **st),
                ModelAssisted(weights=params["weights"], top_share=params["top_share"],
                              floor_quantile=params["floor_quantile"], components=params["components"],
                              sure=params["sure"]))

    def _fit(self, Y: np.ndarray | None, sel: np.ndarray) -> None:
        assert Y is not None
        stacked = self._prototypes[0]._unfitted()
        self.model_assisted_ = self._prototypes[1]._unfitted()
        self.model_assisted_._fit_checked(Y, sel, self.n_items_)  # Y and sel checked by fit
        full = Y.mean(axis=1)
        m = self.params["range_margin"]
        self.stacked_: Estimator | None = None
        self.range_ = (math.inf, -math.inf)  # empty: every target outside
        if Y.shape[0] >= stacked.min_sources and not self.uninformative_:
            self.stacked_ = stacked._fit_checked(Y, sel, self.n_items_)
            self.range_ = (float(full.min()) - m, float(full.max()) + m)
            self._scaled_residuals(Y[:, sel])

    def _scaled_residuals(self, Ys: np.ndarray) -> None:
        """The stacked estimate's out-of-fold errors on the sources over each source's model-assisted standard
        error (``scaled_residuals_``, shape (S',); None when not ``scaled``, or a standard error is 0)."""
        self.scaled_residuals_: np.ndarray | None = None
        assert isinstance(self.stacked_, Stacked)
        if not self.params["scaled"]:
            return
        se = self.model_assisted_.estimate_se(Ys[self.stacked_.oof_sources_])[1]
        if np.all(se > 0):
            self.scaled_residuals_ = np.asarray(self.stacked_._conformal_residuals(), dtype=float) / se

    def _half(self, se: np.ndarray, alpha: float, inside: np.ndarray) -> np.ndarray:
        """The stacked estimate's conformal half-width for targets of model-assisted standard error ``se``,
        shape (T,) (infinite with too few sources). Scaled, for targets ``inside`` the range; for the others
        (joined just outside the range) at least the unscaled quantile: their standard error is that of an
        estimate beyond the sources' scores, the smallest near 0 or 1, while the stacked estimate's error is
        that of a model inside."""
        assert self.stacked_ is not None
        plain = conformal_quantile(self.stacked_._conformal_residuals(), alpha)
        if self.scaled_residuals_ is None:
            return np.full(se.shape, plain)
        scaled = conformal_quantile(self.scaled_residuals_, alpha) * se
        return np.where(inside, scaled, np.maximum(scaled, plain))

    def _check_targets(self, Yt: np.ndarray) -> None:
        if self.stacked_ is not None:
            self.stacked_._check_targets(Yt)

    def route(self, Y_target: Any) -> np.ndarray:
        """Which estimate each target gets: ``"stacked"`` or ``"model-assisted"``; shape (T,)."""
        Yt = self._targets(Y_target)
        ma, se, _ = self.model_assisted_.estimate_se(Yt)
        return np.where(self._inside(ma, se), INSIDE, OUTSIDE)

    def _inside(self, ma: np.ndarray, se: np.ndarray) -> np.ndarray:
        """Targets whose model-assisted estimate ``ma`` (standard error ``se``) lies in the range; shape (T,)."""
        z = self.params["route_z"] * se
        lo, hi = self.range_
        return (ma + z >= lo) & (ma - z <= hi)

    def _predict(self, Yt: np.ndarray) -> np.ndarray:
        if self.stacked_ is None:
            return self.model_assisted_._predict(Yt)
        ma, se, _ = self.model_assisted_.estimate_se(Yt)
        return np.where(self._inside(ma, se), self.stacked_._predict(Yt), self.model_assisted_._clip(ma))

    def _design_se(self, Yt: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        return self.model_assisted_._design_se(Yt)

    def _spread(self, Yt: np.ndarray, alpha: float) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """The interval of the route each target takes as standard errors, without the hedges of
        :meth:`_interval` (a suite joins its sum with the sum of the model-assisted estimates once, for the
        suite): inside, the stacked estimate with the conformal quantile over the normal quantile (infinite
        degrees of freedom); outside, the model-assisted estimate, its standard error and degrees of freedom.
        Without the sure end of :meth:`_interval`: a suite's sum of several tasks rarely has every task's
        sampled scores alike, and the end as a standard error widened the suite's interval past 95 % (measured
        in docs/suites.md)."""
        from scipy.stats import norm

        ma_raw, se, dof = self.model_assisted_.estimate_se(Yt)
        ma, dofs = self.model_assisted_._clip(ma_raw), np.full(se.shape, float(dof))
        inside = self._inside(ma_raw, se)
        q = self._half(se, alpha, inside) if self.stacked_ is not None else np.full(se.shape, math.inf)
        if self.stacked_ is None or not np.all(np.isfinite(q)):
            return self._predict(Yt), se, se, dofs
        se_r = np.where(inside, q / float(norm.ppf(1 - alpha / 2)), se)
        return np.where(inside, self.stacked_._predict(Yt), ma), se_r, se_r, np.where(inside, np.inf, dofs)

    def _interval(self, Yt: np.ndarray, alpha: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        ma_raw, se, dof = self.model_assisted_.estimate_se(Yt)
        ma, ma_lo, ma_hi = self.model_assisted_.t_interval(ma_raw, se, dof, alpha)
        if self.stacked_ is None:
            return (ma, *self.model_assisted_.sure_limits(Yt, alpha, ma_lo, ma_hi))
        inside = self._inside(ma_raw, se)
        st = self.stacked_._predict(Yt)
        q = self._half(se, alpha, inside)
        half = np.where(np.isfinite(q), q, (ma_hi - ma_lo) / 2)
        lo_r, hi_r = self.range_
        z = self.params["ambiguous_z"] * se
        join = inside | ((ma_raw >= lo_r - z) & (ma_raw <= hi_r + z))  # inside, or just outside
        lo = np.where(join, np.minimum(ma_lo, st - half), ma_lo)
        hi = np.where(join, np.maximum(ma_hi, st + half), ma_hi)
        # inside, near an edge: one more standard error toward it
        lo = np.where(inside & (ma_raw - lo_r <= z), np.minimum(lo, ma_lo - se), lo)
        hi = np.where(inside & (hi_r - ma_raw <= z), np.maximum(hi, ma_hi + se), hi)
        return (np.where(inside, st, ma), *self.model_assisted_.sure_limits(Yt, alpha, lo, hi))

"""Methods for :class:`benchsel.formulations.BatchInformationGain` (BayesAME's batch problem): the registered
wrappers of the searches in :mod:`benchsel.formulations.bayes.search` (``"exhaustive"``, ``"smc"``, ``"greedy"``)."""
from __future__ import annotations

from typing import Any

from benchsel.formulations.bayes.problem import BatchInformationGain
from benchsel.formulations.bayes.search import exhaustive_search, greedy_search, smc_search
from benchsel.formulations.core.options import Option
from benchsel.formulations.core.registry import register_method
from benchsel.formulations.core.result import MethodOutput, Termination
from benchsel.formulations.core.validation import check_rng

from ._common import Clock, output, progress

__all__ = ["run_exhaustive", "run_greedy", "run_smc"]


@register_method(
    "exhaustive",
    kind="exact",
    accepts=BatchInformationGain,
    description="exact enumeration of item sets or bucket-count vectors (BayesAME batch problem)",
    options=(
        Option("mode", "auto", "choice", choices=("auto", "items", "counts"),
               doc="enumerate item sets or bucket-count vectors (auto: the smaller space)"),
        Option("max_candidates", 5_000_000, "int", low=1, doc="refuse spaces larger than this"),
        Option("verbose", False, "bool", doc="a summary line"),
    ),
)
def run_exhaustive(f: BatchInformationGain, *, time_limit: float | None, seed: int | None, mode: str,
                   max_candidates: int, verbose: bool):
    clock = Clock(time_limit)
    b, v, info = exhaustive_search(f.data, mode=mode, max_candidates=max_candidates, clock=clock)
    progress(verbose,
             f"exhaustive ({info['mode']}): {info['evaluated']}/{info['n_candidates']} evaluated, best {v:.6g}")
    sel = f.data.to_items(b)
    term = Termination.OPTIMAL if info["complete"] else Termination.TIME_LIMIT
    return MethodOutput(selection=sel, termination=term, bound=v if info["complete"] else None,
                        build_seconds=0.0, solve_seconds=clock.elapsed, extra=info)


SMC_OPTIONS = (
    Option("n_particles", 24, "int", low=1, doc="population size"),
    Option("n_generations", 30, "int", low=1, doc="generations (cap)"),
    Option("patience", 6, "int", low=1, doc="generations without improvement before stopping"),
    Option("starts", ("lars", "dpp", "kmeans"), "any", doc="start generators: 'lars', 'dpp', 'kmeans' (or one)"),
    Option("n_mutations", None, "int", low=0, doc="swap moves per particle and generation (default: k)"),
    Option("max_swaps", None, "int", low=1, doc="cap on swap evaluations"),
    Option("dpp_exact_max", 400, "int", low=0, doc="largest candidate set sampled by the exact k-DPP"),
    Option("dpp_mcmc_steps", None, "int", low=1, doc="MCMC steps of the approximate k-DPP"),
    Option("temperature", None, "float", low=0.0, low_open=True, doc="resampling temperature (default adaptive)"),
    Option("verbose", False, "bool", doc="one progress line per generation"),
)


@register_method(
    "smc",
    kind="heuristic",
    accepts=BatchInformationGain,
    description="SMC batch search: LARS / k-DPP / k-means starts, Woodbury single swaps, fitness resampling",
    options=SMC_OPTIONS,
)
def run_smc(f: BatchInformationGain, *, time_limit: float | None, seed: int | None, n_particles: int,
            n_generations: int, patience: int, starts: Any, n_mutations: int | None, max_swaps: int | None,
            dpp_exact_max: int, dpp_mcmc_steps: int | None, temperature: float | None, verbose: bool):
    starts = (starts,) if isinstance(starts, str) else tuple(starts)
    rng = check_rng(seed)
    clock = Clock(time_limit)
    b, _v, info = smc_search(f.data, rng, n_particles=n_particles, n_generations=n_generations, patience=patience,
                            starts=starts, n_mutations=n_mutations, max_swaps=max_swaps, dpp_exact_max=dpp_exact_max,
                            dpp_mcmc_steps=dpp_mcmc_steps, temperature=temperature, clock=clock, verbose=verbose)
    stopped = {"converged": Termination.CONVERGED, "iteration_limit": Termination.ITERATION_LIMIT,
               "time_limit": Termination.TIME_LIMIT}[info["stopped"]]
    return output(f.data.to_items(b), clock, stopped=stopped, generations=info["generations"], swaps=info["swaps"],
                  **{f"start_{k}": val for k, val in info["start_values"].items()})


def run_greedy(f: BatchInformationGain, *, time_limit: float | None, seed: int | None):
    clock = Clock(time_limit)
    b, _ = greedy_search(f.data)
    return output(f.data.to_items(b), clock)


register_method("greedy", kind="heuristic", accepts=BatchInformationGain,
                description="greedy: add the item that increases beta(A) most, k times (BatchInformationGain)",
                options=())(run_greedy)


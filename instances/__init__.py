"""Instance generators and loaders (OR-Library, score tables, response matrices, evaluation logs).

Names are imported lazily so ``import instances`` stays light.
"""
from __future__ import annotations

from benchsel.formulations.core.lazy import lazy_exports

_LAZY = {
    # OR-Library p-median
    "load_pmed": "benchsel.instances.orlib",
    "load_pmed_optima": "benchsel.instances.orlib",
    "read_pmed_graph": "benchsel.instances.orlib",
    "pmed_graph": "benchsel.instances.orlib",
    # seeded generators
    "make_kmedoids": "benchsel.instances.synthetic",
    "make_benchmark_responses": "benchsel.instances.synthetic",
    # positional (score tables, rankings)
    "load_score_table": "benchsel.instances.scores",
    "mallows_profile": "benchsel.instances.scores",
    "swap_pairs_profile": "benchsel.instances.scores",
    "score_directions": "benchsel.instances.scores",
    # response tensors
    "load_responses": "benchsel.instances.responses",
    "make_multimetric": "benchsel.instances.responses",
    "paper_split": "benchsel.instances.responses",
    "weak_to_strong_split": "benchsel.instances.responses",
    "Responses": "benchsel.instances.responses",
    # model splits for BayesAME
    "interpolation_split": "benchsel.instances.splits",
    "extrapolation_split": "benchsel.instances.splits",
    # hidden states (RepCore)
    "HiddenStates": "benchsel.instances.hidden",
    "load_hidden_states": "benchsel.instances.hidden",
    "save_hidden_states": "benchsel.instances.hidden",
    "make_hidden_states": "benchsel.instances.hidden",
    # instance files
    "save_instance": "benchsel.instances.files",
    "load_instance": "benchsel.instances.files",
    # evaluation logs and score files -> models x items DataFrames
    "load_scores": "benchsel.instances.scorefiles",
    "read_lm_eval_samples": "benchsel.instances.evallogs",
    "read_leaderboard_details": "benchsel.instances.leaderboard",
    "read_helm_runs": "benchsel.instances.helm",
    "write_samples_json": "benchsel.instances.evallogs",
}

__all__ = sorted(_LAZY)

__getattr__, __dir__ = lazy_exports(__name__, _LAZY)

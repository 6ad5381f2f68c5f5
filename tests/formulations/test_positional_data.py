"""Real leaderboard tables of shared/data/positional: loader and solves (skipped when the data is absent)."""
from __future__ import annotations

import itertools

import numpy as np
import pytest
from support.data import needs_data

from benchsel.benchmarks._data import default_data_dir
from benchsel.benchmarks.studies.positional_lite import HELM_LITE_IN_CLASSIC
from benchsel.formulations import PositionalProportionality as PP
from benchsel.formulations import PositionalRepresentation as PR
from benchsel.instances import load_score_table
from benchsel.instances.scores import score_directions
from benchsel.solvers import InvalidInputError, solve

DATA = default_data_dir()
POS = None if DATA is None else DATA / "positional"

# file: (alternatives, metric columns, missing cells) after dropping empty rows/columns
EXPECTED = {
    "helm/accuracy.tsv": (67, 16, 196),
    "helm/fairness.tsv": (67, 14, 146),
    "helm/robustness.tsv": (67, 14, 146),
    "helm/calibration.tsv": (48, 12, 42),
    "helm/efficiency.tsv": (26, 16, 21),
    "helm/summarization.tsv": (42, 18, 253),
    "helm/bias.tsv": (67, 30, 720),
    "helm/toxicity.tsv": (67, 9, 143),
    "helm/helm_lite_240829.csv": (72, 10, 1),
    "bigbench/leaderboard.tsv": (107, 27, 0),
}


@needs_data("positional")
@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_load_every_table(name):
    df = load_score_table(POS / name)
    m, n, miss = EXPECTED[name]
    assert df.shape == (m, n)
    assert int(df.isna().to_numpy().sum()) == miss == df.attrs["n_missing"]
    assert not any(c in df.columns for c in ("Mean win rate", "helm_lite", "Average", "Rank", "Parameters"))
    assert df.index.is_unique


@needs_data("positional")
def test_directions_and_dropped_columns():
    cal = load_score_table(POS / "helm/calibration.tsv")
    assert not score_directions(cal).any()  # ECE: lower is better
    assert len(cal.attrs["dropped_empty_rows"]) == 19
    acc = load_score_table(POS / "helm/accuracy.tsv")
    assert score_directions(acc).all()
    bias = load_score_table(POS / "helm/bias.tsv")
    assert len(bias.attrs["dropped_empty_columns"]) == 18 and not score_directions(bias).any()
    bb = load_score_table(POS / "bigbench/leaderboard.tsv")
    assert bb.attrs["skipped_columns"] == ["Rank", "Company", "Release", "Parameters", "Average"]
    # the loaded direction is used by from_scores: the best ECE (smallest) ranks first
    f = PR.from_scores(cal, g=2, missing="last")
    col = 0
    best = cal.iloc[:, col].idxmin()
    assert f.positions[list(cal.index).index(best), col] == 1


@needs_data("positional")
def test_missing_policies_on_accuracy():
    df = load_score_table(POS / "helm/accuracy.tsv")
    with pytest.raises(InvalidInputError, match="196 missing scores"):
        PR.from_scores(df, g=2)
    drop = PR.from_scores(df, g=2, missing="drop")
    last = PR.from_scores(df, g=2, missing="last")
    assert drop.n_alternatives == 29 and last.n_alternatives == 67
    for f in (drop, last):
        res = solve(f, "highs", time_limit=30)
        assert res.termination == "optimal" and res.feasible
        gc = solve(f, "greedy-color")
        assert gc.feasible and gc.objective >= res.objective
    with pytest.raises(InvalidInputError, match="removes all"):
        PR.from_scores(load_score_table(POS / "helm/bias.tsv"), g=2, missing="drop")


@needs_data("positional")
def test_proportionality_on_helm_lite():
    df = load_score_table(POS / "helm/helm_lite_240829.csv")
    f = PP.from_scores(df, eps=0.2, missing="drop")
    res = solve(f, "highs", time_limit=30)
    assert res.termination == "optimal" and f.is_proportional(res.selection)
    smp = solve(f, "sample", time_limit=30)
    assert smp.feasible and smp.objective >= res.objective
    chk = f.scoring_rule_check(res.selection)
    assert (chk["abs_diff"] <= chk["eps_bound"] + 1e-12).all()  # eps-proportional: within eps * (s_1 - s_m)


def test_loader_errors(tmp_path):
    bad = tmp_path / "bad.tsv"
    bad.write_text("Model\tMean win rate\tA\tB\nm1\t0.5\t0.1\tx\nm2\t0.4\t-\t0.3\n\n")
    with pytest.raises(InvalidInputError, match=r"column 'B'.*'m1'.*'x'"):
        load_score_table(bad)
    ok = tmp_path / "ok.tsv"
    ok.write_text("Model\tMean win rate\tA\tB - ECE\nm1\t0.5\t0.1\t0.2\nm2\t0.4\t-\t0.3\n\n\n")
    df = load_score_table(ok)
    assert df.shape == (2, 2) and np.isnan(df.loc["m2", "A"]) and df.attrs["lower_is_better"] == ["B - ECE"]
    with pytest.raises(InvalidInputError, match="not found"):
        load_score_table(tmp_path / "missing.tsv")


@needs_data("positional", "helm", "accuracy.tsv")
@pytest.mark.parametrize("policy", ["drop", "last"])
def test_helm_lite_extension_agrees_with_brute_force_over_its_supersets(policy):
    """The study's include= rows (benchmarks/studies/positional_lite.py): the 5 HELM Lite scenarios of HELM
    Classic accuracy forced, every superset (2**11) enumerated."""
    df = load_score_table(POS / "helm/accuracy.tsv")
    lite = list(HELM_LITE_IN_CLASSIC)
    for f in (PP.from_scores(df, eps=0.2, missing=policy, include=lite),
              PR.from_scores(df, g=3, missing=policy, include=lite)):
        L = f.include
        rest = np.setdiff1d(np.arange(f.n_metrics), L)
        best = min(len(L) + k for k in range(rest.size + 1) for c in itertools.combinations(rest.tolist(), k)
                   if f.is_feasible(np.sort(np.concatenate([L, np.asarray(c, dtype=np.int64)]))))
        for m in ("auto", "highs", "sample" if isinstance(f, PP) else "greedy-multicover"):
            r = solve(f, m, seed=0, time_limit=60)
            assert r.feasible and set(L.tolist()) <= set(r.selection.tolist())
            if m in ("auto", "highs"):
                assert r.termination == "optimal" and r.objective == best
            else:
                assert r.objective >= best

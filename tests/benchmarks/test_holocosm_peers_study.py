"""The HoloCosm peers study's summaries (headline, cross-metric diagnostics) on a small synthetic set."""
from __future__ import annotations

import numpy as np
import pytest
from support.data import needs_data

from benchsel.benchmarks.studies import holocosm_peers as study
from benchsel.benchmarks.studies.holocosm_fidelity import real_sets
from benchsel.formulations.core.errors import InvalidInputError
from benchsel.formulations.holocosm import cross_metric_worse_share, metric_rank_correlation
from benchsel.instances.responses import make_multimetric, paper_split


def test_peers_study_summaries_on_a_synthetic_set(tmp_path):
    R = make_multimetric(12, 40, 3, corr=0.5, n_negative=1, seed=5)
    T = R.oriented()
    sp = paper_split(R, 6)
    X, Yt = sp.take(T)
    sets = [{"name": "s", "kind": "synthetic", "X": X, "Yt": Yt, "Y_all": T, "metrics": ["a", "b", "c"], "n_sources": 6,
             "n_targets": int(sp.targets.size), "N": 40, "K": 3, "split": "paper"}]
    rows = study.run(sets, (0.2,), 2, ("holocosm", "random", "kmeans", "anchorpoints"), quiet=True)
    assert len(rows) == 2 * (3 + 4)
    h = study.headline(rows, 0.2)
    ent = study.entries(rows, 0.2)
    best = ent["anchorpoints_best"]["s"]
    per_target = {k: np.mean([r["mean_nmae"] for r in rows if r["target"] == k]) for k in range(3)}
    assert best[0]["target"] == min(per_target, key=per_target.get)
    hs = [r["mean_nmae"] for r in rows if r["method"] == "holocosm"]
    rs = [r["mean_nmae"] for r in rows if r["method"] == "random"]
    expected = np.mean([1 - a / b for a, b in zip(hs, rs)])
    assert h["comparisons"]["vs_random_mean_nmae"]["mean"] == pytest.approx(expected)
    d = study.diagnostics(sets, rows, 0.2)
    ref = np.mean([r["nmae"] for r in rows if r["method"] == "random"], axis=0)
    tab = np.array([np.mean([r["nmae"] for r in rows if r["target"] == k], axis=0) for k in range(3)])
    assert d["worse_share"]["s|anchorpoints"]["share"] == pytest.approx(cross_metric_worse_share(tab, ref))
    sizes = [len({i for r in rows if r["target"] in (0, 1, 2) and r["seed"] == s for i in r["selection"]})
             for s in range(2)]
    assert d["union"]["s|anchorpoints"]["size"]["mean"] == pytest.approx(np.mean(sizes))
    assert np.allclose(d["rank_correlation"]["s"]["table"], metric_rank_correlation(T))
    png = study.write_figure(d, tmp_path / "diag.png")
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


@needs_data("responses", "wmt_mqm", "ted_ende_multimetric.npz")
def test_real_sets_split_option():
    paper = {d["name"]: d for d in real_sets()}
    w2s = {d["name"]: d for d in real_sets(split="weak2strong")}
    assert set(paper) == set(w2s) == {"ted_ende", "ted_zhen", "unieval_topical_chat"}
    for name, d in w2s.items():
        assert d["split"] == "weak2strong" and paper[name]["split"] == "paper"
        assert d["X"].shape[0] == d["n_sources"] and d["X"].shape[0] + d["Yt"].shape[0] == d["Y_all"].shape[0]
        # every source is at most as strong as every target on the split score
        T = d["Y_all"].mean(axis=1)
        lo, hi = T.min(axis=0), T.max(axis=0)
        score = np.where(hi > lo, (T - lo) / np.where(hi > lo, hi - lo, 1.0), 0.0).mean(axis=1)
        src = [int(np.flatnonzero((T == x).all(axis=1))[0]) for x in d["X"].mean(axis=1)]
        assert score[src].max() <= np.delete(score, src).min()
    with pytest.raises(InvalidInputError, match="split"):
        real_sets(split="random")

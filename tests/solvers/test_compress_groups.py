"""``compress`` on lm-eval logs with groups: each group's weighting inferred from the reported scores, the
suite's weights as products of level weights, group estimates and intervals, named errors, saving."""
from __future__ import annotations

import json

import numpy as np
import pytest
from support.evallog_formats import model_scores, write_lm_eval_run

from benchsel.formulations.core.errors import InvalidInputError
from benchsel.formulations.estimation.groups import GroupTree
from benchsel.instances.evallogs import read_lm_eval_samples
from benchsel.solvers.compression import compress, load_compressed
from benchsel.solvers.saved import estimate_table

SIZES = {"mm_h1": 6, "mm_h2": 14, "mm_s1": 4, "mm_s2": 8, "mm_s3": 16}
GROUPS = {"mm": ["mm_hum", "mm_stem"], "mm_hum": ["mm_h1", "mm_h2"], "mm_stem": ["mm_s1", "mm_s2", "mm_s3"]}


def _logs(out, *, n_models=12, extra=None, groups=GROUPS, weight_by_size=True, group_results=None):
    scores = model_scores(n_models, {**SIZES, **(extra or {})}, seed=4)
    for m, tasks in scores.items():
        write_lm_eval_run(out, m, tasks, groups=groups(m) if callable(groups) else groups,
                          weight_by_size=weight_by_size, group_results=group_results)
    return read_lm_eval_samples(out, "acc")


def _task_means(df):
    tasks = np.array(df.attrs["tasks"])
    return {t: df.loc[:, tasks == t].mean(axis=1).to_numpy() for t in dict.fromkeys(tasks)}


def test_size_weighted_at_every_level_is_the_micro_average_and_reproduces_lm_evals_score(tmp_path):
    df = _logs(tmp_path)
    c = compress(df, 15, seed=0)
    assert c.groups == ["mm", "mm_hum", "mm_stem"]
    assert c.group_tree.weighting == dict.fromkeys(c.groups, "size") and c.group_tree.suite == "groups"
    N = sum(SIZES.values())
    assert c.estimator.params["aggregate"] == pytest.approx({t: n / N for t, n in SIZES.items()})
    # the suite's target is lm-eval's own mm score of every source model
    means = _task_means(df)
    target = sum(w * means[t] for t, w in c.estimator.params["aggregate"].items())
    reported = [df.attrs["group_report"]["values"][m]["mm"] for m in df.index]
    assert target == pytest.approx(reported)
    X = c.subset(df)
    G, T = c.predict_groups(X), c.predict_tasks(X)
    assert list(G.columns) == c.groups and G.columns.name == "group"
    assert G["mm"].to_numpy() == pytest.approx(c.predict(X).to_numpy())
    w = np.array([SIZES["mm_s1"], SIZES["mm_s2"], SIZES["mm_s3"]], dtype=float)
    assert G["mm_stem"].to_numpy() == pytest.approx(T[["mm_s1", "mm_s2", "mm_s3"]].to_numpy() @ (w / w.sum()))
    lo, hi = c.predict_groups_interval(X, alpha=0.1)
    assert (lo.to_numpy() <= G.to_numpy() + 1e-12).all() and (G.to_numpy() <= hi.to_numpy() + 1e-12).all()


def test_a_macro_group_and_ungrouped_tasks(tmp_path):
    df = _logs(tmp_path, extra={"arc": 10}, weight_by_size={"mm": False, "mm_hum": True, "mm_stem": False})
    c = compress(df, 18, seed=1)
    assert c.group_tree.weighting == {"mm": "plain", "mm_hum": "size", "mm_stem": "plain"}
    w = c.estimator.params["aggregate"]
    # the suite: the plain mean of its roots, mm and arc
    assert w["arc"] == pytest.approx(0.5)
    assert w["mm_h1"] == pytest.approx(0.5 * 0.5 * 6 / 20) and w["mm_s3"] == pytest.approx(0.5 * 0.5 / 3)
    means = _task_means(df)
    mm = {t: v / 0.5 for t, v in w.items() if t != "arc"}
    assert sum(v * means[t] for t, v in mm.items()) == pytest.approx(
        [df.attrs["group_report"]["values"][m]["mm"] for m in df.index])


def test_a_group_score_that_is_neither_mean_is_a_named_error(tmp_path):
    df = _logs(tmp_path, group_results={"mm_hum": {"acc,none": 0.987}})
    with pytest.raises(InvalidInputError, match=r"aggregate: lm-eval reports group 'mm_hum' = 0\.987.*--aggregate"):
        compress(df, 15, seed=0)
    c = compress(df, 15, seed=0, aggregate="macro")  # the user decides: groups follow the suite's weights
    assert c.group_tree.weighting == dict.fromkeys(c.groups, "aggregate") and c.group_tree.suite == "aggregate"
    X = c.subset(df)
    assert c.predict_groups(X)["mm_hum"].to_numpy() == pytest.approx(
        c.predict_tasks(X)[["mm_h1", "mm_h2"]].mean(axis=1).to_numpy())


def test_groups_that_differ_between_models_are_a_named_error(tmp_path):
    other = {"mm": ["mm_hum", "mm_stem"], "mm_hum": ["mm_h1", "mm_h2", "mm_s1"], "mm_stem": ["mm_s2", "mm_s3"]}
    df = _logs(tmp_path, groups=lambda m: other if m.endswith("-5") else GROUPS)
    with pytest.raises(InvalidInputError, match=r"aggregate: the models' lm-eval results disagree on the groups: "
                                                r".*'mm_hum'.*--aggregate"):
        compress(df, 15, seed=0)
    with pytest.warns(UserWarning, match="disagree on the groups.*no group rows"):
        c = compress(df, 15, seed=0, aggregate="micro")
    assert c.groups is None and c.tasks == list(SIZES)


def test_a_group_not_read_whole_is_a_named_error(tmp_path):
    _logs(tmp_path)
    df = read_lm_eval_samples(tmp_path, "acc", tasks=["mm_s*", "mm_h1"])
    with pytest.raises(InvalidInputError, match=r"aggregate: group 'mm_hum' was not read whole: 1 of its 2 members "
                                                r"\('mm_h2'\).*--aggregate"):
        compress(df, 12, seed=0)
    with pytest.warns(UserWarning, match=r"groups: 2 group\(s\) not read whole get no row"):
        c = compress(df, 12, seed=0, aggregate="macro")
    assert c.groups == ["mm_stem"]


def test_equal_sizes_unreported_groups_and_groups_off(tmp_path):
    groups = {"tag": ["g", "c"], "g": ["a", "b"]}
    scores = model_scores(10, {"a": 8, "b": 8, "c": 12}, seed=2)
    for m, tasks in scores.items():
        write_lm_eval_run(tmp_path, m, tasks, groups=groups, group_results={"tag": {"acc,none": None}})
    df = read_lm_eval_samples(tmp_path, "acc")
    c = compress(df, 10, seed=0)
    assert c.group_tree.weighting == {"tag": "unreported", "g": "equal-sizes"}
    assert c.estimator.params["aggregate"] == pytest.approx({"a": 0.25, "b": 0.25, "c": 0.5})
    c = compress(df, 10, seed=0, groups=False)
    assert c.groups is None and c.estimator.params["aggregate"] == "macro"
    with pytest.raises(InvalidInputError, match="groups: given without tasks"):
        compress(df, 10, seed=0, tasks=False, groups={"g": ["a", "b"]})
    with pytest.raises(InvalidInputError, match="groups: group 'g' names members that are neither tasks nor groups: "
                                                "'bb'"):
        compress(df.to_numpy(), 10, seed=0, tasks=df.attrs["tasks"], groups={"g": ["a", "bb"]})
    with pytest.raises(InvalidInputError, match="groups: expected a mapping"):
        compress(df.to_numpy(), 10, seed=0, tasks=df.attrs["tasks"], groups="g")


def test_saved_compressions_keep_the_groups_and_refuse_an_edit(tmp_path):
    df = _logs(tmp_path / "logs")
    c = compress(df, 15, seed=0)
    c.save(tmp_path / "c")
    d = load_compressed(tmp_path / "c")
    assert d.groups == c.groups and d.group_tree == c.group_tree
    X = c.subset(df)
    assert d.predict_groups(X).to_numpy() == pytest.approx(c.predict_groups(X).to_numpy())
    meta = json.loads((tmp_path / "c" / "compression.json").read_text())
    assert meta["groups"]["weighting"]["mm"] == "size"
    meta["groups"]["weighting"]["mm"] = "plain"
    (tmp_path / "c" / "compression.json").write_text(json.dumps(meta))
    with pytest.raises(InvalidInputError, match="digest"):
        load_compressed(tmp_path / "c")
    meta["groups"]["weighting"]["mm"] = "median"
    (tmp_path / "c" / "compression.json").write_text(json.dumps(meta))
    with pytest.raises(InvalidInputError, match=r"\$\.groups\.weighting"):
        load_compressed(tmp_path / "c")


def test_a_group_whose_tasks_were_read_with_two_metrics_is_a_named_error(tmp_path):
    for m, tasks in model_scores(10, {"a": 8, "b": 12}, seed=5).items():
        write_lm_eval_run(tmp_path, m, tasks, groups={"g": ["a", "b"]})
    df = read_lm_eval_samples(tmp_path, {"a": "acc", "b": "acc_norm"})
    with pytest.raises(InvalidInputError, match=r"aggregate: the tasks of group 'g' were read under 2 metric/filter "
                                                r"keys \(acc,none, acc_norm,none\).*--aggregate"):
        compress(df, 8, seed=0)
    assert compress(df, 8, seed=0, aggregate="macro").groups == ["g"]


MOVED = {"mm": ["mm_hum", "mm_stem"], "mm_hum": ["mm_h1", "mm_h2", "mm_s3"], "mm_stem": ["mm_s1", "mm_s2"]}


def test_new_frames_with_other_lm_eval_groups_are_refused_where_the_groups_are_lm_evals(tmp_path):
    df = _logs(tmp_path / "src")
    moved = _logs(tmp_path / "moved", n_models=3, groups=MOVED)
    same = _logs(tmp_path / "same", n_models=3)
    c = compress(df, 15, seed=0)
    assert c.group_tree.origin == "lm-eval"
    with pytest.raises(InvalidInputError, match=r"Y_items: the lm-eval groups in the results of model 'org/model-0' "
                                                r"differ .*group 'mm_hum' has members mm_h1, mm_h2 in the compression "
                                                r"but mm_h1, mm_h2, mm_s3 .*groups=False"):
        c.predict(c.subset(moved))
    with pytest.raises(InvalidInputError, match=r"scores: the lm-eval groups"):
        estimate_table(c, moved)
    assert c.predict_groups(c.subset(same)).shape == (3, 3)
    # --aggregate keeps lm-eval's groups (restricted weights): still compared; the saved origin too
    a = compress(df, 15, seed=0, aggregate="micro")
    a.save(tmp_path / "a")
    assert load_compressed(tmp_path / "a").group_tree.origin == "lm-eval"
    with pytest.raises(InvalidInputError, match=r"Y_items: the lm-eval groups"):
        load_compressed(tmp_path / "a").predict(a.subset(moved))
    # the user's own groups, or none, take any new logs
    g = compress(df, 15, seed=0, groups={"hum": ["mm_h1", "mm_h2"]})
    assert g.group_tree.origin == "given" and g.predict_groups(g.subset(moved)).shape == (3, 1)
    n = compress(df, 15, seed=0, groups=False)
    assert n.predict(n.subset(moved)).to_numpy() == pytest.approx(n.predict(n.subset(moved).to_numpy()))
    # only the table's models are compared (missing="drop-models"); a model stating no group over the tasks is not
    other = c.subset(moved).rename(index=lambda m: f"{m}-renamed")
    assert other.attrs["group_report"]["hierarchies"] and c.predict(other).shape == (3,)
    flat = moved.copy()
    flat.attrs = {**moved.attrs, "group_report": {**moved.attrs["group_report"],
                                                  "hierarchies": {m: {"x": ["arc"]} for m in moved.index}}}
    assert c.predict(c.subset(flat)).shape == (3,)


def test_a_save_without_the_groups_origin_reads_as_lm_eval():
    tree = GroupTree({"g": ["a", "b"]}, {"g": "size"}, "groups")
    assert GroupTree.from_json({k: v for k, v in tree.to_json().items() if k != "origin"}) == tree
    assert tree.origin == "lm-eval" and GroupTree.from_json(tree.to_json()) == tree

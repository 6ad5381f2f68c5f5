"""Groups of a suite's tasks: the hierarchy checks, the weighting inferred from reported scores, the leaf
weights, and the Suite estimator's group estimates and intervals."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from benchsel.formulations.core.errors import InvalidInputError
from benchsel.formulations.estimation import get_estimator
from benchsel.formulations.estimation.groups import (
    check_group_weights,
    check_groups,
    complete_groups,
    group_order,
    hierarchy_differences,
    infer_weighting,
    leaf_weights,
    missing_members,
    prune_groups,
)

#: An mmlu-like tree: unequal subject sizes, two levels.
TREE = {"mm": ["mm_h", "mm_s"], "mm_h": ["h1", "h2"], "mm_s": ["s1", "s2", "s3"]}
SIZES = {"h1": 10, "h2": 30, "s1": 5, "s2": 5, "s3": 50}


def _report(tree, sizes, weighting, task_scores):
    """Reported scores of one model as lm-eval computes them: each group a plain or size-weighted mean."""
    out = dict(task_scores)

    def size(n):
        return sizes[n] if n not in tree else sum(size(m) for m in tree[n])

    def score(n):
        if n not in tree:
            return out[n]
        x = np.array([score(m) for m in tree[n]])
        w = np.array([size(m) for m in tree[n]], dtype=float) if weighting[n] == "size" else np.ones(len(x))
        out[n] = float(x @ w / w.sum())
        return out[n]

    for g in tree:
        score(g)
    return out


def test_nested_size_weighting_is_inferred_and_gives_the_micro_average():
    rng = np.random.default_rng(0)
    weighting = dict.fromkeys(TREE, "size")
    values = {f"m{i}": _report(TREE, SIZES, weighting, {t: float(rng.random()) for t in SIZES}) for i in range(3)}
    sizes = dict.fromkeys(values, SIZES)
    got = infer_weighting(TREE, values, sizes, list(values))
    assert got == weighting
    w = leaf_weights(TREE, got, SIZES, "mm")
    assert w == pytest.approx({t: n / 100 for t, n in SIZES.items()})
    for v in values.values():  # the leaf weights reproduce the reported top score
        assert sum(w[t] * v[t] for t in SIZES) == pytest.approx(v["mm"])


def test_mixed_weighting_multiplies_level_weights():
    rng = np.random.default_rng(1)
    weighting = {"mm": "plain", "mm_h": "size", "mm_s": "plain"}
    values = {f"m{i}": _report(TREE, SIZES, weighting, {t: float(rng.random()) for t in SIZES}) for i in range(3)}
    got = infer_weighting(TREE, values, dict.fromkeys(values, SIZES), list(values))
    assert got == weighting
    w = leaf_weights(TREE, got, SIZES, "mm")
    assert w == pytest.approx({"h1": 0.5 * 0.25, "h2": 0.5 * 0.75, "s1": 0.5 / 3, "s2": 0.5 / 3, "s3": 0.5 / 3})
    for v in values.values():
        assert sum(w[t] * v[t] for t in SIZES) == pytest.approx(v["mm"])


def test_equal_sizes_and_unreported_groups_need_no_decision():
    tree = {"g": ["a", "b"], "tag": ["g", "c"]}
    sizes = {"a": 4, "b": 4, "c": 9}
    values = {"m0": {"a": 0.2, "b": 0.6, "c": 0.5, "g": 0.4}, "m1": {"a": 0.1, "b": 0.3, "c": 0.5, "g": 0.2}}
    got = infer_weighting(tree, values, dict.fromkeys(values, sizes), list(values))
    assert got == {"g": "equal-sizes", "tag": "unreported"}
    assert leaf_weights(tree, got, sizes, "tag") == pytest.approx({"a": 0.25, "b": 0.25, "c": 0.5})


def test_mismatch_ambiguity_and_missing_members_are_named_errors():
    sizes = {"a": 2, "b": 6}
    base = {"a": 0.2, "b": 0.6}
    with pytest.raises(InvalidInputError, match=r"aggregate: lm-eval reports group 'g' = 0\.9.*plain mean.*0\.4.*"
                                                r"size-weighted mean 0\.5.*--aggregate"):
        infer_weighting({"g": ["a", "b"]}, {"m": {**base, "g": 0.9}}, {"m": sizes}, ["m"])
    # one model size-weighted, another plain: neither reading holds for every model
    with pytest.raises(InvalidInputError, match="not every model matches"):
        infer_weighting({"g": ["a", "b"]}, {"m": {**base, "g": 0.5}, "n": {**base, "g": 0.4}},
                        {"m": sizes, "n": sizes}, ["m", "n"])
    with pytest.raises(InvalidInputError, match="ambiguous"):
        infer_weighting({"g": ["a", "b"]}, {"m": {"a": 0.5, "b": 0.5, "g": 0.5}}, {"m": sizes}, ["m"])
    with pytest.raises(InvalidInputError, match="not its member 'b'"):
        infer_weighting({"g": ["a", "b"]}, {"m": {"a": 0.5, "g": 0.5}}, {"m": sizes}, ["m"])
    with pytest.raises(InvalidInputError, match="aggregate: read with two metrics"):
        infer_weighting({"g": ["a", "b"]}, {}, {}, [], problems={"g": "read with two metrics"})


def test_hierarchy_checks_pruning_and_order():
    with pytest.raises(InvalidInputError, match=r"groups: group 'a' contains itself \(a -> b -> a\)"):
        check_groups({"a": ["b"], "b": ["a", "t"]})
    with pytest.raises(InvalidInputError, match="non-empty list"):
        check_groups({"a": []})
    with pytest.raises(InvalidInputError, match="twice"):
        check_groups({"a": ["t", "t"]})
    tree = {**TREE, "other": ["x1", "x2"]}
    assert prune_groups(tree, ["h1", "s1"]) == TREE
    assert missing_members(TREE, ["h1", "h2", "s1"]) == {"mm_s": ["s2", "s3"]}
    assert group_order({"mm_s": TREE["mm_s"], "mm_h": TREE["mm_h"], "mm": TREE["mm"]}, sorted(SIZES)) == \
        ["mm", "mm_h", "mm_s"]
    with pytest.raises(InvalidInputError, match="finite non-negative weight"):
        check_group_weights({"g": {"a": -1.0}})


def test_suite_estimator_group_rows_are_weighted_sums_with_independent_variances():
    rng = np.random.default_rng(3)
    Y = (rng.random((30, 60)) < np.linspace(0.2, 0.8, 60)).astype(float)
    tasks = ["a"] * 20 + ["b"] * 25 + ["c"] * 15
    sel = np.concatenate([np.arange(0, 20, 4), np.arange(20, 45, 5), np.arange(45, 60, 3)])
    groups = {"ab": {"a": 20, "b": 25}, "all": {"a": 20, "b": 25, "c": 15}}
    est = get_estimator("suite", tasks=tasks, aggregate={"a": 20, "b": 25, "c": 15}, groups=groups).fit(Y, sel)
    assert est.groups_ == ["ab", "all"]
    T = est.predict_tasks(Y[:, sel])
    G = est.predict_groups(Y[:, sel])
    assert G[:, 0] == pytest.approx((20 * T[:, 0] + 25 * T[:, 1]) / 45)
    assert G[:, 1] == pytest.approx(est.predict(Y[:, sel]))  # the group of every task is the micro suite
    e, lo, hi = est.predict_groups_with_interval(Y[:, sel], alpha=0.1)
    s, slo, shi = est.predict_with_interval(Y[:, sel], alpha=0.1)
    assert e[:, 1] == pytest.approx(s) and lo[:, 1] == pytest.approx(slo) and hi[:, 1] == pytest.approx(shi)
    # a group's interval is built like the suite's: the suite of the group's tasks alone gives the same one
    ab = get_estimator("suite", tasks=tasks[:45], aggregate={"a": 20, "b": 25}).fit(Y[:, :45], sel[:10])
    s_ab, lo_ab, hi_ab = ab.predict_with_interval(Y[:, sel[:10]], alpha=0.1)
    assert e[:, 0] == pytest.approx(s_ab) and lo[:, 0] == pytest.approx(lo_ab) and hi[:, 0] == pytest.approx(hi_ab)
    assert np.all(lo <= e) and np.all(e <= hi) and np.all(hi - lo > 0)
    with pytest.raises(InvalidInputError, match="groups: group 'x' weights tasks the suite does not have: 'z'"):
        get_estimator("suite", tasks=tasks, groups={"x": {"z": 1.0}}).fit(Y, sel)
    with pytest.raises(InvalidInputError, match="groups: this suite has no groups"):
        get_estimator("suite", tasks=tasks).fit(Y, sel).predict_groups(Y[:, sel])


@st.composite
def _trees(draw):
    """A random hierarchy of 1-3 levels over 2-9 tasks, random sizes and a weighting per group."""
    n = draw(st.integers(2, 9))
    nodes = [f"t{i}" for i in range(n)]
    tree: dict[str, list[str]] = {}
    for level in range(draw(st.integers(1, 3))):
        if len(nodes) < 2:
            break
        cut = sorted(set(draw(st.lists(st.integers(1, len(nodes) - 1), max_size=3))))
        parts = [nodes[a:b] for a, b in zip([0, *cut], [*cut, len(nodes)])]
        nodes = []
        for j, part in enumerate(parts):
            if len(part) == 1 and level:
                nodes += part
                continue
            g = f"g{level}_{j}"
            tree[g] = part
            nodes.append(g)
    sizes = {f"t{i}": draw(st.integers(1, 40)) for i in range(n)}
    weighting = {g: draw(st.sampled_from(["size", "plain"])) for g in tree}
    return tree, sizes, weighting, draw(st.integers(0, 2**16))


@settings(max_examples=60, deadline=None)
@given(_trees())
def test_random_hierarchies_weighting_recovered_and_leaf_weights_reproduce_every_group(case):
    tree, sizes, weighting, seed = case
    rng = np.random.default_rng(seed)
    values = {f"m{i}": _report(tree, sizes, weighting, {t: float(rng.random()) for t in sizes}) for i in range(3)}
    got = infer_weighting(tree, values, dict.fromkeys(values, sizes), list(values))

    def size(n):
        return sizes[n] if n not in tree else sum(size(m) for m in tree[n])

    for g, ms in tree.items():
        equal = len({size(m) for m in ms}) == 1
        assert got[g] == ("equal-sizes" if equal else weighting[g])
        w = leaf_weights(tree, got, sizes, g)
        assert sum(w.values()) == pytest.approx(1.0)
        for v in values.values():
            assert sum(w[t] * v[t] for t in w) == pytest.approx(v[g])


def test_a_task_of_unknown_size_is_a_named_error():
    with pytest.raises(InvalidInputError, match=r"the size of task 'b' in model 'm'.*--aggregate"):
        infer_weighting({"g": ["a", "b"]}, {"m": {"a": 0.2, "b": 0.6, "g": 0.4}}, {"m": {"a": 3}}, ["m"])


def test_hierarchy_differences_name_the_group_and_both_member_lists():
    tasks = ["h1", "h2", "s1", "s2", "s3"]
    same = {"mm": ["mm_s", "mm_h"], "mm_h": ["h2", "h1"], "mm_s": ["s1", "s2", "s3"], "other": ["arc", "piqa"]}
    assert hierarchy_differences(TREE, same, tasks) == []  # member order and groups over other tasks: the same
    moved = {"mm": ["mm_h", "mm_s"], "mm_h": ["h1", "h2", "s3"], "mm_s": ["s1", "s2"]}
    diff = hierarchy_differences(TREE, moved, tasks)
    assert diff == [
        "group 'mm_h' has members h1, h2 in the compression but h1, h2, s3 in the new results (only in the "
        "compression: none; only in the new results: s3)",
        "group 'mm_s' has members s1, s2, s3 in the compression but s1, s2 in the new results (only in the "
        "compression: s3; only in the new results: none)"]
    flat = {"mm_h": ["h1", "h2"], "mm_s": ["s1", "s2", "s3"]}
    assert hierarchy_differences(TREE, flat, tasks) == [
        "group 'mm' (members: mm_h, mm_s) is not among the new results' groups"]
    extra = {**TREE, "hard": ["h2", "s3"], "wide": ["s1", "arc"]}  # 'wide' holds a task the compression lacks
    assert hierarchy_differences(TREE, extra, tasks) == [
        "the new results have group 'hard' (members: h2, s3), which the compression has not"]
    assert complete_groups({"a": ["b", "x"], "b": ["s1", "y"], "c": ["s1"]}, ["s1", "x"]) == {"c": ["s1"]}

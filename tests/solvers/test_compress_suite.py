"""compress(Y, k, tasks=...): the contract of suites, DataFrames, saving and bad input."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from benchsel import compress
from benchsel.benchmarks.suites import irt_responses
from benchsel.formulations.core.errors import InvalidInputError
from benchsel.solvers.compression import load_compressed


@pytest.fixture(scope="module")
def suite():
    Y = irt_responses(70, 300, seed=5)
    tasks = np.array(["arc"] * 100 + ["hella"] * 150 + ["mmlu"] * 50)
    return Y[:50], Y[50:], tasks


def _truth(Y, tasks, names):
    return np.stack([Y[:, tasks == t].mean(axis=1) for t in names], axis=1)


def test_suite_contract(suite):
    src, new, tasks = suite
    c = compress(src, 30, seed=1, tasks=tasks)
    assert c.tasks == ["arc", "hella", "mmlu"] and c.k == 30
    alloc = c.selection.result.extra["allocation"]
    assert sum(alloc.values()) == 30 and min(alloc.values()) >= 2
    for t, n in alloc.items():
        assert int(np.sum(tasks[c.items] == t)) == n
    P = c.predict_tasks(new[:, c.items])
    assert P.shape == (new.shape[0], 3)
    np.testing.assert_allclose(c.predict(new[:, c.items]), P.mean(axis=1), atol=1e-12)  # macro by default
    truth = _truth(new, tasks, c.tasks)
    assert np.abs(P - truth).mean() < 0.12
    lo, hi = c.predict_interval(new[:, c.items], alpha=0.1)
    tlo, thi = c.predict_tasks_interval(new[:, c.items], alpha=0.1)
    assert lo.shape == hi.shape == (new.shape[0],) and np.all(lo <= hi)
    assert tlo.shape == thi.shape == P.shape
    assert np.all(tlo <= P + 1e-12) and np.all(P <= thi + 1e-12)
    micro = compress(src, 30, seed=1, tasks=tasks, aggregate="micro")
    Pm = micro.predict_tasks(new[:, micro.items])
    np.testing.assert_allclose(micro.predict(new[:, micro.items]), Pm @ np.array([100, 150, 50]) / 300)
    weighted = compress(src, 30, seed=1, tasks=tasks, aggregate={"arc": 1, "hella": 0, "mmlu": 1})
    Pw = weighted.predict_tasks(new[:, weighted.items])
    np.testing.assert_allclose(weighted.predict(new[:, weighted.items]), (Pw[:, 0] + Pw[:, 2]) / 2)


def test_suite_chance_levels(suite):
    src, new, tasks = suite
    c = compress(src, 30, seed=1, tasks=tasks, chance={"arc": 0.25})
    plain = compress(src, 30, seed=1, tasks=tasks)
    np.testing.assert_array_equal(c.items, plain.items)
    a = c.predict_tasks(new[:, c.items])
    b = plain.predict_tasks(new[:, c.items])
    np.testing.assert_allclose(a[:, 0], np.maximum(0, (b[:, 0] - 0.25) / 0.75))


def test_suite_dataframes_in_labelled_frames_out(suite):
    src, new, tasks = suite
    cols = [f"{t}/{i}" for i, t in enumerate(tasks)]
    df = pd.DataFrame(src, columns=cols)
    c = compress(df, 30, seed=1, tasks=tasks)
    new_df = pd.DataFrame(new, columns=cols, index=[f"m{i}" for i in range(new.shape[0])])
    P = c.predict_tasks(c.subset(new_df))
    assert isinstance(P, pd.DataFrame) and list(P.columns) == c.tasks and list(P.index) == list(new_df.index)
    lo, hi = c.predict_tasks_interval(c.subset(new_df))
    assert isinstance(lo, pd.DataFrame) and lo.shape == hi.shape == P.shape and (lo <= hi).all().all()
    s = c.predict(c.subset(new_df))
    assert isinstance(s, pd.Series)
    np.testing.assert_allclose(s.to_numpy(), c.predict(new[:, c.items]))


def test_reader_tasks_are_used_unless_told(suite):
    src, _, tasks = suite
    df = pd.DataFrame(src, columns=[f"{t}/{i}" for i, t in enumerate(tasks)])
    df.attrs["tasks"] = tasks.tolist()
    assert compress(df, 30, seed=1).tasks == ["arc", "hella", "mmlu"]
    pooled = compress(df, 30, seed=1, tasks=False)
    assert pooled.tasks is None and pooled.estimator.name == "auto"
    assert compress(src, 30, seed=1).tasks is None  # arrays: as before


def test_saved_suite_round_trip(suite, tmp_path):
    src, new, tasks = suite
    c = compress(src, 30, seed=2, tasks=tasks, aggregate="micro", chance=0.1)
    c.save(tmp_path / "c")
    d = load_compressed(tmp_path / "c")
    assert d.tasks == c.tasks
    np.testing.assert_allclose(d.predict_tasks(new[:, d.items]), c.predict_tasks(new[:, c.items]))
    np.testing.assert_allclose(d.predict(new[:, d.items]), c.predict(new[:, c.items]))


def test_suite_bad_input(suite):
    src, new, tasks = suite
    with pytest.raises(InvalidInputError, match="tasks: expected one task name per item, 300 names"):
        compress(src, 30, tasks=tasks[:-1])
    with pytest.raises(InvalidInputError, match=r"k_min = 2.*'tiny'"):
        compress(src, 30, tasks=np.r_[tasks[:-1], ["tiny"]])
    with pytest.raises(InvalidInputError, match=r"aggregate: expected a weight for each.*missing 'mmlu'"):
        compress(src, 30, tasks=tasks, aggregate={"arc": 1, "hella": 1})
    with pytest.raises(InvalidInputError, match="chance: expected chance levels 0 <= b < 1"):
        compress(src, 30, tasks=tasks, chance=1.5)
    with pytest.raises(InvalidInputError, match="aggregate: given without tasks"):
        compress(src, 30, aggregate="micro")
    with pytest.raises(InvalidInputError, match="k: expected 6 <= k"):
        compress(src, 5, tasks=tasks)
    c = compress(src, 30, tasks=tasks)
    with pytest.raises(InvalidInputError, match="Y_target: expected shape"):  # scores of only some tasks
        c.predict_tasks(new[:, c.items[:20]])
    plain = compress(src, 30)
    with pytest.raises(InvalidInputError, match="tasks: this compression has no tasks"):
        plain.predict_tasks(new[:, plain.items])

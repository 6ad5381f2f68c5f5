"""The multi- vs single-target study's report: RMSE and item ratios compared at the same coreset size per target."""
from __future__ import annotations

import math

import numpy as np
import pytest

from benchsel.benchmarks.studies import bayes_multi


def _job(path, seed, N=100, init=10, mx=20, Kt=3, e_single=0.02, e_multi=0.01, truth=None, targets=None):
    rng = np.random.default_rng(seed)
    truth = rng.uniform(0.2, 0.8, Kt) if truth is None else np.asarray(truth, dtype=float)
    Kt = truth.size
    targets = np.arange(Kt) if targets is None else targets
    sign = np.where(rng.uniform(size=(Kt, 1)) < 0.5, -1.0, 1.0)
    single = truth[:, None] + sign * e_single * np.ones((Kt, mx))
    single[:, 11:] = truth[:, None] + sign * e_single / 2  # single reaches half its error from n = 12 on
    multi = truth[:, None] + sign * e_multi * np.ones((Kt, mx - init + 1))
    np.savez_compressed(path, truth=truth, targets=targets, refs=np.arange(4), init=init, N=N,
                        multi_n=np.tile(np.arange(init, mx + 1), (Kt, 1)), multi_est=multi,
                        multi_width=np.full(multi.shape, 0.1), single_est=single,
                        single_width=np.full(single.shape, 0.1), corr=0.5, regime_unique=True, active=True,
                        n_buckets=N, seconds=np.array([1.0, 1.0]), sigma2=1e-4)


def test_report_compares_multi_and_single_at_the_same_coreset_size(tmp_path):
    (tmp_path / "jobs").mkdir()
    for s in range(3):
        _job(tmp_path / "jobs" / f"ifeval-high-{s}.npz", s)
    summary = bayes_multi.report(tmp_path, ["ifeval"], ["high"], n_boot=50, quiet=True)
    e = summary["ifeval/high"]
    assert e["seeds"] == 3 and e["init"] == 10
    lv = e["levels"][0.125]  # n_s = 12: single RMSE 0.01 (from n = 12), multi 0.01 at every n >= 10
    assert lv["n_single"] == 12
    assert lv["rmse_single"] == pytest.approx(0.01) and lv["rmse_multi"] == pytest.approx(0.01)
    assert lv["rmse_ratio"] == pytest.approx(1.0)
    assert lv["item_ratio"] == pytest.approx(10 / 12)  # multi reaches it at its first point, n = init = 10
    assert e["rs"][10] == pytest.approx(0.02) and e["rm"][0] == pytest.approx(0.01)  # n = 11 and n = 10
    table = bayes_multi.markdown(summary)
    assert table[2].startswith("| ifeval/high (mean corr 0.50) | 3 | 10 (10.0%) | 0.0200 | 0.0100 | 0.50 [0.50, 0.50]")
    assert table[3].startswith("|  |  | 12 (12.5%) | 0.0100 | 0.0100 | 1.00 [1.00, 1.00] | 0.83 [0.83, 0.83]")
    assert (tmp_path / "multi_vs_single.csv").exists() and (tmp_path / "multi_vs_single.png").exists()


def test_item_ratio_not_reached_is_infinite():
    rs = np.full(20, 0.01)
    rm = np.full(11, 0.02)
    assert math.isinf(bayes_multi._ratio(rs, rm, 10, 12))
    assert bayes_multi._fmt_ratio(math.inf) == "not reached"


def test_a_job_folder_holds_one_refit_interval(tmp_path):
    """A job run with another ``F`` is refused (named, with the folder to change), not mixed into the study."""
    (tmp_path / "jobs").mkdir()
    _job(tmp_path / "jobs" / "ifeval-high-0.npz", 0)  # no F recorded: the default, 50
    assert bayes_multi.run_job("ifeval", "high", 0, tmp_path, 0.2, tmp_path) == tmp_path / "jobs" / "ifeval-high-0.npz"
    with pytest.raises(SystemExit, match="run with F = 50, not 5; use another --out"):
        bayes_multi.run_job("ifeval", "high", 0, tmp_path, 0.2, tmp_path, F=5)


def test_a_job_folder_holds_one_strategy(tmp_path):
    """A job run with the other multi-target strategy is refused, as one with another ``F``."""
    (tmp_path / "jobs").mkdir()
    _job(tmp_path / "jobs" / "ifeval-high-0.npz", 0)  # no strategy recorded: the default, round-robin
    assert bayes_multi.run_job("ifeval", "high", 0, tmp_path, 0.2, tmp_path,
                               strategy="round-robin") == tmp_path / "jobs" / "ifeval-high-0.npz"
    with pytest.raises(SystemExit, match="run with strategy 'round-robin', not 'average'; use another --out"):
        bayes_multi.run_job("ifeval", "high", 0, tmp_path, 0.2, tmp_path, strategy="average")


def test_refit_interval_must_be_positive(tmp_path, capsys):
    with pytest.raises(SystemExit):
        bayes_multi.main(["--out", str(tmp_path), "--F", "0", "--data-dir", str(tmp_path)])
    assert "--F: expected a positive number of rounds, got 0" in capsys.readouterr().err


def test_flip_controls_are_noisy_copies_of_one_model():
    """``flipP``: ten copies of the first high-correlation model, each item flipped with probability P %,
    drawn per seed; the references exclude that model only; the paper's regimes are unchanged."""
    rng = np.random.default_rng(0)
    Y = (rng.random((30, 400)) < 0.6).astype(float)
    assert bayes_multi.flip_share("flip0") == 0.0 and bayes_multi.flip_share("flip20") == 0.2
    assert bayes_multi.flip_share("high") is None
    targets, refs = bayes_multi.split(Y, "flip20", 3)
    assert targets.tolist() == bayes_multi.most_correlated(Y)[:1].tolist() and targets[0] not in refs
    assert refs.size == round(0.5 * 29)
    T = bayes_multi.target_scores(Y, "flip20", targets, 3)
    assert T.shape == (10, 400) and set(np.unique(T)) <= {0.0, 1.0}
    share = np.mean(T != Y[targets[0]])
    assert 0.17 < share < 0.23  # 4 000 draws at 20 %
    assert np.array_equal(T, bayes_multi.target_scores(Y, "flip20", targets, 3))  # seeded
    assert not np.array_equal(T, bayes_multi.target_scores(Y, "flip20", targets, 4))
    same = bayes_multi.target_scores(Y, "flip0", targets, 3)
    assert np.array_equal(same, np.repeat(Y[targets], 10, axis=0))
    high, _ = bayes_multi.split(Y, "high", 3)
    assert np.array_equal(bayes_multi.target_scores(Y, "high", high, 3), Y[high])


@pytest.mark.parametrize("regime, match", [("flop", "got 'flop'"), ("flip51", "0..50, got 'flip51'"),
                                           ("flipx", "got 'flipx'")])
def test_bad_control_regimes_are_refused(regime, match):
    with pytest.raises(ValueError, match=match):
        bayes_multi.flip_share(regime)


def test_flip_controls_need_binary_scores(tmp_path, capsys):
    Y = np.random.default_rng(1).random((12, 50))
    targets, _ = bayes_multi.split(Y, "flip10", 0)
    with pytest.raises(ValueError, match="flips binary scores"):
        bayes_multi.target_scores(Y, "flip10", targets, 0)
    with pytest.raises(SystemExit):
        bayes_multi.main(["--out", str(tmp_path), "--regimes", "flip10", "--data-dir", str(tmp_path)])
    assert "drop the continuous dataset(s) mqm-ende" in capsys.readouterr().err


def test_the_random_sample_rmse_is_the_exact_expectation_over_every_sample():
    from itertools import combinations

    rng = np.random.default_rng(3)
    T = rng.uniform(size=(3, 7))
    for n in (1, 3, 7):
        sq = [np.mean((T[:, list(c)].mean(axis=1) - T.mean(axis=1)) ** 2) for c in combinations(range(7), n)]
        assert bayes_multi.random_mean_rmse(T.var(axis=1), 7, n) == pytest.approx(math.sqrt(np.mean(sq)))
    assert bayes_multi.random_mean_rmse(np.array([0.25]), 1, 1) == 0.0


@pytest.mark.data
def test_the_report_puts_the_random_sample_beside_the_methods_on_the_same_targets(tmp_path):
    from benchsel.benchmarks._data import default_data_dir

    data = default_data_dir()
    if data is None or not (data / "responses").is_dir():
        pytest.skip("../shared/data/responses not present")
    (tmp_path / "jobs").mkdir()
    Y = bayes_multi.scores("ifeval", data)
    for s in (4, 9):  # jobs with the seeds' own targets and truth (the report checks them)
        targets, _ = bayes_multi.split(Y, "flip10", s)
        truth = bayes_multi.target_scores(Y, "flip10", targets, s).mean(axis=1)
        _job(tmp_path / "jobs" / f"ifeval-flip10-{s}.npz", s, N=541, init=54, mx=70, truth=truth, targets=targets)
    summary = bayes_multi.report(tmp_path, ["ifeval"], ["flip10"], n_boot=20, quiet=True, data_dir=data)
    var = []
    for s in (4, 9):  # the seeds' own noisy copies, rebuilt from the data
        targets, _ = bayes_multi.split(Y, "flip10", s)
        var.append(bayes_multi.target_scores(Y, "flip10", targets, s).var(axis=1))
    lv = summary["ifeval/flip10"]["levels"][0.125]
    assert lv["rmse_random"] == pytest.approx(bayes_multi.random_mean_rmse(np.concatenate(var), 541, 68))
    assert bayes_multi.markdown(summary)[3].endswith(f"| {lv['rmse_random']:.4f} |")
    peer = bayes_multi.random_peer(["ifeval"], ["flip10"], [4, 9], data)  # the same numbers without jobs
    assert peer == ["ifeval/flip10 (2 seeds) RMSE random sample at n = " + ", ".join(
        f"{round(f * 541)}: {bayes_multi.random_mean_rmse(np.concatenate(var), 541, round(f * 541)):.4f}"
        for f in bayes_multi.LEVELS)]
    assert f"68: {lv['rmse_random']:.4f}" in peer[0]
    without = bayes_multi.report(tmp_path, ["ifeval"], ["flip10"], n_boot=20, quiet=True)
    assert without["ifeval/flip10"]["levels"][0.125]["rmse_random"] is None
    assert bayes_multi.markdown(without)[3].endswith("| - |")


@pytest.mark.data
def test_the_report_refuses_jobs_whose_targets_are_not_the_ones_rebuilt_from_the_data(tmp_path, capsys):
    from benchsel.benchmarks._data import default_data_dir

    data = default_data_dir()
    if data is None or not (data / "responses").is_dir():
        pytest.skip("../shared/data/responses not present")
    (tmp_path / "jobs").mkdir()
    Y = bayes_multi.scores("ifeval", data)
    targets, _ = bayes_multi.split(Y, "high", 0)
    truth = Y[targets].mean(axis=1)
    good = tmp_path / "jobs" / "ifeval-high-0.npz"
    _job(good, 0, N=541, init=54, mx=70, truth=truth, targets=targets)
    assert bayes_multi.report(tmp_path, ["ifeval"], ["high"], n_boot=5, quiet=True, data_dir=data)
    bad_truth = truth.copy()
    bad_truth[3] += 0.01  # as if the data had changed after the job ran
    _job(tmp_path / "jobs" / "ifeval-high-1.npz", 1, N=541, init=54, mx=70, truth=bad_truth, targets=targets)
    with pytest.raises(ValueError, match=r"ifeval-high-1\.npz: its targets .* are not the ones rebuilt from the "
                                         r"data and seed 1"):
        bayes_multi.report(tmp_path, ["ifeval"], ["high"], n_boot=5, quiet=True, data_dir=data)
    without = bayes_multi.report(tmp_path, ["ifeval"], ["high"], n_boot=5, quiet=True)  # no data: no check, no column
    assert without["ifeval/high"]["seeds"] == 2
    (tmp_path / "jobs" / "ifeval-high-1.npz").unlink()
    _job(tmp_path / "jobs" / "ifeval-high-1.npz", 1, N=541, init=54, mx=70, truth=truth, targets=targets[::-1])
    assert bayes_multi.main(["--out", str(tmp_path), "--datasets", "ifeval", "--regimes", "high", "--seeds", "0",
                             "2", "--report-only", "--data-dir", str(data)]) == 2
    assert "ifeval-high-1.npz: its targets" in capsys.readouterr().err


def test_the_results_folder_is_required_except_for_the_random_peer(capsys):
    with pytest.raises(SystemExit):
        bayes_multi.main(["--regimes", "high"])
    assert "--out: expected a results folder (required unless --random-peer)" in capsys.readouterr().err

"""No silent misreads (issue 41): each ambiguous input gives the right answer or a named error naming the option
that decides."""
from __future__ import annotations

import importlib.util
import json

import numpy as np
import pandas as pd
import pytest

from benchsel.formulations.core.errors import InvalidInputError
from benchsel.instances.scorefiles import load_scores, read_score_table

needs_parquet = pytest.mark.skipif(importlib.util.find_spec("pyarrow") is None,
                                   reason="reading parquet needs pyarrow")


def _table(n_models: int = 5, n_items: int = 6, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    return pd.DataFrame(rng.integers(0, 2, (n_models, n_items)).astype(float),
                        columns=[f"q{j}" for j in range(n_items)])


# ------------------------------------------------------------------ case 1: a parquet's numeric first column
@needs_parquet
def test_parquet_numeric_model_ids_refused_by_name_and_read_with_model_column(tmp_path):
    Y = _table()
    ids = pd.DataFrame({"model_id": [101, 102, 103, 104, 105]})
    pd.concat([ids, Y], axis=1).to_parquet(tmp_path / "s.parquet", index=False)
    pd.concat([ids, Y], axis=1).to_csv(tmp_path / "s.csv", index=False)
    with pytest.raises(InvalidInputError, match=r"model_column: the first column 'model_id' .* holds numbers .*"
                                                r"--model-column model_id"):
        load_scores(tmp_path / "s.parquet")
    by_csv = load_scores(tmp_path / "s.csv")
    for name in ("s.parquet", "s.csv"):
        df = load_scores(tmp_path / name, model_column="model_id")
        assert list(df.index) == [101, 102, 103, 104, 105] and list(df.columns) == list(Y.columns)
        assert df.to_numpy().tolist() == Y.to_numpy().tolist() == by_csv.to_numpy().tolist()
        assert df.attrs["reader"]["model_column"] == "model_id"


@needs_parquet
def test_parquet_model_names_read_as_before(tmp_path):
    Y = _table()
    Y.index = pd.Index([f"m{i}" for i in range(5)], name="model")
    Y.to_parquet(tmp_path / "indexed.parquet")  # the index stored by pandas
    Y.reset_index().to_parquet(tmp_path / "column.parquet", index=False)  # names in a first text column
    for name in ("indexed.parquet", "column.parquet"):
        df = read_score_table(tmp_path / name)
        assert list(df.index) == list(Y.index) and df.to_numpy().tolist() == Y.to_numpy().tolist()


@needs_parquet
def test_model_column_bad_values(tmp_path):
    Y = _table()
    Y.insert(0, "name", [f"m{i}" for i in range(5)])
    Y.to_csv(tmp_path / "s.csv", index=False)
    Y.to_parquet(tmp_path / "s.parquet", index=False)
    for name in ("s.csv", "s.parquet"):
        with pytest.raises(InvalidInputError, match=r"model_column: .* has no column 'nope'"):
            read_score_table(tmp_path / name, model_column="nope")
    with pytest.raises(InvalidInputError, match="model_column: expected the name of a column, got ''"):
        read_score_table(tmp_path / "s.csv", model_column="")
    # a column of names that is not the first one
    moved = Y[["q0", "name", "q1"]]
    moved.to_csv(tmp_path / "moved.csv", index=False)
    df = read_score_table(tmp_path / "moved.csv", model_column="name")
    assert list(df.index) == list(Y["name"]) and list(df.columns) == ["q0", "q1"]
    np.savez(tmp_path / "r.npz", Y=np.zeros((2, 3)))
    with pytest.raises(InvalidInputError, match=r"model_column: only \.csv/\.parquet tables"):
        load_scores(tmp_path / "r.npz", model_column="name")


@needs_parquet
def test_cli_parquet_with_model_ids_needs_model_column_and_estimate_keeps_it(tmp_path, capsys):
    from benchsel.benchmarks.cli import main

    rng = np.random.default_rng(1)
    Y = (rng.random((20, 30)) < np.linspace(0.2, 0.8, 20)[:, None]).astype(float)
    df = pd.DataFrame(Y, columns=[f"q{j}" for j in range(30)])
    df.insert(0, "id", np.arange(1000, 1020))
    df.iloc[:16].to_parquet(tmp_path / "s.parquet", index=False)
    df.iloc[16:].to_parquet(tmp_path / "new.parquet", index=False)
    argv = ["compress", str(tmp_path / "s.parquet"), "--k", "6", "--out", str(tmp_path / "c"), "--estimator", "ridge"]
    assert main(argv) == 2
    assert "--model-column id" in capsys.readouterr().err
    assert main([*argv, "--model-column", "id"]) == 0
    capsys.readouterr()
    assert main(["estimate", str(tmp_path / "c"), str(tmp_path / "new.parquet"), "--json"]) == 0
    rows = [json.loads(ln) for ln in capsys.readouterr().out.splitlines()]
    assert [r["model"] for r in rows] == ["1016", "1017", "1018", "1019"]
    assert all(0 <= r["estimate"] <= 1 for r in rows)


# ------------------------------------------------------------------ case 6: repeated labels
def test_duplicate_labels_in_a_dataframe_are_refused_at_input():
    from benchsel.solvers.compression import compress

    rng = np.random.default_rng(0)
    Y = pd.DataFrame(rng.random((12, 20)), index=[f"m{i}" for i in range(12)], columns=[f"q{j}" for j in range(20)])
    twice_model = Y.rename(index={"m5": "m2"})
    with pytest.raises(InvalidInputError, match=r"Y\.index: expected distinct model labels, got 'm2' twice "
                                                r"\(at positions 2 and 5 of 12 models\)"):
        compress(twice_model, k=4, seed=0)
    twice_item = Y.rename(columns={"q9": "q3"})
    with pytest.raises(InvalidInputError, match=r"Y\.columns: expected distinct item labels, got 'q3' twice"):
        compress(twice_item, k=4, seed=0)
    assert compress(Y, k=4, seed=0).k == 4  # distinct labels: as before


def test_duplicate_labels_of_an_npz_read_as_a_table_are_refused_by_name(tmp_path):
    from benchsel.instances.responses import load_responses

    Y = np.zeros((3, 4))
    np.savez(tmp_path / "m.npz", Y=Y, models=np.array(["a", "b", "a"]))
    np.savez(tmp_path / "i.npz", Y=Y, item_ids=np.array([1, 2, 3, 2]))
    with pytest.raises(InvalidInputError, match=r"m\.npz.*: models: expected distinct model labels, got 'a' twice"):
        load_scores(tmp_path / "m.npz")
    # as arrays (rows by position, as the published OLL v2 files with repeated rows are read) they load
    assert load_responses(tmp_path / "m.npz").models.tolist() == ["a", "b", "a"]
    with pytest.raises(InvalidInputError, match=r"i\.npz.*: item_ids: expected distinct item labels, got 2 twice"):
        load_scores(tmp_path / "i.npz")


# ------------------------------------------------------------------ saved compressions refuse any edit
def _swap(lab: list) -> list:
    return [lab[1], lab[0], *lab[2:]]


EDITS = {
    "item_labels swapped": lambda m: m.update(item_labels=_swap(m["item_labels"])),
    "item_label renamed": lambda m: m["item_labels"].__setitem__(0, "renamed"),
    "item_label duplicated": lambda m: m["item_labels"].__setitem__(1, m["item_labels"][0]),
    "source item_labels swapped": lambda m: m["source"].update(item_labels=_swap(m["source"]["item_labels"])),
    "estimator and check.atol": lambda m: (m["estimator"].update(name="mean", params={}),
                                           m["check"].update(atol=1.0)),
    "range_margin": lambda m: m["estimator"]["params"].update(range_margin=0.5),
    "reader metric": lambda m: m["source"]["reader"].update(metric="acc_norm"),
    "digest removed": lambda m: m.pop("digest"),
}


@pytest.mark.parametrize("edit", sorted(EDITS))
def test_an_edited_saved_compression_is_refused(edit, tmp_path):
    from benchsel.solvers.compression import compress, load_compressed

    rng = np.random.default_rng(0)
    Y = pd.DataFrame(rng.random((12, 20)), index=[f"m{i}" for i in range(12)], columns=[f"q{j}" for j in range(20)])
    Y.attrs["reader"] = {"format": "table", "metric": "acc"}
    compress(Y, k=5, seed=0, estimator="auto").save(tmp_path / "c")
    meta_path = tmp_path / "c" / "compression.json"
    meta = json.loads(meta_path.read_text())
    EDITS[edit](meta)
    meta_path.write_text(json.dumps(meta))
    match = r"field \$\.digest is missing" if edit == "digest removed" else \
        r"field \$\.digest: the saved compression does not match its digest"
    with pytest.raises(InvalidInputError, match=match):
        load_compressed(tmp_path / "c")
    if edit != "digest removed":  # check=False skips the refit check, never the digest
        with pytest.raises(InvalidInputError, match=match):
            load_compressed(tmp_path / "c", check=False)


# ------------------------------------------------------------------ case 7: one new model
def test_subset_and_predict_take_one_model():
    from benchsel.solvers.compression import compress

    rng = np.random.default_rng(0)
    Y = (rng.random((20, 40)) < np.linspace(0.2, 0.8, 20)[:, None]).astype(float)
    c = compress(Y[:16], k=6, seed=0, estimator="ridge")
    many = c.predict(c.subset(Y[16:]))
    assert c.subset(Y[16:17]).shape == (1, 6) and c.subset(Y[16]).shape == (6,)
    assert c.predict(c.subset(Y[16:17])).tolist() == [many[0]]
    assert c.predict(Y[16, c.items]).tolist() == [many[0]]  # a 1-D vector of the k selected items' scores
    frame = pd.DataFrame(Y, index=[f"m{i}" for i in range(20)], columns=[f"q{j}" for j in range(40)])
    cf = compress(frame.iloc[:16], k=6, seed=0, estimator="ridge")
    one = cf.predict(cf.subset(frame.iloc[[16]]))
    assert list(one.index) == ["m16"] and one.iloc[0] == pytest.approx(cf.predict(cf.subset(frame.iloc[16:])).iloc[0])


# ------------------------------------------------------------------ case 5: metric, transposed, scale
def _compressed(scale: float = 1.0, reader: dict | None = None):
    from benchsel.solvers.compression import compress

    rng = np.random.default_rng(3)
    Y = (rng.random((24, 40)) < np.linspace(0.2, 0.8, 24)[:, None]).astype(float) * scale
    frame = pd.DataFrame(Y, index=[f"m{i}" for i in range(24)], columns=[f"q{j}" for j in range(40)])
    src = frame.iloc[:20].copy()
    if reader is not None:
        src.attrs["reader"] = reader
    return compress(src, k=8, seed=0, estimator="ridge"), frame.iloc[20:].copy()


def test_new_scores_read_with_another_metric_are_refused_naming_metric():
    from benchsel.solvers.saved import estimate_table

    c, new = _compressed(reader={"format": "lm-eval", "metric": "acc_norm", "filter": None})
    new.attrs["reader"] = {"format": "lm-eval", "metric": "acc", "filter": None}
    for call in (lambda: estimate_table(c, new), lambda: c.predict(c.subset(new))):
        with pytest.raises(InvalidInputError, match=r"metric: the new scores were read with metric 'acc', the "
                                                    r"compression's sources with metric 'acc_norm'.*--metric acc_norm"):
            call()
    new.attrs["reader"] = {"format": "lm-eval", "metric": "acc_norm", "filter": None}
    assert len(estimate_table(c, new)) == 4
    new.attrs["reader"] = {"format": "lm-eval", "metric": None, "filter": None}  # a file's only metric: unknown
    assert len(estimate_table(c, new)) == 4


def test_cli_estimate_with_another_metric_is_refused(tmp_path, capsys):
    from benchsel.benchmarks.cli import main
    from benchsel.solvers.compression import load_compressed

    c, new = _compressed(reader={"format": "table", "metric": "acc_norm"})
    c.save(tmp_path / "c")
    new.to_csv(tmp_path / "new.csv")
    assert load_compressed(tmp_path / "c").source.reader["metric"] == "acc_norm"
    assert main(["estimate", str(tmp_path / "c"), str(tmp_path / "new.csv"), "--metric", "acc"]) == 2
    assert "--metric acc_norm" in capsys.readouterr().err


def test_a_transposed_table_is_refused_suggesting_transposing(tmp_path):
    from benchsel.solvers.saved import estimate_table

    c, new = _compressed()
    with pytest.raises(InvalidInputError, match=r"looks transposed .*transpose it"):
        estimate_table(c, new.T)
    new.T.to_csv(tmp_path / "t.csv")
    with pytest.raises(InvalidInputError, match=r"looks transposed"):
        estimate_table(c, load_scores(tmp_path / "t.csv"))
    assert len(estimate_table(c, new)) == 4


@pytest.mark.parametrize(("src_scale", "new_scale", "said"), [(1.0, 100.0, "divide the new scores by 100"),
                                                              (100.0, 1.0, "multiply the new scores by 100")])
def test_percent_against_fraction_scores_are_refused(src_scale, new_scale, said):
    from benchsel.solvers.saved import estimate_table

    c, new = _compressed(scale=src_scale)
    new = new / src_scale * new_scale
    for call in (lambda: estimate_table(c, new), lambda: c.predict(c.subset(new)),
                 lambda: c.predict(c.subset(new.to_numpy()))):
        with pytest.raises(InvalidInputError, match=rf"range mismatch: .*{said}"):
            call()
    same = new / new_scale * src_scale
    assert len(estimate_table(c, same)) == 4 and len(c.predict(c.subset(same))) == 4
    assert c.predict(c.subset(same.to_numpy()[:1] * 0)).shape == (1,)  # a model scoring 0 everywhere: no scale


# ------------------------------------------------------------------ case 2: lm-eval document ids
DATE = "2024-06-01T12-30-56.789010"


def _log(folder, model: str, task: str, doc_ids: list, date: str = DATE, results: bool = True) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    if results:
        (folder / f"results_{date}.json").write_text(json.dumps({"model_name": model, "results": {}}))
    lines = [json.dumps({"doc_id": d, "filter": "none", "metrics": ["acc"], "acc": float(i % 2)})
             for i, d in enumerate(doc_ids)]
    (folder / f"samples_{task}_{date}.jsonl").write_text("\n".join(lines) + "\n")


def test_doc_id_as_number_and_string_is_refused(tmp_path):
    from benchsel.instances.evallogs import read_lm_eval_samples

    _log(tmp_path / "one" / "m1", "m1", "arc", [0, 1, 5, "5"])
    with pytest.raises(InvalidInputError, match=r"doc_id '5' is logged twice \(lines 3 and 4, first as 5\)"):
        read_lm_eval_samples(tmp_path / "one")
    _log(tmp_path / "two" / "m1", "m1", "arc", [0, 1, 5])
    _log(tmp_path / "two" / "m2", "m2", "arc", [0, 1, "5"])
    with pytest.raises(InvalidInputError, match=r"doc_id: task 'arc' .* has the document ids 5 and '5', which "
                                                r"would be one item 'arc/5' counted twice \(logged as 5 \(int\) "
                                                r"by 'm1'; as '5' \(str\) by 'm2'\)"):
        read_lm_eval_samples(tmp_path / "two")
    _log(tmp_path / "ok" / "m1", "m1", "arc", [0, 1, 5])
    _log(tmp_path / "ok" / "m2", "m2", "arc", [0, 1, 5])
    assert list(read_lm_eval_samples(tmp_path / "ok").columns) == ["arc/0", "arc/1", "arc/5"]


def test_doc_id_with_a_slash_is_refused_by_name(tmp_path):
    from benchsel.instances.evallogs import read_lm_eval_samples

    _log(tmp_path / "m1", "m1", "arc", [0, "x/7"])
    with pytest.raises(InvalidInputError, match=r"doc_id: .*doc_id 'x/7' holds a '/'.*task 'arc/x'"):
        read_lm_eval_samples(tmp_path)
    _log(tmp_path / "m1", "m1", "arc", [0, "x-7"])  # a string id without '/': read as before
    assert list(read_lm_eval_samples(tmp_path).columns) == ["arc/0", "arc/x-7"]


# ------------------------------------------------------------------ case 4: a sample log without its results file
def test_a_sample_log_without_results_of_its_date_is_refused(tmp_path):
    from benchsel.instances.evallogs import read_lm_eval_samples

    later = "2024-06-02T09-00-00.000000"
    _log(tmp_path / "org__m1", "org/m1", "arc", [0, 1, 2])
    _log(tmp_path / "org__m1", "org/m1", "hellaswag", [0, 1, 2], date=later, results=False)
    with pytest.raises(InvalidInputError, match=r"samples_\*_2024-06-02T09-00-00\.000000\.jsonl' has no "
                                                r"results_2024-06-02T09-00-00\.000000\.json beside it .*'org/m1'"):
        read_lm_eval_samples(tmp_path)
    (tmp_path / "org__m1" / f"results_{later}.json").write_text(json.dumps({"model_name": "org/m1"}))
    df = read_lm_eval_samples(tmp_path)  # paired by date: one model, two tasks
    assert list(df.index) == ["org/m1"] and df.shape == (1, 6)
    _log(tmp_path / "bare" / "org__m2", "org/m2", "arc", [0, 1], results=False)  # no results file at all
    assert list(read_lm_eval_samples(tmp_path / "bare").index) == ["org__m2"]


# ------------------------------------------------------------------ case 3: Open LLM Leaderboard v1 details
V1_TASK = "harness|arc:challenge|25"


def _v1_details(model_dir, docs: list[int], *, hashes: bool) -> None:
    """A v1 details file of the documents ``docs`` in this order (lighteval columns; no document id)."""
    rows = []
    for d in docs:
        row = {"example": f"question {d}", "full_prompt": f"Question: question {d}\nAnswer:", "gold_index": [d % 2],
               "metrics": {"acc": float(d % 2)}}
        if hashes:
            row["hashes"] = {"example": f"{d:064x}", "full_prompt": f"{d + 1000:064x}"}
        rows.append(row)
    date = "2024-01-06T02-53-50.876104"
    p = model_dir / date / f"details_{V1_TASK}_{date}.parquet"
    p.parent.mkdir(parents=True, exist_ok=True)
    pd.DataFrame(rows).to_parquet(p, index=False)


@needs_parquet
@pytest.mark.parametrize("hashes", [False, True])
def test_v1_details_with_a_missing_row_are_refused(tmp_path, hashes):
    from benchsel.instances.leaderboard import read_leaderboard_details

    _v1_details(tmp_path / "details_org__a", [0, 1, 2, 3, 4], hashes=hashes)
    _v1_details(tmp_path / "details_org__b", [0, 1, 3, 4], hashes=hashes)  # document 2 missing: rows shift
    with pytest.raises(InvalidInputError, match=r"v1 details of task 'harness\|arc:challenge\|25' hold 5 rows for "
                                                r"model 'org__a' and 4 for model 'org__b'.*row positions"):
        read_leaderboard_details(tmp_path, "acc")


@needs_parquet
def test_v1_details_with_other_documents_in_a_row_are_refused_by_their_hashes(tmp_path):
    from benchsel.instances.leaderboard import read_leaderboard_details

    _v1_details(tmp_path / "details_org__a", [0, 1, 2, 3], hashes=True)
    _v1_details(tmp_path / "details_org__b", [0, 2, 1, 3], hashes=True)
    with pytest.raises(InvalidInputError, match=r"row 1 of the v1 details .* another document for model 'org__b'"):
        read_leaderboard_details(tmp_path, "acc")
    _v1_details(tmp_path / "details_org__b", [0, 1, 2, 3], hashes=True)  # the same documents: read as before
    df = read_leaderboard_details(tmp_path, "acc")
    assert df.shape == (2, 4) and df.loc["org__b"].tolist() == [0.0, 1.0, 0.0, 1.0]


@needs_parquet
def test_a_model_folder_without_details_is_an_error_or_a_warning(tmp_path):
    from benchsel.instances.leaderboard import read_leaderboard_details

    _v1_details(tmp_path / "details_org__a", [0, 1, 2], hashes=False)
    _v1_details(tmp_path / "details_org__b", [0, 1, 2], hashes=False)
    (tmp_path / "details_org__c" / "2024-01-06").mkdir(parents=True)
    with pytest.raises(InvalidInputError, match=r"missing: 1 model folder\(s\) .* hold no details parquet file: "
                                                r"'org__c'.*missing='drop-models'"):
        read_leaderboard_details(tmp_path, "acc")
    with pytest.warns(UserWarning, match=r"'org__c' .*: skipped \(missing='drop-models'\)"):
        df = read_leaderboard_details(tmp_path, "acc", missing="drop-models")
    assert list(df.index) == ["org__a", "org__b"]
    with pytest.raises(InvalidInputError, match=r"missing: 1 model folder"):
        load_scores(tmp_path, format="leaderboard", metric="acc")

"""Writers of small files in the exact output formats of the evaluation tools the readers take (tests only).

* lm-evaluation-harness (``lm_eval --log_samples --output_path OUT``, 0.4.3+):
  ``OUT/<model_name_sanitized>/results_<date>.json`` and
  ``OUT/<model_name_sanitized>/samples_<task>_<date>.jsonl`` as written by
  ``lm_eval/loggers/evaluation_tracker.py`` (``save_results_aggregated``,
  ``save_results_samples``); one line per (document, filter) with the keys of
  ``lm_eval/evaluator.py``'s logged example (``doc_id``, ``doc``, ``target``,
  ``arguments``, ``resps``, ``filtered_resps``, ``filter``, ``metrics``,
  ``doc_hash``, ``prompt_hash``, ``target_hash``, then the metric values).
* Open LLM Leaderboard details parquet: the v1 archive's
  ``<date>/details_<suite|task|shots>_<date>.parquet`` (lighteval's ``Detail``
  columns, the per-sample scores in the struct column ``metrics``) and the
  dataset viewer's parquet copy of the v2 lm-eval sample logs
  (``<config>/<split>/0000.parquet``, the lm-eval sample columns).
* HELM: ``runs/<suite>/<run name>/run_spec.json`` and ``per_instance_stats.json``
  as ``helm/benchmark/runner.py`` writes them (``asdict_without_nones`` of
  ``PerInstanceStats``: ``instance_id``, ``train_trial_index``, optional
  ``perturbation``, ``stats`` of ``Stat`` with ``name`` a ``MetricName``).
"""
from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np


def _h(s: str) -> str:
    return hashlib.sha256(s.encode("utf-8")).hexdigest()


def sanitize_model_name(name: str) -> str:
    """lm-eval's ``sanitize_model_name`` (lm_eval/utils.py)."""
    return re.sub(r"[\"<>:/|\\?*\[\]]+", "__", name)


def date_id(i: int = 0) -> str:
    """A date id as lm-eval makes it: ``datetime.now().isoformat().replace(":", "-")``."""
    return f"2024-06-0{1 + i}T12-3{i}-56.78901{i}"


def sample_line(doc_id: int, metrics: Mapping[str, Any], *, filter: str | None = "none",
                with_metric_names: bool = True) -> dict[str, Any]:
    """One logged document of a loglikelihood (multiple-choice) task."""
    doc = {"question": f"question {doc_id}?", "choices": ["yes", "no"], "answer": doc_id % 2}
    prompt = f"Question: question {doc_id}?\nAnswer:"
    ex: dict[str, Any] = {
        "doc_id": doc_id,
        "doc": doc,
        "target": str(doc_id % 2),
        "arguments": {"gen_args_0": {"arg_0": prompt, "arg_1": " yes"},
                      "gen_args_1": {"arg_0": prompt, "arg_1": " no"}},
        "resps": [[["-1.25", "False"]], [["-0.75", "True"]]],
        "filtered_resps": [["-1.25", "False"], ["-0.75", "True"]],
    }
    if filter is not None:
        ex["filter"] = filter
    if with_metric_names:
        ex["metrics"] = list(metrics)
    ex.update({"doc_hash": _h(json.dumps(doc, indent=2)), "prompt_hash": _h(prompt),
               "target_hash": _h(str(doc_id % 2))})
    ex.update(metrics)
    return ex


def write_lm_eval_run(out: Path, model_name: str, tasks: Mapping[str, Mapping[int, Mapping[str, Any]]], *,
                      date: str | None = None, filters: Sequence[str] = ("none",), with_metric_names: bool = True,
                      samples: Mapping[str, Sequence[int]] | None = None,
                      groups: Mapping[str, Sequence[str]] | None = None,
                      weight_by_size: bool | Mapping[str, bool] = True,
                      group_results: Mapping[str, Mapping[str, Any]] | None = None) -> Path:
    """One ``lm_eval --model hf --model_args pretrained=MODEL --tasks ... --log_samples --output_path OUT`` run.

    ``tasks[task][doc_id] = {metric: value}``. Returns the model's folder. ``groups`` (``{group: [subtasks or
    subgroups]}``) are reported as lm-eval's ``consolidate_group_results`` does: each group's score the mean
    of its members' scores, weighted by their sizes (a subgroup's size the sum of its members') where
    ``weight_by_size`` (one flag, or one per group), listed in ``group_subtasks``; ``group_results``
    overrides fields of a group's results row (a group without an aggregate: ``{g: {"acc,none": None}}``).
    """
    date = date or date_id()
    folder = out / sanitize_model_name(model_name)
    folder.mkdir(parents=True, exist_ok=True)
    results: dict[str, Any] = {"results": {}, "group_subtasks": {}, "configs": {}, "versions": {}, "n-shot": {},
                               "higher_is_better": {}, "n-samples": {}}
    for task, docs in tasks.items():
        names = sorted({m for v in docs.values() for m in v})
        agg = {"alias": task}
        for m in names:
            vals = [float(v[m]) for v in docs.values() if isinstance(v.get(m), (int, float))]
            agg[f"{m},none"] = float(np.mean(vals)) if vals else None
            agg[f"{m}_stderr,none"] = float(np.std(vals) / max(1, len(vals)) ** 0.5) if vals else None
        results["results"][task] = agg
        results["group_subtasks"][task] = []
        results["configs"][task] = {"task": task, "dataset_path": f"org/{task}", "test_split": "test",
                                    "output_type": "multiple_choice", "num_fewshot": 0,
                                    "metric_list": [{"metric": m, "aggregation": "mean", "higher_is_better": True}
                                                    for m in names]}
        results["versions"][task] = 1.0
        results["n-shot"][task] = 0
        results["higher_is_better"][task] = {m: True for m in names}
        results["n-samples"][task] = {"original": len(docs), "effective": len(docs)}
        with (folder / f"samples_{task}_{date}.jsonl").open("a", encoding="utf-8") as fh:
            for doc_id, metrics in docs.items():
                for f in filters:
                    line = sample_line(doc_id, metrics, filter=f if with_metric_names else None,
                                       with_metric_names=with_metric_names)
                    fh.write(json.dumps(line, ensure_ascii=False) + "\n")
    if groups:
        _report_groups(results, tasks, groups, weight_by_size, group_results or {}, filters[0])
    results["config"] = {"model": "hf", "model_args": f"pretrained={model_name}", "batch_size": "1",
                         "batch_sizes": [], "device": "cpu", "use_cache": None, "limit": None,
                         "bootstrap_iters": 100000, "gen_kwargs": None, "random_seed": 0, "numpy_seed": 1234,
                         "torch_seed": 1234, "fewshot_seed": 1234}
    results.update({"git_hash": "4e7e0d4", "date": 1717245176.0, "task_hashes": {}, "model_source": "hf",
                    "model_name": model_name, "model_name_sanitized": sanitize_model_name(model_name),
                    "system_instruction": None, "system_instruction_sha": None, "fewshot_as_multiturn": False,
                    "chat_template": None, "chat_template_sha": None, "start_time": 10.0, "end_time": 22.5,
                    "total_evaluation_time_seconds": "12.5"})
    if samples is not None:
        results["config"]["samples"] = dict(samples)
    (folder / f"results_{date}.json").write_text(json.dumps(results, indent=2, ensure_ascii=False), encoding="utf-8")
    return folder


def _report_groups(results: dict[str, Any], tasks: Mapping[str, Any], groups: Mapping[str, Sequence[str]],
                   weight_by_size: bool | Mapping[str, bool], overrides: Mapping[str, Mapping[str, Any]],
                   filt: str) -> None:
    inside = {m for ms in groups.values() for m in ms}
    for t in tasks:
        if t in inside:
            del results["group_subtasks"][t]
        if filt != "none":  # the task rows under the filter logged
            row = results["results"][t]
            for k in [k for k in row if k.endswith(",none")]:
                row[k.replace(",none", f",{filt}")] = row.pop(k)

    def size(n: str) -> int:
        return len(tasks[n]) if n not in groups else sum(size(m) for m in groups[n])

    def report(g: str) -> dict[str, Any]:
        if g in results["results"]:
            return results["results"][g]
        rows = [results["results"][m] if m not in groups else report(m) for m in groups[g]]
        by_size = weight_by_size if isinstance(weight_by_size, bool) else weight_by_size.get(g, True)
        w = np.array([size(m) for m in groups[g]], dtype=float) if by_size else np.ones(len(rows))
        row: dict[str, Any] = {"alias": g}
        for k in rows[0]:
            if k == "alias" or "_stderr" in k:
                continue
            x = np.array([r[k] for r in rows], dtype=float)
            row[k] = float(x @ w / w.sum())
            row[k.replace(",", "_stderr,")] = "N/A"
        row.update(overrides.get(g, {}))
        results["results"][g] = row
        results["group_subtasks"][g] = list(groups[g])
        return row

    for g in groups:
        report(g)


def model_scores(n_models: int, tasks: Mapping[str, int], *, seed: int = 0, continuous: Sequence[str] = ()
                 ) -> dict[str, dict[str, dict[int, dict[str, Any]]]]:
    """Seeded 2PL-like scores: ``{model: {task: {doc_id: {"acc": 0/1, "acc_norm": 0/1, "f1": float}}}}``."""
    rng = np.random.default_rng(seed)
    theta = np.sort(rng.normal(size=n_models))
    out: dict[str, dict[str, dict[int, dict[str, Any]]]] = {}
    for i in range(n_models):
        out[f"org/model-{i}"] = {}
    for task, n in tasks.items():
        b = rng.normal(size=n)
        for i, name in enumerate(out):
            p = 1 / (1 + np.exp(-(theta[i] - b)))
            acc = (rng.random(n) < p).astype(int)
            docs = {}
            for d in range(n):
                v: dict[str, Any] = {"acc": float(acc[d]), "acc_norm": float(rng.random() < p[d])}
                if task in continuous:
                    v["f1"] = float(np.round(p[d] * rng.random(), 6))
                docs[d] = v
            out[name][task] = docs
    return out


# ------------------------------------------------------------------ Open LLM Leaderboard
def write_leaderboard_v1_details(model_dir: Path, task: str, metrics: Sequence[Mapping[str, float]], *,
                                 date: str = "2024-01-06T02-53-50.876104") -> Path:
    """One v1 details file: ``<model_dir>/<date>/details_<task>_<date>.parquet`` (lighteval ``Detail`` columns)."""
    import pandas as pd

    rows = []
    for i, m in enumerate(metrics):
        rows.append({
            "example": f"question {i}", "instruction": "", "full_prompt": f"Question: question {i}\nAnswer:",
            "num_effective_few_shots": 25, "num_asked_few_shots": 25, "predictions": [[-1.5, False], [-0.5, True]],
            "input_tokens": [], "cont_tokens": [], "truncated": [0, 0], "padded": [0, 0], "gold": [""],
            "pred_logits": [], "choices": [" yes", " no"], "gold_index": [i % 2], "metrics": dict(m),
        })
    p = model_dir / date / f"details_{task}_{date}.parquet"
    p.parent.mkdir(parents=True, exist_ok=True)
    pd.DataFrame(rows).to_parquet(p, index=False)
    return p


def write_leaderboard_v2_parquet(model_dir: Path, config: str, split: str, docs: Mapping[int, Mapping[str, Any]]
                                 ) -> Path:
    """The dataset viewer's parquet copy of a v2 details config: ``<model_dir>/<config>/<split>/0000.parquet``."""
    import pandas as pd

    rows = [sample_line(d, m, filter=None, with_metric_names=False) for d, m in docs.items()]
    p = model_dir / config / split / "0000.parquet"
    p.parent.mkdir(parents=True, exist_ok=True)
    pd.DataFrame(rows).to_parquet(p, index=False)
    return p


# ------------------------------------------------------------------ HELM
def _stat(name: str, value: float, split: str = "test") -> dict[str, Any]:
    return {"name": {"name": name, "split": split}, "count": 1, "sum": value, "sum_squared": value * value,
            "min": value, "max": value, "mean": value, "variance": 0.0, "stddev": 0.0}


def write_helm_run(suite_dir: Path, scenario: str, model: str, instances: Mapping[str, Mapping[str, float]], *,
                   perturbed: bool = False) -> Path:
    """One HELM run folder ``<suite_dir>/<run name>/`` with ``run_spec.json`` and ``per_instance_stats.json``.

    The run name is HELM's (``ModelRunExpander``): ``<scenario>[,:]model=<model with / as _>``, e.g.
    ``mmlu:subject=anatomy,method=multiple_choice_joint,model=openai_gpt2``.
    """
    name = f"{scenario}{',' if ':' in scenario else ':'}model={model.replace('/', '_')}"
    run = suite_dir / name
    run.mkdir(parents=True, exist_ok=True)
    spec = {"name": name,
            "scenario_spec": {"class_name": "helm.benchmark.scenarios.mmlu_scenario.MMLUScenario",
                              "args": {"subject": "anatomy"}},
            "adapter_spec": {"method": "multiple_choice_joint", "model_deployment": model, "model": model,
                             "max_train_instances": 5, "num_outputs": 1, "temperature": 0.0},
            "metric_specs": [{"class_name": "helm.benchmark.metrics.basic_metrics.BasicGenerationMetric",
                              "args": {"names": ["exact_match"]}}],
            "groups": ["mmlu"]}
    (run / "run_spec.json").write_text(json.dumps(spec, indent=2), encoding="utf-8")
    per = []
    for iid, stats in instances.items():
        per.append({"instance_id": iid, "train_trial_index": 0,
                    "stats": [_stat(k, v) for k, v in stats.items()] + [_stat("num_prompt_tokens", 120.0)]})
        if perturbed:
            pert = {"name": "misspellings", "robustness": True, "fairness": False, "computed_on": "perturbed",
                    "prob": 0.1}
            per.append({"instance_id": iid, "perturbation": pert, "train_trial_index": 0,
                        "stats": [{**_stat(k, 0.0), "name": {"name": k, "split": "test", "perturbation": pert}}
                                  for k in stats]})
    (run / "per_instance_stats.json").write_text(json.dumps(per, indent=2), encoding="utf-8")
    (run / "stats.json").write_text("[]", encoding="utf-8")
    return run

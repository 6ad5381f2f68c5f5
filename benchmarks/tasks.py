"""Planning a grid: method specs (``name:key=value``), tasks (one run each) and plugins."""
from __future__ import annotations

import importlib
import importlib.util
import json
import os
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from benchsel.formulations.core.errors import BenchselError, InvalidInputError
from benchsel.formulations.core.validation import check_float, check_int
from benchsel.instances.files import class_path, fingerprint
from benchsel.solvers.methods import available_methods, get_method
from benchsel.solvers.reference import reference_methods

__all__ = ["MethodSpec", "Task", "import_plugin", "parse_method", "plan", "row_key", "run_key"]


# ------------------------------------------------------------------ tasks
@dataclass(frozen=True)
class MethodSpec:
    """A method name with options, parsed from ``name`` or ``name:key=value,key=value``."""

    label: str
    name: str
    options: Mapping[str, Any] = field(default_factory=dict)


def _parse_value(v: str) -> Any:
    try:
        return json.loads(v)
    except ValueError:
        return v


def parse_method(text: str) -> MethodSpec:
    """Parse ``"highs"`` or ``"highs:model=radius,mip_rel_gap=0.01"``.

    Values are read as JSON when they parse (numbers, true/false, null, lists),
    else kept as strings.
    """
    if not isinstance(text, str) or not text.strip():
        raise InvalidInputError(f"methods: expected a method name, got {text!r}")
    name, sep, rest = text.strip().partition(":")
    opts: dict[str, Any] = {}
    if sep:
        for part in rest.split(","):
            if not part.strip():
                continue
            k, eq, v = part.partition("=")
            if not eq or not k.strip():
                raise InvalidInputError(f"methods: expected 'name:key=value,...', got {text!r}")
            opts[k.strip()] = _parse_value(v.strip())
    label = name if not opts else name + ":" + ",".join(f"{k}={json.dumps(v) if not isinstance(v, str) else v}"
                                                          for k, v in opts.items())
    return MethodSpec(label, name.strip(), opts)


@dataclass(frozen=True)
class Task:
    """One run: what a worker process needs (all picklable)."""

    suite: str
    instance: str
    cls: str  # "module:ClassName"
    params: Mapping[str, Any]
    formulation: str
    sense: str
    n_items: int
    fingerprint: str
    method: str  # registry name
    label: str  # method with options, as shown in tables
    kind: str
    options: Mapping[str, Any]
    seed: int
    time_limit: float
    threads: int = 1
    fidelity: tuple[Callable[..., Mapping[str, float]], Mapping[str, Any]] | None = None
    meta: Mapping[str, Any] = field(default_factory=dict)
    plugins: tuple[str, ...] = ()

    @property
    def key(self) -> str:
        return run_key(self.instance, self.fingerprint, self.label, self.seed, self.time_limit)


def run_key(instance: str, fingerprint: str, label: str, seed: Any, time_limit: Any) -> str:
    """Identity of a run in the results store."""
    return f"{instance}|{fingerprint}|{label}|{int(seed)}|{float(time_limit):g}"


def row_key(row: Mapping[str, Any]) -> str:
    return run_key(row["instance"], row["fingerprint"], row["method"], row["seed"], row["time_limit"])


def import_plugin(spec: str) -> None:
    """Import a module that registers methods: a module name or a ``.py`` file path."""
    try:
        if spec.endswith(".py") or os.sep in spec:
            p = Path(spec).resolve()
            if not p.is_file():
                raise InvalidInputError(f"plugin: no such file {spec!r}")
            name = f"benchsel_plugin_{abs(hash(str(p)))}"
            if name in sys.modules:
                return
            s = importlib.util.spec_from_file_location(name, p)
            if s is None or s.loader is None:
                raise InvalidInputError(f"plugin: cannot import {spec!r}")
            mod = importlib.util.module_from_spec(s)
            sys.modules[name] = mod
            s.loader.exec_module(mod)
        else:
            importlib.import_module(spec)
    except BenchselError:
        raise
    except Exception as e:
        raise InvalidInputError(f"plugin: importing {spec!r} failed ({type(e).__name__}: {e})") from None


def default_methods(f: Any) -> tuple[str, ...]:
    """The exact methods that give ``f``'s reference optimum (:func:`benchsel.solvers.reference.reference_methods`),
    then every heuristic, then every baseline (a paper's comparison method) that accepts ``f``."""
    return (reference_methods(f) + tuple(available_methods(f, "heuristic"))
            + tuple(available_methods(f, "baseline")))


def plan(suite: str, specs: Sequence[Any], *, methods: Sequence[str] | None = None, seeds: int = 1,
         time_limit: float, threads: int = 1, plugins: Sequence[str] = ()) -> tuple[list[Task], list[str]]:
    """Expand instance specs into the grid of runs.

    Parameters
    ----------
    suite : str
        Suite name (stored with each row).
    specs : sequence of benchsel.benchmarks.suites.InstanceSpec
    methods : sequence of str, optional
        Methods (``name`` or ``name:key=value,...``) replacing each instance's
        defaults; a method that refuses an instance is skipped there (noted),
        one that accepts none of them is an error.
    seeds : int
        Seeds ``0 .. seeds-1`` for every (instance, method).
    time_limit : float
        Seconds per run, the same for every method.
    threads : int
        Passed as ``threads`` to methods that take that option.
    plugins : sequence of str
        Modules or ``.py`` files registering extra methods (imported here and in
        every worker).

    Returns
    -------
    tasks : list of Task
    notes : list of str
        Skipped (instance, method) pairs with the reason.
    """


    seeds = check_int(seeds, "seeds", low=1)
    time_limit = check_float(time_limit, "time-limit", low=0.0, low_open=True)
    threads = check_int(threads, "threads", low=1)
    for p in plugins:
        import_plugin(p)
    wanted = [parse_method(m) for m in methods] if methods else None
    for ms in wanted or ():
        get_method(ms.name)  # unknown method: a clear error before anything runs
    accepted: dict[str, int] = {ms.label: 0 for ms in wanted or ()}
    tasks: list[Task] = []
    notes: list[str] = []
    for spec in specs:
        f = spec.make()
        fp = fingerprint(f)
        cls = class_path(type(f))
        params = f.get_params()
        defaults = spec.methods if spec.methods is not None else default_methods(f)
        for ms in wanted or [parse_method(m) for m in defaults]:
            m = get_method(ms.name)
            why = m.accepts(f)
            if why is not None:
                notes.append(f"{ms.label} skipped on {spec.name} ({type(f).__name__}): {why}")
                continue
            try:  # names and values, before anything runs
                m.check_options(f, dict(ms.options))
            except InvalidInputError as e:
                raise InvalidInputError(f"methods: {ms.label!r} on {type(f).__name__}: {e}") from None
            accepted[ms.label] = accepted.get(ms.label, 0) + 1
            opts = dict(ms.options)
            if "threads" in m.options and "threads" not in opts:
                opts["threads"] = threads
            for seed in range(seeds):
                tasks.append(Task(
                    suite=suite, instance=spec.name, cls=cls, params=params, formulation=type(f).__name__,
                    sense=f.sense, n_items=int(f.n_items), fingerprint=fp, method=ms.name, label=ms.label,
                    kind=m.kind, options=opts, seed=seed, time_limit=time_limit, threads=threads,
                    fidelity=spec.fidelity, meta=dict(spec.meta), plugins=tuple(str(p) for p in plugins),
                ))
    if wanted:
        none = [lab for lab, n in accepted.items() if n == 0]
        if none:
            raise InvalidInputError(
                f"methods: {', '.join(map(repr, none))} accepts none of the {len(specs)} instances of suite {suite!r}"
            )
    return tasks, notes

"""Solve a benchsel MPS export with HiGHS reading the file (the ``benchsel solve file.mps`` path).

The writer and the name map are the neutral model's serialisation and live in
:mod:`benchsel.formulations.core.mps`.
"""
from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import numpy as np

from benchsel.formulations.core.errors import InvalidInputError
from benchsel.formulations.core.mps import read_name_map, selection_from_values
from benchsel.formulations.core.result import Termination, mip_gap
from benchsel.formulations.core.validation import check_time_limit

from .common import highs_status_map, highspy_module

__all__ = ["solve_mps"]


def solve_mps(path: str | Path, time_limit: float | None = None, *, seed: int = 0, threads: int | None = None,
              mip_rel_gap: float = 1e-6) -> dict[str, Any]:
    """Solve a benchsel ``.mps`` export with HiGHS reading the file (method ``"highs"``).

    Parameters
    ----------
    path : str or Path
        The ``.mps`` file; its name map ``<path>.json`` must lie beside it.
    time_limit : float, optional
        HiGHS time limit in seconds.
    seed, threads, mip_rel_gap
        HiGHS settings.

    Returns
    -------
    dict
        A result row: ``method`` (``"highs"``), ``selection`` (ndarray of int,
        shape (n_selected,), the items of the selection block at value 1),
        ``objective`` and ``bound`` in the formulation's units (``objective_sign``
        times the MPS values; None when absent), ``gap``, ``termination``,
        ``seconds``, ``mps_objective``, ``highs_status``, ``formulation``.
        Feasibility is not judged here: the caller checks the selection with
        the formulation when it has it.
    """
    path = Path(path)
    time_limit = check_time_limit(time_limit)
    info = read_name_map(path)
    if not path.is_file():
        raise InvalidInputError(f"path: no such MPS file {str(path)!r}")
    if info.get("quadratic") and info.get("integer_columns", 1):
        raise InvalidInputError(
            f"path: {str(path)!r} holds a mixed-integer quadratic program (QUADOBJ section and integer columns), "
            "which HiGHS does not solve; solve the formulation with method 'scip' (or 'pyomo' with solver='scip'), "
            "or read the file with SCIP: pyscipopt.Model().readProblem(path)"
        )
    hp = highspy_module()
    h = hp.Highs()
    h.setOptionValue("output_flag", False)
    h.setOptionValue("random_seed", int(seed) % 2147483647)
    h.setOptionValue("mip_rel_gap", float(mip_rel_gap))
    if threads is not None:
        h.setOptionValue("threads", int(threads))
    if time_limit is not None:
        h.setOptionValue("time_limit", float(time_limit))
    t0 = time.perf_counter()
    if h.readModel(str(path)) == hp.HighsStatus.kError:
        raise InvalidInputError(f"path: HiGHS could not read {str(path)!r} as an MPS file")
    read_s = time.perf_counter() - t0
    h.run()
    seconds = time.perf_counter() - t0
    status = h.getModelStatus()
    term = highs_status_map(hp).get(status, Termination.UNKNOWN)
    hinfo = h.getInfo()
    has_sol = hinfo.primal_solution_status == hp.kSolutionStatusFeasible
    sign = float(info.get("objective_sign", 1))
    if has_sol:
        names = list(h.getLp().col_names_)
        values = dict(zip(names, np.asarray(h.getSolution().col_value, dtype=float).tolist()))
        selection = selection_from_values(info, values)
        mps_obj = float(hinfo.objective_function_value)
    else:
        selection, mps_obj = np.zeros(0, dtype=np.int64), None
    is_mip = h.getLp().integrality_ is not None and len(h.getLp().integrality_) > 0
    raw_bound = float(hinfo.mip_dual_bound) if is_mip else (mps_obj if term == Termination.OPTIMAL else None)
    bound = sign * raw_bound if raw_bound is not None and np.isfinite(raw_bound) else None
    objective = sign * mps_obj if mps_obj is not None else None
    return {
        "method": "highs",
        "formulation": info.get("formulation", ""),
        "selection": selection,
        "objective": objective,
        "bound": bound,
        "gap": mip_gap(objective, bound),
        "termination": term.value,
        "seconds": seconds,
        "read_seconds": read_s,
        "mps_objective": mps_obj,
        "highs_status": h.modelStatusToString(status),
    }

"""BLAS on one thread for benchmark processes, set at run time (never by importing a module).

On a shared machine the small factorisations of the estimators and of BayesAME
run much slower multithreaded; the studies and the fidelity benchmark
therefore run BLAS on one thread in the process and in each worker they start.
"""
from __future__ import annotations

from typing import Any

from threadpoolctl import threadpool_limits

__all__ = ["init_worker", "one_blas_thread"]


def one_blas_thread() -> Any:
    """A context running BLAS on one thread in this process."""
    return threadpool_limits(limits=1, user_api="blas")


def init_worker() -> None:
    """A process-pool initializer: BLAS on one thread for the worker's life."""
    threadpool_limits(limits=1, user_api="blas")

"""Exact backends: each module registers its methods when imported (found by :mod:`benchsel.solvers.methods`).

``common`` is the shared run loop (warm start, build, solve, reconcile);
``highs``, ``scip``, ``pyomo``, ``cpsat`` and ``size_sweep`` register methods;
``branch_and_cut`` is HiGHS' branch-and-Benders-cut for models with lazy rows;
``mps`` solves an MPS export read from file.
"""

"""Options of the branch-and-cut (:class:`BnCOptions`)."""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class BnCOptions:
    """Settings of :class:`BranchAndCut` (defaults tuned on k-medoids Benders masters).

    Attributes
    ----------
    root_rounds : int
        Most separation rounds at the root.
    node_rounds : int
        Most separation rounds at other nodes (the loop also stops when a round
        raises the bound by less than ``tail_off`` relative; integral LP points
        are always separated to the end).
    tail_off : float
    in_out : float
        Weight of the LP point in the in-out separation point at the root
        (``0``: off; ``1`` is plain separation).
    cut_age : int
        LP solves a cut may stay slack before it leaves the LP for the pool
        (``0``: cuts never leave).
    pool_size : int
        Most rows kept in the pool.
    pool_nnz : int
        Most non-zeros kept in the pool (about 12 bytes each); the oldest rows
        are forgotten first. Bounds the pool's memory on long runs.
    heuristic_every : int
        Node heuristic (rounding plus eager swaps) every this many nodes
        (``0``: only at the root).
    plunge : float
        After branching, a child is solved next (its LP starts from its
        parent's basis) while its bound is below the best open bound plus
        this share of the gap; otherwise the best open node is.
    strong, strong_depth : int
        Strong branching: the children's LPs of this many best-scoring
        candidates (``0``: off), at nodes down to ``strong_depth``.
    reliable : int
        With ``strong``: reliability branching — only candidates whose
        pseudo-costs rest on fewer than this many observations in either
        direction are strong-branched (which records their pseudo-costs),
        then the column is chosen by pseudo-costs (``0``: every node
        strong-branches its ``strong`` best candidates and picks by their gains).
    strong_share, strong_offset : float or None, int
        Budget of strong branching (SCIP's ``sbiterquot`` and ``sbiterofs``):
        its simplex iterations stay below ``strong_share`` times the
        iterations of every other LP solved so far plus ``strong_offset``, and
        each of its LPs stops after twice the average iterations of those LPs
        (the value reached then ranks the candidate); past the budget a node
        branches on pseudo-costs alone. ``strong_share=None``: no budget, every
        strong-branching LP solved to the end.
    max_nodes : int, optional
        Stop (termination ``"iteration_limit"``) after this many nodes.
    initial_share : float
        Share of the time left that the lazy rows' ``initial_rows`` (a warm
        start of the root cut loop) may use before the first LP (``0``: off).
    compact : float
        Integer columns that reduced-cost fixing holds at 0 for the whole
        search leave the LP (with their entries in every row, which makes each
        simplex iteration cheaper) once they number at least this share of
        the LP's columns (and at least 32); ``0``: they stay.
    threads : int, optional
        Search threads (``None``: the cores this process may use, at most 4, and only as many as fit over
        the peak memory so far within the lazy rows' ``memory_budget``; a number given here is used as is).
    parallel_after : float
        Seconds the search runs on one thread before the others start (they
        start after the root, when nodes are open); short searches stay on one.
    own_share : float
        With several threads, a thread takes the best open node it created
        itself (its LP is nearer to that node's) while that node's bound is
        within this share of the gap above the best open bound.
    log_every : float
        Seconds between progress lines with ``verbose``.
    """

    root_rounds: int = 500
    node_rounds: int = 25
    tail_off: float = 1e-5
    in_out: float = 0.0
    cut_age: int = 15
    pool_size: int = 200_000
    pool_nnz: int = 4_000_000
    heuristic_every: int = 10
    plunge: float = 0.5
    strong: int = 8
    strong_depth: int = 1000
    reliable: int = 4
    strong_share: float | None = 0.5
    strong_offset: int = 100_000
    branching: str = "pseudocost"
    max_nodes: int | None = None
    initial_share: float = 0.3
    compact: float = 0.05
    threads: int | None = None
    parallel_after: float = 1.0
    own_share: float = 1.0
    log_every: float = 5.0


_NO_ITERATION_LIMIT = 2**31 - 1  # HiGHS' default simplex_iteration_limit

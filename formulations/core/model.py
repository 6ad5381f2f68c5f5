"""The neutral mixed-integer model every backend and the MPS writer read.

A formulation states itself once as a :class:`LinearModel`: arrays for the
objective, a ``scipy.sparse`` constraint matrix, row and column bounds and
integrality, with names grouped in *blocks* (``y[j]``, ``x[i,j]``,
``cover[a,r]`` ...). Models are built with :class:`ModelBuilder`, which takes
whole blocks of variables and whole blocks of rows as arrays (COO triplets),
never term by term.

Every model is a **minimisation**. A formulation whose objective is to be
maximised states ``-objective`` and sets ``objective_sign=-1``; the
formulation's objective value is then ``objective_sign * (c @ x + c0)``.

The objective may have a quadratic part: a sparse symmetric matrix ``Q``
beside ``c`` (``c @ x + 1/2 x @ Q @ x + c0``; :attr:`LinearModel.Q`, None for
a linear model). Only backends that take mixed-integer quadratic programs
read such a model; the others refuse it with the reason.
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Protocol

import numpy as np
import scipy.sparse as sp
from numpy.typing import ArrayLike

from .errors import InvalidInputError

__all__ = ["Block", "LazyRows", "LazyRowsBase", "LinearModel", "ModelBuilder", "RowBlock", "lazy_rows"]

INF = np.inf


@dataclass(frozen=True)
class Block:
    """A named, contiguous range of columns or rows.

    Parameters
    ----------
    name : str
        Block name, e.g. ``"y"`` or ``"assign"``; a valid identifier.
    start : int
        First flat index of the block.
    shape : tuple of int
        Index shape; the element ``idx`` of the block has flat index
        ``start + np.ravel_multi_index(idx, shape)``.
    """

    name: str
    start: int
    shape: tuple[int, ...]

    @property
    def size(self) -> int:
        return int(np.prod(self.shape, dtype=np.int64)) if self.shape else 1

    @property
    def stop(self) -> int:
        return self.start + self.size

    def label(self, flat: int) -> str:
        """Readable name of the element with global flat index ``flat``."""
        idx = np.unravel_index(flat - self.start, self.shape)
        return f"{self.name}[{','.join(str(int(i)) for i in idx)}]"


@dataclass(frozen=True, eq=False)
class RowBlock:
    """New rows as COO triplets with local row numbers.

    Attributes
    ----------
    rows : ndarray of int, shape (nnz,)
        Local row of each entry, ``0..n_rows-1``.
    cols : ndarray of int, shape (nnz,)
        Global column of each entry.
    vals : ndarray of float, shape (nnz,)
    lb, ub : ndarray of float, shape (n_rows,)
    """

    rows: np.ndarray
    cols: np.ndarray
    vals: np.ndarray
    lb: np.ndarray
    ub: np.ndarray

    @property
    def n_rows(self) -> int:
        return int(self.lb.size)

    def csr(self, n_cols: int) -> sp.csr_array:
        A = sp.csr_array((self.vals, (self.rows, self.cols)), shape=(self.n_rows, n_cols))
        A.sum_duplicates()
        return A


class LazyRows(Protocol):
    """Rows too many to state up front, separated on demand (row generation).

    The model without them is a *relaxation*; ``separate(x)`` returns rows that
    ``x`` violates (None when it satisfies them all). A backend that supports
    lazy rows solves, separates, adds and re-solves until nothing is violated;
    every bound it proves along the way is valid for the full model.

    ``name`` and ``separate`` are required. The other members help benchsel's
    branch-and-cut and have defaults in :class:`LazyRowsBase` (subclass it); a
    :class:`LinearModel` given an object that does not subclass it fills the
    missing members with those defaults once, when the model is built
    (:func:`lazy_rows`), so backends read every member directly. With several
    search threads, ``separate``, ``round`` and ``improve`` are called from
    several threads at once: they must not share scratch state.

    Attributes
    ----------
    name : str
    stats : mapping
        Counters copied into the result's extras (default: none).
    memory_budget : int or None
        Bytes the whole solve should stay within; further search threads start only while each one's LP copy
        fits in it (default None: no budget).
    initial_bound : float or None
        A valid bound on the optimum known after :meth:`initial_rows` (default None).
    """

    name: str

    @property
    def stats(self) -> Mapping[str, Any]: ...

    @property
    def memory_budget(self) -> int | None: ...

    @property
    def initial_bound(self) -> float | None: ...

    def separate(self, x: np.ndarray, tol: float = 1e-6) -> RowBlock | None:
        """Violated rows at the full column vector ``x`` (shape (n_cols,))."""

    def round(self, x: np.ndarray) -> np.ndarray | None:
        """A selection built from a fractional point ``x`` (shape (n_cols,); a primal heuristic), or None."""

    def improve(self, selection: np.ndarray, x: np.ndarray, *, deadline: float | None = None) -> np.ndarray:
        """A local search from ``selection`` (``deadline``: a ``time.perf_counter()`` value)."""

    def initial_rows(self, time_limit: float | None = None, incumbent: np.ndarray | None = None) -> RowBlock | None:
        """Rows to add before the first LP (a warm start of the root cut loop), or None."""

    def branch_scores(self, x: np.ndarray) -> np.ndarray | None:
        """A score per integer column (shape (n_cols,)) for columns without branching history, or None."""


class LazyRowsBase:
    """The defaults of :class:`LazyRows`' optional members; generators subclass it and define ``name`` and
    ``separate`` (and override what else they offer)."""

    name: str = "lazy_rows"
    stats: Mapping[str, Any] = MappingProxyType({})
    memory_budget: int | None = None
    initial_bound: float | None = None

    def separate(self, x: np.ndarray, tol: float = 1e-6) -> RowBlock | None:
        raise NotImplementedError(f"{type(self).__name__} defines no separate(x, tol)")

    def round(self, x: np.ndarray) -> np.ndarray | None:
        return None

    def improve(self, selection: np.ndarray, x: np.ndarray, *, deadline: float | None = None) -> np.ndarray:
        return selection

    def initial_rows(self, time_limit: float | None = None, incumbent: np.ndarray | None = None) -> RowBlock | None:
        return None

    def branch_scores(self, x: np.ndarray) -> np.ndarray | None:
        return None


class _WithDefaults(LazyRowsBase):
    """A lazy-row generator that does not subclass :class:`LazyRowsBase`, with the defaults for what it lacks."""

    def __init__(self, inner: Any) -> None:
        self._inner = inner
        for member in ("name", "stats", "memory_budget", "initial_bound"):
            if hasattr(inner, member):  # the one probe of the optional members, at model build
                setattr(self, member, getattr(inner, member))
        for hook in ("separate", "round", "improve", "initial_rows", "branch_scores"):
            if callable(getattr(inner, hook, None)):
                setattr(self, hook, getattr(inner, hook))


def lazy_rows(obj: Any) -> LazyRows | None:
    """``obj`` as a :class:`LazyRows` with every member (None stays None); checked once, at model build."""
    if obj is None or isinstance(obj, LazyRowsBase):
        return obj
    if not callable(getattr(obj, "separate", None)):
        raise InvalidInputError(f"lazy: expected a LazyRows object with a separate(x, tol) method, "
                                f"got {type(obj).__name__}")
    return _WithDefaults(obj)


@dataclass(frozen=True, eq=False)
class LinearModel:
    """A mixed-integer linear (or quadratic-objective) minimisation problem held as arrays.

    ``min c @ x + 1/2 x @ Q @ x + c0  s.t.  row_lb <= A @ x <= row_ub,
    col_lb <= x <= col_ub, x[j] integer where integrality[j]`` (no ``Q`` term
    when ``Q`` is None: a mixed-integer linear program).

    Attributes
    ----------
    c : ndarray, shape (n,)
        Objective coefficients.
    c0 : float
        Objective constant.
    A : scipy.sparse.csr_array, shape (m, n)
        Constraint matrix.
    row_lb, row_ub : ndarray, shape (m,)
        Row bounds (``-inf`` / ``inf`` allowed, never both).
    col_lb, col_ub : ndarray, shape (n,)
        Column bounds.
    integrality : ndarray of bool, shape (n,)
        True for integer columns.
    implied_integer : ndarray of bool, shape (n,)
        Continuous columns that take integer values at some optimum once the
        integer columns are integral. Backends without continuous variables
        may treat them as integer without scaling.
    col_blocks, row_blocks : tuple of Block
        Names of columns and rows, in order, covering ``0..n`` and ``0..m``.
    selection_block : str
        The block of binary columns whose value 1 means "item selected".
    selection_items : ndarray of int, shape (size of selection block,)
        Item index of each column of the selection block.
    objective_sign : {1, -1}
        Formulation objective = ``objective_sign * (c @ x + c0)``.
    name : str
        Model name (a safe identifier).
    meta : dict
        Free-form facts about the statement (e.g. which variant was built).
    lazy : LazyRows or None
        Rows generated on demand; the arrays above are then a relaxation.
    integral_objective : bool
        Every feasible solution has an integer objective (e.g. integer
        distances and weights), so a bound may be rounded up.
    Q : scipy.sparse.csr_array, shape (n, n), or None
        Symmetric matrix of the objective's quadratic part ``1/2 x @ Q @ x``
        (None: the objective is linear). Entries are stored once per
        ``(i, j)``; ``Q[i, j] == Q[j, i]``.
    """

    c: np.ndarray
    c0: float
    A: sp.csr_array
    row_lb: np.ndarray
    row_ub: np.ndarray
    col_lb: np.ndarray
    col_ub: np.ndarray
    integrality: np.ndarray
    implied_integer: np.ndarray
    col_blocks: tuple[Block, ...]
    row_blocks: tuple[Block, ...]
    selection_block: str
    selection_items: np.ndarray
    objective_sign: int = 1
    name: str = "benchsel"
    meta: Mapping[str, Any] = field(default_factory=dict)
    lazy: LazyRows | None = None
    integral_objective: bool = False
    Q: sp.csr_array | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "lazy", lazy_rows(self.lazy))

    @property
    def is_quadratic(self) -> bool:
        """The objective has a quadratic part (``Q`` with at least one non-zero)."""
        return self.Q is not None and self.Q.nnz > 0

    @property
    def n_cols(self) -> int:
        return int(self.c.shape[0])

    @property
    def n_rows(self) -> int:
        return int(self.A.shape[0])

    @property
    def nnz(self) -> int:
        return int(self.A.nnz)

    def col_block(self, name: str) -> Block:
        for b in self.col_blocks:
            if b.name == name:
                return b
        raise KeyError(f"no column block named {name!r}; blocks: {[b.name for b in self.col_blocks]}")

    def row_block(self, name: str) -> Block:
        for b in self.row_blocks:
            if b.name == name:
                return b
        raise KeyError(f"no row block named {name!r}; blocks: {[b.name for b in self.row_blocks]}")

    def selection_columns(self) -> np.ndarray:
        """Flat column indices of the selection block, shape (n_sel,)."""
        b = self.col_block(self.selection_block)
        return np.arange(b.start, b.stop)

    def selection_from_x(self, x: np.ndarray) -> np.ndarray:
        """Items whose selection column is (rounded to) 1; sorted int64 array."""
        cols = self.selection_columns()
        chosen = np.asarray(x, dtype=float)[cols] > 0.5
        return np.sort(self.selection_items[chosen]).astype(np.int64)

    def x_from_selection(self, selection: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Partial solution (columns, values) setting the selection block.

        Returns
        -------
        cols : ndarray of int, shape (n_sel,)
        vals : ndarray of float, shape (n_sel,)  (1.0 for selected items)
        """
        cols = self.selection_columns()
        vals = np.isin(self.selection_items, np.asarray(selection)).astype(float)
        return cols, vals

    def objective_value(self, x: np.ndarray) -> float:
        """Formulation objective of a full column vector ``x`` (shape (n,)), quadratic part included."""
        x = np.asarray(x, dtype=float)
        val = self.c @ x + self.c0
        if self.Q is not None:
            val += 0.5 * float(x @ (self.Q @ x))
        return float(self.objective_sign * val)

    def max_violation(self, x: np.ndarray) -> float:
        """Largest row, bound or integrality violation of ``x``."""
        ax = self.A @ x
        v = [
            np.max(self.row_lb - ax, initial=0.0),
            np.max(ax - self.row_ub, initial=0.0),
            np.max(self.col_lb - x, initial=0.0),
            np.max(x - self.col_ub, initial=0.0),
        ]
        if self.integrality.any():
            xi = x[self.integrality]
            v.append(float(np.max(np.abs(xi - np.round(xi)), initial=0.0)))
        return float(max(v))

    def column_label(self, j: int) -> str:
        for b in self.col_blocks:
            if b.start <= j < b.stop:
                return b.label(j)
        raise IndexError(j)

    def row_label(self, i: int) -> str:
        for b in self.row_blocks:
            if b.start <= i < b.stop:
                return b.label(i)
        raise IndexError(i)

    def summary(self) -> dict[str, Any]:
        """Sizes, for logs and result extras."""
        return {
            "model": self.name,
            "n_cols": self.n_cols,
            "n_rows": self.n_rows,
            "nnz": self.nnz,
            "n_integer": int(self.integrality.sum()),
            **({"q_nnz": int(self.Q.nnz)} if self.Q is not None else {}),
            **{f"model_{k}": v for k, v in self.meta.items() if np.isscalar(v)},
        }


_IDENT_OK = set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_")


def _check_name(name: str, taken: Sequence[str]) -> None:
    if not name or not set(name) <= _IDENT_OK or name[0].isdigit():
        raise InvalidInputError(f"block name: expected an identifier of letters, digits and '_', got {name!r}")
    if name in taken:
        raise InvalidInputError(f"block name: {name!r} is already used")


class ModelBuilder:
    """Build a :class:`LinearModel` block by block from arrays.

    Examples
    --------
    >>> b = ModelBuilder("demo")
    >>> y = b.add_vars("y", (3,), lb=0, ub=1, integer=True, cost=[1.0, 2.0, 3.0])
    >>> _ = b.add_cardinality("card", y, 2)
    >>> m = b.build(selection_block="y", selection_items=np.arange(3))
    >>> m.n_cols, m.n_rows
    (3, 1)
    """

    def __init__(self, name: str = "benchsel") -> None:
        self.name = name
        self._n = 0
        self._m = 0
        self._col_blocks: list[Block] = []
        self._row_blocks: list[Block] = []
        self._cost: list[np.ndarray] = []
        self._clb: list[np.ndarray] = []
        self._cub: list[np.ndarray] = []
        self._int: list[np.ndarray] = []
        self._implied: list[np.ndarray] = []
        self._rows: list[np.ndarray] = []
        self._cols: list[np.ndarray] = []
        self._vals: list[np.ndarray] = []
        self._rlb: list[np.ndarray] = []
        self._rub: list[np.ndarray] = []
        self._c0 = 0.0
        self._qr: list[np.ndarray] = []
        self._qc: list[np.ndarray] = []
        self._qv: list[np.ndarray] = []

    @property
    def n_cols(self) -> int:
        return self._n

    def add_vars(
        self,
        name: str,
        shape: int | tuple[int, ...],
        *,
        lb: ArrayLike = 0.0,
        ub: ArrayLike = INF,
        integer: bool = False,
        implied_integer: bool = False,
        cost: ArrayLike = 0.0,
    ) -> np.ndarray:
        """Add a block of variables.

        Parameters
        ----------
        name : str
            Block name.
        shape : int or tuple of int
            Index shape of the block.
        lb, ub : float or ndarray broadcastable to ``shape``
            Bounds.
        integer : bool
            Integer (binary when bounds are 0 and 1) variables.
        implied_integer : bool
            Continuous, but integral at an optimum once integers are integral.
        cost : float or ndarray broadcastable to ``shape``
            Objective coefficients.

        Returns
        -------
        ndarray of int, shape ``shape``
            Global column indices of the block.
        """
        _check_name(name, [b.name for b in self._col_blocks])
        shape = (int(shape),) if isinstance(shape, (int, np.integer)) else tuple(int(s) for s in shape)
        size = int(np.prod(shape, dtype=np.int64))
        blk = Block(name, self._n, shape)
        self._col_blocks.append(blk)
        self._cost.append(np.broadcast_to(np.asarray(cost, float), shape).ravel())
        self._clb.append(np.broadcast_to(np.asarray(lb, float), shape).ravel())
        self._cub.append(np.broadcast_to(np.asarray(ub, float), shape).ravel())
        self._int.append(np.full(size, bool(integer)))
        self._implied.append(np.full(size, bool(implied_integer) and not integer))
        idx = np.arange(self._n, self._n + size, dtype=np.int64).reshape(shape)
        self._n += size
        return idx

    def add_rows(
        self,
        name: str,
        *,
        rows: ArrayLike,
        cols: ArrayLike,
        vals: ArrayLike,
        lb: ArrayLike = -INF,
        ub: ArrayLike = INF,
        shape: int | tuple[int, ...] | None = None,
    ) -> np.ndarray:
        """Add a block of rows given as COO triplets.

        Parameters
        ----------
        name : str
            Block name.
        rows : ndarray of int, shape (nnz,)
            Row of each entry, local to the block (flat, ``0..size-1``).
        cols : ndarray of int, shape (nnz,)
            Global column of each entry (as returned by :meth:`add_vars`).
        vals : ndarray of float, shape (nnz,), or float
            Coefficients; duplicates (same row and column) are summed.
        lb, ub : float or ndarray, shape (size,)
            Row bounds.
        shape : int or tuple, optional
            Index shape of the block; defaults to ``(len(lb),)`` or
            ``(max(rows) + 1,)`` when both bounds are scalars.

        Returns
        -------
        ndarray of int, shape ``shape``
            Global row indices.
        """
        _check_name(name, [b.name for b in self._row_blocks])
        rows = np.asarray(rows, dtype=np.int64).ravel()
        cols = np.asarray(cols, dtype=np.int64).ravel()
        vals = np.broadcast_to(np.asarray(vals, float), rows.shape).ravel()
        if rows.shape != cols.shape:
            raise InvalidInputError(
                f"add_rows({name!r}): rows and cols must have the same length, got {rows.size} and {cols.size}"
            )
        if shape is None:
            if not np.isscalar(lb):
                shape = (int(np.size(lb)),)
            elif not np.isscalar(ub):
                shape = (int(np.size(ub)),)
            else:
                shape = (int(rows.max()) + 1 if rows.size else 0,)
        shape = (int(shape),) if isinstance(shape, (int, np.integer)) else tuple(int(s) for s in shape)
        size = int(np.prod(shape, dtype=np.int64))
        if rows.size and (rows.min() < 0 or rows.max() >= size):
            raise InvalidInputError(f"add_rows({name!r}): local row indices must lie in [0, {size}), "
                                    f"got {rows.min()}..{rows.max()}")
        if cols.size and (cols.min() < 0 or cols.max() >= self._n):
            raise InvalidInputError(f"add_rows({name!r}): column indices must lie in [0, {self._n}), "
                                    f"got {cols.min()}..{cols.max()}")
        rlb = np.broadcast_to(np.asarray(lb, float), (size,)).ravel()
        rub = np.broadcast_to(np.asarray(ub, float), (size,)).ravel()
        if np.any(np.isneginf(rlb) & np.isposinf(rub)):
            raise InvalidInputError(f"add_rows({name!r}): a row with no finite bound")
        blk = Block(name, self._m, shape)
        self._row_blocks.append(blk)
        self._rows.append(rows + self._m)
        self._cols.append(cols)
        self._vals.append(vals)
        self._rlb.append(rlb)
        self._rub.append(rub)
        self._m += size
        return np.arange(blk.start, blk.stop, dtype=np.int64).reshape(shape)

    def add_cardinality(
        self,
        name: str,
        cols: ArrayLike,
        k: float | None = None,
        *,
        coefs: ArrayLike | float = 1.0,
        lb: float | None = None,
        ub: float | None = None,
    ) -> int:
        """Add one row ``sum_j coefs_j * x[cols_j]``, equal to ``k`` or within ``[lb, ub]``.

        The commonest row of a selection model: "choose exactly ``k``" (and its
        variants: a size column, ``sum x - size = 0``; one size out of several,
        ``sum z = 1``).

        Parameters
        ----------
        name : str
            Row block name.
        cols : array_like of int, shape (n,)
            Global columns of the row.
        k : float, optional
            Right-hand side of an equality (``lb = ub = k``).
        coefs : array_like of float, shape (n,), or float
            Coefficients (default 1).
        lb, ub : float, optional
            Bounds instead of ``k``.

        Returns
        -------
        int
            The global row index.
        """
        if k is not None:
            if lb is not None or ub is not None:
                raise InvalidInputError(f"add_cardinality({name!r}): give k or lb/ub, not both")
            lb = ub = float(k)
        cols = np.asarray(cols, dtype=np.int64).ravel()
        rows = self.add_rows(name, rows=np.zeros(cols.size, np.int64), cols=cols, vals=coefs,
                             lb=[-INF if lb is None else float(lb)], ub=[INF if ub is None else float(ub)])
        return int(rows[0])

    def add_objective_constant(self, value: float) -> None:
        self._c0 += float(value)

    def add_quadratic_objective(self, rows: ArrayLike, cols: ArrayLike, vals: ArrayLike) -> None:
        """Add ``1/2 x @ T @ x`` to the objective, ``T`` given as COO triplets.

        The model keeps the symmetric ``Q = (T + T^T) / 2`` summed over every
        call (duplicates are summed), so ``T`` may list one triangle, both, or
        an asymmetric matrix: only ``x @ T @ x`` matters. ``rows == cols``
        with ``vals = 2 d`` adds ``sum_j d_j x_j^2``.

        Parameters
        ----------
        rows, cols : array_like of int, shape (nnz,)
            Global columns (as returned by :meth:`add_vars`).
        vals : array_like of float, shape (nnz,), or float
            Finite coefficients.
        """
        rows = np.asarray(rows, dtype=np.int64).ravel()
        cols = np.asarray(cols, dtype=np.int64).ravel()
        if rows.shape != cols.shape:
            raise InvalidInputError(
                f"add_quadratic_objective: rows and cols must have the same length, got {rows.size} and {cols.size}"
            )
        vals = np.broadcast_to(np.asarray(vals, float), rows.shape).ravel()
        if rows.size and (min(rows.min(), cols.min()) < 0 or max(rows.max(), cols.max()) >= self._n):
            raise InvalidInputError(
                f"add_quadratic_objective: column indices must lie in [0, {self._n}), "
                f"got {min(rows.min(), cols.min())}..{max(rows.max(), cols.max())}"
            )
        if not np.all(np.isfinite(vals)):
            raise InvalidInputError("add_quadratic_objective: vals must be finite")
        self._qr.append(rows)
        self._qc.append(cols)
        self._qv.append(vals)

    def build(
        self,
        *,
        selection_block: str,
        selection_items: np.ndarray,
        objective_sign: int = 1,
        meta: Mapping[str, Any] | None = None,
        lazy: LazyRows | None = None,
        integral_objective: bool = False,
    ) -> LinearModel:
        """Assemble the model (sums duplicate entries, drops explicit zeros)."""
        cat = lambda parts, dt=float: np.concatenate(parts).astype(dt) if parts else np.zeros(0, dt)  # noqa: E731
        A = sp.csr_array(
            (cat(self._vals), (cat(self._rows, np.int64), cat(self._cols, np.int64))),
            shape=(self._m, self._n),
        )
        A.sum_duplicates()
        A.eliminate_zeros()
        Q = None
        if self._qr:
            T = sp.coo_array((cat(self._qv), (cat(self._qr, np.int64), cat(self._qc, np.int64))),
                             shape=(self._n, self._n))
            Q = sp.csr_array(0.5 * (T + T.T))
            Q.sum_duplicates()
            Q.eliminate_zeros()
        model = LinearModel(
            c=cat(self._cost),
            c0=self._c0,
            A=A,
            row_lb=cat(self._rlb),
            row_ub=cat(self._rub),
            col_lb=cat(self._clb),
            col_ub=cat(self._cub),
            integrality=cat(self._int, bool),
            implied_integer=cat(self._implied, bool),
            col_blocks=tuple(self._col_blocks),
            row_blocks=tuple(self._row_blocks),
            selection_block=selection_block,
            selection_items=np.asarray(selection_items, dtype=np.int64).ravel(),
            objective_sign=int(objective_sign),
            name=self.name,
            meta=dict(meta or {}),
            lazy=lazy,
            integral_objective=bool(integral_objective),
            Q=Q,
        )
        sel = model.col_block(selection_block)
        if model.selection_items.size != sel.size:
            raise InvalidInputError(
                f"selection_items: expected {sel.size} items (the size of block {selection_block!r}), "
                f"got {model.selection_items.size}"
            )
        return model

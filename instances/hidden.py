"""Hidden states of source models on benchmark items (RepCore's input).

* :func:`load_hidden_states` reads a folder of per-model ``.npy`` files or one
  ``.npz`` with one array per model;
* :func:`make_hidden_states` draws seeded heterogeneous hidden states with a
  planted item structure and IRT-style correctness;
* :func:`save_hidden_states` writes the ``.npz`` form.
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from benchsel.formulations.core.errors import InvalidInputError
from benchsel.formulations.core.untrusted import (
    MB,
    LimitError,
    current_limits,
    file_size,
    npz_members,
    read_npz_members,
)
from benchsel.formulations.core.validation import check_allocation, check_float, check_int, check_rng
from benchsel.formulations.repcore import check_hidden_states

__all__ = ["RESERVED_KEYS", "HiddenStates", "load_hidden_states", "make_hidden_states", "save_hidden_states"]

#: Array names that are not a model's hidden states in a file or folder.
RESERVED_KEYS = ("item_ids", "Y", "models")


@dataclass(frozen=True, eq=False)
class HiddenStates:
    """Per-model hidden states on a common set of items.

    Attributes
    ----------
    hidden_states : list of ndarray, each of shape (N, d_m)
        Row ``i`` of every array is item ``i``.
    models : ndarray of str, shape (M,)
    item_ids : ndarray, shape (N,)
    Y : ndarray of float, shape (M_y, N), optional
        Correctness (1 = correct). From :func:`make_hidden_states`: every
        generated model, the first ``M`` of which have hidden states; from a
        file: the file's ``Y`` if it has one.
    groups : ndarray of int, shape (N,), optional
        Planted item groups (synthetic data only).
    """

    hidden_states: list[np.ndarray]
    models: np.ndarray
    item_ids: np.ndarray
    Y: np.ndarray | None = None
    groups: np.ndarray | None = None

    @property
    def n_models(self) -> int:
        """Models with hidden states."""
        return len(self.hidden_states)

    @property
    def n_items(self) -> int:
        return int(self.hidden_states[0].shape[0])

    @property
    def widths(self) -> tuple[int, ...]:
        return tuple(int(h.shape[1]) for h in self.hidden_states)

    def subset(self, models: Any) -> list[np.ndarray]:
        """The hidden states of some models, by index or name (a list, in the order given)."""
        idx = []
        for m in models:
            if isinstance(m, str):
                hit = np.flatnonzero(self.models == m)
                if hit.size == 0:
                    raise InvalidInputError(f"models: unknown model {m!r}; models: {', '.join(self.models[:10])}...")
                idx.append(int(hit[0]))
            else:
                idx.append(check_int(m, "models", low=0, high=self.n_models - 1))
        return [self.hidden_states[i] for i in idx]


# --------------------------------------------------------------------------- files
def _finish(arrays: list[np.ndarray], names: list[str], ids: np.ndarray | None, Y: np.ndarray | None,
            path: Path, item_ids: Any) -> HiddenStates:
    if not arrays:
        raise InvalidInputError(f"path: {str(path)!r} holds no model's hidden states (reserved names: "
                                f"{', '.join(RESERVED_KEYS)})")
    try:
        H = check_hidden_states(arrays)
    except InvalidInputError as e:
        msg = str(e)
        for j, n in enumerate(names):  # name the model's file or key, not a list index
            msg = msg.replace(f"hidden_states[{j}]", f"{n!r}")
        raise InvalidInputError(f"path: {str(path)!r}: {msg}") from None
    N = H[0].shape[0]
    if ids is not None and ids.shape != (N,):
        raise InvalidInputError(f"path: {str(path)!r}: item_ids has shape {ids.shape}, expected ({N},) "
                                "(one per row of the hidden states)")
    if Y is not None and (Y.ndim != 2 or Y.shape[1] != N):
        raise InvalidInputError(f"path: {str(path)!r}: Y has shape {Y.shape}, expected (models, {N})")
    if item_ids is not None:
        want = np.asarray(item_ids)
        if want.ndim != 1 or want.size != N:
            raise InvalidInputError(f"item_ids: expected {N} item ids (the file's rows), got shape {want.shape}")
        if ids is not None:
            a, b = ids.astype(str), want.astype(str)
            if np.unique(a).size != a.size:
                raise InvalidInputError(f"path: {str(path)!r}: item_ids has repeated ids")
            if np.unique(b).size != b.size:
                raise InvalidInputError("item_ids: expected distinct item ids, got repeated ids")
            missing = np.setdiff1d(b, a)
            if missing.size:
                raise InvalidInputError(f"item_ids: {missing.size} of the given ids are not in {str(path)!r} "
                                        f"(e.g. {missing[0]!r})")
            pos = {v: i for i, v in enumerate(a)}
            order = np.array([pos[v] for v in b], dtype=np.int64)  # file row of each requested id
            H = [h[order] for h in H]
            Y = None if Y is None else Y[:, order]
        ids = want
    return HiddenStates(hidden_states=H, models=np.asarray(names, dtype=str),
                        item_ids=np.arange(N) if ids is None else ids,
                        Y=None if Y is None else np.asarray(Y, dtype=float))


def load_hidden_states(path: str | Path, *, item_ids: Any = None, models: Sequence[str] | None = None) -> HiddenStates:
    """Read per-model hidden states.

    Parameters
    ----------
    path : str or Path
        A folder with one ``<model>.npy`` per model (each of shape (N, d_m);
        sorted by file name), or one ``.npz`` with one array per model (in
        stored order). Arrays named ``item_ids`` (shape (N,)), ``Y`` (shape
        (M, N), correctness) or ``models`` are read as such, not as models.
    item_ids : array_like, shape (N,), optional
        Item ids the rows must match (e.g. a response file's ``item_ids``).
        When the file stores ``item_ids`` too, rows are reordered to the
        given order (every given id must be in the file); otherwise only the
        count is checked.
    models : sequence of str, optional
        Load only these models, in this order.

    Returns
    -------
    HiddenStates
    """
    path = Path(path)
    wanted = None if models is None else [str(m) for m in models]
    arrays: list[np.ndarray] = []
    names: list[str] = []
    ids = Y = None
    if path.is_dir():
        files = sorted(p for p in path.iterdir() if p.suffix == ".npy")
        if not files:
            raise InvalidInputError(f"path: folder {str(path)!r} has no .npy files")
        avail = {p.stem: p for p in files}
        if "models" in avail:
            raise InvalidInputError(f"path: {str(path)!r}: 'models.npy' is reserved; model order is the file names'")
        for key in (wanted if wanted is not None else [s for s in avail if s not in RESERVED_KEYS]):
            if key not in avail:
                raise InvalidInputError(f"models: {key!r} has no file {key}.npy in {str(path)!r}")
            arrays.append(_read_npy(avail[key]))
            names.append(key)
        ids = _read_npy(avail["item_ids"], numeric=False) if "item_ids" in avail else None
        Y = _read_npy(avail["Y"]) if "Y" in avail else None
    elif path.is_file():
        if path.suffix.lower() == ".npy":
            raise InvalidInputError(f"path: {str(path)!r} is a single .npy array; pass a folder of per-model .npy "
                                    "files or an .npz with one array per model")
        keys = npz_members(path, what="the hidden-state file")
        picked = wanted if wanted is not None else [k for k in keys if k not in RESERVED_KEYS]
        for key in picked:
            if key not in keys:
                raise InvalidInputError(f"models: {key!r} is not an array of {str(path)!r} "
                                        f"(arrays: {', '.join(keys[:10])})")
        z = read_npz_members(path, picked, optional=("item_ids", "Y", "models"), what="the hidden-state file")
        for key in picked:
            arrays.append(_numeric(z[key], path, key))
            names.append(key)
        ids = np.asarray(z["item_ids"]) if "item_ids" in z else None
        Y = _numeric(z["Y"], path, "Y") if "Y" in z else None
        if "models" in z and wanted is None:
            stored = np.asarray(z["models"]).astype(str)
            if stored.size == len(names):
                names = list(stored)
    else:
        raise InvalidInputError(f"path: {str(path)!r} is neither a folder of .npy files nor an .npz file")
    return _finish(arrays, names, ids, Y, path, item_ids)


def _numeric(a: Any, path: Path, key: str) -> np.ndarray:
    arr = np.asarray(a)
    if not (np.issubdtype(arr.dtype, np.number) or arr.dtype == bool):
        raise InvalidInputError(f"path: {str(path)!r}: array {key!r} has dtype {arr.dtype}, expected numbers")
    return arr.astype(float) if arr.dtype.kind != "f" else arr


def _read_npy(p: Path, numeric: bool = True) -> np.ndarray:
    cap = current_limits().max_array_bytes
    if file_size(p, "the .npy file") > cap:
        raise LimitError(f"path: {str(p)!r} is larger than the cap of {cap / MB:g} MB; raise it with --max-array-mb "
                         "(Limits.max_array_bytes) if the file is trusted")
    try:
        a = np.load(p, allow_pickle=False)
    except (OSError, ValueError, EOFError) as e:
        raise InvalidInputError(f"path: cannot read {str(p)!r}: {e}") from None
    return _numeric(a, p, p.stem) if numeric else np.asarray(a)


def save_hidden_states(path: str | Path, hidden_states: Any, *, models: Sequence[str] | None = None,
                       item_ids: Any = None, Y: Any = None) -> Path:
    """Write hidden states as one ``.npz`` (one array per model), readable by :func:`load_hidden_states`.

    Parameters
    ----------
    path : str or Path
    hidden_states : HiddenStates or sequence of array_like, each of shape (N, d_m)
    models : sequence of str, optional
        Array names (default ``model_0 ...``; a :class:`HiddenStates`' own names).
    item_ids : array_like, shape (N,), optional
    Y : array_like, shape (M, N), optional

    Returns
    -------
    Path
    """
    if isinstance(hidden_states, HiddenStates):
        models = list(hidden_states.models) if models is None else models
        item_ids = hidden_states.item_ids if item_ids is None else item_ids
        Y = hidden_states.Y[: hidden_states.n_models] if Y is None and hidden_states.Y is not None else Y
        hidden_states = hidden_states.hidden_states
    H = check_hidden_states(hidden_states)
    names = [f"model_{m}" for m in range(len(H))] if models is None else [str(m) for m in models]
    if len(names) != len(H) or len(set(names)) != len(names):
        raise InvalidInputError(f"models: expected {len(H)} distinct names, got {len(names)} "
                                f"({len(set(names))} distinct)")
    bad = [n for n in names if n in RESERVED_KEYS]
    if bad:
        raise InvalidInputError(f"models: {bad[0]!r} is a reserved name ({', '.join(RESERVED_KEYS)})")
    out: dict[str, np.ndarray] = dict(zip(names, H))
    if item_ids is not None:
        out["item_ids"] = np.asarray(item_ids)
    if Y is not None:
        out["Y"] = np.asarray(Y, dtype=float)
    path = Path(path)
    np.savez_compressed(path, **out)  # type: ignore[arg-type]
    return path if path.suffix == ".npz" else path.with_name(path.name + ".npz")


# --------------------------------------------------------------------------- synthetic
def make_hidden_states(n_items: int = 1000, n_models: int = 10, *, n_targets: int = 0,
                       widths: int | Sequence[int] | None = None, n_groups: int = 8, latent_dim: int = 16,
                       n_nuisance: int = 8, item_spread: float = 0.6, skill_spread: float = 0.8,
                       confidence: float = 0.5, discrimination: float = 1.0, noise: float = 0.3,
                       seed: Any = 0) -> HiddenStates:
    """Seeded heterogeneous hidden states with planted item groups and IRT correctness.

    Items fall in ``n_groups`` planted groups; item ``i`` of group ``g`` has a
    latent position ``u_i = c_g + item_spread * N(0, I)`` in
    ``R^latent_dim``, a surface-feature vector ``s_i ~ N(0, I)`` in
    ``R^n_nuisance`` unrelated to correctness (prompt length, format...), a
    difficulty ``b_i = beta_g + N(0, 0.7^2)`` and a discrimination
    ``a_i = discrimination * LogNormal(0, 0.3)``. Model ``m`` has an ability ``theta_m ~
    N(0, 1)`` and a skill per group ``gamma_{m,g} ~ N(0, skill_spread^2)``;
    its correctness is ``y_{m,i} ~ Bernoulli(sigmoid(a_i (theta_m +
    gamma_{m,g_i} - b_i)))``. Its hidden state, of its own width ``d_m``, is

        ``h_{m,i} = s_m * tanh(A_m u_i + B_m s_i + confidence * v_m * margin_{m,i}) + o_m + noise * N(0, I)``

    with model-specific random maps ``A_m``, ``B_m``, direction ``v_m``, scales
    ``s_m`` (log-normal per coordinate) and offsets ``o_m``, and
    ``margin_{m,i} = theta_m + gamma_{m,g_i} - b_i``: a different feature
    space per model that encodes the item's group, its surface features and
    the model's own confidence.

    Parameters
    ----------
    n_items : int
    n_models : int
        Models with hidden states (sources).
    n_targets : int
        Further models with correctness only (rows ``n_models..`` of ``Y``).
    widths : int or sequence of int (one per model), optional
        Hidden widths ``d_m`` (default: drawn from 64, 96, 128, 192, 256).
    n_groups, latent_dim, n_nuisance : int
        Planted groups (balanced), latent width, surface features.
    item_spread : float
        Spread of the items around their group's centre.
    skill_spread : float
        Standard deviation of the models' per-group skills (how much the
        groups matter for correctness).
    confidence : float
        Weight of the model's own margin in its hidden state.
    discrimination : float
        Scale of the items' discriminations (larger: less noisy answers).
    noise : float
        Standard deviation of the hidden states' additive noise.
    seed : int or Generator

    Returns
    -------
    HiddenStates
        ``Y`` of shape (n_models + n_targets, n_items), ``groups`` the planted groups.
    """
    N = check_int(n_items, "n_items", low=2)
    M = check_int(n_models, "n_models", low=1)
    T = check_int(n_targets, "n_targets", low=0)
    G = check_int(n_groups, "n_groups", low=1, high=N)
    r = check_int(latent_dim, "latent_dim", low=1)
    q = check_int(n_nuisance, "n_nuisance", low=0)
    isp = check_float(item_spread, "item_spread", low=0.0)
    ssp = check_float(skill_spread, "skill_spread", low=0.0)
    conf = check_float(confidence, "confidence", low=0.0)
    disc = check_float(discrimination, "discrimination", low=0.0, low_open=True)
    nz = check_float(noise, "noise", low=0.0)
    rng = check_rng(seed)
    if widths is None:
        d = rng.choice(np.array([64, 96, 128, 192, 256]), size=M)
    elif not isinstance(widths, Sequence) or isinstance(widths, (str, bytes)):
        d = np.full(M, check_int(widths, "widths", low=1))
    else:
        if len(widths) != M:
            raise InvalidInputError(f"widths: expected an int or {M} widths (one per model), got {widths!r}")
        d = np.array([check_int(w, f"widths[{j}]", low=1) for j, w in enumerate(widths)])
    check_allocation(24.0 * N * (M + T + r + q), "n_items",
                     f"{N} items x {M + T} models (correctness and item parameters)")
    check_allocation(4.0 * N * float(d.sum()) + 32.0 * N * float(d.max()), "widths",
                     f"hidden states of {N} items x widths summing to {int(d.sum())}")
    # items
    groups = rng.permutation(np.arange(N) % G)  # balanced planted groups
    centres = rng.normal(size=(G, r))
    U = centres[groups] + isp * rng.normal(size=(N, r))
    S = rng.normal(size=(N, q))
    b = rng.normal(scale=0.5, size=G)[groups] + rng.normal(scale=0.7, size=N)
    a = disc * rng.lognormal(0.0, 0.3, size=N)
    # models (sources first, then targets)
    theta = rng.normal(size=M + T)
    gamma = ssp * rng.normal(size=(M + T, G))
    margin = theta[:, None] + gamma[:, groups] - b[None, :]
    p = 1.0 / (1.0 + np.exp(-a[None, :] * margin))
    Y = (rng.uniform(size=p.shape) < p).astype(float)
    H = []
    for m in range(M):
        dm = int(d[m])
        A = rng.normal(size=(r, dm)) / np.sqrt(r)
        B = rng.normal(size=(q, dm)) / np.sqrt(max(q, 1))
        v = rng.normal(size=dm)
        pre = U @ A + (S @ B if q else 0.0) + margin[m][:, None] * (conf * v)[None, :]
        scale = rng.lognormal(0.0, 0.7, size=dm)
        offset = rng.normal(scale=2.0, size=dm)
        h = scale * np.tanh(pre) + offset + nz * rng.normal(size=(N, dm))
        H.append(h.astype(np.float32))
    names = np.array([f"source_{m}" for m in range(M)])
    return HiddenStates(hidden_states=H, models=names, item_ids=np.arange(N), Y=Y, groups=groups)

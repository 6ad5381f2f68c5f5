"""RepCore: aligned hidden-state representations of benchmark items.

Each source model ``m`` gives, per item ``i``, a hidden state ``h_{m,i}`` of
its own width ``d_m`` and a binary correctness ``y_{m,i}``. A model-specific
linear projection ``P_m: R^{d_m} -> R^w`` feeds one MLP shared by every model
(``w -> hidden... -> dim``, ReLU between layers, a linear last layer); its
output ``z_{m,i}`` is the *aligned embedding*. A linear head on ``z`` is
trained with cross-entropy to predict ``y_{m,i}`` on 70 % of the items (10 %
for early stopping, 20 % held out for the reported AUC). The *consensus
embedding* of item ``i`` is ``e_i = mean_m z_{m,i}`` scaled to unit length;
RepCore clusters it with spherical k-means (``"spherical-kmeans"`` on
``KMedoids.from_features(E, k, metric="cosine")``) and extrapolates with the
``"repcore-ridge"`` estimator.

The network is trained by this module in NumPy with explicit gradients and
AdamW, in float32 on the CPU: no deep-learning framework is needed (a CPU-only
torch wheel would do the same job, but the package registry's default torch
pulls several GB of CUDA wheels, and the network is four matrix products).

>>> from benchsel.instances import make_hidden_states
>>> hs = make_hidden_states(n_items=300, n_models=5, seed=0)
>>> E = align_hidden_states(hs.hidden_states, hs.Y, dim=16, seed=0)
>>> E.shape
(300, 16)
"""
from __future__ import annotations

import contextlib
import itertools
import math
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from benchsel.formulations.core.errors import InvalidInputError
from benchsel.formulations.core.validation import as_array, check_choice, check_float, check_int, check_rng

from .rankings import rankdata

__all__ = ["AlignmentHistory", "RepCoreAligner", "align_hidden_states", "check_hidden_states", "roc_auc"]

_DTYPE = np.float32


# --------------------------------------------------------------------------- input checks
def check_hidden_states(hidden_states: Any, name: str = "hidden_states") -> list[np.ndarray]:
    """Validate a list of per-model hidden-state arrays.

    Parameters
    ----------
    hidden_states : sequence of array_like, each of shape (N, d_m), or array_like of shape (M, N, d)
        One array per source model; every array has the same number of items
        ``N`` and its own width ``d_m >= 1``.
    name : str
        Argument name used in messages.

    Returns
    -------
    list of ndarray of float, each of shape (N, d_m)
    """
    if isinstance(hidden_states, np.ndarray) and hidden_states.ndim == 3:
        arrays: list[Any] = list(hidden_states)
    elif isinstance(hidden_states, (list, tuple)):
        arrays = list(hidden_states)
    else:
        what = f"an array of shape {hidden_states.shape}" if isinstance(hidden_states, np.ndarray) else \
            type(hidden_states).__name__
        raise InvalidInputError(f"{name}: expected a list of arrays of shape (N, d_m), one per source model, "
                                f"or an array of shape (M, N, d); got {what}")
    if not arrays:
        raise InvalidInputError(f"{name}: expected at least one source model's hidden states, got an empty list")
    out = []
    n_items = None
    for m, h in enumerate(arrays):
        a = as_array(h, f"{name}[{m}]", ndim=2, shape_doc="(N, d_m)", dtype=None)
        if a.dtype.kind not in "fiub":
            raise InvalidInputError(f"{name}[{m}]: expected a real numeric array, got dtype {a.dtype}")
        if a.dtype.kind != "f":
            a = a.astype(float)
        if a.shape[1] < 1:
            raise InvalidInputError(f"{name}[{m}]: expected a width d_m >= 1, got shape {a.shape} (zero width)")
        if a.shape[0] < 1:
            raise InvalidInputError(f"{name}[{m}]: expected at least one item, got shape {a.shape}")
        if n_items is None:
            n_items = a.shape[0]
        elif a.shape[0] != n_items:
            raise InvalidInputError(f"{name}[{m}]: expected {n_items} items (rows) like {name}[0], "
                                    f"got shape {a.shape}: every model's hidden states must cover the same items")
        out.append(a)
    return out


def _check_labels(Y: Any, n_models: int, n_items: int, name: str = "Y_source") -> np.ndarray:
    Y = as_array(Y, name, ndim=2, shape_doc=f"(M, N) = ({n_models}, {n_items})")
    if Y.shape[0] != n_models:
        raise InvalidInputError(f"{name}: expected one row per source model ({n_models} arrays of hidden states), "
                                f"got {Y.shape[0]} rows (shape {Y.shape})")
    if Y.shape[1] != n_items:
        raise InvalidInputError(f"{name}: expected one column per item ({n_items}, the hidden states' rows), "
                                f"got shape {Y.shape}")
    bad = (Y != 0) & (Y != 1)
    if bad.any():
        first = tuple(int(i) for i in np.argwhere(bad)[0])
        raise InvalidInputError(f"{name}: expected binary correctness (0 or 1) for the cross-entropy loss, got "
                                f"{int(bad.sum())} other values (e.g. {Y[first]:g} at index {first})")
    return Y


def roc_auc(scores: Any, labels: Any) -> float:
    """Area under the ROC curve (Mann-Whitney form, ties counted one half).

    Parameters
    ----------
    scores : array_like, shape (n,)
    labels : array_like of {0, 1}, shape (n,)

    Returns
    -------
    float
        NaN when ``labels`` has a single class.
    """
    s = np.asarray(scores, dtype=float).ravel()
    y = np.asarray(labels, dtype=float).ravel() > 0.5
    n1 = int(y.sum())
    n0 = y.size - n1
    if n1 == 0 or n0 == 0:
        return math.nan
    r = rankdata(s)  # average ranks of ties
    return float((r[y].sum() - n1 * (n1 + 1) / 2) / (n1 * n0))


# --------------------------------------------------------------------------- network
def _softplus(x: np.ndarray) -> np.ndarray:
    return np.logaddexp(0.0, x)


def _sigmoid(x: np.ndarray) -> np.ndarray:
    out = np.empty_like(x)
    pos = x >= 0
    out[pos] = 1.0 / (1.0 + np.exp(-x[pos]))
    e = np.exp(x[~pos])
    out[~pos] = e / (1.0 + e)
    return out


_LEAK = 0.1
#: activations and their derivatives as functions of the activation's output
_ACT: dict[str, Callable[[np.ndarray], np.ndarray]] = {
    "relu": lambda x: np.maximum(x, 0.0),
    "leaky_relu": lambda x: np.where(x > 0, x, _LEAK * x),
    "tanh": np.tanh,
}
_DACT: dict[str, Callable[[np.ndarray], np.ndarray]] = {
    "relu": lambda a: (a > 0).astype(a.dtype),
    "leaky_relu": lambda a: np.where(a > 0, 1.0, _LEAK).astype(a.dtype),
    "tanh": lambda a: 1.0 - a * a,
}


class _Net:
    """Parameters and the forward / backward pass of projections + shared MLP + head.

    ``params`` is a flat list: ``P_1 .. P_M`` (d_m, w), ``p_1 .. p_M`` (w,),
    then ``W_l, c_l`` per MLP layer, then the head ``a`` (dim,), ``c`` (1,).
    """

    def __init__(self, in_widths: Sequence[int], fan_in: Sequence[int], sizes: Sequence[int],
                 rng: np.random.Generator, activation: str = "relu") -> None:
        self.M = len(in_widths)
        self.activation = activation
        w = sizes[0]
        P = [(rng.standard_normal((d, w)) / math.sqrt(f)).astype(_DTYPE) for d, f in zip(in_widths, fan_in)]
        p = [np.zeros(w, _DTYPE) for _ in in_widths]
        layers: list[np.ndarray] = []
        for a, b in itertools.pairwise(sizes):
            gain = 2.0 if activation == "relu" else (2.0 / (1 + _LEAK ** 2) if activation == "leaky_relu" else 1.0)
            layers += [(rng.standard_normal((a, b)) * math.sqrt(gain / a)).astype(_DTYPE), np.zeros(b, _DTYPE)]
        head = [(rng.standard_normal(sizes[-1]) / math.sqrt(sizes[-1])).astype(_DTYPE), np.zeros(1, _DTYPE)]
        self.params: list[np.ndarray] = P + p + layers + head
        self.n_layers = len(sizes) - 1
        # weight matrices take weight decay, biases do not
        self.decay = [True] * self.M + [False] * self.M + [True, False] * self.n_layers + [True, False]

    def copy_params(self) -> list[np.ndarray]:
        return [q.copy() for q in self.params]

    def _layers(self) -> list[tuple[np.ndarray, np.ndarray]]:
        off = 2 * self.M
        return [(self.params[off + 2 * j], self.params[off + 2 * j + 1]) for j in range(self.n_layers)]

    def embed(self, X: Sequence[np.ndarray]) -> tuple[np.ndarray, list[np.ndarray]]:
        """Aligned embeddings of every model's rows, stacked: shape (M*n, dim), and the layer inputs."""
        M = self.M
        U = np.concatenate([X[m] @ self.params[m] + self.params[M + m] for m in range(M)], axis=0)
        acts = [U]
        A = U
        layers = self._layers()
        for j, (W, c) in enumerate(layers):
            A = A @ W + c
            if j < len(layers) - 1:
                A = _ACT[self.activation](A)
            acts.append(A)
        return A, acts

    def logits(self, Z: np.ndarray) -> np.ndarray:
        a, c = self.params[-2], self.params[-1]
        return Z @ a + c[0]

    def loss_grad(self, X: Sequence[np.ndarray], y: np.ndarray) -> tuple[float, list[np.ndarray]]:
        """Mean cross-entropy over the stacked rows and its gradient (no weight decay)."""
        M = self.M
        Z, acts = self.embed(X)
        t = self.logits(Z)
        n = t.size
        loss = float(np.mean(_softplus(t) - y * t))
        dt = ((_sigmoid(t) - y) / n).astype(_DTYPE)
        a = self.params[-2]
        grads: list[np.ndarray] = [np.empty(0)] * len(self.params)
        grads[-2] = Z.T @ dt
        grads[-1] = np.array([dt.sum()], _DTYPE)
        dA = np.outer(dt, a)
        layers = self._layers()
        off = 2 * M
        for j in range(len(layers) - 1, -1, -1):
            W, _ = layers[j]
            if j < len(layers) - 1:
                dA *= _DACT[self.activation](acts[j + 1])
            grads[off + 2 * j] = acts[j].T @ dA
            grads[off + 2 * j + 1] = dA.sum(axis=0)
            dA = dA @ W.T
        rows = np.cumsum([0] + [x.shape[0] for x in X])
        for m in range(M):
            dU = dA[rows[m]:rows[m + 1]]
            grads[m] = X[m].T @ dU
            grads[M + m] = dU.sum(axis=0)
        return loss, grads


class _AdamW:
    def __init__(self, params: list[np.ndarray], lr: float, weight_decay: float, decay: list[bool],
                 betas: tuple[float, float] = (0.9, 0.999), eps: float = 1e-8) -> None:
        self.lr, self.wd, self.decay = lr, weight_decay, decay
        self.b1, self.b2, self.eps = betas[0], betas[1], eps
        self.m = [np.zeros_like(p) for p in params]
        self.v = [np.zeros_like(p) for p in params]
        self.t = 0

    def step(self, params: list[np.ndarray], grads: list[np.ndarray]) -> None:
        self.t += 1
        c1 = 1.0 - self.b1 ** self.t
        c2 = 1.0 - self.b2 ** self.t
        for p, g, m, v, dec in zip(params, grads, self.m, self.v, self.decay):
            m *= self.b1
            m += (1.0 - self.b1) * g
            v *= self.b2
            v += (1.0 - self.b2) * (g * g)
            if dec and self.wd:
                p *= 1.0 - self.lr * self.wd
            p -= (self.lr / c1) * m / (np.sqrt(v / c2) + self.eps)


# --------------------------------------------------------------------------- aligner
@dataclass(frozen=True)
class AlignmentHistory:
    """The training curve of a :class:`RepCoreAligner` fit, one entry per epoch.

    Attributes
    ----------
    epoch : ndarray of int, shape (E,)
    train_loss : ndarray, shape (E,)
        Mean cross-entropy over the epoch's mini-batches (weight decay excluded).
    val_loss : ndarray, shape (E,)
        Cross-entropy on the validation items (NaN without a validation split).
    val_auc : ndarray, shape (E,)
        AUC of the head's logits on the validation items, pooled over models.
    seconds : ndarray, shape (E,)
        Wall-clock seconds since the start of the fit.
    """

    epoch: np.ndarray
    train_loss: np.ndarray
    val_loss: np.ndarray
    val_auc: np.ndarray
    seconds: np.ndarray

    def as_dict(self) -> dict[str, list[float]]:
        return {k: getattr(self, k).tolist() for k in ("epoch", "train_loss", "val_loss", "val_auc", "seconds")}


class RepCoreAligner:
    """Align heterogeneous hidden states into one embedding space (RepCore §2.2).

    Parameters
    ----------
    dim : int
        Width ``d_z`` of the aligned embedding (paper: 32).
    width : int, optional
        Width ``w`` of every model's projection ``P_m: R^{d_m} -> R^w``
        (default: the largest ``d_m``, at most 4096 — the paper's 4096 is for
        4096-wide hidden states).
    hidden : sequence of int, optional
        Hidden widths of the shared MLP between ``w`` and ``dim`` (default
        ``(w // 8, w // 32)``, each at least ``dim``: 4096 -> 512 -> 128 -> 32
        as in the paper). ``()`` makes the MLP one linear layer.
    epochs : int
        Maximum passes over the training items.
    batch_size : int
        Training items per step (each step uses every model's rows of them).
    lr : float
        AdamW learning rate.
    weight_decay : float
        AdamW decoupled weight decay on the weight matrices.
    patience : int
        Early stopping: epochs without a lower validation loss before stopping;
        the parameters of the best epoch are kept.
    split : (float, float, float)
        Shares of items for training, validation (early stopping) and test
        (held-out AUC); paper: 0.7 / 0.1 / 0.2. With a zero validation share
        the fit runs ``epochs`` epochs.
    time_limit : float, optional
        Wall-clock seconds for the training loop; on time-out the best epoch
        so far is kept (``stopped_ == "time_limit"``).
    seed : int or Generator
        Seeds the split, the initialisation and the batch order.
    verbose : bool
        One progress line per epoch on stderr.

    Attributes
    ----------
    projections_ : list of ndarray, each of shape (d_m, w)
        ``P_m`` acting on standardised hidden states.
    projection_biases_ : list of ndarray, each of shape (w,)
    layers_ : list of (ndarray, ndarray)
        The shared MLP's ``(W, c)`` per layer, shapes ``(a, b)`` and ``(b,)``.
    head_ : (ndarray, float)
        The linear classifier ``(a, c)``: ``logit = z @ a + c``.
    history_ : AlignmentHistory
    split_ : dict of str to ndarray of int
        Item indices of ``"train"``, ``"val"`` and ``"test"``.
    test_auc_ : float
        AUC of the head's logits on the test items, pooled over source models.
    test_auc_per_model_ : ndarray, shape (M,)
    best_epoch_, n_epochs_ : int
    stopped_ : {"early_stopping", "max_epochs", "time_limit"}
    fit_seconds_ : float
    embedding_ : ndarray, shape (N, dim)
        Unit-norm consensus embedding of the fitted items.
    """

    def __init__(self, dim: int = 32, *, width: int | None = None, hidden: Sequence[int] | None = None,
                 epochs: int = 200, batch_size: int = 128, lr: float = 1e-3, weight_decay: float = 1e-2,
                 patience: int = 10, split: Sequence[float] = (0.7, 0.1, 0.2), activation: str = "relu",
                 time_limit: float | None = None, threads: int | None = 1, seed: Any = 0,
                 verbose: bool = False) -> None:
        self.dim = check_int(dim, "dim", low=1)
        self.width = None if width is None else check_int(width, "width", low=1)
        if hidden is None:
            self.hidden: tuple[int, ...] | None = None
        else:
            if isinstance(hidden, (str, bytes)) or not isinstance(hidden, Sequence):
                raise InvalidInputError(f"hidden: expected a sequence of layer widths, got {type(hidden).__name__}")
            self.hidden = tuple(check_int(h, f"hidden[{j}]", low=1) for j, h in enumerate(hidden))
        self.activation = check_choice(activation, "activation", tuple(_ACT))
        self.epochs = check_int(epochs, "epochs", low=1)
        self.batch_size = check_int(batch_size, "batch_size", low=1)
        self.lr = check_float(lr, "lr", low=0.0, low_open=True)
        self.weight_decay = check_float(weight_decay, "weight_decay", low=0.0)
        self.patience = check_int(patience, "patience", low=1)
        sp = as_array(split, "split", shape=(3,), shape_doc="(3,): train, validation, test shares",
                      nonnegative=True)
        if abs(sp.sum() - 1.0) > 1e-9 or sp[0] <= 0:
            raise InvalidInputError(f"split: expected (train, validation, test) shares summing to 1 with a positive "
                                    f"training share, got {tuple(float(s) for s in sp)}")
        self.split = tuple(float(s) for s in sp)
        self.time_limit = None if time_limit is None else check_float(time_limit, "time_limit", low=0.0,
                                                                      low_open=True)
        self.threads = None if threads is None else check_int(threads, "threads", low=1)
        check_rng(seed)
        self.seed = seed
        if not isinstance(verbose, bool):
            raise InvalidInputError(f"verbose: expected true or false, got {type(verbose).__name__}")
        self.verbose = verbose

    # ------------------------------------------------------------------ helpers
    def _sizes(self, widths: Sequence[int]) -> list[int]:
        d = max(widths)
        w = self.width if self.width is not None else min(d, 512)
        hidden = self.hidden if self.hidden is not None else (min(512, max(4 * self.dim, d // 8)),
                                                              min(128, max(2 * self.dim, d // 32)))
        return [w, *hidden, self.dim]

    def _split(self, n: int, rng: np.random.Generator) -> dict[str, np.ndarray]:
        perm = rng.permutation(n)
        n_val = round(self.split[1] * n)
        n_test = round(self.split[2] * n)
        if self.split[1] > 0:
            n_val = max(n_val, 1)
        if self.split[2] > 0:
            n_test = max(n_test, 1)
        n_train = n - n_val - n_test
        if n_train < 1:
            raise InvalidInputError(f"hidden_states: {n} items are too few for the split {self.split} "
                                    "(no training item left)")
        return {"train": np.sort(perm[:n_train]), "val": np.sort(perm[n_train:n_train + n_val]),
                "test": np.sort(perm[n_train + n_val:])}

    def _progress(self, msg: str) -> None:
        if self.verbose:
            print(f"[benchsel] {msg}", file=sys.stderr, flush=True)

    def _standardise(self, H: list[np.ndarray]) -> list[np.ndarray]:
        """Per-coordinate z-scores with the fitted statistics (computed on ``h / max|h|``: no overflow)."""
        return [((h / a - mu) / sd).astype(_DTYPE) for h, a, mu, sd in zip(H, self._absmax, self._mean, self._scale)]

    def _check_fitted(self) -> None:
        if not hasattr(self, "projections_"):
            raise InvalidInputError("RepCoreAligner: call fit(hidden_states, Y_source) before transform")

    def _check_like_fit(self, hidden_states: Any) -> list[np.ndarray]:
        H = check_hidden_states(hidden_states)
        if len(H) != len(self.widths_):
            raise InvalidInputError(f"hidden_states: expected {len(self.widths_)} arrays (the fitted source models), "
                                    f"got {len(H)}")
        for m, (h, d) in enumerate(zip(H, self.widths_)):
            if h.shape[1] != d:
                raise InvalidInputError(f"hidden_states[{m}]: expected width {d} (as fitted), got shape {h.shape}")
        return H

    # ---------------------------------------------------------------------- fit
    def fit(self, hidden_states: Any, Y_source: Any) -> RepCoreAligner:
        """Train the projections, the shared MLP and the head.

        Parameters
        ----------
        hidden_states : sequence of array_like, each of shape (N, d_m)
            One array per source model (item ``i`` in row ``i`` of every array).
        Y_source : array_like of {0, 1}, shape (M, N)
            Correctness of source model ``m`` on item ``i``.

        Returns
        -------
        self
        """
        with _blas_threads(self.threads):
            return self._fit(hidden_states, Y_source)

    def _fit(self, hidden_states: Any, Y_source: Any) -> RepCoreAligner:
        t0 = time.perf_counter()
        H = check_hidden_states(hidden_states)
        M, N = len(H), H[0].shape[0]
        Y = _check_labels(Y_source, M, N).astype(_DTYPE)
        if N < 3:
            raise InvalidInputError(f"hidden_states: expected at least 3 items to split into train / validation / "
                                    f"test, got {N}")
        rng = check_rng(self.seed)
        self.widths_ = tuple(h.shape[1] for h in H)
        # z-scores are scale-free: compute them on h / max|h| so that huge or tiny values neither overflow nor
        # underflow; a coordinate constant over the items becomes 0
        self._absmax = [float(np.abs(h).max()) or 1.0 for h in H]
        unit = [(h / a).astype(float) for h, a in zip(H, self._absmax)]
        self._mean = [u.mean(axis=0) for u in unit]
        sd = [u.std(axis=0) for u in unit]
        self._scale = [np.where(s > 1e-9 * max(1.0, float(np.abs(mu).max())), s, 1.0) for s, mu in zip(sd, self._mean)]
        del unit
        X = self._standardise(H)
        # hidden states wider than the item count: train in the row space of the states
        # (an exact reparametrisation P_m = V_m P'_m; V_m from the thin SVD)
        bases: list[np.ndarray | None] = []
        for m in range(M):
            if X[m].shape[1] > N:
                U, s, Vt = np.linalg.svd(X[m].astype(np.float64), full_matrices=False)
                r = int(np.sum(s > s[0] * 1e-7)) if s.size and s[0] > 0 else 1
                bases.append(Vt[:r].T.astype(_DTYPE))
                X[m] = (U[:, :r] * s[:r]).astype(_DTYPE)
            else:
                bases.append(None)
        sizes = self._sizes(self.widths_)
        net = _Net([x.shape[1] for x in X], self.widths_, sizes, rng, self.activation)
        split = self._split(N, rng)
        tr, va = split["train"], split["val"]
        opt = _AdamW(net.params, self.lr, self.weight_decay, net.decay)
        best = net.copy_params()
        best_val, best_epoch, since = math.inf, 0, 0
        hist: dict[str, list[float]] = {k: [] for k in ("epoch", "train_loss", "val_loss", "val_auc", "seconds")}
        stopped = "max_epochs"
        yva = Y[:, va].ravel()
        for epoch in range(1, self.epochs + 1):
            order = rng.permutation(tr)
            losses, sizes_seen = 0.0, 0
            for s0 in range(0, order.size, self.batch_size):
                b = order[s0:s0 + self.batch_size]
                loss, grads = net.loss_grad([x[b] for x in X], Y[:, b].ravel())
                opt.step(net.params, grads)
                losses += loss * b.size
                sizes_seen += b.size
            tl = losses / sizes_seen
            if va.size:
                t = net.logits(net.embed([x[va] for x in X])[0])
                vl = float(np.mean(_softplus(t) - yva * t))
                vauc = roc_auc(t, yva)
            else:
                vl, vauc = math.nan, math.nan
            el = time.perf_counter() - t0
            for k, v in (("epoch", epoch), ("train_loss", tl), ("val_loss", vl), ("val_auc", vauc), ("seconds", el)):
                hist[k].append(v)
            self._progress(f"repcore alignment epoch {epoch}: train loss {tl:.4f}, validation loss {vl:.4f}, "
                           f"validation AUC {vauc:.3f} ({el:.1f} s)")
            if not np.isfinite(tl):
                raise FloatingPointError(f"lr: training diverged (loss {tl}) at epoch {epoch}; try a smaller lr")
            if not va.size or vl < best_val - 1e-6 * abs(vl):
                best, best_val, best_epoch, since = net.copy_params(), vl, epoch, 0
            else:
                since += 1
                if since >= self.patience:
                    stopped = "early_stopping"
                    break
            if self.time_limit is not None and time.perf_counter() - t0 >= self.time_limit:
                stopped = "time_limit" if epoch < self.epochs else stopped
                break
        net.params = best
        # parameters in the space of the standardised hidden states
        self.projections_ = [np.asarray(net.params[m] if V is None else V @ net.params[m]) for m, V in enumerate(bases)]
        self.projection_biases_ = [net.params[M + m] for m in range(M)]
        self.layers_ = net._layers()
        self.head_ = (net.params[-2], float(net.params[-1][0]))
        self.sizes_ = tuple(sizes)
        self.history_ = AlignmentHistory(np.asarray(hist["epoch"], np.int64),
                                         *(np.asarray(hist[k], float) for k in ("train_loss", "val_loss", "val_auc",
                                                                                "seconds")))
        self.split_ = split
        self.best_epoch_ = best_epoch
        self.n_epochs_ = len(hist["epoch"])
        self.stopped_ = stopped
        # embeddings and held-out AUC
        Z, _ = net.embed(X)
        t_all = net.logits(Z).reshape(M, N)
        te = split["test"]
        self.test_auc_ = roc_auc(t_all[:, te].ravel(), Y[:, te].ravel()) if te.size else math.nan
        self.test_auc_per_model_ = np.array([roc_auc(t_all[m, te], Y[m, te]) if te.size else math.nan
                                             for m in range(M)])
        self.embedding_ = _consensus(Z.reshape(M, N, self.dim))
        self.fit_seconds_ = time.perf_counter() - t0
        self._progress(f"repcore alignment: best epoch {best_epoch} of {self.n_epochs_} ({stopped}), "
                       f"test AUC {self.test_auc_:.3f}, {self.fit_seconds_:.1f} s")
        return self

    # ---------------------------------------------------------------- transform
    def _net_for_transform(self) -> _Net:
        net = _Net.__new__(_Net)
        net.M = len(self.widths_)
        net.n_layers = len(self.layers_)
        net.activation = self.activation
        net.params = [*self.projections_, *self.projection_biases_, *(q for wc in self.layers_ for q in wc),
                      self.head_[0], np.array([self.head_[1]], _DTYPE)]
        net.decay = []
        return net

    def embeddings(self, hidden_states: Any) -> np.ndarray:
        """Per-model aligned embeddings ``z_{m,i}``.

        Parameters
        ----------
        hidden_states : sequence of array_like, each of shape (n, d_m)
            The fitted source models' hidden states (same count and widths as
            in :meth:`fit`) on ``n`` items, fitted or new.

        Returns
        -------
        ndarray, shape (M, n, dim)
        """
        self._check_fitted()
        H = self._check_like_fit(hidden_states)
        net = self._net_for_transform()
        with _blas_threads(self.threads):
            Z, _ = net.embed(self._standardise(H))
        return Z.reshape(len(H), H[0].shape[0], self.dim).astype(float)

    def transform(self, hidden_states: Any) -> np.ndarray:
        """Unit-norm consensus embedding ``e_i / ||e_i||``, ``e_i = mean_m z_{m,i}``.

        Parameters
        ----------
        hidden_states : sequence of array_like, each of shape (n, d_m)

        Returns
        -------
        ndarray, shape (n, dim)
        """
        return _consensus(self.embeddings(hidden_states))

    def predict_proba(self, hidden_states: Any) -> np.ndarray:
        """The head's probability that each source model answers each item correctly.

        Returns
        -------
        ndarray, shape (M, n)
        """
        self._check_fitted()
        H = self._check_like_fit(hidden_states)
        net = self._net_for_transform()
        with _blas_threads(self.threads):
            Z, _ = net.embed(self._standardise(H))
        return _sigmoid(net.logits(Z).astype(float)).reshape(len(H), H[0].shape[0])

    def fit_transform(self, hidden_states: Any, Y_source: Any) -> np.ndarray:
        """:meth:`fit`, then the consensus embedding of the fitted items, shape (N, dim)."""
        return self.fit(hidden_states, Y_source).embedding_.copy()


def _blas_threads(n: int | None) -> Any:
    """A context limiting BLAS to ``n`` threads (None: leave BLAS alone)."""
    if n is None:
        return contextlib.nullcontext()
    from threadpoolctl import threadpool_limits

    return threadpool_limits(limits=n, user_api="blas")


def _consensus(Z: np.ndarray) -> np.ndarray:
    """Mean over models of ``Z`` (M, n, dim), rows scaled to unit length (float64)."""
    e = Z.astype(float).mean(axis=0)
    norms = np.linalg.norm(e, axis=1, keepdims=True)
    zero = norms[:, 0] <= 1e-300
    if zero.any():  # every model's embedding cancels exactly: use the mean direction
        mean = e.mean(axis=0)
        fill = mean if np.linalg.norm(mean) > 0 else np.eye(e.shape[1])[0]
        e[zero] = fill
        norms = np.linalg.norm(e, axis=1, keepdims=True)
    return e / norms


def align_hidden_states(hidden_states: Any, Y_source: Any, *, dim: int = 32, seed: Any = 0,
                        **options: Any) -> np.ndarray:
    """RepCore's consensus embedding of the items.

    Parameters
    ----------
    hidden_states : sequence of array_like, each of shape (N, d_m)
        One array per source model; widths may differ.
    Y_source : array_like of {0, 1}, shape (M, N)
        Source models' correctness (the supervision of the alignment).
    dim : int
        Embedding width (paper: 32).
    seed : int or Generator
    **options
        Further :class:`RepCoreAligner` parameters (``width``, ``hidden``,
        ``epochs``, ``batch_size``, ``lr``, ``weight_decay``, ``patience``,
        ``split``, ``time_limit``, ``verbose``).

    Returns
    -------
    ndarray, shape (N, dim)
        Unit-norm rows; the same for the same seed.
    """
    known = ("width", "hidden", "epochs", "batch_size", "lr", "weight_decay", "patience", "split", "time_limit",
             "verbose")
    extra = sorted(set(options) - set(known))
    if extra:
        raise InvalidInputError(f"{extra[0]}: unknown option of align_hidden_states; options: dim, seed, "
                                f"{', '.join(known)}")
    return RepCoreAligner(dim, seed=seed, **options).fit_transform(hidden_states, Y_source)

"""Training attention's projections in plain numpy: toy tasks, a loss, two optimizers, a loop.

Everything is seeded: the same ``seed`` gives the same tasks, the same
start and the same trajectory, step for step.

* Tasks (:func:`previous_token_task`, :func:`two_relation_task`) are
  batches of short sequences whose right attention pattern is known. A
  batch is stacked into one matrix of rows, and a block-diagonal mask keeps
  every sequence to itself, so one call of :func:`attnlib.core.attention`
  handles the whole batch.
* :class:`AttentionModel` is one self-attention layer, single-head (three
  rectangular matrices) or multi-head (four square matrices, as
  :func:`attnlib.core.multi_head_attention`); its gradients come from
  :mod:`attnlib.backward`.
* :func:`mse_loss` is the loss and its gradient; :class:`GradientDescent`
  and :class:`Adam` are written out; :func:`train` records the loss, the
  gradient norms and the softmax saturation at every step, and the weights
  and attention maps at chosen steps.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

import numpy as np

from ._memory import check_size
from ._validate import (
    SQRT_D_K,
    as_array,
    as_int,
    as_int_sequence,
    as_matrix,
    as_positive_int,
    as_positive_real,
    as_real,
    as_rng,
    as_scale,
    finite_result,
    quiet,
)
from .backward import attention_backward_from, multi_head_backward_from, projection_gradients
from .core import AttentionResult, MultiHeadResult, multi_head_parts, self_attention
from .positional import sinusoidal_encoding

__all__ = [
    "Adam",
    "AttentionModel",
    "GradientDescent",
    "Snapshot",
    "Task",
    "TrainingRun",
    "head_roles",
    "init_params",
    "mse_loss",
    "previous_token_task",
    "relation_mass",
    "saturation",
    "train",
    "two_relation_task",
]

Params = dict[str, np.ndarray]


@dataclass(frozen=True)
class Task:
    """A batch of sequences stacked as rows, with what each row should output.

    Attributes
    ----------
    X:
        ``(n_sequences * length, d_model)`` token rows, sequence after sequence.
    target:
        ``(rows, d_out)`` what the attention output should be.
    loss_weight:
        ``(rows, d_out)`` 1 where the target counts, 0 where it does not (the
        first token has no previous token).
    mask:
        Block-diagonal boolean ``(rows, rows)``: a token attends only inside
        its own sequence.
    relations:
        For each relation name, the row index of the key each query row
        should attend to (``-1`` where the relation has no answer).
    length:
        Tokens per sequence.
    features:
        A name for each column of ``X``.
    """

    X: np.ndarray
    target: np.ndarray
    loss_weight: np.ndarray
    mask: np.ndarray
    relations: dict[str, np.ndarray]
    length: int
    features: tuple[str, ...]

    @property
    def n_sequences(self) -> int:
        """How many sequences are stacked."""
        return self.X.shape[0] // self.length


@lru_cache(maxsize=32)
def _identity(n: int) -> np.ndarray:
    # cached and read-only: the tasks draw one-hot codes at every training step
    eye = np.eye(n)
    eye.setflags(write=False)
    return eye


def _one_hot(symbols: np.ndarray, n_symbols: int) -> np.ndarray:
    return _identity(n_symbols)[symbols]  # fancy indexing copies, so the cached identity stays untouched


def _read_only(arr: np.ndarray) -> np.ndarray:
    arr.setflags(write=False)
    return arr


@lru_cache(maxsize=32)
def _block_mask(n_sequences: int, length: int) -> np.ndarray:
    # cached (tasks are drawn at every training step) and read-only, since every task shares it
    return _read_only(np.kron(np.eye(n_sequences, dtype=bool), np.ones((length, length), dtype=bool)))


@lru_cache(maxsize=32)
def _positions(n_sequences: int, length: int, d_pos: int) -> np.ndarray:
    return _read_only(np.tile(sinusoidal_encoding(length, d_pos), (n_sequences, 1)))


@lru_cache(maxsize=32)
def _previous_rows(n_sequences: int, length: int) -> np.ndarray:
    rows = np.arange(n_sequences * length)
    return _read_only(np.where(rows % length == 0, -1, rows - 1))


def _check_task_sizes(n_sequences: Any, length: Any, n_symbols: Any, d_pos: Any) -> tuple[int, int, int, int]:
    n_sequences = as_positive_int("n_sequences", n_sequences)
    length = as_int("length", length, minimum=2, what="an integer >= 2")
    n_symbols = as_int("n_symbols", n_symbols, minimum=2, what="an integer >= 2")
    d_pos = as_int("d_pos", d_pos, minimum=2, what="an even integer >= 2")
    if d_pos % 2:
        raise ValueError(f"d_pos must be an even integer >= 2; got {d_pos}")
    rows = n_sequences * length
    # the task's largest arrays: the (rows x rows) boolean mask and X, target and weight (rows x width floats)
    width = 3 * length + n_symbols + d_pos
    need = rows * rows + 24 * rows * width + 8 * max(n_symbols, length) ** 2  # + the identity matrix of the one-hot codes
    check_size(f"a task of n_sequences={n_sequences}, length={length} and n_symbols={n_symbols}: its mask and rows", need, 1)
    return n_sequences, length, n_symbols, d_pos


def _pos_names(d_pos: int) -> list[str]:
    return [f"{f}{i}" for i in range(d_pos // 2) for f in ("sin", "cos")]


def previous_token_task(
    n_sequences: int, length: int = 6, n_symbols: int = 4, d_pos: int = 4, seed: int | np.random.Generator = 0
) -> Task:
    """Each token must output the symbol of the token just before it.

    A token is ``[one-hot symbol, sinusoidal position]``; symbols are drawn
    at random, so only the positions tell a query where to look. The right
    attention pattern puts all weight on the previous row; the first token
    of each sequence has no target.

    Raises
    ------
    ValueError
        ``n_sequences``, ``length``, ``n_symbols`` or ``d_pos`` is not a positive integer; ``seed`` is not a seed by the
        seed rule (a non-negative integer or a ``numpy.random.Generator``). The message names the argument.

    Examples
    --------
    >>> t = previous_token_task(2, length=3, n_symbols=2, d_pos=2, seed=1)
    >>> t.X.shape, t.target.shape, t.mask.shape
    ((6, 4), (6, 2), (6, 6))
    >>> t.relations["previous"].tolist()
    [-1, 0, 1, -1, 3, 4]
    """
    n_sequences, length, n_symbols, d_pos = _check_task_sizes(n_sequences, length, n_symbols, d_pos)
    rng = as_rng("seed", seed)
    symbols = rng.integers(0, n_symbols, size=(n_sequences, length)).ravel()
    X = np.hstack([_one_hot(symbols, n_symbols), _positions(n_sequences, length, d_pos)])
    prev = _previous_rows(n_sequences, length)
    target = np.where(prev[:, None] >= 0, _one_hot(symbols[prev], n_symbols), 0.0)
    weight = np.repeat((prev >= 0)[:, None], n_symbols, axis=1).astype(float)
    features = tuple(f"s{i}" for i in range(n_symbols)) + tuple(_pos_names(d_pos))
    return Task(X, target, weight, _block_mask(n_sequences, length), {"previous": prev}, length, features)


def two_relation_task(
    n_sequences: int, length: int = 6, n_symbols: int = 3, d_pos: int = 4, seed: int | np.random.Generator = 0
) -> Task:
    """Two relations at once: fetch the previous token's payload and the payload of the matching token.

    Every token carries a name (distinct within its sequence), a request
    (the name of a token of the sequence, drawn uniformly from every
    position except the previous one, so a token may request itself; the
    first token may request any position), a payload symbol and its
    position: ``[one-hot name, one-hot request, one-hot payload, position]``.
    The target is ``[payload of the previous token, payload of the token
    whose name equals my request]``, padded with zero columns to the width
    of ``X`` (so that a multi-head layer, whose output is as wide as its
    input, can be trained on it). The requested token is never the previous
    one, so the two relations point at different keys. Finding the previous
    token needs the positions; finding the match needs the names and
    requests; both fetch the payloads: the keys and the values of one layer
    have to use different features.

    Raises
    ------
    ValueError
        ``n_sequences``, ``length``, ``n_symbols`` or ``d_pos`` is not a positive integer; ``seed`` is not a seed by the
        seed rule (a non-negative integer or a ``numpy.random.Generator``). The message names the argument.

    Examples
    --------
    >>> t = two_relation_task(1, length=4, n_symbols=2, d_pos=2, seed=0)
    >>> t.X.shape, t.target.shape
    ((4, 12), (4, 12))
    >>> sorted(t.relations)
    ['matching', 'previous']
    """
    n_sequences, length, n_symbols, d_pos = _check_task_sizes(n_sequences, length, n_symbols, d_pos)
    if length < 3:
        raise ValueError(f"length must be at least 3 for two_relation_task (a request that is neither me-1 nor unique); got {length}")
    rng = as_rng("seed", seed)
    names = rng.permuted(np.tile(np.arange(length), (n_sequences, 1)), axis=1).ravel()
    payload = rng.integers(0, n_symbols, size=n_sequences * length)
    prev = _previous_rows(n_sequences, length)
    rows = np.arange(n_sequences * length)
    start, pos = rows - rows % length, rows % length
    # a random position of the sequence other than the previous one (any position for the first token)
    pick = rng.integers(0, length - (pos > 0))
    skip = (pos > 0) & (pick >= pos - 1)
    match = start + pick + skip
    request = names[match]
    pe = _positions(n_sequences, length, d_pos)
    X = np.hstack([_one_hot(names, length), _one_hot(request, length), _one_hot(payload, n_symbols), pe])
    target = np.zeros_like(X)
    weight = np.zeros_like(X)
    has_prev = prev >= 0
    target[has_prev, :n_symbols] = _one_hot(payload[prev[has_prev]], n_symbols)
    weight[has_prev, :n_symbols] = 1.0
    target[:, n_symbols : 2 * n_symbols] = _one_hot(payload[match], n_symbols)
    weight[:, n_symbols : 2 * n_symbols] = 1.0
    weight[:, 2 * n_symbols :] = 1.0  # the padding columns should stay 0
    features = (
        tuple(f"n{i}" for i in range(length))
        + tuple(f"r{i}" for i in range(length))
        + tuple(f"p{i}" for i in range(n_symbols))
        + tuple(_pos_names(d_pos))
    )
    relations = {"previous": prev, "matching": _read_only(match)}
    return Task(X, target, weight, _block_mask(n_sequences, length), relations, length, features)


def mse_loss(output: Any, target: Any, weight: Any = None) -> tuple[float, np.ndarray]:
    """Weighted mean squared error and its gradient with respect to ``output``.

    ``L = sum(w * (O - T)**2) / sum(w)`` and ``dL/dO = 2 w (O - T) / sum(w)``.

    Raises
    ------
    ValueError
        ``output`` or ``target`` is not finite real numbers of the expected shape; ``weight`` is neither ``None`` nor
        real, finite numbers of the expected shape; or a result would overflow float64 (the error names the inputs it
        came from). The message names the argument.

    Examples
    --------
    >>> loss, grad = mse_loss([[1.0, 0.0]], [[0.0, 0.0]])
    >>> loss, grad.tolist()
    (0.5, [[1.0, 0.0]])
    """
    o = as_matrix("output", output)
    t = as_matrix("target", target)
    if t.shape != o.shape:
        raise ValueError(f"target has shape {t.shape} but output has shape {o.shape}")
    w = np.ones_like(o) if weight is None else as_matrix("weight", weight)
    if w.shape != o.shape:
        raise ValueError(f"weight has shape {w.shape} but output has shape {o.shape}")
    with quiet():
        if (w < 0).any() or w.sum() <= 0:
            raise ValueError("weight must be non-negative with a positive sum")
        total = float(finite_result(w.sum(), "the sum of weight", "weight"))
        diff = finite_result(o - t, "the difference output - target", "output and target")
        loss = finite_result(np.sum(w * diff**2) / total, "the loss sum(w (O - T)^2) / sum(w)", "output, target and weight")
        grad = finite_result(2.0 * w * diff / total, "the gradient 2 w (O - T) / sum(w)", "output, target and weight")
    return float(loss), grad


@dataclass(frozen=True)
class AttentionModel:
    """One self-attention layer trained on a :class:`Task`.

    ``n_heads=None`` is a single head with matrices ``W_Q``, ``W_K``
    (``d_model x d_k``) and ``W_V`` (``d_model x d_out``) and no output
    matrix, whose scores are divided as ``scale`` says (:data:`attnlib.SQRT_D_K <attnlib.core.SQRT_D_K>`,
    :data:`attnlib.NO_SCALING <attnlib.core.NO_SCALING>` or a positive number; ``True`` and ``False``
    are the old spellings, kept as aliases for one release); an integer is
    :func:`attnlib.core.multi_head_attention` with four square matrices (it
    always scales by ``sqrt(d_head)``).
    """

    n_heads: int | None = None
    scale: Any = SQRT_D_K

    def __post_init__(self) -> None:
        if self.n_heads is not None:
            object.__setattr__(self, "n_heads", as_positive_int("n_heads", self.n_heads))
        # kept in the one vocabulary: SQRT_D_K, NO_SCALING or a positive number (True and False are old spellings)
        object.__setattr__(self, "scale", as_scale("scale", self.scale))

    def _params(self, params: Any, task: Any) -> Params:
        if not isinstance(task, Task):
            raise ValueError(f"task must be a Task; got {type(task).__name__}")
        names = ("W_Q", "W_K", "W_V") if self.n_heads is None else ("W_Q", "W_K", "W_V", "W_O")
        if not isinstance(params, dict) or any(n not in params for n in names):
            got = sorted(params) if isinstance(params, dict) else type(params).__name__
            raise ValueError(f"params must be a dict with the matrices {list(names)}; got {got}")
        return {n: as_matrix(f"params[{n!r}]", params[n]) for n in names}

    def _forward(self, params: Params, task: Task) -> AttentionResult | MultiHeadResult:
        params = self._params(params, task)
        try:
            return self._attend(params, task)
        except ValueError as exc:  # core names its own arguments (X, W_Q, ...): say where they came from
            raise ValueError(f"params and task (X = task.X, W_Q = params['W_Q'], ...): {exc}") from None

    def _attend(self, params: Params, task: Task) -> AttentionResult | MultiHeadResult:
        if self.n_heads is None:
            return self_attention(task.X, params["W_Q"], params["W_K"], params["W_V"], mask=task.mask, scale=self.scale)
        return multi_head_parts(task.X, task.X, params["W_Q"], params["W_K"], params["W_V"], params["W_O"], self.n_heads, mask=task.mask)

    @staticmethod
    def _weights(result: AttentionResult | MultiHeadResult) -> np.ndarray:
        if isinstance(result, MultiHeadResult):
            return np.stack([h.weights for h in result.heads])
        return result.weights

    def forward(self, params: Params, task: Task) -> tuple[np.ndarray, np.ndarray]:
        """Output rows and attention weights (``(n_heads, rows, rows)`` for multi-head).

        Raises
        ------
        ValueError
            ``params`` is not a dict of the expected matrices (a missing, unknown or wrongly shaped entry is refused
            naming it); ``task`` is not the object it names (made by attnlib); or a result would overflow float64 (the
            error names the inputs it came from). The message names the argument.
        """
        result = self._forward(params, task)
        return result.output, self._weights(result)

    def loss_and_gradients(self, params: Params, task: Task) -> tuple[float, Params, np.ndarray]:
        """The loss, its gradient for every matrix (keys ``dW_Q`` and so on), and the attention weights.

        The forward pass runs once; :mod:`attnlib.backward` takes it from there.

        Raises
        ------
        ValueError
            ``params`` is not a dict of the expected matrices (a missing, unknown or wrongly shaped entry is refused
            naming it); ``task`` is not the object it names (made by attnlib); or a result would overflow float64 (the
            error names the inputs it came from). The message names the argument.
        """
        result = self._forward(params, task)
        loss, d_out = mse_loss(result.output, task.target, task.loss_weight)
        if isinstance(result, MultiHeadResult):
            grads = multi_head_backward_from(result, task.X, task.X, d_out)
        else:
            grads = projection_gradients(task.X, task.X, attention_backward_from(result, d_out))
        return loss, dict(grads._asdict()), self._weights(result)


def init_params(shapes: dict[str, tuple[int, int]], std: float, seed: int | np.random.Generator) -> Params:
    """Random normal matrices, ``N(0, std**2)`` entries, in the order of ``shapes``.

    Raises
    ------
    ValueError
        ``shapes`` is not a dict of names to ``(rows, columns)`` of positive integers; ``std`` is not a finite real
        number in its range; ``seed`` is not a seed by the seed rule (a non-negative integer or a
        ``numpy.random.Generator``); or a result would overflow float64 (the error names the inputs it came from). The
        message names the argument.

    Examples
    --------
    >>> p = init_params({"W_Q": (2, 3)}, 0.1, seed=0)
    >>> p["W_Q"].shape
    (2, 3)
    """
    std = as_positive_real("std", std)
    if not isinstance(shapes, dict):
        raise ValueError(f"shapes must be a dict of name: (rows, columns); got {type(shapes).__name__}")
    sizes = {}
    for name, shape in shapes.items():
        if not isinstance(shape, (tuple, list)) or len(shape) != 2:
            raise ValueError(f"shapes[{name!r}] must be (rows, columns); got {shape!r}")
        sizes[name] = tuple(as_positive_int(f"shapes[{name!r}]", k) for k in shape)
        check_size(f"init_params: shapes[{name!r}] = {sizes[name]}", sizes[name][0] * sizes[name][1])
    rng = as_rng("seed", seed)
    with quiet():
        return {name: finite_result(std * rng.normal(size=shape), f"std * N(0, 1) for {name}", "std") for name, shape in sizes.items()}


def _grad_key(name: str) -> str:
    return "d" + name


def _check_step(params: Any, grads: Any) -> tuple[Params, Params]:
    """The parameters and their gradients (keys ``dW_Q`` for ``W_Q``), checked as arrays of the same shapes."""
    if not isinstance(params, dict) or not isinstance(grads, dict):
        raise ValueError(f"params and grads must be dicts of matrices; got {type(params).__name__} and {type(grads).__name__}")
    p, g = {}, {}
    for name, w in params.items():
        p[name] = as_array(f"params[{name!r}]", w, (1, 2))
        key = _grad_key(name)
        if key not in grads:
            raise ValueError(f"grads has no {key!r} for params[{name!r}]; got the keys {sorted(grads)}")
        g[name] = as_array(f"grads[{key!r}]", grads[key], (1, 2))
        if g[name].shape != p[name].shape:
            raise ValueError(f"grads[{key!r}] has shape {g[name].shape} but params[{name!r}] has shape {p[name].shape}")
    return p, g


@dataclass
class GradientDescent:
    """Plain gradient descent: ``W <- W - lr * f_W * dW``; ``lr`` is a finite positive number.

    ``lr_factors`` gives some matrices their own multiple ``f_W`` of the
    learning rate (1 for every matrix it does not name), which is how
    :func:`attnlib.experiments.scaling_runs` reproduces an unscaled run with a
    scaled model.

    Examples
    --------
    >>> opt = GradientDescent(lr=0.5, lr_factors={"W_Q": 8.0})
    >>> p = opt.step({"W_Q": np.ones((1, 1)), "W_V": np.ones((1, 1))}, {"dW_Q": np.ones((1, 1)), "dW_V": np.ones((1, 1))})
    >>> float(p["W_Q"][0, 0]), float(p["W_V"][0, 0])
    (-3.0, 0.5)
    """

    lr: float = 0.1
    lr_factors: dict[str, float] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.lr = as_positive_real("lr", self.lr)
        if not isinstance(self.lr_factors, dict):
            raise ValueError(f"lr_factors must be a dict from matrix names to positive numbers; got {type(self.lr_factors).__name__}")
        factors = {}
        for name, f in self.lr_factors.items():
            f = as_real(f"lr_factors[{name!r}]", f)
            if not (np.isfinite(f) and f > 0):
                raise ValueError(f"lr_factors[{name!r}] must be a positive finite number; got {f}")
            factors[name] = f
        self.lr_factors = factors

    def step(self, params: Params, grads: Params) -> Params:
        """New parameters (the old ones are not modified).

        Raises
        ------
        ValueError
            ``params`` or ``grads`` is not a dict of the expected matrices (a missing, unknown or wrongly shaped entry
            is refused naming it); or a result would overflow float64 (the error names the inputs it came from). The
            message names the argument.
        """
        lr = as_positive_real("lr", self.lr)
        p, g = _check_step(params, grads)
        with quiet():
            return {
                n: finite_result(w - lr * self.lr_factors.get(n, 1.0) * g[n], f"the update of {n}", f"params[{n!r}], its gradient and lr")
                for n, w in p.items()
            }


@dataclass
class Adam:
    """Adam (Kingma and Ba, 2015), written out.

    ``m <- b1 m + (1 - b1) g``, ``v <- b2 v + (1 - b2) g**2``, and
    ``W <- W - lr * m_hat / (sqrt(v_hat) + eps)`` with the bias corrections
    ``m_hat = m / (1 - b1**t)``, ``v_hat = v / (1 - b2**t)``.

    Examples
    --------
    >>> opt = Adam(lr=0.1)
    >>> p = opt.step({"W": np.array([[1.0]])}, {"dW": np.array([[5.0]])})
    >>> p["W"].round(6).tolist()  # the first step moves every entry by lr
    [[0.9]]
    """

    lr: float = 0.01
    beta1: float = 0.9
    beta2: float = 0.999
    eps: float = 1e-8
    t: int = 0
    m: Params = field(default_factory=dict)
    v: Params = field(default_factory=dict)

    def __post_init__(self) -> None:
        self._check()

    def _check(self) -> None:
        # beta = 1 would divide by 1 - beta**t = 0, eps = 0 by sqrt(v_hat) = 0 for a zero gradient
        self.lr = as_positive_real("lr", self.lr)
        self.beta1 = as_positive_real("beta1", self.beta1, below=1.0, allow_zero=True)
        self.beta2 = as_positive_real("beta2", self.beta2, below=1.0, allow_zero=True)
        self.eps = as_positive_real("eps", self.eps)
        self.t = as_int("t", self.t, minimum=0, what="a step count >= 0")
        for name in ("m", "v"):
            if not isinstance(getattr(self, name), dict):
                got = type(getattr(self, name)).__name__
                raise ValueError(f"{name} must be a dict of moment estimates (empty at the start); got {got}")

    def step(self, params: Params, grads: Params) -> Params:
        """New parameters; the moment estimates are updated in place (only when every update is finite).

        Raises
        ------
        ValueError
            ``params`` or ``grads`` is not a dict of the expected matrices (a missing, unknown or wrongly shaped entry
            is refused naming it); or a result would overflow float64 (the error names the inputs it came from). The
            message names the argument.
        """
        self._check()
        p, g = _check_step(params, grads)
        t = self.t + 1
        new, m, v = {}, {}, {}
        with quiet():
            for n, w in p.items():
                inputs = f"params[{n!r}], its gradient and the optimizer's settings"
                m[n] = finite_result(self.beta1 * self.m.get(n, np.zeros_like(w)) + (1 - self.beta1) * g[n], f"Adam's m for {n}", inputs)
                second = self.beta2 * self.v.get(n, np.zeros_like(w)) + (1 - self.beta2) * g[n] ** 2
                v[n] = finite_result(second, f"Adam's v for {n}", inputs)
                m_hat = m[n] / (1 - self.beta1**t)
                v_hat = v[n] / (1 - self.beta2**t)
                new[n] = finite_result(w - self.lr * m_hat / (np.sqrt(v_hat) + self.eps), f"the update of {n}", inputs)
        self.t = t
        self.m.update(m)
        self.v.update(v)
        return new


def saturation(weights: Any) -> float:
    """Mean over query rows of the largest attention weight (1 = one-hot, fully saturated).

    Raises
    ------
    ValueError
        ``weights`` is not finite real numbers of the expected shape; or a result would overflow float64 (the error
        names the inputs it came from). The message names the argument.

    Examples
    --------
    >>> saturation([[0.5, 0.5], [1.0, 0.0]])
    0.75
    """
    w = _attention_weights("weights", weights)
    return float(w.max(axis=-1).mean())


def _attention_weights(name: str, weights: Any) -> np.ndarray:
    """Attention weights ``(rows, keys)`` or ``(heads, rows, keys)``: finite, in [0, 1]."""
    w = as_array(name, weights, (2, 3))
    if (w < 0).any() or (w > 1).any():
        raise ValueError(f"{name} must be attention weights (entries between 0 and 1); got values from {w.min():g} to {w.max():g}")
    return w


@dataclass(frozen=True)
class Snapshot:
    """The state of a run at one recorded step (before that step's update)."""

    step: int
    loss: float
    params: Params
    weights: np.ndarray


@dataclass(frozen=True)
class TrainingRun:
    """What :func:`train` recorded.

    Attributes
    ----------
    losses:
        Loss on each step's training batch, before the update (length ``n_steps``),
        then the final loss on the probe batch as ``final_loss``.
    grad_norms:
        For each matrix, the Frobenius norm of its gradient at every step.
    saturations:
        :func:`saturation` of each step's attention weights.
    snapshots:
        Parameters and the probe batch's attention weights at the recorded steps.
    final_loss:
        Loss on the probe batch after the last update; ``inf`` when the run
        diverged.
    diverged:
        True when :func:`train` stopped early because a training loss passed
        its ``stop_above`` (the arrays then end at that step).
    """

    losses: np.ndarray
    grad_norms: dict[str, np.ndarray]
    saturations: np.ndarray
    snapshots: tuple[Snapshot, ...]
    final_loss: float
    final_params: Params
    diverged: bool = False


def train(
    model: AttentionModel,
    params: Params,
    optimizer: GradientDescent | Adam,
    make_batch: Any,
    n_steps: int,
    probe: Task,
    record_steps: Sequence[int] = (),
    seed: int = 0,
    stop_above: float | None = None,
) -> TrainingRun:
    """Train ``params`` for ``n_steps`` steps on fresh seeded batches.

    Parameters
    ----------
    model, params, optimizer:
        What to train, from where, and how.
    make_batch:
        ``make_batch(rng) -> Task``: a fresh batch from the run's generator.
    n_steps:
        Number of updates.
    probe:
        A fixed batch on which the recorded attention maps and the final loss
        are computed.
    record_steps:
        Steps (``0 .. n_steps``) at which to keep a :class:`Snapshot`;
        ``n_steps`` means after the last update.
    seed:
        Seeds the batches; with the same seed, params and optimizer settings
        the run is identical.
    stop_above:
        If given, a training loss above it (or not finite) ends the run at
        that step: the run counts as diverged, its ``final_loss`` is ``inf``
        and its arrays stop there. Learning-rate sweeps use it, so that a
        step size that is too large ends in a verdict rather than an overflow.

    Raises
    ------
    ValueError
        ``model``, ``optimizer`` or ``probe`` is not the object it names (made by attnlib); ``params`` is not a dict of
        the expected matrices (a missing, unknown or wrongly shaped entry is refused naming it); ``make_batch`` is not a
        function; ``n_steps`` is not a positive integer; ``record_steps`` is not a list of integers in their range;
        ``seed`` is not a seed by the seed rule (a non-negative integer or a ``numpy.random.Generator``); ``stop_above``
        is neither ``None`` nor a finite real number in its range; or a result would overflow float64 (the error names
        the inputs it came from). The message names the argument.

    Examples
    --------
    >>> probe = previous_token_task(2, seed=99)
    >>> p = init_params({"W_Q": (8, 4), "W_K": (8, 4), "W_V": (8, 4)}, 0.5, seed=0)
    >>> run = train(AttentionModel(), p, Adam(lr=0.05), lambda r: previous_token_task(4, seed=r), 50, probe)
    >>> bool(run.final_loss < run.losses[0])
    True
    >>> big = train(AttentionModel(), p, GradientDescent(lr=1e3), lambda r: previous_token_task(4, seed=r), 50, probe, stop_above=10)
    >>> big.diverged, big.final_loss, len(big.losses) < 50
    (True, inf, True)
    """
    n_steps = as_positive_int("n_steps", n_steps)
    if stop_above is not None:
        stop_above = as_positive_real("stop_above", stop_above)
    record = sorted(set(as_int_sequence("record_steps", record_steps, minimum=0, allow_empty=True)))
    if record and record[-1] > n_steps:
        raise ValueError(f"record_steps must lie between 0 and n_steps={n_steps}; got {record[-1]}")
    if not isinstance(model, AttentionModel):
        raise ValueError(f"model must be an AttentionModel; got {type(model).__name__}")
    if not isinstance(optimizer, (GradientDescent, Adam)):
        raise ValueError(f"optimizer must be GradientDescent or Adam; got {type(optimizer).__name__}")
    if not callable(make_batch):
        raise ValueError(f"make_batch must be a function rng -> Task; got {type(make_batch).__name__}")
    if not isinstance(probe, Task):
        raise ValueError(f"probe must be a Task; got {type(probe).__name__}")
    if not isinstance(params, dict):
        raise ValueError(f"params must be a dict of matrices; got {type(params).__name__}")
    check_size(f"train(n_steps={n_steps}): the record of every step", n_steps * (2 + len(params)))
    params = {n: as_matrix(f"params[{n!r}]", w) for n, w in params.items()}
    rng = as_rng("seed", seed)
    losses = np.empty(n_steps)
    sats = np.empty(n_steps)
    norms = {n: np.empty(n_steps) for n in params}
    snaps = []

    def snapshot(step: int, p: Params) -> Snapshot:
        loss, _, w = model.loss_and_gradients(p, probe)
        return Snapshot(step, loss, {n: m.copy() for n, m in p.items()}, w)

    for step in range(n_steps):
        if step in record:
            snaps.append(snapshot(step, params))
        batch = make_batch(rng)
        loss, grads, weights = model.loss_and_gradients(params, batch)
        losses[step] = loss
        sats[step] = saturation(weights)
        for n in params:
            norms[n][step] = float(np.linalg.norm(grads[_grad_key(n)]))
        if stop_above is not None and not loss <= stop_above:
            end = step + 1
            cut = {n: v[:end] for n, v in norms.items()}
            return TrainingRun(losses[:end], cut, sats[:end], tuple(snaps), float("inf"), params, diverged=True)
        params = optimizer.step(params, grads)
    final = snapshot(n_steps, params)
    if n_steps in record:
        snaps.append(final)
    return TrainingRun(losses, norms, sats, tuple(snaps), final.loss, params)


def relation_mass(weights: Any, task: Task, relation: str) -> np.ndarray:
    """Mean attention weight each head puts on the key ``relation`` asks for.

    Averaged over the query rows where the relation has an answer. Returns
    one number per head (a length-1 array for a single head).

    Raises
    ------
    ValueError
        ``weights`` is not finite real numbers of the expected shape; ``task`` is not the object it names (made by
        attnlib); ``relation`` is not one of the values it may take; or a result would overflow float64 (the error names
        the inputs it came from). The message names the argument.

    Examples
    --------
    >>> t = previous_token_task(1, length=3, n_symbols=2, d_pos=2)
    >>> w = np.array([[1, 0, 0], [1, 0, 0], [0, 1, 0]], dtype=float)
    >>> relation_mass(w, t, "previous").tolist()
    [1.0]
    """
    if not isinstance(task, Task):
        raise ValueError(f"task must be a Task; got {type(task).__name__}")
    if not isinstance(relation, str) or relation not in task.relations:
        raise ValueError(f"relation must be one of {sorted(task.relations)}; got {relation!r}")
    w = _attention_weights("weights", weights)
    w = w[None] if w.ndim == 2 else w
    rows_n = task.X.shape[0]
    if w.shape[1:] != (rows_n, rows_n):
        want = f"({rows_n}, {rows_n}) or (heads, {rows_n}, {rows_n})"
        raise ValueError(f"weights has shape {w.shape} but task has {rows_n} rows: give {want}")
    rows = np.flatnonzero(task.relations[relation] >= 0)
    keys = task.relations[relation][rows]
    return w[:, rows, keys].mean(axis=1)


def head_roles(weights: Any, task: Task, threshold: float = 0.5) -> list[str | None]:
    """For each head, the relation that gets more than ``threshold`` of its weight on average, or None.

    Raises
    ------
    ValueError
        ``weights`` is not finite real numbers of the expected shape; ``task`` is not the object it names (made by
        attnlib); ``threshold`` is not a finite real number in its range; or a result would overflow float64 (the error
        names the inputs it came from). The message names the argument.

    Examples
    --------
    >>> t = previous_token_task(1, length=3, n_symbols=2, d_pos=2)
    >>> head_roles(np.array([[1, 0, 0], [1, 0, 0], [0, 1, 0]], dtype=float), t)
    ['previous']
    """
    threshold = as_positive_real("threshold", threshold)
    if not isinstance(task, Task):
        raise ValueError(f"task must be a Task; got {type(task).__name__}")
    if not 0.5 <= threshold < 1:
        raise ValueError(f"threshold must be in [0.5, 1) so that a head takes at most one relation; got {threshold}")
    masses = {name: relation_mass(weights, task, name) for name in task.relations}
    n_heads = next(iter(masses.values())).size
    roles: list[str | None] = []
    for h in range(n_heads):
        best = max(masses, key=lambda name: masses[name][h])
        roles.append(best if masses[best][h] > threshold else None)
    return roles

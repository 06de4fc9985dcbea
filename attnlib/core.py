"""Scaled dot-product attention and its pieces, in plain numpy (float64).

Conventions used everywhere in the book:

* tokens are **rows**: ``X`` has shape ``(n, d_model)``, queries ``Q`` are
  ``(n_q, d_k)``, keys ``K`` are ``(n_k, d_k)``, values ``V`` are ``(n_k, d_v)``;
* a boolean mask has shape ``(n_q, n_k)`` and ``True`` means *may attend*
  (the convention of PyTorch's ``scaled_dot_product_attention``);
* the additive mask ``M`` of the source post holds 0 where attending is
  allowed and ``-inf`` where it is forbidden;
* every function that takes a mask takes the same forms (one grammar,
  ``attnlib._validate.as_mask``): ``None``, :data:`CAUSAL`, a function
  ``allowed(i, j)``, a boolean or an additive matrix;
* every function that takes a scale takes the same words (one vocabulary,
  ``attnlib._validate.as_scale``): :data:`SQRT_D_K` (the default, divide
  by ``sqrt(d_k)``), :data:`NO_SCALING` or a positive number to divide by.
  ``True``/``False`` and the mask text ``"causal"`` are old spellings, kept
  as aliases for one release.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from . import _validate
from ._memory import check_size
from ._validate import (
    as_array,
    as_flag,
    as_mask,
    as_matrix,
    as_positive_int,
    as_scale,
    divisor_of,
    finite_result,
    quiet,
    to_ndarray,
)

__all__ = [
    "CAUSAL",
    "NO_SCALING",
    "SQRT_D_K",
    "TOKENS",
    "AttentionResult",
    "MultiHeadResult",
    "additive_mask",
    "additive_scores",
    "attention",
    "attention_parameter_count",
    "causal_mask",
    "cross_attention",
    "head_width",
    "multi_head_attention",
    "multi_head_parts",
    "project",
    "running_example",
    "scale_divisor",
    "scaled_scores",
    "self_attention",
    "softmax",
]

#: ``scale=SQRT_D_K``: divide the scores by ``sqrt(d_k)``, the default of every function and explorer with a scale.
SQRT_D_K = _validate.SQRT_D_K
#: ``scale=NO_SCALING``: do not divide the scores (``False`` is its old spelling, an alias for one release).
NO_SCALING = _validate.NO_SCALING
#: ``mask=CAUSAL``: query ``i`` may attend to key ``j`` when ``j <= i``. It is a mask function too,
#: ``CAUSAL(i, j) = j <= i``; the tiled functions skip the tiles it forbids. ``"causal"`` is its old
#: spelling, an alias for one release.
CAUSAL = _validate.CAUSAL

#: Labels of the three tokens of the running example.
TOKENS: tuple[str, str, str] = ("x1", "x2", "x3")


def running_example() -> np.ndarray:
    """The running example: three tokens in a 2-d "noun / verb" space.

    Returns a fresh ``(3, 2)`` float64 copy on every call, so changing it
    never changes the book's example.

    Examples
    --------
    >>> running_example()
    array([[1. , 0. ],
           [0. , 1. ],
           [0.5, 0.5]])
    """
    return np.array([[1.0, 0.0], [0.0, 1.0], [0.5, 0.5]])


def softmax(x: Any, axis: int = -1) -> np.ndarray:
    """Numerically stable softmax along ``axis``.

    The maximum of each slice is subtracted before exponentiating, so logits
    of size 1e6 give no overflow. Entries equal to ``-inf`` get a weight of
    exactly 0. A slice whose entries are all ``-inf`` has no defined softmax
    and raises :class:`ValueError`; so do NaN and ``+inf``.

    Raises
    ------
    ValueError
        ``x`` is not real numbers (``-inf`` allowed) of 1 to 4 dimensions; ``axis`` is not an axis of ``x``; or a slice
        along ``axis`` is entirely ``-inf`` (no entry may receive weight). The message names the argument.

    Examples
    --------
    >>> softmax([0.0, 0.0]).tolist()
    [0.5, 0.5]
    >>> softmax([1.0, -np.inf]).tolist()
    [1.0, 0.0]
    >>> softmax([[1e6, 0.0]]).round(4).tolist()
    [[1.0, 0.0]]
    """
    arr = as_array("x", x, (1, 2, 3, 4), allow_neg_inf=True)
    if isinstance(axis, (bool, np.bool_)) or not isinstance(axis, (int, np.integer)):
        raise ValueError(f"axis must be an integer; got {axis!r}")
    if not -arr.ndim <= axis < arr.ndim:
        raise ValueError(f"axis={axis} is out of range for x of shape {arr.shape}")
    top = np.max(arr, axis=axis, keepdims=True)
    if np.isneginf(top).any():
        where = np.argwhere(np.isneginf(np.squeeze(top, axis=axis)))
        first = tuple(int(i) for i in where[0])
        raise ValueError(
            f"softmax of x (shape {arr.shape}) along axis {axis}: the slice at index {first} is entirely -inf, "
            "so no entry may receive weight (a query row that may attend to no key?)"
        )
    with quiet():  # x - max may overflow to -inf (e.g. -1e308 - 1e308); exp(-inf) = 0 is then exact
        e = np.exp(arr - top)
        return e / e.sum(axis=axis, keepdims=True)


def scale_divisor(d_k: int, scale: Any = SQRT_D_K) -> float:
    """The number the scores are divided by.

    ``scale=SQRT_D_K`` (the default) gives ``sqrt(d_k)``, ``NO_SCALING`` gives 1,
    and a positive number is used as it is. ``True`` and ``False`` are the old
    spellings of ``SQRT_D_K`` and ``NO_SCALING`` (aliases for one release).

    Raises
    ------
    ValueError
        ``d_k`` is not a positive integer, or ``scale`` is none of the above (``None``, a string, 0, a negative or
        non-finite number).

    Examples
    --------
    >>> round(scale_divisor(2), 4)
    1.4142
    >>> scale_divisor(2, NO_SCALING), scale_divisor(2, 4)
    (1.0, 4.0)
    """
    d_k = as_positive_int("d_k", d_k)
    return divisor_of(as_scale("scale", scale), d_k)


def _check_qk(Q: Any, K: Any) -> tuple[np.ndarray, np.ndarray]:
    q = as_matrix("Q", Q)
    k = as_matrix("K", K)
    if q.shape[1] != k.shape[1]:
        raise ValueError(
            f"Q has d_k={q.shape[1]} but K has d_k={k.shape[1]} (Q is {q.shape}, K is {k.shape}); queries and keys must have the same width"
        )
    return q, k


def _scores(q: np.ndarray, k: np.ndarray, divisor: float, inputs: str) -> tuple[np.ndarray, np.ndarray]:
    """``Q K^T`` and ``Q K^T / divisor``, both checked for overflow (``inputs`` names the caller's arguments)."""
    with quiet():
        scores = finite_result(q @ k.T, "the scores Q K^T", inputs)
        scaled = finite_result(scores / divisor, f"the scores divided by the scale {divisor:g}", f"{inputs} (and the scale)")
    return scores, scaled


def scaled_scores(Q: Any, K: Any, scale: Any = SQRT_D_K) -> np.ndarray:
    """Scores ``Q K^T`` divided by the scale (``sqrt(d_k)`` by default).

    Raises
    ------
    ValueError
        ``Q`` or ``K`` is not finite real numbers of the expected shape; ``scale`` is not ``attnlib.SQRT_D_K``,
        ``attnlib.NO_SCALING`` or a positive number; or a result would overflow float64 (the error names the inputs it
        came from). The message names the argument.

    Examples
    --------
    >>> X = running_example()
    >>> scaled_scores(X, X, scale=NO_SCALING).tolist()
    [[1.0, 0.0, 0.5], [0.0, 1.0, 0.5], [0.5, 0.5, 0.5]]
    >>> scaled_scores(X, X).round(4)[0].tolist()
    [0.7071, 0.0, 0.3536]
    """
    q, k = _check_qk(Q, K)
    return _scores(q, k, scale_divisor(q.shape[1], scale), "Q and K")[1]


def causal_mask(n: int) -> np.ndarray:
    """Boolean ``(n, n)`` mask, ``True`` where query ``i`` may attend to key ``j <= i``.

    Raises
    ------
    ValueError
        ``n`` is not a positive integer. The message names the argument.

    Examples
    --------
    >>> causal_mask(3).astype(int).tolist()
    [[1, 0, 0], [1, 1, 0], [1, 1, 1]]
    """
    n = as_positive_int("n", n)
    check_size(f"causal_mask(n={n}), an n x n boolean matrix,", n * n, 1)
    return np.tril(np.ones((n, n), dtype=bool))


def additive_mask(allowed: Any) -> np.ndarray:
    """The additive mask ``M``: 0 where attending is allowed, ``-inf`` where not.

    Raises
    ------
    ValueError
        ``allowed`` is not a boolean matrix. The message names the argument.

    Examples
    --------
    >>> additive_mask(causal_mask(2)).tolist()
    [[0.0, -inf], [0.0, 0.0]]
    """
    arr = to_ndarray("allowed", allowed)
    if arr.dtype != bool:
        raise ValueError(f"allowed must be a boolean array (True = may attend); got dtype {arr.dtype}")
    if arr.ndim != 2:
        raise ValueError(f"allowed must have 2 dimensions; got shape {arr.shape}")
    return np.where(arr, 0.0, -np.inf)


@dataclass(frozen=True)
class AttentionResult:
    """Every intermediate of one attention computation.

    Attributes
    ----------
    scores:
        ``Q K^T`` before scaling, shape ``(n_q, n_k)``.
    scaled:
        The scores after dividing by the scale and adding the mask
        (``-inf`` where attending is forbidden).
    weights:
        Row-wise softmax of ``scaled``; each row sums to 1 and forbidden
        entries are exactly 0.
    output:
        ``weights @ V``, shape ``(n_q, d_v)``.
    divisor:
        The number the scores were divided by.
    mask:
        The boolean mask used (``True`` = may attend), or ``None``.
    Q, K, V:
        The queries, keys and values (projections, for the ``*_attention``
        helpers).
    """

    scores: np.ndarray
    scaled: np.ndarray
    weights: np.ndarray
    output: np.ndarray
    divisor: float
    mask: np.ndarray | None
    Q: np.ndarray
    K: np.ndarray
    V: np.ndarray


def attention(Q: Any, K: Any, V: Any, mask: Any = None, scale: Any = SQRT_D_K) -> AttentionResult:
    """Scaled dot-product attention ``softmax(Q K^T / sqrt(d_k) + M) V``.

    Parameters
    ----------
    Q, K, V:
        Queries ``(n_q, d_k)``, keys ``(n_k, d_k)`` and values ``(n_k, d_v)``.
    mask:
        ``None``, :data:`CAUSAL`, a function ``allowed(i, j)`` (``i`` a column of
        query indices, ``j`` a row of key indices, returning booleans), a boolean
        ``(n_q, n_k)`` array (``True`` = may attend), or an additive mask of 0
        and ``-inf``.
    scale:
        :data:`SQRT_D_K` divides by ``sqrt(d_k)``, :data:`NO_SCALING` does not
        scale, a positive number divides by that number.

    Raises
    ------
    ValueError
        ``Q``, ``K`` or ``V`` is not finite real numbers of the expected shape; ``mask`` is not a mask (``None``,
        ``attnlib.CAUSAL``, a function ``allowed(i, j)``, a boolean or an additive matrix of the scores' shape) or
        leaves a query row with no key; ``scale`` is not ``attnlib.SQRT_D_K``, ``attnlib.NO_SCALING`` or a positive
        number; or a result would overflow float64 (the error names the inputs it came from). The message names the
        argument.

    Examples
    --------
    >>> X = running_example()
    >>> r = attention(X, X, X)
    >>> r.weights.round(4)[0].tolist()
    [0.4555, 0.2246, 0.3199]
    >>> r.output.round(4)[0].tolist()
    [0.6155, 0.3845]
    """
    q, k = _check_qk(Q, K)
    v = as_matrix("V", V)
    return _attend(q, k, v, mask, scale, ("Q and K", "V"))


def _attend(q: np.ndarray, k: np.ndarray, v: np.ndarray, mask: Any, scale: Any, inputs: tuple[str, str]) -> AttentionResult:
    """Attention of checked float arrays; ``inputs`` names the caller's arguments behind the scores and the values.

    ``mask`` may already be a checked boolean matrix (``multi_head_parts`` checks it once for every head).
    """
    if v.shape[0] != k.shape[0]:
        raise ValueError(
            f"K has {k.shape[0]} rows (keys) but V has {v.shape[0]} (K is {k.shape}, V is {v.shape}); every key needs one value"
        )
    divisor = scale_divisor(q.shape[1], scale)
    scores, scaled = _scores(q, k, divisor, inputs[0])
    scaled, allowed, weights, output = _weigh(scaled, v, mask, "the output weights @ V", inputs[1])
    return AttentionResult(scores, scaled, weights, output, divisor, allowed, q, k, v)


def _weigh(
    scores: np.ndarray, values: np.ndarray, mask: Any, what: str, inputs: str
) -> tuple[np.ndarray, np.ndarray | None, np.ndarray, np.ndarray]:
    """The step every attention shares, written once: masked scores to ``-inf``, a softmax per row, ``weights @ values``.

    Returns the masked scores, the boolean mask (``None`` without one), the weights and the output;
    ``what`` and ``inputs`` name the output and the caller's arguments it comes from, for an overflow.
    """
    allowed = as_mask("mask", mask, scores.shape)
    if allowed is not None:
        scores = np.where(allowed, scores, -np.inf)
    weights = softmax(scores, axis=-1)
    with quiet():
        output = finite_result(weights @ values, what, inputs)
    return scores, allowed, weights, output


def project(X: Any, W: Any, x_name: str = "X", w_name: str = "W") -> np.ndarray:
    """The projection ``X W`` of token rows, with shape checks that name both arguments.

    Raises
    ------
    ValueError
        ``X`` or ``W`` is not finite real numbers of the expected shape (or their widths do not fit); ``x_name`` or
        ``w_name`` is not a name; or the product overflows float64. The message names the argument by ``x_name`` and
        ``w_name``.

    Examples
    --------
    >>> project(running_example(), [[1, 0], [1, 1]]).tolist()
    [[1.0, 0.0], [1.0, 1.0], [1.0, 0.5]]
    """
    x = as_matrix(x_name, X)
    w = as_matrix(w_name, W)
    if x.shape[1] != w.shape[0]:
        raise ValueError(
            f"{x_name} has d_model={x.shape[1]} but {w_name} has {w.shape[0]} rows ({x_name} is {x.shape}, {w_name} is {w.shape})"
        )
    with quiet():
        return finite_result(x @ w, f"the projection {x_name} {w_name}", f"{x_name} and {w_name}")


def cross_attention(
    X_query: Any, X_memory: Any, W_Q: Any, W_K: Any, W_V: Any, mask: Any = None, scale: Any = SQRT_D_K
) -> AttentionResult:
    """Attention with queries from one sequence and keys and values from another.

    ``Q = X_query W_Q``, ``K = X_memory W_K``, ``V = X_memory W_V``.

    Raises
    ------
    ValueError
        ``X_query``, ``X_memory``, ``W_Q``, ``W_K`` or ``W_V`` is not finite real numbers of the expected shape;
        ``mask`` is not a mask (``None``, ``attnlib.CAUSAL``, a function ``allowed(i, j)``, a boolean or an additive
        matrix of the scores' shape) or leaves a query row with no key; ``scale`` is not ``attnlib.SQRT_D_K``,
        ``attnlib.NO_SCALING`` or a positive number; or a result would overflow float64 (the error names the inputs it
        came from). The message names the argument.

    Examples
    --------
    >>> I = np.eye(2)
    >>> r = cross_attention([[1, 0]], running_example(), I, I, I)
    >>> r.weights.shape, r.output.shape
    ((1, 3), (1, 2))
    """
    return _projected_attention(as_matrix("X_query", X_query), as_matrix("X_memory", X_memory), W_Q, W_K, W_V, mask, scale)


def _projected_attention(
    xq: np.ndarray,
    xm: np.ndarray,
    W_Q: Any,
    W_K: Any,
    W_V: Any,
    mask: Any,
    scale: Any,
    names: tuple[str, str] = ("X_query", "X_memory"),
) -> AttentionResult:
    q = project(xq, W_Q, names[0], "W_Q")
    k = project(xm, W_K, names[1], "W_K")
    v = project(xm, W_V, names[1], "W_V")
    if q.shape[1] != k.shape[1]:
        raise ValueError(
            f"W_Q has {q.shape[1]} columns (d_k) but W_K has {k.shape[1]} (W_Q is {as_matrix('W_Q', W_Q).shape}, "
            f"W_K is {as_matrix('W_K', W_K).shape}); queries and keys must have the same width d_k"
        )
    scores_from = f"{names[0]}, W_Q, W_K" + ("" if names[0] == names[1] else f" and {names[1]}")
    return _attend(q, k, v, mask, scale, (scores_from, f"{names[1]} and W_V"))


def self_attention(X: Any, W_Q: Any, W_K: Any, W_V: Any, mask: Any = None, scale: Any = SQRT_D_K) -> AttentionResult:
    """Self-attention: queries, keys and values all come from ``X``.

    Raises
    ------
    ValueError
        ``X``, ``W_Q``, ``W_K`` or ``W_V`` is not finite real numbers of the expected shape; ``mask`` is not a mask
        (``None``, ``attnlib.CAUSAL``, a function ``allowed(i, j)``, a boolean or an additive matrix of the scores'
        shape) or leaves a query row with no key; ``scale`` is not ``attnlib.SQRT_D_K``, ``attnlib.NO_SCALING`` or a
        positive number; or a result would overflow float64 (the error names the inputs it came from). The message names
        the argument.

    Examples
    --------
    >>> X, I = running_example(), np.eye(2)
    >>> self_attention(X, I, I, [[1, 0], [1, 1]]).V.tolist()
    [[1.0, 0.0], [1.0, 1.0], [1.0, 0.5]]
    """
    x = as_matrix("X", X)
    return _projected_attention(x, x, W_Q, W_K, W_V, mask, scale, names=("X", "X"))


@dataclass(frozen=True)
class MultiHeadResult:
    """Every intermediate of one multi-head attention computation.

    Attributes
    ----------
    heads:
        One :class:`AttentionResult` per head (its ``Q``, ``K``, ``V`` are
        that head's column blocks of the projections).
    concat:
        The head outputs side by side, ``(n_q, d_model)``.
    output:
        ``concat @ W_O``.
    W_O:
        The output matrix used.
    """

    heads: tuple[AttentionResult, ...]
    concat: np.ndarray
    output: np.ndarray
    W_O: np.ndarray


def head_width(d_model: int, n_heads: int) -> int:
    """Width ``d_head = d_model / n_heads`` of one head; ``n_heads`` must divide ``d_model``.

    The one place of that rule (:func:`multi_head_parts`, :func:`attention_parameter_count` and
    :func:`attnlib.heads.head_dim` call it).

    Raises
    ------
    ValueError
        ``d_model`` or ``n_heads`` is not a positive integer (or ``n_heads`` does not divide ``d_model``). The message
        names the argument.

    Examples
    --------
    >>> head_width(512, 8)
    64
    >>> head_width(6, 4)
    Traceback (most recent call last):
    ...
    ValueError: n_heads=4 does not divide d_model=6; every head needs d_model/n_heads columns
    """
    d_model = as_positive_int("d_model", d_model)
    n_heads = as_positive_int("n_heads", n_heads)
    if d_model % n_heads:
        raise ValueError(f"n_heads={n_heads} does not divide d_model={d_model}; every head needs d_model/n_heads columns")
    return d_model // n_heads


def multi_head_parts(
    X_query: Any,
    X_memory: Any,
    W_Q: Any,
    W_K: Any,
    W_V: Any,
    W_O: Any,
    n_heads: int,
    mask: Any = None,
) -> MultiHeadResult:
    """Multi-head attention keeping every head's intermediates (see :func:`multi_head_attention`).

    Raises
    ------
    ValueError
        ``X_query``, ``X_memory``, ``W_Q``, ``W_K``, ``W_V`` or ``W_O`` is not finite real numbers of the expected
        shape; ``n_heads`` is not a positive integer (or does not divide the width); ``mask`` is not a mask (``None``,
        ``attnlib.CAUSAL``, a function ``allowed(i, j)``, a boolean or an additive matrix of the scores' shape) or
        leaves a query row with no key; or a result would overflow float64 (the error names the inputs it came from).
        The message names the argument.

    Examples
    --------
    >>> X, I = running_example(), np.eye(2)
    >>> r = multi_head_parts(X, X, I, I, I, I, n_heads=2)
    >>> len(r.heads), r.heads[0].Q.shape, r.concat.shape
    (2, (3, 1), (3, 2))
    """
    xq = as_matrix("X_query", X_query)
    xm = as_matrix("X_memory", X_memory)
    n_heads = as_positive_int("n_heads", n_heads)
    d_model = xq.shape[1]
    if xm.shape[1] != d_model:
        raise ValueError(
            f"X_query has d_model={d_model} but X_memory has d_model={xm.shape[1]} (X_query is {xq.shape}, X_memory is {xm.shape}); "
            "queries and memory must have the same width"
        )
    d_head = head_width(d_model, n_heads)
    mats = {}
    for name, w in (("W_Q", W_Q), ("W_K", W_K), ("W_V", W_V), ("W_O", W_O)):
        mats[name] = as_matrix(name, w)
        if mats[name].shape != (d_model, d_model):
            raise ValueError(f"{name} must be (d_model, d_model) = {(d_model, d_model)}; got {mats[name].shape}")
    q = project(xq, mats["W_Q"], "X_query", "W_Q")
    k = project(xm, mats["W_K"], "X_memory", "W_K")
    v = project(xm, mats["W_V"], "X_memory", "W_V")
    allowed = as_mask("mask", mask, (q.shape[0], k.shape[0]))  # checked once, for every head
    heads = []
    for r in range(n_heads):
        cols = slice(r * d_head, (r + 1) * d_head)
        heads.append(_attend(q[:, cols], k[:, cols], v[:, cols], allowed, SQRT_D_K, ("X_query, X_memory, W_Q and W_K", "X_memory and W_V")))
    with quiet():
        concat = np.concatenate([h.output for h in heads], axis=1)
        output = finite_result(concat @ mats["W_O"], "the output projection concat(heads) W_O", "X_memory, W_V and W_O")
    return MultiHeadResult(tuple(heads), concat, output, mats["W_O"])


def multi_head_attention(
    X_query: Any,
    X_memory: Any,
    W_Q: Any,
    W_K: Any,
    W_V: Any,
    W_O: Any,
    n_heads: int,
    mask: Any = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Multi-head attention in the packed layout of ``torch.nn.MultiheadAttention`` (no bias).

    All four matrices are ``(d_model, d_model)``. Head ``r`` uses columns
    ``r*d_head:(r+1)*d_head`` of ``W_Q``, ``W_K`` and ``W_V`` with
    ``d_head = d_model / n_heads`` and scales by ``sqrt(d_head)``; the head
    outputs are concatenated and multiplied by ``W_O``.

    Returns
    -------
    output:
        ``(n_q, d_model)``.
    weights:
        ``(n_heads, n_q, n_k)``, one attention matrix per head.

    Raises
    ------
    ValueError
        ``X_query``, ``X_memory``, ``W_Q``, ``W_K``, ``W_V`` or ``W_O`` is not finite real numbers of the expected
        shape; ``n_heads`` is not a positive integer (or does not divide the width); ``mask`` is not a mask (``None``,
        ``attnlib.CAUSAL``, a function ``allowed(i, j)``, a boolean or an additive matrix of the scores' shape) or
        leaves a query row with no key; or a result would overflow float64 (the error names the inputs it came from).
        The message names the argument.

    Examples
    --------
    >>> X, I = running_example(), np.eye(2)
    >>> out, w = multi_head_attention(X, X, I, I, I, I, n_heads=2)
    >>> out.shape, w.shape
    ((3, 2), (2, 3, 3))
    """
    r = multi_head_parts(X_query, X_memory, W_Q, W_K, W_V, W_O, n_heads, mask=mask)
    return r.output, np.stack([h.weights for h in r.heads])


def attention_parameter_count(d_model: int, n_heads: int, bias: bool = False) -> int:
    """Parameters of one multi-head attention block: ``4 d_model^2`` (+ ``4 d_model`` with bias).

    The count does not depend on ``n_heads`` (each head has ``d_model/n_heads``
    columns), but ``n_heads`` must still divide ``d_model``.

    Raises
    ------
    ValueError
        ``d_model`` or ``n_heads`` is not a positive integer (or ``n_heads`` does not divide ``d_model``); ``bias`` is
        not ``True`` or ``False``. The message names the argument.

    Examples
    --------
    >>> attention_parameter_count(512, 8)
    1048576
    >>> attention_parameter_count(512, 8, bias=True)
    1050624
    """
    d_model = as_positive_int("d_model", d_model)
    head_width(d_model, n_heads)  # n_heads must divide d_model, though the count does not depend on it
    return 4 * d_model * d_model + (4 * d_model if as_flag("bias", bias) else 0)


def additive_scores(S: Any, H: Any, W_a: Any, U_a: Any, v_a: Any) -> np.ndarray:
    """Bahdanau's additive score ``e_ij = v_a^T tanh(W_a s_i + U_a h_j)`` for every pair.

    Parameters
    ----------
    S:
        Decoder states (queries) as rows, ``(n_q, d_s)``.
    H:
        Encoder annotations (keys) as rows, ``(n_k, d_h)``.
    W_a, U_a:
        ``(d_a, d_s)`` and ``(d_a, d_h)``, acting on column vectors as in the paper.
    v_a:
        ``(d_a,)``.

    Returns
    -------
    ``(n_q, n_k)`` scores. Computing them takes ``n_q * n_k * d_a`` tanh
    evaluations, one hidden vector per *pair*.

    Raises
    ------
    ValueError
        ``S``, ``H``, ``W_a``, ``U_a`` or ``v_a`` is not finite real numbers of the expected shape; or a result would
        overflow float64 (the error names the inputs it came from). The message names the argument.

    Examples
    --------
    >>> I = np.eye(2)
    >>> additive_scores([[1, 0]], [[1, 0], [0, 1]], I, I, [1, 1]).round(4).tolist()
    [[0.964, 1.5232]]
    """
    s = as_matrix("S", S)
    h = as_matrix("H", H)
    wa = as_matrix("W_a", W_a)
    ua = as_matrix("U_a", U_a)
    va = as_array("v_a", v_a, 1)
    if wa.shape[1] != s.shape[1]:
        raise ValueError(f"W_a has {wa.shape[1]} columns but S has d_s={s.shape[1]} (W_a is {wa.shape}, S is {s.shape})")
    if ua.shape[1] != h.shape[1]:
        raise ValueError(f"U_a has {ua.shape[1]} columns but H has d_h={h.shape[1]} (U_a is {ua.shape}, H is {h.shape})")
    if not wa.shape[0] == ua.shape[0] == va.shape[0]:
        raise ValueError(f"W_a, U_a and v_a must share d_a; got W_a {wa.shape}, U_a {ua.shape}, v_a {va.shape}")
    with quiet():
        ws = finite_result(s @ wa.T, "W_a s_i", "S and W_a")
        uh = finite_result(h @ ua.T, "U_a h_j", "H and U_a")
        hidden = np.tanh(ws[:, None, :] + uh[None, :, :])  # a sum beyond float64 is +-inf, and tanh of it is exactly +-1
        return finite_result(hidden @ va, "the scores v_a^T tanh(...)", "v_a")

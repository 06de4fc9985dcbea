"""The backward pass of attention, derived by hand and written in numpy.

For a scalar loss ``L`` whose gradient with respect to the attention output
``O = softmax(Q K^T / c + M) V`` is ``dO``, the chain rule gives, one step at
a time (``c`` is the divisor, ``sqrt(d_k)`` by default):

* ``dV = A^T dO`` and ``dA = dO V^T`` (from ``O = A V``);
* ``dS = A * (dA - rowsum(dA * A))`` (the row-softmax backward,
  :func:`softmax_backward`), where ``S`` are the scaled, masked scores;
* ``dQ = dS K / c`` and ``dK = dS^T Q / c`` (from ``S = Q K^T / c``).

A masked pair has weight exactly 0, so its entry of ``dS`` is exactly 0 and
it contributes nothing to ``dQ`` or ``dK``.

The projections ``Q = X W_Q``, ``K = X_m W_K``, ``V = X_m W_V`` add one more
step: ``dW_Q = X^T dQ`` and so on (:func:`cross_attention_backward`,
:func:`self_attention_backward`, :func:`multi_head_attention_backward`).
:func:`central_difference` and :func:`relative_error` are the tools that
check all of this numerically.

The scores are not parameters: a step on ``W_Q`` and ``W_K`` moves them by
:func:`score_change` (to first order), which is not ``-lr * dS`` entry by entry.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

import numpy as np

from ._validate import SQRT_D_K, as_array, as_matrix, as_real, finite_result, quiet
from .core import (
    AttentionResult,
    MultiHeadResult,
    attention,
    cross_attention,
    multi_head_parts,
    project,
    scale_divisor,
    self_attention,
)

__all__ = [
    "AttentionGradients",
    "MultiHeadGradients",
    "ProjectionGradients",
    "attention_backward",
    "attention_backward_from",
    "central_difference",
    "cross_attention_backward",
    "multi_head_attention_backward",
    "multi_head_backward_from",
    "projection_gradients",
    "relative_error",
    "score_change",
    "self_attention_backward",
    "softmax_backward",
]


class AttentionGradients(NamedTuple):
    """Gradients of a loss with respect to the queries, keys and values."""

    dQ: np.ndarray
    dK: np.ndarray
    dV: np.ndarray


class ProjectionGradients(NamedTuple):
    """Gradients of a loss with respect to the three projection matrices."""

    dW_Q: np.ndarray
    dW_K: np.ndarray
    dW_V: np.ndarray


class MultiHeadGradients(NamedTuple):
    """Gradients of a loss with respect to the four matrices of multi-head attention."""

    dW_Q: np.ndarray
    dW_K: np.ndarray
    dW_V: np.ndarray
    dW_O: np.ndarray


def softmax_backward(weights: Any, d_weights: Any) -> np.ndarray:
    """Gradient with respect to the logits of a row-wise softmax.

    If ``A = softmax(S)`` row by row and ``dA`` is the gradient of the loss
    with respect to ``A``, then ``dS = A * (dA - rowsum(dA * A))``: the
    Jacobian ``diag(a) - a a^T`` of each row applied without forming it.

    Parameters
    ----------
    weights:
        The softmax output ``A``, shape ``(n_q, n_k)``; entries in [0, 1].
    d_weights:
        ``dL/dA``, same shape.

    Raises
    ------
    ValueError
        ``weights`` or ``d_weights`` is not finite real numbers of the expected shape; or a result would overflow
        float64 (the error names the inputs it came from). The message names the argument.

    Examples
    --------
    >>> A = np.array([[0.5, 0.5, 0.0]])
    >>> softmax_backward(A, [[1.0, 0.0, 5.0]]).tolist()
    [[0.25, -0.25, 0.0]]
    """
    a = as_matrix("weights", weights)
    da = as_matrix("d_weights", d_weights)
    if da.shape != a.shape:
        raise ValueError(f"d_weights has shape {da.shape} but weights has shape {a.shape}; they must match")
    if (a < 0).any() or (a > 1).any():
        raise ValueError("weights must be softmax outputs (entries between 0 and 1)")
    with quiet():
        inner = finite_result(np.sum(da * a, axis=-1, keepdims=True), "rowsum(d_weights * weights)", "d_weights")
        return finite_result(a * (da - inner), "the softmax gradient weights * (d_weights - rowsum)", "d_weights")


def attention_backward(
    Q: Any, K: Any, V: Any, d_output: Any, mask: Any = None, scale: Any = SQRT_D_K
) -> AttentionGradients:
    """Gradients ``(dQ, dK, dV)`` of attention for a given output gradient.

    Parameters
    ----------
    Q, K, V, mask, scale:
        As in :func:`attnlib.core.attention` (same checks, same conventions:
        the one mask grammar, ``None``, :data:`attnlib.CAUSAL <attnlib.core.CAUSAL>`, a function
        ``allowed(i, j)``, a boolean mask with ``True`` = may attend or an additive
        0 / ``-inf`` one; the scale :data:`attnlib.SQRT_D_K <attnlib.core.SQRT_D_K>`,
        :data:`attnlib.NO_SCALING <attnlib.core.NO_SCALING>` or a positive number).
    d_output:
        ``dL/dO``, shape ``(n_q, d_v)``.

    Raises
    ------
    ValueError
        ``Q``, ``K``, ``V`` or ``d_output`` is not finite real numbers of the expected shape; ``mask`` is not a mask
        (``None``, ``attnlib.CAUSAL``, a function ``allowed(i, j)``, a boolean or an additive matrix of the scores'
        shape) or leaves a query row with no key; ``scale`` is not ``attnlib.SQRT_D_K``, ``attnlib.NO_SCALING`` or a
        positive number; or a result would overflow float64 (the error names the inputs it came from). The message names
        the argument.

    Examples
    --------
    >>> X = np.array([[1.0, 0.0], [0.0, 1.0], [0.5, 0.5]])
    >>> g = attention_backward(X, X, X, np.ones((3, 2)))
    >>> bool(np.abs(g.dQ).max() < 1e-12)  # every value row sums to 1, so L = sum(O) = 3 whatever A is
    True
    >>> g.dV.sum(axis=1).round(4).tolist()
    [2.0269, 2.0269, 1.9461]
    """
    return attention_backward_from(attention(Q, K, V, mask=mask, scale=scale), d_output)


def attention_backward_from(forward: AttentionResult, d_output: Any) -> AttentionGradients:
    """The backward pass of attention when its forward result is already at hand.

    ``forward`` is what :func:`attnlib.core.attention` returned (its inputs
    were checked there), so a training step runs the forward pass once.

    Raises
    ------
    ValueError
        ``forward`` is not the object it names (made by attnlib); ``d_output`` is not finite real numbers of the
        expected shape; or a result would overflow float64 (the error names the inputs it came from). The message names
        the argument.

    Examples
    --------
    >>> from attnlib.core import attention
    >>> X = np.eye(2)
    >>> attention_backward_from(attention(X, X, X), [[1.0, 0.0], [0.0, 0.0]]).dV.round(4).tolist()
    [[0.6698, 0.0], [0.3302, 0.0]]
    """
    if not isinstance(forward, AttentionResult):
        raise ValueError(f"forward must be the AttentionResult of attnlib.core.attention; got {type(forward).__name__}")
    d_out = as_matrix("d_output", d_output)
    if d_out.shape != forward.output.shape:
        raise ValueError(
            f"d_output has shape {d_out.shape} but the attention output has shape {forward.output.shape} (n_q, d_v)"
        )
    return _backward(forward, d_out, "d_output")


def _backward(forward: AttentionResult, d_out: np.ndarray, inputs: str) -> AttentionGradients:
    """The attention backward pass for a checked ``d_out``; every product is checked for overflow like in core.

    ``inputs`` names the caller's arguments the gradient came from (an overflow names them, not an internal array).
    """
    A = forward.weights
    with quiet():
        dV = finite_result(A.T @ d_out, "the gradient dV = A^T dO", inputs)
        dA = finite_result(d_out @ forward.V.T, "the gradient dA = dO V^T", f"{inputs} and the values V")
        inner = finite_result(np.sum(dA * A, axis=-1, keepdims=True), "rowsum(dA * A)", f"{inputs} and the values V")
        # softmax_backward without re-checking A
        dS = finite_result(A * (dA - inner), "the score gradient dS", f"{inputs} and the values V")
        if forward.mask is not None:
            dS = np.where(forward.mask, dS, 0.0)
        dS = dS / forward.divisor
        dQ = finite_result(dS @ forward.K, "the gradient dQ = dS K", f"{inputs}, the values V and the keys K")
        dK = finite_result(dS.T @ forward.Q, "the gradient dK = dS^T Q", f"{inputs}, the values V and the queries Q")
    return AttentionGradients(dQ, dK, dV)


def projection_gradients(X_query: Any, X_memory: Any, grads: AttentionGradients) -> ProjectionGradients:
    """From ``(dQ, dK, dV)`` to the projection matrices: ``dW_Q = X_query^T dQ``, ``dW_K = X_memory^T dK``, ``dW_V = X_memory^T dV``.

    Raises
    ------
    ValueError
        ``X_query`` or ``X_memory`` is not finite real numbers of the expected shape; ``grads`` is not an
        ``AttentionGradients`` of finite real matrices that fit the inputs; or a result would overflow float64 (the
        error names the inputs it came from). The message names the argument.

    Examples
    --------
    >>> g = AttentionGradients(np.ones((1, 2)), np.ones((2, 2)), np.ones((2, 3)))
    >>> [m.shape for m in projection_gradients(np.ones((1, 4)), np.ones((2, 4)), g)]
    [(4, 2), (4, 2), (4, 3)]
    """
    return _projection_gradients(X_query, X_memory, grads, ("X_query", "X_memory"))


def _projection_gradients(X_query: Any, X_memory: Any, grads: Any, names: tuple[str, str]) -> ProjectionGradients:
    """:func:`projection_gradients` with the caller's names of the two inputs (``X`` for self-attention)."""
    xq = as_matrix(names[0], X_query)
    xm = as_matrix(names[1], X_memory)
    if not (isinstance(grads, tuple) and len(grads) == 3):
        raise ValueError(f"grads must be AttentionGradients (dQ, dK, dV); got {type(grads).__name__}")
    dQ, dK, dV = (as_matrix(f"grads.{n}", g) for n, g in zip(("dQ", "dK", "dV"), grads))
    if dQ.shape[0] != xq.shape[0] or dK.shape[0] != xm.shape[0] or dV.shape[0] != xm.shape[0]:
        raise ValueError(
            f"grads do not match the inputs: dQ has {dQ.shape[0]} rows for {xq.shape[0]} queries ({names[0]}), "
            f"dK and dV have {dK.shape[0]} and {dV.shape[0]} rows for {xm.shape[0]} memory tokens ({names[1]})"
        )
    q, m = names
    with quiet():
        return ProjectionGradients(
            finite_result(xq.T @ dQ, f"dW_Q = {q}^T dQ", f"{q} and the gradient dQ"),
            finite_result(xm.T @ dK, f"dW_K = {m}^T dK", f"{m} and the gradient dK"),
            finite_result(xm.T @ dV, f"dW_V = {m}^T dV", f"{m} and the gradient dV"),
        )


def cross_attention_backward(
    X_query: Any,
    X_memory: Any,
    W_Q: Any,
    W_K: Any,
    W_V: Any,
    d_output: Any,
    mask: Any = None,
    scale: Any = SQRT_D_K,
) -> ProjectionGradients:
    """Gradients with respect to ``W_Q``, ``W_K``, ``W_V`` of :func:`attnlib.core.cross_attention`.

    ``dW_Q = X_query^T dQ``, ``dW_K = X_memory^T dK``, ``dW_V = X_memory^T dV``.

    Raises
    ------
    ValueError
        ``X_query``, ``X_memory``, ``W_Q``, ``W_K``, ``W_V`` or ``d_output`` is not finite real numbers of the expected
        shape; ``mask`` is not a mask (``None``, ``attnlib.CAUSAL``, a function ``allowed(i, j)``, a boolean or an
        additive matrix of the scores' shape) or leaves a query row with no key; ``scale`` is not ``attnlib.SQRT_D_K``,
        ``attnlib.NO_SCALING`` or a positive number; or a result would overflow float64 (the error names the inputs it
        came from). The message names the argument.

    Examples
    --------
    >>> I = np.eye(2)
    >>> g = cross_attention_backward([[1, 0]], [[1, 0], [0, 1]], I, I, I, [[1.0, 0.0]])
    >>> [m.shape for m in g]
    [(2, 2), (2, 2), (2, 2)]
    """
    # the forward pass of attnlib.core (its checks and overflow messages name these arguments), then backward
    forward = cross_attention(X_query, X_memory, W_Q, W_K, W_V, mask=mask, scale=scale)
    return _projection_gradients(X_query, X_memory, attention_backward_from(forward, d_output), ("X_query", "X_memory"))


def self_attention_backward(
    X: Any, W_Q: Any, W_K: Any, W_V: Any, d_output: Any, mask: Any = None, scale: Any = SQRT_D_K
) -> ProjectionGradients:
    """Gradients with respect to ``W_Q``, ``W_K``, ``W_V`` of :func:`attnlib.core.self_attention`.

    Raises
    ------
    ValueError
        ``X``, ``W_Q``, ``W_K``, ``W_V`` or ``d_output`` is not finite real numbers of the expected shape; ``mask`` is
        not a mask (``None``, ``attnlib.CAUSAL``, a function ``allowed(i, j)``, a boolean or an additive matrix of the
        scores' shape) or leaves a query row with no key; ``scale`` is not ``attnlib.SQRT_D_K``, ``attnlib.NO_SCALING``
        or a positive number; or a result would overflow float64 (the error names the inputs it came from). The message
        names the argument.

    Examples
    --------
    >>> X = np.array([[1.0, 0.0], [0.0, 1.0], [0.5, 0.5]])
    >>> g = self_attention_backward(X, np.eye(2), np.eye(2), np.eye(2), np.eye(3, 2))
    >>> g.dW_V.round(4).tolist()
    [[0.6155, 0.3845], [0.3845, 0.6155]]
    """
    forward = self_attention(X, W_Q, W_K, W_V, mask=mask, scale=scale)
    return _projection_gradients(X, X, attention_backward_from(forward, d_output), ("X", "X"))


def score_change(
    X_query: Any, X_memory: Any, W_Q: Any, W_K: Any, delta_W_Q: Any, delta_W_K: Any, scale: Any = SQRT_D_K
) -> np.ndarray:
    """How the scaled scores move, to first order, when ``W_Q`` and ``W_K`` move by ``delta_W_Q`` and ``delta_W_K``.

    The scores are ``Z = Q K^T / c`` with ``Q = X_query W_Q`` and ``K = X_memory W_K``, so by the
    product rule their change is ``(X_query delta_W_Q K^T + Q (X_memory delta_W_K)^T) / c``, up to
    terms of second order in the moves. A step of gradient descent with learning rate ``lr`` moves
    the matrices by ``-lr dW_Q`` and ``-lr dW_K``; the scores then move by ``lr`` times
    ``score_change(..., -dW_Q, -dW_K)``, which need not have the sign of ``-dZ`` entry by entry.
    Summed over all entries, though, ``dZ * score_change(..., -dW_Q, -dW_K)`` is
    ``-(|dW_Q|^2 + |dW_K|^2)``: never positive.

    Parameters
    ----------
    X_query, X_memory, W_Q, W_K, scale:
        As in :func:`attnlib.core.cross_attention` (``X_memory = X_query`` for self-attention).
    delta_W_Q, delta_W_K:
        The moves of ``W_Q`` and ``W_K``, of their shapes.

    Raises
    ------
    ValueError
        ``X_query``, ``X_memory``, ``W_Q``, ``W_K``, ``delta_W_Q`` or ``delta_W_K`` is not finite real numbers of the
        expected shape (the moves of ``W_Q``'s and ``W_K``'s shapes, queries and keys of one width); ``scale`` is not
        ``attnlib.SQRT_D_K``, ``attnlib.NO_SCALING`` or a positive number; or a result would overflow float64 (the
        error names the inputs it came from). The message names the argument.

    Examples
    --------
    >>> from attnlib import NO_SCALING
    >>> X = np.array([[1.0, 0.0], [0.0, 1.0], [0.5, 0.5]])
    >>> score_change(X, X, np.eye(2), np.eye(2), np.eye(2), np.zeros((2, 2)), scale=NO_SCALING).tolist()  # Z = X X^T: doubling W_Q
    [[1.0, 0.0, 0.5], [0.0, 1.0, 0.5], [0.5, 0.5, 0.5]]
    """
    q = project(X_query, W_Q, "X_query", "W_Q")
    k = project(X_memory, W_K, "X_memory", "W_K")
    if q.shape[1] != k.shape[1]:
        raise ValueError(f"W_Q gives d_k={q.shape[1]} but W_K gives d_k={k.shape[1]}; queries and keys must have the same width")
    for name, delta, W in (("delta_W_Q", delta_W_Q, W_Q), ("delta_W_K", delta_W_K, W_K)):
        shape, want = as_matrix(name, delta).shape, np.shape(as_matrix(name[6:], W))
        if shape != want:
            raise ValueError(f"{name} must have the shape of {name[6:]}, {want}; got {shape}")
    dq = project(X_query, delta_W_Q, "X_query", "delta_W_Q")
    dk = project(X_memory, delta_W_K, "X_memory", "delta_W_K")
    divisor = scale_divisor(q.shape[1], scale)
    with quiet():
        change = finite_result(dq @ k.T + q @ dk.T, "the change of the scores", "X_query, X_memory, W_Q, W_K and the moves")
        return finite_result(change / divisor, "the change of the scaled scores", "scale")


def multi_head_attention_backward(
    X_query: Any,
    X_memory: Any,
    W_Q: Any,
    W_K: Any,
    W_V: Any,
    W_O: Any,
    n_heads: int,
    d_output: Any,
    mask: Any = None,
) -> MultiHeadGradients:
    """Gradients of :func:`attnlib.core.multi_head_attention` with respect to its four matrices.

    The output is ``C W_O`` with ``C`` the concatenated head outputs, so
    ``dW_O = C^T dOut`` and ``dC = dOut W_O^T``; each head's column block of
    ``dC`` goes through :func:`attention_backward` (scaled by
    ``sqrt(d_head)``), and the blocks of ``dQ``, ``dK``, ``dV`` are placed
    back in the packed layout before the projection step.

    Raises
    ------
    ValueError
        ``X_query``, ``X_memory``, ``W_Q``, ``W_K``, ``W_V``, ``W_O`` or ``d_output`` is not finite real numbers of the
        expected shape; ``n_heads`` is not a positive integer (or does not divide the width); ``mask`` is not a mask
        (``None``, ``attnlib.CAUSAL``, a function ``allowed(i, j)``, a boolean or an additive matrix of the scores'
        shape) or leaves a query row with no key; or a result would overflow float64 (the error names the inputs it came
        from). The message names the argument.

    Examples
    --------
    >>> X, I = np.array([[1.0, 0.0], [0.0, 1.0], [0.5, 0.5]]), np.eye(2)
    >>> g = multi_head_attention_backward(X, X, I, I, I, I, 2, np.ones((3, 2)))
    >>> [m.shape for m in g]
    [(2, 2), (2, 2), (2, 2), (2, 2)]
    """
    forward = multi_head_parts(X_query, X_memory, W_Q, W_K, W_V, W_O, n_heads, mask=mask)
    return multi_head_backward_from(forward, X_query, X_memory, d_output)


def multi_head_backward_from(forward: MultiHeadResult, X_query: Any, X_memory: Any, d_output: Any) -> MultiHeadGradients:
    """The multi-head backward pass from the result of :func:`attnlib.core.multi_head_parts`.

    Raises
    ------
    ValueError
        ``forward`` is not the object it names (made by attnlib); ``X_query``, ``X_memory`` or ``d_output`` is not
        finite real numbers of the expected shape; or a result would overflow float64 (the error names the inputs it
        came from). The message names the argument.

    Examples
    --------
    >>> from attnlib.core import multi_head_parts
    >>> X, I = np.eye(2), np.eye(2)
    >>> g = multi_head_backward_from(multi_head_parts(X, X, I, I, I, I, 1), X, X, np.eye(2))
    >>> g.dW_O.round(4).tolist()
    [[0.6698, 0.3302], [0.3302, 0.6698]]
    """
    if not isinstance(forward, MultiHeadResult):
        raise ValueError(f"forward must be the MultiHeadResult of attnlib.core.multi_head_parts; got {type(forward).__name__}")
    xq = as_matrix("X_query", X_query)
    xm = as_matrix("X_memory", X_memory)
    d_out = as_matrix("d_output", d_output)
    if d_out.shape != forward.output.shape:
        raise ValueError(f"d_output has shape {d_out.shape} but the output has shape {forward.output.shape} (n_q, d_model)")
    with quiet():
        d_concat = finite_result(d_out @ forward.W_O.T, "the gradient of the heads' outputs d_output W_O^T", "d_output and W_O")
        dW_O = finite_result(forward.concat.T @ d_out, "dW_O = concat(heads)^T d_output", "d_output and the heads' outputs")
    col = 0
    parts = []
    for head in forward.heads:
        width = head.V.shape[1]
        parts.append(_backward(head, d_concat[:, col : col + width], "d_output and W_O"))
        col += width
    g = AttentionGradients(*(np.concatenate([p[i] for p in parts], axis=1) for i in range(3)))
    return MultiHeadGradients(*_projection_gradients(xq, xm, g, ("X_query", "X_memory")), dW_O)


def central_difference(fn: Callable[[np.ndarray], float], x: Any, eps: float = 1e-5) -> np.ndarray:
    """Numerical gradient of a scalar function by central differences.

    Entry ``i`` is ``(fn(x + eps e_i) - fn(x - eps e_i)) / (2 eps)``; its
    error shrinks like ``eps**2`` until floating-point rounding takes over.

    Raises
    ------
    ValueError
        ``fn`` is not a function; ``x`` is not finite real numbers of the expected shape; ``eps`` is not a finite real
        number in its range; or a result would overflow float64 (the error names the inputs it came from). The message
        names the argument.

    Examples
    --------
    >>> central_difference(lambda x: float(np.sum(x ** 3)), [[1.0, 2.0]]).round(6).tolist()
    [[3.0, 12.0]]
    """
    base = as_array("x", x, (1, 2, 3))
    eps = as_real("eps", eps)
    if not 0 < eps < 1:
        raise ValueError(f"eps must be a number between 0 and 1; got {eps!r}")
    if not callable(fn):
        raise ValueError(f"fn must be a function of an array; got {type(fn).__name__}")
    grad = np.empty_like(base)
    with quiet():
        for idx in np.ndindex(base.shape):
            up, down = base.copy(), base.copy()
            up[idx] += eps
            down[idx] -= eps
            high, low = as_real("fn(x)", fn(up)), as_real("fn(x)", fn(down))
            what = "the central difference (fn(x + eps) - fn(x - eps)) / (2 eps)"
            grad[idx] = finite_result((high - low) / (2 * eps), what, "fn, x and eps")
    return grad


def relative_error(computed: Any, reference: Any) -> float:
    """``max |computed - reference| / max(max |reference|, 1e-300)``: one number per comparison.

    Raises
    ------
    ValueError
        ``computed`` or ``reference`` is not finite real numbers of the expected shape; or a result would overflow
        float64 (the error names the inputs it came from). The message names the argument.

    Examples
    --------
    >>> round(relative_error([1.0, 2.0], [1.0, 2.000002]), 9)
    1e-06
    """
    a = as_array("computed", computed, (0, 1, 2, 3))
    b = as_array("reference", reference, (0, 1, 2, 3))
    if a.shape != b.shape:
        raise ValueError(f"computed has shape {a.shape} but reference has shape {b.shape}")
    with quiet():
        diff = finite_result(np.abs(a - b).max(), "the difference computed - reference", "computed and reference")
        return float(finite_result(diff / max(float(np.abs(b).max()), 1e-300), "the relative error", "computed and reference"))

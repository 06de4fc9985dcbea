"""Attention as retrieval: one template, two ways of scoring.

Bahdanau's attention and the Transformer's differ only in how they score a
query against a key. Both then do the same two steps, which
:func:`retrieve` implements once:

* ``weights = softmax(scores)`` row by row (masked entries get weight 0);
* ``output = weights @ values``, a weighted average of the stored values.

:func:`bahdanau_retrieval` scores with the additive function
(:func:`attnlib.additive_scores`) and retrieves the annotations themselves;
:func:`transformer_retrieval` scores with scaled dot products of projections
(:func:`attnlib.scaled_scores`) and retrieves projected values.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from ._validate import as_array, as_matrix
from .core import SQRT_D_K, _scores, _weigh, additive_scores, project, scale_divisor

__all__ = ["Retrieval", "bahdanau_retrieval", "retrieve", "transformer_retrieval"]


@dataclass(frozen=True)
class Retrieval:
    """The result of one retrieval.

    Attributes
    ----------
    scores:
        Compatibility scores ``(n_q, n_k)``, as given (before the mask).
    weights:
        Row-wise softmax of the (masked) scores; each row sums to 1.
    values:
        The stored values ``(n_k, d_v)`` that were averaged.
    output:
        ``weights @ values``, one retrieved vector per query, ``(n_q, d_v)``.
    """

    scores: np.ndarray
    weights: np.ndarray
    values: np.ndarray
    output: np.ndarray


def retrieve(scores: Any, values: Any, mask: Any = None) -> Retrieval:
    """Turn scores into weights with a softmax and average the values with them.

    Parameters
    ----------
    scores:
        ``(n_q, n_k)`` compatibility scores from any scoring function.
    values:
        ``(n_k, d_v)``: one stored value per key.
    mask:
        Any form of attnlib's one mask grammar: ``None``, :data:`attnlib.CAUSAL <attnlib.core.CAUSAL>`,
        a function ``allowed(i, j)``, a boolean ``(n_q, n_k)`` array (``True`` =
        may attend) or an additive mask of 0 and ``-inf``. Forbidden entries get weight 0.

    Raises
    ------
    ValueError
        ``scores`` or ``values`` is not finite real numbers of the expected shape; ``mask`` is not a mask (``None``,
        ``attnlib.CAUSAL``, a function ``allowed(i, j)``, a boolean or an additive matrix of the scores' shape) or
        leaves a query row with no key; or a result would overflow float64 (the error names the inputs it came from).
        The message names the argument.

    Examples
    --------
    >>> r = retrieve([[0.0, 0.0]], [[1.0, 0.0], [0.0, 1.0]])
    >>> r.weights.tolist(), r.output.tolist()
    ([[0.5, 0.5]], [[0.5, 0.5]])
    >>> retrieve([[5.0, 0.0]], [[1.0], [3.0]], mask=[[False, True]]).output.tolist()
    [[3.0]]
    """
    s = as_matrix("scores", scores)
    v = as_array("values", values, 2)
    if v.shape[0] != s.shape[1]:
        raise ValueError(
            f"scores has {s.shape[1]} columns (keys) but values has {v.shape[0]} rows "
            f"(scores is {s.shape}, values is {v.shape}); every key needs one value"
        )
    _, _, weights, output = _weigh(s, v, mask, "the output weights @ values", "values")  # the step core's attention takes
    return Retrieval(scores=s, weights=weights, values=v, output=output)


def bahdanau_retrieval(S: Any, H: Any, W_a: Any, U_a: Any, v_a: Any, mask: Any = None) -> Retrieval:
    """Bahdanau's attention as a retrieval: additive scores, keys = values = ``H``.

    Parameters
    ----------
    S:
        Decoder states (the queries) as rows, ``(n_q, d_s)``.
    H:
        Encoder annotations as rows, ``(n_k, d_h)``; they are scored against
        *and* retrieved.
    W_a, U_a, v_a:
        The alignment model's parameters, as in :func:`attnlib.additive_scores`.
    mask:
        As in :func:`retrieve`.

    Returns
    -------
    The :class:`Retrieval`; its ``output`` rows are the context vectors
    ``c_i = sum_j alpha_ij h_j``.

    Raises
    ------
    ValueError
        ``S``, ``H``, ``W_a``, ``U_a`` or ``v_a`` is not finite real numbers of the expected shape; ``mask`` is not a
        mask (``None``, ``attnlib.CAUSAL``, a function ``allowed(i, j)``, a boolean or an additive matrix of the scores'
        shape) or leaves a query row with no key; or a result would overflow float64 (the error names the inputs it came
        from). The message names the argument.

    Examples
    --------
    >>> I = np.eye(2)
    >>> r = bahdanau_retrieval([[1, 0]], [[1, 0], [0, 1]], I, I, [1, 1])
    >>> r.weights.round(4).tolist()
    [[0.3637, 0.6363]]
    """
    scores = additive_scores(S, H, W_a, U_a, v_a)
    return retrieve(scores, H, mask=mask)


def transformer_retrieval(
    X_query: Any, X_memory: Any, W_Q: Any, W_K: Any, W_V: Any, mask: Any = None, scale: Any = SQRT_D_K
) -> Retrieval:
    """Transformer attention as a retrieval: scaled dot products of projections.

    ``Q = X_query W_Q``, ``K = X_memory W_K``, ``V = X_memory W_V``; the
    scores are ``Q K^T / sqrt(d_k)`` (see :func:`attnlib.scaled_scores`; ``scale``
    as there: :data:`attnlib.SQRT_D_K <attnlib.core.SQRT_D_K>`, :data:`attnlib.NO_SCALING <attnlib.core.NO_SCALING>`
    or a positive number) and the values are ``V``. Pass the same matrix twice for self-attention.

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
    >>> from attnlib.core import running_example
    >>> X, I = running_example(), np.eye(2)
    >>> transformer_retrieval(X, X, I, I, I).weights.round(4)[0].tolist()
    [0.4555, 0.2246, 0.3199]
    """
    q = project(X_query, W_Q, "X_query", "W_Q")
    k = project(X_memory, W_K, "X_memory", "W_K")
    v = project(X_memory, W_V, "X_memory", "W_V")
    if q.shape[1] != k.shape[1]:
        raise ValueError(f"W_Q gives d_k={q.shape[1]} but W_K gives d_k={k.shape[1]}; queries and keys must have the same width")
    scaled = _scores(q, k, scale_divisor(q.shape[1], scale), "X_query, X_memory, W_Q and W_K")[1]
    return retrieve(scaled, v, mask=mask)

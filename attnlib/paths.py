"""How many steps information needs to travel between two positions.

Positions are numbered from 1, like the tokens ``x1, x2, x3`` of the book.

* In a recurrent network, information from token ``i`` reaches token ``j``
  only by passing the hidden state along: ``|j - i|`` recurrent transitions
  (a left-to-right RNN can only carry it forward, ``i <= j``; a
  bidirectional one has a backward pass for the other direction).
* In one self-attention layer every query meets every key in the same
  matrix product, so any two distinct positions are one step apart.

A position is 0 steps from itself in both.
"""

from __future__ import annotations

from typing import Literal

import numpy as np

from ._validate import as_flag, as_positive_int, check_size

__all__ = ["rnn_route", "rnn_path_length", "attention_path_length", "path_length_matrix"]


#: Longest route :func:`rnn_route` writes out (one string per node).
MAX_ROUTE = 10_000


def _positions(source: int, target: int, n: int | None) -> tuple[int, int]:
    i = as_positive_int("source", source)
    j = as_positive_int("target", target)
    if n is not None:
        n = as_positive_int("n", n)
        for name, p in (("source", i), ("target", j)):
            if p > n:
                raise ValueError(f"{name}={p} is outside a sequence of n={n} tokens (positions run from 1 to {n})")
    return i, j


def rnn_route(source: int, target: int) -> list[str]:
    """The nodes a left-to-right RNN passes from input ``x_source`` to state ``h_target``.

    Examples
    --------
    >>> " -> ".join(rnn_route(1, 3))
    'x1 -> h1 -> h2 -> h3'
    """
    i, j = _positions(source, target, None)
    if j < i:
        raise ValueError(f"a left-to-right RNN cannot carry x{i} back to h{j} (source={i} > target={j})")
    if j - i > MAX_ROUTE:
        raise ValueError(f"the route from source={i} to target={j} has {j - i + 2} nodes; rnn_route lists at most {MAX_ROUTE}")
    return [f"x{i}"] + [f"h{t}" for t in range(i, j + 1)]


def rnn_path_length(source: int, target: int, bidirectional: bool = True, n: int | None = None) -> int:
    """Recurrent transitions between ``x_source`` and ``x_target``: ``|target - source|``.

    Parameters
    ----------
    source, target:
        1-based positions.
    bidirectional:
        If False (a left-to-right RNN), ``target < source`` is impossible
        and raises :class:`ValueError`.
    n:
        Optional sequence length; positions beyond it raise.

    Examples
    --------
    >>> rnn_path_length(1, 3), rnn_path_length(3, 1), rnn_path_length(2, 2)
    (2, 2, 0)
    """
    i, j = _positions(source, target, n)
    if not as_flag("bidirectional", bidirectional) and j < i:
        raise ValueError(f"a left-to-right RNN cannot carry information backward from position {i} to {j}; use bidirectional=True")
    return abs(j - i)


def attention_path_length(source: int, target: int, n: int | None = None) -> int:
    """Steps between two positions inside one self-attention layer: 1 (0 to itself).

    Examples
    --------
    >>> attention_path_length(1, 3), attention_path_length(1, 1000), attention_path_length(2, 2)
    (1, 1, 0)
    """
    i, j = _positions(source, target, n)
    return 0 if i == j else 1


def path_length_matrix(n: int, kind: Literal["rnn", "attention"]) -> np.ndarray:
    """All path lengths of an ``n``-token sequence; entry ``[i-1, j-1]`` is from ``i`` to ``j``.

    ``kind="rnn"`` uses a bidirectional RNN (:func:`rnn_path_length`),
    ``kind="attention"`` one self-attention layer (:func:`attention_path_length`).

    Examples
    --------
    >>> path_length_matrix(3, "rnn").tolist()
    [[0, 1, 2], [1, 0, 1], [2, 1, 0]]
    >>> path_length_matrix(3, "attention").tolist()
    [[0, 1, 1], [1, 0, 1], [1, 1, 0]]
    """
    n = as_positive_int("n", n)
    funcs = {"rnn": rnn_path_length, "attention": attention_path_length}
    if not isinstance(kind, str) or kind not in funcs:
        raise ValueError(f"kind must be the string 'rnn' or 'attention'; got {kind!r}")
    check_size(f"path_length_matrix(n={n}), an n x n integer matrix,", n * n)
    if n > 2000:
        raise ValueError(f"n={n} is too large for path_length_matrix (one call per pair); use at most 2000")
    f = funcs[kind]
    return np.array([[f(i, j, n=n) for j in range(1, n + 1)] for i in range(1, n + 1)], dtype=int)

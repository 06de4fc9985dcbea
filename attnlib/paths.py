"""How many steps information needs to travel between two positions.

Positions are numbered from 1, like the tokens ``x1, x2, x3`` of the book.

* In a recurrent network, information from token ``i`` reaches token ``j``
  only by passing the hidden state along: ``|j - i|`` recurrent transitions
  (a left-to-right RNN can only carry it forward, ``i <= j``; a
  bidirectional one has a backward pass for the other direction).
* In one self-attention layer every query meets every key in the same
  matrix product, so any two distinct positions are one step apart.

A position is 0 steps from itself in both.

:func:`layer_comparison` adds the three numbers the Transformer paper compares
in its Table 1 for self-attention, recurrent and convolutional layers:
operations per layer, sequential operations and maximum path length.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

import numpy as np

from ._memory import check_size
from ._validate import as_flag, as_positive_int

__all__ = [
    "LayerCost",
    "attention_path_length",
    "centred_convolution_layers",
    "layer_comparison",
    "path_length_matrix",
    "rnn_path_length",
    "rnn_route",
]


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

    Raises
    ------
    ValueError
        ``source`` or ``target`` is not an integer in its range. The message names the argument.

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

    Raises
    ------
    ValueError
        ``source`` or ``target`` is not an integer in its range; ``bidirectional`` is not ``True`` or ``False``; ``n``
        is not a positive integer. The message names the argument.

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

    Raises
    ------
    ValueError
        ``source`` or ``target`` is not an integer in its range; ``n`` is not a positive integer. The message names the
        argument.

    Examples
    --------
    >>> attention_path_length(1, 3), attention_path_length(1, 1000), attention_path_length(2, 2)
    (1, 1, 0)
    """
    i, j = _positions(source, target, n)
    return 0 if i == j else 1


def path_length_matrix(n: int, kind: Literal["rnn", "rnn_left_to_right", "attention"]) -> np.ndarray:
    """All path lengths of an ``n``-token sequence; entry ``[i-1, j-1]`` is from ``i`` to ``j``.

    ``kind="rnn"`` is a bidirectional RNN (:func:`rnn_path_length`): symmetric,
    ``|i - j|`` both ways. ``kind="rnn_left_to_right"`` is a left-to-right RNN:
    it carries information only forward, so the entries with ``j < i`` are
    ``inf`` (no path) and the matrix is float. ``kind="attention"`` is one
    self-attention layer (:func:`attention_path_length`).

    Raises
    ------
    ValueError
        ``n`` is not a positive integer; ``kind`` is not one of the values it may take. The message names the argument.

    Examples
    --------
    >>> path_length_matrix(3, "rnn").tolist()
    [[0, 1, 2], [1, 0, 1], [2, 1, 0]]
    >>> path_length_matrix(3, "rnn_left_to_right").tolist()
    [[0.0, 1.0, 2.0], [inf, 0.0, 1.0], [inf, inf, 0.0]]
    >>> path_length_matrix(3, "attention").tolist()
    [[0, 1, 1], [1, 0, 1], [1, 1, 0]]
    """
    n = as_positive_int("n", n)
    funcs = {"rnn": rnn_path_length, "attention": attention_path_length}
    if not isinstance(kind, str) or kind not in (*funcs, "rnn_left_to_right"):
        raise ValueError(f"kind must be the string 'rnn', 'rnn_left_to_right' or 'attention'; got {kind!r}")
    check_size(f"path_length_matrix(n={n}), an n x n matrix,", n * n)
    if n > 2000:
        raise ValueError(f"n={n} is too large for path_length_matrix (one call per pair); use at most 2000")
    if kind == "rnn_left_to_right":  # no path from a later token back to an earlier one: +inf below the diagonal
        return np.array(
            [[float(j - i) if j >= i else np.inf for j in range(1, n + 1)] for i in range(1, n + 1)]
        )
    f = funcs[kind]
    return np.array([[f(i, j, n=n) for j in range(1, n + 1)] for i in range(1, n + 1)], dtype=int)


@dataclass(frozen=True)
class LayerCost:
    """One row of the Transformer paper's Table 1, evaluated for given ``n`` and ``d``.

    ``operations`` counts the multiply-adds of one layer to leading order (the
    paper's complexity per layer with its constant 1), ``sequential`` the
    operations that must run one after another, ``max_path`` the longest route
    a signal takes between two of the ``n`` positions. ``order`` holds the
    paper's three O-expressions.
    """

    layer: str
    operations: int
    sequential: int
    max_path: int
    order: tuple[str, str, str]


def layer_comparison(n: int, d: int, kernel: int = 3) -> list[LayerCost]:
    """Table 1 of Vaswani et al. (2017) for sequence length ``n`` and width ``d``.

    Rows: self-attention (``n^2 d`` operations, 1 sequential step, path 1),
    recurrent (``n d^2``, ``n`` steps, path ``n - 1``), and a stack of
    convolutions of width ``kernel`` (``kernel n d^2`` operations per layer,
    1 step), with contiguous kernels (path: the layers needed to span the
    sequence, ``ceil((n - 1) / (kernel - 1))``) and dilated ones (path
    ``ceil(log_kernel n)``).

    The kernel width is the paper's ``k`` (the book writes ``w``). The
    paper's fourth row, restricted self-attention, is not included.

    To leading order, with every constant 1 and the attention layer's own
    projections (about ``4 n d^2``) left out, self-attention needs fewer
    operations per layer than a recurrent layer when ``n < d``.

    Raises
    ------
    ValueError
        ``n``, ``d`` or ``kernel`` is not a positive integer. The message names the argument.

    Examples
    --------
    >>> rows = layer_comparison(50, 512)
    >>> [(r.layer, r.operations, r.sequential, r.max_path) for r in rows]  # doctest: +NORMALIZE_WHITESPACE
    [('self-attention', 1280000, 1, 1), ('recurrent', 13107200, 50, 49),
     ('convolutional', 39321600, 1, 25), ('convolutional (dilated)', 39321600, 1, 4)]
    >>> layer_comparison(4096, 512)[0].operations > layer_comparison(4096, 512)[1].operations
    True
    """
    n = as_positive_int("n", n)
    d = as_positive_int("d", d)
    kernel = as_positive_int("kernel", kernel)
    if kernel < 2:
        raise ValueError(f"kernel must be at least 2 for a convolution to widen its reach; got {kernel}")
    dilated = 0
    while kernel**dilated < n:  # integer ceil(log_kernel n), exact for powers of the kernel
        dilated += 1
    contiguous = math.ceil((n - 1) / (kernel - 1))
    conv_ops = kernel * n * d * d
    return [
        LayerCost("self-attention", n * n * d, 1, 1 if n > 1 else 0, ("O(n^2 d)", "O(1)", "O(1)")),
        LayerCost("recurrent", n * d * d, n, n - 1, ("O(n d^2)", "O(n)", "O(n)")),
        LayerCost("convolutional", conv_ops, 1, contiguous, ("O(k n d^2)", "O(1)", "O(n/k)")),
        LayerCost("convolutional (dilated)", conv_ops, 1, dilated, ("O(k n d^2)", "O(1)", "O(log_k n)")),
    ]


def centred_convolution_layers(n: int, kernel: int = 3) -> tuple[int, int]:
    """Layers of *centred* convolutions of odd width ``kernel`` that join every pair of ``n`` positions.

    A centred kernel looks ``(kernel - 1) / 2`` positions each way, so
    contiguous layers need ``ceil(2 (n - 1) / (kernel - 1))`` of them; with
    dilations ``1, kernel, kernel^2, ...`` the reach after ``L`` layers is
    ``(kernel^L - 1) / 2`` each way. Returns ``(contiguous, dilated)``: the
    counts for kernels that see both sides, where :func:`layer_comparison`
    counts one-sided (causal) kernels.

    Raises
    ------
    ValueError
        ``n`` is not a positive integer, or ``kernel`` is not an odd integer of at least 3 (a centred kernel needs
        a middle position). The message names the argument.

    Examples
    --------
    >>> centred_convolution_layers(50)
    (49, 5)
    >>> centred_convolution_layers(4096), centred_convolution_layers(3)
    ((4095, 9), (2, 2))
    >>> centred_convolution_layers(10, kernel=4)
    Traceback (most recent call last):
    ...
    ValueError: kernel must be an odd integer of at least 3 for a centred convolution; got 4
    """
    n = as_positive_int("n", n)
    kernel = as_positive_int("kernel", kernel)
    if kernel < 3 or kernel % 2 == 0:
        raise ValueError(f"kernel must be an odd integer of at least 3 for a centred convolution; got {kernel}")
    half = (kernel - 1) // 2
    contiguous = -(-(n - 1) // half)  # ceil((n - 1) / half) without floats, for any n
    dilated = 0
    while (kernel**dilated - 1) // 2 < n - 1:  # dilations 1, kernel, kernel^2, ...
        dilated += 1
    return contiguous, dilated

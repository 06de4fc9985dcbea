"""Heads of multi-head attention: column blocks, concatenation, parameter count.

:func:`attnlib.core.multi_head_attention` keeps all heads packed in one
``(d_model, d_model)`` matrix per projection, in the layout of
``torch.nn.MultiheadAttention``: head ``r`` owns the columns
``r*d_head:(r+1)*d_head``. The functions here make that layout visible
(:func:`split_heads`, :func:`concat_heads`) and derive the parameter count of
the block symbolically (:func:`symbolic_parameter_count`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from ._lazy import lazy_module
from ._validate import as_array, as_flag, as_int, as_matrix, as_positive_int
from .core import head_width

if TYPE_CHECKING:  # type checkers and editors see sympy itself
    import sympy as sp
else:  # imported on first use (attnlib/_lazy.py), so that ``import attnlib`` stays light
    sp = lazy_module("sympy")

__all__ = ["ParameterCount", "concat_heads", "head_dim", "split_heads", "symbolic_parameter_count"]


def head_dim(d_model: int, n_heads: int) -> int:
    """Width ``d_head = d_model / n_heads`` of one head; ``n_heads`` must divide ``d_model``.

    Raises
    ------
    ValueError
        ``d_model`` or ``n_heads`` is not a positive integer (or ``n_heads`` does not divide ``d_model``). The message
        names the argument.

    Examples
    --------
    >>> head_dim(512, 8)
    64
    >>> head_dim(2, 2)
    1
    """
    return head_width(d_model, n_heads)


def split_heads(M: Any, n_heads: int) -> np.ndarray:
    """Cut the columns of ``M`` into ``n_heads`` equal, consecutive blocks.

    Works for a projected sequence (``Q = X W_Q``, shape ``(n, d_model)``) and
    for a packed weight matrix (``W_Q``, shape ``(d_model, d_model)``) alike:
    block ``r`` is ``M[:, r*d_head:(r+1)*d_head]``, the part head ``r`` uses.

    Returns
    -------
    ``(n_heads, rows, d_head)`` array (a copy).

    Raises
    ------
    ValueError
        ``M`` is not finite real numbers of the expected shape; ``n_heads`` is not a positive integer. The message names
        the argument.

    Examples
    --------
    >>> Q = np.arange(8.0).reshape(2, 4)
    >>> split_heads(Q, 2).tolist()
    [[[0.0, 1.0], [4.0, 5.0]], [[2.0, 3.0], [6.0, 7.0]]]
    """
    m = as_matrix("M", M)
    n_heads = as_positive_int("n_heads", n_heads)
    d_head = head_dim(m.shape[1], n_heads)
    return np.stack([m[:, r * d_head : (r + 1) * d_head] for r in range(n_heads)])


def concat_heads(heads: Any) -> np.ndarray:
    """Place the heads side by side again: the inverse of :func:`split_heads`.

    ``heads`` has shape ``(n_heads, rows, d_head)``; the result is
    ``(rows, n_heads * d_head)`` with head ``r`` in columns
    ``r*d_head:(r+1)*d_head``, which is ``concat(head_1, ..., head_h)``.

    Raises
    ------
    ValueError
        ``heads`` is not a 3-d array ``(n_heads, n, d_head)`` of finite real numbers. The message names the argument.

    Examples
    --------
    >>> Q = np.arange(8.0).reshape(2, 4)
    >>> bool((concat_heads(split_heads(Q, 2)) == Q).all())
    True
    """
    h = as_array("heads", heads, 3)
    return np.concatenate(list(h), axis=1)


@dataclass(frozen=True)
class ParameterCount:
    """The steps of the parameter-count derivation, as sympy expressions.

    Attributes
    ----------
    d_model, h:
        The positive integer symbols used (``h`` prints as ``H``, the book's
        symbol for the number of heads).
    d_head:
        ``d_model / H``, the width of one head.
    per_head:
        Entries of ``W_Q^(u)``, ``W_K^(u)`` and ``W_V^(u)`` for one head ``u``:
        ``3 * d_model * d_head``.
    all_heads:
        ``H * per_head``, before simplification.
    output:
        Entries of ``W_O``: ``(H * d_head) * d_model``.
    bias:
        Bias entries (0 when counted without bias).
    total:
        The expanded sum; ``H`` cancels and ``4*d_model**2`` remains.
    """

    d_model: sp.Symbol
    h: sp.Symbol
    d_head: sp.Expr
    per_head: sp.Expr
    all_heads: sp.Expr
    output: sp.Expr
    bias: sp.Expr
    total: sp.Expr

    def evaluate(self, d_model: int, n_heads: int) -> int:
        """The total for concrete sizes; ``n_heads`` must divide ``d_model``.

        Raises
        ------
        ValueError
            ``d_model`` or ``n_heads`` is not a positive integer (or ``n_heads`` does not divide ``d_model``). The
            message names the argument.

        Examples
        --------
        >>> symbolic_parameter_count().evaluate(512, 8)
        1048576
        """
        head_dim(d_model, n_heads)
        d_model, n_heads = as_int("d_model", d_model), as_int("n_heads", n_heads)
        return int(self.total.subs({self.d_model: sp.Integer(d_model), self.h: sp.Integer(n_heads)}))


def symbolic_parameter_count(bias: bool = False) -> ParameterCount:
    """Derive the parameter count of a multi-head attention block with sympy.

    Each of the ``H`` heads has three ``d_model x d_head`` projections
    (query, key, value) with ``d_head = d_model / H``; the output projection
    ``W_O`` maps the ``H * d_head``-wide concatenation back to ``d_model``.
    With ``bias=True`` every projection also gets one bias per output column.

    Raises
    ------
    ValueError
        ``bias`` is not ``True`` or ``False``. The message names the argument.

    Examples
    --------
    >>> c = symbolic_parameter_count()
    >>> c.per_head, c.total
    (3*d_model**2/H, 4*d_model**2)
    >>> symbolic_parameter_count(bias=True).total
    4*d_model**2 + 4*d_model
    """
    bias = as_flag("bias", bias)
    d_model, h = sp.symbols("d_model H", positive=True, integer=True)  # H: the book's number of heads
    d_head = d_model / h
    per_head = 3 * d_model * d_head
    all_heads = sp.Mul(h, per_head, evaluate=False)
    output = (h * d_head) * d_model
    bias_count = (h * 3 * d_head + d_model) if bias else sp.Integer(0)
    total = sp.expand(all_heads + output + bias_count)
    return ParameterCount(d_model, h, d_head, per_head, all_heads, output, sp.expand(bias_count), total)

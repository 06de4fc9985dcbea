"""Sinusoidal positional encodings (Vaswani et al., 2017) and why they are needed.

Self-attention without positions is permutation equivariant
(:func:`permutation_matrix` reorders tokens). The sinusoidal table
(:func:`sinusoidal_encoding`) gives every position a signature, and a fixed
offset ``k`` acts on it as one linear map (:func:`offset_rotation`), which
:func:`symbolic_offset_rotation` proves with sympy.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from ._lazy import lazy_module
from ._memory import check_size
from ._validate import as_int, as_positive_int, as_real, to_ndarray

if TYPE_CHECKING:  # type checkers and editors see sympy itself
    import sympy
else:  # imported on first use (attnlib/_lazy.py), so that ``import attnlib`` stays light
    sympy = lazy_module("sympy")

__all__ = [
    "OffsetRotationProof",
    "offset_rotation",
    "pair_rotation",
    "permutation_matrix",
    "positional_frequencies",
    "sinusoidal_encoding",
    "symbolic_offset_rotation",
]


def positional_frequencies(d_model: int) -> np.ndarray:
    """Angular frequency ``1 / 10000^(2p/d_model)`` of each sine/cosine pair ``p``.

    There are ``ceil(d_model / 2)`` pairs; with an odd ``d_model`` the last
    pair has only its sine column.

    Raises
    ------
    ValueError
        ``d_model`` is not a positive integer. The message names the argument.

    Examples
    --------
    >>> positional_frequencies(4).tolist()
    [1.0, 0.01]
    """
    d_model = as_positive_int("d_model", d_model)
    check_size(f"positional_frequencies(d_model={d_model})", (d_model + 1) // 2)
    i = np.arange((d_model + 1) // 2)
    return 1.0 / 10000.0 ** (2 * i / d_model)


def sinusoidal_encoding(n_positions: int, d_model: int) -> np.ndarray:
    """The ``(n_positions, d_model)`` table ``PE``.

    ``PE[t, 2p] = sin(t / 10000^(2p/d_model))`` and
    ``PE[t, 2p+1] = cos(t / 10000^(2p/d_model))``, for positions
    ``t = 0 .. n_positions-1``. An odd ``d_model`` works: its last column
    is a sine.

    Raises
    ------
    ValueError
        ``n_positions`` or ``d_model`` is not a positive integer. The message names the argument.

    Examples
    --------
    >>> sinusoidal_encoding(3, 2).round(4).tolist()
    [[0.0, 1.0], [0.8415, 0.5403], [0.9093, -0.4161]]
    >>> sinusoidal_encoding(1, 3).shape
    (1, 3)
    """
    n_positions = as_positive_int("n_positions", n_positions)
    d_model = as_positive_int("d_model", d_model)
    check_size(f"sinusoidal_encoding(n_positions={n_positions}, d_model={d_model}), a float64 table,", n_positions * d_model)
    angles = np.arange(n_positions)[:, None] * positional_frequencies(d_model)[None, :]
    pe = np.empty((n_positions, d_model))
    pe[:, 0::2] = np.sin(angles)
    pe[:, 1::2] = np.cos(angles[:, : d_model // 2])
    return pe



def permutation_matrix(order: Sequence[int]) -> np.ndarray:
    """The ``(n, n)`` matrix ``P`` with ``(P X)[i] = X[order[i]]``.

    Multiplying a token matrix from the left by ``P`` reorders its rows:
    row ``i`` of ``P X`` is row ``order[i]`` of ``X``.

    Parameters
    ----------
    order:
        Each of ``0 .. n-1`` exactly once.

    Raises
    ------
    ValueError
        ``order`` is not a permutation of ``0 .. n-1``. The message names the argument.

    Examples
    --------
    >>> P = permutation_matrix([2, 1, 0])
    >>> P.astype(int).tolist()
    [[0, 0, 1], [0, 1, 0], [1, 0, 0]]
    >>> (P @ np.array([[1.0], [2.0], [3.0]])).ravel().tolist()
    [3.0, 2.0, 1.0]
    """
    arr = to_ndarray("order", order)
    if arr.ndim != 1 or arr.size == 0:
        raise ValueError(f"order must be a non-empty 1-d sequence of indices; got shape {arr.shape}")
    if not np.issubdtype(arr.dtype, np.integer):
        raise ValueError(f"order must hold integers 0 .. n-1; got dtype {arr.dtype}")
    n = arr.size
    if sorted(arr.tolist()) != list(range(n)):
        raise ValueError(f"order must contain each of 0 .. {n - 1} exactly once; got {arr.tolist()}")
    P = np.zeros((n, n))
    P[np.arange(n), arr] = 1.0
    return P


def pair_rotation(angle: float) -> np.ndarray:
    """The 2x2 rotation ``R`` with ``[sin(a + angle), cos(a + angle)] = [sin a, cos a] R^T`` for every ``a``.

    It is ``[[cos angle, sin angle], [-sin angle, cos angle]]``, whose entries
    depend on ``angle`` only. The pair is a row, as every token is in the
    book, so ``R`` acts through its transpose from the right.

    Raises
    ------
    ValueError
        ``angle`` is not a finite real number. The message names the argument.

    Examples
    --------
    >>> R = pair_rotation(1.0)
    >>> ([np.sin(2.0), np.cos(2.0)] @ R.T).round(4).tolist() == [round(np.sin(3.0), 4), round(np.cos(3.0), 4)]
    True
    """
    try:
        a = as_real("angle", angle)
    except ValueError:
        raise ValueError(f"angle must be a finite real number (not a string or a bool); got {angle!r}") from None
    if not math.isfinite(a):
        raise ValueError(f"angle must be a finite number; got {angle!r}")
    c, s = math.cos(a), math.sin(a)
    return np.array([[c, s], [-s, c]])


def offset_rotation(k: int, d_model: int) -> np.ndarray:
    """The ``(d_model, d_model)`` linear map ``M_k`` with ``PE(t + k) = PE(t) M_k^T`` for every ``t``.

    ``M_k`` is block diagonal: the block for sine/cosine pair ``i`` is
    :func:`pair_rotation` of ``w_i k``, where ``w_i`` is that pair's
    frequency. It depends on the offset ``k`` and not on the position ``t``.
    ``PE(t)`` is a row, as every token is in the book, so for the table
    ``PE`` of :func:`sinusoidal_encoding` this reads ``PE[t + k] = PE[t] @ M_k.T``
    (chapter 11 writes ``M_k`` as ``R_Delta``).

    Parameters
    ----------
    k:
        The offset in positions (any integer, negative and zero included).
    d_model:
        An even width: with an odd width the last column is a lone sine,
        and ``sin(w (t + k))`` is not a linear function of ``sin(w t)`` alone.

    Raises
    ------
    ValueError
        ``k`` is not an integer; ``d_model`` is not a positive even integer. The message names the argument.

    Examples
    --------
    >>> pe = sinusoidal_encoding(10, 4)
    >>> M = offset_rotation(3, 4)
    >>> bool(np.allclose(pe[3:], pe[:-3] @ M.T))
    True
    >>> bool(np.array_equal(offset_rotation(0, 6), np.eye(6)))
    True
    """
    k = as_int("k", k)
    d_model = as_positive_int("d_model", d_model)
    if abs(k) > 2**53:
        raise ValueError(f"k={k} is too large: beyond 2**53 the angle w*k cannot be represented exactly in float64")
    if d_model % 2:
        raise ValueError(
            f"d_model must be even for an offset to be a linear map; got d_model={d_model}, "
            "whose last column is a sine without its cosine partner"
        )
    check_size(f"offset_rotation(k, d_model={d_model}), a d_model x d_model float64 matrix,", d_model * d_model)
    M = np.zeros((d_model, d_model))
    for i, w in enumerate(positional_frequencies(d_model)):
        M[2 * i : 2 * i + 2, 2 * i : 2 * i + 2] = pair_rotation(w * k)
    return M


@dataclass(frozen=True)
class OffsetRotationProof:
    """A symbolic check that shifting a sine/cosine pair is a fixed rotation.

    Attributes
    ----------
    t, k, w:
        Sympy symbols: position, offset, frequency of the pair.
    pair:
        ``[sin(w t), cos(w t)]`` as a row (a ``1 x 2`` matrix), as the book writes tokens.
    shifted:
        ``[sin(w (t + k)), cos(w (t + k))]``, written out with the
        angle-addition identities.
    rotation:
        ``R(w k) = [[cos(w k), sin(w k)], [-sin(w k), cos(w k)]]``.
    difference:
        ``shifted - pair * rotation^T`` after simplification.
    holds:
        ``True`` when ``difference`` is the zero matrix.
    rotation_depends_on_t:
        Whether ``t`` appears in ``rotation`` (it does not).
    rotation_is_orthogonal:
        Whether ``R^T R`` simplifies to the identity.
    """

    t: sympy.Symbol
    k: sympy.Symbol
    w: sympy.Symbol
    pair: sympy.Matrix
    shifted: sympy.Matrix
    rotation: sympy.Matrix
    difference: sympy.Matrix
    holds: bool
    rotation_depends_on_t: bool
    rotation_is_orthogonal: bool


def symbolic_offset_rotation() -> OffsetRotationProof:
    """Prove with sympy that ``[sin w(t+k), cos w(t+k)] = [sin wt, cos wt] R(w k)^T`` for rows.

    The shifted pair is expanded with the angle-addition identities
    (``sympy.expand_trig``), the product ``[sin wt, cos wt] R(w k)^T`` is
    subtracted, and the difference simplifies to zero for all symbols
    ``t``, ``k`` and ``w``. Since ``R`` contains no ``t``, one matrix moves
    every position forward by ``k``. The offset symbol prints as ``Delta``
    (the book writes the offset as Delta, keeping ``k`` for keys).

    Examples
    --------
    >>> proof = symbolic_offset_rotation()
    >>> proof.holds, proof.rotation_depends_on_t, proof.rotation_is_orthogonal
    (True, False, True)
    >>> proof.difference.tolist()
    [[0, 0]]
    """
    t, k, w = sympy.symbols("t Delta omega", real=True)  # the offset prints as the book's Delta
    pair = sympy.Matrix([[sympy.sin(w * t), sympy.cos(w * t)]])  # a row, like every token in the book
    shifted = sympy.Matrix([[sympy.sin(w * (t + k)), sympy.cos(w * (t + k))]]).applyfunc(
        lambda e: sympy.expand_trig(sympy.expand(e))
    )
    rotation = sympy.Matrix([[sympy.cos(w * k), sympy.sin(w * k)], [-sympy.sin(w * k), sympy.cos(w * k)]])
    difference = (shifted - pair * rotation.T).applyfunc(sympy.simplify)
    orthogonal = (rotation.T * rotation).applyfunc(sympy.simplify) == sympy.eye(2)
    return OffsetRotationProof(
        t=t,
        k=k,
        w=w,
        pair=pair,
        shifted=shifted,
        rotation=rotation,
        difference=difference,
        holds=difference.is_zero_matrix is True,
        rotation_depends_on_t=t in rotation.free_symbols,
        rotation_is_orthogonal=bool(orthogonal),
    )

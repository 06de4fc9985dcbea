"""Compatibility functions: additive against dot-product scores, their cost, and the bilinear view.

Chapter 2 of the book asks why the Transformer scores a query against a key
with a dot product instead of Bahdanau's small feed-forward network. This
module holds the numbers behind that argument:

* :func:`random_additive_parameters` gives fixed, seeded parameters for
  :func:`attnlib.additive_scores`;
* :func:`tanh_evaluation_count`, :func:`matmul_multiply_count` and
  :func:`pairwise_score_cost` count the work of the two score functions;
* :func:`bilinear_scores` and :func:`bilinear_matrix` evaluate the bilinear
  score ``x_i A x_j^T`` with ``A = W_Q W_K^T``;
* :func:`bilinear_parameter_counts` compares the ``d_model**2`` entries of
  ``A`` with the ``2 d_model d_k`` entries of its two factors;
* :func:`symbolic_bilinear_regrouping` proves with sympy, entry by entry,
  that ``x_i (W_Q W_K^T) x_j^T = (x_i W_Q)(x_j W_K)^T``;
* :func:`value_contributions` splits an attention output into the terms
  ``A_ij v_j`` that chapter 4 sums.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from ._lazy import lazy_module
from ._memory import check_size
from ._validate import as_matrix, as_positive_int, as_seed, finite_result, quiet

if TYPE_CHECKING:  # type checkers and editors see sympy itself
    import sympy as sp
else:  # imported on first use (attnlib/_lazy.py), so that ``import attnlib`` stays light
    sp = lazy_module("sympy")

__all__ = [
    "BilinearParameterCounts",
    "BilinearProof",
    "PairwiseCost",
    "bilinear_matrix",
    "bilinear_parameter_counts",
    "bilinear_scores",
    "matmul_multiply_count",
    "pairwise_score_cost",
    "random_additive_parameters",
    "symbolic_bilinear_regrouping",
    "tanh_evaluation_count",
    "value_contributions",
]

#: Largest size accepted by :func:`symbolic_bilinear_regrouping` (the expansion grows like d_model^2 * d_k).
MAX_SYMBOLIC_SIZE = 12


def random_additive_parameters(d_s: int, d_h: int, d_a: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Seeded standard-normal parameters ``(W_a, U_a, v_a)`` for Bahdanau's additive score.

    Shapes follow the paper (column vectors): ``W_a`` is ``(d_a, d_s)``,
    ``U_a`` is ``(d_a, d_h)`` and ``v_a`` is ``(d_a,)``. They are drawn in
    that order from ``numpy.random.default_rng(seed)``, so the same seed
    always gives the same numbers. ``seed`` is a non-negative integer: an
    int, a numpy integer or an integral float such as ``3.0``.

    Raises
    ------
    ValueError
        ``d_s``, ``d_h`` or ``d_a`` is not a positive integer; ``seed`` is not a seed by the seed rule (a non-negative
        integer or a ``numpy.random.Generator``). The message names the argument.

    Examples
    --------
    >>> W_a, U_a, v_a = random_additive_parameters(2, 2, 3, seed=0)
    >>> W_a.shape, U_a.shape, v_a.shape
    ((3, 2), (3, 2), (3,))
    >>> bool(np.array_equal(W_a, random_additive_parameters(2, 2, 3, seed=0)[0]))
    True
    """
    d_s = as_positive_int("d_s", d_s)
    d_h = as_positive_int("d_h", d_h)
    d_a = as_positive_int("d_a", d_a)
    seed = as_seed("seed", seed)
    check_size(f"random_additive_parameters(d_s={d_s}, d_h={d_h}, d_a={d_a})", d_a * (d_s + d_h + 1))
    rng = np.random.default_rng(seed)
    W_a = rng.standard_normal((d_a, d_s))
    U_a = rng.standard_normal((d_a, d_h))
    v_a = rng.standard_normal(d_a)
    return W_a, U_a, v_a


def tanh_evaluation_count(n_q: int, n_k: int, d_a: int) -> int:
    """How many ``tanh`` evaluations the additive score needs for all pairs.

    Every (query, key) pair gets its own hidden vector
    ``tanh(W_a s_i + U_a h_j)`` of ``d_a`` entries, so the count is
    ``n_q * n_k * d_a``.

    Raises
    ------
    ValueError
        ``n_q``, ``n_k`` or ``d_a`` is not a positive integer. The message names the argument.

    Examples
    --------
    >>> tanh_evaluation_count(3, 3, 2)
    18
    >>> tanh_evaluation_count(1024, 1024, 64)
    67108864
    """
    return as_positive_int("n_q", n_q) * as_positive_int("n_k", n_k) * as_positive_int("d_a", d_a)


def matmul_multiply_count(n_rows: int, n_inner: int, n_cols: int) -> int:
    """Scalar multiplications in the product of an ``(n_rows, n_inner)`` and an ``(n_inner, n_cols)`` matrix.

    Each of the ``n_rows * n_cols`` result entries is a dot product of
    length ``n_inner`` (schoolbook multiplication, the way GPU kernels do it).

    Raises
    ------
    ValueError
        ``n_rows``, ``n_inner`` or ``n_cols`` is not a positive integer. The message names the argument.

    Examples
    --------
    >>> matmul_multiply_count(3, 2, 3)      # Q K^T for the running example
    18
    >>> matmul_multiply_count(1024, 64, 1024)
    67108864
    """
    return as_positive_int("n_rows", n_rows) * as_positive_int("n_inner", n_inner) * as_positive_int("n_cols", n_cols)


@dataclass(frozen=True)
class PairwiseCost:
    """Work done *after* the per-token projections to score every (query, key) pair.

    Attributes
    ----------
    kind:
        ``"additive"`` or ``"dot"``.
    matrix_products:
        How many matrix products the pair stage is (0 if it is not one).
    multiplications:
        Scalar multiplications in the pair stage.
    tanh_evaluations:
        Non-linear function evaluations in the pair stage.
    intermediate_floats:
        Numbers that must be held between steps of the pair stage, besides
        the ``n_q * n_k`` scores themselves.
    additions:
        Scalar additions in the pair stage: for the additive score the
        ``d_a`` sums ``W_a s_i + U_a h_j`` of every pair plus the ``d_a - 1``
        additions of its dot product with ``v_a``; for the dot product the
        ``d_k - 1`` additions of each of the ``n_q * n_k`` dot products.
    """

    kind: str
    matrix_products: int
    multiplications: int
    tanh_evaluations: int
    intermediate_floats: int
    additions: int


def pairwise_score_cost(kind: str, n_q: int, n_k: int, d: int) -> PairwiseCost:
    """Count the pair-stage work of the additive (``d = d_a``) or dot-product (``d = d_k``) score.

    Both score functions first project every token once (``W_a s_i`` and
    ``U_a h_j``, or ``q_i = x_i W_Q`` and ``k_j = x_j W_K``); that part is the
    same kind of work for both and is not counted here. What differs is how
    the pairs are combined:

    * additive: for each pair, add two ``d_a``-vectors, apply ``tanh`` to each
      of the ``d_a`` entries, and dot the result with ``v_a``. The
      ``n_q * n_k * d_a`` hidden values must all be formed; no single matrix
      product does this, because ``tanh`` sits between the sum and the
      reduction with ``v_a``.
    * dot: ``Q K^T`` is one matrix product with ``n_q * n_k * d_k``
      multiplications and no non-linearity and no intermediate tensor.

    The multiplication counts are equal when ``d_a = d_k``, and both stages
    grow like ``n_q * n_k * d``. The additive score does more arithmetic on
    top of that: ``n_q * n_k * d_a`` ``tanh`` evaluations and as many extra
    additions (the sums inside the ``tanh``). Its larger cost lies less in
    that arithmetic than in its *kind*: a 3-d tensor of ``tanh`` values
    instead of one dense matrix product, which accelerators are built for.

    Raises
    ------
    ValueError
        ``kind`` is not one of the values it may take; ``n_q``, ``n_k`` or ``d`` is not a positive integer. The message
        names the argument.

    Examples
    --------
    >>> pairwise_score_cost("additive", 3, 3, 2)
    PairwiseCost(kind='additive', matrix_products=0, multiplications=18, tanh_evaluations=18, intermediate_floats=18, additions=27)
    >>> pairwise_score_cost("dot", 3, 3, 2)
    PairwiseCost(kind='dot', matrix_products=1, multiplications=18, tanh_evaluations=0, intermediate_floats=0, additions=9)
    """
    if not isinstance(kind, str) or kind not in ("additive", "dot"):
        raise ValueError(f"kind must be 'additive' or 'dot'; got {kind!r}")
    n_q = as_positive_int("n_q", n_q)
    n_k = as_positive_int("n_k", n_k)
    d = as_positive_int("d", d)
    if kind == "additive":
        hidden = tanh_evaluation_count(n_q, n_k, d)
        # d_a sums inside the tanh per pair, then d_a - 1 in the reduction with v_a
        return PairwiseCost("additive", 0, hidden, hidden, hidden, n_q * n_k * (2 * d - 1))
    return PairwiseCost("dot", 1, matmul_multiply_count(n_q, d, n_k), 0, 0, n_q * n_k * (d - 1))


def bilinear_matrix(W_Q: Any, W_K: Any) -> np.ndarray:
    """The matrix ``A = W_Q W_K^T`` of the bilinear score ``x_i A x_j^T``.

    ``W_Q`` and ``W_K`` are ``(d_model, d_k)``; ``A`` is ``(d_model, d_model)``
    and has rank at most ``d_k``.

    Raises
    ------
    ValueError
        ``W_Q`` or ``W_K`` is not finite real numbers of the expected shape; or a result would overflow float64 (the
        error names the inputs it came from). The message names the argument.

    Examples
    --------
    >>> bilinear_matrix([[1.0], [2.0]], [[3.0], [1.0]]).tolist()
    [[3.0, 1.0], [6.0, 2.0]]
    """
    wq = as_matrix("W_Q", W_Q)
    wk = as_matrix("W_K", W_K)
    if wq.shape != wk.shape:
        raise ValueError(f"W_Q and W_K must have the same shape (d_model, d_k); got W_Q {wq.shape} and W_K {wk.shape}")
    with quiet():
        return finite_result(wq @ wk.T, "A = W_Q W_K^T", "W_Q and W_K")


def bilinear_scores(X: Any, A: Any, Y: Any = None) -> np.ndarray:
    """All bilinear scores ``e_ij = x_i A y_j^T`` (rows of ``X`` against rows of ``Y``; ``Y`` defaults to ``X``).

    Raises
    ------
    ValueError
        ``X``, ``A`` or ``Y`` is not finite real numbers of the expected shape; or a result would overflow float64 (the
        error names the inputs it came from). The message names the argument.

    Examples
    --------
    >>> from attnlib import running_example
    >>> bilinear_scores(running_example(), np.eye(2)).tolist()
    [[1.0, 0.0, 0.5], [0.0, 1.0, 0.5], [0.5, 0.5, 0.5]]
    """
    x = as_matrix("X", X)
    a = as_matrix("A", A)
    y = x if Y is None else as_matrix("Y", Y)
    if a.shape != (x.shape[1], y.shape[1]):
        raise ValueError(
            f"A must be (d of X, d of Y) = {(x.shape[1], y.shape[1])} for X {x.shape} and Y {y.shape}; got A {a.shape}"
        )
    with quiet():
        xa = finite_result(x @ a, "X A", "X and A")
        return finite_result(xa @ y.T, "X A Y^T", "X, A and Y" if Y is not None else "X and A")


@dataclass(frozen=True)
class BilinearProof:
    """The symbolic objects of :func:`symbolic_bilinear_regrouping`.

    Attributes
    ----------
    x_i, x_j:
        ``1 x d_model`` row vectors of symbols.
    W_Q, W_K:
        ``d_model x d_k`` matrices of symbols.
    bilinear:
        ``x_i (W_Q W_K^T) x_j^T``, expanded (a scalar expression).
    regrouped:
        ``(x_i W_Q)(x_j W_K)^T``, expanded.
    difference:
        ``bilinear - regrouped`` after expansion; ``0`` when the identity holds.
    holds:
        ``True`` exactly when ``difference`` is identically zero.
    """

    x_i: sp.Matrix
    x_j: sp.Matrix
    W_Q: sp.Matrix
    W_K: sp.Matrix
    bilinear: sp.Expr
    regrouped: sp.Expr
    difference: sp.Expr
    holds: bool


@dataclass(frozen=True)
class BilinearParameterCounts:
    """Learned numbers of a full bilinear matrix ``A`` against its factors ``W_Q W_K^T``."""

    d_model: int
    d_k: int
    full: int
    factored: int

    @property
    def factoring_saves(self) -> bool:
        """True when the two factors hold fewer numbers than ``A`` (``2 d_k < d_model``)."""
        return self.factored < self.full


def bilinear_parameter_counts(d_model: int, d_k: int) -> BilinearParameterCounts:
    """Count ``A`` (``d_model x d_model``) against ``W_Q`` and ``W_K`` (each ``d_model x d_k``).

    The factors hold ``2 d_model d_k`` numbers, so they are the smaller
    choice only when ``d_k < d_model / 2``.

    Raises
    ------
    ValueError
        ``d_model`` or ``d_k`` is not a positive integer. The message names the argument.

    Examples
    --------
    >>> c = bilinear_parameter_counts(512, 300)
    >>> c.full, c.factored, c.factoring_saves
    (262144, 307200, False)
    >>> bilinear_parameter_counts(512, 64).factored
    65536
    """
    d_model = as_positive_int("d_model", d_model)
    d_k = as_positive_int("d_k", d_k)
    return BilinearParameterCounts(d_model, d_k, d_model * d_model, 2 * d_model * d_k)


def symbolic_bilinear_regrouping(d_model: int, d_k: int) -> BilinearProof:
    """Prove ``x_i (W_Q W_K^T) x_j^T = (x_i W_Q)(x_j W_K)^T`` for symbolic matrices of the given sizes.

    Every entry of ``x_i``, ``x_j``, ``W_Q`` and ``W_K`` is its own sympy
    symbol, so the identity is checked as a polynomial identity in all of
    them, not at sample numbers. Entry ``(r, r')`` of ``W_Q`` is named
    ``w^Q_rr'`` (shown as :math:`w^Q_{rr'}`, with the two indices as numbers:
    ``w^Q_11`` is row 1, column 1) and that of ``W_K`` ``w^K_rr'``, so that
    they are never mistaken for the query and key vectors ``q_i`` and
    ``k_j``; coordinate ``r`` of ``x_i`` is ``x_ir``. Sizes are limited to
    ``MAX_SYMBOLIC_SIZE`` to keep the expansion quick.

    Raises
    ------
    ValueError
        ``d_model`` or ``d_k`` is not a positive integer. The message names the argument.

    Examples
    --------
    >>> proof = symbolic_bilinear_regrouping(2, 1)
    >>> proof.difference, proof.holds
    (0, True)
    >>> proof.regrouped
    w^K_11*w^Q_11*x_i1*x_j1 + w^K_11*w^Q_21*x_i2*x_j1 + w^K_21*w^Q_11*x_i1*x_j2 + w^K_21*w^Q_21*x_i2*x_j2
    """
    d_model = as_positive_int("d_model", d_model)
    d_k = as_positive_int("d_k", d_k)
    for name, value in (("d_model", d_model), ("d_k", d_k)):
        if value > MAX_SYMBOLIC_SIZE:
            raise ValueError(f"{name}={value} is too large for a symbolic expansion; use at most {MAX_SYMBOLIC_SIZE}")
    sep = "" if max(d_model, d_k) < 10 else ","  # w^Q_11 is row 1, column 1; with two-digit sizes write w^Q_1,11

    def entry(prefix: str, r: int, c: int) -> sp.Symbol:
        return sp.Symbol(f"{prefix}_{r + 1}{sep}{c + 1}", real=True)

    x_i = sp.Matrix(1, d_model, lambda _, c: sp.Symbol(f"x_i{c + 1}", real=True))
    x_j = sp.Matrix(1, d_model, lambda _, c: sp.Symbol(f"x_j{c + 1}", real=True))
    W_Q = sp.Matrix(d_model, d_k, lambda r, c: entry("w^Q", r, c))
    W_K = sp.Matrix(d_model, d_k, lambda r, c: entry("w^K", r, c))
    A = W_Q * W_K.T
    bilinear = sp.expand((x_i * A * x_j.T)[0, 0])
    regrouped = sp.expand(((x_i * W_Q) * (x_j * W_K).T)[0, 0])
    difference = sp.expand(bilinear - regrouped)
    return BilinearProof(x_i, x_j, W_Q, W_K, bilinear, regrouped, difference, difference == 0)


def value_contributions(weights: Any, V: Any) -> np.ndarray:
    """The terms ``A_ij v_j`` whose sum over ``j`` is the attention output ``o_i``.

    Parameters
    ----------
    weights:
        Attention weights ``(n_q, n_k)``.
    V:
        Values ``(n_k, d_v)``.

    Returns
    -------
    ``(n_q, n_k, d_v)`` array; ``result[i, j]`` is ``A_ij * v_j`` and
    ``result.sum(axis=1)`` equals ``weights @ V``.

    Raises
    ------
    ValueError
        ``weights`` or ``V`` is not finite real numbers of the expected shape; or a result would overflow float64 (the
        error names the inputs it came from). The message names the argument.

    Examples
    --------
    >>> terms = value_contributions([[0.5, 0.5]], [[1.0, 0.0], [0.0, 1.0]])
    >>> terms[0].tolist(), terms.sum(axis=1).tolist()
    ([[0.5, 0.0], [0.0, 0.5]], [[0.5, 0.5]])
    """
    a = as_matrix("weights", weights)
    v = as_matrix("V", V)
    if a.shape[1] != v.shape[0]:
        raise ValueError(f"weights has {a.shape[1]} columns (keys) but V has {v.shape[0]} rows (weights is {a.shape}, V is {v.shape})")
    check_size(f"value_contributions of weights {a.shape} and V {v.shape}", a.shape[0] * a.shape[1] * v.shape[1])
    with quiet():
        return finite_result(a[:, :, None] * v[None, :, :], "the terms A_ij v_j", "weights and V")

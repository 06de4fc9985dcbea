"""Attention in exact arithmetic with sympy.

The numpy functions of :mod:`attnlib.core` give floating-point answers. The
functions here compute the same quantities symbolically, so that a weight of
the running example appears as the closed form

.. math:: A_{11} = \\frac{e^{1/\\sqrt{2}}}{1 + e^{1/\\sqrt{2}} + e^{1/(2\\sqrt{2})}}

and can be evaluated to as many digits as we like. Inputs may be Python or
numpy numbers, nested lists, numpy arrays or sympy matrices; floats are
converted to the rational number their decimal representation shows
(``0.5`` becomes ``1/2``). Masks follow the convention of the whole package:
boolean, ``True`` = may attend.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction
from typing import TYPE_CHECKING, Any

import numpy as np

from ._lazy import lazy_module
from ._validate import NO_SCALING, SQRT_D_K, as_mask, as_positive_int, as_scale, finite_result, to_ndarray

if TYPE_CHECKING:  # type checkers and editors see sympy itself
    import sympy as sp
else:  # imported on first use (attnlib/_lazy.py), so that ``import attnlib`` stays light
    sp = lazy_module("sympy")

__all__ = [
    "ExactAttention",
    "ExactGradients",
    "SoftmaxBackwardProof",
    "exact_attention",
    "exact_attention_gradients",
    "exact_matrix",
    "exact_number",
    "exact_softmax",
    "softmax_backward_proof",
    "to_float",
]


def exact_number(name: str, value: Any) -> sp.Expr:
    """Convert one number to an exact sympy expression.

    Integers stay integers, floats become the rational their decimal form
    shows (the shortest decimal that gives the float back in its own format:
    ``numpy.float32(0.1)`` is ``1/10``), sympy expressions pass through. NaN, infinities, booleans and
    strings raise :class:`ValueError` naming ``name``: no string is ever
    parsed or evaluated. Complex numbers (``sympy.I``) are refused too.

    Raises
    ------
    ValueError
        ``value`` is NaN, infinite, a boolean, a string, bytes, complex or not a number at all; the message names
        ``name``.

    Examples
    --------
    >>> exact_number("x", 0.5), exact_number("x", 3), exact_number("x", sp.sqrt(2))
    (1/2, 3, sqrt(2))
    """
    if isinstance(value, (bool, np.bool_, str, bytes)):
        raise ValueError(f"{name} must be a number; got {value!r}")
    if isinstance(value, (int, np.integer)):
        return sp.Integer(int(value))
    if isinstance(value, (float, np.floating)):
        if not math.isfinite(float(value)):
            raise ValueError(f"{name} must be finite; got {value!r}")
        # the decimal the float shows in its own format (float32's 0.1 is "0.1"); no string reaches sympy
        return sp.Rational(Fraction(np.format_float_positional(value, unique=True, trim="-")))
    if isinstance(value, sp.Expr):
        if value.has(sp.nan, sp.zoo, sp.oo, -sp.oo):
            raise ValueError(f"{name} must be finite; got {value}")
        if value.is_real is False:
            raise ValueError(f"{name} must be a real number; got the complex {value}")
        return value
    raise ValueError(f"{name} must be a number (int, float or sympy expression); got {type(value).__name__}: {value!r}")


def exact_matrix(name: str, value: Any) -> sp.Matrix:
    """Convert a 2-d array-like to a sympy ``Matrix`` of exact entries.

    Raises
    ------
    ValueError
        ``name`` is not a text; ``value`` is not a 2-d list, array or sympy ``Matrix`` of real numbers (NaN, infinities,
        booleans, strings and complex numbers are refused, naming ``name`` and the entry).

    Examples
    --------
    >>> exact_matrix("X", [[1, 0], [0.5, 0.5]])
    Matrix([
    [  1,   0],
    [1/2, 1/2]])
    """
    if isinstance(value, sp.MatrixBase):
        rows = value.tolist()
    else:
        to_ndarray(name, value)  # refuses ragged input, masked arrays and strings with a named error
        arr = np.asarray(value, dtype=object)  # keeps every entry as given, so bools and strings are refused below
        if arr.ndim != 2:
            raise ValueError(f"{name} must have 2 dimensions; got shape {arr.shape} with {arr.ndim}")
        rows = arr.tolist()
    if len(rows) == 0 or len(rows[0]) == 0:
        raise ValueError(f"{name} is empty")
    entries = [[exact_number(f"{name}[{i}, {j}]", v) for j, v in enumerate(row)] for i, row in enumerate(rows)]
    return sp.Matrix(entries)


def exact_softmax(values: Any, allowed: Any = None) -> tuple[list[sp.Expr], list[sp.Expr], sp.Expr]:
    """Exact softmax of one row of scores.

    Parameters
    ----------
    values:
        A sequence of exact (or convertible) numbers.
    allowed:
        Optional sequence of booleans of the same length; ``False`` entries
        get weight exactly 0 (and exponential 0).

    Returns
    -------
    weights, exponentials, normalizer:
        ``weights[j] = exponentials[j] / normalizer``.

    Raises
    ------
    ValueError
        ``values`` is not a non-empty list of exact (or convertible) real numbers; ``allowed`` is not ``None`` or a list
        of booleans of the same length that allows at least one entry. The message names the argument.

    Examples
    --------
    >>> w, e, Z = exact_softmax([1, 0])
    >>> w
    [E/(1 + E), 1/(1 + E)]
    >>> exact_softmax([1, 0], allowed=[False, True])[0]
    [0, 1]
    """
    vals = [exact_number(f"values[{j}]", v) for j, v in enumerate(_exact_row("values", values))]
    if not vals:
        raise ValueError("values is empty")
    if allowed is None:
        flags = [True] * len(vals)
    else:
        flags = _exact_row("allowed", allowed)
        bad = [j for j, a in enumerate(flags) if not isinstance(a, (bool, np.bool_))]
        if bad:
            raise ValueError(
                f"allowed must be a 1-d sequence of booleans (True = may attend); allowed[{bad[0]}] is {flags[bad[0]]!r}"
            )
        flags = [bool(a) for a in flags]
        if len(flags) != len(vals):
            raise ValueError(f"allowed has {len(flags)} entries but values has {len(vals)}")
        if not any(flags):
            raise ValueError("allowed is False everywhere: no entry may receive weight, so the softmax is undefined")
    exps = [sp.exp(v) if ok else sp.Integer(0) for v, ok in zip(vals, flags)]
    Z = sp.Add(*exps)
    return [e / Z for e in exps], exps, Z


def _exact_row(name: str, values: Any) -> list[Any]:
    """The entries of a 1-d sequence (list, tuple, 1-d array or 1-row/1-column sympy matrix)."""
    if isinstance(values, sp.MatrixBase):
        if 1 not in values.shape:
            raise ValueError(f"{name} must be 1-d (one row of scores); got a sympy matrix of shape {values.shape}")
        return list(values)
    if isinstance(values, (str, bytes, dict, set)) or not hasattr(values, "__len__"):
        raise ValueError(f"{name} must be a 1-d sequence; got {type(values).__name__}: {values!r}"[:200])
    arr = to_ndarray(name, values)
    if arr.ndim != 1:
        raise ValueError(f"{name} must be 1-d (one row); got shape {arr.shape} with {arr.ndim} dimensions")
    return list(values)


@dataclass(frozen=True)
class ExactAttention:
    """Every intermediate of one exact attention computation (sympy matrices).

    Attributes
    ----------
    Q, K, V:
        Queries, keys and values.
    scores:
        ``Q K^T``.
    divisor:
        What the scores are divided by (``sqrt(d_k)`` when scaling).
    scaled:
        ``scores / divisor``, with ``-oo`` where the mask forbids attending.
    exponentials:
        ``exp(scaled)`` entry by entry (0 where forbidden).
    normalizers:
        Column matrix of the row sums ``Z_i`` of ``exponentials``.
    weights:
        ``exponentials[i, j] / Z_i``.
    output:
        ``weights V``.
    mask:
        The boolean mask used, or ``None``.
    """

    Q: sp.Matrix
    K: sp.Matrix
    V: sp.Matrix
    scores: sp.Matrix
    divisor: sp.Expr
    scaled: sp.Matrix
    exponentials: sp.Matrix
    normalizers: sp.Matrix
    weights: sp.Matrix
    output: sp.Matrix
    mask: np.ndarray | None


def _exact_positive(name: str, value: Any) -> sp.Expr:
    number = exact_number(name, value)
    if not (number.is_number and number.is_positive):
        raise ValueError(f"{name} must be positive; got {value!r}")
    return number


def _exact_divisor(d_k: int, scale: Any) -> sp.Expr:
    """The exact divisor for ``scale`` in attnlib's one vocabulary (a positive number may be a sympy expression)."""
    scale = as_scale("scale", scale, _exact_positive)
    if scale is SQRT_D_K:
        return sp.sqrt(d_k)
    if scale is NO_SCALING:
        return sp.Integer(1)
    return scale


def _exact_project(x: sp.Matrix, W: Any, w_name: str) -> sp.Matrix:
    if W is None:
        return x
    w = exact_matrix(w_name, W)
    if x.shape[1] != w.shape[0]:
        raise ValueError(f"X has d_model={x.shape[1]} but {w_name} has {w.shape[0]} rows (X is {x.shape}, {w_name} is {w.shape})")
    return x * w


def exact_attention(
    X: Any,
    W_Q: Any = None,
    W_K: Any = None,
    W_V: Any = None,
    mask: Any = None,
    scale: Any = SQRT_D_K,
) -> ExactAttention:
    """Exact self-attention ``softmax(X W_Q (X W_K)^T / sqrt(d_k)) X W_V`` with sympy.

    Parameters
    ----------
    X:
        Tokens as rows, ``(n, d_model)``; floats are read as the decimals
        they show (``0.5`` is ``1/2``).
    W_Q, W_K, W_V:
        Projection matrices; ``None`` means the identity (no projection).
    mask:
        Any form of attnlib's one mask grammar: ``None``, :data:`attnlib.CAUSAL <attnlib.core.CAUSAL>`,
        a function ``allowed(i, j)``, a boolean ``(n, n)`` matrix (``True`` = may
        attend) or an additive 0 / ``-inf`` one.
    scale:
        :data:`attnlib.SQRT_D_K <attnlib.core.SQRT_D_K>` divides by ``sqrt(d_k)``,
        :data:`attnlib.NO_SCALING <attnlib.core.NO_SCALING>` does not scale, a positive
        number (a sympy expression too) divides by that number.

    Raises
    ------
    ValueError
        ``X``, ``W_Q``, ``W_K`` or ``W_V`` is not finite real numbers of the expected shape; ``mask`` is not a mask
        (``None``, ``attnlib.CAUSAL``, a function ``allowed(i, j)``, a boolean or an additive matrix of the scores'
        shape) or leaves a query row with no key; ``scale`` is not ``attnlib.SQRT_D_K``, ``attnlib.NO_SCALING`` or a
        positive number. The message names the argument.

    Examples
    --------
    >>> r = exact_attention([[1, 0], [0, 1], [0.5, 0.5]])
    >>> r.scaled.row(0)
    Matrix([[sqrt(2)/2, 0, sqrt(2)/4]])
    >>> r.weights[0, 0]
    exp(sqrt(2)/2)/(1 + exp(sqrt(2)/4) + exp(sqrt(2)/2))
    >>> [round(float(w), 4) for w in r.weights.row(2)]
    [0.3333, 0.3333, 0.3333]
    """
    x = exact_matrix("X", X)
    q = _exact_project(x, W_Q, "W_Q")
    k = _exact_project(x, W_K, "W_K")
    v = _exact_project(x, W_V, "W_V")
    if q.shape[1] != k.shape[1]:
        raise ValueError(f"W_Q gives d_k={q.shape[1]} but W_K gives d_k={k.shape[1]}; queries and keys must have the same width")
    n = x.shape[0]
    divisor = _exact_divisor(q.shape[1], scale)
    scores = q * k.T
    allowed = as_mask("mask", mask, (n, n))
    scaled = sp.zeros(n, n)
    exps = sp.zeros(n, n)
    weights = sp.zeros(n, n)
    Z = sp.zeros(n, 1)
    for i in range(n):
        flags = [True] * n if allowed is None else allowed[i].tolist()
        row = [scores[i, j] / divisor for j in range(n)]
        w, e, z = exact_softmax(row, flags)
        for j in range(n):
            scaled[i, j] = row[j] if flags[j] else -sp.oo
            exps[i, j] = e[j]
            weights[i, j] = w[j]
        Z[i, 0] = z
    return ExactAttention(q, k, v, scores, divisor, scaled, exps, Z, weights, weights * v, allowed)


def _entry_to_float(name: str, e: Any, digits: int) -> float:
    if isinstance(e, (bool, np.bool_)) or not isinstance(e, (sp.Expr, int, float, np.integer, np.floating)):
        raise ValueError(
            f"{name} must be a sympy expression or a real number; got {type(e).__name__}: {e!r}"[:200]
            + " (strings are never parsed)"
        )
    if isinstance(e, sp.Expr):
        if e == -sp.oo:
            return -math.inf
        if e.has(sp.nan, sp.zoo, sp.oo) or e.free_symbols:
            raise ValueError(f"{name} = {e} has no finite real value (NaN, infinite or with free symbols)")
        value = e.evalf(digits)
        if not value.is_real:
            raise ValueError(f"{name} = {e} is not a real number")
        try:
            result = float(value)
        except OverflowError:
            result = math.inf
    else:
        try:
            result = float(e)
        except OverflowError:
            result = math.inf
    if math.isnan(result):
        raise ValueError(f"{name} is NaN")
    return float(finite_result(np.float64(result), name, name))


def to_float(M: Any, digits: int = 30) -> np.ndarray:
    """Evaluate a sympy matrix (or expression, or number) to a float64 numpy array.

    ``-oo`` entries (masked scores) become ``-inf``. Strings are refused,
    never parsed; so are NaN, ``+oo``, complex values, free symbols and values
    beyond float64 (which raise a :class:`ValueError` saying they overflowed).

    Raises
    ------
    ValueError
        ``M`` is not a sympy expression, matrix or real number (a string is never parsed), or an entry has no finite
        real value (``-oo`` becomes ``-inf``); ``digits`` is not an integer from 1 to 1000. The message names the
        argument.

    Examples
    --------
    >>> to_float(sp.Matrix([[sp.sqrt(2), -sp.oo]])).round(4).tolist()
    [[1.4142, -inf]]
    >>> to_float("1 + 1")
    Traceback (most recent call last):
    ...
    ValueError: M must be a sympy expression or a real number; got str: '1 + 1' (strings are never parsed)
    """
    digits = as_positive_int("digits", digits)
    if digits > 1000:
        raise ValueError(f"digits must be at most 1000 (a float64 keeps 17); got {digits}")
    if isinstance(M, sp.MatrixBase):
        rows = M.tolist()
        return np.array([[_entry_to_float(f"M[{i}, {j}]", e, digits) for j, e in enumerate(row)] for i, row in enumerate(rows)])
    return np.array(_entry_to_float("M", M, digits), dtype=np.float64)


@dataclass(frozen=True)
class ExactGradients:
    """Exact gradients of ``L = sum(d_output * O)`` with respect to ``Q``, ``K`` and ``V``.

    Each is a sympy matrix obtained by differentiating the closed form of the
    attention output entry by entry (no chain rule written by hand), then
    substituting the given numbers.
    """

    dQ: sp.Matrix
    dK: sp.Matrix
    dV: sp.Matrix


def _symbol_matrix(prefix: str, shape: tuple[int, int]) -> sp.Matrix:
    return sp.Matrix(shape[0], shape[1], lambda i, j: sp.Symbol(f"{prefix}_{i}{j}", real=True))


def exact_attention_gradients(Q: Any, K: Any, V: Any, d_output: Any, mask: Any = None, scale: Any = SQRT_D_K) -> ExactGradients:
    """Differentiate attention exactly with sympy, for checking the hand-derived backward pass.

    The queries, keys and values are replaced by symbols, the output
    ``softmax(Q K^T / divisor) V`` is built symbolically, the scalar
    ``L = sum_ij d_output[i, j] O[i, j]`` is differentiated with respect to
    every symbol, and the given numbers are substituted back.

    Raises
    ------
    ValueError
        ``Q``, ``K``, ``V`` or ``d_output`` is not finite real numbers of the expected shape; ``mask`` is not a mask
        (``None``, ``attnlib.CAUSAL``, a function ``allowed(i, j)``, a boolean or an additive matrix of the scores'
        shape) or leaves a query row with no key; ``scale`` is not ``attnlib.SQRT_D_K``, ``attnlib.NO_SCALING`` or a
        positive number. The message names the argument.

    Examples
    --------
    >>> from attnlib import NO_SCALING
    >>> g = exact_attention_gradients([[1, 0]], [[1, 0], [0, 1]], [[1, 0], [0, 1]], [[1, 0]], scale=NO_SCALING)
    >>> g.dV
    Matrix([
    [E/(1 + E), 0],
    [1/(1 + E), 0]])
    >>> sp.simplify(g.dQ[0, 0] - sp.E / (1 + sp.E) ** 2)
    0
    """
    q, k, v, g = (exact_matrix(n, m) for n, m in (("Q", Q), ("K", K), ("V", V), ("d_output", d_output)))
    if q.shape[1] != k.shape[1]:
        raise ValueError(f"Q has d_k={q.shape[1]} but K has d_k={k.shape[1]}; queries and keys must have the same width")
    if v.shape[0] != k.shape[0]:
        raise ValueError(f"K has {k.shape[0]} rows (keys) but V has {v.shape[0]}; every key needs one value")
    if g.shape != (q.shape[0], v.shape[1]):
        raise ValueError(f"d_output has shape {g.shape} but the output has shape {(q.shape[0], v.shape[1])}")
    n_q, n_k = q.shape[0], k.shape[0]
    allowed = as_mask("mask", mask, (n_q, n_k))
    sq, sk, sv = _symbol_matrix("q", q.shape), _symbol_matrix("k", k.shape), _symbol_matrix("v", v.shape)
    divisor = _exact_divisor(q.shape[1], scale)
    scores = sq * sk.T / divisor
    loss = sp.Integer(0)
    for i in range(n_q):
        flags = [True] * n_k if allowed is None else allowed[i].tolist()
        weights, _, _ = exact_softmax([scores[i, j] for j in range(n_k)], flags)
        for c in range(v.shape[1]):
            loss += g[i, c] * sp.Add(*(weights[j] * sv[j, c] for j in range(n_k)))
    values = {s: x for S, M in ((sq, q), (sk, k), (sv, v)) for s, x in zip(S, M)}

    def grad(S: sp.Matrix) -> sp.Matrix:
        return S.applyfunc(lambda s: sp.diff(loss, s).xreplace(values))

    return ExactGradients(grad(sq), grad(sk), grad(sv))


@dataclass(frozen=True)
class SoftmaxBackwardProof:
    """A symbolic check of the row-softmax backward formula for one row of length ``n``.

    Attributes
    ----------
    logits, upstream:
        Symbols ``z_1..z_n`` (one row of the softmax input ``Z``) and
        ``g_1..g_n`` (the same row of ``dA = dL/dA``).
    by_differentiation:
        ``d/dz_i of sum_j g_j softmax(z)_j``, computed by sympy.
    by_formula:
        ``a_i (g_i - sum_j g_j a_j)``, the formula used in the backward pass.
    holds:
        ``True`` when every difference cancels to 0 (both are rational
        functions of the exponentials ``exp(s_j)``).
    """

    logits: tuple[sp.Symbol, ...]
    upstream: tuple[sp.Symbol, ...]
    by_differentiation: tuple[sp.Expr, ...]
    by_formula: tuple[sp.Expr, ...]
    holds: bool


def softmax_backward_proof(n: int = 3) -> SoftmaxBackwardProof:
    """Prove ``dZ = A * (dA - rowsum(dA * A))`` for one softmax row of ``n`` symbols (``Z`` the softmax input).

    Raises
    ------
    ValueError
        ``n`` is not a positive integer. The message names the argument.

    Examples
    --------
    >>> softmax_backward_proof(3).holds
    True
    """
    n = as_positive_int("n", n)
    if n > 8:
        raise ValueError(f"n must be at most 8 (the proof is symbolic and grows fast); got {n}")
    s = sp.symbols(f"z_1:{n + 1}", real=True)
    g = sp.symbols(f"g_1:{n + 1}", real=True)
    total = sp.Add(*(sp.exp(x) for x in s))
    a = [sp.exp(x) / total for x in s]
    loss = sp.Add(*(gj * aj for gj, aj in zip(g, a)))
    diffed = tuple(sp.diff(loss, x) for x in s)
    dot = sp.Add(*(gj * aj for gj, aj in zip(g, a)))
    formula = tuple(a[i] * (g[i] - dot) for i in range(n))
    holds = all(sp.cancel(sp.together(d - f)) == 0 for d, f in zip(diffed, formula))
    return SoftmaxBackwardProof(tuple(s), tuple(g), diffed, formula, holds)

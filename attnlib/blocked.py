"""Exact attention without the ``n x n`` score matrix: keys in blocks and an online softmax.

:func:`attnlib.core.attention` builds every score at once. Here the keys
and values are taken ``block_size`` at a time. For every query row three
running quantities are kept:

* ``m``, the largest score seen so far;
* ``l``, the sum of ``exp(score - m)`` over the keys seen so far;
* ``acc``, the sum of ``exp(score - m) * value`` over the same keys.

When a block brings a larger score, the old ``l`` and ``acc`` were computed
relative to the old maximum, so both are multiplied by
``exp(m_old - m_new)`` before the block's own terms are added. After the
last block, ``acc / l`` is exactly ``softmax(scores) @ V``, and the largest
array that ever existed has ``n_q x block_size`` entries.

The step itself is :func:`online_softmax_step`; :func:`online_softmax_trace`
records every step for one row of scores, for worked examples.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import sympy as sp

from ._validate import as_array, as_bool_matrix, as_flag, as_int, as_matrix, as_positive_int, finite_result, quiet
from .core import _check_qk, scale_divisor

__all__ = [
    "KeyBlock",
    "OnlineStep",
    "online_softmax_step",
    "online_softmax_trace",
    "block_count",
    "key_block",
    "key_blocks",
    "chunked_attention",
    "TwoBlockIdentity",
    "two_block_identity",
]


#: Most blocks :func:`key_blocks` lists (it builds one Python object per block).
MAX_BLOCKS = 1_000_000


@dataclass(frozen=True)
class KeyBlock:
    """One step of the blocked computation: which part of the score matrix exists.

    Attributes
    ----------
    keys:
        ``(start, stop)``: the key columns of this block (``stop`` excluded).
    rows:
        ``(start, stop)``: the query rows that are scored against them. Without a
        mask these are all rows; with a causal mask, rows above the block's
        first key cannot see any of its keys and are skipped.
    """

    keys: tuple[int, int]
    rows: tuple[int, int]

    @property
    def shape(self) -> tuple[int, int]:
        """Shape of this block of scores, ``(rows, keys)``."""
        return (self.rows[1] - self.rows[0], self.keys[1] - self.keys[0])


def block_count(n_keys: int, block_size: int) -> int:
    """How many blocks of ``block_size`` keys cover ``n_keys`` keys (the last one may be shorter).

    Examples
    --------
    >>> block_count(4096, 128), block_count(5, 2), block_count(3, 10)
    (32, 3, 1)
    """
    n_keys = as_positive_int("n_keys", n_keys)
    block_size = as_positive_int("block_size", block_size)
    return -(-n_keys // block_size)


def key_block(n_queries: int, n_keys: int, block_size: int, index: int, causal: bool = False) -> KeyBlock:
    """Block number ``index`` (0-based) of :func:`key_blocks`, without listing the others.

    Examples
    --------
    >>> key_block(5, 5, 2, 2)
    KeyBlock(keys=(4, 5), rows=(0, 5))
    >>> key_block(5, 5, 2, 1, causal=True).rows
    (2, 5)
    """
    n_queries = as_positive_int("n_queries", n_queries)
    n_keys = as_positive_int("n_keys", n_keys)
    block_size = as_positive_int("block_size", block_size)
    causal = as_flag("causal", causal)
    count = block_count(n_keys, block_size)
    index = as_int("index", index, minimum=0, what=f"a block number from 0 to {count - 1}")
    if index >= count:
        raise ValueError(f"index must be a block number from 0 to {count - 1}; got {index}")
    start = index * block_size
    first_row = start if causal else 0
    if first_row >= n_queries:
        raise ValueError(f"with a causal mask, block {index} (keys from {start}) is seen by none of the {n_queries} queries")
    return KeyBlock((start, min(start + block_size, n_keys)), (first_row, n_queries))


def key_blocks(n_queries: int, n_keys: int, block_size: int, causal: bool = False) -> list[KeyBlock]:
    """The blocks of keys, in order, and the query rows each one is scored against.

    The last block is shorter when ``block_size`` does not divide ``n_keys``.
    With ``causal=True`` query ``i`` may see key ``j`` only when ``j <= i``, so
    a block starting at key ``j0`` is scored against rows ``j0 ... n_queries - 1``
    only, and blocks starting at or beyond ``n_queries`` are dropped.

    Examples
    --------
    >>> [b.keys for b in key_blocks(5, 5, 2)]
    [(0, 2), (2, 4), (4, 5)]
    >>> [b.rows for b in key_blocks(5, 5, 2, causal=True)]
    [(0, 5), (2, 5), (4, 5)]
    """
    n_queries = as_positive_int("n_queries", n_queries)
    causal = as_flag("causal", causal)
    count = block_count(n_keys, block_size)
    if causal:
        count = min(count, block_count(n_queries, block_size))
    if count > MAX_BLOCKS:
        raise ValueError(
            f"key_blocks lists every block in Python: at most {MAX_BLOCKS:,} blocks; n_keys={n_keys} in blocks of "
            f"block_size={block_size} gives {count:,} (use key_block(..., index) for one block)"
        )
    return [key_block(n_queries, n_keys, block_size, index, causal) for index in range(count)]


def _step(m: np.ndarray, l: np.ndarray, scores: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The online-softmax update without input checks (see :func:`online_softmax_step`)."""
    m_new = np.maximum(m, scores.max(axis=-1))
    # A row whose keys so far are all masked has m = -inf; shifting by 0 keeps exp() away from -inf - (-inf).
    shift = np.where(np.isneginf(m_new), 0.0, m_new)
    rescale = np.exp(m - shift)
    p = scores - shift[..., None]
    np.exp(p, out=p)
    return m_new, l * rescale + p.sum(axis=-1), rescale, p


def online_softmax_step(m: Any, l: Any, scores: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """One step of the online softmax: fold a new block of scores into the running ``m`` and ``l``.

    Parameters
    ----------
    m:
        The running maximum of each row before this block (``-inf`` before the
        first block or while every key so far was masked); a number for one
        row, shape ``(rows,)`` for several.
    l:
        The running sum ``sum_j exp(s_j - m)`` over the keys seen so far (0 at the start).
    scores:
        The new block, shape ``(block,)`` or ``(rows, block)``; ``-inf`` marks a masked key.

    Returns
    -------
    m_new, l_new, rescale, p:
        ``m_new = max(m, max(scores))``; ``rescale = exp(m - m_new)``, the factor
        every partial sum made relative to the old maximum must be multiplied
        by; ``p = exp(scores - m_new)``, the block's terms; and
        ``l_new = l * rescale + sum(p)``.

    Examples
    --------
    >>> m, l, rescale, p = online_softmax_step(-np.inf, 0.0, [0.0, 1.0])
    >>> float(m), round(float(l), 4), float(rescale)
    (1.0, 1.3679, 0.0)
    >>> m, l, rescale, p = online_softmax_step(m, l, [3.0])
    >>> float(m), round(float(l), 4), round(float(rescale), 4)
    (3.0, 1.1851, 0.1353)
    >>> round(float(l), 4) == round(float(np.exp(np.array([0, 1, 3.0]) - 3).sum()), 4)
    True
    """
    s = as_array("scores", scores, (1, 2), allow_neg_inf=True)
    m_arr = as_array("m", m, (0, 1), allow_neg_inf=True)
    l_arr = as_array("l", l, (0, 1))
    if m_arr.shape != s.shape[:-1] or l_arr.shape != s.shape[:-1]:
        raise ValueError(
            f"m and l need one entry per row of scores: scores has shape {s.shape}, so m and l need shape "
            f"{s.shape[:-1]}; got m {m_arr.shape} and l {l_arr.shape}"
        )
    if np.any(l_arr < 0):
        raise ValueError(f"l is a sum of exponentials and cannot be negative; got {l_arr.tolist()}")
    if np.any(np.isneginf(m_arr) & (l_arr != 0)):
        raise ValueError("where m is -inf no key has been seen yet, so l must be 0 there")
    return _step(m_arr, l_arr, s.copy())


@dataclass(frozen=True)
class OnlineStep:
    """What one block did to the running quantities of one query row.

    Attributes
    ----------
    keys:
        ``(start, stop)`` of the block's keys (0-based, ``stop`` excluded).
    scores:
        The block's scores.
    m_before, m_after:
        The running maximum before and after the block.
    rescale:
        ``exp(m_before - m_after)``: 1 when the maximum did not grow, 0 for the first block.
    terms:
        The block's own terms ``exp(score - m_after)``.
    l_before, l_after:
        The running normaliser before and after.
    acc_after:
        The running weighted sum of values after the block (``None`` without values).
    """

    keys: tuple[int, int]
    scores: tuple[float, ...]
    m_before: float
    m_after: float
    rescale: float
    terms: tuple[float, ...]
    l_before: float
    l_after: float
    acc_after: tuple[float, ...] | None


def _block_bounds(n: int, block_sizes: int | Sequence[int]) -> list[tuple[int, int]]:
    if isinstance(block_sizes, (int, np.integer)) and not isinstance(block_sizes, (bool, np.bool_)):
        size = as_positive_int("block_sizes", block_sizes)
        sizes = [min(size, n - start) for start in range(0, n, size)]
    else:
        try:
            sizes = [as_positive_int("block_sizes", s) for s in block_sizes]
        except TypeError:
            raise ValueError(f"block_sizes must be a positive integer or a list of them; got {block_sizes!r}") from None
        if sum(sizes) != n:
            raise ValueError(f"block_sizes {sizes} add up to {sum(sizes)} but there are {n} scores")
    bounds, start = [], 0
    for size in sizes:
        bounds.append((start, start + size))
        start += size
    return bounds


def online_softmax_trace(scores: Any, block_sizes: int | Sequence[int], values: Any = None) -> list[OnlineStep]:
    """Run the online softmax over one row of scores and record every step.

    Parameters
    ----------
    scores:
        One row of (scaled) scores, shape ``(n,)``; ``-inf`` marks a masked key.
    block_sizes:
        A block length (the last block may be shorter) or the list of block lengths.
    values:
        Optional ``(n, d_v)`` values; then the running weighted sum is traced too,
        and ``acc_after / l_after`` of the last step is the attention output.

    Examples
    --------
    >>> steps = online_softmax_trace([0.0, 2.0, 1.0], [1, 2])
    >>> [(s.m_after, round(s.rescale, 4), round(s.l_after, 4)) for s in steps]
    [(0.0, 0.0, 1.0), (2.0, 0.1353, 1.5032)]
    """
    s = as_array("scores", scores, 1, allow_neg_inf=True)
    v = None if values is None else as_matrix("values", values)
    if v is not None and v.shape[0] != s.shape[0]:
        raise ValueError(f"values has {v.shape[0]} rows but there are {s.shape[0]} scores; every key needs one value")
    m, l = np.array(-np.inf), np.array(0.0)
    acc = None if v is None else np.zeros(v.shape[1])
    steps = []
    for start, stop in _block_bounds(s.shape[0], block_sizes):
        block = s[start:stop].copy()
        m_new, l_new, rescale, p = _step(m, l, block)
        if acc is not None:
            with quiet():
                acc = finite_result(acc * rescale + p @ v[start:stop], "the running weighted sum of values", "values")
        steps.append(
            OnlineStep(
                (start, stop),
                tuple(float(x) for x in block),
                float(m),
                float(m_new),
                float(rescale),
                tuple(float(x) for x in p),
                float(l),
                float(l_new),
                None if acc is None else tuple(float(x) for x in acc),
            )
        )
        m, l = m_new, l_new
    if np.isneginf(m):
        raise ValueError("scores is -inf everywhere: no key may receive weight, so the softmax is undefined")
    return steps


def _finite_block(arr: np.ndarray, what: str, inputs: str) -> np.ndarray:
    """:func:`attnlib._validate.finite_result` for one block, with no temporary array when all is well.

    ``min`` and ``max`` see NaN and +-inf without allocating; only a block that failed goes to
    ``finite_result``, which raises core's overflow error naming ``inputs``.
    """
    if arr.size and not (np.isfinite(arr.min()) and np.isfinite(arr.max())):
        finite_result(arr, what, inputs)
    return arr


MaskFunction = Callable[[np.ndarray, np.ndarray], Any]


def _mask_for_blocks(mask: Any, shape: tuple[int, int]) -> tuple[str, Any]:
    """Sort the mask argument into ("none" | "causal" | "array" | "function", payload)."""
    if mask is None:
        return "none", None
    if isinstance(mask, str):
        if mask != "causal":
            raise ValueError(f"mask given as text must be 'causal'; got {mask!r}")
        return "causal", None
    if callable(mask):
        return "function", mask
    return "array", as_bool_matrix("mask", mask, shape)


def _allowed_in_block(kind: str, payload: Any, block: KeyBlock) -> np.ndarray | None:
    """The boolean ``allowed`` pattern of one block, or None when everything is allowed."""
    (r0, r1), (c0, c1) = block.rows, block.keys
    if kind == "none" or (kind == "causal" and c1 - 1 <= r0):
        return None
    rows = np.arange(r0, r1)[:, None]
    cols = np.arange(c0, c1)[None, :]
    if kind == "causal":
        return cols <= rows
    if kind == "array":
        return payload[r0:r1, c0:c1]
    try:
        got = np.asarray(payload(rows, cols))
    except Exception as exc:
        raise ValueError(f"mask(i, j) raised {type(exc).__name__}: {exc} (i is a column of row indices, j a row of key indices)") from exc
    if got.dtype != bool:
        raise ValueError(f"mask(i, j) must return booleans (True = may attend); got dtype {got.dtype}")
    try:
        return np.broadcast_to(got, block.shape)
    except ValueError:
        raise ValueError(
            f"mask(i, j) returned shape {got.shape}, which does not broadcast to the block's {block.shape} "
            "(i has shape (rows, 1), j has shape (1, keys))"
        ) from None


def chunked_attention(
    Q: Any,
    K: Any,
    V: Any,
    block_size: int = 128,
    mask: Any = None,
    scale: bool | float = True,
    return_lse: bool = False,
) -> np.ndarray | tuple[np.ndarray, np.ndarray]:
    """Scaled dot-product attention computed block by block, never holding the ``n_q x n_k`` scores.

    The result equals ``attention(Q, K, V, mask, scale).output`` (up to
    floating-point rounding, about 1e-15 in float64) for any lengths and any
    ``block_size``. The largest arrays it makes have ``n_q x block_size``
    entries, so its memory grows like ``n * block_size`` instead of ``n^2``;
    the number of operations is the same as for :func:`attnlib.core.attention`.

    Parameters
    ----------
    Q, K, V:
        Queries ``(n_q, d_k)``, keys ``(n_k, d_k)`` and values ``(n_k, d_v)``,
        checked exactly as :func:`attnlib.core.attention` checks them.
    block_size:
        How many keys (and values) each step processes; the last block is
        shorter when it does not divide ``n_k``.
    mask:
        One of

        * ``None``: every query may attend to every key;
        * ``"causal"``: query ``i`` may attend to key ``j`` when ``j <= i``.
          No ``n x n`` array is made, and blocks a row cannot see are skipped;
        * a function ``allowed(i, j)`` called once per block with ``i`` a column
          of query indices (shape ``(rows, 1)``) and ``j`` a row of key indices
          (shape ``(1, keys)``), returning booleans that broadcast to
          ``(rows, keys)``; for example a sliding window,
          ``lambda i, j: (j <= i) & (i - j < 256)``;
        * a boolean ``(n_q, n_k)`` array (``True`` = may attend) or an additive
          mask of 0 and ``-inf``, as for :func:`attnlib.core.attention`.

        A query row that may attend to no key raises the same
        :class:`ValueError` as :func:`attnlib.core.attention`.
    scale:
        ``True`` divides by ``sqrt(d_k)``, ``False`` does not scale, a positive
        number divides by that number.
    return_lse:
        Also return each row's log-sum-exp ``log(sum_j exp(s_ij))`` of the
        scaled, masked scores, which is ``m + log(l)`` and what a backward
        pass needs to recompute the weights block by block.

    Returns
    -------
    output:
        ``(n_q, d_v)``; with ``return_lse=True`` the pair ``(output, lse)``
        with ``lse`` of shape ``(n_q,)``.

    Examples
    --------
    >>> from attnlib.core import attention, running_example
    >>> X = running_example()
    >>> chunked_attention(X, X, X, block_size=2).round(4).tolist()
    [[0.6155, 0.3845], [0.3845, 0.6155], [0.5, 0.5]]
    >>> bool(np.allclose(chunked_attention(X, X, X, block_size=1, mask="causal"),
    ...                  attention(X, X, X, mask=np.tril(np.ones((3, 3), bool))).output))
    True
    >>> out, lse = chunked_attention(X, X, X, return_lse=True)
    >>> lse.round(4).tolist()
    [1.4934, 1.4934, 1.4522]
    """
    q, k = _check_qk(Q, K)
    v = as_matrix("V", V)
    if v.shape[0] != k.shape[0]:
        raise ValueError(
            f"K has {k.shape[0]} rows (keys) but V has {v.shape[0]} (K is {k.shape}, V is {v.shape}); every key needs one value"
        )
    block_size = as_positive_int("block_size", block_size)
    return_lse = as_flag("return_lse", return_lse)
    divisor = scale_divisor(q.shape[1], scale)
    n_q, n_k = q.shape[0], k.shape[0]
    kind, payload = _mask_for_blocks(mask, (n_q, n_k))
    m = np.full(n_q, -np.inf)
    l = np.zeros(n_q)
    # the running output is kept normalised (acc / l), a weighted mean of values, so it never exceeds
    # the largest value: attention's output of finite values is finite, and so is this one
    out = np.zeros((n_q, v.shape[1]))
    for block in key_blocks(n_q, n_k, block_size, causal=kind == "causal"):
        (r0, r1), (c0, c1) = block.rows, block.keys
        with quiet():
            # the same overflow checks (and messages) as attnlib.core.attention, made before the mask is
            # applied, so that an overflowed score never passes for a masked key
            s = _finite_block(q[r0:r1] @ k[c0:c1].T, "the scores Q K^T", "Q and K")
            s /= divisor
            _finite_block(s, f"the scores divided by the scale {divisor:g}", "Q and K (and the scale)")
            allowed = _allowed_in_block(kind, payload, block)
            if allowed is not None:
                np.copyto(s, -np.inf, where=~allowed)
            m_new, l_new, rescale, p = _step(m[r0:r1], l[r0:r1], s)
            seen = l_new > 0  # rows with an allowed key so far (the others stay 0 until one comes)
            norm = np.where(seen, l_new, 1.0)
            o = out[r0:r1]  # a view: updated in place
            o *= np.where(seen, l[r0:r1] * rescale / norm, 0.0)[:, None]
            p /= norm[:, None]
            o += p @ v[c0:c1]
            _finite_block(o, "the output softmax(scores) @ V", "V")
        m[r0:r1], l[r0:r1] = m_new, l_new
        del s, p
    empty = np.isneginf(m)
    if empty.any():
        # The same error as attention's, from the same check; the broadcast view costs no n x n memory.
        as_bool_matrix("mask", np.broadcast_to(~empty[:, None], (n_q, n_k)), (n_q, n_k))
    if return_lse:
        return out, m + np.log(l)
    return out


@dataclass(frozen=True)
class TwoBlockIdentity:
    """The online softmax for two blocks, in symbols (sympy).

    Attributes
    ----------
    scores, values:
        The symbols: scores ``s_1 ... s_a`` of block 1 and ``t_1 ... t_b`` of
        block 2, and one value per key (``u_j`` and ``w_j``; one component is
        enough, the update acts on every component alike).
    m1, m2, m:
        Block 1's shift, block 2's shift and the common shift. The online
        softmax takes the block maxima and their maximum, but the identities
        hold for any real numbers, which is what makes the rescaling exact.
    merged_normaliser:
        ``l1 exp(m1 - m) + l2 exp(m2 - m)`` with ``l1 = sum exp(s - m1)``,
        ``l2 = sum exp(t - m2)``.
    full_normaliser:
        ``sum exp(x - m)`` over all keys of both blocks.
    merged_output:
        ``(acc1 exp(m1 - m) + acc2 exp(m2 - m)) / merged_normaliser``.
    softmax_output:
        The plain softmax average ``sum exp(x) v / sum exp(x)``.
    normaliser_difference, output_difference:
        Both differences after ``sympy.simplify``; the identity holds when they are 0.
    """

    scores: tuple[sp.Symbol, ...]
    values: tuple[sp.Symbol, ...]
    m1: sp.Symbol
    m2: sp.Symbol
    m: sp.Symbol
    merged_normaliser: sp.Expr
    full_normaliser: sp.Expr
    merged_output: sp.Expr
    softmax_output: sp.Expr
    normaliser_difference: sp.Expr
    output_difference: sp.Expr

    @property
    def holds(self) -> bool:
        """True when both differences simplify to exactly 0."""
        return self.normaliser_difference == 0 and self.output_difference == 0


def two_block_identity(first: int = 2, second: int = 2) -> TwoBlockIdentity:
    """Prove with sympy that merging two blocks' partial sums gives the softmax of all keys.

    Parameters
    ----------
    first, second:
        How many keys each block has.

    Examples
    --------
    >>> proof = two_block_identity(1, 2)
    >>> proof.merged_normaliser
    (exp(-m2 + t1) + exp(-m2 + t2))*exp(-m + m2) + exp(-m + m1)*exp(-m1 + s1)
    >>> proof.normaliser_difference, proof.output_difference, proof.holds
    (0, 0, True)
    """
    first = as_int("first", first, minimum=1, what="a number of keys from 1 to 12")
    second = as_int("second", second, minimum=1, what="a number of keys from 1 to 12")
    if first > 12 or second > 12:  # sympy's simplify grows quickly with the number of terms
        raise ValueError(f"first and second must be numbers of keys from 1 to 12 (sympy simplifies every term); got {first} and {second}")
    s = sp.symbols(f"s1:{first + 1}", real=True)
    t = sp.symbols(f"t1:{second + 1}", real=True)
    u = sp.symbols(f"u1:{first + 1}", real=True)
    w = sp.symbols(f"w1:{second + 1}", real=True)
    m1, m2, m = sp.symbols("m1 m2 m", real=True)
    l1 = sp.Add(*(sp.exp(x - m1) for x in s))
    l2 = sp.Add(*(sp.exp(x - m2) for x in t))
    acc1 = sp.Add(*(sp.exp(x - m1) * v for x, v in zip(s, u)))
    acc2 = sp.Add(*(sp.exp(x - m2) * v for x, v in zip(t, w)))
    merged = l1 * sp.exp(m1 - m) + l2 * sp.exp(m2 - m)
    full = sp.Add(*(sp.exp(x - m) for x in s + t))
    merged_output = (acc1 * sp.exp(m1 - m) + acc2 * sp.exp(m2 - m)) / merged
    softmax_output = sp.Add(*(sp.exp(x) * v for x, v in zip(s + t, u + w))) / sp.Add(*(sp.exp(x) for x in s + t))
    return TwoBlockIdentity(
        s + t,
        u + w,
        m1,
        m2,
        m,
        merged,
        full,
        merged_output,
        softmax_output,
        sp.simplify(merged - full),
        sp.simplify(merged_output - softmax_output),
    )

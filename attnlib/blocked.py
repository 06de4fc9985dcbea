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
from typing import TYPE_CHECKING, Any

import numpy as np

from ._lazy import lazy_module
from ._threads import one_blas_thread
from ._validate import (
    CAUSAL,
    SQRT_D_K,
    as_array,
    as_flag,
    as_int,
    as_mask,
    as_matrix,
    as_positive_int,
    finite_result,
    mask_tile,
    quiet,
    refuse_empty_rows,
)
from .backward import AttentionGradients
from .core import _check_qk, scale_divisor

if TYPE_CHECKING:  # type checkers and editors see sympy itself
    import sympy as sp
else:  # imported on first use (attnlib/_lazy.py), so that ``import attnlib`` stays light
    sp = lazy_module("sympy")

__all__ = [
    "ONLINE_STEP_CODE",
    "TILE_DTYPES",
    "KeyBlock",
    "OnlineStep",
    "TwoBlockIdentity",
    "block_count",
    "chunked_attention",
    "flash_attention",
    "flash_attention_backward",
    "key_block",
    "key_blocks",
    "online_softmax_step",
    "online_softmax_trace",
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

    Raises
    ------
    ValueError
        ``n_keys`` or ``block_size`` is not a positive integer. The message names the argument.

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

    Raises
    ------
    ValueError
        ``n_queries``, ``n_keys`` or ``block_size`` is not a positive integer; ``index`` is not an integer in its range;
        ``causal`` is not ``True`` or ``False``. The message names the argument.

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

    Raises
    ------
    ValueError
        ``n_queries``, ``n_keys`` or ``block_size`` is not a positive integer; ``causal`` is not ``True`` or ``False``.
        The message names the argument.

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


def _online_softmax_update(m: np.ndarray, l: np.ndarray, scores: np.ndarray) -> np.ndarray:
    """The one online-softmax update of attnlib, in place; every blocked and tiled pass calls it.

    ``m`` and ``l`` (one entry per row of ``scores``) become the new running maximum and normaliser,
    ``scores`` becomes the block's terms ``p = exp(scores - m_new)``, and the factor
    ``rescale = exp(m_old - m_new)`` is returned. Nothing of the block's size is allocated: the
    exponential is written over the scores (``np.exp(..., out=...)``), which is much faster than
    writing a fresh array.

    A row whose keys so far are all masked has ``m_new = -inf``; ``-inf - (-inf)`` would be NaN, so
    such a row is shifted by 0 instead: its terms ``exp(-inf) = 0`` and its ``rescale`` are then
    exact, and ``l`` stays 0 until an allowed key comes.
    """
    m_new = np.maximum(m, scores.max(axis=-1))
    shift = np.where(np.isneginf(m_new), 0.0, m_new)
    rescale = np.exp(m - shift)
    scores -= shift[..., None]
    np.exp(scores, out=scores)
    l *= rescale
    l += scores.sum(axis=-1)
    m[...] = m_new
    return rescale


def _step(m: np.ndarray, l: np.ndarray, scores: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """:func:`_online_softmax_update` on copies: returns ``m_new, l_new, rescale, p`` and changes nothing given.

    The update writes the block's terms over the scores it is handed, so it is handed a copy of
    ``scores`` here: a caller that records the block after the step still records its scores. The
    blocked and tiled passes call :func:`_online_softmax_update` directly and keep its in-place speed.
    """
    m_new, l_new = np.array(m, dtype=float), np.array(l, dtype=float)
    p = np.array(scores, dtype=float)
    rescale = _online_softmax_update(m_new, l_new, p)
    return m_new, l_new, rescale, p


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

    Raises
    ------
    ValueError
        ``m`` or ``scores`` is not real numbers (``-inf`` allowed) of the expected shape; ``l`` is not a finite real
        number in its range; or a result would overflow float64 (the error names the inputs it came from). The message
        names the argument.

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
    return _step(m_arr, l_arr, s)


#: The functions whose code is the online softmax step (the checked face and its unchecked body); exercise 15.2
#: refuses a student's function that is, or calls, any of them.
ONLINE_STEP_CODE = (online_softmax_step, _step)


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

    Raises
    ------
    ValueError
        ``scores`` is not real numbers (``-inf`` allowed) of the expected shape; ``block_sizes`` is not a positive
        integer or a list of them that adds up to the number of scores; ``values`` is neither ``None`` nor real, finite
        numbers of the expected shape; or a result would overflow float64 (the error names the inputs it came from). The
        message names the argument.

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
        block = s[start:stop]
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


def _allowed_in_block(mask: Any, block: KeyBlock) -> np.ndarray | None:
    """The boolean ``allowed`` pattern of one block of a mask checked by ``as_mask(..., lazy=True)``, or None when all is allowed."""
    if mask is None:
        return None
    if isinstance(mask, np.ndarray):
        (r0, r1), (c0, c1) = block.rows, block.keys
        return mask[r0:r1, c0:c1]
    return mask_tile("mask", mask, block.rows, block.keys)


def chunked_attention(
    Q: Any,
    K: Any,
    V: Any,
    block_size: int = 128,
    mask: Any = None,
    scale: Any = SQRT_D_K,
    return_lse: bool = False,
) -> np.ndarray | tuple[np.ndarray, np.ndarray]:
    """Scaled dot-product attention computed block by block, never holding the ``n_q x n_k`` scores.

    The result equals ``attention(Q, K, V, mask, scale).output`` (up to
    floating-point rounding, about 1e-15 in float64) for any lengths and any
    ``block_size``. The largest arrays it makes have ``n_q x block_size``
    entries, so its memory grows like ``n * block_size`` instead of ``n^2``.
    Without a mask it does the operations of :func:`attnlib.core.attention`;
    with :data:`attnlib.CAUSAL <attnlib.core.CAUSAL>` it skips the rows a block
    cannot see, about half the scores of a long sequence.

    Each block is folded in with :func:`online_softmax_step` (the running
    ``m`` and ``l``), and the output of every row is kept *normalised* after
    each block: the old output is multiplied by ``l_old * rescale / l_new``
    and the block's terms are divided by ``l_new`` before they meet the
    values, as the first FlashAttention does at every step. The output thus
    stays a weighted mean of values, never larger than the largest value.
    :func:`flash_attention` instead keeps the unnormalised sum and divides by
    ``l`` once, after the last block; both give the same output to rounding.

    Parameters
    ----------
    Q, K, V:
        Queries ``(n_q, d_k)``, keys ``(n_k, d_k)`` and values ``(n_k, d_v)``,
        checked exactly as :func:`attnlib.core.attention` checks them.
    block_size:
        How many keys (and values) each step processes; the last block is
        shorter when it does not divide ``n_k``.
    mask:
        One of the forms every mask of attnlib takes:

        * ``None``: every query may attend to every key;
        * :data:`attnlib.CAUSAL <attnlib.core.CAUSAL>`: query ``i`` may attend to key ``j`` when ``j <= i``.
          No ``n x n`` array is made, and blocks a row cannot see are skipped
          (the text ``"causal"`` is its old spelling, an alias for one release);
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
        :data:`attnlib.SQRT_D_K <attnlib.core.SQRT_D_K>` divides by ``sqrt(d_k)``, :data:`attnlib.NO_SCALING <attnlib.core.NO_SCALING>`
        does not scale, a positive number divides by that number.
    return_lse:
        Also return each row's log-sum-exp ``log(sum_j exp(s_ij))`` of the
        scaled, masked scores, which is ``m + log(l)`` and what a backward
        pass needs to recompute the weights block by block.

    Returns
    -------
    output:
        ``(n_q, d_v)``; with ``return_lse=True`` the pair ``(output, lse)``
        with ``lse`` of shape ``(n_q,)``.

    Raises
    ------
    ValueError
        ``Q``, ``K`` or ``V`` is not finite real numbers of the expected shape; ``block_size`` is not a positive
        integer; ``mask`` is not a mask (``None``, ``attnlib.CAUSAL``, a function ``allowed(i, j)``, a boolean or an
        additive matrix of the scores' shape) or leaves a query row with no key; ``scale`` is not ``attnlib.SQRT_D_K``,
        ``attnlib.NO_SCALING`` or a positive number; ``return_lse`` is not ``True`` or ``False``; or a result would
        overflow float64 (the error names the inputs it came from). The message names the argument.

    Examples
    --------
    >>> from attnlib.core import attention, running_example
    >>> X = running_example()
    >>> chunked_attention(X, X, X, block_size=2).round(4).tolist()
    [[0.6155, 0.3845], [0.3845, 0.6155], [0.5, 0.5]]
    >>> bool(np.allclose(chunked_attention(X, X, X, block_size=1, mask=CAUSAL),
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
    mask = as_mask("mask", mask, (n_q, n_k), lazy=True)
    m = np.full(n_q, -np.inf)
    l = np.zeros(n_q)
    # the running output is kept normalised after every block (o = acc / l, the first FlashAttention's
    # per-step division), not accumulated unnormalised and divided once as flash_attention does: a
    # weighted mean of values never exceeds the largest value, so the output of finite values is finite
    out = np.zeros((n_q, v.shape[1]))
    for block in key_blocks(n_q, n_k, block_size, causal=mask is CAUSAL):
        (r0, r1), (c0, c1) = block.rows, block.keys
        with quiet():
            # the same overflow checks (and messages) as attnlib.core.attention, made before the mask is
            # applied, so that an overflowed score never passes for a masked key
            raw = _finite_block(q[r0:r1] @ k[c0:c1].T, "the scores Q K^T", "Q and K")
            # a second strip, as attention keeps Q K^T and the scaled scores apart: the working set stays
            # the two n x block strips that cost.blocked_working_set_bytes (and Exercise 15.3) count
            s = raw / divisor
            _finite_block(s, f"the scores divided by the scale {divisor:g}", "Q and K (and the scale)")
            allowed = _allowed_in_block(mask, block)
            if allowed is not None:
                np.copyto(s, -np.inf, where=~allowed)
            l_old = l[r0:r1].copy()
            rescale = _online_softmax_update(m[r0:r1], l[r0:r1], s)  # s now holds the block's terms p
            l_new = l[r0:r1]
            seen = l_new > 0  # rows with an allowed key so far (the others stay 0 until one comes)
            norm = np.where(seen, l_new, 1.0)
            o = out[r0:r1]  # a view: updated in place
            o *= np.where(seen, l_old * rescale / norm, 0.0)[:, None]
            s /= norm[:, None]
            o += s @ v[c0:c1]
            _finite_block(o, "the output softmax(scores) @ V", "V")
        del raw, s
    refuse_empty_rows("mask", np.isneginf(m), (n_q, n_k))  # the same error as attention's
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

    Raises
    ------
    ValueError
        ``first`` or ``second`` is not a positive integer. The message names the argument.

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


# --- FlashAttention: tiles of queries and keys (chapter 15) -------------------------------------

#: The floating-point formats the tiled functions compute in (``dtype=``); float64 is attnlib's default.
TILE_DTYPES: dict[str, type] = {"float64": np.float64, "float32": np.float32}

#: Default tile shape (queries x keys). A 256 x 512 float64 tile of scores is 1 MiB, the size of a core's
#: L2 cache on the machine the book was measured on (half of it in float32); with 64 numbers per query
#: the two products of a tile are wide enough for BLAS to run near full speed, and Python's cost per tile
#: is small next to them. Of the shapes 64 ... 512 by 256 ... 1024 tried there (one BLAS thread,
#: n = 4096), this one was among the fastest.
QUERY_TILE, KEY_TILE = 256, 512


def _largest_magnitude(arr: np.ndarray) -> float:
    """``max |arr|`` without allocating an array of ``arr``'s size."""
    return max(float(-arr.min()), float(arr.max())) if arr.size else 0.0


def _operand(name: str, value: Any, dt: type) -> np.ndarray:
    """``value`` as a finite matrix in the format ``dt``, without a copy when it already is one.

    A plain numpy array of the right format, two dimensions and finite entries is used as it is
    (the tiled functions never write into their inputs), so that an input of ``n x d`` numbers costs
    no memory; anything else goes through attnlib's checks (:func:`attnlib._validate.as_matrix`)
    and is converted.
    """
    if type(value) is np.ndarray and value.dtype == dt and value.ndim == 2 and value.size:
        with quiet():
            if np.isfinite(value.min()) and np.isfinite(value.max()):
                return value
    arr = as_matrix(name, value)
    if dt is np.float64:
        return arr
    big = float(np.finfo(dt).max)
    if _largest_magnitude(arr) > big:
        raise ValueError(f"{name} has entries beyond the range of {np.dtype(dt).name} (about {big:.1e}); compute in float64")
    return arr.astype(dt)


def _check_qkv(Q: Any, K: Any, V: Any, dt: type) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The checks of :func:`attnlib.core.attention` (same messages) on the operands of the tiled functions."""
    q, k, v = _operand("Q", Q, dt), _operand("K", K, dt), _operand("V", V, dt)
    if q.shape[1] != k.shape[1]:
        raise ValueError(
            f"Q has d_k={q.shape[1]} but K has d_k={k.shape[1]} (Q is {q.shape}, K is {k.shape}); queries and keys must have the same width"
        )
    if v.shape[0] != k.shape[0]:
        raise ValueError(
            f"K has {k.shape[0]} rows (keys) but V has {v.shape[0]} (K is {k.shape}, V is {v.shape}); every key needs one value"
        )
    return q, k, v


def _tile_dtype(dtype: Any) -> type:
    if not isinstance(dtype, str) or dtype not in TILE_DTYPES:
        raise ValueError(f"dtype must be one of {sorted(TILE_DTYPES)}; got {dtype!r}")
    return TILE_DTYPES[dtype]


def _tiles(n: int, size: int) -> range:
    return range(0, n, size)


def _contiguous(buffer: np.ndarray, rows: int, cols: int) -> np.ndarray:
    """A C-contiguous ``rows x cols`` view at the start of a flat preallocated buffer."""
    return buffer[: rows * cols].reshape(rows, cols)


def _score_guard(q: np.ndarray, k: np.ndarray, divisor: float, prescaled: bool) -> bool:
    """Whether a tile of scores may overflow: False when ``d max|q| max|k|`` (divided by the scale) bounds every score safely.

    Every partial sum of a dot product is at most that bound, so when it is below a quarter of the
    format's largest number no score can overflow and the per-tile checks are skipped. Without
    prescaling (a scale so small that ``Q / scale`` would overflow) both ``Q K^T`` and its quotient
    by the scale must stay below it.
    """
    with quiet():
        raw = float(q.shape[1]) * _largest_magnitude(q) * _largest_magnitude(k)
        bound = raw / divisor if prescaled else max(raw, raw / divisor)
    return not bound < float(np.finfo(q.dtype).max) / 4


def _prescaled(q: np.ndarray, divisor: float) -> bool:
    """Whether the queries can be divided by the scale before the product (``Q / c`` stays finite).

    That saves one pass over every tile of scores; a scale so small that ``Q / c`` overflows where
    ``(Q K^T) / c`` need not (``Q = 1e10``, ``K = 1e-300``, ``c = 1e-300``) takes attention's order instead.
    """
    with quiet():
        return bool(np.isfinite(_largest_magnitude(q) / divisor))


def _scores_of_tile(s: np.ndarray, divisor: float, prescaled: bool, guard: bool) -> None:
    """Finish a tile of scores in place: the overflow errors of attention (raised before any mask is applied) and the scale."""
    if prescaled:
        if guard and not (np.isfinite(s.min()) and np.isfinite(s.max())):
            finite_result(s, f"the scores Q K^T divided by the scale {divisor:g}", "Q and K (and the scale)")
        return
    if guard and not (np.isfinite(s.min()) and np.isfinite(s.max())):
        finite_result(s, "the scores Q K^T", "Q and K")
    np.divide(s, divisor, out=s)
    if guard and not (np.isfinite(s.min()) and np.isfinite(s.max())):
        finite_result(s, f"the scores divided by the scale {divisor:g}", "Q and K (and the scale)")


def _value_shift(v: np.ndarray, n_keys: int) -> int:
    """A power of two ``e`` such that ``n_keys * max|v| / 2**e`` cannot overflow: sums of ``p v`` stay finite.

    Multiplying by a power of two is exact (until numbers fall below the smallest normal float), so
    the values are divided by ``2**e`` before the tiles and the output multiplied back after.
    """
    big = float(np.finfo(v.dtype).max)
    top = _largest_magnitude(v)
    if top * (n_keys + 1) < big / 4:
        return 0
    return int(np.ceil(np.log2(top / (big / 4))) + np.ceil(np.log2(n_keys + 1)))


def _tile_sizes(query_tile: Any, key_tile: Any, n_q: int, n_k: int) -> tuple[int, int]:
    return min(as_positive_int("query_tile", query_tile), n_q), min(as_positive_int("key_tile", key_tile), n_k)


def _run_workers(work: Callable[[Sequence[int]], Any], starts: list[int], workers: int) -> list[Any]:
    """``work`` over the tile ``starts``, split round-robin among ``workers`` threads (each with one BLAS thread).

    numpy releases the interpreter lock in its products and element-wise loops, so the threads run at
    the same time. Round-robin gives each thread early and late tiles alike (a causal mask makes the
    later query tiles longer). An error in a thread is raised here.
    """
    workers = min(workers, len(starts))
    if workers <= 1:
        return [work(starts)]
    from concurrent.futures import ThreadPoolExecutor

    with one_blas_thread(), ThreadPoolExecutor(max_workers=workers) as pool:
        futures = [pool.submit(_quietly, work, starts[i::workers]) for i in range(workers)]
        return [f.result() for f in futures]


def _quietly(work: Callable[[Sequence[int]], Any], starts: Sequence[int]) -> Any:
    """``work(starts)`` with numpy's warnings silenced in this thread too (numpy's error state is per thread)."""
    with quiet():
        return work(starts)


def flash_attention(
    Q: Any,
    K: Any,
    V: Any,
    mask: Any = None,
    scale: Any = SQRT_D_K,
    return_lse: bool = False,
    *,
    query_tile: int = QUERY_TILE,
    key_tile: int = KEY_TILE,
    dtype: str = "float64",
    workers: int = 1,
) -> np.ndarray | tuple[np.ndarray, np.ndarray]:
    """Exact attention in tiles of ``query_tile`` queries by ``key_tile`` keys (FlashAttention's forward pass).

    :func:`chunked_attention` takes the keys in blocks but scores *all* queries
    against each block, so each step holds an ``n_q x block`` strip that grows
    with ``n`` and leaves the cache. Here the queries are tiled too: for each
    tile of queries the key tiles are visited in order and folded into the
    running maximum, normaliser and weighted sum of values of those queries
    only (the online softmax of :func:`online_softmax_step`, the same code).
    The arrays that exist besides the inputs and the output have at most
    ``query_tile x key_tile`` entries, whatever ``n`` is, and they are
    allocated once and reused for every tile.

    Parameters
    ----------
    Q, K, V, mask, scale, return_lse:
        As in :func:`chunked_attention` (every mask form it takes: ``None``,
        :data:`attnlib.CAUSAL <attnlib.core.CAUSAL>`, a function ``allowed(i, j)``, a boolean or additive
        array). A query row that may attend to no key raises the same
        :class:`ValueError` as :func:`attnlib.core.attention`; an overflowing
        score raises an overflow error before any mask is applied, so it is
        never taken for a masked key.
    query_tile, key_tile:
        The tile shape (keyword only); tiles at the edges may be smaller.
    dtype:
        ``"float64"`` (attnlib's format) or ``"float32"``; the inputs are
        converted and every tile is computed in that format.
    workers:
        How many threads share the query tiles (keyword only). With more than
        one, each thread computes its own tiles with one BLAS thread
        (threadpoolctl), which is how FlashAttention spreads its work over a
        GPU's processors; the output does not depend on it.

    Returns
    -------
    output:
        ``(n_q, d_v)`` in ``dtype``; with ``return_lse=True`` the pair
        ``(output, lse)``, ``lse[i] = log(sum_j exp(s_ij))`` over the scaled,
        masked scores of row ``i``, which :func:`flash_attention_backward` needs.

    Raises
    ------
    ValueError
        ``Q``, ``K`` or ``V`` is not finite real numbers of the expected shape; ``mask`` is not a mask (``None``,
        ``attnlib.CAUSAL``, a function ``allowed(i, j)``, a boolean or an additive matrix of the scores' shape) or
        leaves a query row with no key; ``scale`` is not ``attnlib.SQRT_D_K``, ``attnlib.NO_SCALING`` or a positive
        number; ``return_lse`` is not ``True`` or ``False``; ``query_tile``, ``key_tile`` or ``workers`` is not a
        positive integer; ``dtype`` is not one of the values it may take; or a result would overflow float64 (the error
        names the inputs it came from). The message names the argument.

    Examples
    --------
    >>> from attnlib.core import attention, running_example
    >>> X = running_example()
    >>> flash_attention(X, X, X, query_tile=2, key_tile=2).round(4).tolist()
    [[0.6155, 0.3845], [0.3845, 0.6155], [0.5, 0.5]]
    >>> out, lse = flash_attention(X, X, X, mask=CAUSAL, return_lse=True, query_tile=1, key_tile=2)
    >>> bool(np.allclose(out, attention(X, X, X, mask=np.tril(np.ones((3, 3), bool))).output))
    True
    >>> lse.round(4).tolist()
    [0.7071, 1.1079, 1.4522]
    """
    dt = _tile_dtype(dtype)
    q, k, v = _check_qkv(Q, K, V, dt)
    return_lse = as_flag("return_lse", return_lse)
    divisor = scale_divisor(q.shape[1], scale)
    n_q, n_k, d_k, d_v = q.shape[0], k.shape[0], q.shape[1], v.shape[1]
    qt, kt = _tile_sizes(query_tile, key_tile, n_q, n_k)
    workers = as_positive_int("workers", workers)
    mask = as_mask("mask", mask, (n_q, n_k), lazy=True)
    prescaled = _prescaled(q, divisor)
    with quiet():
        guard = _score_guard(q, k, divisor, prescaled)
        shift = _value_shift(v, n_k)
        if shift:
            v = np.ldexp(v, -shift).astype(dt)
    out = np.empty((n_q, d_v), dt)
    lse = np.empty(n_q, dt)

    def query_tiles(starts: Sequence[int]) -> None:
        """The tiles of queries starting at ``starts``, with buffers of their own (one call per worker)."""
        q_tile = np.empty(qt * d_k, dt)  # the tile's queries divided by the scale, once per query tile
        scores = np.empty(qt * kt, dt)  # the one tile of scores, then of their exponentials
        acc, part = np.empty(qt * d_v, dt), np.empty(qt * d_v, dt)  # the tile's running sum of p v, one tile's p v
        m_buf, l_buf = np.empty(qt, dt), np.empty(qt, dt)
        for r0 in starts:
            r1 = min(r0 + qt, n_q)
            rows = r1 - r0
            m, l, a, pv = m_buf[:rows], l_buf[:rows], _contiguous(acc, rows, d_v), _contiguous(part, rows, d_v)
            if prescaled:
                qs = _contiguous(q_tile, rows, d_k)
                np.divide(q[r0:r1], divisor, out=qs)
            else:
                qs = q[r0:r1]
            m.fill(-np.inf)
            l.fill(0)
            a.fill(0)
            last_key = min(n_k, r1) if mask is CAUSAL else n_k  # causal: no key after the tile's last query
            for c0 in _tiles(last_key, kt):
                c1 = min(c0 + kt, last_key)
                s = _contiguous(scores, rows, c1 - c0)
                np.matmul(qs, k[c0:c1].T, out=s)
                _scores_of_tile(s, divisor, prescaled, guard)
                allowed = _allowed_in_block(mask, KeyBlock((c0, c1), (r0, r1)))
                if allowed is not None:
                    np.copyto(s, -np.inf, where=~allowed)
                rescale = _online_softmax_update(m, l, s)  # s now holds p = exp(s - m)
                a *= rescale[:, None]
                np.matmul(s, v[c0:c1], out=pv)
                a += pv
            seen = l > 0
            np.divide(a, np.where(seen, l, 1)[:, None], out=out[r0:r1])
            lse[r0:r1] = m + np.log(np.where(seen, l, 1))
            lse[r0:r1][~seen] = -np.inf

    with quiet():
        # query tiles are independent: each worker takes every workers-th one (the result does not depend on workers)
        _run_workers(query_tiles, list(_tiles(n_q, qt)), workers)
        refuse_empty_rows("mask", np.isneginf(lse), (n_q, n_k))  # the same error as attention's
        if shift:
            out = np.ldexp(out, shift).astype(dt)
        finite_result(out, "the output softmax(scores) @ V", "V")
    if return_lse:
        return out, lse
    return out


def flash_attention_backward(
    Q: Any,
    K: Any,
    V: Any,
    output: Any,
    lse: Any,
    d_output: Any,
    mask: Any = None,
    scale: Any = SQRT_D_K,
    *,
    query_tile: int = QUERY_TILE,
    key_tile: int = KEY_TILE,
    dtype: str = "float64",
    workers: int = 1,
) -> AttentionGradients:
    """The backward pass of attention tile by tile, from the saved output and log-sum-exp (FlashAttention's).

    The weights of a tile are recomputed from the saved ``lse``:
    ``P = exp(Q_i K_j^T / c - lse_i)`` is exactly the tile of
    ``softmax(Q K^T / c)`` (masked entries are 0), so nothing of size
    ``n_q x n_k`` is ever stored. The softmax backward needs
    ``rowsum(dA * A)`` for each row; since ``dA = dO V^T`` and ``O = A V``,
    it equals ``D = rowsum(dO * O)``, which the output gives in ``n_q x d_v``
    operations. Then, per tile:

    * ``dV_j += P^T dO_i``;
    * ``dS = P * (dO_i V_j^T - D_i)``;
    * ``dQ_i += dS K_j / c`` and ``dK_j += dS^T Q_i / c``.

    Parameters
    ----------
    Q, K, V, mask, scale:
        As in :func:`flash_attention` (the same mask forms and checks).
    output, lse:
        What ``flash_attention(Q, K, V, mask, scale, return_lse=True)`` returned:
        ``(n_q, d_v)`` and ``(n_q,)``.
    d_output:
        ``dL/dO``, shape ``(n_q, d_v)``.
    query_tile, key_tile, dtype:
        As in :func:`flash_attention` (keyword only).
    workers:
        How many threads share the key tiles (keyword only, one BLAS thread
        each). Each thread adds to its own ``n_q x d_k`` copy of ``dQ`` (the
        copies are summed at the end), so ``workers - 1`` such arrays are
        added to the memory; the gradients agree with ``workers=1`` to rounding.

    Returns
    -------
    AttentionGradients
        ``(dQ, dK, dV)``, the same named tuple as :func:`attnlib.backward.attention_backward`.

    Raises
    ------
    ValueError
        ``Q``, ``K``, ``V``, ``output``, ``lse`` or ``d_output`` is not finite real numbers of the expected shape;
        ``mask`` is not a mask (``None``, ``attnlib.CAUSAL``, a function ``allowed(i, j)``, a boolean or an additive
        matrix of the scores' shape) or leaves a query row with no key; ``scale`` is not ``attnlib.SQRT_D_K``,
        ``attnlib.NO_SCALING`` or a positive number; ``query_tile``, ``key_tile`` or ``workers`` is not a positive
        integer; ``dtype`` is not one of the values it may take; or a result would overflow float64 (the error names the
        inputs it came from). The message names the argument.

    Examples
    --------
    >>> from attnlib.backward import attention_backward
    >>> from attnlib.core import running_example
    >>> X, dO = running_example(), np.array([[1.0, 0.0], [0.0, 2.0], [1.0, 1.0]])
    >>> out, lse = flash_attention(X, X, X, return_lse=True)
    >>> g = flash_attention_backward(X, X, X, out, lse, dO, query_tile=2, key_tile=2)
    >>> g.dV.round(4).tolist()
    [[0.7889, 0.7825], [0.5579, 1.2444], [0.6532, 0.9731]]
    >>> bool(all(np.allclose(a, b) for a, b in zip(g, attention_backward(X, X, X, dO))))
    True
    """
    dt = _tile_dtype(dtype)
    q, k, v = _check_qkv(Q, K, V, dt)
    n_q, n_k, d_k, d_v = q.shape[0], k.shape[0], q.shape[1], v.shape[1]
    o, d_out = _operand("output", output, dt), _operand("d_output", d_output, dt)
    for name, arr in (("output", o), ("d_output", d_out)):
        if arr.shape != (n_q, d_v):
            raise ValueError(f"{name} has shape {arr.shape} but the attention output has shape {(n_q, d_v)} (n_q, d_v)")
    saved = as_array("lse", lse, 1)
    if saved.shape != (n_q,):
        raise ValueError(f"lse has shape {saved.shape} but there are {n_q} queries; it needs one log-sum-exp per query")
    big = float(np.finfo(dt).max)
    if _largest_magnitude(saved) > big:
        raise ValueError(f"lse has entries beyond the range of {np.dtype(dt).name} (about {big:.1e}); compute in float64")
    saved = saved.astype(dt)
    divisor = scale_divisor(d_k, scale)
    qt, kt = _tile_sizes(query_tile, key_tile, n_q, n_k)
    workers = as_positive_int("workers", workers)
    mask = as_mask("mask", mask, (n_q, n_k), lazy=True)
    # a mask function is evaluated tile by tile: its empty rows are found on the way (an array was checked whole)
    track = callable(mask) and mask is not CAUSAL
    prescaled = _prescaled(q, divisor)
    inputs = "output, lse and d_output"
    with quiet():
        guard = _score_guard(q, k, divisor, prescaled)
        D = finite_result(np.einsum("ij,ij->i", d_out, o), "rowsum(d_output * output)", "output and d_output")
    dK, dV = np.zeros((n_k, d_k), dt), np.zeros((n_k, d_v), dt)

    def key_tiles(starts: Sequence[int]) -> tuple[np.ndarray, np.ndarray | None]:
        """The tiles of keys starting at ``starts`` (one call per worker); returns this worker's share of dQ and the rows that saw a key."""
        dQ = np.zeros((n_q, d_k), dt)
        seen = np.zeros(n_q, bool) if track else None
        p_buf, ds_buf = np.empty(qt * kt, dt), np.empty(qt * kt, dt)
        kd, vd, qd, qsd = np.empty(kt * d_k, dt), np.empty(kt * d_v, dt), np.empty(qt * d_k, dt), np.empty(qt * d_k, dt)
        for c0 in starts:
            c1 = min(c0 + kt, n_k)
            cols = c1 - c0
            dK_j, dV_j = dK[c0:c1], dV[c0:c1]  # only this worker writes these rows
            first_row = (c0 // qt) * qt if mask is CAUSAL else 0  # causal: rows before key c0 see none of these keys
            for r0 in range(first_row, n_q, qt):
                r1 = min(r0 + qt, n_q)
                rows = r1 - r0
                p, ds = _contiguous(p_buf, rows, cols), _contiguous(ds_buf, rows, cols)
                if prescaled:
                    qs = _contiguous(qsd, rows, d_k)
                    np.divide(q[r0:r1], divisor, out=qs)
                else:
                    qs = q[r0:r1]
                np.matmul(qs, k[c0:c1].T, out=p)
                _scores_of_tile(p, divisor, prescaled, guard)
                allowed = _allowed_in_block(mask, KeyBlock((c0, c1), (r0, r1)))
                if allowed is not None:
                    np.copyto(p, -np.inf, where=~allowed)
                    if seen is not None:
                        seen[r0:r1] |= allowed.any(axis=1)
                p -= saved[r0:r1, None]
                np.exp(p, out=p)  # the tile of weights A, recomputed
                np.matmul(p.T, d_out[r0:r1], out=_contiguous(vd, cols, d_v))
                dV_j += _contiguous(vd, cols, d_v)
                np.matmul(d_out[r0:r1], v[c0:c1].T, out=ds)  # dA = dO V^T for this tile
                ds -= D[r0:r1, None]
                ds *= p  # dS = A * (dA - D)
                np.matmul(ds, k[c0:c1], out=_contiguous(qd, rows, d_k))
                dQ[r0:r1] += _contiguous(qd, rows, d_k)
                np.matmul(ds.T, qs, out=_contiguous(kd, cols, d_k))
                if not prescaled:
                    np.divide(_contiguous(kd, cols, d_k), divisor, out=_contiguous(kd, cols, d_k))
                dK_j += _contiguous(kd, cols, d_k)
        return dQ, seen

    with quiet():
        # key tiles are independent for dK and dV; every worker adds to its own dQ, summed in a fixed order
        shares = _run_workers(key_tiles, list(_tiles(n_k, kt)), workers)
        if track:
            refuse_empty_rows("mask", ~np.logical_or.reduce([seen for _, seen in shares]), (n_q, n_k))  # as the forward does
        dQ = shares[0][0]
        for share, _ in shares[1:]:
            dQ += share
        dQ /= dt(divisor)
        # finite inputs give a non-finite gradient only by overflowing (or by an lse that is not the forward's)
        grads = AttentionGradients(
            finite_result(dQ, "the gradient dQ", f"{inputs} (and K)"),
            finite_result(dK, "the gradient dK", f"{inputs} (and Q)"),
            finite_result(dV, "the gradient dV", inputs),
        )
    return grads

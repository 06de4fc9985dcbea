"""How much memory the attention score matrix needs.

Self-attention over ``n`` tokens scores every query against every key, so
one head of one sequence holds an ``n x n`` matrix: doubling ``n``
quadruples it. These helpers count its entries and bytes, and print byte
counts in binary units (KiB, MiB, GiB, ...).
"""

from __future__ import annotations

import numpy as np

from ._validate import as_positive_int
from .formatting import format_bytes

__all__ = ["DTYPE_BYTES", "bytes_per_entry", "score_matrix_entries", "score_matrix_bytes", "format_bytes"]

#: Bytes per number for the floating-point formats attention is usually run in.
DTYPE_BYTES: dict[str, int] = {"float64": 8, "float32": 4, "float16": 2, "bfloat16": 2}

def bytes_per_entry(dtype: str) -> int:
    """Bytes one number takes in ``dtype`` (a name from :data:`DTYPE_BYTES`).

    Examples
    --------
    >>> bytes_per_entry("float32"), bytes_per_entry("bfloat16")
    (4, 2)
    """
    if not isinstance(dtype, str) or dtype not in DTYPE_BYTES:
        raise ValueError(f"dtype must be one of {sorted(DTYPE_BYTES)}; got {dtype!r}")
    return DTYPE_BYTES[dtype]


def score_matrix_entries(n: int, n_keys: int | None = None, heads: int = 1, batch: int = 1) -> int:
    """Number of scores: ``batch * heads * n * n_keys`` (``n_keys`` defaults to ``n``, self-attention).

    Examples
    --------
    >>> score_matrix_entries(3)
    9
    >>> score_matrix_entries(4096, heads=8)
    134217728
    """
    n = as_positive_int("n", n)
    n_keys = n if n_keys is None else as_positive_int("n_keys", n_keys)
    heads = as_positive_int("heads", heads)
    batch = as_positive_int("batch", batch)
    return batch * heads * n * n_keys


def score_matrix_bytes(n: int, dtype: str = "float32", heads: int = 1, batch: int = 1, n_keys: int | None = None) -> int:
    """Bytes needed to store the ``n x n_keys`` score matrices of ``heads`` heads and ``batch`` sequences.

    Examples
    --------
    >>> score_matrix_bytes(4096)
    67108864
    >>> score_matrix_bytes(4096, dtype="float16")
    33554432
    """
    return score_matrix_entries(n, n_keys=n_keys, heads=heads, batch=batch) * bytes_per_entry(dtype)


# --- operations and the blocked version's memory (chapter 15) ---------------------------------

__all__ += ["attention_flops", "blocked_working_set_bytes"]


def attention_flops(n: int, d_k: int, heads: int = 1, d_v: int | None = None, n_keys: int | None = None) -> int:
    """Floating-point operations of the two matrix products of attention: ``2 n n_keys (d_k + d_v)`` per head.

    ``Q K^T`` takes ``n * n_keys`` dot products of length ``d_k``, and the
    weighted sum ``A V`` takes ``n * d_v`` dot products of length ``n_keys``;
    each term is one multiplication and one addition, counted as 2
    operations. The softmax adds a few operations per score (a subtraction,
    an exponential, a sum, a division), which is small next to ``d_k + d_v``
    and left out. ``d_v`` defaults to ``d_k`` and ``n_keys`` to ``n``. The
    blocked version does the same products in pieces, so the count is the
    same for both.

    Examples
    --------
    >>> attention_flops(3, 2)
    72
    >>> attention_flops(4096, 64, heads=32)
    137438953472
    """
    n = as_positive_int("n", n)
    d_k = as_positive_int("d_k", d_k)
    heads = as_positive_int("heads", heads)
    d_v = d_k if d_v is None else as_positive_int("d_v", d_v)
    n_keys = n if n_keys is None else as_positive_int("n_keys", n_keys)
    return heads * 2 * n * n_keys * (d_k + d_v)


def blocked_working_set_bytes(
    n: int,
    d_k: int,
    block_size: int,
    dtype: str = "float32",
    heads: int = 1,
    d_v: int | None = None,
    n_keys: int | None = None,
    input_copies: bool = False,
) -> int:
    """Bytes the blocked computation (:func:`attnlib.blocked.chunked_attention`) holds at once.

    Per head: two ``n x b`` arrays (one block of scores and their
    exponentials, ``b = min(block_size, n_keys)``), two ``n x d_v`` arrays
    (the running weighted sum of values, which becomes the output, and the
    block's contribution to it) and the running maximum and normaliser
    (``n`` numbers each), so ``2 n b + 2 n d_v + 2 n`` numbers. It grows
    linearly in ``n`` where the score matrix grows like ``n^2``. ``d_v``
    defaults to ``d_k`` and ``n_keys`` to ``n``.

    attnlib's input checks also copy ``Q``, ``K`` and ``V``
    (``n d_k + n_keys (d_k + d_v)`` more numbers, also linear in ``n``);
    ``input_copies=True`` counts them too, which is what ``tracemalloc``
    measures for a float64 call of ``chunked_attention``.

    Examples
    --------
    >>> blocked_working_set_bytes(4096, 64, 128, dtype="float64")
    12648448
    >>> blocked_working_set_bytes(4096, 64, 128, dtype="float64", input_copies=True)
    18939904
    >>> blocked_working_set_bytes(3, 2, 2, dtype="float64")
    240
    """
    n = as_positive_int("n", n)
    d_k = as_positive_int("d_k", d_k)
    block_size = as_positive_int("block_size", block_size)
    heads = as_positive_int("heads", heads)
    d_v = d_k if d_v is None else as_positive_int("d_v", d_v)
    n_keys = n if n_keys is None else as_positive_int("n_keys", n_keys)
    if not isinstance(input_copies, (bool, np.bool_)):
        raise ValueError(f"input_copies must be True or False; got {input_copies!r}")
    b = min(block_size, n_keys)
    numbers = 2 * n * b + 2 * n * d_v + 2 * n
    if input_copies:
        numbers += n * d_k + n_keys * (d_k + d_v)
    return heads * numbers * bytes_per_entry(dtype)

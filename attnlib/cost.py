"""How much memory the attention score matrix needs.

Self-attention over ``n`` tokens scores every query against every key, so
one head of one sequence holds an ``n x n`` matrix: doubling ``n``
quadruples it. These helpers count its entries and bytes, and print byte
counts in binary units (KiB, MiB, GiB, ...).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from ._validate import as_positive_int
from .formatting import format_bytes

__all__ = [
    "BLOCK_PASSES",
    "DENSE_PASSES",
    "DTYPE_BYTES",
    "TILE_PASSES",
    "TRAFFIC_METHODS",
    "Traffic",
    "attention_flops",
    "attention_traffic",
    "attention_traffic_terms",
    "blocked_working_set_bytes",
    "bytes_per_entry",
    "format_bytes",
    "score_matrix_bytes",
    "score_matrix_entries",
]

#: Bytes per number for the floating-point formats attention is usually run in.
DTYPE_BYTES: dict[str, int] = {"float64": 8, "float32": 4, "float16": 2, "bfloat16": 2}


def bytes_per_entry(dtype: str) -> int:
    """Bytes one number takes in ``dtype`` (a name from :data:`DTYPE_BYTES`).

    Raises
    ------
    ValueError
        ``dtype`` is not one of the values it may take. The message names the argument.

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

    Raises
    ------
    ValueError
        ``n``, ``n_keys``, ``heads`` or ``batch`` is not a positive integer. The message names the argument.

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

    Raises
    ------
    ValueError
        ``n``, ``heads``, ``batch`` or ``n_keys`` is not a positive integer; ``dtype`` is not one of the values it may
        take. The message names the argument.

    Examples
    --------
    >>> score_matrix_bytes(4096)
    67108864
    >>> score_matrix_bytes(4096, dtype="float16")
    33554432
    """
    return score_matrix_entries(n, n_keys=n_keys, heads=heads, batch=batch) * bytes_per_entry(dtype)


# --- operations and the blocked version's memory (chapter 15) ---------------------------------


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

    Raises
    ------
    ValueError
        ``n``, ``d_k``, ``heads``, ``d_v`` or ``n_keys`` is not a positive integer. The message names the argument.

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

    Raises
    ------
    ValueError
        ``n``, ``d_k``, ``block_size``, ``heads``, ``d_v`` or ``n_keys`` is not a positive integer; ``dtype`` is not one
        of the values it may take; ``input_copies`` is not ``True`` or ``False``. The message names the argument.

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


# --- memory traffic: bytes between main memory and the cache (chapter 15, issue 25) -------------

#: The three ways of computing attention the traffic model knows.
TRAFFIC_METHODS = ("dense", "key_blocked", "tiled")

#: Passes (reads, writes) over the ``n x n`` arrays in :func:`attnlib.core.attention`: ``Q K^T`` is written;
#: the division by the scale reads it and writes the scaled scores; the softmax reads them for the maximum,
#: reads them and writes ``x - max``, reads that and writes ``exp``, reads it for the sum, reads it and writes
#: the weights; ``weights @ V`` reads the weights.
DENSE_PASSES = (7, 5)

#: Passes (reads, writes) over each ``n x block`` strip in :func:`attnlib.blocked.chunked_attention`: the
#: product writes it; the overflow check reads it twice (minimum and maximum), the division by the scale
#: reads and writes it, the second check reads it twice; the online softmax reads it for the maximum, reads
#: and writes ``s - m``, reads and writes ``exp``, reads it for the sum; the normalisation reads and writes
#: it; the product with the values reads it.
BLOCK_PASSES = (10, 5)

#: Passes (reads, writes) over each tile of scores in :func:`attnlib.blocked.flash_attention`: the product
#: writes it, the maximum reads it, ``s - m`` and ``exp`` read and write it in place, the sum reads it and the
#: product with the values reads it (no overflow checks while the bound of the inputs rules overflow out).
TILE_PASSES = (5, 3)


class Traffic(NamedTuple):
    """Bytes one attention pass reads from and writes to main memory, by the model of :func:`attention_traffic`."""

    read: int
    written: int

    @property
    def total(self) -> int:
        """``read + written``."""
        return self.read + self.written


def attention_traffic(
    method: str,
    n: int,
    d: int,
    cache_bytes: int,
    *,
    block_size: int = 128,
    query_tile: int = 256,
    key_tile: int = 512,
    dtype: str = "float64",
) -> Traffic:
    """A model of the bytes moved between main memory and the cache by one attention pass (self-attention, no mask).

    An array that fits in ``cache_bytes`` together with what is used alongside it is read from main memory
    once and then stays in the cache; an array that does not is read (or written) in full at every pass over
    it. With ``w`` bytes per number:

    * ``"dense"`` (:func:`attnlib.core.attention`): ``Q``, ``K``, ``V`` are read and the output written once
      (``4 n d w``); when the ``n x n`` scores do not fit, every pass of :data:`DENSE_PASSES` moves
      ``n^2 w`` bytes: ``12 n^2 w`` in all;
    * ``"key_blocked"`` (:func:`attnlib.blocked.chunked_attention`, ``b = block_size``): when its working
      set (two ``n x b`` strips, a block of keys and values, the queries and the running output) does not
      fit, the passes of :data:`BLOCK_PASSES` over the strips move ``15 n^2 w`` bytes, since
      the strips tile the whole ``n x n`` score matrix; and when the queries and the running output
      (``2 n d w``) do not fit either, every block reads ``Q`` and reads and writes the output
      (4 reads and 3 writes of ``n d w``, with the block's ``p V``);
    * ``"tiled"`` (:func:`attnlib.blocked.flash_attention`, tiles ``q x k``): a tile of scores stays in the
      cache when ``q k w`` plus its queries, keys, values and running sum fit; then each query tile reads all
      keys and values once, ``(n / q) 2 n d w`` bytes, plus ``Q`` and the output once. A tile that does not
      fit adds the passes of :data:`TILE_PASSES` over ``n^2 w`` bytes.

    The numbers are a model: a cache is not a box of ``cache_bytes`` that holds exactly what is used most,
    prefetching hides part of the reading, and the arithmetic (about ``4 n^2 d`` operations for all three)
    takes time of its own. The chapter compares the model with measured times.

    Parameters
    ----------
    method:
        One of :data:`TRAFFIC_METHODS`.
    n, d:
        Sequence length and the width of queries, keys and values.
    cache_bytes:
        The size of the cache in bytes (a core's L2 cache, say).
    block_size, query_tile, key_tile:
        The block of ``"key_blocked"`` and the tile shape of ``"tiled"`` (keyword only).
    dtype:
        A name from :data:`DTYPE_BYTES`.

    Raises
    ------
    ValueError
        ``method`` or ``dtype`` is not one of the values it may take; ``n``, ``d``, ``cache_bytes``, ``block_size``,
        ``query_tile`` or ``key_tile`` is not a positive integer. The message names the argument.

    Examples
    --------
    >>> mib = 2**20
    >>> attention_traffic("dense", 4096, 64, mib).total / (4096**2 * 8)  # 12 passes, plus inputs and output
    12.0625
    >>> attention_traffic("key_blocked", 4096, 64, mib).total / (4096**2 * 8)
    18.5625
    >>> attention_traffic("tiled", 4096, 64, mib, query_tile=128, key_tile=256).total / (4096**2 * 8)
    1.03125
    >>> attention_traffic("key_blocked", 4096, 64, 32 * mib).total / (4096**2 * 8)  # two 4 MiB strips fit in 32 MiB
    0.0625
    >>> attention_traffic("key_blocked", 16384, 64, 32 * mib).total / (16384**2 * 8)  # two 16 MiB strips do not
    15.015625
    >>> attention_traffic("tiled", 64, 64, mib)  # everything fits: each number moves once
    Traffic(read=98304, written=32768)
    """
    terms = attention_traffic_terms(
        method, n, d, cache_bytes, block_size=block_size, query_tile=query_tile, key_tile=key_tile, dtype=dtype
    )
    return Traffic(sum(t.read for t in terms.values()), sum(t.written for t in terms.values()))


def attention_traffic_terms(
    method: str,
    n: int,
    d: int,
    cache_bytes: int,
    *,
    block_size: int = 128,
    query_tile: int = 256,
    key_tile: int = 512,
    dtype: str = "float64",
) -> dict[str, Traffic]:
    """:func:`attention_traffic`, split by cause: which arrays move, and why.

    The parts (those of the method only, each 0 when what it counts fits in the cache):

    * ``"inputs and output"``: ``Q``, ``K``, ``V`` read once and the output written once, ``4 n d w``;
    * ``"passes over the scores"``: every pass over an ``n x n`` array, a strip or a tile of scores
      that does not fit (:data:`DENSE_PASSES`, :data:`BLOCK_PASSES`, :data:`TILE_PASSES`, each pass
      ``n^2 w`` bytes in all);
    * ``"queries and output, every key block"`` (``"key_blocked"``): when ``Q`` and the running output
      do not fit, each of the ``n / b`` blocks reads ``Q`` and the output and writes the output (with its
      ``p V``: 4 reads and 3 writes of ``n d w``), ``7 d / b`` times ``n^2 w``;
    * ``"keys and values, every query tile"`` (``"tiled"``): when ``K`` and ``V`` do not fit, each query
      tile after the first reads them again, about ``2 d / q`` times ``n^2 w``.

    Parameters and checks are those of :func:`attention_traffic`.

    Raises
    ------
    ValueError
        ``method`` or ``dtype`` is not one of the values it may take; ``n``, ``d``, ``cache_bytes``, ``block_size``,
        ``query_tile`` or ``key_tile`` is not a positive integer. The message names the argument.

    Examples
    --------
    >>> mib, square = 2**20, 65536**2 * 8
    >>> {k: t.total / square for k, t in attention_traffic_terms("key_blocked", 65536, 64, mib).items()}
    {'inputs and output': 0.00390625, 'passes over the scores': 15.0, 'queries and output, every key block': 3.5}
    >>> round(attention_traffic_terms("tiled", 65536, 64, mib)["keys and values, every query tile"].total / square, 4)
    0.498
    """
    if not isinstance(method, str) or method not in TRAFFIC_METHODS:
        raise ValueError(f"method must be one of {list(TRAFFIC_METHODS)}; got {method!r}")
    n = as_positive_int("n", n)
    d = as_positive_int("d", d)
    cache = as_positive_int("cache_bytes", cache_bytes)
    b = min(as_positive_int("block_size", block_size), n)
    qt = min(as_positive_int("query_tile", query_tile), n)
    kt = min(as_positive_int("key_tile", key_tile), n)
    w = bytes_per_entry(dtype)
    square = n * n * w
    terms = {"inputs and output": Traffic(3 * n * d * w, n * d * w)}  # Q, K, V in, the output out
    none = Traffic(0, 0)
    if method == "dense":
        terms["passes over the scores"] = Traffic(DENSE_PASSES[0] * square, DENSE_PASSES[1] * square) if square > cache else none
    elif method == "key_blocked":
        strips_fit = (2 * n * b + 2 * b * d + 2 * n * d) * w <= cache  # two strips, a block of K and V, Q and the output
        terms["passes over the scores"] = none if strips_fit else Traffic(BLOCK_PASSES[0] * square, BLOCK_PASSES[1] * square)
        blocks = -(-n // b)
        fits = 2 * n * d * w <= cache
        terms["queries and output, every key block"] = none if fits else Traffic(4 * blocks * n * d * w, 3 * blocks * n * d * w)
    else:
        tiles = -(-n // qt)
        fits = 2 * n * d * w <= cache  # keys and values stay in the cache between query tiles
        tile_fits = (qt * kt + (2 * qt + 2 * kt) * d) * w <= cache
        terms["passes over the scores"] = none if tile_fits else Traffic(TILE_PASSES[0] * square, TILE_PASSES[1] * square)
        terms["keys and values, every query tile"] = none if fits else Traffic((tiles - 1) * 2 * n * d * w, 0)
    return {k: Traffic(int(t.read), int(t.written)) for k, t in terms.items()}

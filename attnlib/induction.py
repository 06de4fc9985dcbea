"""Induction heads: a two-layer attention-only model that learns to copy in context.

The model (Elhage et al. 2021 call it *attention-only*) has no MLP and no
layer norm. A sequence of token ids ``t_0 .. t_{n-1}`` becomes the residual
stream ``x0 = E[t] + P[position]`` (token and learned position embeddings,
one row per token); two layers of causal multi-head self-attention add to it,
``x1 = x0 + MHA_1(x0)`` and ``x2 = x1 + MHA_2(x1)``; the unembedding gives the
logits ``x2 W_U`` of the next token at every position. Each layer is
:func:`attnlib.core.multi_head_parts` (four square matrices, heads side by
side) and its backward pass is :func:`attnlib.backward.attention_backward_from`
per head with :func:`attnlib.backward.projection_gradients`; the optimizer is
:class:`attnlib.training.Adam`.

The data (:func:`repeated_tokens`) are sequences of distinct random tokens
whose second half repeats the first; the half length varies from sequence to
sequence (:func:`half_length_chances`), so that the model cannot copy from a
fixed distance and must find the earlier occurrence of the current token. The
first half is not quite unpredictable: it never repeats a token it holds, and
its last token is followed by the first one (:func:`repeat_start_chance`);
:func:`best_first_half_loss` and :func:`best_loss_by_position` give the lowest
loss any predictor can reach on these data.

:func:`previous_token_score` (weight on the token just before) finds the
previous-token head of Elhage et al. (2021); :func:`prefix_matching_score`
(weight, in the repeated half, on the token after the earlier occurrence of the
current token) and :func:`copying_score` of :func:`token_ov_circuit` (does the
head raise the logit of the token it attends to?) test the two properties by
which Olsson et al. (2022) define an induction head. :func:`composition_scores`
measures how much layer 2's queries, keys and values read what a layer-1 head
wrote (Elhage et al.'s Q-, K- and V-composition); :func:`drop_step` dates the
sudden fall of the loss against a fixed reference.

A head's circuits are written for row vectors, as everywhere in the book:
``W_QK = W_Q W_K^T`` (chapter 14's bilinear form; the score is
``x_i W_QK x_j^T / sqrt(d_head)``) and ``W_OV = W_V W_O``. Elhage et al. write
columns: their ``W_QK = W_Q^T W_K`` is the same matrix, their ``W_OV = W_O W_V``
is the transpose of this one.

Batches stack their sequences as rows, and a block-diagonal causal mask
keeps every token to its own sequence and its own past, so one call of the
attention function runs the whole batch (as in :mod:`attnlib.training`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ._memory import check_size
from ._threads import one_blas_thread
from ._validate import (
    as_array,
    as_int,
    as_int_sequence,
    as_positive_int,
    as_positive_real,
    as_rng,
    as_seed,
    finite_result,
    quiet,
    to_ndarray,
)
from .backward import AttentionGradients, attention_backward_from, projection_gradients
from .core import MultiHeadResult, head_width, multi_head_parts
from .training import Adam

__all__ = [
    "BOOK",
    "CopyingScore",
    "InductionForward",
    "InductionModel",
    "InductionRun",
    "PortableRandom",
    "TokenBatch",
    "best_first_half_loss",
    "best_loss_by_position",
    "book_model",
    "book_probe",
    "book_run",
    "book_runs",
    "composition_score",
    "composition_scores",
    "copying_score",
    "cross_entropy",
    "drop_step",
    "half_length_chances",
    "half_losses",
    "letters_to_tokens",
    "loss_by_position",
    "prefix_matching_score",
    "previous_token_score",
    "repeat_start_chance",
    "repeated_tokens",
    "token_batch",
    "token_key_composition",
    "token_letters",
    "token_ov_circuit",
    "train_induction",
    "words_to_tokens",
]

Params = dict[str, np.ndarray]
LAYERS = (1, 2)
LAYER_MATRICES = ("W_Q", "W_K", "W_V", "W_O")


@dataclass(frozen=True)
class TokenBatch:
    """Sequences of token ids stacked as rows, with what the model needs to read them.

    Attributes
    ----------
    tokens:
        ``(rows,)`` token ids, sequence after sequence.
    positions:
        ``(rows,)`` the position of each token, which picks its position
        embedding: ``start + index`` (see ``starts_at``).
    index:
        ``(rows,)`` the place of each token in its own sequence (0, 1, ...).
    lengths:
        ``(n_sequences,)`` tokens per sequence.
    halves:
        ``(n_sequences,)`` the half length ``T`` of a repeated sequence (its
        tokens ``T .. 2T-1`` repeat ``0 .. T-1``), or 0 for a sequence that is
        not known to repeat.
    mask:
        ``(rows, rows)`` boolean, True where a row may attend to a key: the
        same sequence and not later (block-diagonal causal).
    targets:
        ``(rows,)`` the next token of each row, ``-1`` for the last token of a
        sequence (nothing to predict).
    vocab_size:
        The number of token ids (ids are ``0 .. vocab_size - 1``).
    starts_at:
        ``(n_sequences,)`` the position of each sequence's first token (0
        unless the sequences were placed at random positions).
    """

    tokens: np.ndarray
    positions: np.ndarray
    index: np.ndarray
    lengths: np.ndarray
    halves: np.ndarray
    mask: np.ndarray
    targets: np.ndarray
    vocab_size: int
    starts_at: np.ndarray

    @property
    def rows(self) -> int:
        """How many tokens in all."""
        return int(self.tokens.size)

    @property
    def starts(self) -> np.ndarray:
        """The first row of every sequence."""
        return np.concatenate([[0], np.cumsum(self.lengths)[:-1]]).astype(int)

    def _half_of_row(self) -> np.ndarray:
        return np.repeat(self.halves, self.lengths)

    @property
    def first_half(self) -> np.ndarray:
        """``(rows,)`` True for the tokens of the first half of a repeated sequence (positions ``0 .. T-1``).

        Their next token can be guessed only in part: positions ``0 .. T-2``
        precede a token not seen before, and position ``T-1`` precedes the start
        of the repeat (see :func:`repeat_start_chance`).
        """
        half = self._half_of_row()
        return (half > 0) & (self.index < half)

    @property
    def second_half(self) -> np.ndarray:
        """``(rows,)`` True for the tokens of the repeat that have a next token (positions ``T .. 2T-2``).

        Their next token already appeared: it followed the earlier occurrence
        of the current token.
        """
        half = self._half_of_row()
        return (half > 0) & (self.index >= half) & (self.index <= 2 * half - 2)


_MASK32 = 0xFFFFFFFF
_GOLDEN32 = 0x9E3779B9


def _mix32(z: int) -> int:
    """The finaliser of splitmix32 (MurmurHash3's): a bijection of 32-bit words."""
    z = ((z ^ (z >> 16)) * 0x85EBCA6B) & _MASK32
    z = ((z ^ (z >> 13)) * 0xC2B2AE35) & _MASK32
    return z ^ (z >> 16)


class PortableRandom:
    """A seeded random generator that the live training explorer's JavaScript reproduces draw for draw.

    numpy's generators cannot be rebuilt in a page without shipping their tables, so the
    explorer that trains in the browser (``attnlib/explorers/static/live_training.js``) and
    attnlib draw from this one instead: xoshiro128** (Blackman and Vigna) on four 32-bit
    words, seeded by splitmix32. Every draw is integer arithmetic on 32-bit words, which both
    languages do exactly: a uniform number is 53 bits of two words divided by ``2**53``, a
    whole number below ``n`` is ``floor(uniform * n)``, a permutation is a Fisher-Yates
    shuffle, and a normal number is Box-Muller's ``sqrt(-2 log u1) cos(2 pi u2)`` (whose
    logarithm and cosine may differ in the last bit between two maths libraries).

    Pass it where :meth:`InductionModel.init`, :func:`repeated_tokens` or
    :func:`train_induction` take a seed: they then draw from it, in the order the
    JavaScript does. Like a ``numpy.random.Generator`` it keeps its state between calls.

    Parameters
    ----------
    seed:
        A non-negative integer; its 32-bit words, lowest first, are folded into the state (the
        page's seeds are below ``2**32``: one word).

    Raises
    ------
    ValueError
        ``seed`` is not a non-negative integer. The message names the argument.

    Examples
    --------
    >>> r = PortableRandom(0)
    >>> [r.uint32() for _ in range(3)]
    [4187458251, 2444602982, 3872279642]
    >>> u = PortableRandom(7).random()
    >>> 0.0 <= u < 1.0
    True
    """

    def __init__(self, seed: int = 0) -> None:
        seed = as_seed("seed", seed)
        h, rest = 0, seed
        while True:
            h = _mix32(((h ^ (rest & _MASK32)) + _GOLDEN32) & _MASK32)
            rest >>= 32
            if not rest:
                break
        state = []
        for _ in range(4):
            h = (h + _GOLDEN32) & _MASK32
            state.append(_mix32(h))
        self._s = state  # four distinct outputs of a bijection: never all zero

    def __repr__(self) -> str:
        return f"PortableRandom(state={self._s})"

    def uint32(self) -> int:
        """The next 32-bit word (0 to ``2**32 - 1``) of xoshiro128**.

        Examples
        --------
        >>> PortableRandom(1).uint32() < 2**32
        True
        """
        s0, s1, s2, s3 = self._s
        x = (s1 * 5) & _MASK32
        result = ((((x << 7) | (x >> 25)) & _MASK32) * 9) & _MASK32
        t = (s1 << 9) & _MASK32
        s2 ^= s0
        s3 ^= s1
        s1 ^= s2
        s0 ^= s3
        s2 ^= t
        s3 = ((s3 << 11) | (s3 >> 21)) & _MASK32
        self._s = [s0, s1, s2, s3]
        return result

    def random(self) -> float:
        """A uniform number in ``[0, 1)``: 27 bits of one word and 26 of the next, over ``2**53``.

        Examples
        --------
        >>> round(PortableRandom(0).random(), 6)
        0.974969
        """
        a = self.uint32() >> 5
        b = self.uint32() >> 6
        return (a * 67108864.0 + b) / 9007199254740992.0

    def _below(self, n: int) -> int:
        return int(self.random() * n)  # floor: the product is >= 0

    def _normal(self) -> float:
        u1 = 1.0 - self.random()  # in (0, 1]: its logarithm is finite
        u2 = self.random()
        return math.sqrt(-2.0 * math.log(u1)) * math.cos(2.0 * math.pi * u2)

    def _normals(self, shape: tuple[int, int]) -> np.ndarray:
        return np.array([self._normal() for _ in range(shape[0] * shape[1])], dtype=float).reshape(shape)

    def _permutation(self, n: int) -> list[int]:
        out = list(range(n))
        for i in range(n - 1, 0, -1):
            j = self._below(i + 1)
            out[i], out[j] = out[j], out[i]
        return out

    def _half_length(self, low: int, high: int) -> int:
        """A half length ``low .. high`` with chance proportional to ``1 / T``, by sums written out (as the JavaScript adds)."""
        cumulative, acc = [], 0.0
        for T in range(low, high + 1):
            acc += 1.0 / T
            cumulative.append(acc)
        target = self.random() * acc
        for k, c in enumerate(cumulative):
            if target < c:
                return low + k
        return high


def _draw_portable(
    rng: PortableRandom, n_sequences: int, vocab_size: int, low: int, high: int, n_positions: int | None
) -> tuple[list[np.ndarray], np.ndarray, np.ndarray]:
    """:func:`_draw_repeats` from a :class:`PortableRandom`: every half length, then every first half, then every start."""
    halves = np.array([rng._half_length(low, high) for _ in range(n_sequences)], dtype=int)
    seqs = []
    for h in halves:
        first = np.array(rng._permutation(vocab_size)[:h], dtype=int)
        seqs.append(np.concatenate([first, first]))
    if n_positions is None:
        starts = np.zeros(n_sequences, dtype=int)
    else:
        starts = np.array([rng._below(n_positions - 2 * int(h) + 1) for h in halves], dtype=int)
    return seqs, halves, starts


def _rng(name: str, seed: Any) -> np.random.Generator | PortableRandom:
    """:func:`attnlib._validate.as_rng`, which also lets a :class:`PortableRandom` through."""
    return seed if isinstance(seed, PortableRandom) else as_rng(name, seed)


def _block_causal_mask(lengths: np.ndarray) -> np.ndarray:
    seq = np.repeat(np.arange(lengths.size), lengths)
    rows = np.arange(seq.size)
    return (seq[:, None] == seq[None, :]) & (rows[None, :] <= rows[:, None])


def _read_only(arr: np.ndarray) -> np.ndarray:
    arr.setflags(write=False)
    return arr


def _make_batch(sequences: list[np.ndarray], halves: np.ndarray, starts_at: np.ndarray | None, vocab_size: int) -> TokenBatch:
    lengths = np.array([s.size for s in sequences], dtype=int)
    rows = int(lengths.sum())
    check_size(f"a batch of {rows} tokens: its (rows x rows) mask", rows * rows, 1)
    starts_at = np.zeros(lengths.size, dtype=int) if starts_at is None else starts_at.astype(int)
    tokens = np.concatenate(sequences).astype(int)
    index = np.concatenate([np.arange(n) for n in lengths])
    positions = index + np.repeat(starts_at, lengths)
    targets = np.concatenate([np.append(s[1:], -1) for s in sequences]).astype(int)
    arrays = (tokens, positions, index, lengths, halves.astype(int), _block_causal_mask(lengths), targets)
    return TokenBatch(*(_read_only(a) for a in arrays), vocab_size, _read_only(starts_at))


def token_batch(sequences: Any, vocab_size: int, halves: Any = None) -> TokenBatch:
    """A :class:`TokenBatch` of given sequences of token ids.

    Parameters
    ----------
    sequences:
        A list of sequences, each a non-empty list of integer ids in
        ``0 .. vocab_size - 1`` (one sequence may be given as a flat list).
    vocab_size:
        The number of token ids, at least 2.
    halves:
        ``None`` (no sequence is known to repeat), or one half length per
        sequence: ``T`` if the sequence has ``2T`` tokens whose second half
        repeats the first, else 0.

    Raises
    ------
    ValueError
        ``sequences`` is not a list of non-empty lists of integer ids below ``vocab_size``; ``vocab_size`` is not an
        integer of at least 2; ``halves`` is neither ``None`` nor one half length per sequence, each 0 or the half of a
        sequence whose second half repeats the first. The message names the argument.

    Examples
    --------
    >>> b = token_batch([[3, 1, 4, 3, 1, 4]], vocab_size=5, halves=[3])
    >>> b.targets.tolist(), b.second_half.astype(int).tolist()
    ([1, 4, 3, 1, 4, -1], [0, 0, 0, 1, 1, 0])
    """
    vocab_size = as_int("vocab_size", vocab_size, minimum=2, what="an integer >= 2")
    if isinstance(sequences, (str, bytes, dict)) or not isinstance(sequences, (Sequence, np.ndarray, range)):
        raise ValueError(f"sequences must be a list of lists of token ids; got {type(sequences).__name__}")
    if len(sequences) == 0:
        raise ValueError("sequences is empty; give at least one sequence of token ids")
    if all(not isinstance(s, (Sequence, np.ndarray, range)) or isinstance(s, str) for s in sequences):
        sequences = [sequences]  # one flat sequence
    seqs = []
    for i, s in enumerate(sequences):
        ids = as_int_sequence(f"sequences[{i}]", s, minimum=0)
        bad = [t for t in ids if t >= vocab_size]
        if bad:
            raise ValueError(f"sequences[{i}] holds the id {bad[0]}, but ids must lie in 0 .. vocab_size - 1 = {vocab_size - 1}")
        seqs.append(np.array(ids, dtype=int))
    if halves is None:
        half = np.zeros(len(seqs), dtype=int)
    else:
        given = as_int_sequence("halves", halves, minimum=0)
        if len(given) != len(seqs):
            raise ValueError(f"halves has {len(given)} entries for {len(seqs)} sequences; give one per sequence")
        for i, (s, h) in enumerate(zip(seqs, given)):  # checked as Python ints: a huge half is refused, not wrapped
            if h and (s.size != 2 * h or not np.array_equal(s[:h], s[h:])):
                raise ValueError(f"halves[{i}] = {h} but sequences[{i}] is not {2 * h} tokens whose second half repeats the first")
        half = np.array(given, dtype=int)
    return _make_batch(seqs, half, None, vocab_size)


def repeated_tokens(
    n_sequences: int,
    vocab_size: int,
    half_lengths: Any,
    seed: int | np.random.Generator | PortableRandom = 0,
    n_positions: int | None = None,
) -> TokenBatch:
    """Sequences of random tokens whose second half repeats the first.

    Every sequence draws its half length ``T`` from ``half_lengths =
    (shortest, longest)`` with probability proportional to ``1 / T`` (short
    sequences, whose repeat is easiest to find, come more often; every length
    comes), or takes the one length given. Its first half is ``T`` distinct
    tokens drawn uniformly from the vocabulary, so that every token of the
    repeat has exactly one earlier occurrence; the second half repeats them:
    ``2T`` tokens. Because ``T`` varies, the repeat is at no fixed distance.

    With ``n_positions``, every sequence starts at a uniformly random position
    ``0 .. n_positions - 2T`` (so short sequences still train every position
    embedding); without it, at position 0.

    Raises
    ------
    ValueError
        ``n_sequences`` or ``vocab_size`` is not a positive integer; ``half_lengths`` is not a length or a ``(shortest,
        longest)`` pair up to ``vocab_size``; ``seed`` is not a seed by the seed rule; ``n_positions`` is neither
        ``None`` nor room for the longest sequence; or the batch would not fit in memory. The message names the
        argument.

    Examples
    --------
    >>> b = repeated_tokens(2, vocab_size=10, half_lengths=3, seed=0)
    >>> b.lengths.tolist(), b.halves.tolist(), b.starts_at.tolist()
    ([6, 6], [3, 3], [0, 0])
    >>> bool((b.tokens[:3] == b.tokens[3:6]).all()) and len(set(b.tokens[:3].tolist())) == 3
    True
    """
    n_sequences = as_positive_int("n_sequences", n_sequences)
    vocab_size = as_int("vocab_size", vocab_size, minimum=2, what="an integer >= 2")
    low, high = _half_range(half_lengths)
    if high > vocab_size:
        raise ValueError(f"half_lengths up to {high} need as many distinct tokens, but vocab_size is {vocab_size}")
    check_size(f"repeated_tokens(vocab_size={vocab_size}): a shuffled vocabulary", vocab_size)
    if n_positions is not None:
        n_positions = as_positive_int("n_positions", n_positions)
        if n_positions >= 2**62:
            raise ValueError(f"n_positions must be below 2**62; got {n_positions}")
        if 2 * high > n_positions:
            raise ValueError(f"half_lengths up to {high} make sequences of {2 * high} tokens, more than n_positions={n_positions}")
    check_size(f"repeated_tokens(n_sequences={n_sequences}, half_lengths up to {high}): its mask", (2 * high * n_sequences) ** 2, 1)
    return _make_batch(*_draw_repeats(_rng("seed", seed), n_sequences, vocab_size, low, high, n_positions), vocab_size)


def _draw_repeats(
    rng: np.random.Generator | PortableRandom, n_sequences: int, vocab_size: int, low: int, high: int, n_positions: int | None
) -> tuple[list[np.ndarray], np.ndarray, np.ndarray]:
    """The sequences, half lengths and starting positions of :func:`repeated_tokens` (checked arguments)."""
    if isinstance(rng, PortableRandom):
        return _draw_portable(rng, n_sequences, vocab_size, low, high, n_positions)
    lengths, chances = _length_law(low, high)
    halves = rng.choice(lengths, size=n_sequences, p=chances)
    seqs = []
    for h in halves:
        first = rng.permutation(vocab_size)[:h]
        seqs.append(np.concatenate([first, first]))
    starts = np.zeros(n_sequences, dtype=int) if n_positions is None else rng.integers(0, n_positions - 2 * halves + 1)
    return seqs, halves, starts


def _half_range(half_lengths: Any) -> tuple[int, int]:
    if isinstance(half_lengths, (tuple, list)):
        if len(half_lengths) != 2:
            raise ValueError(f"half_lengths must be one integer >= 2 or (shortest, longest); got {half_lengths!r}")
        low, high = (as_int(f"half_lengths[{i}]", v, minimum=2, what="an integer >= 2") for i, v in enumerate(half_lengths))
        if low > high:
            raise ValueError(f"half_lengths must be (shortest, longest) with shortest <= longest; got {half_lengths!r}")
        return low, high
    n = as_int("half_lengths", half_lengths, minimum=2, what="an integer >= 2 or (shortest, longest)")
    return n, n


def _length_law(low: int, high: int) -> tuple[np.ndarray, np.ndarray]:
    """The half lengths ``low .. high`` and their chances, proportional to ``1 / T`` (bounds already checked)."""
    lengths = np.arange(low, high + 1)
    chance = 1.0 / lengths
    return lengths, chance / chance.sum()


def _checked_lengths(caller: str, half_lengths: Any, per_length: int) -> tuple[int, int]:
    low, high = _half_range(half_lengths)
    check_size(f"{caller}(half_lengths up to {high}): {per_length} numbers per length", per_length * high)
    return low, high


def half_length_chances(half_lengths: Any) -> tuple[np.ndarray, np.ndarray]:
    """The law of the half length ``T`` in :func:`repeated_tokens`: every length and its chance.

    Parameters
    ----------
    half_lengths:
        What :func:`repeated_tokens` takes: ``(shortest, longest)``, whose lengths
        come with chances proportional to ``1 / T``, or one integer >= 2, which
        comes always.

    Returns
    -------
    lengths, chances:
        ``lengths`` holds the integers ``shortest .. longest``; ``chances`` (floats
        that sum to 1) the probability with which :func:`repeated_tokens` draws each.

    Raises
    ------
    ValueError
        If ``half_lengths`` is not one integer >= 2 or a pair ``(shortest, longest)``
        of them with ``shortest <= longest``, or if its lengths could not fit in memory.

    Examples
    --------
    >>> lengths, chances = half_length_chances((2, 4))
    >>> lengths.tolist(), chances.round(4).tolist()  # in the ratio 1/2 : 1/3 : 1/4
    ([2, 3, 4], [0.4615, 0.3077, 0.2308])
    """
    return _length_law(*_checked_lengths("half_length_chances", half_lengths, 2))


def repeat_start_chance(half_lengths: Any) -> np.ndarray:
    """At each position of a first half, the chance that the next token is the first token again.

    A first half holds distinct tokens. After ``t_0 .. t_i``, all different, the next token
    is a token not seen yet, or ``t_0`` if the half ends here (``T = i + 1``): the start of
    the repeat. Seeing ``i + 1`` distinct tokens tells that ``T >= i + 1`` and nothing more,
    so entry ``i`` is ``P(T = i + 1 | T >= i + 1)`` under :func:`half_length_chances`. It is
    0 before the shortest length and 1 at the longest: the cap on the length announces the
    repeat.

    Parameters
    ----------
    half_lengths:
        As in :func:`repeated_tokens`: one integer >= 2 or ``(shortest, longest)``.

    Returns
    -------
    numpy.ndarray
        ``(longest,)``, entry ``i`` for position ``i = 0 .. longest - 1``.

    Raises
    ------
    ValueError
        If ``half_lengths`` is not valid (see :func:`half_length_chances`).

    Examples
    --------
    >>> repeat_start_chance((2, 4)).round(4).tolist()  # T = 2 with chance 6/13, then T = 3 given T >= 3: 4/7
    [0.0, 0.4615, 0.5714, 1.0]
    """
    return _repeat_start(*_checked_lengths("repeat_start_chance", half_lengths, 3))


def _repeat_start(low: int, high: int) -> np.ndarray:
    lengths, chances = _length_law(low, high)
    ends = np.zeros(high)
    ends[lengths - 1] = chances  # P(T = i + 1)
    going = np.cumsum(ends[::-1])[::-1]  # P(T >= i + 1), 1 up to the shortest length
    out = np.zeros(high)
    out[low - 1 :] = ends[low - 1 :] / going[low - 1 :]
    out[high - 1] = 1.0  # exactly: every half still going ends at the longest length
    return out


def _log_unseen(vocab_size: int, n: int) -> np.ndarray:
    """``log(vocab_size - 1 - i)`` for ``i = 0 .. n - 1``, for a vocabulary of any size."""
    i = np.arange(n, dtype=float)
    if vocab_size < 2**53:
        return np.log(vocab_size - 1.0 - i)
    return math.log(vocab_size) + np.log1p(-(i + 1.0) * math.exp(-math.log(vocab_size)))


def _vocab_for(vocab_size: Any, high: int) -> int:
    vocab_size = as_int("vocab_size", vocab_size, minimum=2, what="an integer >= 2")
    if high > vocab_size:
        raise ValueError(f"half_lengths up to {high} need as many distinct tokens, but vocab_size is {vocab_size}")
    return vocab_size


def _best_first_halves(vocab_size: int, low: int, high: int) -> tuple[np.ndarray, np.ndarray]:
    """The best loss at every position but the last of a first half, and at its last position, by position.

    ``go_on[i]`` (``i = 0 .. high - 2``) is the loss of the best prediction at position ``i`` when the
    next token is a new one, ``end[i]`` (``i = 0 .. high - 1``) when it is ``t_0`` (``i = T - 1``).
    """
    start = _repeat_start(low, high)
    with quiet():
        go_on = _log_unseen(vocab_size, high - 1) - np.log1p(-start[:-1])
        end = 0.0 - np.log(np.where(start > 0, start, 1.0))  # 0.0 - 0.0 is 0.0, not -0.0
    return go_on, end


def best_loss_by_position(vocab_size: Any, half_lengths: Any, half_length: Any) -> np.ndarray:
    """The lowest loss any predictor can reach at every position of a sequence of :func:`repeated_tokens`.

    The predictor knows how the data are made (the vocabulary, the law of ``T``) and sees the
    sequence so far. In the first half it is Bayes-optimal: with chance
    :func:`repeat_start_chance` the next token is ``t_0``, otherwise each of the
    ``vocab_size - 1 - i`` tokens not seen yet is equally likely. So at position
    ``i < T - 1`` of a sequence of half length ``T`` it pays
    ``log(vocab_size - 1 - i) - log(1 - repeat_start_chance[i])``, and at ``i = T - 1``
    ``-log(repeat_start_chance[T - 1])``. From position ``T`` on it has seen the repeat begin,
    so knows ``T`` and every next token: loss 0. Entry ``i`` is scored, as in
    :func:`loss_by_position`, on predicting token ``i + 1``.

    Parameters
    ----------
    vocab_size:
        The number of token ids, at least the longest half length.
    half_lengths:
        The law the data were drawn from, as in :func:`repeated_tokens`.
    half_length:
        The half length ``T`` of the sequence scored; one of the lengths of ``half_lengths``.

    Returns
    -------
    numpy.ndarray
        ``(2 T - 1,)``: the best loss at positions ``0 .. 2T - 2``, in nats.

    Raises
    ------
    ValueError
        If ``vocab_size`` is not an integer >= 2 or is below the longest half length,
        if ``half_lengths`` is not valid (see :func:`half_length_chances`), or if
        ``half_length`` is not one of its lengths.

    Examples
    --------
    >>> best_loss_by_position(4, (2, 3), 3).round(4).tolist()  # log 3; log 2 - log(1 - 0.6); -log 1
    [1.0986, 1.6094, 0.0, 0.0, 0.0]
    """
    low, high = _checked_lengths("best_loss_by_position", half_lengths, 4)
    vocab_size = _vocab_for(vocab_size, high)
    T = as_int("half_length", half_length, minimum=2, what="an integer >= 2")
    if not low <= T <= high:
        raise ValueError(f"half_length must be one of the lengths {low} .. {high} of half_lengths; got {T}")
    go_on, end = _best_first_halves(vocab_size, low, high)
    out = np.zeros(2 * T - 1)
    out[: T - 1] = go_on[: T - 1]
    out[T - 1] = end[T - 1]
    return finite_result(out, "the best loss by position", "vocab_size and half_lengths")


def best_first_half_loss(vocab_size: Any, half_lengths: Any) -> float:
    """The lowest mean loss any predictor can reach on the first halves of :func:`repeated_tokens`.

    The mean of :func:`best_loss_by_position` over the first-half positions ``0 .. T - 1``,
    weighted as :func:`half_losses` and :func:`train_induction` weigh them: every first-half
    token counts once, so a half length ``T`` counts with its chance times ``T``. It is below
    ``log(vocab_size)``: a first half never repeats a token it holds, and its last position
    is followed by ``t_0``. It is the lowest expected loss of a predictor that knows how far
    into its sequence it is but not where the sequence starts. A predictor that also uses the
    start can do a little better, because a sequence that starts late must be short: for
    chapter 17's data (vocabulary 32, half lengths 2 to 12, starts drawn evenly where the
    sequence fits in 48 positions) the Bayes predictor that knows the start reaches about
    3.1031 nats against this 3.1255.

    Parameters
    ----------
    vocab_size:
        The number of token ids, at least the longest half length.
    half_lengths:
        As in :func:`repeated_tokens`: one integer >= 2 or ``(shortest, longest)``.

    Returns
    -------
    float
        The loss in nats.

    Raises
    ------
    ValueError
        If ``vocab_size`` is not an integer >= 2 or is below the longest half length,
        or if ``half_lengths`` is not valid (see :func:`half_length_chances`).

    Examples
    --------
    >>> round(best_first_half_loss(32, (2, 12)), 4), round(math.log(32), 4)  # chapter 17's data
    (3.1255, 3.4657)
    >>> round(best_first_half_loss(4, 2), 4)  # T = 2 always: log 3 at position 0, then t_0 for sure
    0.5493
    """
    low, high = _checked_lengths("best_first_half_loss", half_lengths, 5)
    vocab_size = _vocab_for(vocab_size, high)
    lengths, chances = _length_law(low, high)
    go_on, end = _best_first_halves(vocab_size, low, high)
    before_end = np.concatenate([[0.0], np.cumsum(go_on)])  # sum of go_on[0 .. T - 2] at index T - 1
    per_half = before_end[lengths - 1] + end[lengths - 1]
    with quiet():
        mean = float(np.sum(chances * per_half) / np.sum(chances * lengths))
    return float(finite_result(mean, "the best first-half loss", "vocab_size and half_lengths"))


@dataclass(frozen=True)
class InductionForward:
    """Every intermediate of the model on one batch.

    Attributes
    ----------
    residuals:
        ``(x0, x1, x2)``: the residual stream before layer 1, after layer 1
        and after layer 2, each ``(rows, d_model)`` (``(x0, x1)`` for the
        one-layer model).
    layers:
        The :class:`attnlib.core.MultiHeadResult` of layers 1 and 2 (before
        any ablation; layer 1's only, for the one-layer model).
    logits:
        ``(rows, vocab_size)``, the last residual stream times ``W_U``.
    ablated:
        The ``(layer, head)`` pairs whose output was set to zero.
    """

    residuals: tuple[np.ndarray, ...]
    layers: tuple[MultiHeadResult, ...]
    logits: np.ndarray
    ablated: tuple[tuple[int, int], ...]

    @property
    def weights(self) -> np.ndarray:
        """``(n_layers, n_heads, rows, rows)``: the attention weights of every head of every layer."""
        return np.stack([np.stack([h.weights for h in layer.heads]) for layer in self.layers])


@dataclass(frozen=True)
class InductionModel:
    """The two-layer attention-only model (or its one-layer contrast); its parameters live in a dict (see :meth:`init`).

    ``E`` (``vocab_size x d_model``) and ``P`` (``n_positions x d_model``)
    are the token and position embeddings, ``W_Q1 .. W_O1`` and ``W_Q2 ..
    W_O2`` the square matrices of the two layers (``n_layers = 1`` keeps only
    layer 1: the one-layer model of exercise 17.3; head ``r`` uses columns
    ``r d_head .. (r+1) d_head - 1`` of ``W_Q``, ``W_K``, ``W_V`` and the same
    rows of ``W_O``), ``W_U`` (``d_model x vocab_size``) the unembedding.

    Examples
    --------
    >>> m = InductionModel(vocab_size=5, n_positions=6, d_model=4, n_heads=2)
    >>> p = m.init(seed=0)
    >>> sorted(p)[:3], p["E"].shape, p["W_U"].shape
    (['E', 'P', 'W_K1'], (5, 4), (4, 5))
    >>> list(InductionModel(vocab_size=5, n_positions=6, d_model=4, n_layers=1).shapes())
    ['E', 'P', 'W_Q1', 'W_K1', 'W_V1', 'W_O1', 'W_U']
    """

    vocab_size: int = 26
    n_positions: int = 48
    d_model: int = 32
    n_heads: int = 1
    n_layers: int = 2

    def __post_init__(self) -> None:
        object.__setattr__(self, "vocab_size", as_int("vocab_size", self.vocab_size, minimum=2, what="an integer >= 2"))
        for name in ("n_positions", "d_model", "n_heads"):
            object.__setattr__(self, name, as_positive_int(name, getattr(self, name)))
        n_layers = as_int("n_layers", self.n_layers, minimum=1, what="1 or 2 (layers of heads)")
        if n_layers not in LAYERS:
            raise ValueError(f"n_layers must be 1 or 2 (layers of heads); got {n_layers}")
        object.__setattr__(self, "n_layers", n_layers)
        head_width(self.d_model, self.n_heads)  # n_heads must divide d_model
        check_size(
            f"InductionModel(d_model={self.d_model}): its matrices",
            self.d_model * (8 * self.d_model + 2 * self.vocab_size + self.n_positions),
        )

    @property
    def d_head(self) -> int:
        """Columns per head."""
        return self.d_model // self.n_heads

    @property
    def layers(self) -> tuple[int, ...]:
        """The layers, numbered from 1: ``(1, 2)``, or ``(1,)`` for the one-layer model."""
        return LAYERS[: self.n_layers]

    def shapes(self) -> dict[str, tuple[int, int]]:
        """The shape of every parameter, by name."""
        d = self.d_model
        out = {"E": (self.vocab_size, d), "P": (self.n_positions, d)}
        for layer in self.layers:
            out.update({f"{m}{layer}": (d, d) for m in LAYER_MATRICES})
        out["W_U"] = (d, self.vocab_size)
        return out

    def init(self, seed: int | np.random.Generator | PortableRandom = 0, std: float | None = None) -> Params:
        """Random parameters: normal entries of standard deviation ``std`` (``1 / sqrt(d_model)`` by default).

        The matrices are drawn in the order of :meth:`shapes`, each row after row; from a
        :class:`PortableRandom` the live training explorer draws the same ones.

        Raises
        ------
        ValueError
            ``seed`` is not a seed by the seed rule (a non-negative integer, a ``numpy.random.Generator`` or a
            :class:`PortableRandom`); ``std`` is
            neither ``None`` nor a finite real number in its range; or a result would overflow float64 (the error names
            the inputs it came from). The message names the argument.
        """
        std = 1.0 / np.sqrt(self.d_model) if std is None else as_positive_real("std", std)
        rng = _rng("seed", seed)
        draw = rng._normals if isinstance(rng, PortableRandom) else lambda shape: rng.normal(size=shape)
        with quiet():
            return {name: finite_result(std * draw(shape), f"std * N(0, 1) for {name}", "std") for name, shape in self.shapes().items()}

    def _params(self, params: Any) -> Params:
        if not isinstance(params, dict):
            raise ValueError(f"params must be a dict of matrices (what InductionModel.init returns); got {type(params).__name__}")
        out = {}
        for name, shape in self.shapes().items():
            if name not in params:
                raise ValueError(f"params has no {name!r}; it needs {list(self.shapes())}")
            out[name] = as_array(f"params[{name!r}]", params[name], 2)
            if out[name].shape != shape:
                raise ValueError(f"params[{name!r}] has shape {out[name].shape} but this model needs {shape}")
        return out

    def _batch(self, batch: Any, name: str = "batch") -> TokenBatch:
        if not isinstance(batch, TokenBatch):
            raise ValueError(f"{name} must be a TokenBatch (from token_batch or repeated_tokens); got {type(batch).__name__}")
        if batch.vocab_size != self.vocab_size:
            raise ValueError(f"{name} has vocab_size={batch.vocab_size} but the model has {self.vocab_size}")
        if batch.positions.max() >= self.n_positions:
            raise ValueError(
                f"{name} uses position {batch.positions.max()} but the model has {self.n_positions} positions (0 .. {self.n_positions - 1})"
            )
        return batch

    def _layer_words(self) -> str:
        return "a layer, 1 or 2" if self.n_layers == 2 else "layer 1 (the model has one layer)"

    def _ablations(self, ablate: Any) -> tuple[tuple[int, int], ...]:
        if isinstance(ablate, (str, bytes, dict)) or not isinstance(ablate, (Sequence, np.ndarray)):
            raise ValueError(f"ablate must be a list of (layer, head) pairs; got {type(ablate).__name__}")
        out = []
        for i, pair in enumerate(ablate):
            if not isinstance(pair, (tuple, list)) or len(pair) != 2:
                raise ValueError(f"ablate[{i}] must be a (layer, head) pair; got {pair!r}")
            layer = as_int(f"ablate[{i}][0]", pair[0], minimum=1, what=self._layer_words())
            head = as_int(f"ablate[{i}][1]", pair[1], minimum=0, what=f"a head below {self.n_heads}")
            if layer > self.n_layers:
                raise ValueError(f"ablate[{i}][0] must be {self._layer_words()}; got {layer}")
            if head >= self.n_heads:
                raise ValueError(f"ablate[{i}][1] must be a head below {self.n_heads}; got {head}")
            if (layer, head) not in out:  # a head set to zero twice is set to zero once
                out.append((layer, head))
        return tuple(out)

    def forward(self, params: Params, batch: TokenBatch, ablate: Any = ()) -> InductionForward:
        """The model on ``batch``; ``ablate`` lists ``(layer, head)`` pairs whose output is set to zero.

        Raises
        ------
        ValueError
            ``params`` is not a dict of the model's matrices (a missing, unknown or wrongly shaped entry is refused
            naming it); ``batch`` is not a ``TokenBatch`` that fits the model; ``ablate`` is not a list of ``(layer,
            head)`` pairs of this model; or a result would overflow float64 (naming ``params``). The message names the
            argument.

        Examples
        --------
        >>> m = InductionModel(vocab_size=5, n_positions=6, d_model=4, n_heads=2)
        >>> f = m.forward(m.init(0), token_batch([[1, 2, 3]], 5))
        >>> f.logits.shape, f.weights.shape
        ((3, 5), (2, 2, 3, 3))
        """
        return self._forward(self._params(params), self._batch(batch), self._ablations(ablate))

    def _forward(self, p: Params, batch: TokenBatch, ablated: tuple[tuple[int, int], ...]) -> InductionForward:
        try:
            return self._layers(p, batch, ablated)
        except ValueError as exc:  # core names its own arguments (X_query, W_Q, ...): say where they came from
            raise ValueError(f"params (the layers' W_Q, W_K, W_V, W_O on the residual stream of batch): {exc}") from None

    def _layers(self, p: Params, batch: TokenBatch, ablated: tuple[tuple[int, int], ...]) -> InductionForward:
        with quiet():
            x = finite_result(
                p["E"][batch.tokens] + p["P"][batch.positions], "the embeddings E[t] + P[position]", "params['E'] and params['P']"
            )
            residuals, layers = [x], []
            for layer in self.layers:
                w = [p[f"{m}{layer}"] for m in LAYER_MATRICES]
                result = multi_head_parts(x, x, *w, self.n_heads, mask=batch.mask)
                out = result.output
                for head in (h for (lay, h) in ablated if lay == layer):
                    rows = slice(head * self.d_head, (head + 1) * self.d_head)
                    out = out - result.heads[head].output @ w[3][rows]
                x = finite_result(x + out, f"the residual stream after layer {layer}", f"params of layer {layer}")
                residuals.append(x)
                layers.append(result)
            logits = finite_result(x @ p["W_U"], "the logits x2 W_U", "params['W_U'] and the residual stream")
        return InductionForward(tuple(residuals), tuple(layers), logits, ablated)

    def loss_and_gradients(self, params: Params, batch: TokenBatch) -> tuple[float, Params, InductionForward]:
        """Mean cross-entropy over every row with a next token, its gradient for every parameter (``dE`` ...), and the forward pass.

        Raises
        ------
        ValueError
            ``params`` is not a dict of the expected matrices (a missing, unknown or wrongly shaped entry is refused
            naming it); ``batch`` is not the object it names (made by attnlib); or a result would overflow float64 (the
            error names the inputs it came from). The message names the argument.

        Examples
        --------
        >>> m = InductionModel(vocab_size=5, n_positions=6, d_model=4, n_heads=2)
        >>> loss, g, _ = m.loss_and_gradients(m.init(0), token_batch([[1, 2, 3]], 5))
        >>> g["dP"].shape, bool(np.all(g["dP"][3:] == 0))  # positions 3..5 were not used
        ((6, 4), True)
        """
        loss, grads, fwd, _ = self._loss_and_gradients(self._params(params), self._batch(batch))
        return loss, grads, fwd

    def _loss_and_gradients(self, p: Params, batch: TokenBatch) -> tuple[float, Params, InductionForward, np.ndarray]:
        """:meth:`loss_and_gradients` for checked parameters and batch, with the loss of every row as well."""
        fwd = self._forward(p, batch, ())
        try:
            return self._backward(p, batch, fwd)
        except ValueError as exc:  # attnlib.backward names its own arguments (d_output, ...)
            raise ValueError(f"params (the gradients of the loss on batch): {exc}") from None

    def _backward(self, p: Params, batch: TokenBatch, fwd: InductionForward) -> tuple[float, Params, InductionForward, np.ndarray]:
        losses, d_logits = cross_entropy(fwd.logits, batch.targets)
        counted = batch.targets >= 0
        n = max(int(counted.sum()), 1)
        loss = float(losses[counted].sum() / n)
        d_logits = d_logits / n
        grads: Params = {}
        with quiet():
            grads["dW_U"] = finite_result(fwd.residuals[-1].T @ d_logits, "dW_U = x_last^T d_logits", "params")
            dx = finite_result(d_logits @ p["W_U"].T, "the gradient of the residual stream", "params['W_U']")
            for layer in reversed(self.layers):
                x_in = fwd.residuals[layer - 1]
                w = {m: p[f"{m}{layer}"] for m in LAYER_MATRICES}
                g, dx_in = _layer_backward(fwd.layers[layer - 1], x_in, w, dx, self.n_heads, layer)
                grads.update({f"d{m}{layer}": g[m] for m in LAYER_MATRICES})
                dx = finite_result(dx + dx_in, f"the gradient of the residual stream before layer {layer}", "params")
            grads["dE"] = _scatter_rows(dx, batch.tokens, self.vocab_size)
            grads["dP"] = _scatter_rows(dx, batch.positions, self.n_positions)
        ordered = {f"d{name}": grads[f"d{name}"] for name in self.shapes()}
        return loss, ordered, fwd, losses


def _scatter_rows(d_rows: np.ndarray, index: np.ndarray, n: int) -> np.ndarray:
    """The gradient of a lookup table from the gradients of the rows it gave: ``out[index[r]] += d_rows[r]``."""
    out = np.zeros((n, d_rows.shape[1]))
    np.add.at(out, index, d_rows)
    return out


def _layer_backward(
    result: MultiHeadResult, x: np.ndarray, w: dict[str, np.ndarray], d_out: np.ndarray, n_heads: int, layer: int
) -> tuple[dict[str, np.ndarray], np.ndarray]:
    """One layer's gradients: its four matrices and its input ``x`` (used as queries, keys and values).

    ``out = concat W_O`` gives ``dW_O = concat^T d_out`` and ``d_concat = d_out W_O^T``; every head's
    block goes through :func:`attnlib.backward.attention_backward_from`; the projections through
    :func:`attnlib.backward.projection_gradients`; and since ``Q = x W_Q`` (and so on),
    ``dx = dQ W_Q^T + dK W_K^T + dV W_V^T``. Every product is checked: ``d_out`` is finite, so an
    overflow comes from the layer's matrices, and the error names ``params``, never an internal array.
    """
    try:
        with quiet():
            d_concat = finite_result(d_out @ w["W_O"].T, "d_concat = d W_O^T", "params")
            width = x.shape[1] // n_heads
            parts = [attention_backward_from(head, d_concat[:, r * width : (r + 1) * width]) for r, head in enumerate(result.heads)]
            g = AttentionGradients(*(np.concatenate([part[i] for part in parts], axis=1) for i in range(3)))
            proj = projection_gradients(x, x, g)
            dx = finite_result(g.dQ @ w["W_Q"].T + g.dK @ w["W_K"].T + g.dV @ w["W_V"].T, "dx = dQ W_Q^T + dK W_K^T + dV W_V^T", "params")
            dW_O = finite_result(result.concat.T @ d_out, "dW_O = concat^T d", "params")
    except ValueError:
        what = f"the gradients of layer {layer} (of W_Q{layer}, W_K{layer}, W_V{layer}, W_O{layer} and its input)"
        raise ValueError(f"{what} overflowed float64; the inputs params are too large for this computation") from None
    return {"W_Q": proj.dW_Q, "W_K": proj.dW_K, "W_V": proj.dW_V, "W_O": dW_O}, dx


def _targets(targets: Any, n_ids: int) -> np.ndarray:
    """Target ids as an int array, each ``-1`` (no target) or an id below ``n_ids``.

    An integer array is checked by its smallest and largest entries, read as Python ints (an unsigned
    id never wraps to -1); anything else is checked entry by entry (so a huge int is refused by name).
    """
    arr = to_ndarray("targets", targets)
    if arr.ndim != 1:
        raise ValueError(f"targets must be a 1-d list of token ids; got shape {arr.shape}")
    if arr.dtype.kind in "iu":
        ids = arr
        low, high = (int(arr.min()), int(arr.max())) if arr.size else (0, -1)
    else:
        ids = as_int_sequence("targets", arr.tolist(), minimum=-1, allow_empty=True)
        low, high = (min(ids), max(ids)) if ids else (0, -1)
    if low < -1:
        raise ValueError(f"targets must be token ids or -1 (no target); got {low}")
    if high >= n_ids:
        raise ValueError(f"targets must be ids below {n_ids} (the logits' columns) or -1; got {high}")
    return np.asarray(ids, dtype=np.int64)


def cross_entropy(logits: Any, targets: Any) -> tuple[np.ndarray, np.ndarray]:
    """Cross-entropy of the next token at every row, and its gradient with respect to the logits.

    ``loss_r = log sum_v exp(logits_rv) - logits_r,target_r`` and
    ``d loss_r / d logits_r = softmax(logits_r) - onehot(target_r)``; a row
    whose target is ``-1`` has loss 0 and gradient 0.

    Raises
    ------
    ValueError
        ``logits`` is not a finite real matrix; ``targets`` is not one id per row of ``logits``, each ``-1`` (no target)
        or an integer below the number of columns (an id beyond them is refused, never wrapped); or the loss overflows
        float64 (logits about 2e308 apart). The message names the argument.

    Examples
    --------
    >>> loss, grad = cross_entropy([[0.0, 0.0], [5.0, 0.0]], [1, -1])
    >>> loss.round(4).tolist(), grad.round(2).tolist()
    ([0.6931, 0.0], [[0.5, -0.5], [0.0, 0.0]])
    """
    z = as_array("logits", logits, 2)
    t = _targets(targets, z.shape[1])
    if t.size != z.shape[0]:
        raise ValueError(f"targets has {t.size} entries but logits has {z.shape[0]} rows; give one target per row")
    counted = t >= 0
    with quiet():
        shifted = z - z.max(axis=1, keepdims=True)
        log_norm = np.log(np.exp(shifted).sum(axis=1))
        picked = shifted[np.arange(t.size), np.where(counted, t, 0)]
        losses = np.where(counted, log_norm - picked, 0.0)
        grad = np.exp(shifted - log_norm[:, None])
        grad[np.flatnonzero(counted), t[counted]] -= 1.0
        grad[~counted] = 0.0
        # the loss is log-sum-exp minus the target's logit: logits 2e308 apart give a loss beyond float64
        finite_result(losses, "the cross-entropy loss", "logits")
        finite_result(grad, "the gradient of the cross-entropy", "logits")
    return losses, grad


def _check_model_params(model: Any, params: Any) -> tuple[InductionModel, Params]:
    if not isinstance(model, InductionModel):
        raise ValueError(f"model must be an InductionModel; got {type(model).__name__}")
    return model, model._params(params)


def half_losses(model: InductionModel, params: Params, batch: TokenBatch, ablate: Any = ()) -> tuple[float, float, np.ndarray]:
    """Mean loss over the first halves, over the repeated halves, and the loss of every row.

    The halves are those of :attr:`TokenBatch.first_half` and
    :attr:`TokenBatch.second_half`; ``ablate`` is passed to
    :meth:`InductionModel.forward`.

    Raises
    ------
    ValueError
        ``model`` is not an ``InductionModel``; ``params`` does not fit it; ``batch`` is not a ``TokenBatch`` with a
        repeated sequence; ``ablate`` is not a list of ``(layer, head)`` pairs of this model; or a result would overflow
        float64. The message names the argument.

    Examples
    --------
    >>> m = InductionModel(vocab_size=5, n_positions=6, d_model=4)
    >>> first, second, rows = half_losses(m, m.init(0), repeated_tokens(2, 5, 3, seed=1))
    >>> rows.shape, bool(first > 0 and second > 0)
    ((12,), True)
    """
    model, p = _check_model_params(model, params)
    batch = model._batch(batch)
    if not batch.second_half.any():
        raise ValueError("batch has no repeated sequence (halves are all 0): make it with repeated_tokens or give halves")
    fwd = model._forward(p, batch, model._ablations(ablate))
    rows, _ = cross_entropy(fwd.logits, batch.targets)
    return float(rows[batch.first_half].mean()), float(rows[batch.second_half].mean()), rows


@dataclass(frozen=True)
class InductionRun:
    """What :func:`train_induction` recorded.

    Attributes
    ----------
    losses:
        ``(n_steps,)`` the training loss of each step's batch, before the update.
    first_half, second_half:
        ``(n_steps,)`` the same loss split into the first halves and the
        repeated halves of that batch.
    final_params:
        The parameters after the last update.
    probe_first, probe_second:
        :func:`half_losses` on the probe batch after training.
    """

    losses: np.ndarray
    first_half: np.ndarray
    second_half: np.ndarray
    final_params: Params
    probe_first: float
    probe_second: float


def train_induction(
    model: InductionModel,
    params: Params,
    optimizer: Adam,
    n_steps: int,
    n_sequences: int,
    half_lengths: Any,
    probe: TokenBatch,
    seed: int | np.random.Generator | PortableRandom = 0,
    chunk: int = 8,
    final_lr: float | None = None,
) -> InductionRun:
    """Train on fresh batches of :func:`repeated_tokens` (placed at random positions) with Adam.

    Parameters
    ----------
    model, params, optimizer:
        What to train, from where, and how (the optimizer's moments are updated in place).
    n_steps:
        Number of updates.
    n_sequences, half_lengths:
        Of every training batch (see :func:`repeated_tokens`); each sequence
        starts at a random position of the model's ``n_positions``.
    probe:
        A fixed batch of repeated sequences on which the final losses are measured.
    seed:
        Seeds the batches (a seed, a ``numpy.random.Generator``, or a :class:`PortableRandom`, from which
        the live training explorer draws the same batches).
    chunk:
        Sequences per call of the attention layers. The batch's gradient is
        the mean over all its predictions either way; smaller chunks only
        make the block-diagonal masks, whose size grows with the square of
        the rows, smaller.
    final_lr:
        If given, the learning rate falls linearly from the optimizer's
        ``lr`` at the first step to ``final_lr`` at the last (a smaller step
        once the heads have formed lets the loss settle lower); the
        optimizer ends with its ``lr`` as it started.

    Raises
    ------
    ValueError
        ``model`` is not an ``InductionModel``, ``optimizer`` not an ``Adam``, ``probe`` not a ``TokenBatch`` with a
        repeated sequence; ``params`` does not fit the model; ``n_steps``, ``n_sequences`` or ``chunk`` is not a
        positive integer; ``half_lengths`` does not fit the model; ``seed`` is not a seed by the seed rule; ``final_lr``
        is neither ``None`` nor a positive number; or a step overflows float64. The message names the argument.

    Examples
    --------
    >>> m = InductionModel(vocab_size=6, n_positions=8, d_model=8)
    >>> probe = repeated_tokens(4, 6, (2, 4), seed=99)
    >>> run = train_induction(m, m.init(0), Adam(lr=0.01), 5, 4, (2, 4), probe)
    >>> run.losses.shape, bool(run.losses[-1] < run.losses[0])
    ((5,), True)
    """
    if not isinstance(model, InductionModel):
        raise ValueError(f"model must be an InductionModel; got {type(model).__name__}")
    if not isinstance(optimizer, Adam):
        raise ValueError(f"optimizer must be an attnlib.training.Adam; got {type(optimizer).__name__}")
    n_steps = as_positive_int("n_steps", n_steps)
    n_sequences = as_positive_int("n_sequences", n_sequences)
    chunk = as_positive_int("chunk", chunk)
    start_lr = optimizer.lr
    end_lr = start_lr if final_lr is None else as_positive_real("final_lr", final_lr)
    low, high = _half_range(half_lengths)
    if 2 * high > model.n_positions:
        raise ValueError(f"half_lengths up to {high} make sequences of {2 * high} tokens, but the model has {model.n_positions} positions")
    if high > model.vocab_size:
        raise ValueError(f"half_lengths up to {high} need as many distinct tokens, but the model's vocab_size is {model.vocab_size}")
    probe = model._batch(probe, "probe")
    if not probe.second_half.any():
        raise ValueError("probe has no repeated sequence (halves are all 0): make it with repeated_tokens")
    params = model._params(params)
    rng = _rng("seed", seed)
    check_size(f"train_induction(n_steps={n_steps}): the record of every step", 3 * n_steps)
    check_size(f"train_induction(n_sequences={n_sequences}): the tokens of a batch", 6 * n_sequences * high)
    losses, first, second = (np.empty(n_steps) for _ in range(3))
    for step in range(n_steps):
        seqs, halves, starts = _draw_repeats(rng, n_sequences, model.vocab_size, low, high, model.n_positions)
        batches = [
            _make_batch(seqs[k : k + chunk], halves[k : k + chunk], starts[k : k + chunk], model.vocab_size)
            for k in range(0, n_sequences, chunk)
        ]
        total = sum(int((b.targets >= 0).sum()) for b in batches)
        grads: Params = {}
        sums = np.zeros(5)  # loss, first-half loss and count, second-half loss and count
        for batch in batches:
            counted = int((batch.targets >= 0).sum())
            loss, g, _, rows = model._loss_and_gradients(params, batch)
            for name, value in g.items():
                grads[name] = grads.get(name, 0.0) + value * (counted / total)
            sums += (
                loss * counted,
                rows[batch.first_half].sum(),
                batch.first_half.sum(),
                rows[batch.second_half].sum(),
                batch.second_half.sum(),
            )
        losses[step] = sums[0] / total
        first[step] = sums[1] / sums[2]
        second[step] = sums[3] / sums[4]
        done = step / max(n_steps - 1, 1)
        optimizer.lr = start_lr * (1 - done) + end_lr * done
        params = optimizer.step(params, grads)
    optimizer.lr = start_lr
    probe_first, probe_second, _ = half_losses(model, params, probe)
    return InductionRun(losses, first, second, params, probe_first, probe_second)


def loss_by_position(model: InductionModel, params: Params, batch: TokenBatch, ablate: Any = ()) -> np.ndarray:
    """The mean loss at every position, over the sequences of a batch whose sequences all have the same length.

    Entry ``i`` is the mean loss of predicting token ``i + 1`` from the
    tokens up to ``i``; the last token has nothing to predict, so a batch of
    length ``n`` gives ``n - 1`` numbers.

    Raises
    ------
    ValueError
        ``model`` is not an ``InductionModel``; ``params`` does not fit it; ``batch`` is not a ``TokenBatch`` of
        repeated sequences of one length; ``ablate`` is not a list of ``(layer, head)`` pairs of this model; or a result
        would overflow float64. The message names the argument.

    Examples
    --------
    >>> m = InductionModel(vocab_size=5, n_positions=6, d_model=4)
    >>> loss_by_position(m, m.init(0), repeated_tokens(3, 5, 3, seed=1)).shape
    (5,)
    """
    model, p = _check_model_params(model, params)
    batch = model._batch(batch)
    n = int(batch.lengths[0])
    if not np.all(batch.lengths == n) or n < 2:
        raise ValueError(f"batch must hold sequences of one length >= 2; got lengths {sorted(set(batch.lengths.tolist()))}")
    fwd = model._forward(p, batch, model._ablations(ablate))
    rows, _ = cross_entropy(fwd.logits, batch.targets)
    return rows.reshape(-1, n)[:, :-1].mean(axis=0)


def drop_step(second_half: Any, reference: Any, ratio: float = 0.5, window: int = 20) -> int:
    """The step at which the repeated half's loss drops: the first step where it falls below ``ratio`` times ``reference``.

    The curve is first smoothed by a running mean over ``window`` steps (the mean of the
    steps ``s - window + 1 .. s``), so that one lucky batch does not count. ``reference``
    is a fixed loss, the same at every step: chapter 17 uses ``log(vocab_size)``, the loss
    of a uniform guess, near which the repeated half starts.

    Parameters
    ----------
    second_half:
        The loss on the repeated halves at every training step
        (``InductionRun.second_half``).
    reference:
        A positive loss in nats against which the drop is measured.
    ratio:
        The fraction of ``reference`` the smoothed loss must fall below, in ``(0, 1)``.
    window:
        Steps in the running mean, a positive integer no longer than the curve.

    Returns
    -------
    int
        The step (counted from 0), or ``-1`` if the smoothed loss never falls that low.

    Raises
    ------
    ValueError
        If ``second_half`` is not a non-empty 1-d array of finite numbers, ``reference``
        not a finite number above 0, ``ratio`` not in ``(0, 1)``, or ``window`` not a
        positive integer at most the number of steps.

    Examples
    --------
    >>> drop_step([3.0, 3.0, 3.0, 1.0, 0.5, 0.1], reference=3.0, ratio=0.5, window=1)
    3
    >>> drop_step([3.0, 3.0, 3.0, 1.0, 0.5, 0.1], reference=3.0, ratio=0.5, window=2)  # (1.0 + 0.5) / 2 < 1.5
    4
    """
    b = as_array("second_half", second_half, 1)
    reference = as_positive_real("reference", reference)
    ratio = as_positive_real("ratio", ratio, below=1.0)
    window = as_positive_int("window", window)
    if window > b.size:
        raise ValueError(f"window={window} is longer than the {b.size} recorded steps of second_half")
    with quiet():
        smooth = np.convolve(b, np.ones(window) / window, mode="valid")
        below = np.flatnonzero(smooth < ratio * reference)
    return int(below[0] + window - 1) if below.size else -1


def _head_weights(weights: Any, batch: Any) -> tuple[np.ndarray, TokenBatch]:
    if not isinstance(batch, TokenBatch):
        raise ValueError(f"batch must be a TokenBatch; got {type(batch).__name__}")
    w = as_array("weights", weights, (2, 3))
    if (w < 0).any() or (w > 1).any():
        raise ValueError(f"weights must be attention weights (entries between 0 and 1); got values from {w.min():g} to {w.max():g}")
    w = w[None] if w.ndim == 2 else w
    if w.shape[1:] != (batch.rows, batch.rows):
        raise ValueError(
            f"weights has shape {w.shape} but batch has {batch.rows} rows: give ({batch.rows}, {batch.rows}) or (heads, rows, rows)"
        )
    return w, batch


def previous_token_score(weights: Any, batch: TokenBatch) -> np.ndarray:
    """Mean attention weight from each token to the token just before it, one number per head.

    Averaged over every row that has a previous token in its sequence
    (position >= 1). ``weights`` is ``(rows, rows)`` or ``(heads, rows, rows)``.

    Raises
    ------
    ValueError
        ``weights`` is not finite real numbers of the expected shape; ``batch`` is not the object it names (made by
        attnlib); or a result would overflow float64 (the error names the inputs it came from). The message names the
        argument.

    Examples
    --------
    >>> b = token_batch([[0, 1, 2]], 3)
    >>> previous_token_score([[1, 0, 0], [1, 0, 0], [0, 0.5, 0.5]], b).tolist()
    [0.75]
    """
    w, batch = _head_weights(weights, batch)
    rows = np.flatnonzero(batch.index >= 1)
    if rows.size == 0:
        raise ValueError("batch has no token with a previous token (every sequence has length 1)")
    return w[:, rows, rows - 1].mean(axis=1)


def prefix_matching_score(weights: Any, batch: TokenBatch) -> np.ndarray:
    """Mean attention weight, in the repeated half, on the token after the earlier occurrence of the current token.

    For a row at position ``i`` of the second half of a sequence of half
    length ``T`` (``T <= i <= 2T - 1``), the current token first occurred at
    ``i - T``, and the token after it is at ``i - T + 1``: the key an
    induction head attends to. One number per head.

    Raises
    ------
    ValueError
        ``weights`` is not finite real numbers of the expected shape; ``batch`` is not the object it names (made by
        attnlib); or a result would overflow float64 (the error names the inputs it came from). The message names the
        argument.

    Examples
    --------
    >>> b = token_batch([[5, 6, 5, 6]], 7, halves=[2])
    >>> w = np.tril(np.ones((4, 4))) / np.arange(1, 5)[:, None]  # uniform causal attention
    >>> prefix_matching_score(w, b).round(4).tolist()  # rows 2 and 3 put 1/3 and 1/4 on rows 1 and 2
    [0.2917]
    """
    w, batch = _head_weights(weights, batch)
    half = np.repeat(batch.halves, batch.lengths)
    rows = np.flatnonzero((half > 0) & (batch.index >= half))
    if rows.size == 0:
        raise ValueError("batch has no repeated sequence (halves are all 0): make it with repeated_tokens or give halves")
    return w[:, rows, rows - half[rows] + 1].mean(axis=1)


def composition_score(A: Any, B: Any) -> float:
    """``||A B||_F / (||A||_F ||B||_F)``: how much of what ``A`` writes ``B`` reads (0 to 1).

    Elhage et al. (2021) measure composition between heads this way: 1 when
    the row space of ``B`` lies along what ``A`` writes, near 0 when they
    are unrelated.

    Raises
    ------
    ValueError
        ``A`` or ``B`` is not finite real numbers of the expected shape; or a result would overflow float64 (the error
        names the inputs it came from). The message names the argument.

    Examples
    --------
    >>> composition_score(np.diag([1.0, 0.0]), np.diag([1.0, 0.0])), composition_score(np.diag([1.0, 0.0]), np.diag([0.0, 1.0]))
    (1.0, 0.0)
    """
    a = as_array("A", A, 2)
    b = as_array("B", B, 2)
    if a.shape[1] != b.shape[0]:
        raise ValueError(f"A has {a.shape[1]} columns but B has {b.shape[0]} rows; A B is not defined")
    with quiet():
        na, nb = np.linalg.norm(a), np.linalg.norm(b)
        if na == 0 or nb == 0:
            raise ValueError("A and B must not be zero matrices (the score divides by their norms)")
        num = finite_result(np.linalg.norm(a @ b), "||A B||", "A and B")
        return float(finite_result(num / (na * nb), "the composition score", "A and B"))


def _head_circuits(model: InductionModel, p: Params, layer: int, head: int) -> tuple[np.ndarray, np.ndarray]:
    """Head ``head`` of ``layer`` as two ``d_model x d_model`` maps: ``W_QK = W_Q^h W_K^h^T`` and ``W_OV = W_V^h W_O^h``.

    ``W_QK`` is chapter 14's bilinear form ``A_bil``: the head's score of a query row ``x_i``
    against a key row ``x_j`` is ``x_i W_QK x_j^T / sqrt(d_head)``.
    """
    cols = slice(head * model.d_head, (head + 1) * model.d_head)
    with quiet():
        qk = finite_result(p[f"W_Q{layer}"][:, cols] @ p[f"W_K{layer}"][:, cols].T, f"W_QK of layer {layer}", "params")
        ov = finite_result(p[f"W_V{layer}"][:, cols] @ p[f"W_O{layer}"][cols, :], f"W_OV of layer {layer}", "params")
    return qk, ov


def _two_layers(model: InductionModel, what: str) -> None:
    if model.n_layers != 2:
        raise ValueError(f"model has one layer, but {what} compares layer 1's heads with layer 2's: give a two-layer model")


def _check_head(model: InductionModel, name: str, head: Any) -> int:
    head = as_int(name, head, minimum=0, what=f"a head below {model.n_heads}")
    if head >= model.n_heads:
        raise ValueError(f"{name} must be a head below {model.n_heads}; got {head}")
    return head


def composition_scores(model: InductionModel, params: Params) -> dict[str, np.ndarray]:
    """Q-, K- and V-composition of every layer-1 head with every layer-2 head, from the trained matrices.

    With rows as tokens, a layer-1 head ``h`` that attends to row ``k`` adds
    ``x_k W_OV^h`` to the residual stream; a layer-2 head ``g`` scores a query
    row ``q`` against a key row ``k`` by ``q W_QK^g k^T / sqrt(d_head)``
    (``W_QK = W_Q W_K^T``) and copies ``k W_OV^g``. So its keys
    read what ``h`` wrote through ``W_QK^g (W_OV^h)^T`` (K-composition), its
    queries through ``W_OV^h W_QK^g`` (Q-composition) and its values through
    ``W_OV^h W_OV^g`` (V-composition); each is scored by
    :func:`composition_score`. Returns ``{"K": ..., "Q": ..., "V": ...}``,
    each ``(n_heads, n_heads)`` with rows = layer-1 heads, columns = layer-2
    heads.

    Raises
    ------
    ValueError
        ``model`` is not the object it names (made by attnlib) or has one layer; ``params`` is not a dict of the expected matrices (a
        missing, unknown or wrongly shaped entry is refused naming it); or a result would overflow float64 (the error
        names the inputs it came from). The message names the argument.

    Examples
    --------
    >>> m = InductionModel(vocab_size=5, n_positions=6, d_model=4, n_heads=2)
    >>> s = composition_scores(m, m.init(0))
    >>> sorted(s), s["K"].shape
    (['K', 'Q', 'V'], (2, 2))
    """
    model, p = _check_model_params(model, params)
    _two_layers(model, "composition_scores")
    out = {kind: np.empty((model.n_heads, model.n_heads)) for kind in "KQV"}
    for h in range(model.n_heads):
        _, ov1 = _head_circuits(model, p, 1, h)
        for g in range(model.n_heads):
            qk2, ov2 = _head_circuits(model, p, 2, g)
            try:
                out["K"][h, g] = composition_score(qk2, ov1.T)
                out["Q"][h, g] = composition_score(ov1, qk2)
                out["V"][h, g] = composition_score(ov1, ov2)
            except ValueError as exc:
                raise ValueError(f"params (the circuits of layer-1 head {h} and layer-2 head {g}): {exc}") from None
    return out


def token_key_composition(model: InductionModel, params: Params, head1: int = 0, head2: int = 0) -> np.ndarray:
    """The K-composition in tokens: ``M[a, b] = E[a] W_QK^g (E[b] W_OV^h)^T / sqrt(d_head)`` (vocab x vocab).

    If layer-1 head ``h`` copies the token ``b`` before a key into that key's
    residual stream, ``M[a, b]`` is the part of layer-2 head ``g``'s score
    that a query holding token ``a`` gives it (``W_QK = W_Q W_K^T``, so the
    score's division by ``sqrt(d_head)`` is written out). An induction head
    has a large diagonal: it looks for keys whose previous token is the
    current token.

    Raises
    ------
    ValueError
        ``model`` is not the object it names (made by attnlib) or has one layer; ``params`` is not a dict of the expected matrices (a
        missing, unknown or wrongly shaped entry is refused naming it); ``head1`` or ``head2`` is not an integer in its
        range; or a result would overflow float64 (the error names the inputs it came from). The message names the
        argument.

    Examples
    --------
    >>> m = InductionModel(vocab_size=5, n_positions=6, d_model=4)
    >>> token_key_composition(m, m.init(0)).shape
    (5, 5)
    """
    model, p = _check_model_params(model, params)
    _two_layers(model, "token_key_composition")
    head1 = _check_head(model, "head1", head1)
    head2 = _check_head(model, "head2", head2)
    _, ov1 = _head_circuits(model, p, 1, head1)
    qk2, _ = _head_circuits(model, p, 2, head2)
    with quiet():
        return finite_result(p["E"] @ qk2 @ (p["E"] @ ov1).T / np.sqrt(model.d_head), "E W_QK (E W_OV)^T / sqrt(d_head)", "params")


def token_ov_circuit(model: InductionModel, params: Params, layer: int = 2, head: int = 0) -> np.ndarray:
    """A head's OV circuit in tokens: ``C = E W_OV W_U`` (vocab x vocab), with ``W_OV = W_V^h W_O^h``.

    Entry ``C[a, b]`` is how much the head raises the logit of token ``b`` when it puts all
    its weight on a key holding token ``a`` (through the token embedding only, the path
    from the head straight to the logits). Elhage et al. (2021) write the same matrix for
    column vectors, ``W_U W_OV W_E``: it is the transpose of ``C``.

    Parameters
    ----------
    model, params:
        The model and its parameters (as :meth:`InductionModel.init` makes them).
    layer:
        1 or 2.
    head:
        A head of that layer, ``0 .. n_heads - 1``.

    Returns
    -------
    numpy.ndarray
        ``(vocab_size, vocab_size)``, rows = the attended token, columns = the logit.

    Raises
    ------
    ValueError
        If ``model`` is not an :class:`InductionModel`, ``params`` not its parameters,
        ``layer`` not one of its layers (1 or 2), ``head`` not one of its heads, or if the product overflows.

    Examples
    --------
    >>> m = InductionModel(vocab_size=5, n_positions=6, d_model=4)
    >>> token_ov_circuit(m, m.init(0), layer=1).shape
    (5, 5)
    """
    model, p = _check_model_params(model, params)
    layer = as_int("layer", layer, minimum=1, what=model._layer_words())
    if layer > model.n_layers:
        raise ValueError(f"layer must be {model._layer_words()}; got {layer}")
    head = _check_head(model, "head", head)
    _, ov = _head_circuits(model, p, layer, head)
    with quiet():
        return finite_result(p["E"] @ ov @ p["W_U"], f"E W_OV W_U of layer {layer}", "params")


@dataclass(frozen=True)
class CopyingScore:
    """How much a matrix of token-to-logit effects copies (see :func:`copying_score`).

    Attributes
    ----------
    eigenvalue:
        ``sum(lambda) / sum(|lambda|)`` over the eigenvalues of the matrix, from -1 to 1:
        1 when every eigenvalue is positive (copying), -1 when every one is negative
        (anti-copying), near 0 for a random matrix.
    diagonal:
        The fraction of rows (0 to 1) whose diagonal entry is larger than every other entry
        of the row: tokens that raise their own logit more than any other.
    """

    eigenvalue: float
    diagonal: float


def copying_score(circuit: Any) -> CopyingScore:
    """Two measures of copying for a square matrix of token-to-logit effects, such as :func:`token_ov_circuit`.

    Olsson et al. (2022) call a head *copying* when its output raises the logit of the
    token it attends to. For a head's OV circuit in tokens that means a large diagonal.
    Elhage et al. (2021) summarise it by the eigenvalues: a positive eigenvalue is a mix
    of tokens that raises the logits of that same mix, and the statistic
    ``sum(lambda) / sum(|lambda|)`` runs from -1 (anti-copying) to 1 (copying). Its
    numerator, the sum of the eigenvalues, is the trace: the sum of the diagonal. The
    second measure counts the rows whose diagonal entry is the largest of the row.

    Parameters
    ----------
    circuit:
        A square matrix of finite real numbers, rows = the attended token, columns = the logit.

    Returns
    -------
    CopyingScore
        ``eigenvalue`` (from -1 to 1) and ``diagonal`` (from 0 to 1).

    Raises
    ------
    ValueError
        If ``circuit`` is not a non-empty square matrix of finite real numbers, if all its
        eigenvalues are 0 (the ratio is not defined), or if its eigenvalues overflow.

    Examples
    --------
    >>> copying_score(np.eye(3))
    CopyingScore(eigenvalue=1.0, diagonal=1.0)
    >>> copying_score([[-2.0, 1.0], [0.0, -1.0]])  # eigenvalues -2 and -1; row 0 prefers token 1
    CopyingScore(eigenvalue=-1.0, diagonal=0.0)
    >>> copying_score([[0.0, 1.0], [1.0, 0.0]]).eigenvalue  # eigenvalues 1 and -1: a swap copies nothing
    0.0
    """
    c = as_array("circuit", circuit, 2)
    if c.shape[0] != c.shape[1]:
        raise ValueError(f"circuit must be a square matrix (rows and columns both tokens); got shape {c.shape}")
    with quiet():
        try:
            eig = np.linalg.eigvals(c)
        except np.linalg.LinAlgError:
            raise ValueError("circuit: numpy could not find its eigenvalues (they did not converge)") from None
        finite_result(eig, "the eigenvalues of circuit", "circuit")
        size = np.abs(eig).sum()
        if not np.isfinite(size):
            raise ValueError("circuit: the sum of the sizes of its eigenvalues overflowed float64; scale it down")
        if size == 0:
            raise ValueError("circuit has no nonzero eigenvalue, so sum(lambda) / sum(|lambda|) is not defined")
        score = float(np.clip(eig.sum().real / size, -1.0, 1.0))
        off = np.where(np.eye(c.shape[0], dtype=bool), -np.inf, c)
        wins = np.diag(c) > off.max(axis=1)
    return CopyingScore(score, float(wins.mean()))


def letters_to_tokens(text: Any, vocab_size: int = 26) -> tuple[list[int], list[str]]:
    """The token ids of the letters of ``text``: ``a`` is 0, ``b`` is 1, ... (taken modulo ``vocab_size``).

    Letters are read without case; everything else (spaces, digits,
    punctuation) is skipped. Returns the ids and the letters they came from.

    Raises
    ------
    ValueError
        ``text`` is not a text (a ``str``); ``vocab_size`` is not a positive integer. The message names the argument.

    Examples
    --------
    >>> letters_to_tokens("Ab, ca!")
    ([0, 1, 2, 0], ['a', 'b', 'c', 'a'])
    """
    if not isinstance(text, str):
        raise ValueError(f"text must be a string; got {type(text).__name__}")
    vocab_size = as_int("vocab_size", vocab_size, minimum=2, what="an integer >= 2")
    letters = [c for c in text.lower() if "a" <= c <= "z"]
    return [(ord(c) - ord("a")) % vocab_size for c in letters], letters


def token_letters(ids: Any) -> list[str]:
    """A label for each token id: ``a`` to ``z`` for the ids 0 to 25 (as :func:`letters_to_tokens` reads them), ``#k`` beyond.

    Raises
    ------
    ValueError
        ``ids`` is not a list of integers in their range. The message names the argument.

    Examples
    --------
    >>> token_letters([0, 2, 25, 30])
    ['a', 'c', 'z', '#30']
    """
    values = as_int_sequence("ids", to_ndarray("ids", ids).tolist(), minimum=0, allow_empty=True)
    return [chr(ord("a") + t) if t < 26 else f"#{t}" for t in values]


def words_to_tokens(text: Any, vocab_size: int = 26) -> tuple[list[int], list[str]]:
    """The token ids of the words of ``text``: the first distinct word is 0, the next new word 1, ... (modulo ``vocab_size``).

    Words are runs of letters, read without case. A word that comes back gets
    the id it had the first time, which is all an induction head needs.

    Raises
    ------
    ValueError
        ``text`` is not a text (a ``str``); ``vocab_size`` is not a positive integer. The message names the argument.

    Examples
    --------
    >>> words_to_tokens("the cat saw the cat")
    ([0, 1, 2, 0, 1], ['the', 'cat', 'saw', 'the', 'cat'])
    """
    if not isinstance(text, str):
        raise ValueError(f"text must be a string; got {type(text).__name__}")
    vocab_size = as_int("vocab_size", vocab_size, minimum=2, what="an integer >= 2")
    words, current = [], ""
    for c in text.lower() + " ":
        if "a" <= c <= "z":
            current += c
        elif current:
            words.append(current)
            current = ""
    ids: dict[str, int] = {}
    for w in words:
        ids.setdefault(w, len(ids) % vocab_size)
    return [ids[w] for w in words], words


#: The settings chapter 17 trains with (one seed takes a few seconds in numpy).
BOOK: dict[str, Any] = {
    "vocab_size": 32,
    "n_positions": 48,
    "d_model": 32,
    "n_heads": 1,
    "half_lengths": (2, 12),
    "n_sequences": 16,
    "n_steps": 1200,
    "lr": 0.015,
    "final_lr": 0.0005,
    "probe_seed": 1000,
}


def book_model() -> InductionModel:
    """The model of chapter 17: :data:`BOOK`'s vocabulary, positions, width and heads.

    Examples
    --------
    >>> book_model()
    InductionModel(vocab_size=32, n_positions=48, d_model=32, n_heads=1, n_layers=2)
    """
    return InductionModel(BOOK["vocab_size"], BOOK["n_positions"], BOOK["d_model"], BOOK["n_heads"])


def book_probe(half_lengths: Any = None, n_sequences: int = 64) -> TokenBatch:
    """The held-out batch of chapter 17 (seeded; its half lengths are :data:`BOOK`'s unless given).

    Raises
    ------
    ValueError
        ``half_lengths`` is not a length or a ``(shortest, longest)`` pair of lengths the book's model can take;
        ``n_sequences`` is not a positive integer. The message names the argument.

    Examples
    --------
    >>> book_probe(6, n_sequences=2).lengths.tolist()
    [12, 12]
    """
    halves = BOOK["half_lengths"] if half_lengths is None else half_lengths
    return repeated_tokens(n_sequences, BOOK["vocab_size"], halves, seed=BOOK["probe_seed"])


def book_run(seed: int, n_steps: int | None = None) -> InductionRun:
    """Chapter 17's training run for one seed (the seed picks the start and the batches), with :data:`BOOK`'s settings.

    ``n_steps`` (``BOOK["n_steps"]`` unless given) shortens the run, for a quick look. The same seed
    gives the same run, step for step; runs are kept once made.

    Raises
    ------
    ValueError
        ``seed`` is not a seed by the seed rule (a non-negative integer or a ``numpy.random.Generator``); ``n_steps`` is
        neither ``None`` nor a positive integer. The message names the argument.

    Examples
    --------
    >>> book_run(0, n_steps=3).losses.shape
    (3,)
    """
    key = _book_key(seed, n_steps)
    if key not in _BOOK_RUNS:
        _BOOK_RUNS[key] = _train_book(key)
    return _BOOK_RUNS[key]


_BOOK_RUNS: dict[tuple[int, int], InductionRun] = {}


def _book_key(seed: Any, n_steps: Any) -> tuple[int, int]:
    seed = as_int("seed", seed, minimum=0, what="a non-negative integer seed")
    steps = BOOK["n_steps"] if n_steps is None else as_positive_int("n_steps", n_steps)
    check_size(f"book_run(n_steps={steps}): the record of every step", 3 * steps)
    return seed, steps


def _train_book(key: tuple[int, int]) -> InductionRun:
    seed, n_steps = key
    model = book_model()
    return train_induction(
        model,
        model.init(seed),
        Adam(lr=BOOK["lr"]),
        n_steps,
        BOOK["n_sequences"],
        BOOK["half_lengths"],
        book_probe(),
        seed=seed,
        final_lr=BOOK["final_lr"],
    )


def _train_book_in_worker(key: tuple[int, int]) -> InductionRun:
    with one_blas_thread():  # the processes share the cores: BLAS threads of their own would only compete
        return _train_book(key)


def book_runs(seeds: Any, processes: int = 1, n_steps: int | None = None) -> list[InductionRun]:
    """:func:`book_run` for several seeds, trained in up to ``processes`` worker processes at once.

    Each run is the same whichever process trains it (it depends on its seed only); each worker
    process uses one BLAS thread (``attnlib._threads.one_blas_thread``), which gives the same
    numbers to the last bit.

    Raises
    ------
    ValueError
        ``seeds`` is not a list of integers in their range; ``processes`` is not a positive integer; ``n_steps`` is
        neither ``None`` nor a positive integer. The message names the argument.

    Examples
    --------
    >>> book_runs([], processes=2)
    []
    """
    seeds = as_int_sequence("seeds", seeds, minimum=0, allow_empty=True)
    processes = as_positive_int("processes", processes)
    keys = [_book_key(s, n_steps) for s in seeds]
    todo = sorted({k for k in keys if k not in _BOOK_RUNS})
    if processes > 1 and len(todo) > 1:
        import multiprocessing

        method = "fork" if "fork" in multiprocessing.get_all_start_methods() else "spawn"
        with multiprocessing.get_context(method).Pool(min(processes, len(todo))) as pool:
            _BOOK_RUNS.update(zip(todo, pool.map(_train_book_in_worker, todo)))
    return [book_run(*k) for k in keys]

"""Chapter 11's exercises (positions): their variants, answers and self-checks.

The module follows the layout described in :mod:`attnlib.exercises`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from ..positional import positional_frequencies, sinusoidal_encoding
from .cases import (
    Case,
    CheckResult,
    Notation,
    run_cases,
    same_values,
    with_self_check_raises,
)
from .registry import (
    Exercise,
    Variant,
    answers,  # noqa: F401 (the doctests use it)
    drawn,
    finite_inputs,
    implement_draw,
    register,
    require,
    rounded,
    variant,
)

__all__ = ["check_sinusoidal_encoding", "position_pair_by_hand"]


def position_pair_by_hand(seed: int | None = None) -> Variant:
    """Exercise 11.1: a position ``t`` whose first pair ``(sin t, cos t)`` is asked for.

    Raises
    ------
    ValueError
        If ``seed`` is neither None (the book's own numbers) nor an integer by the seed rule (``True``, ``-1``, ``"3"``
        and ``2.5`` are refused); the message names it.

    Examples
    --------
    >>> answers(position_pair_by_hand())
    {'first_pair': [0.1411, -0.99]}
    """
    return drawn(seed, "11.1", {"t": 3}, lambda rng: {"t": int(rng.integers(1, 10))})


def _table_11_2(rng: np.random.Generator, s: tuple[int, ...]) -> dict[str, Any]:
    return {"n_positions": int(rng.integers(10, 129)), "d_model": 2 * int(rng.integers(2, 33))}


# --- self-checks ---


@with_self_check_raises
def check_sinusoidal_encoding(fn: Callable[[int, int], Any], verbose: bool = True, seed: int | None = None) -> CheckResult:
    """Check ``fn(n_positions, d_model)``: the sinusoidal table ``PE`` (even columns sine, odd columns cosine).

    ``PE[t, 2p] = sin(t / 10000^(2p/d_model))``, ``PE[t, 2p+1] = cos(...)`` with
    positions ``t = 0 .. n_positions-1``.

    Examples
    --------
    >>> def my_encoding(n_positions, d_model):
    ...     angles = np.arange(n_positions)[:, None] / 10000 ** (np.arange(0, d_model, 2) / d_model)
    ...     pe = np.empty((n_positions, d_model))
    ...     pe[:, 0::2], pe[:, 1::2] = np.sin(angles), np.cos(angles[:, : d_model // 2])
    ...     return pe
    >>> check_sinusoidal_encoding(my_encoding, verbose=False).passed
    True
    >>> check_sinusoidal_encoding(sinusoidal_encoding, verbose=False).messages
    ("my_sinusoidal_encoding is attnlib's own sinusoidal_encoding (or calls it): the exercise is to write it yourself.",)
    """
    cases = []
    mine = None if seed is None else variant("11.2", seed)
    own = () if mine is None else ((mine.n_positions, mine.d_model),)
    for n, d in ((3, 2), (1, 4), (6, 8), (50, 16), (4, 5), *own):
        want = sinusoidal_encoding(n, d)
        t = np.arange(n)[:, None]
        i = np.arange((d + 1) // 2)[None, :]  # pairs; with an odd d_model the last one has only its sine column
        angles = t * positional_frequencies(d)[None, :]
        swapped = np.empty_like(want)
        swapped[:, 0::2], swapped[:, 1::2] = np.cos(angles), np.sin(angles[:, : d // 2])
        wrong_exp = np.empty_like(want)
        wrong_exp[:, 0::2] = np.sin(t / 10000 ** (i / d))
        wrong_exp[:, 1::2] = np.cos(t / 10000 ** (i / d))[:, : d // 2]
        shifted = sinusoidal_encoding(n + 1, d)[1:]
        halves = np.concatenate([want[:, 0::2], want[:, 1::2]], axis=1)
        mistakes = (
            (swapped, "sine and cosine are swapped: even columns (0, 2, ...) hold the sine."),
            (wrong_exp, "the exponent should be 2p/d_model, where p counts sine/cosine PAIRS."),
            (shifted, "positions start at t = 0, not 1."),
            (halves, "all sines then all cosines: interleave them (sine in column 2p, cosine in column 2p+1)."),
        )
        label = "a single position" if n == 1 else f"{n} positions, d_model = {d}" + (" (odd)" if d % 2 else "")
        cases.append(
            Case(
                label,
                (n, d),
                want,
                tuple(m for m in mistakes if not same_values(m[0], want)),
                "Pair p (columns 2p and 2p+1) uses the frequency 1/10000^(2p/d_model)."
                + (" With an odd d_model the last column is a sine without its cosine partner." if d % 2 else ""),
            )
        )
    return run_cases("sinusoidal_encoding", fn, cases, verbose, Notation(("n_positions", "d_model")))


# --- the registry ---

register(
    Exercise(
        "11.1",
        "by-hand",
        position_pair_by_hand,
        lambda v: require(1 <= v.t <= 9, v, "t must be a small positive position"),
        answer=lambda v: {"first_pair": rounded(sinusoidal_encoding(v.t + 1, 2)[v.t])},
    )
)
register(
    Exercise(
        "11.2",
        "implement",
        implement_draw("11.2", 112, _table_11_2),
        finite_inputs,
        function="my_sinusoidal_encoding",
        calls=lambda v: [(v.n_positions, v.d_model), (128, 64)],
        reference=sinusoidal_encoding,
        own=(sinusoidal_encoding,),
        check=check_sinusoidal_encoding,
    )
)

"""Chapter 8's exercises (many heads): their variants, answers and self-checks.

The module follows the layout described in :mod:`attnlib.exercises`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from .. import heads
from ..core import (
    attention_parameter_count,
)
from .cases import (
    Case,
    CheckResult,
    Notation,
    check_rng,
    own_case,
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
)

__all__ = ["check_split_heads", "head_count_by_hand"]


def head_count_by_hand(seed: int | None = None) -> Variant:
    """Exercise 8.1: a model width ``d_model`` and a head count ``n_heads`` that divides it.

    Raises
    ------
    ValueError
        If ``seed`` is neither None (the book's own numbers) nor an integer by the seed rule (``True``, ``-1``, ``"3"``
        and ``2.5`` are refused); the message names it.

    Examples
    --------
    >>> answers(head_count_by_hand())
    {'d_head': 64, 'n_params': 2359296}
    """

    def make(rng: np.random.Generator) -> dict[str, Any]:
        h, d = int(rng.choice([4, 6, 8, 12, 16])), int(rng.choice([32, 48, 64, 96, 128]))
        return {"d_model": h * d, "n_heads": h}

    return drawn(seed, "8.1", {"d_model": 768, "n_heads": 12}, make)


def _split_8_2(rng: np.random.Generator, s: tuple[int, ...]) -> dict[str, Any]:
    n, k = s[0], s[3]
    n_heads = int(rng.choice([1, 2, 3, 4, 6]))
    return {"M": rng.normal(size=(n, n_heads * k)), "n_heads": n_heads}


# --- self-checks ---


@with_self_check_raises
def check_split_heads(fn: Callable[[np.ndarray, int], Any], verbose: bool = True, seed: int | None = None) -> CheckResult:
    """Check ``fn(M, n_heads)``: the columns of ``M`` cut into ``n_heads`` consecutive blocks.

    The result has shape ``(n_heads, rows, d_model / n_heads)``; block ``u``
    (counting heads from 0, as Python does) is ``M[:, u*d_head:(u+1)*d_head]``.

    Examples
    --------
    >>> check_split_heads(lambda M, h: np.stack(np.split(M, h, axis=1)), verbose=False).passed
    True
    """
    rng = check_rng()
    cases = []
    for label, M, h in (
        ("a 2x4 matrix into 2 heads", np.arange(8.0).reshape(2, 4), 2),
        ("a 3x6 matrix into 3 heads", rng.normal(size=(3, 6)), 3),
        ("an 8x8 weight matrix into 4 heads", rng.normal(size=(8, 8)), 4),
        ("one head (nothing to split)", rng.normal(size=(3, 4)), 1),
        *own_case(seed, "8.2", ("M", "n_heads")),
    ):
        want = heads.split_heads(M, h)
        d = M.shape[1] // h
        interleaved = np.stack([M[:, u::h] for u in range(h)])
        rows = np.stack(np.split(M, h, axis=0)) if M.shape[0] % h == 0 else None
        mistakes = [(interleaved, "you took every h-th column; each head owns a block of d_head CONSECUTIVE columns.")]
        if rows is not None:
            mistakes.append((rows, "you split the rows (tokens); split the columns (features) instead."))
        mistakes.append(
            (M.reshape(h, M.shape[0], d), "a plain reshape mixes rows and columns; take column blocks M[:, u*d_head:(u+1)*d_head].")
        )
        mistakes.append(
            (M.reshape(M.shape[0], h, d), "the axes are (n, n_heads, d_head); the heads axis comes first: (n_heads, n, d_head).")
        )
        cases.append(
            Case(
                label,
                (M, h),
                want,
                tuple(m for m in mistakes if not same_values(m[0], want)),
                "The result is (n_heads, rows, d_head): stack the column blocks.",
            )
        )
    return run_cases("split_heads", fn, cases, verbose, Notation(("M", "n_heads"), {"M": "n x d_model"}))


# --- the registry ---

register(
    Exercise(
        "8.1",
        "by-hand",
        head_count_by_hand,
        lambda v: require(v.d_model % v.n_heads == 0, v, "n_heads must divide d_model"),
        answer=lambda v: {"d_head": heads.head_dim(v.d_model, v.n_heads), "n_params": attention_parameter_count(v.d_model, v.n_heads)},
    )
)
register(
    Exercise(
        "8.2",
        "implement",
        implement_draw("8.2", 82, _split_8_2),
        finite_inputs,
        function="my_split_heads",
        calls=lambda v: [(v.M, v.n_heads)] + [(np.arange(60.0).reshape(5, 12), h) for h in (1, 2, 3, 4, 6, 12)],
        reference=heads.split_heads,
        own=(heads.split_heads,),
        check=check_split_heads,
    )
)

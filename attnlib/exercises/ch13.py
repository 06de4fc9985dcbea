"""Chapter 13's exercises (cost): their variants, answers and self-checks.

The module follows the layout described in :mod:`attnlib.exercises`.
"""

from __future__ import annotations

import math
from typing import Any

from .. import cost
from .registry import (
    Exercise,
    Variant,
    answers,  # noqa: F401 (the doctests use it)
    drawn,
    register,
    require,
)

__all__ = ["memory_budget_by_hand", "score_memory_by_hand"]


def score_memory_by_hand(seed: int | None = None) -> Variant:
    """Exercise 13.1: a sequence length ``n`` (a power of two) for one float32 score matrix.

    Raises
    ------
    ValueError
        If ``seed`` is neither None (the book's own numbers) nor an integer by the seed rule (``True``, ``-1``, ``"3"``
        and ``2.5`` are refused); the message names it.

    Examples
    --------
    >>> answers(score_memory_by_hand())
    {'score_bytes': 16777216, 'score_mib': 16.0}
    """
    return drawn(seed, "13.1", {"n": 2048}, lambda rng: {"n": int(2 ** rng.integers(9, 15))})


def memory_budget_by_hand(seed: int | None = None) -> Variant:
    """Exercise 13.2: a memory budget of ``2**budget_log2`` bytes for one float32 score matrix.

    Raises
    ------
    ValueError
        If ``seed`` is neither None (the book's own numbers) nor an integer by the seed rule (``True``, ``-1``, ``"3"``
        and ``2.5`` are refused); the message names it.

    Examples
    --------
    >>> answers(memory_budget_by_hand())
    {'n_for_budget': 16384}
    """
    return drawn(seed, "13.2", {"budget_log2": 30}, lambda rng: {"budget_log2": int(rng.choice([24, 26, 28, 30, 32, 34]))})


def _answer_13_1(v: Variant) -> dict[str, Any]:
    b = cost.score_matrix_bytes(v.n)
    return {"score_bytes": b, "score_mib": b / 2**20}


#: The largest budget exponent 13.2's answer computes (2**1024 bytes; the draws give 24 to 34).
MAX_BUDGET_LOG2 = 1024


def _answer_13_2(v: Variant) -> dict[str, Any]:
    budget_log2 = v.budget_log2
    if not 0 <= budget_log2 <= MAX_BUDGET_LOG2:  # 2**budget_log2 is computed exactly: refuse before it is
        raise ValueError(f"v.inputs['budget_log2'] must be between 0 and {MAX_BUDGET_LOG2}, got {budget_log2}")
    return {"n_for_budget": math.isqrt(2**budget_log2 // cost.score_matrix_bytes(1))}


# --- the registry ---

register(
    Exercise(
        "13.1",
        "by-hand",
        score_memory_by_hand,
        lambda v: require(v.n & (v.n - 1) == 0 and v.n >= 256, v, "n must be a power of two"),
        answer=_answer_13_1,
    )
)
register(
    Exercise(
        "13.2",
        "by-hand",
        memory_budget_by_hand,
        lambda v: require(v.budget_log2 % 2 == 0 and v.budget_log2 >= 4, v, "the budget must be an even power of two"),
        answer=_answer_13_2,
    )
)

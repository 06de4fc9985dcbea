"""Chapter 3's exercises (values): their variants, answers and self-checks.

The module follows the layout described in :mod:`attnlib.exercises`.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..core import (
    running_example,
    self_attention,
)
from .registry import (
    Exercise,
    Variant,
    answers,  # noqa: F401 (the doctests use it)
    drawn,
    is_grid,
    register,
    require,
    rounded,
)

__all__ = ["values_by_hand"]


def values_by_hand(seed: int | None = None) -> Variant:
    """Exercise 3.1: a small integer ``W_V`` for the running example's tokens.

    Raises
    ------
    ValueError
        If ``seed`` is neither None (the book's own numbers) nor an integer by the seed rule (``True``, ``-1``, ``"3"``
        and ``2.5`` are refused); the message names it.

    Examples
    --------
    >>> answers(values_by_hand())
    {'V_by_hand': [[2.0, 0.0], [1.0, -1.0], [1.5, -0.5]]}
    """
    book = {"X": running_example(), "W_V": np.array([[2.0, 0.0], [1.0, -1.0]])}
    return drawn(seed, "3.1", book, lambda rng: {"X": running_example(), "W_V": rng.choice(np.arange(-2, 3), size=(2, 2)).astype(float)})


def _well_posed_3_1(v: Variant) -> None:
    require(is_grid(v.W_V, 1) and not np.allclose(v.W_V, np.eye(2)), v, "W_V must be small integers and not I")
    require(abs(np.linalg.det(v.W_V)) > 0, v, "W_V must not squash the tokens onto a line")


def _answer_3_1(v: Variant) -> dict[str, Any]:
    return {"V_by_hand": rounded(self_attention(v.X, np.eye(2), np.eye(2), v.W_V).V)}


# --- the registry ---

register(Exercise("3.1", "by-hand", values_by_hand, _well_posed_3_1, answer=_answer_3_1))

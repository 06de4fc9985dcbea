"""Chapter 7's exercises (why the scale matters): their variants, answers and self-checks.

The module follows the layout described in :mod:`attnlib.exercises`.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..core import (
    running_example,
    softmax,
)
from .registry import (
    Exercise,
    Variant,
    answers,  # noqa: F401 (the doctests use it)
    by_hand_tokens,
    drawn,
    register,
    require,
    rounded,
    tokens,
)

__all__ = ["large_head_prediction", "unscaled_row_by_hand"]


def unscaled_row_by_hand(seed: int | None = None) -> Variant:
    """Exercise 7.1: tokens ``X`` (halves); token 1's unscaled scores ``X[0] X^T`` go through a softmax.

    Raises
    ------
    ValueError
        If ``seed`` is neither None (the book's own numbers) nor an integer by the seed rule (``True``, ``-1``, ``"3"``
        and ``2.5`` are refused); the message names it.

    Examples
    --------
    >>> v = unscaled_row_by_hand()
    >>> v.scores.tolist(), answers(v)
    ([1.0, 0.0, 0.5], {'unscaled_row': [0.5065, 0.1863, 0.3072]})
    """

    def with_scores(X: np.ndarray) -> dict[str, Any]:
        return {"X": X, "scores": X @ X[0]}

    return drawn(seed, "7.1", with_scores(running_example()), lambda rng: with_scores(tokens(rng)))


def _well_posed_7_1(v: Variant) -> None:
    by_hand_tokens(v)
    s = np.sort(v.scores)
    require(bool(np.all(np.diff(s) >= 0.25)) and np.abs(s).max() <= 4, v, "token 1's scores must differ (a clear top weight)")


def large_head_prediction(seed: int | None = None) -> Variant:
    """Exercise 7.2: the large head size ``d_k`` whose unscaled rows are to be predicted.

    Raises
    ------
    ValueError
        If ``seed`` is neither None (the book's own numbers) nor an integer by the seed rule (``True``, ``-1``, ``"3"``
        and ``2.5`` are refused); the message names it.
    """
    return drawn(seed, "7.2", {"d_k": 128}, lambda rng: {"d_k": int(rng.choice([64, 128, 256, 512]))})


# --- the registry ---

register(Exercise("7.1", "by-hand", unscaled_row_by_hand, _well_posed_7_1, answer=lambda v: {"unscaled_row": rounded(softmax(v.scores))}))
register(Exercise("7.2", "predict", large_head_prediction, lambda v: require(v.d_k >= 32, v, "the head must be large")))

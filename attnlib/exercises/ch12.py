"""Chapter 12's exercises (retrieval): their variants, answers and self-checks.

The module follows the layout described in :mod:`attnlib.exercises`.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .. import retrieval
from .registry import (
    Exercise,
    Variant,
    answers,  # noqa: F401 (the doctests use it)
    drawn,
    int_matrix,
    is_grid,
    register,
    require,
    rounded,
)

__all__ = ["retrieval_by_hand"]


def retrieval_by_hand(seed: int | None = None) -> Variant:
    """Exercise 12.1: a query's scores over two stored items and the items' values.

    Raises
    ------
    ValueError
        If ``seed`` is neither None (the book's own numbers) nor an integer by the seed rule (``True``, ``-1``, ``"3"``
        and ``2.5`` are refused); the message names it.

    Examples
    --------
    >>> answers(retrieval_by_hand())
    {'weights_by_hand': [0.8808, 0.1192], 'output_by_hand': [0.8808, 0.1192]}
    """

    def make(rng: np.random.Generator) -> dict[str, Any]:
        scores = rng.choice(np.arange(-1, 4), size=2, replace=False).astype(float)
        return {"scores": scores, "values": int_matrix(rng)}

    return drawn(seed, "12.1", {"scores": np.array([2.0, 0.0]), "values": np.eye(2)}, make)


def _well_posed_12_1(v: Variant) -> None:
    require(is_grid(v.scores, 1) and v.scores[0] != v.scores[1], v, "scores must be distinct integers (no tie)")
    require(is_grid(v.values, 1) and len({tuple(r) for r in v.values.tolist()}) == 2, v, "values must be distinct integer rows")


def _answer_12_1(v: Variant) -> dict[str, Any]:
    r = retrieval.retrieve([v.scores], v.values)
    return {"weights_by_hand": rounded(r.weights[0]), "output_by_hand": rounded(r.output[0])}


# --- the registry ---

register(Exercise("12.1", "by-hand", retrieval_by_hand, _well_posed_12_1, answer=_answer_12_1))

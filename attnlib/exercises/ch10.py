"""Chapter 10's exercises (paths): their variants, answers and self-checks.

The module follows the layout described in :mod:`attnlib.exercises`.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .. import paths
from .registry import (
    Exercise,
    Variant,
    answers,  # noqa: F401 (the doctests use it)
    drawn,
    register,
    require,
)

__all__ = ["path_lengths_by_hand"]


def path_lengths_by_hand(seed: int | None = None) -> Variant:
    """Exercise 10.1: a sentence of ``n`` tokens and two positions ``source < target`` (1-based).

    Raises
    ------
    ValueError
        If ``seed`` is neither None (the book's own numbers) nor an integer by the seed rule (``True``, ``-1``, ``"3"``
        and ``2.5`` are refused); the message names it.

    Examples
    --------
    >>> answers(path_lengths_by_hand())
    {'rnn_steps': 49, 'attention_steps': 1}
    """

    def make(rng: np.random.Generator) -> dict[str, Any]:
        n = int(rng.integers(20, 201))
        source, target = sorted(int(p) for p in rng.choice(np.arange(1, n + 1), size=2, replace=False))
        return {"n": n, "source": source, "target": target}

    return drawn(seed, "10.1", {"n": 50, "source": 1, "target": 50}, make)


# --- the registry ---

register(
    Exercise(
        "10.1",
        "by-hand",
        path_lengths_by_hand,
        lambda v: require(1 <= v.source < v.target <= v.n, v, "positions must satisfy 1 <= source < target <= n"),
        answer=lambda v: {
            "rnn_steps": paths.rnn_path_length(v.source, v.target, n=v.n),
            "attention_steps": paths.attention_path_length(v.source, v.target, n=v.n),
        },
    )
)

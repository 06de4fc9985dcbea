"""Chapter 5's exercises (scaling): their variants, answers and self-checks.

The module follows the layout described in :mod:`attnlib.exercises`.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

from ..core import (
    running_example,
    scale_divisor,
    scaled_scores,
)
from .cases import (
    QKV_NOTATION,
    Case,
    CheckResult,
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
    rounded,
)

__all__ = ["check_scaled_scores", "variance_by_hand"]


def variance_by_hand(seed: int | None = None) -> Variant:
    """Exercise 5.1: a head size ``d_k`` that is a perfect square, so its root is a whole number.

    Raises
    ------
    ValueError
        If ``seed`` is neither None (the book's own numbers) nor an integer by the seed rule (``True``, ``-1``, ``"3"``
        and ``2.5`` are refused); the message names it.

    Examples
    --------
    >>> answers(variance_by_hand())
    {'var_raw': 64.0, 'std_raw': 8.0, 'var_scaled': 1.0}
    """
    return drawn(seed, "5.1", {"d_k": 64}, lambda rng: {"d_k": int(rng.choice([4, 9, 16, 25, 36, 49, 64, 81, 100, 144, 256]))})


def _answer_5_1(v: Variant) -> dict[str, Any]:
    d = scale_divisor(v.d_k)
    return {"var_raw": rounded(d**2), "std_raw": rounded(d), "var_scaled": rounded(1.0)}


def _scaled_5_2(rng: np.random.Generator, s: tuple[int, ...]) -> dict[str, Any]:
    n, m, d = s[:3]
    return {"Q": rng.normal(size=(n, 2 * d)), "K": rng.normal(size=(m, 2 * d))}


# --- self-checks ---


@with_self_check_raises
def check_scaled_scores(fn: Callable[[np.ndarray, np.ndarray], Any], verbose: bool = True, seed: int | None = None) -> CheckResult:
    """Check ``fn(Q, K)``: the scaled scores ``Q K^T / sqrt(d_k)``.

    Examples
    --------
    >>> check_scaled_scores(lambda Q, K: Q @ K.T / np.sqrt(Q.shape[1]), verbose=False).passed
    True
    >>> check_scaled_scores(lambda Q, K: Q @ K.T, verbose=False).passed
    False
    """
    rng = check_rng()
    X = running_example()
    cases = []
    for label, Q, K in (
        ("the running example (Q = K = X)", X, X),
        ("2 queries, 5 keys, d_k = 4", rng.normal(size=(2, 4)), rng.normal(size=(5, 4))),
        ("6 queries, 3 keys, d_k = 9", rng.normal(size=(6, 9)), rng.normal(size=(3, 9))),
        ("a single token, d_k = 3", np.array([[1.0, 2.0, -1.0]]), np.array([[0.5, 0.5, 2.0]])),
        *own_case(seed, "5.2", ("Q", "K")),
    ):
        raw = scaled_scores(Q, K, scale=False)
        want = scaled_scores(Q, K)
        mistakes = [
            (raw, "these are the raw scores Q K^T: you still need to divide by sqrt(d_k)."),
            (raw / Q.shape[1], "you divided by d_k; the standard deviation of the score is sqrt(d_k), so divide by that."),
            (raw / np.sqrt(K.shape[0]), "you divided by the square root of the number of keys; d_k is the number of columns of Q and K."),
            (
                raw / np.sqrt(Q.shape[0]),
                "you divided by the square root of the number of queries; d_k is the number of columns of Q and K.",
            ),
        ]
        cases.append(
            Case(
                label,
                (Q, K),
                want,
                tuple(m for m in mistakes if not same_values(m[0], want)),
                "Every query (row of Q) meets every key (row of K); then scale.",
            )
        )
    return run_cases("scaled_scores", fn, cases, verbose, QKV_NOTATION)


# --- the registry ---

register(
    Exercise(
        "5.1",
        "by-hand",
        variance_by_hand,
        lambda v: require(math.isqrt(v.d_k) ** 2 == v.d_k, v, "d_k must be a perfect square"),
        answer=_answer_5_1,
    )
)
register(
    Exercise(
        "5.2",
        "implement",
        implement_draw("5.2", 52, _scaled_5_2),
        finite_inputs,
        function="my_scaled_scores",
        calls=lambda v: [(v.Q, v.K)],
        reference=scaled_scores,
        own=(scaled_scores,),
        check=check_scaled_scores,
    )
)

"""Chapter 2's exercises (learned compatibility): their variants, answers and self-checks.

The module follows the layout described in :mod:`attnlib.exercises`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from .. import compatibility
from ..core import (
    running_example,
)
from .cases import (
    Case,
    CheckResult,
    Notation,
    check_rng,
    own_case,
    run_cases,
    with_self_check_raises,
)
from .registry import (
    Exercise,
    Variant,
    answers,  # noqa: F401 (the doctests use it)
    drawn,
    finite_inputs,
    implement_draw,
    int_matrix,
    is_grid,
    register,
    require,
    rounded,
)

__all__ = ["bilinear_by_hand", "check_bilinear_scores"]


def bilinear_by_hand(seed: int | None = None) -> Variant:
    """Exercise 2.1: the running example's tokens with small integer ``W_Q`` and ``W_K``.

    Raises
    ------
    ValueError
        If ``seed`` is neither None (the book's own numbers) nor an integer by the seed rule (``True``, ``-1``, ``"3"``
        and ``2.5`` are refused); the message names it.

    Examples
    --------
    >>> answers(bilinear_by_hand())
    {'e_13': 1.0, 'e_31': 2.0}
    """
    book = {"X": running_example(), "W_Q": np.array([[1.0, 0.0], [1.0, 1.0]]), "W_K": np.array([[2.0, 0.0], [0.0, 1.0]])}
    return drawn(seed, "2.1", book, lambda rng: {"X": running_example(), "W_Q": int_matrix(rng), "W_K": int_matrix(rng)})


def _scores_2_1(v: Variant) -> np.ndarray:
    return (v.X @ v.W_Q) @ (v.X @ v.W_K).T


def _well_posed_2_1(v: Variant) -> None:
    S = _scores_2_1(v)
    require(is_grid(v.W_Q, 1) and is_grid(v.W_K, 1), v, "projections must be small integers")
    require(abs(S[0, 2] - S[2, 0]) >= 0.5, v, "e_13 and e_31 must differ, the point of the question")


def _answer_2_1(v: Variant) -> dict[str, Any]:
    S = _scores_2_1(v)
    return {"e_13": rounded(S[0, 2]), "e_31": rounded(S[2, 0])}


def _bilinear(X: np.ndarray, W_Q: np.ndarray, W_K: np.ndarray) -> np.ndarray:
    return compatibility.bilinear_scores(X, compatibility.bilinear_matrix(W_Q, W_K))


# --- self-checks ---


@with_self_check_raises
def check_bilinear_scores(
    fn: Callable[[np.ndarray, np.ndarray, np.ndarray], Any], verbose: bool = True, seed: int | None = None
) -> CheckResult:
    """Check ``fn(X, W_Q, W_K)``, which should return the scores ``(X W_Q)(X W_K)^T``.

    Examples
    --------
    >>> check_bilinear_scores(lambda X, WQ, WK: (X @ WQ) @ (X @ WK).T, verbose=False).passed
    True
    >>> check_bilinear_scores(lambda X, WQ, WK: (X @ WK) @ (X @ WQ).T, verbose=False).passed
    False
    """
    rng = check_rng()
    cases = []
    for label, X, WQ, WK in (
        ("the running example with W_Q = W_K = I", running_example(), np.eye(2), np.eye(2)),
        ("the running example with W_Q != W_K", running_example(), np.array([[1.0, 2.0], [0.0, 1.0]]), np.array([[0.5, 0.0], [1.0, -1.0]])),
        ("5 tokens, d_model = 4, d_k = 3", rng.normal(size=(5, 4)), rng.normal(size=(4, 3)), rng.normal(size=(4, 3))),
        ("a single token", np.array([[1.0, -2.0]]), np.array([[1.0], [0.5]]), np.array([[2.0], [1.0]])),
        *own_case(seed, "2.2", ("X", "W_Q", "W_K")),
    ):
        want = compatibility.bilinear_scores(X, compatibility.bilinear_matrix(WQ, WK))
        cases.append(
            Case(
                label,
                (X, WQ, WK),
                want,
                mistakes=tuple(
                    (w, h)
                    for w, h in (
                        (want.T, "you returned the transpose: rows are queries (X W_Q), columns are keys (X W_K)."),
                        ((X @ WQ) @ (X @ WQ).T, "you used W_Q on both sides: the keys are projected with W_K."),
                        ((X @ WK) @ (X @ WK).T, "you used W_K on both sides: the queries are projected with W_Q."),
                        (want / np.sqrt(WQ.shape[1]), "there is no scaling in this exercise: return the plain scores."),
                    )
                    if not np.allclose(w, want)
                ),
                hint="Project twice: Q = X W_Q and K = X W_K, then every query row meets every key row.",
            )
        )
    notation = Notation(
        ("X", "W_Q", "W_K"),
        {"X": "n x d_model", "W_Q": "d_model x d_k", "W_K": "d_model x d_k"},
        "Tokens are rows, so a projection is X W (n x d_model times d_model x d_k); the scores then pair every query row "
        "with every key row, so the key side enters that product transposed.",
    )
    return run_cases("bilinear_scores", fn, cases, verbose, notation)


# --- the registry ---

register(Exercise("2.1", "by-hand", bilinear_by_hand, _well_posed_2_1, answer=_answer_2_1))
register(
    Exercise(
        "2.2",
        "implement",
        implement_draw(
            "2.2",
            22,
            lambda rng, s: {"X": rng.normal(size=(s[0], s[2])), "W_Q": rng.normal(size=(s[2], s[3])), "W_K": rng.normal(size=(s[2], s[3]))},
        ),
        finite_inputs,
        function="bilinear_scores",
        calls=lambda v: [(v.X, v.W_Q, v.W_K)],
        reference=_bilinear,
        own=(compatibility.bilinear_scores, compatibility.bilinear_matrix),
        check=check_bilinear_scores,
    )
)

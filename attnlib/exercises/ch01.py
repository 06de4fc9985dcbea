"""Chapter 1's exercises (scores as dot products): their variants, answers and self-checks.

The module follows the layout described in :mod:`attnlib.exercises`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from ..core import (
    running_example,
    scaled_scores,
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
    by_hand_tokens,
    drawn,
    finite_inputs,
    implement_draw,
    register,
    require,
    rounded,
    tokens,
)

__all__ = ["check_pairwise_dots", "dot_products_by_hand"]


def dot_products_by_hand(seed: int | None = None) -> Variant:
    """Exercise 1.1: three tokens ``X`` (entries are halves); dot products with token 3 and its length.

    Raises
    ------
    ValueError
        If ``seed`` is neither None (the book's own numbers) nor an integer by the seed rule (``True``, ``-1``, ``"3"``
        and ``2.5`` are refused); the message names it.

    Examples
    --------
    >>> answers(dot_products_by_hand())
    {'x1_dot_x3': 0.5, 'x2_dot_x3': 0.5, 'x3_dot_x3': 0.5, 'length_x3': 0.7071}
    """
    return drawn(seed, "1.1", {"X": running_example()}, lambda rng: {"X": tokens(rng)})


def _answer_1_1(v: Variant) -> dict[str, Any]:
    X = v.X
    return {
        "x1_dot_x3": rounded(X[0] @ X[2]),
        "x2_dot_x3": rounded(X[1] @ X[2]),
        "x3_dot_x3": rounded(X[2] @ X[2]),
        "length_x3": rounded(np.linalg.norm(X[2])),
    }


def _well_posed_1_1(v: Variant) -> None:
    by_hand_tokens(v)
    require(v.X[2] @ v.X[2] > 0, v, "token 3 has length 0")


# --- self-checks ---


@with_self_check_raises
def check_pairwise_dots(fn: Callable[[np.ndarray], Any], verbose: bool = True, seed: int | None = None) -> CheckResult:
    """Check ``fn(X)``, which should return every pairwise dot product ``X X^T``.

    Entry ``[i, j]`` is the dot product of token (row) ``i`` with token ``j``.

    Examples
    --------
    >>> check_pairwise_dots(lambda X: X @ X.T, verbose=False).passed
    True
    >>> check_pairwise_dots(lambda X: X.T @ X, verbose=False).passed
    False
    """
    rng = check_rng()
    cases = []
    for label, X in (
        ("the running example X", running_example()),
        ("4 tokens with 3 features", rng.normal(size=(4, 3))),
        ("a single token", np.array([[2.0, -1.0, 0.5]])),
        *own_case(seed, "1.2", ("X",)),
    ):
        cases.append(
            Case(
                label,
                (X,),
                X @ X.T,
                mistakes=(
                    (X * X, "you multiplied entry by entry; a dot product multiplies and then sums."),
                    (
                        X.T @ X,
                        "you paired the features (columns), not the tokens (rows): your table has the shape d x d, "
                        "but it is n x n, one entry per pair of tokens.",
                    ),
                    (X @ X.T / np.sqrt(X.shape[1]), "there is no scaling in this exercise: return the plain dot products."),
                ),
                hint="Tokens are the rows of X: entry [i, j] is row i dotted with row j.",
            )
        )
    notation = Notation(
        ("X",),
        {"X": "n x d (one row per token)"},
        "Entry [i, j] pairs token i (a row of X) with token j (also a row), so one side of the product enters transposed.",
    )
    return run_cases("pairwise_dots", fn, cases, verbose, notation)


# --- the registry ---

register(Exercise("1.1", "by-hand", dot_products_by_hand, _well_posed_1_1, answer=_answer_1_1))
register(
    Exercise(
        "1.2",
        "implement",
        implement_draw("1.2", 1, lambda rng, s: {"X": rng.normal(size=(s[0], s[2]))}),
        finite_inputs,
        function="pairwise_dots",
        calls=lambda v: [(v.X,), (running_example(),)],
        reference=lambda X: scaled_scores(X, X, scale=False),
        own=(scaled_scores,),
        check=check_pairwise_dots,
    )
)

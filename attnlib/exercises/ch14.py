"""Chapter 14's exercises (attention learns (the backward pass)): their variants, answers and self-checks.

The module follows the layout described in :mod:`attnlib.exercises`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from .. import backward
from ..core import (
    running_example,
    scaled_scores,
    softmax,
)
from .cases import (
    ATOL,
    Case,
    CheckResult,
    Notation,
    run_cases,
    with_self_check_raises,
)
from .registry import (
    Exercise,
    Variant,
    answers,  # noqa: F401 (the doctests use it)
    drawn,
    implement_draw,
    is_grid,
    register,
    require,
    rounded,
    variant,
)

__all__ = ["check_softmax_backward", "softmax_row_backward_by_hand"]


ONE_HOT_ROWS = np.eye(3)
QUARTER_ROWS = np.array([[0.5, 0.25, 0.25], [0.25, 0.5, 0.25], [0.25, 0.25, 0.5], [0.75, 0.25, 0.0], [0.0, 0.25, 0.75], [0.25, 0.0, 0.75]])


def softmax_row_backward_by_hand(seed: int | None = None) -> Variant:
    """Exercise 14.1: a softmax row ``a`` of quarters and its upstream gradient ``g``.

    Every variant, the book's own included, has a row that is not one-hot and a gradient that does not
    vanish, so that the answer needs the formula; the one-hot case is the exercise's follow-up question.

    Raises
    ------
    ValueError
        If ``seed`` is neither None (the book's own numbers) nor an integer by the seed rule (``True``, ``-1``, ``"3"``
        and ``2.5`` are refused); the message names it.

    Examples
    --------
    >>> v = softmax_row_backward_by_hand()
    >>> v.a.tolist(), v.g.tolist(), answers(v)
    ([0.5, 0.25, 0.25], [3.0, -1.0, 2.0], {'dz_row': [0.625, -0.6875, 0.0625]})
    """
    book = {"a": np.array([0.5, 0.25, 0.25]), "g": np.array([3.0, -1.0, 2.0])}
    return drawn(
        seed,
        "14.1",
        book,
        lambda rng: {"a": QUARTER_ROWS[rng.integers(len(QUARTER_ROWS))].copy(), "g": rng.integers(-2, 4, size=3).astype(float)},
    )


def _well_posed_14_1(v: Variant) -> None:
    require(np.isclose(v.a.sum(), 1) and is_grid(v.a, 0.25) and bool(np.all(v.a >= 0)), v, "a must be quarters summing to 1")
    require(is_grid(v.g, 1) and np.abs(v.g).max() <= 3, v, "g must be small integers")
    # the book's row too: if the gradient vanished, the answer would not need the formula
    require(len(set(v.g.tolist())) > 1 and not np.allclose(backward.softmax_backward([v.a], [v.g]), 0), v, "the gradient vanishes")


def _backward_14_2(rng: np.random.Generator, s: tuple[int, ...]) -> dict[str, Any]:
    n, m = s[0], s[1] + 1
    scores = 2 * rng.normal(size=(n, m))
    scores[0, int(rng.integers(m))] = -np.inf  # one masked key: its weight and its gradient are exactly 0
    return {"scores": scores, "dA": np.round(rng.normal(size=(n, m)), 3)}


def _well_posed_14_2(v: Variant) -> None:
    require(bool(np.isfinite(v.scores).any(axis=1).all()), v, "a row of scores is masked entirely")
    require(bool(np.all(np.isfinite(v.dA))), v, "dA must be finite")


# --- self-checks ---


@with_self_check_raises
def check_softmax_backward(fn: Callable[[np.ndarray, np.ndarray], Any], verbose: bool = True, seed: int | None = None) -> CheckResult:
    """Gradient check for ``fn(weights, d_weights)``: the row-softmax backward ``dL/dS``.

    ``weights`` is ``A = softmax(S)`` (one softmax per row) and ``d_weights``
    is ``dL/dA``; the answer is ``dL/dS``. Each case's expected answer is
    computed by central finite differences of ``L(S) = sum(d_weights *
    softmax(S))``, not by attnlib's own formula, so this is a gradient check.
    Cases: the running example's scores, a masked row (a weight of exactly 0
    must get gradient exactly 0 there), a nearly one-hot row and a single key.

    Examples
    --------
    >>> def my_backward(A, dA):
    ...     return A * (dA - np.sum(dA * A, axis=-1, keepdims=True))
    >>> check_softmax_backward(my_backward, verbose=False).passed
    True
    >>> check_softmax_backward(lambda A, dA: A * dA, verbose=False).passed
    False
    """
    from ..backward import central_difference

    rng = np.random.default_rng(14)
    S = scaled_scores(running_example(), running_example())
    cases = []
    own = [] if seed is None else [(f"your own inputs (seed {seed})", variant("14.2", seed).scores, variant("14.2", seed).dA)]
    for label, scores, given_dA in (
        ("the running example's scaled scores", S, None),
        ("2 queries, 4 keys, random scores", rng.normal(size=(2, 4)), None),
        ("a masked row (one key has score -inf)", np.array([[0.3, -np.inf, 1.1], [0.0, 0.5, -0.5]]), None),
        ("a nearly one-hot row (scores 12 apart)", np.array([[12.0, 0.0, 0.0]]), None),
        ("a single key", np.array([[0.7], [-2.0]]), None),
        *own,
    ):
        A = softmax(scores)
        dA = np.round(rng.normal(size=A.shape), 3) if given_dA is None else given_dA
        allowed = np.isfinite(scores)

        def loss(s: np.ndarray, dA: np.ndarray = dA, allowed: np.ndarray = allowed) -> float:
            return float(np.sum(dA * softmax(np.where(allowed, s, -np.inf))))

        want = central_difference(loss, np.where(allowed, scores, 0.0), eps=1e-6)
        want[~allowed] = 0.0  # a masked score is not a variable: it stays -inf
        mistakes = (
            (A * dA, "you left out the second term: when one score moves, every weight of its row moves, not only its own."),
            (
                dA - np.sum(dA * A, axis=-1, keepdims=True),
                "multiply the bracket by A: each weight scales its own entry of the result.",
            ),
            (A * (dA - np.sum(dA * A, axis=0, keepdims=True)), "sum over each ROW (axis=-1, keepdims=True), not over columns."),
            (
                A * (dA - np.sum(dA, axis=-1, keepdims=True)),
                "the sum inside the bracket is weighted: each entry of dA counts with its own weight.",
            ),
        )
        cases.append(
            Case(
                label,
                (A, dA),
                want,
                tuple(m for m in mistakes if m[0].shape != want.shape or not np.allclose(m[0], want, atol=ATOL)),
                "Derive it for one row of three weights first (the chapter's backward equation), then check it on the small case.",
                shown=not label.startswith(("a nearly one-hot row", "your own")),  # 14.1 asks it by hand; own cases stay private
            )
        )
    return run_cases("softmax_backward", fn, cases, verbose, Notation(("A", "dA"), {"A": "n_q x n_k", "dA": "n_q x n_k"}))


# --- the registry ---

register(
    Exercise(
        "14.1",
        "by-hand",
        softmax_row_backward_by_hand,
        _well_posed_14_1,
        answer=lambda v: {"dz_row": rounded(backward.softmax_backward([v.a], [v.g])[0])},
    )
)
register(
    Exercise(
        "14.2",
        "implement",
        implement_draw("14.2", 142, _backward_14_2),
        _well_posed_14_2,
        function="softmax_backward",
        calls=lambda v: [(softmax(v.scores), v.dA)],
        reference=backward.softmax_backward,
        own=(backward.softmax_backward,),
        check=check_softmax_backward,
        exact_zero=True,
    )
)

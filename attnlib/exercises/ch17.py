"""Chapter 17's exercises (induction heads): their variants, answers and self-checks.

17.1 (by hand) reads a prefix-matching score off three rows of attention weights; 17.2
(implement) writes the previous-token score of one sequence's attention map. The self-check
``check_previous_token_score`` is re-exported by :mod:`attnlib.checks`, the draw function by
:mod:`attnlib.variants`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from .. import induction
from ..core import causal_mask, softmax
from .cases import Case, CheckResult, Notation, own_case, run_cases, with_self_check_raises
from .registry import (
    Exercise,
    Variant,
    answers,  # noqa: F401 (the doctests use it)
    drawn,
    implement_draw,
    register,
    require,
)

__all__ = ["check_previous_token_score", "prefix_score_by_hand"]

#: The sequence of exercise 17.1: half length 3, tokens a b c a b c.
SEQUENCE = ("a", "b", "c", "a", "b", "c")


def _tenths(rng: np.random.Generator, n: int) -> list[float]:
    """``n`` non-negative multiples of 0.1 that sum to 1."""
    cuts = np.sort(rng.integers(0, 11, size=n - 1))
    parts = np.diff(np.concatenate([[0], cuts, [10]]))
    return [round(float(p) / 10, 1) for p in parts]


def prefix_score_by_hand(seed: int | None = None) -> Variant:
    """Exercise 17.1: layer 2's weights from the repeated tokens (rows 3, 4, 5) of ``a b c a b c``.

    ``w3``, ``w4``, ``w5`` are the rows of queries 3, 4 and 5 over the keys 0..3, 0..4 and 0..5.

    Raises
    ------
    ValueError
        If ``seed`` is neither None (the book's own numbers) nor an integer by the seed rule (``True``, ``-1``, ``"3"``
        and ``2.5`` are refused); the message names it.

    Examples
    --------
    >>> v = prefix_score_by_hand()
    >>> v.w3, round(answers(v)["prefix_score"], 4)
    ([0.1, 0.8, 0.1, 0.0], 0.7)
    """
    book = {"w3": [0.1, 0.8, 0.1, 0.0], "w4": [0.0, 0.1, 0.6, 0.1, 0.2], "w5": [0.0, 0.0, 0.1, 0.7, 0.1, 0.1]}
    return drawn(seed, "17.1", book, lambda rng: {f"w{i}": _tenths(rng, i + 1) for i in (3, 4, 5)})


def _weights_17_1(v: Variant) -> np.ndarray:
    """The full 6 x 6 map: the given rows for queries 3..5, each earlier query on itself."""
    W = np.eye(6)
    for i in (3, 4, 5):
        W[i] = 0.0
        W[i, : i + 1] = getattr(v, f"w{i}")
    return W


def _answer_17_1(v: Variant) -> dict[str, Any]:
    batch = induction.token_batch([[0, 1, 2, 0, 1, 2]], 3, halves=[3])
    return {"prefix_score": float(induction.prefix_matching_score(_weights_17_1(v), batch)[0])}


def _well_posed_17_1(v: Variant) -> None:
    for i in (3, 4, 5):
        row = getattr(v, f"w{i}")
        require(len(row) == i + 1 and abs(sum(row) - 1) < 1e-9 and min(row) >= 0, v, f"w{i} must be {i + 1} weights summing to 1")


def _maps_17_2(rng: np.random.Generator, s: tuple[int, ...]) -> dict[str, Any]:
    n = s[0]
    scores = np.where(causal_mask(n), 2.0 * rng.normal(size=(n, n)), -np.inf)
    return {"weights": softmax(scores)}


def _previous_token(weights: np.ndarray) -> float:
    n = np.asarray(weights).shape[0]
    return float(induction.previous_token_score(weights, induction.token_batch([[0] * n], 2))[0])


@with_self_check_raises
def check_previous_token_score(fn: Callable[[np.ndarray], Any], verbose: bool = True, seed: int | None = None) -> CheckResult:
    """Check ``fn(weights)``: the mean weight from each token to the token just before it.

    ``weights`` is one sequence's ``n x n`` attention map (row ``i`` is query ``i``, causal); the
    mean runs over the queries ``1 .. n-1``, which have a previous token. Cases: a perfect
    previous-token head, a head on itself, uniform causal attention, two tokens, a random map.

    Examples
    --------
    >>> def my_score(W):
    ...     W = np.asarray(W, dtype=float)
    ...     return float(np.mean([W[i, i - 1] for i in range(1, len(W))]))
    >>> check_previous_token_score(my_score, verbose=False).passed
    True
    >>> check_previous_token_score(lambda W: float(np.mean(np.diag(np.asarray(W), -1))) / 2, verbose=False).passed
    False
    """
    previous = np.eye(5, k=-1)
    previous[0, 0] = 1.0
    uniform = np.tril(np.ones((4, 4))) / np.arange(1, 5)[:, None]
    rng = np.random.default_rng(172)
    cases = []
    for label, W in (
        ("a previous-token head (each row on the token before)", previous),
        ("a head that attends to itself", np.eye(4)),
        ("uniform causal attention, 4 tokens", uniform),
        ("two tokens", np.array([[1.0, 0.0], [0.3, 0.7]])),
        ("a random causal map of 6 tokens", _maps_17_2(rng, (6,))["weights"]),
        *own_case(seed, "17.2", ("weights",)),
    ):
        W = np.asarray(W, dtype=float)
        want = np.array(_previous_token(W))
        n = W.shape[0]
        mistakes = (
            (np.mean(np.diag(W)), "that is the weight on the token itself (the main diagonal); the previous token is one column left."),
            (np.diag(W, -1).sum(), "you summed the weights; their mean over the n - 1 queries with a previous token is the score."),
            (np.diag(W, -1).sum() / n, "divide by n - 1, the number of queries that have a previous token, not by n."),
        )
        mistakes = tuple((np.array(w), h) for w, h in mistakes if not np.isclose(w, want))
        hint = "Row i is query i; its weight on the previous token is the entry in column i - 1. Average over i = 1 .. n-1."
        cases.append(Case(label, (W,), want, mistakes, hint, shown=not label.startswith("your own")))
    return run_cases("previous_token_score", fn, cases, verbose, Notation(("weights",)))


register(Exercise("17.1", "by-hand", prefix_score_by_hand, _well_posed_17_1, answer=_answer_17_1))
register(
    Exercise(
        "17.2",
        "implement",
        implement_draw("17.2", 172, _maps_17_2),
        lambda v: None,
        function="my_previous_token_score",
        calls=lambda v: [(v.weights,), (np.eye(3),)],
        reference=_previous_token,
        own=(induction.previous_token_score,),
        check=check_previous_token_score,
    )
)

"""Chapter 9's exercises (masks): their variants, answers and self-checks.

The module follows the layout described in :mod:`attnlib.exercises`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from ..core import (
    attention,
    causal_mask,
    running_example,
    scale_divisor,
    scaled_scores,
    softmax,
)
from .cases import (
    Case,
    CheckResult,
    Notation,
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
    by_hand_tokens,
    drawn,
    finite_inputs,
    implement_draw,
    register,
    require,
    rounded,
    tokens,
    variant,
)

__all__ = ["check_causal_mask", "check_masked_weights", "masked_row_by_hand"]


def _padding_mask(n: int, padded: int) -> np.ndarray:
    allowed = np.ones((n, n), dtype=bool)
    allowed[:, padded] = False
    return allowed


def masked_row_by_hand(seed: int | None = None) -> Variant:
    """Exercise 9.1: tokens ``X``, one query token and one padded key token (0-based indices).

    Raises
    ------
    ValueError
        If ``seed`` is neither None (the book's own numbers) nor an integer by the seed rule (``True``, ``-1``, ``"3"``
        and ``2.5`` are refused); the message names it.

    Examples
    --------
    >>> v = masked_row_by_hand()
    >>> v.query, v.padded, answers(v)
    (0, 1, {'masked_row': [0.5875, 0.0, 0.4125]})
    """

    def make(X: np.ndarray, query: int, padded: int) -> dict[str, Any]:
        scores = X @ X[query] / scale_divisor(X.shape[1])
        return {"X": X, "query": query, "padded": padded, "allowed": _padding_mask(3, padded), "scores": scores}

    def draw(rng: np.random.Generator) -> dict[str, Any]:
        query = int(rng.integers(3))
        padded = int(rng.choice([k for k in range(3) if k != query]))
        return make(tokens(rng), query, padded)

    return drawn(seed, "9.1", make(running_example(), 0, 1), draw)


def _well_posed_9_1(v: Variant) -> None:
    by_hand_tokens(v)
    require(v.query != v.padded, v, "the query may not be the padded token")
    require(bool(v.allowed.any(axis=1).all()), v, "a row of the mask forbids every key")
    kept = np.delete(v.scores, v.padded)
    require(abs(kept[0] - kept[1]) >= 0.1, v, "the two kept scores must differ")


def _causal_9_2(rng: np.random.Generator, s: tuple[int, ...]) -> dict[str, Any]:
    n, m, d, k, _ = s
    return {"sizes": tuple(sorted({n, m, 1 + d + k}))}


def _masked_9_3(rng: np.random.Generator, s: tuple[int, ...]) -> dict[str, Any]:
    n = s[0]
    return {"scores": 4 * rng.normal(size=(n + 1, n + 1)), "allowed": causal_mask(n + 1)}


def _masked_reference(scores: np.ndarray, allowed: np.ndarray) -> np.ndarray:
    eye = np.eye(len(scores))
    return attention(eye, scores.T, eye, mask=allowed, scale=False).weights


# --- self-checks ---


@with_self_check_raises
def check_causal_mask(fn: Callable[[int], Any], verbose: bool = True, seed: int | None = None) -> CheckResult:
    """Check ``fn(n)``: a boolean ``(n, n)`` causal mask, True where query ``i`` may attend to key ``j <= i``.

    Examples
    --------
    >>> check_causal_mask(lambda n: np.tril(np.ones((n, n), dtype=bool)), verbose=False).passed
    True
    >>> check_causal_mask(lambda n: np.triu(np.ones((n, n), dtype=bool)), verbose=False).passed
    False
    """
    cases = []
    own = () if seed is None else variant("9.2", seed).sizes
    for n in (3, 1, 6, *own):
        want = causal_mask(n)
        label = "n = 1 (a single token)" if n == 1 else f"n = {n}"
        mistakes = (
            (want.T, "this is the transpose: row i is the query and may see keys j <= i, the lower triangle."),
            (np.tril(want, -1), "the diagonal is False, but a token may attend to itself."),
            (~want, "True and False are swapped: True means 'may attend'."),
        )
        cases.append(
            Case(
                label,
                (n,),
                want,
                tuple(m for m in mistakes if not np.array_equal(m[0], want)),
                "Row i is query i; it may see keys 0..i.",
                "b",
            )
        )
    return run_cases("causal_mask", fn, cases, verbose, Notation(("n",)))


@with_self_check_raises
def check_masked_weights(fn: Callable[[np.ndarray, np.ndarray], Any], verbose: bool = True, seed: int | None = None) -> CheckResult:
    """Check ``fn(scores, allowed)``: attention weights where forbidden keys get exactly 0.

    ``allowed`` is boolean (True = may attend); each row of the result sums
    to 1 over its allowed keys.

    Examples
    --------
    >>> import attnlib
    >>> def my_masked(S, allowed):
    ...     return attnlib.softmax(np.where(allowed, S, -np.inf))
    >>> check_masked_weights(my_masked, verbose=False).passed
    True
    """
    rng = check_rng()
    S = scaled_scores(running_example(), running_example())
    cases = []
    for label, scores, allowed in (
        ("the running example with a causal mask", S, causal_mask(3)),
        ("2 queries, 4 keys, a padding mask", rng.normal(size=(2, 4)), np.array([[True, True, False, True], [True, False, False, True]])),
        ("huge scores", 500 * rng.normal(size=(3, 3)), causal_mask(3)),
        ("a single token", np.array([[1.5]]), np.array([[True]])),
        *own_case(seed, "9.3", ("scores", "allowed")),
    ):
        want = softmax(np.where(allowed, scores, -np.inf))
        after = softmax(scores) * allowed
        with np.errstate(all="ignore"):
            masked = np.where(allowed, scores, -np.inf)
            e = np.exp(masked - masked.max(axis=0, keepdims=True))
            by_column = e / e.sum(axis=0, keepdims=True)
            swapped = np.where(allowed, -np.inf, scores)
            e = np.exp(swapped - swapped.max(axis=-1, keepdims=True))
            inverted = e / e.sum(axis=-1, keepdims=True)
        mistakes = (
            (after, "you masked after the softmax, so the rows no longer sum to 1; mask the scores (with -inf) before it."),
            (softmax(scores), "nothing is masked: forbidden keys must get weight exactly 0."),
            (
                softmax(scores * allowed),
                "you set the forbidden scores to 0, but a score of 0 still gets weight (exp(0) = 1); a forbidden score must be -inf.",
            ),
            (by_column, "each COLUMN sums to 1: the softmax runs along each row (axis=-1), over the keys one query may see."),
            (
                inverted,
                "allowed and forbidden are swapped: allowed is True where the query MAY attend, so the keys to hide are where it is False.",
            ),
        )
        cases.append(
            Case(
                label,
                (scores, allowed),
                want,
                tuple(m for m in mistakes if not same_values(m[0], want)),
                "Replace forbidden scores by -inf, then take a stable softmax of each row.",
                exact_zero=~allowed,
            )
        )
    notation = Notation(
        ("scores", "allowed"),
        {"scores": "n_q x n_k", "allowed": "n_q x n_k (True = may attend)"},
        error_hints=(
            (
                "entirely -inf",
                "A row of what you passed there has no finite score left, so that query could attend to nothing. allowed is True "
                "where a query MAY attend: the keys to hide are where it is False, and every row of allowed has at least one True.",
            ),
        ),
    )
    return run_cases("masked_weights", fn, cases, verbose, notation)


# --- the registry ---

register(
    Exercise(
        "9.1",
        "by-hand",
        masked_row_by_hand,
        _well_posed_9_1,
        answer=lambda v: {"masked_row": rounded(attention(v.X, v.X, v.X, mask=v.allowed).weights[v.query])},
        exact_zero=True,  # the padded key's weight is typed as exactly 0
    )
)
register(
    Exercise(
        "9.2",
        "implement",
        implement_draw("9.2", 92, _causal_9_2),
        finite_inputs,
        function="my_causal_mask",
        calls=lambda v: [(n,) for n in v.sizes + (2, 9)],
        reference=causal_mask,
        own=(causal_mask,),
        check=check_causal_mask,
    )
)
register(
    Exercise(
        "9.3",
        "implement",
        implement_draw("9.3", 93, _masked_9_3),
        finite_inputs,
        function="masked_weights",
        calls=lambda v: [(v.scores, v.allowed)],
        reference=_masked_reference,
        own=(attention,),
        check=check_masked_weights,
        exact_zero=True,
        given=("attnlib.softmax",),  # the chapter's model answer uses it, as 4.3 and 6.2 allow
    )
)

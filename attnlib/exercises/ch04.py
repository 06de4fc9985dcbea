"""Chapter 4's exercises (the full formula): their variants, answers and self-checks.

The module follows the layout described in :mod:`attnlib.exercises`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from ..core import (
    attention,
    running_example,
    scaled_scores,
    softmax,
)
from .cases import (
    COLUMN_HINT,
    QKV_NOTATION,
    Case,
    CheckResult,
    Notation,
    check_rng,
    column_softmax,
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
    int_matrix,
    is_grid,
    register,
    require,
    rounded,
)

__all__ = ["check_attention", "check_softmax", "weighted_average_by_hand"]


QUARTER_WEIGHTS = np.array(
    [[0.5, 0.25, 0.25], [0.25, 0.5, 0.25], [0.25, 0.25, 0.5], [0.75, 0.25, 0.0], [0.0, 0.25, 0.75], [0.25, 0.0, 0.75]]
)


def weighted_average_by_hand(seed: int | None = None) -> Variant:
    """Exercise 4.1: one row of weights (quarters) and three small integer value rows ``V``.

    Raises
    ------
    ValueError
        If ``seed`` is neither None (the book's own numbers) nor an integer by the seed rule (``True``, ``-1``, ``"3"``
        and ``2.5`` are refused); the message names it.

    Examples
    --------
    >>> answers(weighted_average_by_hand())
    {'o_by_hand': [0.625, 0.375]}
    """
    book = {"weights": np.array([0.5, 0.25, 0.25]), "V": running_example()}
    return drawn(
        seed,
        "4.1",
        book,
        lambda rng: {"weights": QUARTER_WEIGHTS[rng.integers(len(QUARTER_WEIGHTS))].copy(), "V": int_matrix(rng, (3, 2))},
    )


def _well_posed_4_1(v: Variant) -> None:
    require(np.isclose(v.weights.sum(), 1) and is_grid(v.weights, 0.25), v, "weights must be quarters summing to 1")
    require(is_grid(v.V, 0.5) and len({tuple(r) for r in v.V.tolist()}) == 3, v, "values must be distinct halves")


def _softmax_4_2(rng: np.random.Generator, s: tuple[int, ...]) -> dict[str, Any]:
    return {"logits": 50 * rng.normal(size=(s[0], s[1])), "shift": float(rng.integers(-9, 10))}


def _attention_4_3(rng: np.random.Generator, s: tuple[int, ...]) -> dict[str, Any]:
    n, m, d, _, dv = s
    return {"Q": rng.normal(size=(n, d)), "K": rng.normal(size=(m, d)), "V": rng.normal(size=(m, dv))}


# --- self-checks ---


@with_self_check_raises
def check_softmax(fn: Callable[[np.ndarray], Any], verbose: bool = True, seed: int | None = None) -> CheckResult:
    """Check ``fn(x)``: a softmax along the last axis (each row of a matrix on its own).

    Cases: a vector, a matrix, huge and very negative logits (where the
    plain formula overflows to NaN), a ``-inf`` entry (a masked key, whose
    weight must be exactly 0) and a row with a single token.

    Examples
    --------
    >>> check_softmax(lambda x: np.exp(x) / np.exp(x).sum(axis=-1, keepdims=True), verbose=False).n_passed
    4
    """
    S = scaled_scores(running_example(), running_example())
    subtract_hint = "Subtract the largest entry of each row before exp(); the result is unchanged but exp() no longer overflows."
    keepdims_hint = (
        "a max or a sum along axis=-1 without keepdims=True gives a flat array, which numpy lines up with the COLUMNS "
        "(row i's value lands in column i); pass keepdims=True so it stays one value per row."
    )
    cases = []
    for label, x in (
        ("a vector [1, 0, 0.5]", np.array([1.0, 0.0, 0.5])),
        ("rows at very different scales [[1000, 0], [0, 1]]", np.array([[1000.0, 0.0], [0.0, 1.0]])),
        ("a 3x3 matrix of scores (one softmax per row)", S),
        ("huge logits [1000, 999, 0]", np.array([1000.0, 999.0, 0.0])),
        ("very negative logits [[-1000, -1001], [-1200, -1202]]", np.array([[-1000.0, -1001.0], [-1200.0, -1202.0]])),
        ("a row with a -inf entry (a masked key)", np.array([[0.0, 0.7071, -np.inf]])),
        ("a single token [[2.5]]", np.array([[2.5]])),
        *own_case(seed, "4.2", ("logits",)),
    ):
        want = softmax(x)
        mistakes = []
        if x.ndim == 2 and x.shape[0] > 1:
            with np.errstate(all="ignore"):
                e = np.exp(x - x.max())
                mistakes.append((e / e.sum(axis=0, keepdims=True), "each column sums to 1, but each ROW should: normalize along axis=-1."))
                mistakes.append((e / e.sum(), "the whole matrix sums to 1, but each row should: sum along axis=-1 with keepdims=True."))
                mistakes.append(
                    (
                        e / e.sum(axis=-1, keepdims=True),
                        "you subtracted the largest entry of the whole array; each row needs its own largest entry, "
                        "or a row far below the overall maximum turns into 0 / 0.",
                    )
                )
                if x.shape[0] == x.shape[1]:  # a flat max or sum broadcasts along the columns without an error
                    e_flat = np.exp(x - x.max(axis=-1))
                    e_rows = np.exp(x - x.max(axis=-1, keepdims=True))
                    for wrong in (e_flat / e_flat.sum(axis=-1, keepdims=True), e_rows / e_rows.sum(axis=-1), e_flat / e_flat.sum(axis=-1)):
                        mistakes.append((wrong, keepdims_hint))
        mistakes.append(
            (0.5 * (1 + np.tanh(x / 2)), "this is the logistic sigmoid of each entry; softmax divides by the sum over the row.")
        )
        hint = subtract_hint if np.abs(x[np.isfinite(x)]).max() > 100 else "exp() every entry, then divide by the row's sum."
        if np.isneginf(x).any():
            hint = "exp(-inf) is 0, so a -inf logit must get weight exactly 0. " + subtract_hint
        mistakes = [m for m in mistakes if not same_values(m[0], want)]
        # the vector case is exercise 7.1's book question, so it is never shown with its expected weights
        shown = label != "a vector [1, 0, 0.5]"
        cases.append(Case(label, (x,), want, tuple(mistakes), hint, exact_zero=np.isneginf(x), shown=shown))
    notation = Notation(("x",), {"x": "n_q x n_k (one row per query)"})
    return run_cases("softmax", fn, cases, verbose, notation)


@with_self_check_raises
def check_attention(fn: Callable[[np.ndarray, np.ndarray, np.ndarray], Any], verbose: bool = True, seed: int | None = None) -> CheckResult:
    """Check ``fn(Q, K, V)``: the output ``softmax(Q K^T / sqrt(d_k)) V`` of scaled dot-product attention.

    Examples
    --------
    >>> import attnlib
    >>> def my_attention(Q, K, V):
    ...     return attnlib.softmax(Q @ K.T / np.sqrt(K.shape[1])) @ V
    >>> check_attention(my_attention, verbose=False).passed
    True

    Exercise 4.3 gives ``attnlib.softmax``, but no other part of attnlib: the grader runs the answer cells
    with numpy alone, so the self-check says "not yet" to what would score 0 there.

    >>> def my_chunked(Q, K, V):
    ...     return attnlib.chunked_attention(Q, K, V, block_size=2)
    >>> check_attention(my_chunked, verbose=False).messages[0].split(":")[0]
    'my_attention uses attnlib.chunked_attention, which the grader does not have'
    """
    rng = check_rng()
    X = running_example()
    cases = []
    for label, Q, K, V in (
        ("the running example (Q = K = V = X)", X, X, X),
        ("2 queries, 4 keys, d_k = 3, d_v = 5", rng.normal(size=(2, 3)), rng.normal(size=(4, 3)), rng.normal(size=(4, 5))),
        ("large scores (entries of size 30)", 30 * rng.normal(size=(3, 4)), 30 * rng.normal(size=(3, 4)), rng.normal(size=(3, 2))),
        ("a single key and value", rng.normal(size=(2, 3)), rng.normal(size=(1, 3)), np.array([[1.0, -1.0]])),
        *own_case(seed, "4.3", ("Q", "K", "V")),
    ):
        r = attention(Q, K, V)
        mistakes = [
            (attention(Q, K, V, scale=False).output, "this is the output without the 1/sqrt(d_k) scaling."),
            (attention(Q, K, V, scale=float(K.shape[1])).output, "you divided by d_k; divide by its square root."),
            (
                attention(Q, K, V, scale=float(np.sqrt(K.shape[0]))).output,
                "you divided by the square root of the number of keys; d_k is the number of columns of K.",
            ),
            (r.weights, "these are the attention weights (n_q x n_k); the output multiplies them by V."),
            (column_softmax(Q @ K.T / np.sqrt(K.shape[1])) @ V, COLUMN_HINT),
        ]
        cases.append(
            Case(
                label,
                (Q, K, V),
                r.output,
                tuple(m for m in mistakes if not same_values(m[0], r.output)),
                "Go through the exercise's formula step by step: the scores, the divisor (d_k = number of columns of K), "
                "a softmax per row, then V. Large scores need a stable softmax.",
            )
        )
    return run_cases("attention", fn, cases, verbose, QKV_NOTATION)


# --- the registry ---

register(Exercise("4.1", "by-hand", weighted_average_by_hand, _well_posed_4_1, answer=lambda v: {"o_by_hand": rounded(v.weights @ v.V)}))
register(
    Exercise(
        "4.2",
        "implement",
        implement_draw("4.2", 42, _softmax_4_2),
        finite_inputs,
        function="my_softmax",
        calls=lambda v: [(v.logits,), (v.logits + v.shift,)],
        reference=softmax,
        own=(softmax,),
        check=check_softmax,
    )
)
register(
    Exercise(
        "4.3",
        "implement",
        implement_draw("4.3", 43, _attention_4_3),
        finite_inputs,
        function="my_attention",
        calls=lambda v: [(v.Q, v.K, v.V), (running_example(),) * 3],
        reference=lambda Q, K, V: attention(Q, K, V).output,
        own=(attention,),
        check=check_attention,
        given=("attnlib.softmax",),  # the statement allows it (the chapter's model answer uses it)
    )
)

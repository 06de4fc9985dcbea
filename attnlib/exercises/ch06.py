"""Chapter 6's exercises (one head): their variants, answers and self-checks.

The module follows the layout described in :mod:`attnlib.exercises`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from ..core import (
    attention,
    running_example,
    self_attention,
)
from .cases import (
    COLUMN_HINT,
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
    drawn,
    finite_inputs,
    implement_draw,
    int_matrix,
    is_grid,
    register,
    require,
    rounded,
)

__all__ = ["check_attention_head", "scaled_projection_prediction", "uniform_row_by_hand"]


def uniform_row_by_hand(seed: int | None = None) -> Variant:
    """Exercise 6.1: tokens ``a x1, a x2, a x3`` of the running example and an integer ``W_V``.

    With ``W_Q = W_K = I`` token 3 has the same score with every token, so its
    row of weights is uniform for every variant.

    Raises
    ------
    ValueError
        If ``seed`` is neither None (the book's own numbers) nor an integer by the seed rule (``True``, ``-1``, ``"3"``
        and ``2.5`` are refused); the message names it.
    """
    make = lambda rng: {"X": float(rng.integers(1, 4)) * running_example(), "W_V": int_matrix(rng)}  # noqa: E731
    return drawn(seed, "6.1", {"X": running_example(), "W_V": np.eye(2)}, make)


def _well_posed_6_1(v: Variant) -> None:
    A = attention(v.X, v.X, v.X).weights
    require(np.allclose(A[2], 1 / 3), v, "token 3's row must be uniform")
    require(is_grid(v.W_V, 1) and np.abs(v.W_V).sum() > 0, v, "W_V must be small integers, not all zero")


def scaled_projection_prediction(seed: int | None = None) -> Variant:
    """Exercise 6.3: the factor ``factor`` that multiplies every entry of ``W_Q``.

    The explorer's sliders stop at 3, so the factor is 2, 2.5 or 3 (on their 0.05 grid).

    Raises
    ------
    ValueError
        If ``seed`` is neither None (the book's own numbers) nor an integer by the seed rule (``True``, ``-1``, ``"3"``
        and ``2.5`` are refused); the message names it.
    """
    return drawn(seed, "6.3", {"factor": 3}, lambda rng: {"factor": float(rng.choice([2.0, 2.5, 3.0]))})


def _head_6_2(rng: np.random.Generator, s: tuple[int, ...]) -> dict[str, Any]:
    n, _, d, k, dv = s
    return {"X": rng.normal(size=(n, d)), "W_Q": rng.normal(size=(d, k)), "W_K": rng.normal(size=(d, k)), "W_V": rng.normal(size=(d, dv))}


# --- self-checks ---


@with_self_check_raises
def check_attention_head(
    fn: Callable[[np.ndarray, np.ndarray, np.ndarray, np.ndarray], Any], verbose: bool = True, seed: int | None = None
) -> CheckResult:
    """Check ``fn(X, W_Q, W_K, W_V)``: the output of one self-attention head.

    It should project ``Q = X W_Q``, ``K = X W_K``, ``V = X W_V`` and return
    ``softmax(Q K^T / sqrt(d_k)) V``, shape ``(n, d_v)``.

    Examples
    --------
    >>> import attnlib
    >>> def head(X, W_Q, W_K, W_V):
    ...     Q, K = X @ W_Q, X @ W_K
    ...     return attnlib.softmax(Q @ K.T / np.sqrt(K.shape[1])) @ (X @ W_V)
    >>> check_attention_head(head, verbose=False).passed
    True
    """
    rng = check_rng()
    X = running_example()
    I2 = np.eye(2)
    cases = []
    for label, Xc, WQ, WK, WV in (
        ("the running example with identity projections", X, I2, I2, I2),
        ("the running example with W_V = [[1, 0], [1, 1]]", X, I2, I2, np.array([[1.0, 0.0], [1.0, 1.0]])),
        (
            "5 tokens, d_model = 4, d_k = 3, d_v = 2",
            rng.normal(size=(5, 4)),
            rng.normal(size=(4, 3)),
            rng.normal(size=(4, 3)),
            rng.normal(size=(4, 2)),
        ),
        ("a single token", np.array([[0.3, -0.7]]), rng.normal(size=(2, 2)), rng.normal(size=(2, 2)), rng.normal(size=(2, 3))),
        *own_case(seed, "6.2", ("X", "W_Q", "W_K", "W_V")),
    ):
        head = self_attention(Xc, WQ, WK, WV)
        Q, K, V, want = head.Q, head.K, head.V, head.output
        mistakes = [
            (attention(Q, K, V, scale=False).output, "this is the output without the 1/sqrt(d_k) scaling."),
            (attention(Q, K, V).weights, "this looks like the attention weights; multiply them by V to get the output."),
            (attention(Xc, Xc, Xc).output, "this is attention on X itself; project X with W_Q, W_K and W_V first."),
            (attention(Q, K, Xc).output, "the weights are right but you mixed rows of X; mix the values V = X W_V."),
            (attention(Q, Q, V).output, "you used W_Q for the keys as well: the keys are K = X W_K."),
            (column_softmax(Q @ K.T / np.sqrt(K.shape[1])) @ V, COLUMN_HINT),
        ]
        if np.allclose(mistakes[2][0], mistakes[3][0]):
            # with W_Q = W_K = I (or one token) both give the same numbers, and only the second is true of both
            del mistakes[2]
        cases.append(
            Case(
                label,
                (Xc, WQ, WK, WV),
                want,
                tuple(m for m in mistakes if not same_values(m[0], want)),
                "Project, score, scale by sqrt(d_k), softmax each row, multiply by V.",
            )
        )
    notation = Notation(
        ("X", "W_Q", "W_K", "W_V"),
        {"X": "n x d_model", "W_Q": "d_model x d_k", "W_K": "d_model x d_k", "W_V": "d_model x d_v"},
        "Tokens are rows, so a projection is X W (n x d_model times d_model x d_k); the scores pair every query row "
        "with every key row, so K enters that product transposed; the weights (n x n) then multiply V (n x d_v).",
    )
    return run_cases("attention_head", fn, cases, verbose, notation)


# --- the registry ---

register(
    Exercise(
        "6.1",
        "by-hand",
        uniform_row_by_hand,
        _well_posed_6_1,
        answer=lambda v: {"o3_by_hand": rounded(self_attention(v.X, np.eye(2), np.eye(2), v.W_V).output[2])},
    )
)
register(
    Exercise(
        "6.2",
        "implement",
        implement_draw("6.2", 62, _head_6_2),
        finite_inputs,
        function="attention_head",
        calls=lambda v: [(v.X, v.W_Q, v.W_K, v.W_V)],
        reference=lambda X, W_Q, W_K, W_V: self_attention(X, W_Q, W_K, W_V).output,
        own=(attention, self_attention),
        check=check_attention_head,
        given=("attnlib.softmax",),  # the statement allows it (the chapter's model answer uses it)
    )
)
register(
    Exercise(
        "6.3",
        "predict",
        scaled_projection_prediction,
        lambda v: require(2 <= v.factor <= 3 and float(v.factor * 20).is_integer(), v, "the factor must lie on the sliders (2 to 3)"),
    )
)

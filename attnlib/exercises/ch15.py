"""Chapter 15's exercises (long sequences): their variants, answers and self-checks.

The module follows the layout described in :mod:`attnlib.exercises`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from .. import blocked, cost
from .._validate import as_flag, real_scalar
from ..core import (
    running_example,
    scaled_scores,
)
from .cases import (
    Case,
    CheckResult,
    Notation,
    own_case,
    run_cases,
    with_self_check_raises,
)
from .registry import (
    Exercise,
    Variant,
    answers,  # noqa: F401 (the doctests use it)
    drawn,
    implement_draw,
    register,
    require,
)

__all__ = ["blocked_memory_prediction", "check_memory_prediction", "check_two_block_normaliser", "layer_scores_by_hand"]


def layer_scores_by_hand(seed: int | None = None) -> Variant:
    """Exercise 15.1: the score matrices of one layer, ``heads`` heads of ``n x n`` numbers of ``dtype``.

    Raises
    ------
    ValueError
        If ``seed`` is neither None (the book's own numbers) nor an integer by the seed rule (``True``, ``-1``, ``"3"``
        and ``2.5`` are refused); the message names it.

    Examples
    --------
    >>> v = layer_scores_by_hand()
    >>> v.n, v.heads, v.dtype, answers(v)
    (16384, 32, 'bfloat16', {'layer_bytes': 17179869184, 'layer_gib': 16.0})
    """
    book = {"n": 16384, "heads": 32, "dtype": "bfloat16"}
    return drawn(
        seed,
        "15.1",
        book,
        lambda rng: {
            "n": int(2 ** rng.integers(11, 17)),
            "heads": int(rng.choice([8, 12, 16, 24, 32, 48, 64])),
            "dtype": str(rng.choice(["bfloat16", "float16", "float32"])),
        },
    )


def _answer_15_1(v: Variant) -> dict[str, Any]:
    layer = cost.score_matrix_bytes(v.n, dtype=v.dtype, heads=v.heads)
    return {"layer_bytes": layer, "layer_gib": layer / 2**30}


def _blocks_15_2(rng: np.random.Generator, s: tuple[int, ...]) -> dict[str, Any]:
    scores = 50 * rng.normal(size=s[0] + s[1])
    if rng.integers(2):
        scores[: s[0]] = -np.inf  # the first block masked entirely
    return {"s1": scores[: s[0]], "s2": scores[s[0] :]}


def _normaliser(s1: np.ndarray, s2: np.ndarray) -> np.ndarray:
    m, l, _, _ = blocked.online_softmax_step(-np.inf, 0.0, s1)
    m, l, _, _ = blocked.online_softmax_step(m, l, s2)
    return np.array([float(m), float(l)])


def blocked_memory_prediction(seed: int | None = None) -> Variant:
    """Exercise 15.3: ``n`` tokens of width ``d`` in float64 and a block size ``block`` for ``chunked_attention``.

    Raises
    ------
    ValueError
        If ``seed`` is neither None (the book's own numbers) nor an integer by the seed rule (``True``, ``-1``, ``"3"``
        and ``2.5`` are refused); the message names it.

    Examples
    --------
    >>> v = blocked_memory_prediction()
    >>> v.n, v.d, v.block, answers(v)
    (3000, 64, 100, {'predicted_bytes': 12528000})
    """
    book = {"n": 3000, "d": 64, "block": 100}
    return drawn(
        seed,
        "15.3",
        book,
        lambda rng: {
            "n": int(rng.choice([2000, 2500, 3000])),
            "d": int(rng.choice([32, 48, 64])),
            "block": int(rng.choice([50, 100, 150, 200])),
        },
    )


#: Exercise 15.3's one rule: a prediction is right within this fraction of the chapter's working-set model
#: (the self-check and the grader both apply it; the measured peak is printed beside it, not judged).
PREDICTION_TOLERANCE = 0.02


def _verdict_15_3(v: Variant, predicted: Any) -> str | None:
    """None if ``predicted`` lies within ``PREDICTION_TOLERANCE`` of the working-set model, else why not (one finite real number)."""
    model = cost.blocked_working_set_bytes(v.n, v.d, v.block, "float64", input_copies=True)
    given = real_scalar(predicted)
    if given is None or not np.isfinite(given):
        return "predicted_bytes is not one number: store the prediction as one number of bytes."
    if abs(given - model) <= PREDICTION_TOLERANCE * model:
        return None
    return (
        f"predicted_bytes is more than {PREDICTION_TOLERANCE:.0%} away from the working-set model: "
        "count the two blocks, the two running arrays, the two numbers per row and the three input copies again."
    )


def _judge_15_3(v: Variant, handed: dict[str, Any]) -> list[str]:
    """The grader's verdict: the self-check's rule (:func:`check_memory_prediction`)."""
    why = _verdict_15_3(v, handed.get("predicted_bytes"))
    return [why] if why else []


def check_memory_prediction(predicted_bytes: Any, seed: int | None = None, verbose: bool = True) -> CheckResult:
    """Check exercise 15.3's prediction: right when within ``PREDICTION_TOLERANCE`` (2 %) of the working-set model.

    The grader applies the same rule with the same message. The model's value is never shown.

    Raises
    ------
    ValueError
        If ``seed`` is neither None nor an integer by the seed rule, or ``verbose`` is not True or False; the
        message names it. Nothing about ``predicted_bytes`` raises: a value that is not one number is not right.

    Examples
    --------
    >>> check_memory_prediction(12_528_000, verbose=False).passed, check_memory_prediction(13_000_000, verbose=False).passed
    (True, False)
    >>> check_memory_prediction("12528000", verbose=False).messages
    ('predicted_bytes is not one number: store the prediction as one number of bytes.',)
    """
    verbose = as_flag("verbose", verbose)
    why = _verdict_15_3(blocked_memory_prediction(seed), predicted_bytes)
    result = CheckResult("15.3 (predicted_bytes)", 1, int(why is None), (why,) if why else ())
    if verbose:
        print(result.report())
    return result


# --- self-checks ---


def _two_block_mistakes(s1: np.ndarray, s2: np.ndarray) -> list[tuple[np.ndarray, str]]:
    """The (m, l) pairs that typical mistakes give, computed without warnings; cases where a mistake is NaN are left out."""
    with np.errstate(all="ignore"):
        m1, m2 = s1.max(), s2.max()
        m = max(m1, m2)
        l1 = np.exp(s1 - m1).sum()
        tail = np.exp(s2 - m).sum()
        candidates = [
            (
                np.array([m, l1 + tail]),
                "you added l1 without rescaling it: when the maximum grows from m1 to m, multiply l1 by exp(m1 - m).",
            ),
            (np.array([m, l1 * np.exp(m - m1) + tail]), "the rescaling factor is upside down: it is exp(m1 - m), never larger than 1."),
            (
                np.array([m, np.exp(np.concatenate([s1, s2])).sum()]),
                "l should be the sum of exp(s - m), relative to the maximum m, not of exp(s).",
            ),
            (np.array([m2, l1 + np.exp(s2 - m2).sum()]), "m must be the maximum over BOTH blocks, max(m1, m2)."),
        ]
    return [(v, hint) for v, hint in candidates if np.all(np.isfinite(v))]


@with_self_check_raises
def check_two_block_normaliser(fn: Callable[[np.ndarray, np.ndarray], Any], verbose: bool = True, seed: int | None = None) -> CheckResult:
    """Check ``fn(s1, s2)``: the online softmax over two blocks of scores, returning ``(m, l)``.

    ``m`` is the largest score of both blocks and ``l = sum_j exp(s_j - m)``
    over both, computed block by block: first ``m1`` and ``l1`` of block 1,
    then block 2 folded in with the rescaling factor ``exp(m1 - m)``. The
    weights are then ``exp(s - m) / l``. Cases include the running example,
    huge scores (where ``exp(s)`` overflows) and masked keys (``-inf``), also
    a first block that is masked entirely.

    Examples
    --------
    >>> def my_normaliser(s1, s2):
    ...     m1 = s1.max()
    ...     l1 = np.exp(s1 - m1).sum() if m1 > -np.inf else 0.0
    ...     m = max(m1, s2.max())
    ...     return m, l1 * np.exp(m1 - m) + np.exp(s2 - m).sum()
    >>> check_two_block_normaliser(my_normaliser, verbose=False).passed
    True
    >>> def no_rescaling(s1, s2):
    ...     m = max(s1.max(), s2.max())
    ...     return m, np.exp(s1 - s1.max()).sum() + np.exp(s2 - m).sum()
    >>> check_two_block_normaliser(no_rescaling, verbose=False).passed
    False
    """
    from ..blocked import online_softmax_step

    S = scaled_scores(running_example(), running_example())
    cases = []
    for label, s1, s2 in (
        ("the running example, query x2, blocks [x1] and [x2, x3]", S[1, :1], S[1, 1:]),
        ("the largest score in the first block", np.array([2.0, 1.0]), np.array([0.5])),
        ("huge scores [1000, 999] and [1001]", np.array([1000.0, 999.0]), np.array([1001.0])),
        ("very negative scores [-1000] and [-1002, -999]", np.array([-1000.0]), np.array([-1002.0, -999.0])),
        ("a masked key (-inf) in the second block", np.array([0.5]), np.array([-np.inf, 1.5])),
        ("a first block that is masked entirely", np.array([-np.inf, -np.inf]), np.array([0.3, -0.2])),
        *own_case(seed, "15.2", ("s1", "s2")),
    ):
        m, l, _, _ = online_softmax_step(-np.inf, 0.0, s1)
        m, l, _, _ = online_softmax_step(m, l, s2)
        want = np.array([float(m), float(l)])
        hint = "Return the pair (m, l). Work out m1 and l1 of block 1 alone, then fold block 2 in with the chapter's update equation."
        if np.isneginf(s1).all():
            hint += " A block that is masked entirely has m1 = -inf and l1 = 0: avoid exp(-inf - (-inf)), which is NaN."
        mistakes = tuple((w, h) for w, h in _two_block_mistakes(s1, s2) if not np.allclose(w, want))
        cases.append(Case(label, (s1, s2), want, mistakes, hint, shown=not label.startswith("your own")))
    return run_cases("two_block_normaliser", fn, cases, verbose, Notation(("s1", "s2")))


# --- the registry ---

register(
    Exercise(
        "15.1",
        "by-hand",
        layer_scores_by_hand,
        lambda v: require(v.n & (v.n - 1) == 0 and v.heads > 0, v, "n must be a power of two"),
        answer=_answer_15_1,
    )
)
register(
    Exercise(
        "15.2",
        "implement",
        implement_draw("15.2", 152, _blocks_15_2),
        lambda v: None,
        function="two_block_normaliser",
        calls=lambda v: [(v.s1, v.s2)],
        reference=_normaliser,
        own=blocked.ONLINE_STEP_CODE,
        check=check_two_block_normaliser,
    )
)
register(
    Exercise(
        "15.3",
        "measured",
        blocked_memory_prediction,
        lambda v: require(v.n % v.block == 0, v, "the blocks must tile n"),
        answer=lambda v: {"predicted_bytes": cost.blocked_working_set_bytes(v.n, v.d, v.block, "float64", input_copies=True)},
        judge=_judge_15_3,
    )
)

"""Chapter 17's exercises (induction heads): their variants, answers and self-checks.

17.1 (by hand) reads a prefix-matching score off three rows of attention weights; 17.2
(implement) writes the previous-token score of one sequence's attention map; 17.4 (by hand, read
off the live training explorer) reports the held-out loss of the reader's own first training steps. The self-check
``check_previous_token_score`` is re-exported by :mod:`attnlib.checks`, the draw function by
:mod:`attnlib.variants`.
"""

from __future__ import annotations

import functools
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
from .results import TOLERANCE

__all__ = ["check_previous_token_score", "first_steps_by_hand", "prefix_score_by_hand"]

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


def first_steps_by_hand(seed: int | None = None) -> Variant:
    """Exercise 17.4: the reader's own first ``steps`` steps in the live training explorer, at two learning rates.

    The reader keeps the explorer's settings (``attnlib.explorers.live_training_explorer()``: seed 0, 2 layers,
    1 head per layer, width 32) but for the learning rate, and presses *one step* ``steps`` times, once with the
    smallest learning rate (0.002) and once, after the reset that a new rate makes, with ``lr``. The answers are the
    held-out loss of the repeated halves that the explorer shows then: ``loss_low_lr`` and ``loss_your_lr``.

    The question asks which of the two rates brought the loss lower and whether either ended above the
    untrained model's: no rate is the right one in general (after 10 steps 0.005 to 0.02 end below 0.002 and
    0.03 above the untrained model), so the draw requires both comparisons to be clear, the two losses and each
    loss and the untrained one more than four tolerances apart.

    The design: the answer comes from the reader's own run, on the static page (no kernel) or in JupyterLab.
    It is judged as every by-hand answer, within the tolerance of a number typed to four decimals
    (5e-4): the explorer shows four, and its training equals attnlib's to a relative 1e-9 (the golden tests), so
    a reader who types what the page shows is right. A reading of the first halves, of the untrained model
    or of the other learning rate is not: the draw requires these to lie more than four tolerances away.
    A student's variant is one of the 5 x 6 pairs of a rate above 0.002 and 5 to 10 steps. The grader
    recomputes the two short runs with attnlib (``attnlib.explorers.kinds.live_training.live_views`` on the
    page's 1200-step schedule): at most 2 x 10 steps of the width-32 model, a fraction of a second of CPU. The
    runs are kept within one process (a draw's check and its answer share them; a test that draws 200 seeds
    makes each of the 36 runs once), never across processes.

    Raises
    ------
    ValueError
        If ``seed`` is neither None (the book's own numbers) nor an integer by the seed rule (``True``, ``-1``, ``"3"``
        and ``2.5`` are refused); the message names it.

    Examples
    --------
    >>> v = first_steps_by_hand()
    >>> v.lr, v.steps
    (0.03, 10)
    """
    book = {"lr": 0.03, "steps": 10}
    return drawn(
        seed,
        "17.4",
        book,
        lambda rng: {"lr": float(rng.choice(_live().LR_CHOICES[1:])), "steps": int(rng.integers(STEPS[0], STEPS[1] + 1))},
    )


#: Exercise 17.4's learning rate to compare with (the explorer's smallest) and its range of presses.
LOW_LR = 0.002
STEPS = (5, 10)


def _live() -> Any:
    """The live training explorer's module, imported only when 17.4 is drawn or judged.

    It loads the explorers (anywidget), which ``import attnlib`` must not: the exercises' registry is
    imported with attnlib. Its smallest rate is LOW_LR (tests/explorers/test_live_training_schedule.py).
    """
    from ..explorers.kinds import live_training

    return live_training


@functools.cache  # within one process only: at most 5 x 6 + 6 short runs
def _page_run(lr: float, steps: int) -> dict[str, Any]:
    """The explorer's views (its default settings but ``lr``) after ``steps`` steps of its own 1200-step schedule."""
    return _live().live_views({"lr": lr, "n_layers": 2, "n_heads": 1, "d_model": 32, "seed": 0}, steps, schedule=induction.BOOK["n_steps"])


def _answer_17_4(v: Variant) -> dict[str, Any]:
    return {"loss_low_lr": _page_run(LOW_LR, v.steps)["second"], "loss_your_lr": _page_run(v.lr, v.steps)["second"]}


def _well_posed_17_4(v: Variant) -> None:
    require(v.lr in _live().LR_CHOICES[1:], v, f"lr must be one of the explorer's rates above {LOW_LR}")
    require(isinstance(v.steps, int) and STEPS[0] <= v.steps <= STEPS[1], v, f"steps must be {STEPS[0]} to {STEPS[1]} presses")
    low, yours = _page_run(LOW_LR, v.steps), _page_run(v.lr, v.steps)
    untrained = _live().live_views({"lr": v.lr, "n_layers": 2, "n_heads": 1, "d_model": 32, "seed": 0})["second"]
    # the question: which of the two rates brought the loss lower, and is either above the untrained model's?
    # Both answers must be clear to a reader who compares numbers typed to four decimals.
    margin = 4 * TOLERANCE
    require(abs(yours["second"] - low["second"]) > margin, v, f"the two rates' losses differ by at most {margin}")
    for loss in (low["second"], yours["second"]):
        require(abs(loss - untrained) > margin, v, f"a loss lies within {margin} of the untrained model's")
    # the readings a reader could mistake for an answer, each farther from it than a typed number's tolerance
    for answer, mistaken in ((yours, (untrained, low["second"], yours["first"])), (low, (untrained, low["first"]))):
        require(min(abs(m - answer["second"]) for m in mistaken) > margin, v, "a mistaken reading lies within the tolerance")


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
register(Exercise("17.4", "by-hand", first_steps_by_hand, _well_posed_17_4, answer=_answer_17_4))

"""Chapter 16's exercises (the Transformer block): their variants, answers and self-checks.

The module follows the layout described in :mod:`attnlib.exercises`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from .. import transformer
from .cases import Case, CheckResult, Notation, own_case, run_cases, with_self_check_raises
from .registry import (
    Exercise,
    Variant,
    answers,  # noqa: F401 (the doctests use it)
    drawn,
    finite_inputs,
    implement_draw,
    register,
    require,
)

__all__ = ["block_parameters_by_hand", "check_layer_norm"]


def block_parameters_by_hand(seed: int | None = None) -> Variant:
    """Exercise 16.1: a block of width ``d_model`` with ``n_heads`` heads and an MLP of width ``d_ff``.

    The book's block is BERT-base's: ``d_model = 768``, 12 heads, ``d_ff = 3072``.

    Raises
    ------
    ValueError
        If ``seed`` is neither None (the book's own numbers) nor an integer by the seed rule (``True``, ``-1``, ``"3"``
        and ``2.5`` are refused); the message names it.

    Examples
    --------
    >>> v = block_parameters_by_hand()
    >>> v.d_model, v.n_heads, v.d_ff, answers(v)
    (768, 12, 3072, {'block_params': 7087872, 'mlp_params': 4722432})
    """
    book = {"d_model": 768, "n_heads": 12, "d_ff": 3072}

    def make(rng: np.random.Generator) -> dict[str, Any]:
        d = int(rng.choice([64, 128, 256, 384, 512, 1024]))
        return {"d_model": d, "n_heads": int(rng.choice([2, 4, 8, 16])), "d_ff": int(rng.choice([2, 3, 4])) * d}

    return drawn(seed, "16.1", book, make)


def _well_posed_16_1(v: Variant) -> None:
    require(v.d_model % v.n_heads == 0, v, "n_heads must divide d_model")
    require(v.d_ff % v.d_model == 0, v, "d_ff must be a multiple of d_model")


def _answer_16_1(v: Variant) -> dict[str, Any]:
    pieces = transformer.encoder_layer_cost(1, v.d_model, v.n_heads, v.d_ff)
    return {"block_params": sum(p["params"] for p in pieces.values()), "mlp_params": pieces["MLP"]["params"]}


def _layer_norm_16_2(rng: np.random.Generator, s: tuple[int, ...]) -> dict[str, Any]:
    n, d = s[0], s[2]
    X = rng.normal(loc=float(rng.normal(scale=3.0)), scale=float(rng.uniform(0.5, 4.0)), size=(n, d))
    return {"X": X, "gamma": rng.normal(loc=1.0, scale=0.5, size=d), "beta": rng.normal(scale=0.5, size=d), "eps": 1e-5}


# --- self-checks ---


def _layer_norm_mistakes(X: np.ndarray, gamma: np.ndarray, beta: np.ndarray, eps: float) -> list[tuple[np.ndarray, str]]:
    """What typical mistakes return, computed without warnings; mistakes that give NaN are left out."""
    with np.errstate(all="ignore"):
        mu = X.mean(axis=-1, keepdims=True)
        centred = X - mu
        var = X.var(axis=-1, keepdims=True)
        col = (X - X.mean(axis=0)) / np.sqrt(X.var(axis=0) + eps)
        candidates = [
            (
                gamma * centred / np.sqrt(X.var(axis=-1, ddof=1, keepdims=True) + eps) + beta,
                "divide the squared deviations by d_model (the number of features), not d_model - 1, as PyTorch does.",
            ),
            (gamma * centred / (np.sqrt(var) + eps) + beta, "eps belongs inside the square root: sqrt(var + eps)."),
            (gamma * col + beta, "normalise each ROW (one token, over its features, axis=-1), not each column."),
            (centred / np.sqrt(var + eps), "you normalised but left out the gain gamma and the bias beta."),
            (gamma * centred / (var + eps) + beta, "divide by the standard deviation, the square root of var + eps, not by the variance."),
            (gamma * centred / np.sqrt(var) + beta, "eps is missing: divide by sqrt(var + eps), which also keeps a constant row finite."),
        ]
    return [(w, h) for w, h in candidates if np.all(np.isfinite(w))]


@with_self_check_raises
def check_layer_norm(fn: Callable[..., Any], verbose: bool = True, seed: int | None = None) -> CheckResult:
    """Check ``fn(X, gamma, beta, eps)``: layer normalisation of every row of ``X``.

    Each row is centred on its mean and divided by ``sqrt(var + eps)``, its
    (biased) variance taken over the row's ``d_model`` features, then
    multiplied by ``gamma`` and shifted by ``beta`` feature by feature. Cases
    include a constant row (variance 0), a row of huge numbers, a single
    token and an ``eps`` large enough to matter.

    Examples
    --------
    >>> def my_layer_norm(X, gamma, beta, eps):
    ...     X = np.asarray(X, dtype=float)
    ...     mu = X.mean(axis=-1, keepdims=True)
    ...     var = ((X - mu) ** 2).mean(axis=-1, keepdims=True)
    ...     return gamma * (X - mu) / np.sqrt(var + eps) + beta
    >>> check_layer_norm(my_layer_norm, verbose=False).passed
    True
    >>> def columns(X, gamma, beta, eps):
    ...     X = np.asarray(X, dtype=float)
    ...     return gamma * (X - X.mean(axis=0)) / np.sqrt(X.var(axis=0) + eps) + beta
    >>> check_layer_norm(columns, verbose=False).passed
    False
    """
    ones, zeros = np.ones(4), np.zeros(4)
    cases = []
    for label, X, gamma, beta, eps in (
        (
            "three tokens, d_model = 4, gain 1 and bias 0",
            np.array([[1.0, 2.0, 3.0, 4.0], [0.0, 0.0, 1.0, 1.0], [2.0, -2.0, 0.0, 0.0]]),
            ones,
            zeros,
            0.01,
        ),
        (
            "a gain and a bias per feature",
            np.array([[1.0, 2.0, 3.0, 4.0], [4.0, 0.0, 0.0, 0.0]]),
            np.array([1.0, 2.0, 0.5, -1.0]),
            np.array([0.0, 1.0, 0.0, -1.0]),
            0.01,
        ),
        (
            "a constant row (its variance is 0)",
            np.array([[3.0, 3.0, 3.0, 3.0], [1.0, 0.0, 0.0, 0.0]]),
            ones,
            np.array([0.5, 0.0, 0.0, 0.0]),
            0.01,
        ),
        ("a single token of huge numbers", np.array([[1e8, 1e8 + 2.0, 1e8 + 4.0, 1e8 + 6.0]]), ones, zeros, 0.01),
        ("eps = 1, large enough to matter", np.array([[1.0, 3.0, 1.0, 3.0]]), ones, zeros, 1.0),
        *own_case(seed, "16.2", ("X", "gamma", "beta", "eps")),
    ):
        want = transformer.layer_norm(X, gamma, beta, eps)
        mistakes = tuple(
            (w, h) for w, h in _layer_norm_mistakes(X, gamma, beta, eps) if w.shape == want.shape and np.abs(w - want).max() > 1e-9
        )
        hint = (
            "Per row: subtract the row's mean, divide by sqrt(variance + eps) with the variance over the row's features, "
            "then gamma * (...) + beta."
        )
        cases.append(Case(label, (X, gamma, beta, eps), want, mistakes, hint, shown=not label.startswith("your own")))
    notation = Notation(("X", "gamma", "beta", "eps"), {"X": "n x d_model (one row per token)", "gamma": "d_model", "beta": "d_model"})
    return run_cases("my_layer_norm", fn, cases, verbose, notation)


# --- the registry ---

register(Exercise("16.1", "by-hand", block_parameters_by_hand, _well_posed_16_1, answer=_answer_16_1))
register(
    Exercise(
        "16.2",
        "implement",
        implement_draw("16.2", 162, _layer_norm_16_2),
        finite_inputs,
        function="my_layer_norm",
        calls=lambda v: [(v.X, v.gamma, v.beta, v.eps), (v.X[:1], v.gamma, v.beta, 1.0)],
        reference=transformer.layer_norm,
        own=transformer.LAYER_NORM_CODE,
        check=check_layer_norm,
    )
)

"""Per-student variants of the exercises: every exercise's inputs drawn from a seed.

Each by-hand, implement and predict exercise has one function here that
returns its inputs (tokens, projections, ``d_k``, masks, positions) as a
:class:`Variant`. ``seed=None`` gives the book's own numbers, so the web book
and self-study read as before; an integer seed gives a student's own numbers.
Nothing here stores an answer: :func:`answers` computes the expected answers
of a by-hand exercise with attnlib from the same inputs, and
:func:`check_well_posed` checks that a variant is fair (no ties where a
maximum is asked, no all-masked rows, numbers a student can handle by hand).

The seed of a student comes from :func:`student_seed`, an HMAC-SHA256 of the
student id and the assignment name under the course's key, so the grader
derives it again from the id it grades instead of trusting the notebook.

Examples
--------
>>> v = uniform_row_by_hand(None)
>>> v.X.tolist(), v.W_V.tolist()
([[1.0, 0.0], [0.0, 1.0], [0.5, 0.5]], [[1.0, 0.0], [0.0, 1.0]])
>>> answers(v)
{'o3_by_hand': [0.5, 0.5]}
>>> mine = uniform_row_by_hand(student_seed("s001", "ch06", key="course key"))
>>> check_well_posed(mine)
>>> mine.seed == student_seed("s001", "ch06", key="course key")
True
"""

from __future__ import annotations

import getpass
import hashlib
import hmac
import math
import os
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from . import cost, heads, paths, retrieval
from ._validate import as_seed
from .core import attention, attention_parameter_count, causal_mask, running_example, scale_divisor, self_attention, softmax
from .positional import sinusoidal_encoding

__all__ = [
    "Variant",
    "EXERCISES",
    "student_seed",
    "current_user",
    "variant",
    "answers",
    "agrees",
    "check_well_posed",
    "dot_products_by_hand",
    "bilinear_by_hand",
    "values_by_hand",
    "weighted_average_by_hand",
    "variance_by_hand",
    "uniform_row_by_hand",
    "unscaled_row_by_hand",
    "head_count_by_hand",
    "masked_row_by_hand",
    "path_lengths_by_hand",
    "position_pair_by_hand",
    "retrieval_by_hand",
    "score_memory_by_hand",
    "memory_budget_by_hand",
    "scaled_projection_prediction",
    "large_head_prediction",
    "implement_inputs",
]

#: Decimals a by-hand answer is typed with, and the tolerance that allows for it.
DECIMALS = 4
TOLERANCE = 5e-4


@dataclass(frozen=True)
class Variant:
    """The inputs of one exercise for one seed.

    Attributes
    ----------
    exercise:
        The exercise number, for example ``"6.1"``.
    seed:
        The seed it was drawn from (``None``: the book's own numbers).
    inputs:
        Name -> value (numpy arrays, ints, floats). Also readable as
        attributes: ``v.X`` is ``v.inputs["X"]``.
    """

    exercise: str
    seed: int | None
    inputs: dict[str, Any]

    def __getattr__(self, name: str) -> Any:
        inputs = object.__getattribute__(self, "inputs")
        if name in inputs:
            return inputs[name]
        raise AttributeError(f"exercise {self.exercise} has no input {name!r}; it has {sorted(inputs)}")


# --- seeds ------------------------------------------------------------------------------------


def student_seed(student_id: str, assignment: str, key: str) -> int:
    """The seed of one student for one assignment: HMAC-SHA256 under the course's key.

    The same three strings always give the same seed in ``[0, 2**31)``; a
    different key (another course, another term) gives other numbers.

    Examples
    --------
    >>> student_seed("s001", "ch06", key="k") == student_seed("s001", "ch06", key="k")
    True
    >>> student_seed("s001", "ch06", key="k") != student_seed("s002", "ch06", key="k")
    True
    >>> student_seed("", "ch06", key="k")
    Traceback (most recent call last):
    ...
    ValueError: student_id must be a non-empty string, got ''
    """
    for name, value in (("student_id", student_id), ("assignment", assignment), ("key", key)):
        if not isinstance(value, str) or not value:
            raise ValueError(f"{name} must be a non-empty string, got {value!r}")
    digest = hmac.new(key.encode(), f"{assignment}\x00{student_id}".encode(), hashlib.sha256).digest()
    return int.from_bytes(digest[:4], "big") & 0x7FFFFFFF


def current_user() -> str:
    """The logged-in user's name, the way nbgrader's exchange files a submission under it.

    The system's user name, except in JupyterHub's standard containers, where
    everyone is ``jovyan`` and the hub's ``JUPYTERHUB_USER`` names the student.
    """
    name = getpass.getuser()
    return os.environ.get("JUPYTERHUB_USER", name) if name == "jovyan" else name


def _rng(seed: int | None, exercise: str, book_seed: int = 0) -> np.random.Generator:
    """A generator for one exercise; exercises of one seed get independent streams."""
    if seed is None:
        return np.random.default_rng(book_seed)
    major, minor = (int(p) for p in exercise.split("."))
    return np.random.default_rng([as_seed("seed", seed), major, minor])


def _draw(seed: int | None, exercise: str, book: dict[str, Any], make: Callable[[np.random.Generator], dict[str, Any]]) -> Variant:
    """The book's inputs for ``seed=None``, else the first well-posed draw of ``make``."""
    if seed is None:
        out = Variant(exercise, None, book)
        check_well_posed(out)
        return out
    rng = _rng(seed, exercise)
    for _ in range(1000):
        out = Variant(exercise, as_seed("seed", seed), make(rng))
        try:
            check_well_posed(out)
        except ValueError:
            continue
        return out
    raise RuntimeError(f"no well-posed variant of exercise {exercise} for seed {seed}")  # pragma: no cover


HALVES = np.arange(-2, 5) / 2  # -1, -0.5, 0, ..., 2: entries of by-hand tokens
SMALL_INTS = np.arange(-1, 3)  # -1, 0, 1, 2: entries of by-hand projections


def _tokens(rng: np.random.Generator) -> np.ndarray:
    return rng.choice(HALVES, size=(3, 2))


def _int_matrix(rng: np.random.Generator, shape: tuple[int, int] = (2, 2)) -> np.ndarray:
    return rng.choice(SMALL_INTS, size=shape).astype(float)


# --- by-hand exercises ------------------------------------------------------------------------


def dot_products_by_hand(seed: int | None = None) -> Variant:
    """Exercise 1.1: three tokens ``X`` (entries are halves); dot products with token 3 and its length.

    Examples
    --------
    >>> answers(dot_products_by_hand())
    {'x1_dot_x3': 0.5, 'x2_dot_x3': 0.5, 'x3_dot_x3': 0.5, 'length_x3': 0.7071}
    """
    return _draw(seed, "1.1", {"X": running_example()}, lambda rng: {"X": _tokens(rng)})


def bilinear_by_hand(seed: int | None = None) -> Variant:
    """Exercise 2.1: the running example's tokens with small integer ``W_Q`` and ``W_K``.

    Examples
    --------
    >>> answers(bilinear_by_hand())
    {'e_13': 1.0, 'e_31': 2.0}
    """
    book = {"X": running_example(), "W_Q": np.array([[1.0, 0.0], [1.0, 1.0]]), "W_K": np.array([[2.0, 0.0], [0.0, 1.0]])}
    return _draw(seed, "2.1", book, lambda rng: {"X": running_example(), "W_Q": _int_matrix(rng), "W_K": _int_matrix(rng)})


def values_by_hand(seed: int | None = None) -> Variant:
    """Exercise 3.1: a small integer ``W_V`` for the running example's tokens.

    Examples
    --------
    >>> answers(values_by_hand())
    {'V_by_hand': [[2.0, 0.0], [1.0, -1.0], [1.5, -0.5]]}
    """
    book = {"X": running_example(), "W_V": np.array([[2.0, 0.0], [1.0, -1.0]])}
    return _draw(seed, "3.1", book, lambda rng: {"X": running_example(), "W_V": rng.choice(np.arange(-2, 3), size=(2, 2)).astype(float)})


QUARTER_WEIGHTS = np.array(
    [[0.5, 0.25, 0.25], [0.25, 0.5, 0.25], [0.25, 0.25, 0.5], [0.75, 0.25, 0.0], [0.0, 0.25, 0.75], [0.25, 0.0, 0.75]]
)


def weighted_average_by_hand(seed: int | None = None) -> Variant:
    """Exercise 4.1: one row of weights (quarters) and three small integer value rows ``V``.

    Examples
    --------
    >>> answers(weighted_average_by_hand())
    {'o_by_hand': [0.625, 0.375]}
    """
    book = {"weights": np.array([0.5, 0.25, 0.25]), "V": running_example()}
    return _draw(
        seed,
        "4.1",
        book,
        lambda rng: {"weights": QUARTER_WEIGHTS[rng.integers(len(QUARTER_WEIGHTS))].copy(), "V": _int_matrix(rng, (3, 2))},
    )


def variance_by_hand(seed: int | None = None) -> Variant:
    """Exercise 5.1: a head size ``d_k`` that is a perfect square, so its root is a whole number.

    Examples
    --------
    >>> answers(variance_by_hand())
    {'var_raw': 64.0, 'std_raw': 8.0, 'var_scaled': 1.0}
    """
    return _draw(seed, "5.1", {"d_k": 64}, lambda rng: {"d_k": int(rng.choice([4, 9, 16, 25, 36, 49, 64, 81, 100, 144, 256]))})


def uniform_row_by_hand(seed: int | None = None) -> Variant:
    """Exercise 6.1: tokens ``a x1, a x2, a x3`` of the running example and an integer ``W_V``.

    With ``W_Q = W_K = I`` token 3 has the same score with every token, so its
    row of weights is uniform for every variant.
    """
    make = lambda rng: {"X": float(rng.integers(1, 4)) * running_example(), "W_V": _int_matrix(rng)}  # noqa: E731
    return _draw(seed, "6.1", {"X": running_example(), "W_V": np.eye(2)}, make)


def unscaled_row_by_hand(seed: int | None = None) -> Variant:
    """Exercise 7.1: tokens ``X`` (halves); token 1's unscaled scores ``X[0] X^T`` go through a softmax.

    Examples
    --------
    >>> v = unscaled_row_by_hand()
    >>> v.scores.tolist(), answers(v)
    ([1.0, 0.0, 0.5], {'unscaled_row': [0.5065, 0.1863, 0.3072]})
    """
    def with_scores(X: np.ndarray) -> dict[str, Any]:
        return {"X": X, "scores": X @ X[0]}

    return _draw(seed, "7.1", with_scores(running_example()), lambda rng: with_scores(_tokens(rng)))


def head_count_by_hand(seed: int | None = None) -> Variant:
    """Exercise 8.1: a model width ``d_model`` and a head count ``n_heads`` that divides it.

    Examples
    --------
    >>> answers(head_count_by_hand())
    {'d_head': 64, 'n_params': 2359296}
    """
    def make(rng: np.random.Generator) -> dict[str, Any]:
        h, d = int(rng.choice([4, 6, 8, 12, 16])), int(rng.choice([32, 48, 64, 96, 128]))
        return {"d_model": h * d, "n_heads": h}

    return _draw(seed, "8.1", {"d_model": 768, "n_heads": 12}, make)


def _padding_mask(n: int, padded: int) -> np.ndarray:
    allowed = np.ones((n, n), dtype=bool)
    allowed[:, padded] = False
    return allowed


def masked_row_by_hand(seed: int | None = None) -> Variant:
    """Exercise 9.1: tokens ``X``, one query token and one padded key token (0-based indices).

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
        return make(_tokens(rng), query, padded)

    return _draw(seed, "9.1", make(running_example(), 0, 1), draw)


def path_lengths_by_hand(seed: int | None = None) -> Variant:
    """Exercise 10.1: a sentence of ``n`` tokens and two positions ``source < target`` (1-based).

    Examples
    --------
    >>> answers(path_lengths_by_hand())
    {'rnn_steps': 49, 'attention_steps': 1}
    """
    def make(rng: np.random.Generator) -> dict[str, Any]:
        n = int(rng.integers(20, 201))
        source, target = sorted(int(p) for p in rng.choice(np.arange(1, n + 1), size=2, replace=False))
        return {"n": n, "source": source, "target": target}

    return _draw(seed, "10.1", {"n": 50, "source": 1, "target": 50}, make)


def position_pair_by_hand(seed: int | None = None) -> Variant:
    """Exercise 11.1: a position ``t`` whose first pair ``(sin t, cos t)`` is asked for.

    Examples
    --------
    >>> answers(position_pair_by_hand())
    {'pe3_first_pair': [0.1411, -0.99]}
    """
    return _draw(seed, "11.1", {"t": 3}, lambda rng: {"t": int(rng.integers(1, 10))})


def retrieval_by_hand(seed: int | None = None) -> Variant:
    """Exercise 12.1: a query's scores over two stored items and the items' values.

    Examples
    --------
    >>> answers(retrieval_by_hand())
    {'weights_by_hand': [0.8808, 0.1192], 'output_by_hand': [0.8808, 0.1192]}
    """
    def make(rng: np.random.Generator) -> dict[str, Any]:
        scores = rng.choice(np.arange(-1, 4), size=2, replace=False).astype(float)
        return {"scores": scores, "values": _int_matrix(rng)}

    return _draw(seed, "12.1", {"scores": np.array([2.0, 0.0]), "values": np.eye(2)}, make)


def score_memory_by_hand(seed: int | None = None) -> Variant:
    """Exercise 13.1: a sequence length ``n`` (a power of two) for one float32 score matrix.

    Examples
    --------
    >>> answers(score_memory_by_hand())
    {'score_bytes': 16777216, 'score_mib': 16.0}
    """
    return _draw(seed, "13.1", {"n": 2048}, lambda rng: {"n": int(2 ** rng.integers(9, 15))})


def memory_budget_by_hand(seed: int | None = None) -> Variant:
    """Exercise 13.2: a memory budget of ``2**budget_log2`` bytes for one float32 score matrix.

    Examples
    --------
    >>> answers(memory_budget_by_hand())
    {'n_for_budget': 16384}
    """
    return _draw(seed, "13.2", {"budget_log2": 30}, lambda rng: {"budget_log2": int(rng.choice([24, 26, 28, 30, 32, 34]))})


# --- predict exercises (graded by hand; only the numbers in the question vary) -----------------


def scaled_projection_prediction(seed: int | None = None) -> Variant:
    """Exercise 6.3: the factor ``factor`` that multiplies every entry of ``W_Q``.

    The explorer's sliders stop at 3, so the factor is 2, 2.5 or 3 (on their 0.05 grid).
    """
    return _draw(seed, "6.3", {"factor": 3}, lambda rng: {"factor": float(rng.choice([2.0, 2.5, 3.0]))})


def large_head_prediction(seed: int | None = None) -> Variant:
    """Exercise 7.2: the large head size ``d_k`` whose unscaled rows are to be predicted."""
    return _draw(seed, "7.2", {"d_k": 128}, lambda rng: {"d_k": int(rng.choice([64, 128, 256, 512]))})


# --- implement exercises: the inputs the grader tries your function on --------------------------

#: Implement exercise -> (the book's generator seed, shapes drawn from the generator).
_IMPLEMENT_BOOK_SEEDS = {"1.2": 1, "2.2": 22, "4.2": 42, "4.3": 43, "5.2": 52, "6.2": 62, "8.2": 82, "9.2": 92, "9.3": 93, "11.2": 112}


def implement_inputs(exercise: str, seed: int | None = None) -> Variant:
    """The arrays an implement exercise's grader tries the student's function on.

    ``seed=None`` gives fixed book inputs; a seed gives a student's own sizes
    and entries (normal numbers, so no two entries tie).

    Examples
    --------
    >>> v = implement_inputs("6.2", seed=7)
    >>> v.X.shape[1] == v.W_Q.shape[0] == v.W_V.shape[0], v.W_Q.shape == v.W_K.shape
    (True, True)
    """
    if exercise not in _IMPLEMENT_BOOK_SEEDS:
        raise ValueError(f"exercise must be one of {sorted(_IMPLEMENT_BOOK_SEEDS)}, got {exercise!r}")
    rng = np.random.default_rng(_IMPLEMENT_BOOK_SEEDS[exercise]) if seed is None else _rng(seed, exercise)
    n, m, d, k, v = (int(x) for x in rng.integers(2, 9, size=5))
    normal = rng.normal
    inputs: dict[str, Any]
    if exercise == "1.2":
        inputs = {"X": normal(size=(n, d))}
    elif exercise == "2.2":
        inputs = {"X": normal(size=(n, d)), "W_Q": normal(size=(d, k)), "W_K": normal(size=(d, k))}
    elif exercise == "4.2":
        inputs = {"logits": 50 * normal(size=(n, m)), "shift": float(rng.integers(-9, 10))}
    elif exercise == "4.3":
        inputs = {"Q": normal(size=(n, d)), "K": normal(size=(m, d)), "V": normal(size=(m, v))}
    elif exercise == "5.2":
        inputs = {"Q": normal(size=(n, 2 * d)), "K": normal(size=(m, 2 * d))}
    elif exercise == "6.2":
        inputs = {"X": normal(size=(n, d)), "W_Q": normal(size=(d, k)), "W_K": normal(size=(d, k)), "W_V": normal(size=(d, v))}
    elif exercise == "8.2":
        n_heads = int(rng.choice([1, 2, 3, 4, 6]))
        inputs = {"M": normal(size=(n, n_heads * k)), "n_heads": n_heads}
    elif exercise == "9.2":
        inputs = {"sizes": tuple(sorted({n, m, 1 + d + k}))}
    elif exercise == "9.3":
        inputs = {"scores": 4 * normal(size=(n + 1, n + 1)), "allowed": causal_mask(n + 1)}
    else:  # "11.2"
        inputs = {"n_positions": int(rng.integers(10, 129)), "d_model": 2 * int(rng.integers(2, 33))}
    out = Variant(exercise, None if seed is None else as_seed("seed", seed), inputs)
    check_well_posed(out)
    return out


# --- the registry: exercise -> how to draw it, how to answer it ---------------------------------


@dataclass(frozen=True)
class Exercise:
    """One exercise with variants: its kind, its test cell and its inputs function."""

    number: str
    kind: str  # "by-hand", "implement" or "predict"
    test_id: str  # grade_id of its autograded test cell (of its written answer for "predict")
    draw: Callable[[int | None], Variant]


def _by_hand(number: str, fn: Callable[[int | None], Variant]) -> Exercise:
    return Exercise(number, "by-hand", f"ch{int(number.split('.')[0]):02d}-ex{number.split('.')[1]}-test", fn)


def _implement(number: str) -> Exercise:
    chapter, k = number.split(".")
    return Exercise(number, "implement", f"ch{int(chapter):02d}-ex{k}-test", lambda seed: implement_inputs(number, seed))


EXERCISES: dict[str, Exercise] = {
    e.number: e
    for e in [
        _by_hand("1.1", dot_products_by_hand),
        _by_hand("2.1", bilinear_by_hand),
        _by_hand("3.1", values_by_hand),
        _by_hand("4.1", weighted_average_by_hand),
        _by_hand("5.1", variance_by_hand),
        _by_hand("6.1", uniform_row_by_hand),
        _by_hand("7.1", unscaled_row_by_hand),
        _by_hand("8.1", head_count_by_hand),
        _by_hand("9.1", masked_row_by_hand),
        _by_hand("10.1", path_lengths_by_hand),
        _by_hand("11.1", position_pair_by_hand),
        _by_hand("12.1", retrieval_by_hand),
        _by_hand("13.1", score_memory_by_hand),
        _by_hand("13.2", memory_budget_by_hand),
        Exercise("6.3", "predict", "ch06-ex3-written", scaled_projection_prediction),
        Exercise("7.2", "predict", "ch07-ex2-written", large_head_prediction),
        *(_implement(n) for n in _IMPLEMENT_BOOK_SEEDS),
    ]
}


def variant(exercise: str, seed: int | None = None) -> Variant:
    """The inputs of exercise ``exercise`` (for example ``"9.1"``) for ``seed``.

    Examples
    --------
    >>> variant("11.1").t
    3
    >>> variant("1.9")
    Traceback (most recent call last):
    ...
    ValueError: exercise must be one of the exercises with variants, got '1.9'
    """
    if exercise not in EXERCISES:
        raise ValueError(f"exercise must be one of the exercises with variants, got {exercise!r}")
    return EXERCISES[exercise].draw(seed)


def _rounded(x: Any) -> Any:
    """What a student types: numbers to DECIMALS places, as plain Python numbers and lists."""
    arr = np.round(np.asarray(x, dtype=float), DECIMALS) + 0.0  # + 0.0 turns -0.0 into 0.0
    return arr.tolist()


def answers(v: Variant) -> dict[str, Any]:
    """The model answers of a by-hand exercise, computed by attnlib from the variant's inputs.

    Keys are the names the answer cell defines; numbers are rounded to four
    decimals, as a student would type them (integers stay integers).
    """
    n, I2 = v.exercise, np.eye(2)
    if n == "1.1":
        X = v.X
        return {"x1_dot_x3": _rounded(X[0] @ X[2]), "x2_dot_x3": _rounded(X[1] @ X[2]),
                "x3_dot_x3": _rounded(X[2] @ X[2]), "length_x3": _rounded(np.linalg.norm(X[2]))}
    if n == "2.1":
        S = (v.X @ v.W_Q) @ (v.X @ v.W_K).T
        return {"e_13": _rounded(S[0, 2]), "e_31": _rounded(S[2, 0])}
    if n == "3.1":
        return {"V_by_hand": _rounded(self_attention(v.X, I2, I2, v.W_V).V)}
    if n == "4.1":
        return {"o_by_hand": _rounded(v.weights @ v.V)}
    if n == "5.1":
        d = scale_divisor(v.d_k)
        return {"var_raw": _rounded(d**2), "std_raw": _rounded(d), "var_scaled": _rounded(1.0)}
    if n == "6.1":
        return {"o3_by_hand": _rounded(self_attention(v.X, I2, I2, v.W_V).output[2])}
    if n == "7.1":
        return {"unscaled_row": _rounded(softmax(v.scores))}
    if n == "8.1":
        return {"d_head": heads.head_dim(v.d_model, v.n_heads), "n_params": attention_parameter_count(v.d_model, v.n_heads)}
    if n == "9.1":
        return {"masked_row": _rounded(attention(v.X, v.X, v.X, mask=v.allowed).weights[v.query])}
    if n == "10.1":
        return {"rnn_steps": paths.rnn_path_length(v.source, v.target, n=v.n),
                "attention_steps": paths.attention_path_length(v.source, v.target, n=v.n)}
    if n == "11.1":
        return {"pe3_first_pair": _rounded(sinusoidal_encoding(v.t + 1, 2)[v.t])}
    if n == "12.1":
        r = retrieval.retrieve([v.scores], v.values)
        return {"weights_by_hand": _rounded(r.weights[0]), "output_by_hand": _rounded(r.output[0])}
    if n == "13.1":
        b = cost.score_matrix_bytes(v.n)
        return {"score_bytes": b, "score_mib": b / 2**20}
    if n == "13.2":
        return {"n_for_budget": math.isqrt(2**v.budget_log2 // cost.score_matrix_bytes(1))}
    raise ValueError(f"exercise {n} has no by-hand answer (it is {EXERCISES[n].kind})" if n in EXERCISES else f"unknown exercise {n!r}")


def agrees(given: Any, expected: Any) -> bool:
    """Whether a typed answer ``given`` matches ``expected`` (same shape, within ``TOLERANCE``).

    Examples
    --------
    >>> agrees([0.5875, 0, 0.4125], [0.58754, 0.0, 0.41246]), agrees([0.5, 0.5], [0.5, 0.5, 0.0])
    (True, False)
    """
    try:
        g, e = np.asarray(given, dtype=float), np.asarray(expected, dtype=float)
    except (TypeError, ValueError):
        return False
    return g.shape == e.shape and bool(np.allclose(g, e, rtol=0, atol=TOLERANCE))


# --- well-posedness -------------------------------------------------------------------------


def _require(ok: bool, v: Variant, why: str) -> None:
    if not ok:
        raise ValueError(f"exercise {v.exercise}, seed {v.seed}: {why}")


def _is_grid(x: Any, step: float) -> bool:
    """Whether every entry is a multiple of ``step`` (numbers a student handles by hand)."""
    a = np.asarray(x, dtype=float) / step
    return bool(np.all(np.isfinite(a)) and np.allclose(a, np.round(a)))


def check_well_posed(v: Variant) -> None:
    """Raise ValueError if the variant ``v`` is not a fair question.

    By-hand inputs must be small halves or integers, no token may be all
    zeros, no row of a mask may forbid every key, and wherever the question
    compares weights or asks for a largest one, there is no tie.
    """
    n = v.exercise
    if n in ("1.1", "7.1", "9.1"):
        X = v.X
        _require(_is_grid(X, 0.5) and np.abs(X).max() <= 2, v, "token entries must be halves between -1 and 2")
        _require(bool(np.all(np.abs(X).sum(axis=1) > 0)), v, "a token is all zeros")
        _require(len({tuple(r) for r in X.tolist()}) == 3, v, "two tokens are equal")
    if n == "1.1":
        _require(v.X[2] @ v.X[2] > 0, v, "token 3 has length 0")
    elif n == "2.1":
        S = (v.X @ v.W_Q) @ (v.X @ v.W_K).T
        _require(_is_grid(v.W_Q, 1) and _is_grid(v.W_K, 1), v, "projections must be small integers")
        _require(abs(S[0, 2] - S[2, 0]) >= 0.5, v, "e_13 and e_31 must differ, the point of the question")
    elif n == "3.1":
        _require(_is_grid(v.W_V, 1) and not np.allclose(v.W_V, np.eye(2)), v, "W_V must be small integers and not I")
        _require(abs(np.linalg.det(v.W_V)) > 0, v, "W_V must not squash the tokens onto a line")
    elif n == "4.1":
        _require(np.isclose(v.weights.sum(), 1) and _is_grid(v.weights, 0.25), v, "weights must be quarters summing to 1")
        _require(_is_grid(v.V, 0.5) and len({tuple(r) for r in v.V.tolist()}) == 3, v, "values must be distinct halves")
    elif n == "5.1":
        _require(math.isqrt(v.d_k) ** 2 == v.d_k, v, "d_k must be a perfect square")
    elif n == "6.1":
        A = attention(v.X, v.X, v.X).weights
        _require(np.allclose(A[2], 1 / 3), v, "token 3's row must be uniform")
        _require(_is_grid(v.W_V, 1) and np.abs(v.W_V).sum() > 0, v, "W_V must be small integers, not all zero")
    elif n == "7.1":
        s = np.sort(v.scores)
        _require(bool(np.all(np.diff(s) >= 0.25)) and np.abs(s).max() <= 4, v, "token 1's scores must differ (a clear top weight)")
    elif n == "8.1":
        _require(v.d_model % v.n_heads == 0, v, "n_heads must divide d_model")
    elif n == "9.1":
        _require(v.query != v.padded, v, "the query may not be the padded token")
        _require(bool(v.allowed.any(axis=1).all()), v, "a row of the mask forbids every key")
        kept = np.delete(v.scores, v.padded)
        _require(abs(kept[0] - kept[1]) >= 0.1, v, "the two kept scores must differ")
    elif n == "10.1":
        _require(1 <= v.source < v.target <= v.n, v, "positions must satisfy 1 <= source < target <= n")
    elif n == "11.1":
        _require(1 <= v.t <= 9, v, "t must be a small positive position")
    elif n == "12.1":
        _require(_is_grid(v.scores, 1) and v.scores[0] != v.scores[1], v, "scores must be distinct integers (no tie)")
        _require(_is_grid(v.values, 1) and len({tuple(r) for r in v.values.tolist()}) == 2, v, "values must be distinct integer rows")
    elif n == "13.1":
        _require(v.n & (v.n - 1) == 0 and v.n >= 256, v, "n must be a power of two")
    elif n == "13.2":
        _require(v.budget_log2 % 2 == 0 and v.budget_log2 >= 4, v, "the budget must be an even power of two")
    elif n == "6.3":
        _require(2 <= v.factor <= 3 and float(v.factor * 20).is_integer(), v, "the factor must lie on the sliders (2 to 3)")
    elif n == "7.2":
        _require(v.d_k >= 32, v, "the head must be large")
    elif n in _IMPLEMENT_BOOK_SEEDS:
        arrays = [np.asarray(x, dtype=float) for x in v.inputs.values() if isinstance(x, np.ndarray)]
        _require(all(np.all(np.isfinite(a)) for a in arrays), v, "inputs must be finite")
        if "allowed" in v.inputs:
            _require(bool(v.allowed.any(axis=1).all()), v, "a row of the mask forbids every key")
    elif n not in EXERCISES:
        raise ValueError(f"unknown exercise {n!r}")

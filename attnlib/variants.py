"""Per-student variants of the exercises: every exercise's inputs drawn from a seed.

The public face of :mod:`attnlib.exercises`: each exercise is one entry of
``EXERCISES`` (registered by its chapter's module ``attnlib/exercises/chNN.py``)
holding its draw function, its model answer and its well-posedness check.
``seed=None`` gives the book's own numbers, so the web book and self-study
read as before; an integer seed gives a student's own numbers. Nothing here
stores an answer: :func:`answers` computes the expected answers of a by-hand
exercise with attnlib from the same inputs, and :func:`check_well_posed`
checks that a variant is fair (no ties where a maximum is asked, no
all-masked rows, numbers a student can handle by hand).

The seed of a student comes from :func:`student_seed`, an HMAC-SHA256 of the
student id and the assignment name under a key that :func:`route_key` derives
from the course's secret for that assignment and release route; the grader
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

from ._validate import as_seed
from .exercises import DRAWS as _DRAWS
from .exercises.registry import (
    DECIMALS,
    EXERCISES,
    ROUTES,
    TOLERANCE,
    Exercise,
    Variant,
    agrees,
    answers,
    check_well_posed,
    current_user,
    route_key,
    student_seed,
    variant,
)

globals().update(_DRAWS)  # dot_products_by_hand, ..., masked_row_by_hand, ...: every chapter's draw functions

__all__ = [
    "Variant",
    "Exercise",
    "EXERCISES",
    "ROUTES",
    "DECIMALS",
    "TOLERANCE",
    "student_seed",
    "route_key",
    "current_user",
    "variant",
    "answers",
    "agrees",
    "check_well_posed",
    "implement_inputs",
    "as_seed",
    *_DRAWS,
]


def implement_inputs(exercise: str, seed: int | None = None) -> Variant:
    """The arrays an implement exercise's grader tries the student's function on.

    ``seed=None`` gives fixed book inputs; a seed gives a student's own sizes
    and entries (normal numbers, so no two entries tie).

    Raises
    ------
    ValueError
        If ``exercise`` is not the number of an implement exercise, or ``seed`` is neither None
        nor an integer by the seed rule; the message names it.

    Examples
    --------
    >>> v = implement_inputs("6.2", seed=7)
    >>> v.X.shape[1] == v.W_Q.shape[0] == v.W_V.shape[0], v.W_Q.shape == v.W_K.shape
    (True, True)
    """
    implement = sorted(n for n, e in EXERCISES.items() if e.kind == "implement")
    if exercise not in implement:
        raise ValueError(f"exercise must be one of {implement}, got {exercise!r}")
    return variant(exercise, seed)

"""Right answers as a student's kernel hands them in, for the grading tests (no notebook, no nbgrader)."""

from __future__ import annotations

from typing import Any

import numpy as np

from attnlib import variants
from attnlib.exercises import grading


def right_namespace(number: str, seed: int | None) -> dict[str, Any]:
    """What a right answer cell of exercise ``number`` defines for ``seed``.

    By-hand and measured: attnlib's model answers. Implement: a function that hands back attnlib's
    expected result for each case the grader judges (``grading.graded_cases``), computed here, outside the calls the grader
    watches (a function that called attnlib's own while it runs would be rejected); called with
    other inputs (another seed's), it returns None, a wrong answer.
    """
    entry = variants.EXERCISES[number]
    v = entry.draw(seed)
    if entry.kind != "implement":
        return dict(variants.answers(v))
    table = [(case.args, case.expected) for case, _ in grading.graded_cases(number, seed)]  # the self-check's cases and the calls

    def student_function(*args):
        for known, result in table:
            if len(known) == len(args) and all(np.array_equal(a, b) for a, b in zip(known, args, strict=True)):
                return result
        return None

    return {entry.function: student_function}


def right_payload(number: str, seed: int | None) -> dict[str, Any]:
    """The payload :func:`grading.hand_in` hands in for the right answer of exercise ``number``."""
    handed: list[dict[str, Any]] = []
    grading.hand_in(number, seed, right_namespace(number, seed), sink=handed)
    return handed[0]["payload"]

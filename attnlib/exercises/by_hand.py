"""The self-check of every by-hand exercise: each typed number right or not yet, never the expected value."""

from __future__ import annotations

import ast
import numbers
from typing import Any

import numpy as np

from .._validate import as_flag
from . import registry
from .from_source import typed_answers
from .results import CLOSE, ByHandResult
from .sandbox import safe_text

__all__ = ["check_by_hand"]


def _typed_reason(answers: Any, key: str) -> str | None:
    """Why the cell that last assigned ``key`` is not typed numbers, as the grader reads it; None if it is or is unknown.

    In a notebook ``globals()`` holds IPython's input history ``In``: the cell
    that assigned ``key`` last is read with the grader's reader, so that a value
    computed by code (``variants.answers(...)``, a name of the notebook) is
    refused here with the grader's own reason. Outside IPython nothing is known.
    """
    history = answers.get("In")
    if not isinstance(history, list):
        return None
    for source in reversed(history):
        if not isinstance(source, str) or key not in source:
            continue
        try:
            ast.parse(source)
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            continue
        read, unreadable = typed_answers(source, [key])
        if key in read:
            return None
        if key in unreadable:
            return unreadable[key]
    return None


def _by_hand_expected(exercise: str, seed: int | None) -> dict[str, Any]:
    known = [n for n, e in registry.EXERCISES.items() if e.kind == "by-hand"]
    if not isinstance(exercise, str) or exercise not in known:
        raise ValueError(f"exercise must be a by-hand exercise, one of {known}; got {exercise!r}")
    return registry.answers(registry.variant(exercise, seed))


def _typed_entries(name: str, typed: Any, want: np.ndarray) -> list[tuple[str, Any]] | str:
    """The typed value as ``(label, entry)`` pairs in the expected shape, or a message saying why it is not."""
    if isinstance(typed, str):
        return (
            f"{name} is the text {safe_text(typed, 40)!r}, not a number: "
            "type the number itself, without quotes (a fraction such as 5/8 is fine)."
        )
    try:
        arr = np.array(typed, dtype=object)
    except Exception:  # noqa: BLE001 - a ragged or odd value
        arr = None
    if arr is None or arr.shape != want.shape:
        if want.ndim == 0:
            return f"{name} should be a single number."
        rows = f"{want.shape[0]} numbers" if want.ndim == 1 else f"{want.shape[0]} rows of {want.shape[1]} numbers"
        return f"{name} should be a list of {rows}" + (f"; yours has shape {arr.shape}." if arr is not None and arr.ndim else ".")
    out = []
    for index in np.ndindex(want.shape):
        label = name + "".join(f"[{i}]" for i in index)
        out.append((label, arr[index]))
    return out


def _entry_verdict(label: str, value: Any, want: float, exact_zero: bool = False) -> tuple[bool, str]:
    """(right?, the line for it): right, or not yet with the reason; never the expected value.

    With ``exact_zero`` (exercise 9.1: a masked key), an entry whose answer is 0 must be typed as exactly 0.
    """
    if isinstance(value, str):
        return False, f"{label}: not yet; it is the text {safe_text(value, 40)!r}. Type the number itself, without quotes."
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Real):
        return False, f"{label}: not yet; it is {type(value).__name__}, not a number."
    try:
        number = float(value)
    except (TypeError, ValueError, OverflowError):
        return False, f"{label}: not yet; it could not be read as a number."
    shown = str(int(value)) if isinstance(value, (int, np.integer)) else safe_text(float(value), 40)
    if not np.isfinite(number):
        return False, f"{label} = {shown}: not yet; type a finite number."
    error = abs(number - want)
    if registry.agrees(number, want):
        if exact_zero and want == 0 and number != 0:
            return False, f"{label} = {shown}: not yet; this weight is exactly 0 (its key is masked), so type 0."
        return True, f"{label} = {shown}: right."
    if error <= CLOSE and error <= max(abs(want), 1.0):
        return False, f"{label} = {shown}: not yet, but close. Give it exactly, or to four decimals, and round only at the end."
    if want != 0 and abs(number + want) <= registry.TOLERANCE:
        return False, f"{label} = {shown}: not yet; check the sign."
    return False, f"{label} = {shown}: not yet."


def check_by_hand(exercise: str, answers: Any, seed: int | None = None, verbose: bool = True) -> ByHandResult:
    """Check the numbers typed for a by-hand exercise: each entry right or not yet, never the expected value.

    ``answers`` maps the answer cell's names to what was typed; in a
    notebook, pass ``globals()``. Each number is compared with attnlib's
    answer for the same inputs (the student's own with ``seed``) within
    the four decimals the exercises ask for, the tolerance the grader uses.
    A number that is off by a little more (rounded too coarsely or too
    early) is called close; a number typed as text is named as such. In a
    notebook the cell that assigned each name last (IPython's ``In``) is
    read as the grader reads the answer cell: a value computed by code
    rather than typed (see :mod:`attnlib.exercises.from_source`) is not yet
    right, with the grader's reason.

    Raises
    ------
    ValueError
        If ``exercise`` is not a by-hand exercise's number, ``answers`` is not a mapping, ``seed`` is
        neither None nor an integer by the seed rule or ``verbose`` is not True or False; the message
        names it. Typed values never raise: text, booleans, NaN or a wrong shape are entries not yet right.

    Examples
    --------
    >>> check_by_hand("4.1", {"o_by_hand": [5 / 8, 3 / 8]}, verbose=False).passed
    True
    >>> _ = check_by_hand("4.1", {"o_by_hand": [0.625, 0.38]})
    NOT YET 4.1 (o_by_hand): 1 of 2 entries right.
      o_by_hand[0] = 0.625: right.
      o_by_hand[1] = 0.38: not yet, but close. Give it exactly, or to four decimals, and round only at the end.
    >>> check_by_hand("4.1", {}, verbose=False).entries
    ('o_by_hand is not defined yet: type it in the answer cell above and run that cell.',)
    >>> typed_by_code = {"o_by_hand": [5 / 8, 3 / 8], "In": ["", "o_by_hand = list(answer)"]}
    >>> check_by_hand("4.1", typed_by_code, verbose=False).entries[0].split(":")[0]
    'o_by_hand is not read as typed numbers'
    """
    verbose = as_flag("verbose", verbose)
    expected = _by_hand_expected(exercise, seed)
    if not hasattr(answers, "get") or not hasattr(answers, "__contains__"):
        raise ValueError(f"answers must be a mapping from names to typed values (in a notebook, globals()); got {type(answers).__name__}")
    name = f"{exercise} ({', '.join(expected)})"
    entries: list[str] = []
    n_cases = n_right = 0
    for key, want_raw in expected.items():
        want = np.asarray(want_raw, dtype=float)
        if key not in answers:
            n_cases += want.size
            entries.append(f"{key} is not defined yet: type it in the answer cell above and run that cell.")
            continue
        reason = _typed_reason(answers, key)
        typed = reason if reason is not None else _typed_entries(key, answers[key], want)
        if isinstance(typed, str):
            n_cases += want.size
            entries.append(typed)
            continue
        for (label, value), w in zip(typed, want.ravel()):
            ok, line = _entry_verdict(label, value, float(w), registry.EXERCISES[exercise].exact_zero)
            n_cases += 1
            n_right += ok
            entries.append(line)
    result = ByHandResult(name, n_cases, n_right, tuple(e for e in entries if not e.endswith(": right.")), (), tuple(entries))
    if verbose:
        print(result.report())
    return result

"""The self-checks' engine under its old name: it lives in :mod:`attnlib.exercises` now, and this module re-exports it.

:mod:`attnlib.exercises.sandbox` calls the student's function (:func:`call_student`),
:mod:`attnlib.exercises.results` holds :class:`CheckResult` and the tolerances, and
:mod:`attnlib.exercises.cases` builds and judges the cases.

Examples
--------
>>> from attnlib.exercises import results
>>> ATOL is results.ATOL and CheckResult is results.CheckResult
True
"""

from __future__ import annotations

from ..exercises.results import ATOL, RTOL, ByHandResult, CheckFailed, CheckResult
from ..exercises.sandbox import MAX_TIME_LIMIT_SECONDS, TIME_LIMIT_SECONDS, StudentCall, call_student

__all__ = [
    "ATOL",
    "MAX_TIME_LIMIT_SECONDS",
    "RTOL",
    "TIME_LIMIT_SECONDS",
    "ByHandResult",
    "CheckFailed",
    "CheckResult",
    "StudentCall",
    "call_student",
]

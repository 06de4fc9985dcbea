"""Self-checks for the exercises: run *your* function, compare it with attnlib's.

* :mod:`attnlib.checks.runner` calls the student's function safely (copied
  inputs, a time limit, captured printing, exceptions as plain sentences) and
  judges its results case by case;
* :mod:`attnlib.checks.by_hand` checks the numbers typed for a by-hand exercise;
* every chapter's own checks (``check_softmax``, ``check_causal_mask``, ...)
  live with that chapter's variants in ``attnlib/exercises/chNN.py`` and are
  re-exported here, so a chapter's test cell says ``checks.check_x(fn)``.

Examples
--------
>>> def my_softmax(x):
...     e = np.exp(np.asarray(x, dtype=float) - np.max(x, axis=-1, keepdims=True))
...     return e / e.sum(axis=-1, keepdims=True)
>>> result = check_softmax(my_softmax, verbose=False)
>>> bool(result), result.n_passed == result.n_cases
(True, True)
"""

from __future__ import annotations

import numpy as np  # noqa: F401 (the doctests use it)

from ..exercises import CHECKS as _CHECKS
from . import runner
from .by_hand import check_by_hand  # noqa: I001 (after the runner: it imports the exercises, which import the runner)
from .runner import ATOL, RTOL, TIME_LIMIT_SECONDS, ByHandResult, CheckFailed, CheckResult, StudentCall, call_student

globals().update(_CHECKS)

__all__ = [
    "runner",
    "CheckResult",
    "ByHandResult",
    "CheckFailed",
    "StudentCall",
    "TIME_LIMIT_SECONDS",
    "ATOL",
    "RTOL",
    "call_student",
    "check_by_hand",
    *_CHECKS,
]

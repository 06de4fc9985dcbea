"""Self-checks for the exercises: run *your* function, compare it with attnlib's.

This package is a thin face: the engine lives in :mod:`attnlib.exercises`
(``sandbox``: calling the student's function safely; ``cases``: the cases and
the one comparator; ``results``: :class:`~attnlib.exercises.results.CheckResult` and the tolerances;
``by_hand``: the numbers typed for a by-hand exercise), and this package
re-exports it. Every chapter's own checks (``check_softmax``,
``check_causal_mask``, ...) live with that chapter's variants in
``attnlib/exercises/chNN.py`` and are re-exported here too, so a chapter's
test cell says ``checks.check_x(fn)``.

Examples
--------
>>> from attnlib.checks import check_softmax  # a chapter's check, found in attnlib/exercises/ch04.py
>>> def my_softmax(x):
...     e = np.exp(np.asarray(x, dtype=float) - np.max(x, axis=-1, keepdims=True))
...     return e / e.sum(axis=-1, keepdims=True)
>>> result = check_softmax(my_softmax, verbose=False)
>>> bool(result), result.n_passed == result.n_cases
(True, True)
"""

from __future__ import annotations

import numpy as np  # noqa: F401 (the doctests use it)

from ..exercises.by_hand import check_by_hand
from ..exercises.results import ATOL, RTOL, ByHandResult, CheckFailed, CheckResult
from ..exercises.sandbox import TIME_LIMIT_SECONDS, StudentCall, call_student
from . import runner

#: The names this module defines itself. The chapters' checks are found by ``__getattr__`` below (and
#: listed by ``dir()``); each is documented where it is defined, in ``attnlib.exercises.chNN``.
__all__ = [
    "ATOL",
    "RTOL",
    "TIME_LIMIT_SECONDS",
    "ByHandResult",
    "CheckFailed",
    "CheckResult",
    "StudentCall",
    "call_student",
    "check_by_hand",
    "runner",
]


def __getattr__(name: str) -> object:
    """The chapters' self-checks (``check_softmax``, ...), looked up when first used.

    The checks live in ``attnlib/exercises/chNN.py``, whose modules import this package's runner.
    Reading them here at import time made the two packages import each other: importing
    ``attnlib.exercises`` before ``attnlib.checks`` failed with "cannot import name 'CHECKS'"
    (it worked only because ``attnlib/__init__.py`` happened to import ``checks`` first). Looked up
    lazily (PEP 562), either package can be imported first.
    """
    from ..exercises import CHECKS

    if name in CHECKS:
        globals()[name] = CHECKS[name]  # found once, then an ordinary attribute
        return CHECKS[name]
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    from ..exercises import CHECKS

    return sorted({*globals(), *CHECKS})

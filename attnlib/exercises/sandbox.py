"""Calling a student's function safely: copied inputs, a time limit, captured printing, exceptions as text.

Every call of a student's function, by a self-check or by the grader's hand-in, goes through
:func:`call_student`.

Examples
--------
>>> call_student(lambda n: n + 1, (2,)).value
3
>>> safe_text("x" * 400, limit=10)
'xxxxxxx...'
"""

from __future__ import annotations

import contextlib
import inspect
import io
import signal
import sysconfig
import threading
import traceback
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from .._validate import as_positive_real

__all__ = [
    "MAX_TIME_LIMIT_SECONDS",
    "PRINTED_LINES_QUOTED",
    "TIME_LIMIT_SECONDS",
    "StudentCall",
    "call_student",
    "exception_text",
    "safe_text",
    "where_student_code_failed",
]


#: Time limit, in seconds, for one call of your function.
TIME_LIMIT_SECONDS: float = 5.0
#: The longest time limit ``call_student`` takes (a day; longer ones are refused, as the timer cannot hold them everywhere).
MAX_TIME_LIMIT_SECONDS: float = 86400.0

#: How many printed lines the summary of your function's output quotes.
PRINTED_LINES_QUOTED = 3


def _copy_args(args: tuple[Any, ...]) -> tuple[Any, ...]:
    """Fresh copies, so a function that modifies its input cannot spoil later cases."""
    return tuple(a.copy() if isinstance(a, np.ndarray) else a for a in args)


def safe_text(obj: Any, limit: int = 300) -> str:
    """``str(obj)``, shortened to ``limit`` characters; never raises, even when ``obj.__str__`` does.

    Raises
    ------
    ValueError
        Never: ``obj`` may be anything a student's code made.

    Examples
    --------
    >>> safe_text("x" * 400, limit=10)
    'xxxxxxx...'
    """
    try:
        text = str(obj)
    except BaseException as exc:  # noqa: BLE001 - a student's __str__ may raise anything
        try:
            kind = type(exc).__name__
        except BaseException:  # noqa: BLE001
            kind = "an exception"
        return f"(its message could not be shown: str() raised {kind})"
    return text if len(text) <= limit else text[: limit - 3] + "..."


def exception_text(exc: BaseException) -> str:
    """``'TypeError: message'`` for any exception, never raising.

    Raises
    ------
    ValueError
        Never: ``exc`` may be anything a student's code raised.

    Examples
    --------
    >>> exception_text(ValueError("no"))
    'ValueError: no'
    """
    try:
        kind = type(exc).__name__
    except BaseException:  # noqa: BLE001
        kind = "Exception"
    text = safe_text(exc)
    return f"{kind}: {text}" if text else kind


class _TimeLimitExceeded(BaseException):
    """Raised inside the student's function when its time is up (BaseException, so `except Exception` cannot swallow it)."""


class _CappedOutput(io.TextIOBase):
    """A stream that counts lines and keeps only the first few, so printing in a loop costs no memory."""

    def __init__(self) -> None:
        self.lines = 0
        self.chars = 0
        self.head: list[str] = []
        self._partial = ""

    def writable(self) -> bool:
        return True

    def write(self, text: Any) -> int:
        text = safe_text(text, limit=10_000)
        self.chars += len(text)
        self.lines += text.count("\n")
        if len(self.head) < PRINTED_LINES_QUOTED:
            self._partial += text
            *done, self._partial = self._partial.split("\n")
            self.head += [line[:120] for line in done][: PRINTED_LINES_QUOTED - len(self.head)]
            self._partial = self._partial[:120]
        return len(text)

    def total_lines(self) -> int:
        return self.lines + (1 if self.chars and not self.lines else 0)

    def quoted(self) -> list[str]:
        return self.head or ([self._partial] if self._partial else [])


@dataclass(frozen=True)
class StudentCall:
    """What happened when :func:`call_student` called the student's function once.

    Attributes
    ----------
    value:
        What the function returned (None if it raised or timed out).
    error:
        None, or a plain sentence saying what went wrong (an exception, the
        time limit, an input changed in place).
    timed_out:
        Whether the call hit the time limit.
    printed_lines:
        How many lines the function printed (to stdout or stderr).
    printed_head:
        The first few of them.
    exception:
        The exception the function raised, if it raised one (for the checks'
        translations of numpy's shape errors into the chapter's terms).
    """

    value: Any
    error: str | None
    timed_out: bool = False
    printed_lines: int = 0
    printed_head: tuple[str, ...] = ()
    exception: BaseException | None = field(default=None, repr=False, compare=False)


def _argument_names(fn: Callable[..., Any], n: int) -> list[str]:
    try:
        params = [p.name for p in inspect.signature(fn).parameters.values()]
    except (TypeError, ValueError):
        params = []
    return [params[i] if i < len(params) else f"argument {i + 1}" for i in range(n)]


def _call_with_time_limit(fn: Callable[..., Any], args: tuple[Any, ...], limit: float) -> Any:
    """``fn(*args)``, raising :class:`_TimeLimitExceeded` after ``limit`` seconds.

    In the main thread (a notebook cell) a SIGALRM timer interrupts the call;
    elsewhere the call runs in a helper thread that is abandoned at the limit.
    Where neither exists (JupyterLite's Pyodide) the call runs without a limit.
    """
    if threading.current_thread() is threading.main_thread() and hasattr(signal, "setitimer"):

        def _stop(signum: int, frame: Any) -> None:
            raise _TimeLimitExceeded()

        try:
            previous = signal.signal(signal.SIGALRM, _stop)
            signal.setitimer(signal.ITIMER_REAL, limit)
        except (OSError, ValueError, AttributeError):
            return fn(*args)
        try:
            return fn(*args)
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)
            signal.signal(signal.SIGALRM, previous)
    box: dict[str, Any] = {}

    def target() -> None:
        try:
            box["value"] = fn(*args)
        except BaseException as exc:  # noqa: BLE001 - handed back to the caller's thread
            box["error"] = exc

    worker = threading.Thread(target=target, daemon=True)
    try:
        worker.start()
    except RuntimeError:  # no threads (Pyodide)
        return fn(*args)
    worker.join(limit)
    if worker.is_alive():
        raise _TimeLimitExceeded()
    if "error" in box:
        raise box["error"]
    return box["value"]


def call_student(fn: Callable[..., Any], args: tuple[Any, ...], time_limit: float | None = None) -> StudentCall:
    """Call the student's ``fn(*args)`` safely: copied inputs, a time limit, captured output, no escaping exception.

    Returns a :class:`StudentCall`. ``error`` is set when the function
    raised (the message names the exception and the student's line), ran
    past ``time_limit`` seconds (default ``TIME_LIMIT_SECONDS``) or
    changed one of its input arrays in place. ``KeyboardInterrupt`` still
    stops the check.

    Raises
    ------
    ValueError
        If ``args`` is not a tuple (or list) of arguments, or ``time_limit`` is neither None nor a positive
        number below ``MAX_TIME_LIMIT_SECONDS`` (a day); the message names it. Nothing ``fn`` does raises
        here (``KeyboardInterrupt`` aside): it is the result's ``error``.

    Examples
    --------
    >>> call_student(lambda x: x + 1, (np.zeros(2),)).value.tolist()
    [1.0, 1.0]
    >>> def changes_input(x):
    ...     x[0] = 5.0
    ...     return x
    >>> call_student(changes_input, (np.zeros(2),)).error
    'your function changed its input x in place; work on a copy (for example x = x - m instead of x -= m).'
    """
    if not isinstance(args, (tuple, list)):
        raise ValueError(f"args must be a tuple of the arguments to call fn with, got {type(args).__name__}")
    limit = TIME_LIMIT_SECONDS if time_limit is None else as_positive_real("time_limit", time_limit, below=MAX_TIME_LIMIT_SECONDS)
    given = _copy_args(tuple(args))
    output = _CappedOutput()
    value, error, timed_out, raised = None, None, False, None
    try:
        with contextlib.redirect_stdout(output), contextlib.redirect_stderr(output):
            # A naive formula may overflow; its NaN gets an explained message instead of a warning here.
            with np.errstate(all="ignore"), warnings.catch_warnings():
                warnings.simplefilter("ignore", RuntimeWarning)
                value = _call_with_time_limit(fn, given, limit)
    except _TimeLimitExceeded:
        timed_out = True
        error = (
            f"your function did not finish within the time limit of {limit:g} seconds per call. "
            "Look for an endless loop, a time.sleep() or a very slow Python loop."
        )
    except NotImplementedError:
        error = "your function raised NotImplementedError. Replace the `raise NotImplementedError()` line with your code."
    except (KeyboardInterrupt, GeneratorExit):
        raise
    except BaseException as exc:  # noqa: BLE001 - the student's code may raise anything, SystemExit included
        raised = exc
        error = f"your function raised {exception_text(exc)}{where_student_code_failed(exc)}."
    if error is None:
        names = _argument_names(fn, len(args))
        for name, before, after in zip(names, args, given):
            if isinstance(before, np.ndarray) and isinstance(after, np.ndarray):
                same = before.shape == after.shape and np.array_equal(before, after, equal_nan=True)
                if not same:
                    error = f"your function changed its input {name} in place; work on a copy (for example x = x - m instead of x -= m)."
                    break
    return StudentCall(value, error, timed_out, output.total_lines(), tuple(output.quoted()), raised)


_PACKAGE_DIR = str(Path(__file__).resolve().parent.parent)  # attnlib/
#: Where the checks themselves live: their frames are never the student's.
_CHECKER_DIRS = tuple(str(Path(__file__).resolve().parent.parent / d) for d in ("checks", "exercises"))
_LIBRARY_DIRS = tuple(
    str(Path(p).resolve()) for p in {sysconfig.get_paths()["stdlib"], sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]}
)


def _is_library_file(filename: str) -> bool:
    """Whether a traceback frame is inside attnlib, numpy or Python's own library (not the student's code)."""
    try:
        where = str(Path(filename).resolve())
    except (OSError, ValueError):
        return False
    return where.startswith(_PACKAGE_DIR) or where.startswith(_LIBRARY_DIRS)


def _is_checker_file(filename: str) -> bool:
    try:
        return str(Path(filename).resolve()).startswith(_CHECKER_DIRS)
    except (OSError, ValueError):
        return False


def _is_attnlib_file(filename: str) -> bool:
    try:
        return str(Path(filename).resolve()).startswith(_PACKAGE_DIR)
    except (OSError, ValueError):
        return False


def _failure_frames(exc: BaseException) -> tuple[Any, Any]:
    """``(the student's last frame, the first attnlib frame it called)``; either may be None."""
    frames = [f for f in traceback.extract_tb(exc.__traceback__) if not _is_checker_file(f.filename)]
    student = [i for i, f in enumerate(frames) if not _is_library_file(f.filename)]
    if not student:
        return None, None
    last = student[-1]
    inner = frames[last + 1] if last + 1 < len(frames) and _is_attnlib_file(frames[last + 1].filename) else None
    return frames[last], inner


def where_student_code_failed(exc: BaseException) -> str:
    """Where in the student's code the exception came from: their line, and the attnlib function that raised.

    '' when no frame of the traceback is the student's.

    Raises
    ------
    ValueError
        Never: a traceback that cannot be read gives ''.

    Examples
    --------
    >>> where_student_code_failed(ValueError("no"))
    ''
    """
    try:
        mine, inner = _failure_frames(exc)
    except Exception:  # a broken traceback must not break the check
        return ""
    if mine is None:
        return ""
    line = f" ({mine.line.strip()})" if mine.line else ""
    if inner is not None:
        return f" inside attnlib's {inner.name}(), called at your line {mine.lineno}{line}"
    return f" at line {mine.lineno}{line}"

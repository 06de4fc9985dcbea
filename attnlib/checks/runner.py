"""The runner of the self-checks: it calls *your* function safely and judges the result.

The exercises' own checks (``check_softmax``, ``check_causal_mask``, ...) live
with their chapter in ``attnlib/exercises/chNN.py`` and are all reachable as
``attnlib.checks.check_*``; this module holds what they share.

Each ``check_*`` function calls the function you wrote on several cases
(edge cases included: huge logits, ``-inf`` entries, rows at very different
scales, a single token), compares the result with attnlib's own
implementation and prints a short verdict. When a case fails it says which
case, what kind of mistake it looks like and a hint, never the answer's
formula. A mistake it does not recognise gets one small case in full
(inputs, expected, yours) to work through by hand; a student's own case and
a case that is a by-hand question are never shown. If your function raises,
you get a plain message instead of a traceback: numpy's shape errors said
in the chapter's notation (which matrix is ``n_q x d_k``, which side is
transposed), and an error raised inside attnlib reported at your line.
The same diagnosis on several cases is said once, with a count.

Every check returns a :class:`CheckResult`, which is truthy exactly when all
cases passed. The test cells end in ``check_softmax(my_softmax).require()``,
which raises :class:`CheckFailed` when a case failed: one line under the
report in a notebook, no traceback, and a failed cell for a grader.
``check_by_hand`` does the same for the numbers of a by-hand exercise:
right or not yet, number by number, without the expected value.

The checks of the implement exercises take an optional ``seed``: with a
student's seed (``attnlib.variants``) they add one case drawn from that
student's own inputs, judged like the others.

Every call of your function goes through one place, :func:`call_student`:

* it gets fresh copies of the inputs, and a function that changes its input
  arrays in place fails the case (say ``x = x - m``, not ``x -= m``);
* it has a time limit of :data:`TIME_LIMIT_SECONDS` seconds per call; a
  function that takes longer fails, and the remaining cases are skipped;
* whatever it prints is captured and summarised in one note, so a print in
  a loop cannot flood the notebook;
* any exception it raises is reported as text, even one whose message
  itself cannot be shown.

Results must be real numbers (a complex result fails, however small its
imaginary part), free of NaN and inf, and where the text says a weight is
*exactly* 0 (a masked key) it is compared with 0 exactly, not within the
tolerance. New checks reuse all of this by building ``_Case`` objects
and calling ``_run()``.

Examples
--------
>>> from attnlib.checks import check_softmax
>>> def my_softmax(x):
...     e = np.exp(np.asarray(x, dtype=float) - np.max(x, axis=-1, keepdims=True))
...     return e / e.sum(axis=-1, keepdims=True)
>>> result = check_softmax(my_softmax, verbose=False)
>>> bool(result), result.n_passed == result.n_cases
(True, True)
>>> bool(check_softmax(lambda x: np.exp(x) / np.exp(x).sum(), verbose=False))
False
"""

from __future__ import annotations

import contextlib
import inspect
import io
import re
import signal
import sysconfig
import threading
import traceback
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from .._validate import as_flag, as_positive_real

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

#: Absolute and relative tolerance used to compare with attnlib's result.
ATOL = 1e-6
RTOL = 1e-6

#: Time limit, in seconds, for one call of your function.
TIME_LIMIT_SECONDS: float = 5.0
#: The longest time limit ``call_student`` takes (a day; longer ones are refused, as the timer cannot hold them everywhere).
MAX_TIME_LIMIT_SECONDS: float = 86400.0

#: How many printed lines the summary of your function's output quotes.
_PRINTED_LINES_QUOTED = 3


@dataclass(frozen=True)
class CheckResult:
    """The outcome of one self-check.

    Attributes
    ----------
    name:
        What was checked (for example ``"softmax"``).
    n_cases:
        How many cases were tried.
    n_passed:
        How many of them your function got right.
    messages:
        One message per failed case: the case, what went wrong, a hint.
    notes:
        Remarks that are not failures (for example, that your function
        printed many lines, shown here once instead of in full).
    """

    name: str
    n_cases: int
    n_passed: int
    messages: tuple[str, ...] = field(default_factory=tuple)
    notes: tuple[str, ...] = field(default_factory=tuple)

    @property
    def passed(self) -> bool:
        """True when every case passed."""
        return self.n_cases > 0 and self.n_passed == self.n_cases

    def __bool__(self) -> bool:
        return self.passed

    def require(self) -> None:
        """Raise :class:`CheckFailed` unless every case passed: the last line of an exercise's test cell.

        In a notebook the failure shows as one line under the report the check
        printed, not as a traceback, and an autograder still counts the cell as
        failed (it is an error).

        Examples
        --------
        >>> CheckResult("softmax", 2, 2).require()
        >>> CheckResult("softmax", 2, 1, ("case: wrong",)).require()
        Traceback (most recent call last):
        ...
        attnlib.checks.CheckFailed: softmax: 1 of 2 checks passed; the report above says which case to look at.
        """
        if not self.passed:
            raise CheckFailed(self)

    def report(self) -> str:
        """The text that the check prints."""
        if self.passed:
            lines = [f"PASS {self.name}: all {self.n_cases} checks passed."]
        else:
            lines = [f"FAIL {self.name}: {self.n_passed} of {self.n_cases} checks passed."]
            lines += [f"  - {m}" for m in self.messages]
        lines += [f"  note: {n}" for n in self.notes]
        return "\n".join(lines)


class CheckFailed(AssertionError):
    """A self-check that did not pass, raised by ``CheckResult.require()``.

    An ``AssertionError``, so graders treat it like a failed ``assert``. In
    IPython and Jupyter it is shown as one line instead of a traceback: the
    check's report, printed just above it, already says what went wrong.
    """

    def __init__(self, result: CheckResult) -> None:
        self.result = result
        by_hand = isinstance(result, ByHandResult)
        unit, what = ("entries right", "entry") if by_hand else ("checks passed", "case")
        super().__init__(f"{result.name}: {result.n_passed} of {result.n_cases} {unit}; the report above says which {what} to look at.")

    __module__ = "attnlib.checks"  # its public home, as in the messages students see

    def _render_traceback_(self) -> list[str]:
        """What IPython shows instead of a traceback (one line)."""
        return [f"Not passed yet. {self}"]


@dataclass(frozen=True)
class ByHandResult(CheckResult):
    """The outcome of ``check_by_hand``: one case per typed number, each right or not yet.

    ``entries`` holds one line per number, in the order of the answer cell.
    The report lists them only while some are not yet right, so a right
    answer's output (which the web book shows) holds no number.
    """

    entries: tuple[str, ...] = field(default_factory=tuple)

    def report(self) -> str:
        """Right or not yet, per entry; never the expected numbers."""
        if self.passed:  # no numbers: the book's pages show this output next to the folded solution
            return "\n".join([f"RIGHT {self.name}: all {self.n_cases} entries are right.", *(f"  note: {n}" for n in self.notes)])
        head = f"NOT YET {self.name}: {self.n_passed} of {self.n_cases} entries right."
        return "\n".join([head, *(f"  {e}" for e in self.entries), *(f"  note: {n}" for n in self.notes)])


@dataclass(frozen=True)
class _Case:
    """One call of the student's function and attnlib's expected answer."""

    label: str
    args: tuple[Any, ...]
    expected: np.ndarray
    #: Wrong answers that typical mistakes produce, each with its hint.
    mistakes: tuple[tuple[np.ndarray, str], ...] = ()
    #: Hint used when the values are wrong but match no known mistake.
    hint: str = ""
    #: Expected dtype kind ("b" for boolean), or None for any numbers.
    kind: str | None = None
    #: Boolean array of the expected shape: True where the result must be exactly 0 (masked keys), or None.
    exact_zero: np.ndarray | None = None
    #: Whether this case may be shown in full (inputs, expected, got) when a mistake is not recognised.
    shown: bool = True


def _copy_args(args: tuple[Any, ...]) -> tuple[Any, ...]:
    """Fresh copies, so a function that modifies its input cannot spoil later cases."""
    return tuple(a.copy() if isinstance(a, np.ndarray) else a for a in args)


def _safe_text(obj: Any, limit: int = 300) -> str:
    """``str(obj)``, shortened; never raises, even when ``obj.__str__`` does."""
    try:
        text = str(obj)
    except BaseException as exc:  # noqa: BLE001 - a student's __str__ may raise anything
        try:
            kind = type(exc).__name__
        except BaseException:  # noqa: BLE001
            kind = "an exception"
        return f"(its message could not be shown: str() raised {kind})"
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _exception_text(exc: BaseException) -> str:
    """``'TypeError: message'`` for any exception, never raising."""
    try:
        kind = type(exc).__name__
    except BaseException:  # noqa: BLE001
        kind = "Exception"
    text = _safe_text(exc)
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
        text = _safe_text(text, limit=10_000)
        self.chars += len(text)
        self.lines += text.count("\n")
        if len(self.head) < _PRINTED_LINES_QUOTED:
            self._partial += text
            *done, self._partial = self._partial.split("\n")
            self.head += [line[:120] for line in done][: _PRINTED_LINES_QUOTED - len(self.head)]
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
    past ``time_limit`` seconds (default :data:`TIME_LIMIT_SECONDS`) or
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
        error = f"your function raised {_exception_text(exc)}{_where_student_code_failed(exc)}."
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


def _where_student_code_failed(exc: BaseException) -> str:
    """Where in the student's code the exception came from: their line, and the attnlib function that raised."""
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


@dataclass(frozen=True)
class _Notation:
    """How a check's arguments are called in the chapter, for messages in the chapter's terms."""

    #: The arguments' names, in order (for example ``("Q", "K", "V")``).
    names: tuple[str, ...]
    #: Name -> its sizes in the chapter's words (for example ``"Q": "n_q x d_k"``).
    dims: dict[str, str] = field(default_factory=dict)
    #: Said after a failed matrix product: which rows meet which (a hint, not the formula).
    product_hint: str = ""
    #: (text in the error message, hint): said when the student's function raised such an error.
    error_hints: tuple[tuple[str, str], ...] = ()


_MATMUL = re.compile(r"matmul: Input operand 1 has a mismatch in its core dimension 0.*\(size (\d+) is different from (\d+)\)")
_DOT = re.compile(r"shapes \(([\d, ]*)\) and \(([\d, ]*)\) not aligned")
_BROADCAST = re.compile(r"operands could not be broadcast together with (?:remapped )?shapes ((?:\[?\(?[\d,]*\)?\]? ?)+)")


def _shape_words(shape: tuple[int, ...]) -> str:
    return " x ".join(str(d) for d in shape) if shape else "a single number"


def _inputs_in_words(args: tuple[Any, ...], notation: _Notation) -> str:
    """``'Q is n_q x d_k = 3 x 2, K is ...'`` for the array arguments of a case."""
    parts = []
    for name, arg in zip(notation.names, args):
        if isinstance(arg, np.ndarray):
            dims = notation.dims.get(name)
            parts.append(f"{name} is {dims} = {_shape_words(arg.shape)}" if dims else f"{name} has shape {_shape_words(arg.shape)}")
    return ", ".join(parts)


def _translated_error(exc: BaseException | None, args: tuple[Any, ...], notation: _Notation | None) -> tuple[str, bool]:
    """``(text, replaces)``: numpy's shape or truth-value error said in the chapter's terms, and whether it replaces numpy's words.

    ``text`` is '' when there is nothing to add; ``replaces`` is True for
    numpy's own errors (a product whose sizes do not fit, arrays that do not
    line up, an array used as True or False), whose wording is numpy's internals.
    """
    if exc is None or notation is None or not isinstance(exc, (ValueError, TypeError)):
        return "", False
    text = _safe_text(exc, limit=2000)
    said: list[str] = []
    shapes = _inputs_in_words(args, notation)
    m, d = _MATMUL.search(text), _DOT.search(text)
    if m or d:
        if m:
            rows, cols = int(m.group(1)), int(m.group(2))
            said.append(f"A matrix product L @ R needs as many columns in L as rows in R; here they are {cols} and {rows}.")
        else:
            said.append(
                "A matrix product needs as many columns on the left as rows on the right; "
                f"here the shapes are ({d.group(1)}) and ({d.group(2)})."
            )
        if shapes:
            said.append(f"In this case {shapes}.")
        if notation.product_hint:
            said.append(notation.product_hint)
    elif b := _BROADCAST.search(text):
        said.append(
            f"An entry-by-entry operation (+, -, *, /, a comparison) got arrays of shapes {b.group(1).strip()}, which do not line up. "
            "If one comes from a max or a sum along an axis, that axis is gone unless you pass keepdims=True."
        )
        if shapes:
            said.append(f"In this case {shapes}.")
    elif "truth value of an array" in text:
        said.append(
            "An `if`, `while`, `and`, `or` or `not` got a whole array where it needs a single True or False "
            "(a row of a matrix is an array). Work on whole arrays at once, for example with np.where(condition, a, b), "
            "or test one entry [i, j]."
        )
    replaces = bool(said)
    for needle, hint in notation.error_hints:
        if needle in text:
            said.append(hint)
    return " ".join(said), replaces


def _same(got: np.ndarray, wrong: np.ndarray) -> bool:
    """Whether ``got`` equals the result of a known mistake, NaN where it has NaN (no warnings, no exceptions)."""
    try:
        with np.errstate(all="ignore"):
            g, w = got.astype(np.float64), wrong.astype(np.float64)
            return g.shape == w.shape and bool(np.allclose(g, w, atol=ATOL, rtol=RTOL, equal_nan=True))
    except (TypeError, ValueError):
        return False


def _judge(fn: Callable[..., Any], case: _Case, notation: _Notation | None = None) -> tuple[str | None, StudentCall]:
    """``(None, call)`` if ``fn`` gets ``case`` right, else ``(message, call)``; messages never show the expected values."""
    call = call_student(fn, case.args)
    if call.error is not None:
        extra, replaces = _translated_error(call.exception, case.args, notation)
        if replaces and call.exception is not None:
            where = _where_student_code_failed(call.exception) or " in your function"
            return f"{case.label}: numpy stopped your function{where}. {extra}", call
        return f"{case.label}: {call.error}" + (f" {extra}" if extra else ""), call
    try:
        with np.errstate(all="ignore"), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return _judge_value(call.value, case), call
    except Exception as exc:  # an odd result object (its __array__ or __eq__ raising) must not break the check
        return f"{case.label}: the result could not be compared ({_exception_text(exc)}).", call


def _known_mistake(got: np.ndarray, case: _Case) -> str | None:
    """The hint of the typical mistake(s) that give exactly ``got`` on this case, or None."""
    hints: list[str] = []
    for wrong, hint in case.mistakes:
        if _same(got, wrong) and hint not in hints:
            hints.append(hint)
    if not hints:
        return None
    if len(hints) == 1:
        return hints[0]
    return "on this case your numbers fit more than one typical mistake (the other cases tell them apart): " + " Or: ".join(hints)


def _nan_causes(case: _Case) -> str:
    """Where NaN may come from, judged from this case's inputs (huge numbers, -inf, a mask)."""
    causes = []
    arrays = [np.asarray(a) for a in case.args if isinstance(a, np.ndarray)]
    numbers = [a for a in arrays if a.dtype != bool]
    if any(np.abs(a[np.isfinite(a)]).max(initial=0) > 100 for a in numbers):
        causes.append("exp() of a huge number overflowing to inf")
    if any(np.isneginf(a).any() for a in numbers) or any(a.dtype == bool and not a.all() for a in arrays):
        causes.append("a sum of exponentials that is 0 because every entry along that axis is -inf (0 / 0)")
    return " or ".join(causes) if causes else "a division 0 / 0"


#: Size (entries of the inputs and the result together) up to which a case is small enough to show in full.
_SMALL_CASE_ENTRIES = 24


def _numbers(x: Any) -> str:
    """An array written as rounded nested lists (nan and inf written as such)."""
    arr = np.asarray(x)
    if arr.dtype == bool or np.issubdtype(arr.dtype, np.integer):  # sizes and counts stay whole numbers
        return str(arr.tolist())
    with np.errstate(all="ignore"):
        return str((np.round(arr.astype(np.float64), 4) + 0.0).tolist())  # + 0.0: no -0.0


def _small_case(case: _Case, got: Any, notation: _Notation | None) -> str | None:
    """The case in full (inputs, expected, got), if it is small and may be shown; else None."""
    if not case.shown or case.label.startswith("your own inputs"):
        return None
    try:
        arrays = [np.asarray(a) for a in case.args]
        size = sum(a.size for a in arrays) + case.expected.size
        if size > _SMALL_CASE_ENTRIES:
            return None
        names = notation.names if notation is not None else tuple(f"argument {i + 1}" for i in range(len(arrays)))
        given = ", ".join(f"{n} = {_numbers(a)}" for n, a in zip(names, case.args))
        return f"A small case to work through by hand ({case.label}): {given}; expected {_numbers(case.expected)}, yours {_numbers(got)}."
    except Exception:  # an odd result must not break the report
        return None


def _judge_value(got_raw: Any, case: _Case) -> str | None:
    """None if the returned value is right for ``case``, else a message."""
    if got_raw is None:
        return f"{case.label}: your function returned None. Did you forget the `return` statement?"
    try:
        got = np.asarray(got_raw)
    except Exception as exc:
        return f"{case.label}: the result could not be turned into an array ({_exception_text(exc)})."
    if isinstance(got_raw, np.ma.MaskedArray):
        return f"{case.label}: the result is a numpy.ma masked array; return a plain array (masked keys get weight 0)."
    want = case.expected
    if got.shape != want.shape:
        known = _known_mistake(got, case)
        if known:
            return f"{case.label}: {known}"
        if got.shape == want.shape[::-1] and got.ndim == 2:
            return f"{case.label}: the result has shape {got.shape}, the transpose of the expected shape. Check which side is transposed."
        return f"{case.label}: the result has shape {got.shape} but should have shape {want.shape}. {case.hint}".rstrip()
    if case.kind == "b":
        if got.dtype != bool:
            return (
                f"{case.label}: the result has dtype {got.dtype}; return a boolean array (True = may attend, False = masked), "
                "for example with `.astype(bool)`."
            )
        if np.array_equal(got, want):
            return None
        for wrong, hint in case.mistakes:
            if np.array_equal(got, wrong):
                return f"{case.label}: {hint}"
        return f"{case.label}: some entries are wrong. {case.hint}".rstrip()
    if np.iscomplexobj(got):
        largest = float(np.abs(got.imag).max()) if got.size else 0.0
        return (
            f"{case.label}: the result holds complex numbers (largest imaginary part {largest:.1e}); "
            "every quantity here is real. Find where the complex numbers come from instead of dropping them."
        )
    if not (np.issubdtype(got.dtype, np.number) or got.dtype == bool):
        return f"{case.label}: the result holds {got.dtype} values, not numbers."
    got = got.astype(np.float64)
    if np.allclose(got, want, atol=ATOL, rtol=RTOL):
        if case.exact_zero is not None and np.any(got[case.exact_zero] != 0.0):
            bad = case.exact_zero & (got != 0.0)
            first = tuple(int(i) for i in np.argwhere(bad)[0])
            return (
                f"{case.label}: a masked entry must be exactly 0, but the entry at index {first} is {got[first]:.1e}. "
                "Use -inf for forbidden scores (exp(-inf) is exactly 0), not a large negative number."
            )
        return None
    known = _known_mistake(got, case)
    if known:
        return f"{case.label}: {known}"
    if np.isinf(got).any():
        first = tuple(int(i) for i in np.argwhere(np.isinf(got))[0])
        return f"{case.label}: the result contains inf (first at index {first}); something overflowed. {case.hint}".rstrip()
    if np.isnan(got).any():
        first = tuple(int(i) for i in np.argwhere(np.isnan(got))[0])
        return (
            f"{case.label}: the result contains NaN (first at index {first}). NaN comes from inf - inf or 0 / 0; "
            f"on this case the likely source is {_nan_causes(case)}. {case.hint}"
        ).rstrip()
    return f"{case.label}: {_FALLBACK} {case.hint}".rstrip()


#: The start of the message for wrong values that match no known mistake (then a small case is shown).
_FALLBACK = "the shape is right but some values are wrong."


def _merged(messages: list[str], labels: list[str]) -> list[str]:
    """One message per distinct diagnosis: a repeat on later cases is counted on the first, not printed again."""
    bodies: dict[str, list[str]] = {}
    first_body: dict[str, str] = {}
    order: list[str] = []
    for message in messages:
        label = next((lab for lab in labels if message.startswith(f"{lab}: ")), None)
        body = message[len(label) + 2 :] if label is not None else message
        # the same diagnosis with other sizes (another case's shapes or indices) counts as a repeat
        # (a student's own case is always named on its own)
        own = label is not None and label.startswith("your own inputs")
        key = re.sub(r"\d+", "#", body) if label is not None and not own else f"\0{message}"
        first_body.setdefault(key, body)
        if key not in bodies:
            bodies[key] = []
            order.append(key)
        bodies[key].append(label or "")
    out = []
    for key in order:
        found = bodies[key]
        if key.startswith("\0"):
            out.append(key[1:])
            continue
        more = len(found) - 1
        out.append(f"{found[0]}: {first_body[key]}" + (f" (the same in {more} other case{'s' * (more != 1)})" if more else ""))
    return out


def _run(name: str, fn: Any, cases: Sequence[_Case], verbose: bool, notation: _Notation | None = None) -> CheckResult:
    verbose = as_flag("verbose", verbose)
    if not callable(fn):
        result = CheckResult(name, len(cases), 0, (f"expected a function, got {type(fn).__name__}; pass the function itself, without ().",))
    else:
        messages: list[str] = []
        printed, head, n_passed = 0, [], 0
        shown: tuple[tuple[bool, int], str] | None = None
        unexplained = False
        for i, case in enumerate(cases):
            message, call = _judge(fn, case, notation)
            printed += call.printed_lines
            head += list(call.printed_head)[: _PRINTED_LINES_QUOTED - len(head)]
            if message is None:
                n_passed += 1
            else:
                messages.append(message)
                if call.error is None and _FALLBACK in message:
                    unexplained = True
                if call.error is None:
                    small = _small_case(case, call.value, notation)
                    # the smallest case whose expected result is not one number repeated (more to compare)
                    flat = bool(np.all(case.expected == case.expected.flat[0])) if case.expected.size else True
                    rank = (flat, sum(np.asarray(a).size for a in case.args))
                    if small and (shown is None or rank < shown[0]):
                        shown = (rank, small)
            if call.timed_out and i + 1 < len(cases):
                messages.append(f"the other {len(cases) - i - 1} case(s) were not run, since the function ran out of time.")
                break
        messages = _merged(messages, [c.label for c in cases])
        if unexplained and shown:
            messages.append(shown[1])
        notes: tuple[str, ...] = ()
        if printed:
            quoted = "; ".join(repr(line) for line in head)
            notes = (f"your function printed {printed} line(s) during the checks (not shown; the first: {quoted}).",)
        result = CheckResult(name, len(cases), n_passed, tuple(messages), notes)
    if verbose:
        print(result.report())
    return result


_COLUMN_HINT = "the softmax ran down the columns; each query's row of weights should sum to 1 (axis=-1)."


def _column_softmax(x: np.ndarray) -> np.ndarray:
    """The softmax of each column (a typical mistake), computed without warnings."""
    with np.errstate(all="ignore"):
        e = np.exp(x - x.max(axis=0, keepdims=True))
        return e / e.sum(axis=0, keepdims=True)


def _rng() -> np.random.Generator:
    return np.random.default_rng(2017)


def _own_case(seed: int | None, exercise: str, names: tuple[str, ...]) -> tuple[tuple[Any, ...], ...]:
    """The extra case drawn from a student's own seed (no case without a seed)."""
    if seed is None:
        return ()
    from ..exercises.registry import variant  # late: the chapters' modules import this one

    inputs = variant(exercise, seed).inputs
    return ((f"your own inputs (seed {seed})", *(inputs[n] for n in names)),)


_QKV_NOTATION = _Notation(
    ("Q", "K", "V"),
    {"Q": "n_q x d_k", "K": "n_k x d_k", "V": "n_k x d_v"},
    "The scores pair every query (a row of Q) with every key (a row of K), so K enters that product transposed; "
    "the weights (n_q x n_k) then multiply V (n_k x d_v).",
)

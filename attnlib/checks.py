"""Self-checks for the exercises: run *your* function, compare it with attnlib's.

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
:func:`check_by_hand` does the same for the numbers of a by-hand exercise:
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
import numbers
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

from . import compatibility, heads, variants
from .core import attention, causal_mask, running_example, scaled_scores, self_attention, softmax
from .positional import positional_frequencies, sinusoidal_encoding

__all__ = [
    "CheckResult",
    "ByHandResult",
    "CheckFailed",
    "StudentCall",
    "TIME_LIMIT_SECONDS",
    "call_student",
    "check_by_hand",
    "check_pairwise_dots",
    "check_bilinear_scores",
    "check_softmax",
    "check_attention",
    "check_scaled_scores",
    "check_attention_head",
    "check_split_heads",
    "check_causal_mask",
    "check_masked_weights",
    "check_sinusoidal_encoding",
    "check_softmax_backward",
]

#: Absolute and relative tolerance used to compare with attnlib's result.
ATOL = 1e-6
RTOL = 1e-6

#: Time limit, in seconds, for one call of your function.
TIME_LIMIT_SECONDS: float = 5.0

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
    """A self-check that did not pass, raised by :meth:`CheckResult.require`.

    An ``AssertionError``, so graders treat it like a failed ``assert``. In
    IPython and Jupyter it is shown as one line instead of a traceback: the
    check's report, printed just above it, already says what went wrong.
    """

    def __init__(self, result: CheckResult) -> None:
        self.result = result
        by_hand = isinstance(result, ByHandResult)
        unit, what = ("entries right", "entry") if by_hand else ("checks passed", "case")
        super().__init__(f"{result.name}: {result.n_passed} of {result.n_cases} {unit}; the report above says which {what} to look at.")

    def _render_traceback_(self) -> list[str]:
        """What IPython shows instead of a traceback (one line)."""
        return [f"Not passed yet. {self}"]


@dataclass(frozen=True)
class ByHandResult(CheckResult):
    """The outcome of :func:`check_by_hand`: one case per typed number, each right or not yet.

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
    limit = TIME_LIMIT_SECONDS if time_limit is None else float(time_limit)
    given = _copy_args(args)
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


_PACKAGE_DIR = str(Path(__file__).resolve().parent)
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


def _is_attnlib_file(filename: str) -> bool:
    try:
        return str(Path(filename).resolve()).startswith(_PACKAGE_DIR)
    except (OSError, ValueError):
        return False


def _failure_frames(exc: BaseException) -> tuple[Any, Any]:
    """``(the student's last frame, the first attnlib frame it called)``; either may be None."""
    frames = [f for f in traceback.extract_tb(exc.__traceback__) if not f.filename.endswith("checks.py")]
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
    if arr.dtype == bool:
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
    inputs = variants.implement_inputs(exercise, seed).inputs
    return ((f"your own inputs (seed {seed})", *(inputs[n] for n in names)),)


# --- chapter 1 and 2: scores as dot products ------------------------------------------------


def check_pairwise_dots(fn: Callable[[np.ndarray], Any], verbose: bool = True, seed: int | None = None) -> CheckResult:
    """Check ``fn(X)``, which should return every pairwise dot product ``X X^T``.

    Entry ``[i, j]`` is the dot product of token (row) ``i`` with token ``j``.

    Examples
    --------
    >>> check_pairwise_dots(lambda X: X @ X.T, verbose=False).passed
    True
    >>> check_pairwise_dots(lambda X: X.T @ X, verbose=False).passed
    False
    """
    rng = _rng()
    cases = []
    for label, X in (
        ("the running example X", running_example()),
        ("4 tokens with 3 features", rng.normal(size=(4, 3))),
        ("a single token", np.array([[2.0, -1.0, 0.5]])),
        *_own_case(seed, '1.2', ('X',)),
    ):
        cases.append(
            _Case(
                label,
                (X,),
                X @ X.T,
                mistakes=(
                    (X * X, "you multiplied entry by entry; a dot product multiplies and then sums."),
                    (
                        X.T @ X,
                        "you paired the features (columns), not the tokens (rows): your table has the shape d x d, "
                        "but it is n x n, one entry per pair of tokens.",
                    ),
                    (X @ X.T / np.sqrt(X.shape[1]), "there is no scaling in this exercise: return the plain dot products."),
                ),
                hint="Tokens are the rows of X: entry [i, j] is row i dotted with row j.",
            )
        )
    notation = _Notation(
        ("X",), {"X": "n x d (one row per token)"},
        "Entry [i, j] pairs token i (a row of X) with token j (also a row), so one side of the product enters transposed.",
    )
    return _run("pairwise_dots", fn, cases, verbose, notation)


def check_bilinear_scores(
    fn: Callable[[np.ndarray, np.ndarray, np.ndarray], Any], verbose: bool = True, seed: int | None = None
) -> CheckResult:
    """Check ``fn(X, W_Q, W_K)``, which should return the scores ``(X W_Q)(X W_K)^T``.

    Examples
    --------
    >>> check_bilinear_scores(lambda X, WQ, WK: (X @ WQ) @ (X @ WK).T, verbose=False).passed
    True
    >>> check_bilinear_scores(lambda X, WQ, WK: (X @ WK) @ (X @ WQ).T, verbose=False).passed
    False
    """
    rng = _rng()
    cases = []
    for label, X, WQ, WK in (
        ("the running example with W_Q = W_K = I", running_example(), np.eye(2), np.eye(2)),
        ("the running example with W_Q != W_K", running_example(), np.array([[1.0, 2.0], [0.0, 1.0]]), np.array([[0.5, 0.0], [1.0, -1.0]])),
        ("5 tokens, d_model = 4, d_k = 3", rng.normal(size=(5, 4)), rng.normal(size=(4, 3)), rng.normal(size=(4, 3))),
        ("a single token", np.array([[1.0, -2.0]]), np.array([[1.0], [0.5]]), np.array([[2.0], [1.0]])),
        *_own_case(seed, '2.2', ('X', 'W_Q', 'W_K')),
    ):
        want = compatibility.bilinear_scores(X, compatibility.bilinear_matrix(WQ, WK))
        cases.append(
            _Case(
                label,
                (X, WQ, WK),
                want,
                mistakes=tuple(
                    (w, h)
                    for w, h in (
                        (want.T, "you returned the transpose: rows are queries (X W_Q), columns are keys (X W_K)."),
                        ((X @ WQ) @ (X @ WQ).T, "you used W_Q on both sides: the keys are projected with W_K."),
                        ((X @ WK) @ (X @ WK).T, "you used W_K on both sides: the queries are projected with W_Q."),
                        (want / np.sqrt(WQ.shape[1]), "there is no scaling in this exercise: return the plain scores."),
                    )
                    if not np.allclose(w, want)
                ),
                hint="Project twice: Q = X W_Q and K = X W_K, then every query row meets every key row.",
            )
        )
    notation = _Notation(
        ("X", "W_Q", "W_K"), {"X": "n x d_model", "W_Q": "d_model x d_k", "W_K": "d_model x d_k"},
        "Tokens are rows, so a projection is X W (n x d_model times d_model x d_k); the scores then pair every query row "
        "with every key row, so the key side enters that product transposed.",
    )
    return _run("bilinear_scores", fn, cases, verbose, notation)


# --- chapter 4 and 5: softmax, the formula, scaling -------------------------------------------


def check_softmax(fn: Callable[[np.ndarray], Any], verbose: bool = True, seed: int | None = None) -> CheckResult:
    """Check ``fn(x)``: a softmax along the last axis (each row of a matrix on its own).

    Cases: a vector, a matrix, huge and very negative logits (where the
    plain formula overflows to NaN), a ``-inf`` entry (a masked key, whose
    weight must be exactly 0) and a row with a single token.

    Examples
    --------
    >>> check_softmax(lambda x: np.exp(x) / np.exp(x).sum(axis=-1, keepdims=True), verbose=False).n_passed
    4
    """
    S = scaled_scores(running_example(), running_example())
    subtract_hint = "Subtract the largest entry of each row before exp(); the result is unchanged but exp() no longer overflows."
    keepdims_hint = (
        "a max or a sum along axis=-1 without keepdims=True gives a flat array, which numpy lines up with the COLUMNS "
        "(row i's value lands in column i); pass keepdims=True so it stays one value per row."
    )
    cases = []
    for label, x in (
        ("a vector [1, 0, 0.5]", np.array([1.0, 0.0, 0.5])),
        ("rows at very different scales [[1000, 0], [0, 1]]", np.array([[1000.0, 0.0], [0.0, 1.0]])),
        ("a 3x3 matrix of scores (one softmax per row)", S),
        ("huge logits [1000, 999, 0]", np.array([1000.0, 999.0, 0.0])),
        ("very negative logits [[-1000, -1001], [-1200, -1202]]", np.array([[-1000.0, -1001.0], [-1200.0, -1202.0]])),
        ("a row with a -inf entry (a masked key)", np.array([[0.0, 0.7071, -np.inf]])),
        ("a single token [[2.5]]", np.array([[2.5]])),
        *_own_case(seed, '4.2', ('logits',)),
    ):
        want = softmax(x)
        mistakes = []
        if x.ndim == 2 and x.shape[0] > 1:
            with np.errstate(all="ignore"):
                e = np.exp(x - x.max())
                mistakes.append((e / e.sum(axis=0, keepdims=True), "each column sums to 1, but each ROW should: normalize along axis=-1."))
                mistakes.append((e / e.sum(), "the whole matrix sums to 1, but each row should: sum along axis=-1 with keepdims=True."))
                mistakes.append((
                    e / e.sum(axis=-1, keepdims=True),
                    "you subtracted the largest entry of the whole array; each row needs its own largest entry, "
                    "or a row far below the overall maximum turns into 0 / 0.",
                ))
                if x.shape[0] == x.shape[1]:  # a flat max or sum broadcasts along the columns without an error
                    e_flat = np.exp(x - x.max(axis=-1))
                    e_rows = np.exp(x - x.max(axis=-1, keepdims=True))
                    for wrong in (e_flat / e_flat.sum(axis=-1, keepdims=True), e_rows / e_rows.sum(axis=-1), e_flat / e_flat.sum(axis=-1)):
                        mistakes.append((wrong, keepdims_hint))
        mistakes.append(
            (0.5 * (1 + np.tanh(x / 2)), "this is the logistic sigmoid of each entry; softmax divides by the sum over the row.")
        )
        hint = subtract_hint if np.abs(x[np.isfinite(x)]).max() > 100 else "exp() every entry, then divide by the row's sum."
        if np.isneginf(x).any():
            hint = "exp(-inf) is 0, so a -inf logit must get weight exactly 0. " + subtract_hint
        mistakes = [m for m in mistakes if not _same(m[0], want)]
        # the vector case is exercise 7.1's book question, so it is never shown with its expected weights
        shown = label != "a vector [1, 0, 0.5]"
        cases.append(_Case(label, (x,), want, tuple(mistakes), hint, exact_zero=np.isneginf(x), shown=shown))
    notation = _Notation(("x",), {"x": "n_q x n_k (one row per query)"})
    return _run("softmax", fn, cases, verbose, notation)


_QKV_NOTATION = _Notation(
    ("Q", "K", "V"),
    {"Q": "n_q x d_k", "K": "n_k x d_k", "V": "n_k x d_v"},
    "The scores pair every query (a row of Q) with every key (a row of K), so K enters that product transposed; "
    "the weights (n_q x n_k) then multiply V (n_k x d_v).",
)


def check_attention(fn: Callable[[np.ndarray, np.ndarray, np.ndarray], Any], verbose: bool = True, seed: int | None = None) -> CheckResult:
    """Check ``fn(Q, K, V)``: the output ``softmax(Q K^T / sqrt(d_k)) V`` of scaled dot-product attention.

    Examples
    --------
    >>> def my_attention(Q, K, V):
    ...     return softmax(Q @ K.T / np.sqrt(K.shape[1])) @ V
    >>> check_attention(my_attention, verbose=False).passed
    True
    """
    rng = _rng()
    X = running_example()
    cases = []
    for label, Q, K, V in (
        ("the running example (Q = K = V = X)", X, X, X),
        ("2 queries, 4 keys, d_k = 3, d_v = 5", rng.normal(size=(2, 3)), rng.normal(size=(4, 3)), rng.normal(size=(4, 5))),
        ("large scores (entries of size 30)", 30 * rng.normal(size=(3, 4)), 30 * rng.normal(size=(3, 4)), rng.normal(size=(3, 2))),
        ("a single key and value", rng.normal(size=(2, 3)), rng.normal(size=(1, 3)), np.array([[1.0, -1.0]])),
        *_own_case(seed, '4.3', ('Q', 'K', 'V')),
    ):
        r = attention(Q, K, V)
        mistakes = [
            (attention(Q, K, V, scale=False).output, "this is the output without the 1/sqrt(d_k) scaling."),
            (attention(Q, K, V, scale=float(K.shape[1])).output, "you divided by d_k; divide by its square root."),
            (
                attention(Q, K, V, scale=float(np.sqrt(K.shape[0]))).output,
                "you divided by the square root of the number of keys; d_k is the number of columns of K.",
            ),
            (r.weights, "these are the attention weights (n_q x n_k); the output multiplies them by V."),
            (_column_softmax(Q @ K.T / np.sqrt(K.shape[1])) @ V, _COLUMN_HINT),
        ]
        cases.append(
            _Case(
                label,
                (Q, K, V),
                r.output,
                tuple(m for m in mistakes if not _same(m[0], r.output)),
                "Go through the exercise's formula step by step: the scores, the divisor (d_k = number of columns of K), "
                "a softmax per row, then V. Large scores need a stable softmax.",
            )
        )
    return _run("attention", fn, cases, verbose, _QKV_NOTATION)


def check_scaled_scores(fn: Callable[[np.ndarray, np.ndarray], Any], verbose: bool = True, seed: int | None = None) -> CheckResult:
    """Check ``fn(Q, K)``: the scaled scores ``Q K^T / sqrt(d_k)``.

    Examples
    --------
    >>> check_scaled_scores(lambda Q, K: Q @ K.T / np.sqrt(Q.shape[1]), verbose=False).passed
    True
    >>> check_scaled_scores(lambda Q, K: Q @ K.T, verbose=False).passed
    False
    """
    rng = _rng()
    X = running_example()
    cases = []
    for label, Q, K in (
        ("the running example (Q = K = X)", X, X),
        ("2 queries, 5 keys, d_k = 4", rng.normal(size=(2, 4)), rng.normal(size=(5, 4))),
        ("6 queries, 3 keys, d_k = 9", rng.normal(size=(6, 9)), rng.normal(size=(3, 9))),
        ("a single token, d_k = 3", np.array([[1.0, 2.0, -1.0]]), np.array([[0.5, 0.5, 2.0]])),
        *_own_case(seed, '5.2', ('Q', 'K')),
    ):
        raw = scaled_scores(Q, K, scale=False)
        want = scaled_scores(Q, K)
        mistakes = [
            (raw, "these are the raw scores Q K^T: you still need to divide by sqrt(d_k)."),
            (raw / Q.shape[1], "you divided by d_k; the standard deviation of the score is sqrt(d_k), so divide by that."),
            (raw / np.sqrt(K.shape[0]), "you divided by the square root of the number of keys; d_k is the number of columns of Q and K."),
            (
                raw / np.sqrt(Q.shape[0]),
                "you divided by the square root of the number of queries; d_k is the number of columns of Q and K.",
            ),
        ]
        cases.append(
            _Case(
                label,
                (Q, K),
                want,
                tuple(m for m in mistakes if not _same(m[0], want)),
                "Every query (row of Q) meets every key (row of K); then scale.",
            )
        )
    return _run("scaled_scores", fn, cases, verbose, _QKV_NOTATION)


# --- chapter 6 and 8: one head, many heads ----------------------------------------------------


def check_attention_head(
    fn: Callable[[np.ndarray, np.ndarray, np.ndarray, np.ndarray], Any], verbose: bool = True, seed: int | None = None
) -> CheckResult:
    """Check ``fn(X, W_Q, W_K, W_V)``: the output of one self-attention head.

    It should project ``Q = X W_Q``, ``K = X W_K``, ``V = X W_V`` and return
    ``softmax(Q K^T / sqrt(d_k)) V``, shape ``(n, d_v)``.

    Examples
    --------
    >>> from attnlib.core import self_attention
    >>> check_attention_head(lambda X, a, b, c: self_attention(X, a, b, c).output, verbose=False).passed
    True
    """
    rng = _rng()
    X = running_example()
    I2 = np.eye(2)
    cases = []
    for label, Xc, WQ, WK, WV in (
        ("the running example with identity projections", X, I2, I2, I2),
        ("the running example with W_V = [[1, 0], [1, 1]]", X, I2, I2, np.array([[1.0, 0.0], [1.0, 1.0]])),
        (
            "5 tokens, d_model = 4, d_k = 3, d_v = 2",
            rng.normal(size=(5, 4)),
            rng.normal(size=(4, 3)),
            rng.normal(size=(4, 3)),
            rng.normal(size=(4, 2)),
        ),
        ("a single token", np.array([[0.3, -0.7]]), rng.normal(size=(2, 2)), rng.normal(size=(2, 2)), rng.normal(size=(2, 3))),
        *_own_case(seed, '6.2', ('X', 'W_Q', 'W_K', 'W_V')),
    ):
        head = self_attention(Xc, WQ, WK, WV)
        Q, K, V, want = head.Q, head.K, head.V, head.output
        mistakes = [
            (attention(Q, K, V, scale=False).output, "this is the output without the 1/sqrt(d_k) scaling."),
            (attention(Q, K, V).weights, "this looks like the attention weights; multiply them by V to get the output."),
            (attention(Xc, Xc, Xc).output, "this is attention on X itself; project X with W_Q, W_K and W_V first."),
            (attention(Q, K, Xc).output, "the weights are right but you mixed rows of X; mix the values V = X W_V."),
            (attention(Q, Q, V).output, "you used W_Q for the keys as well: the keys are K = X W_K."),
            (_column_softmax(Q @ K.T / np.sqrt(K.shape[1])) @ V, _COLUMN_HINT),
        ]
        if np.allclose(mistakes[2][0], mistakes[3][0]):
            # with W_Q = W_K = I (or one token) both give the same numbers, and only the second is true of both
            del mistakes[2]
        cases.append(
            _Case(
                label,
                (Xc, WQ, WK, WV),
                want,
                tuple(m for m in mistakes if not _same(m[0], want)),
                "Project, score, scale by sqrt(d_k), softmax each row, multiply by V.",
            )
        )
    notation = _Notation(
        ("X", "W_Q", "W_K", "W_V"),
        {"X": "n x d_model", "W_Q": "d_model x d_k", "W_K": "d_model x d_k", "W_V": "d_model x d_v"},
        "Tokens are rows, so a projection is X W (n x d_model times d_model x d_k); the scores pair every query row "
        "with every key row, so K enters that product transposed; the weights (n x n) then multiply V (n x d_v).",
    )
    return _run("attention_head", fn, cases, verbose, notation)


def check_split_heads(fn: Callable[[np.ndarray, int], Any], verbose: bool = True, seed: int | None = None) -> CheckResult:
    """Check ``fn(M, n_heads)``: the columns of ``M`` cut into ``n_heads`` consecutive blocks.

    The result has shape ``(n_heads, rows, d_model / n_heads)``; block ``r``
    is ``M[:, r*d_head:(r+1)*d_head]``.

    Examples
    --------
    >>> check_split_heads(lambda M, h: np.stack(np.split(M, h, axis=1)), verbose=False).passed
    True
    """
    rng = _rng()
    cases = []
    for label, M, h in (
        ("a 2x4 matrix into 2 heads", np.arange(8.0).reshape(2, 4), 2),
        ("a 3x6 matrix into 3 heads", rng.normal(size=(3, 6)), 3),
        ("an 8x8 weight matrix into 4 heads", rng.normal(size=(8, 8)), 4),
        ("one head (nothing to split)", rng.normal(size=(3, 4)), 1),
        *_own_case(seed, '8.2', ('M', 'n_heads')),
    ):
        want = heads.split_heads(M, h)
        d = M.shape[1] // h
        interleaved = np.stack([M[:, r::h] for r in range(h)])
        rows = np.stack(np.split(M, h, axis=0)) if M.shape[0] % h == 0 else None
        mistakes = [(interleaved, "you took every h-th column; each head owns a block of d_head CONSECUTIVE columns.")]
        if rows is not None:
            mistakes.append((rows, "you split the rows (tokens); split the columns (features) instead."))
        mistakes.append(
            (M.reshape(h, M.shape[0], d), "a plain reshape mixes rows and columns; take column blocks M[:, r*d_head:(r+1)*d_head].")
        )
        mistakes.append(
            (M.reshape(M.shape[0], h, d), "the axes are (n, n_heads, d_head); the heads axis comes first: (n_heads, n, d_head).")
        )
        cases.append(
            _Case(
                label,
                (M, h),
                want,
                tuple(m for m in mistakes if not _same(m[0], want)),
                "The result is (n_heads, rows, d_head): stack the column blocks.",
            )
        )
    return _run("split_heads", fn, cases, verbose, _Notation(("M", "n_heads"), {"M": "n x d_model"}))


# --- chapter 9: masks -------------------------------------------------------------------------


def check_causal_mask(fn: Callable[[int], Any], verbose: bool = True, seed: int | None = None) -> CheckResult:
    """Check ``fn(n)``: a boolean ``(n, n)`` causal mask, True where query ``i`` may attend to key ``j <= i``.

    Examples
    --------
    >>> check_causal_mask(lambda n: np.tril(np.ones((n, n), dtype=bool)), verbose=False).passed
    True
    >>> check_causal_mask(lambda n: np.triu(np.ones((n, n), dtype=bool)), verbose=False).passed
    False
    """
    cases = []
    own = () if seed is None else variants.implement_inputs("9.2", seed).sizes
    for n in (3, 1, 6, *own):
        want = causal_mask(n)
        label = "n = 1 (a single token)" if n == 1 else f"n = {n}"
        mistakes = (
            (want.T, "this is the transpose: row i is the query and may see keys j <= i, the lower triangle."),
            (np.tril(want, -1), "the diagonal is False, but a token may attend to itself."),
            (~want, "True and False are swapped: True means 'may attend'."),
        )
        cases.append(
            _Case(
                label,
                (n,),
                want,
                tuple(m for m in mistakes if not np.array_equal(m[0], want)),
                "Row i is query i; it may see keys 0..i.",
                "b",
            )
        )
    return _run("causal_mask", fn, cases, verbose, _Notation(("n",)))


def check_masked_weights(fn: Callable[[np.ndarray, np.ndarray], Any], verbose: bool = True, seed: int | None = None) -> CheckResult:
    """Check ``fn(scores, allowed)``: attention weights where forbidden keys get exactly 0.

    ``allowed`` is boolean (True = may attend); each row of the result sums
    to 1 over its allowed keys.

    Examples
    --------
    >>> def my_masked(S, allowed):
    ...     return softmax(np.where(allowed, S, -np.inf))
    >>> check_masked_weights(my_masked, verbose=False).passed
    True
    """
    rng = _rng()
    S = scaled_scores(running_example(), running_example())
    cases = []
    for label, scores, allowed in (
        ("the running example with a causal mask", S, causal_mask(3)),
        ("2 queries, 4 keys, a padding mask", rng.normal(size=(2, 4)), np.array([[True, True, False, True], [True, False, False, True]])),
        ("huge scores", 500 * rng.normal(size=(3, 3)), causal_mask(3)),
        ("a single token", np.array([[1.5]]), np.array([[True]])),
        *_own_case(seed, '9.3', ('scores', 'allowed')),
    ):
        want = softmax(np.where(allowed, scores, -np.inf))
        after = softmax(scores) * allowed
        with np.errstate(all="ignore"):
            masked = np.where(allowed, scores, -np.inf)
            e = np.exp(masked - masked.max(axis=0, keepdims=True))
            by_column = e / e.sum(axis=0, keepdims=True)
            swapped = np.where(allowed, -np.inf, scores)
            e = np.exp(swapped - swapped.max(axis=-1, keepdims=True))
            inverted = e / e.sum(axis=-1, keepdims=True)
        mistakes = (
            (after, "you masked after the softmax, so the rows no longer sum to 1; mask the scores (with -inf) before it."),
            (softmax(scores), "nothing is masked: forbidden keys must get weight exactly 0."),
            (
                softmax(scores * allowed),
                "you set the forbidden scores to 0, but a score of 0 still gets weight (exp(0) = 1); a forbidden score must be -inf.",
            ),
            (by_column, "each COLUMN sums to 1: the softmax runs along each row (axis=-1), over the keys one query may see."),
            (
                inverted,
                "allowed and forbidden are swapped: allowed is True where the query MAY attend, so the keys to hide are where it is False.",
            ),
        )
        cases.append(
            _Case(
                label,
                (scores, allowed),
                want,
                tuple(m for m in mistakes if not _same(m[0], want)),
                "Replace forbidden scores by -inf, then take a stable softmax of each row.",
                exact_zero=~allowed,
            )
        )
    notation = _Notation(
        ("scores", "allowed"),
        {"scores": "n_q x n_k", "allowed": "n_q x n_k (True = may attend)"},
        error_hints=((
            "entirely -inf",
            "A row of what you passed there has no finite score left, so that query could attend to nothing. allowed is True "
            "where a query MAY attend: the keys to hide are where it is False, and every row of allowed has at least one True.",
        ),),
    )
    return _run("masked_weights", fn, cases, verbose, notation)


# --- chapter 11: positions --------------------------------------------------------------------


def check_sinusoidal_encoding(fn: Callable[[int, int], Any], verbose: bool = True, seed: int | None = None) -> CheckResult:
    """Check ``fn(n_positions, d_model)``: the sinusoidal table ``PE`` (even columns sine, odd columns cosine).

    ``PE[t, 2i] = sin(t / 10000^(2i/d_model))``, ``PE[t, 2i+1] = cos(...)`` with
    positions ``t = 0 .. n_positions-1``.

    Examples
    --------
    >>> check_sinusoidal_encoding(sinusoidal_encoding, verbose=False).passed
    True
    """
    cases = []
    mine = None if seed is None else variants.implement_inputs("11.2", seed)
    own = () if mine is None else ((mine.n_positions, mine.d_model),)
    for n, d in ((3, 2), (1, 4), (6, 8), (50, 16), (4, 5), *own):
        want = sinusoidal_encoding(n, d)
        t = np.arange(n)[:, None]
        i = np.arange((d + 1) // 2)[None, :]  # pairs; with an odd d_model the last one has only its sine column
        angles = t * positional_frequencies(d)[None, :]
        swapped = np.empty_like(want)
        swapped[:, 0::2], swapped[:, 1::2] = np.cos(angles), np.sin(angles[:, : d // 2])
        wrong_exp = np.empty_like(want)
        wrong_exp[:, 0::2] = np.sin(t / 10000 ** (i / d))
        wrong_exp[:, 1::2] = np.cos(t / 10000 ** (i / d))[:, : d // 2]
        shifted = sinusoidal_encoding(n + 1, d)[1:]
        halves = np.concatenate([want[:, 0::2], want[:, 1::2]], axis=1)
        mistakes = (
            (swapped, "sine and cosine are swapped: even columns (0, 2, ...) hold the sine."),
            (wrong_exp, "the exponent should be 2i/d_model, where i counts sine/cosine PAIRS."),
            (shifted, "positions start at t = 0, not 1."),
            (halves, "all sines then all cosines: interleave them (sine in column 2i, cosine in column 2i+1)."),
        )
        label = "a single position" if n == 1 else f"{n} positions, d_model = {d}" + (" (odd)" if d % 2 else "")
        cases.append(
            _Case(
                label,
                (n, d),
                want,
                tuple(m for m in mistakes if not _same(m[0], want)),
                "Column pair i uses the frequency 1/10000^(2i/d_model)."
                + (" With an odd d_model the last column is a sine without its cosine partner." if d % 2 else ""),
            )
        )
    return _run("sinusoidal_encoding", fn, cases, verbose, _Notation(("n_positions", "d_model")))


# --- chapter 14: the backward pass ------------------------------------------------------------


def check_softmax_backward(fn: Callable[[np.ndarray, np.ndarray], Any], verbose: bool = True) -> CheckResult:
    """Gradient check for ``fn(weights, d_weights)``: the row-softmax backward ``dL/dS``.

    ``weights`` is ``A = softmax(S)`` (one softmax per row) and ``d_weights``
    is ``dL/dA``; the answer is ``dL/dS``. Each case's expected answer is
    computed by central finite differences of ``L(S) = sum(d_weights *
    softmax(S))``, not by attnlib's own formula, so this is a gradient check.
    Cases: the running example's scores, a masked row (a weight of exactly 0
    must get gradient exactly 0 there), a nearly one-hot row and a single key.

    Examples
    --------
    >>> def my_backward(A, dA):
    ...     return A * (dA - np.sum(dA * A, axis=-1, keepdims=True))
    >>> check_softmax_backward(my_backward, verbose=False).passed
    True
    >>> check_softmax_backward(lambda A, dA: A * dA, verbose=False).passed
    False
    """
    from .backward import central_difference

    rng = np.random.default_rng(14)
    S = scaled_scores(running_example(), running_example())
    cases = []
    for label, scores in (
        ("the running example's scaled scores", S),
        ("2 queries, 4 keys, random scores", rng.normal(size=(2, 4))),
        ("a masked row (one key has score -inf)", np.array([[0.3, -np.inf, 1.1], [0.0, 0.5, -0.5]])),
        ("a nearly one-hot row (scores 12 apart)", np.array([[12.0, 0.0, 0.0]])),
        ("a single key", np.array([[0.7], [-2.0]])),
    ):
        A = softmax(scores)
        dA = np.round(rng.normal(size=A.shape), 3)
        allowed = np.isfinite(scores)

        def loss(s: np.ndarray, dA: np.ndarray = dA, allowed: np.ndarray = allowed) -> float:
            return float(np.sum(dA * softmax(np.where(allowed, s, -np.inf))))

        want = central_difference(loss, np.where(allowed, scores, 0.0), eps=1e-6)
        want[~allowed] = 0.0  # a masked score is not a variable: it stays -inf
        mistakes = (
            (A * dA, "you left out the second term: when one score moves, every weight of its row moves, not only its own."),
            (
                dA - np.sum(dA * A, axis=-1, keepdims=True),
                "multiply the bracket by A: each weight scales its own entry of the result.",
            ),
            (A * (dA - np.sum(dA * A, axis=0, keepdims=True)), "sum over each ROW (axis=-1, keepdims=True), not over columns."),
            (
                A * (dA - np.sum(dA, axis=-1, keepdims=True)),
                "the sum inside the bracket is weighted: each entry of dA counts with its own weight.",
            ),
        )
        cases.append(
            _Case(
                label,
                (A, dA),
                want,
                tuple(m for m in mistakes if m[0].shape != want.shape or not np.allclose(m[0], want, atol=ATOL)),
                "Derive it for one row of three weights first (the chapter's backward equation), then check it on the small case.",
                shown=not label.startswith("a nearly one-hot row"),  # exercise 14.1 asks that by hand
            )
        )
    return _run("softmax_backward", fn, cases, verbose, _Notation(("A", "dA"), {"A": "n_q x n_k", "dA": "n_q x n_k"}))

# --- chapter 15: long sequences ---------------------------------------------------------------

__all__ += ["check_two_block_normaliser"]


def _two_block_mistakes(s1: np.ndarray, s2: np.ndarray) -> list[tuple[np.ndarray, str]]:
    """The (m, l) pairs that typical mistakes give, computed without warnings; cases where a mistake is NaN are left out."""
    with np.errstate(all="ignore"):
        m1, m2 = s1.max(), s2.max()
        m = max(m1, m2)
        l1 = np.exp(s1 - m1).sum()
        tail = np.exp(s2 - m).sum()
        candidates = [
            (
                np.array([m, l1 + tail]),
                "you added l1 without rescaling it: when the maximum grows from m1 to m, multiply l1 by exp(m1 - m).",
            ),
            (np.array([m, l1 * np.exp(m - m1) + tail]), "the rescaling factor is upside down: it is exp(m1 - m), never larger than 1."),
            (
                np.array([m, np.exp(np.concatenate([s1, s2])).sum()]),
                "l should be the sum of exp(s - m), relative to the maximum m, not of exp(s).",
            ),
            (np.array([m2, l1 + np.exp(s2 - m2).sum()]), "m must be the maximum over BOTH blocks, max(m1, m2)."),
        ]
    return [(v, hint) for v, hint in candidates if np.all(np.isfinite(v))]


def check_two_block_normaliser(fn: Callable[[np.ndarray, np.ndarray], Any], verbose: bool = True) -> CheckResult:
    """Check ``fn(s1, s2)``: the online softmax over two blocks of scores, returning ``(m, l)``.

    ``m`` is the largest score of both blocks and ``l = sum_j exp(s_j - m)``
    over both, computed block by block: first ``m1`` and ``l1`` of block 1,
    then block 2 folded in with the rescaling factor ``exp(m1 - m)``. The
    weights are then ``exp(s - m) / l``. Cases include the running example,
    huge scores (where ``exp(s)`` overflows) and masked keys (``-inf``), also
    a first block that is masked entirely.

    Examples
    --------
    >>> def my_normaliser(s1, s2):
    ...     m1 = s1.max()
    ...     l1 = np.exp(s1 - m1).sum() if m1 > -np.inf else 0.0
    ...     m = max(m1, s2.max())
    ...     return m, l1 * np.exp(m1 - m) + np.exp(s2 - m).sum()
    >>> check_two_block_normaliser(my_normaliser, verbose=False).passed
    True
    >>> def no_rescaling(s1, s2):
    ...     m = max(s1.max(), s2.max())
    ...     return m, np.exp(s1 - s1.max()).sum() + np.exp(s2 - m).sum()
    >>> check_two_block_normaliser(no_rescaling, verbose=False).passed
    False
    """
    from .blocked import online_softmax_step

    S = scaled_scores(running_example(), running_example())
    cases = []
    for label, s1, s2 in (
        ("the running example, query x2, blocks [x1] and [x2, x3]", S[1, :1], S[1, 1:]),
        ("the largest score in the first block", np.array([2.0, 1.0]), np.array([0.5])),
        ("huge scores [1000, 999] and [1001]", np.array([1000.0, 999.0]), np.array([1001.0])),
        ("very negative scores [-1000] and [-1002, -999]", np.array([-1000.0]), np.array([-1002.0, -999.0])),
        ("a masked key (-inf) in the second block", np.array([0.5]), np.array([-np.inf, 1.5])),
        ("a first block that is masked entirely", np.array([-np.inf, -np.inf]), np.array([0.3, -0.2])),
    ):
        m, l, _, _ = online_softmax_step(-np.inf, 0.0, s1)
        m, l, _, _ = online_softmax_step(m, l, s2)
        want = np.array([float(m), float(l)])
        hint = "Return the pair (m, l). Work out m1 and l1 of block 1 alone, then fold block 2 in with the chapter's update equation."
        if np.isneginf(s1).all():
            hint += " A block that is masked entirely has m1 = -inf and l1 = 0: avoid exp(-inf - (-inf)), which is NaN."
        mistakes = tuple((w, h) for w, h in _two_block_mistakes(s1, s2) if not np.allclose(w, want))
        cases.append(_Case(label, (s1, s2), want, mistakes, hint))
    return _run("two_block_normaliser", fn, cases, verbose, _Notation(("s1", "s2")))


# --- the by-hand exercises ----------------------------------------------------------------------

#: Differences up to which a typed number counts as "close" (rounded too early or too coarsely), not as wrong.
_CLOSE = 0.0051


def _fixed_by_hand(exercise: str) -> dict[str, Any] | None:
    """Expected answers of the by-hand exercises whose numbers do not vary per student (chapters 14 and 15)."""
    if exercise == "14.1":
        from .backward import softmax_backward

        return {"ds_one_hot": softmax_backward([[1.0, 0.0, 0.0]], [[3.0, -1.0, 2.0]])[0].tolist()}
    if exercise == "15.1":
        from .cost import score_matrix_bytes

        layer = score_matrix_bytes(16384, dtype="bfloat16", heads=32)
        return {"layer_bytes": layer, "layer_gib": layer / 2**30}
    return None


def _by_hand_expected(exercise: str, seed: int | None) -> dict[str, Any]:
    fixed = _fixed_by_hand(exercise)
    if fixed is not None:
        if seed is not None:
            variants.as_seed("seed", seed)
        return fixed
    known = sorted(n for n, e in variants.EXERCISES.items() if e.kind == "by-hand") + ["14.1", "15.1"]
    if not isinstance(exercise, str) or exercise not in variants.EXERCISES or variants.EXERCISES[exercise].kind != "by-hand":
        raise ValueError(f"exercise must be a by-hand exercise, one of {known}; got {exercise!r}")
    return variants.answers(variants.variant(exercise, seed))


def _typed_entries(name: str, typed: Any, want: np.ndarray) -> list[tuple[str, Any]] | str:
    """The typed value as ``(label, entry)`` pairs in the expected shape, or a message saying why it is not."""
    if isinstance(typed, str):
        return (
            f"{name} is the text {_safe_text(typed, 40)!r}, not a number: "
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


def _entry_verdict(label: str, value: Any, want: float) -> tuple[bool, str]:
    """(right?, the line for it): right, or not yet with the reason; never the expected value."""
    if isinstance(value, str):
        return False, f"{label}: not yet; it is the text {_safe_text(value, 40)!r}. Type the number itself, without quotes."
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Real):
        return False, f"{label}: not yet; it is {type(value).__name__}, not a number."
    try:
        number = float(value)
    except (TypeError, ValueError, OverflowError):
        return False, f"{label}: not yet; it could not be read as a number."
    shown = str(int(value)) if isinstance(value, (int, np.integer)) else _safe_text(float(value), 40)
    if not np.isfinite(number):
        return False, f"{label} = {shown}: not yet; type a finite number."
    error = abs(number - want)
    if error <= variants.TOLERANCE:
        return True, f"{label} = {shown}: right."
    if error <= _CLOSE and error <= max(abs(want), 1.0):
        return False, f"{label} = {shown}: not yet, but close. Give it exactly, or to four decimals, and round only at the end."
    if want != 0 and abs(number + want) <= variants.TOLERANCE:
        return False, f"{label} = {shown}: not yet; check the sign."
    return False, f"{label} = {shown}: not yet."


def check_by_hand(exercise: str, answers: Any, seed: int | None = None, verbose: bool = True) -> ByHandResult:
    """Check the numbers typed for a by-hand exercise: each entry right or not yet, never the expected value.

    ``answers`` maps the answer cell's names to what was typed; in a
    notebook, pass ``globals()``. Each number is compared with attnlib's
    answer for the same inputs (the student's own with ``seed``) within
    the four decimals the exercises ask for, the tolerance the grader uses.
    A number that is off by a little more (rounded too coarsely or too
    early) is called close; a number typed as text is named as such.

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
    """
    expected = _by_hand_expected(exercise, seed)
    if not hasattr(answers, "get") or not hasattr(answers, "__contains__"):
        raise TypeError(f"answers must be a mapping from names to typed values (in a notebook, globals()); got {type(answers).__name__}")
    name = f"{exercise} ({', '.join(expected)})"
    entries: list[str] = []
    n_cases = n_right = 0
    for key, want_raw in expected.items():
        want = np.asarray(want_raw, dtype=float)
        if key not in answers:
            n_cases += want.size
            entries.append(f"{key} is not defined yet: type it in the answer cell above and run that cell.")
            continue
        typed = _typed_entries(key, answers[key], want)
        if isinstance(typed, str):
            n_cases += want.size
            entries.append(typed)
            continue
        for (label, value), w in zip(typed, want.ravel()):
            ok, line = _entry_verdict(label, value, float(w))
            n_cases += 1
            n_right += ok
            entries.append(line)
    result = ByHandResult(name, n_cases, n_right, tuple(e for e in entries if not e.endswith(": right.")), (), tuple(entries))
    if verbose:
        print(result.report())
    return result

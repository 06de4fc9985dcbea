"""The engine of the self-checks: cases, the comparator, and the run of a check over its cases.

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

Every check returns a :class:`~attnlib.exercises.results.CheckResult`, which is truthy exactly when all
cases passed. The test cells end in ``check_softmax(my_softmax).require()``,
which raises :class:`~attnlib.exercises.results.CheckFailed` when a case failed: one line under the
report in a notebook, no traceback, and a failed cell for a grader.
``check_by_hand`` does the same for the numbers of a by-hand exercise:
right or not yet, number by number, without the expected value.

The checks of the implement exercises take an optional ``seed``: with a
student's seed (``attnlib.variants``) they add one case drawn from that
student's own inputs, judged like the others.

Every call of your function goes through one place, :func:`~attnlib.exercises.sandbox.call_student`:

* it gets fresh copies of the inputs, and a function that changes its input
  arrays in place fails the case (say ``x = x - m``, not ``x -= m``);
* it has a time limit of ``TIME_LIMIT_SECONDS`` seconds per call; a
  function that takes longer fails, and the remaining cases are skipped;
* whatever it prints is captured and summarised in one note, so a print in
  a loop cannot flood the notebook;
* any exception it raises is reported as text, even one whose message
  itself cannot be shown.

Results must be real numbers (a complex result fails, however small its
imaginary part), free of NaN and inf, and where the text says a weight is
*exactly* 0 (a masked key) it is compared with 0 exactly, not within the
tolerance. New checks reuse all of this by building ``Case`` objects
and calling ``run_cases()``.

Examples
--------
>>> doubling = [Case("x = 1", (1.0,), np.array(2.0)), Case("x = -3", (-3.0,), np.array(-6.0))]
>>> run_cases("double", lambda x: 2 * x, doubling, verbose=False).passed
True
>>> run_cases("double", lambda x: x + 1, doubling, verbose=False).messages[0]
'x = -3: the shape is right but some values are wrong.'
"""

from __future__ import annotations

import ast
import functools
import inspect
import linecache
import re
import types
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .._validate import as_array, as_flag, as_instance, as_seed, as_text
from .registry import EXERCISES, variant
from .results import ATOL, RTOL, CheckResult
from .runner import unavailable
from .sandbox import PRINTED_LINES_QUOTED, StudentCall, call_student, exception_text, safe_text, where_student_code_failed

__all__ = [
    "COLUMN_HINT",
    "QKV_NOTATION",
    "SELF_CHECK_RAISES",
    "Case",
    "Notation",
    "cases_of",
    "check_rng",
    "column_softmax",
    "judge_call",
    "judge_value",
    "merge_messages",
    "not_in_grader",
    "own_case",
    "run_cases",
    "same_values",
    "with_self_check_raises",
]


@dataclass(frozen=True)
class Case:
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
    #: Boolean array of the expected shape, True where the result must be exactly 0 (masked keys), or None.
    exact_zero: np.ndarray | None = None
    #: Whether this case may be shown in full (inputs, expected, got) when a mistake is not recognised.
    shown: bool = True


@dataclass(frozen=True)
class Notation:
    """How a check's arguments are called in the chapter, for messages in the chapter's terms."""

    #: The arguments' names, in order (for example ``("Q", "K", "V")``).
    names: tuple[str, ...]
    #: Name -> its sizes in the chapter's words (for example ``"Q": "n_q x d_k"``).
    dims: dict[str, str] = field(default_factory=dict)
    #: Said after a failed matrix product, to tell which rows meet which (a hint, not the formula).
    product_hint: str = ""
    #: Pairs of (text in the error message, hint), said when the student's function raised such an error.
    error_hints: tuple[tuple[str, str], ...] = ()


_MATMUL = re.compile(r"matmul: Input operand 1 has a mismatch in its core dimension 0.*\(size (\d+) is different from (\d+)\)")
_DOT = re.compile(r"shapes \(([\d, ]*)\) and \(([\d, ]*)\) not aligned")
_BROADCAST = re.compile(r"operands could not be broadcast together with (?:remapped )?shapes ((?:\[?\(?[\d,]*\)?\]? ?)+)")


def _shape_words(shape: tuple[int, ...]) -> str:
    return " x ".join(str(d) for d in shape) if shape else "a single number"


def _inputs_in_words(args: tuple[Any, ...], notation: Notation) -> str:
    """``'Q is n_q x d_k = 3 x 2, K is ...'`` for the array arguments of a case."""
    parts = []
    for name, arg in zip(notation.names, args):
        if isinstance(arg, np.ndarray):
            dims = notation.dims.get(name)
            parts.append(f"{name} is {dims} = {_shape_words(arg.shape)}" if dims else f"{name} has shape {_shape_words(arg.shape)}")
    return ", ".join(parts)


def _translated_error(exc: BaseException | None, args: tuple[Any, ...], notation: Notation | None) -> tuple[str, bool]:
    """``(text, replaces)``: numpy's shape or truth-value error said in the chapter's terms, and whether it replaces numpy's words.

    ``text`` is '' when there is nothing to add; ``replaces`` is True for
    numpy's own errors (a product whose sizes do not fit, arrays that do not
    line up, an array used as True or False), whose wording is numpy's internals.
    """
    if exc is None or notation is None or not isinstance(exc, (ValueError, TypeError)):
        return "", False
    text = safe_text(exc, limit=2000)
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


def same_values(got: Any, wrong: Any) -> bool:
    """Whether ``got`` equals ``wrong`` within ``ATOL`` and ``RTOL``, NaN where it has NaN.

    The one comparison of numbers the self-checks use to recognise a typical mistake.

    Raises
    ------
    ValueError
        Never: ``got`` may be a student's result, so anything that is not numbers of the same shape is False.

    Examples
    --------
    >>> same_values(np.array([0.5, np.nan]), np.array([0.5 + 1e-9, np.nan])), same_values("x", np.zeros(1))
    (True, False)
    """
    try:
        with np.errstate(all="ignore"), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            g, w = np.asarray(got), np.asarray(wrong)
            if g.dtype.kind not in "biuf" or w.dtype.kind not in "biuf":  # text, objects, complex numbers: no mistake of ours
                return False
            g, w = g.astype(np.float64), w.astype(np.float64)
            return g.shape == w.shape and bool(np.allclose(g, w, atol=ATOL, rtol=RTOL, equal_nan=True))
    except Exception:  # noqa: BLE001 - a student's odd object (its __array__ raising) is no known mistake
        return False


def judge_call(fn: Callable[..., Any], case: Case, notation: Notation | None = None) -> tuple[str | None, StudentCall]:
    """Call ``fn`` on ``case`` through :func:`~attnlib.exercises.sandbox.call_student`; ``(None, call)`` when right.

    A wrong answer gives ``(message, call)``.

    An exception is said in the chapter's terms (``notation``); a result is judged by :func:`judge_value`.
    Messages never show the expected values.

    Raises
    ------
    ValueError
        If ``case`` is not a :class:`Case` or ``notation`` is neither None nor a :class:`Notation`; the message
        names it. Nothing about ``fn`` raises.

    Examples
    --------
    >>> judge_call(lambda x: x / 0.0 if False else 2 * x, Case("x = 1", (1.0,), np.array(2.0)))[0] is None
    True
    >>> judge_call(lambda x: 1 / 0, Case("x = 1", (1.0,), np.array(2.0)))[0][:52]
    'x = 1: your function raised ZeroDivisionError: divis'
    """
    as_instance("case", case, Case, "a Case")
    if notation is not None:
        as_instance("notation", notation, Notation, "None or a Notation")
    call = call_student(fn, case.args)
    if call.error is not None:
        extra, replaces = _translated_error(call.exception, case.args, notation)
        if replaces and call.exception is not None:
            where = where_student_code_failed(call.exception) or " in your function"
            return f"{case.label}: numpy stopped your function{where}. {extra}", call
        return f"{case.label}: {call.error}" + (f" {extra}" if extra else ""), call
    try:
        with np.errstate(all="ignore"), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return judge_value(call.value, case), call
    except Exception as exc:  # an odd result object (its __array__ or __eq__ raising) must not break the check
        return f"{case.label}: the result could not be compared ({exception_text(exc)}).", call


def _known_mistake(got: np.ndarray, case: Case) -> str | None:
    """The hint of the typical mistake(s) that give exactly ``got`` on this case, or None."""
    hints: list[str] = []
    for wrong, hint in case.mistakes:
        if same_values(got, wrong) and hint not in hints:
            hints.append(hint)
    if not hints:
        return None
    if len(hints) == 1:
        return hints[0]
    return "on this case your numbers fit more than one typical mistake (the other cases tell them apart): " + " Or: ".join(hints)


def _nan_causes(case: Case) -> str:
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


def _small_case(case: Case, got: Any, notation: Notation | None) -> str | None:
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


def judge_value(got_raw: Any, case: Case) -> str | None:
    """The one comparator: None if ``got_raw`` is right for ``case``, else the message that says why not.

    The self-checks judge every call of a student's function with it, and the
    grader judges every handed-in result with it, so both refuse the same
    results for the same reason. Messages never show the expected values.

    Raises
    ------
    ValueError
        If ``case`` is not a :class:`Case`; the message names it. Nothing about ``got_raw`` raises.

    Examples
    --------
    >>> case = Case("n = 2", (2,), np.tril(np.ones((2, 2), dtype=bool)), kind="b")
    >>> judge_value(np.tril(np.ones((2, 2), dtype=bool)), case) is None
    True
    >>> judge_value(np.tril(np.ones((2, 2), dtype=int)), case)
    'n = 2: the result has dtype int64; return a boolean array (True = may attend, False = masked), for example with `.astype(bool)`.'
    """
    as_instance("case", case, Case, "a Case")
    if got_raw is None:
        return f"{case.label}: your function returned None. Did you forget the `return` statement?"
    try:
        got = np.asarray(got_raw)
    except Exception as exc:
        return f"{case.label}: the result could not be turned into an array ({exception_text(exc)})."
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


def merge_messages(messages: list[str], labels: list[str]) -> list[str]:
    """One message per distinct diagnosis: a repeat on later cases is counted on the first, not printed again.

    The self-checks and the grader's feedback both say their messages this way.

    Raises
    ------
    ValueError
        If ``messages`` or ``labels`` is not a list of strings; the message names it.

    Examples
    --------
    >>> merge_messages(["n = 3: wrong dtype", "n = 6: wrong dtype"], ["n = 3", "n = 6"])
    ['n = 3: wrong dtype (the same in 1 other case)']
    """
    for name, value in (("messages", messages), ("labels", labels)):
        if not isinstance(value, list) or not all(isinstance(m, str) for m in value):
            raise ValueError(f"{name} must be a list of strings, got {value!r:.60}")
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


#: The Raises section every chapter's ``check_*(fn, verbose, seed)`` shares (numpydoc, indented as a docstring body).
SELF_CHECK_RAISES = """Raises
    ------
    ValueError
        If ``verbose`` is not True or False, or ``seed`` is neither None nor an integer by the seed rule;
        the message names it. Nothing about ``fn`` raises: a function that is not callable, raises,
        changes its input, runs out of time or returns odd values fails its cases in the result.

    """


def with_self_check_raises(check: Callable[..., CheckResult]) -> Callable[..., CheckResult]:
    """Give a chapter's self-check the Raises section all of them share (before its Examples), and return it.

    Every ``check_*(fn, verbose=True, seed=None)`` refuses the same two arguments
    and judges anything ``fn`` does; the contract is written once here, and
    ``help()``, the API pages and the docstring tests read it from ``__doc__``.

    Raises
    ------
    ValueError
        If ``check`` is not a function with a docstring, or its docstring already has a Raises section; the
        message names ``check``.

    Examples
    --------
    >>> @with_self_check_raises
    ... def check_nothing(fn, verbose=True, seed=None):
    ...     \"\"\"Check nothing.
    ...
    ...     Examples
    ...     --------
    ...     >>> 1
    ...     1
    ...     \"\"\"
    >>> "Raises" in check_nothing.__doc__.split("Examples")[0]
    True
    >>> with_self_check_raises(len)
    Traceback (most recent call last):
    ...
    ValueError: check must be a function with a docstring of its own; got builtin_function_or_method
    """
    doc = getattr(check, "__doc__", None)
    if not inspect.isfunction(check) or not doc:
        raise ValueError(f"check must be a function with a docstring of its own; got {type(check).__name__}")
    if "\n    Raises\n" in doc:
        raise ValueError(f"check {check.__name__} already has a Raises section")
    head, marker, tail = doc.partition("\n    Examples\n")
    check.__doc__ = f"{head}\n    {SELF_CHECK_RAISES}Examples\n{tail}" if marker else f"{doc.rstrip()}\n\n    {SELF_CHECK_RAISES}"
    return check


def _bound_in(filename: str) -> set[str] | None:
    """The names a cell (or file) binds anywhere in its source, or None if its source is not known."""
    lines = linecache.getlines(filename)
    if not lines:
        return None
    try:
        tree = ast.parse("".join(lines))
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            names.add(node.id)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names.update((a.asname or a.name).split(".")[0] for a in node.names)
        elif isinstance(node, ast.Global):
            names.update(node.names)
    return names


def not_in_grader(fn: Any, function: str, given: tuple[str, ...] | list[str] = ()) -> list[str]:
    """What the grader's runner will not have for ``fn``, in the grader's words: ``[]`` or one sentence.

    The grader runs the answer cells with numpy alone (:mod:`attnlib.exercises.runner`), so a function that
    reads attnlib (beyond the names ``given`` allows) or a variable of the notebook's other cells scores 0
    there; the self-check says so first, with :func:`~attnlib.exercises.runner.unavailable`'s sentence. The
    notebook's names the grader has too are its modules, the student's functions, and the names bound in
    the cells that define the function and the student's functions it reads (read from the cells' source).
    ``fn`` that is attnlib's own function is said to be so. A cell whose source is not known binds every name.

    Raises
    ------
    ValueError
        If ``function`` is not a string or ``given`` not a list or tuple of strings; the message names it.
        ``fn`` comes from a student: whatever it is, the result is a list.

    Examples
    --------
    >>> import attnlib
    >>> not_in_grader(attnlib.causal_mask, "my_causal_mask")
    ["my_causal_mask is attnlib's own causal_mask (or calls it): the exercise is to write it yourself."]
    >>> not_in_grader(lambda n: np.tril(np.ones((n, n), dtype=bool)), "my_causal_mask")
    []
    """
    as_text("function", function)
    if not isinstance(given, (list, tuple)) or not all(isinstance(g, str) for g in given):
        raise ValueError(f"given must be a list of the names the exercise gives (such as 'attnlib.softmax'), got {given!r:.60}")
    target = fn
    try:
        while isinstance(target, functools.partial):
            target = target.func
    except Exception:  # noqa: BLE001 - a student's object may refuse to be looked at
        return []
    if not isinstance(target, types.FunctionType):
        return unavailable(target, function, {}, list(given))  # attnlib's own, or a callable whose code is not read
    space = target.__globals__
    mine = [target]  # the student's functions fn reads (by name), fn first
    for current in mine:
        codes = [current.__code__]
        for code in codes:
            codes += [c for c in code.co_consts if isinstance(c, types.CodeType)]
            for name in code.co_names:
                value = space.get(name)
                if isinstance(value, types.FunctionType) and value.__globals__ is space and value not in mine:
                    mine.append(value)
    bound: set[str] = set()
    for current in mine:
        names = _bound_in(current.__code__.co_filename)
        if names is None:  # a cell whose source is not known: its names are not second-guessed
            return unavailable(target, function, space, list(given))
        bound |= names
    seen = {
        k: v
        for k, v in space.items()
        if k in bound or isinstance(v, types.ModuleType) or (isinstance(v, types.FunctionType) and v.__globals__ is space)
    }
    return unavailable(target, function, seen, list(given))


def run_cases(name: str, fn: Any, cases: Sequence[Case], verbose: bool, notation: Notation | None = None) -> CheckResult:
    """Call ``fn`` on every case, judge each result with :func:`judge_value`, and report (the body of every ``check_*``).

    Raises
    ------
    ValueError
        If ``name`` is not text, ``cases`` is not a sequence of :class:`Case`, ``verbose`` is not True or False
        or ``notation`` is neither None nor a :class:`Notation`; the message names it. Nothing about ``fn`` raises.

    Examples
    --------
    >>> run_cases("double", lambda x: 2 * x, [Case("x = 1", (1.0,), np.array(2.0))], verbose=False).passed
    True
    """
    as_text("name", name)
    as_instance("cases", cases, (list, tuple), "a list of Case")
    if not all(isinstance(c, Case) for c in cases):
        raise ValueError("cases must be a list of Case; it holds something else")
    if notation is not None:
        as_instance("notation", notation, Notation, "None or a Notation")
    verbose = as_flag("verbose", verbose)
    if _collector is not None:  # inside cases_of: the cases are wanted, not a run
        _collector.extend((case, notation) for case in cases)
        return CheckResult(name, len(cases), 0)
    entry = next((e for e in EXERCISES.values() if e.check is not None and e.check.__name__ == f"check_{name}"), None)
    lacking = not_in_grader(fn, entry.function or name, entry.given) if entry is not None and callable(fn) else []
    if not callable(fn):
        result = CheckResult(name, len(cases), 0, (f"expected a function, got {type(fn).__name__}; pass the function itself, without ().",))
    elif lacking:  # the grader, which runs the answer cells with numpy alone, could not run it: 0 there, "not yet" here
        result = CheckResult(name, len(cases), 0, tuple(lacking))
    else:
        messages: list[str] = []
        printed, head, n_passed = 0, [], 0
        shown: tuple[tuple[bool, int], str] | None = None
        unexplained = False
        for i, case in enumerate(cases):
            message, call = judge_call(fn, case, notation)
            printed += call.printed_lines
            head += list(call.printed_head)[: PRINTED_LINES_QUOTED - len(head)]
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
        messages = merge_messages(messages, [c.label for c in cases])
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


COLUMN_HINT = "the softmax ran down the columns; each query's row of weights should sum to 1 (axis=-1)."


#: While :func:`cases_of` runs a check: where :func:`run_cases` puts the cases instead of running them.
_collector: list[tuple[Case, Notation | None]] | None = None


def cases_of(check: Callable[..., Any], seed: int | None = None) -> list[tuple[Case, Notation | None]]:
    """The cases a chapter's self-check judges (the student's own seed case included), with the check's notation.

    No student function is called: the check builds its cases and hands them to :func:`run_cases`, which
    gives them back here. The grader judges every hand-in on these very cases, so it refuses what the
    self-check refuses, with the same message.

    Raises
    ------
    ValueError
        If ``check`` is not a chapter's self-check (a ``check_*`` function that ends in :func:`run_cases`), or
        ``seed`` is neither None nor an integer by the seed rule; the message names it.

    Examples
    --------
    >>> from attnlib.exercises.ch09 import check_causal_mask
    >>> [case.label for case, _ in cases_of(check_causal_mask)]
    ['n = 3', 'n = 1 (a single token)', 'n = 6']
    >>> len(cases_of(check_causal_mask, seed=3)) > 3
    True
    """
    global _collector
    if not callable(check) or not getattr(check, "__name__", "").startswith("check_"):
        raise ValueError(f"check must be a chapter's self-check (check_softmax, ...), got {check!r:.60}")
    if seed is not None:
        as_seed("seed", seed)
    previous, _collector = _collector, []
    try:
        check(_never_called, verbose=False, seed=seed)
        found = _collector
    finally:
        _collector = previous
    if not found:
        raise ValueError(f"check {check.__name__} built no cases (it does not end in run_cases)")
    return found


def _never_called(*args: Any) -> None:  # pragma: no cover - cases_of never runs it
    raise AssertionError("cases_of called the function it was given")


def column_softmax(x: np.ndarray) -> np.ndarray:
    """The softmax of each column (a typical mistake the self-checks recognise), computed without warnings.

    Raises
    ------
    ValueError
        If ``x`` is not a 2-D array of real numbers; the message names it.

    Examples
    --------
    >>> column_softmax(np.zeros((2, 1))).tolist()
    [[0.5], [0.5]]
    """
    x = as_array("x", x, 2, allow_neg_inf=True)
    with np.errstate(all="ignore"):
        e = np.exp(x - x.max(axis=0, keepdims=True))
        return e / e.sum(axis=0, keepdims=True)


def check_rng() -> np.random.Generator:
    """The generator of the self-checks' random cases: the same cases on every run.

    Raises
    ------
    ValueError
        Never: it takes no argument.

    Examples
    --------
    >>> bool(check_rng().integers(100) == check_rng().integers(100))
    True
    """
    return np.random.default_rng(2017)


def own_case(seed: int | None, exercise: str, names: tuple[str, ...]) -> tuple[tuple[Any, ...], ...]:
    """The extra case drawn from a student's own seed: ``(label, *inputs)``, or no case without a seed.

    Raises
    ------
    ValueError
        If ``seed`` is neither None nor an integer by the seed rule, ``exercise`` is not an exercise with
        variants, or ``names`` are not its inputs; the message names it.

    Examples
    --------
    >>> own_case(None, "9.2", ("sizes",))
    ()
    >>> own_case(3, "9.2", ("sizes",))[0][0]
    'your own inputs (seed 3)'
    """
    if seed is None:
        return ()
    inputs = variant(exercise, seed).inputs
    unknown = [n for n in names if n not in inputs] if isinstance(names, tuple) else names
    if unknown:
        raise ValueError(f"names must be a tuple of exercise {exercise}'s inputs {sorted(inputs)}, got {names!r:.80}")
    return ((f"your own inputs (seed {seed})", *(inputs[n] for n in names)),)


QKV_NOTATION = Notation(
    ("Q", "K", "V"),
    {"Q": "n_q x d_k", "K": "n_k x d_k", "V": "n_k x d_v"},
    "The scores pair every query (a row of Q) with every key (a row of K), so K enters that product transposed; "
    "the weights (n_q x n_k) then multiply V (n_k x d_v).",
)

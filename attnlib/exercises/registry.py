"""The registry of exercises with per-student variants: one ``Exercise`` entry per exercise.

An entry holds everything the book, the self-checks and the grader need to
know about one exercise, in one place: how its inputs are drawn from a seed
(``draw``), the model answers of a by-hand exercise (``answer``), what makes a
variant a fair question (``well_posed``), and for an implement exercise the
calls the grader makes (``calls``), attnlib's reference (``reference``) and
attnlib's own functions that the student's function may not call (``own``).
Each chapter's exercises are registered in ``attnlib/exercises/chNN.py`` with
:func:`register`; :mod:`attnlib.variants` is the public face of this module.

The seed of a student comes from :func:`student_seed`, an HMAC-SHA256 of the
student id and the assignment name under a key; :func:`route_key` derives
that key from the course's one secret, separately for every assignment and
release route, so a key that travels with one assignment's copy reveals
nothing about another assignment or the other route.

Examples
--------
>>> v = variant("6.1")
>>> v.X.tolist(), v.W_V.tolist()
([[1.0, 0.0], [0.0, 1.0], [0.5, 0.5]], [[1.0, 0.0], [0.0, 1.0]])
>>> answers(v)
{'o3_by_hand': [0.5, 0.5]}
>>> mine = variant("6.1", student_seed("s001", "ch06", key="course key"))
>>> check_well_posed(mine)
>>> mine.seed == student_seed("s001", "ch06", key="course key")
True
"""

from __future__ import annotations

import hashlib
import hmac
import os
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .._validate import as_instance, as_seed, as_text, holds_bool, quiet
from .results import DECIMALS, TOLERANCE

__all__ = [
    "DECIMALS",
    "EXERCISES",
    "GIVEN_NAMES",
    "KINDS",
    "ROUTES",
    "TOLERANCE",
    "Exercise",
    "Variant",
    "agrees",
    "answers",
    "check_well_posed",
    "current_user",
    "register",
    "route_key",
    "student_seed",
    "variant",
]

#: Decimals a by-hand answer is typed with, and the tolerance that allows for it (defined in ``results``).

#: The kinds of exercise, each graded its own way. A "by-hand" exercise is typed numbers, graded against
#: ``answer``; an "implement" exercise is a function, graded on ``calls`` against ``reference``; a "measured"
#: one is a typed estimate, graded by a relative tolerance (``judge``); a "predict" one is graded by hand,
#: and only the numbers in its question vary.
KINDS = ("by-hand", "implement", "measured", "predict")

#: The ways a course hands out an assignment; each has its own key (see :func:`route_key`).
ROUTES = ("files", "exchange")


@dataclass(frozen=True)
class Variant:
    """The inputs of one exercise for one seed.

    Attributes
    ----------
    exercise:
        The exercise number, for example ``"6.1"``.
    seed:
        The seed it was drawn from (``None``: the book's own numbers).
    inputs:
        Name -> value (numpy arrays, ints, floats). Also readable as
        attributes: ``v.X`` is ``v.inputs["X"]``.
    """

    exercise: str
    seed: int | None
    inputs: dict[str, Any]

    def __getattr__(self, name: str) -> Any:
        inputs = object.__getattribute__(self, "inputs")
        if name in inputs:
            return inputs[name]
        raise AttributeError(f"exercise {self.exercise} has no input {name!r}; it has {sorted(inputs)}")


def _no_condition(v: Variant) -> None:
    """The default ``well_posed``: every variant is a fair question."""


@dataclass(frozen=True)
class Exercise:
    """One exercise with variants, everything about it in one entry.

    Attributes
    ----------
    number:
        ``"9.1"``: chapter and exercise.
    kind:
        One of ``KINDS``.
    draw:
        ``seed -> Variant``: the book's inputs for ``None``, a student's for an int.
        Build it with ``drawn``, which retries until ``well_posed`` passes.
    well_posed:
        ``Variant -> None``, raising ValueError (use ``require``) when a variant is not a fair question.
    answer:
        By-hand and measured: ``Variant -> {name: value}``, the names the answer cell defines
        and attnlib's answers for them (rounded to ``DECIMALS`` as a student types them).
    function:
        Implement: the name of the function the student writes (``"my_causal_mask"``).
    calls:
        Implement: ``Variant -> list of argument tuples`` the grader calls the student's function with.
    reference:
        Implement: attnlib's answer for one call, ``reference(*args)``.
    own:
        Implement: attnlib's functions that compute the answer themselves; a submitted function
        that is one of them, or calls one of them at any depth, is rejected.
    judge:
        Optional ``(Variant, handed_in) -> list of failure messages`` replacing the default
        comparison (by-hand: :func:`agrees` per name; implement: ``reference`` per call).
    check:
        Implement: the visible self-check (``checks.check_causal_mask``), if any.
    exact_zero:
        Implement: where the reference is exactly 0 (a masked key), the result must be exactly 0 too.
        By-hand: an entry whose answer is 0 must be typed as exactly 0 (``check_by_hand`` and the grader).
    given:
        Implement: the names of :data:`~attnlib.exercises.registry.GIVEN_NAMES` that the exercise statement lets the student use
        (``("attnlib.softmax",)``); the grader's runner, which has no attnlib, gives a stand-in for them.
    """

    number: str
    kind: str
    draw: Callable[[int | None], Variant]
    well_posed: Callable[[Variant], None] = field(default_factory=lambda: _no_condition)  # a field, not a method
    answer: Callable[[Variant], dict[str, Any]] | None = None
    function: str | None = None
    calls: Callable[[Variant], list[tuple[Any, ...]]] | None = None
    reference: Callable[..., Any] | None = None
    own: tuple[Callable[..., Any], ...] = field(default_factory=tuple)
    judge: Callable[[Variant, Any], list[str]] | None = None
    check: Callable[..., Any] | None = None
    exact_zero: bool = False
    given: tuple[str, ...] = ()

    @property
    def chapter(self) -> int:
        return int(self.number.split(".")[0])

    @property
    def assignment(self) -> str:
        """The nbgrader assignment it belongs to, ``"ch09"``."""
        return f"ch{self.chapter:02d}"

    @property
    def test_id(self) -> str:
        """grade_id of its autograded test cell (of its written answer for "predict")."""
        k = self.number.split(".")[1]
        return f"{self.assignment}-ex{k}-" + ("written" if self.kind == "predict" else "test")

    @property
    def graded_outside(self) -> bool:
        """Whether the grader judges it in its own process (every kind but "predict")."""
        return self.kind != "predict"


#: The names an exercise may give the grader's runner (``Exercise.given``), which has numpy but no attnlib.
GIVEN_NAMES = ("attnlib.softmax",)

#: Exercise number -> its entry, in the order the chapters register them.
EXERCISES: dict[str, Exercise] = {}


#: An exercise number: chapter and exercise, both positive, "9.1".
_NUMBER = re.compile(r"[1-9][0-9]*\.[1-9][0-9]*")


def _callable(name: str, value: Any, optional: bool = True) -> None:
    if value is None and optional:
        return
    if not callable(value):
        raise ValueError(f"{name} must be {'None or ' if optional else ''}a function, got {value!r:.60} ({type(value).__name__})")


def register(exercise: Exercise) -> Exercise:
    """Add one exercise to :data:`EXERCISES` (each chapter module calls this once per exercise).

    The entry is checked first: an :class:`Exercise`, its number ``"chapter.exercise"``
    (positive integers), a known kind, functions where functions belong and what its kind needs.

    Raises
    ------
    ValueError
        If ``exercise`` is not an :class:`Exercise` entry, its number, kind or functions are not what its
        kind needs, or its number is registered already; the message names ``exercise`` (or its field,
        ``exercise.kind``).

    Examples
    --------
    >>> register(EXERCISES["6.1"])
    Traceback (most recent call last):
    ...
    ValueError: exercise 6.1 is registered twice
    >>> register("6.1")
    Traceback (most recent call last):
    ...
    ValueError: exercise must be an Exercise entry, got '6.1' (str)
    """
    as_instance("exercise", exercise, Exercise, "an Exercise entry")
    number = exercise.number
    if not isinstance(number, str) or not _NUMBER.fullmatch(number):
        raise ValueError(f"exercise.number must be 'chapter.exercise' such as '9.1' (a string), got {number!r:.60}")
    if exercise.kind not in KINDS:
        raise ValueError(f"exercise.kind must be one of {KINDS}, got {exercise.kind!r:.60}")
    _callable("exercise.draw", exercise.draw, optional=False)
    _callable("exercise.well_posed", exercise.well_posed, optional=False)
    for part in ("answer", "calls", "reference", "judge", "check"):
        _callable(f"exercise.{part}", getattr(exercise, part))
    own = exercise.own
    if not isinstance(own, (tuple, list)) or not all(callable(fn) for fn in own):
        raise ValueError(f"exercise.own must be a tuple of functions, got {own!r:.60}")
    if exercise.function is not None and not (isinstance(exercise.function, str) and exercise.function.isidentifier()):
        raise ValueError(f"exercise.function must be None or a Python name, got {exercise.function!r:.60}")
    if not isinstance(exercise.exact_zero, bool):
        raise ValueError(f"exercise.exact_zero must be True or False, got {exercise.exact_zero!r:.60}")
    if not isinstance(exercise.given, tuple) or not all(isinstance(g, str) and g in GIVEN_NAMES for g in exercise.given):
        raise ValueError(f"exercise.given must be a tuple of names from {GIVEN_NAMES}, got {exercise.given!r:.60}")
    if number in EXERCISES:
        raise ValueError(f"exercise {number} is registered twice")
    if exercise.kind in ("by-hand", "measured") and exercise.answer is None:
        raise ValueError(f"exercise {number}: a {exercise.kind} exercise needs an answer function")
    if exercise.kind == "implement" and not (exercise.function and exercise.calls and exercise.reference):
        raise ValueError(f"exercise {number}: an implement exercise needs function, calls and reference")
    EXERCISES[number] = exercise
    return exercise


def _entry(number: Any) -> Exercise:
    if not isinstance(number, str) or number not in EXERCISES:
        raise ValueError(f"exercise must be one of the exercises with variants, got {number!r:.60}")
    return EXERCISES[number]


def _input_kind(x: Any) -> tuple[Any, ...]:
    """What kind of input ``x`` is: an array (dtype kind, dimensions), a number, a bool, text, a tuple, ..."""
    if isinstance(x, np.ndarray):
        return ("an array", x.dtype.kind, x.ndim)
    if isinstance(x, (bool, np.bool_)):
        return ("a bool",)
    if isinstance(x, (int, float, np.integer, np.floating)):
        return ("a number",)
    return (f"a {type(x).__name__}",)


#: Exercise number -> the kind of each input its draw gives (read from the book's variant once).
_INPUT_KINDS: dict[str, dict[str, tuple[Any, ...]]] = {}


def _checked_variant(v: Any) -> Exercise:
    """The entry of the variant ``v``, after checking that ``v`` is a Variant with its exercise's inputs."""
    as_instance("v", v, Variant, "a Variant (from variant() or a draw function such as uniform_row_by_hand())")
    number = object.__getattribute__(v, "exercise")
    if not isinstance(number, str) or number not in EXERCISES:
        raise ValueError(f"v is a variant of {number!r:.60}, which is not one of the exercises with variants")
    entry = EXERCISES[number]
    inputs = object.__getattribute__(v, "inputs")
    if not isinstance(inputs, dict):
        raise ValueError(f"v.inputs must be a dict of the exercise's inputs, got {type(inputs).__name__}")
    if number not in _INPUT_KINDS:
        _INPUT_KINDS[number] = {k: _input_kind(x) for k, x in entry.draw(None).inputs.items()}
    kinds = _INPUT_KINDS[number]
    missing = sorted(set(kinds) - set(inputs))
    if missing:
        raise ValueError(f"v (exercise {number}) lacks the inputs {missing} that the exercise's draw gives")
    for name, kind in kinds.items():
        if _input_kind(inputs[name]) != kind:
            what = " of dtype kind {!r} with {} dimension(s)".format(*kind[1:]) if kind[0] == "an array" else ""
            raise ValueError(f"v.inputs[{name!r}] must be {kind[0]}{what}, as exercise {number}'s draw gives; got {inputs[name]!r:.60}")
        _finite_input(f"v.inputs[{name!r}]", inputs[name])
    return entry


#: The largest integer a hand-made variant may hold: every integer up to it is exact in a float64.
MAX_INPUT_INT = 2**53


def _finite_input(name: str, x: Any) -> None:
    """Refuse NaN, +inf and integers beyond ``MAX_INPUT_INT`` in an input (its entries too), naming it.

    ``-inf`` is kept: it is a masked score in the exercises that take scores. Where it makes no sense
    (a token's entry), the answer is not finite and :func:`answers` refuses it.
    """
    if isinstance(x, (str, bytes, bool, np.bool_)):
        return
    if isinstance(x, (int, np.integer)):
        if abs(int(x)) > MAX_INPUT_INT:
            raise ValueError(f"{name} must be an integer of at most 2**53 in size, got one of {len(str(abs(int(x))))} digits")
        return
    if isinstance(x, (list, tuple)):
        for i, item in enumerate(x):
            _finite_input(f"{name}[{i}]", item)
        return
    if isinstance(x, (float, np.floating)) or (isinstance(x, np.ndarray) and x.dtype.kind in "fiu"):
        arr = np.asarray(x)
        if arr.dtype.kind == "f" and not np.all(np.isfinite(arr) | (arr == -np.inf)):  # -inf: a masked score
            raise ValueError(f"{name} must hold finite numbers or -inf (no NaN, no +inf), got {x!r:.60}")
        if arr.dtype.kind in "iu" and arr.size and np.abs(arr.astype(float)).max() > MAX_INPUT_INT:
            raise ValueError(f"{name} must hold integers of at most 2**53 in size, got {x!r:.60}")


def _typed_answer(value: Any) -> Any:
    """An answer as a student types it: floats rounded to ``DECIMALS`` places (lists and arrays entry by entry), ints as they are."""
    if isinstance(value, (bool, np.bool_, str)):
        return value
    if isinstance(value, (int, np.integer)):
        return int(value)
    if isinstance(value, (list, tuple, np.ndarray)):
        return [_typed_answer(item) for item in (value.tolist() if isinstance(value, np.ndarray) else value)]
    if isinstance(value, (float, np.floating)):
        return float(np.round(float(value), DECIMALS)) + 0.0  # + 0.0 turns -0.0 into 0.0
    return value


def _on_variant(fn: Callable[[Variant], Any], v: Variant) -> Any:
    """``fn(v)``, where inputs of the wrong type (a hand-made Variant) give a ValueError naming ``v``."""
    try:
        with quiet():
            return fn(v)
    except (TypeError, AttributeError, KeyError, IndexError) as exc:
        raise ValueError(
            f"v: the inputs of this variant of exercise {v.exercise} are not what its draw gives "
            f"({type(exc).__name__}); draw it with variant({v.exercise!r}, seed)"
        ) from None
    except (OverflowError, MemoryError):
        raise ValueError(f"v: the inputs of this variant of exercise {v.exercise} are too large: its answer overflowed") from None


def variant(exercise: str, seed: int | None = None) -> Variant:
    """The inputs of exercise ``exercise`` (for example ``"9.1"``) for ``seed``.

    Raises
    ------
    ValueError
        If ``exercise`` is not the registered string of an exercise with variants (``9.1``, ``b"9.1"``
        and ``["9.1"]`` are refused) or ``seed`` is neither None nor an integer by the seed rule; the
        message names it.

    Examples
    --------
    >>> variant("11.1").t
    3
    >>> variant("1.9")
    Traceback (most recent call last):
    ...
    ValueError: exercise must be one of the exercises with variants, got '1.9'
    """
    return _entry(exercise).draw(seed)


def answers(v: Variant) -> dict[str, Any]:
    """The model answers of a by-hand (or measured) exercise, computed by attnlib from the variant's inputs.

    Keys are the names the answer cell defines; numbers are rounded to four
    decimals, as a student would type them (integers stay integers). ``v``
    must be a :class:`Variant` of a registered exercise that has an answer,
    holding the inputs its draw gives; anything else is a ValueError naming ``v``.

    Raises
    ------
    ValueError
        If ``v`` is not a :class:`Variant` of a registered exercise with an answer, lacks its draw's
        inputs or holds them of another kind, holds NaN, ``+inf`` or an integer beyond ``2**53``, holds
        a value out of the exercise's range (13.2's ``budget_log2``) or gives an answer that is not
        finite; the message names ``v`` (and the input, ``v.inputs['X']``).

    Examples
    --------
    >>> answers(variant("9.1"))
    {'masked_row': [0.5875, 0.0, 0.4125]}
    >>> answers(Variant("9.1", None, {}))
    Traceback (most recent call last):
    ...
    ValueError: v (exercise 9.1) lacks the inputs ['X', 'allowed', 'padded', 'query', 'scores'] that the exercise's draw gives
    """
    entry = _checked_variant(v)
    if entry.answer is None:
        raise ValueError(f"v is a variant of exercise {v.exercise}, which has no by-hand answer (it is {entry.kind})")
    try:
        computed = _on_variant(entry.answer, v)
    except ValueError as exc:  # attnlib refused an input by its own name: say that it is one of v's
        raise ValueError(str(exc) if str(exc).startswith(("v.", "v:", "v ")) else f"v (exercise {v.exercise}): {exc}") from None
    out = {name: _typed_answer(value) for name, value in computed.items()}
    for name, value in out.items():
        if not np.all(np.isfinite(np.asarray(value, dtype=float))):
            raise ValueError(
                f"v: the answer {name} of this variant of exercise {v.exercise} is not finite "
                "(an input holds -inf, or the computation overflowed)"
            )
    return out


def check_well_posed(v: Variant) -> None:
    """Raise ValueError if the variant ``v`` is not a fair question (its exercise's ``well_posed``).

    ``v`` is checked as by :func:`answers`.

    Raises
    ------
    ValueError
        If ``v`` is not a fair question (its exercise's ``well_posed``), or is not a
        :class:`Variant` holding its exercise's inputs as :func:`answers` requires; the message
        names ``v`` or the exercise and seed.

    Examples
    --------
    >>> check_well_posed(variant("9.1", 3))
    >>> check_well_posed({"exercise": "9.1"})
    Traceback (most recent call last):
    ...
    ValueError: v must be a Variant (from variant() or a draw function such as uniform_row_by_hand()), got {'exercise': '9.1'} (dict)
    """
    _on_variant(_checked_variant(v).well_posed, v)


def _typed_numbers(x: Any) -> np.ndarray | None:
    """``x`` as a float array if it holds real numbers only (not text, booleans, complex numbers, None or huge ints)."""
    if isinstance(x, (str, bytes, np.ma.MaskedArray)) or holds_bool(x):
        return None
    try:
        arr = np.asarray(x)
    except Exception:  # noqa: BLE001 - a student's value may raise anything on conversion
        return None
    if arr.dtype.kind not in "iuf":
        return None
    return arr.astype(float)


def agrees(given: Any, expected: Any) -> bool:
    """Whether a typed answer ``given`` matches ``expected`` (same shape, within ``TOLERANCE``).

    ``given`` comes from a student, so nothing in it raises: a value that is
    not real numbers (text, even ``"0.5"``; booleans; complex numbers; None; an
    int too large for a float64; a masked array) or that has another shape
    simply does not agree. NaN agrees with nothing.

    Raises
    ------
    ValueError
        Never: ``given`` comes from a student; anything that is not real numbers of the shape of
        ``expected`` (booleans included, even inside a list) is False.

    Examples
    --------
    >>> agrees([0.5875, 0, 0.4125], [0.58754, 0.0, 0.41246]), agrees([0.5, 0.5], [0.5, 0.5, 0.0])
    (True, False)
    >>> agrees("0.5", 0.5), agrees(10**400, 0.5), agrees([0.5 + 0j], [0.5]), agrees(True, 1)
    (False, False, False, False)
    """
    g, e = _typed_numbers(given), _typed_numbers(expected)
    if g is None or e is None or g.shape != e.shape:
        return False
    with quiet():
        return bool(np.allclose(g, e, rtol=0, atol=TOLERANCE))


# --- seeds and keys ---------------------------------------------------------------------------


def _utf8_text(name: str, value: Any) -> str:
    """A non-empty string that UTF-8 can encode (no lone surrogate such as ``"\\ud800"``), named in the error."""
    as_text(name, value)
    try:
        value.encode()
    except UnicodeEncodeError as exc:
        raise ValueError(
            f"{name} must be text that UTF-8 can encode; character {exc.start} is the lone surrogate {value[exc.start]!r}"
        ) from None
    return value


def student_seed(student_id: str, assignment: str, key: str) -> int:
    """The seed of one student for one assignment: HMAC-SHA256 under ``key``.

    The same three strings always give the same seed in ``[0, 2**31)``; a
    different key (another course, another term, another route) gives other numbers.

    Raises
    ------
    ValueError
        If ``student_id``, ``assignment`` or ``key`` is not a non-empty string that UTF-8 can encode
        (bytes, numbers and a lone surrogate such as ``"\\ud800"`` are refused); the message names it.

    Examples
    --------
    >>> student_seed("s001", "ch06", key="k") == student_seed("s001", "ch06", key="k")
    True
    >>> student_seed("s001", "ch06", key="k") != student_seed("s002", "ch06", key="k")
    True
    >>> student_seed("", "ch06", key="k")
    Traceback (most recent call last):
    ...
    ValueError: student_id must be a non-empty string, got ''
    """
    for name, value in (("student_id", student_id), ("assignment", assignment), ("key", key)):
        _utf8_text(name, value)
    digest = hmac.new(key.encode(), f"{assignment}\x00{student_id}".encode(), hashlib.sha256).digest()
    return int.from_bytes(digest[:4], "big") & 0x7FFFFFFF


def route_key(secret: str, assignment: str, route: str) -> str:
    """The key of one assignment on one release route, derived from the course's secret.

    An HMAC-SHA256 of ``route`` and ``assignment`` under ``secret``, as 64 hex
    digits. The exchange copy of an assignment carries its key in clear; from
    it nobody can compute the secret, nor the key of another assignment or of
    the per-student files.

    Raises
    ------
    ValueError
        If ``secret`` or ``assignment`` is not a non-empty string that UTF-8 can encode (a lone
        surrogate such as ``"\\ud800"`` is refused), or ``route`` is not one of ``ROUTES``; the
        message names it.

    Examples
    --------
    >>> k = route_key("secret", "ch09", "exchange")
    >>> len(k), k == route_key("secret", "ch09", "files"), k == route_key("secret", "ch06", "exchange")
    (64, False, False)
    >>> route_key("secret", "ch09", "email")
    Traceback (most recent call last):
    ...
    ValueError: route must be one of ('files', 'exchange'), got 'email'
    """
    _utf8_text("secret", secret)
    _utf8_text("assignment", assignment)
    if not isinstance(route, str) or route not in ROUTES:
        raise ValueError(f"route must be one of {ROUTES}, got {route!r}")
    return hmac.new(secret.encode(), f"route\x00{route}\x00{assignment}".encode(), hashlib.sha256).hexdigest()


def current_user() -> str:
    """The user name nbgrader's exchange files a submission under: nbgrader's own rule.

    nbgrader (``nbgrader.utils.get_username``) takes the name of the account
    the process runs as (not the ``USER`` or ``LOGNAME`` variables, which
    ``getpass`` would read), except in JupyterHub's standard containers,
    where everyone is ``jovyan`` and ``JUPYTERHUB_USER`` names the student.
    When nbgrader is installed its function is used, so the two cannot differ.
    """
    try:
        from nbgrader.utils import get_username
    except ImportError:  # a reader without nbgrader: the same rule
        import getpass

        try:
            import pwd

            name = pwd.getpwuid(os.getuid())[0]
        except (ImportError, KeyError, AttributeError):  # Windows, or an account without a name
            name = getpass.getuser()
        return os.environ.get("JUPYTERHUB_USER", "jovyan") if name == "jovyan" else name
    return str(get_username())


# --- building blocks for the chapters' draw and well_posed functions ----------------------------


def rng_for(seed: int | None, exercise: str, book_seed: int = 0) -> np.random.Generator:
    """A generator for one exercise; exercises of one seed get independent streams."""
    if seed is None:
        return np.random.default_rng(book_seed)
    major, minor = (int(p) for p in exercise.split("."))
    return np.random.default_rng([as_seed("seed", seed), major, minor])


def drawn(seed: int | None, exercise: str, book: dict[str, Any], make: Callable[[np.random.Generator], dict[str, Any]]) -> Variant:
    """The book's inputs ``book`` for ``seed=None``, else the first well-posed draw of ``make``."""
    if seed is None:
        out = Variant(exercise, None, book)
        _entry(exercise).well_posed(out)  # (check_well_posed would draw the book variant again)
        return out
    rng = rng_for(seed, exercise)
    for _ in range(1000):
        out = Variant(exercise, as_seed("seed", seed), make(rng))
        try:
            _entry(exercise).well_posed(out)  # (check_well_posed would draw the book variant again)
        except ValueError:
            continue
        return out
    raise RuntimeError(f"no well-posed variant of exercise {exercise} for seed {seed}")  # pragma: no cover


def implement_draw(
    exercise: str, book_seed: int, make: Callable[[np.random.Generator, tuple[int, ...]], dict[str, Any]]
) -> Callable[[int | None], Variant]:
    """The ``draw`` of an implement exercise: five sizes in 2..8, then ``make(rng, sizes)``.

    ``seed=None`` uses the fixed generator ``book_seed``, a seed its own stream.
    """

    def draw(seed: int | None = None) -> Variant:
        rng = np.random.default_rng(book_seed) if seed is None else rng_for(seed, exercise)
        sizes = tuple(int(x) for x in rng.integers(2, 9, size=5))
        out = Variant(exercise, None if seed is None else as_seed("seed", seed), make(rng, sizes))
        _entry(exercise).well_posed(out)  # (check_well_posed would draw the book variant again)
        return out

    draw.__name__ = f"implement_{exercise.replace('.', '_')}"
    return draw


def require(ok: bool, v: Variant, why: str) -> None:
    """Raise ValueError naming the exercise and seed unless ``ok``."""
    if not ok:
        raise ValueError(f"exercise {v.exercise}, seed {v.seed}: {why}")


def is_grid(x: Any, step: float) -> bool:
    """Whether every entry is a multiple of ``step`` (numbers a student handles by hand)."""
    a = np.asarray(x, dtype=float) / step
    return bool(np.all(np.isfinite(a)) and np.allclose(a, np.round(a)))


def finite_inputs(v: Variant) -> None:
    """The well-posedness of an implement exercise: finite arrays, no mask row that forbids every key."""
    arrays = [np.asarray(x, dtype=float) for x in v.inputs.values() if isinstance(x, np.ndarray)]
    require(all(np.all(np.isfinite(a)) for a in arrays), v, "inputs must be finite")
    if "allowed" in v.inputs:
        require(bool(np.asarray(v.allowed).any(axis=1).all()), v, "a row of the mask forbids every key")


def rounded(x: Any) -> Any:
    """What a student types: numbers to DECIMALS places, as plain Python numbers and lists."""
    arr = np.round(np.asarray(x, dtype=float), DECIMALS) + 0.0  # + 0.0 turns -0.0 into 0.0
    return arr.tolist()


HALVES = np.arange(-2, 5) / 2  # -1, -0.5, 0, ..., 2: entries of by-hand tokens
SMALL_INTS = np.arange(-1, 3)  # -1, 0, 1, 2: entries of by-hand projections


def tokens(rng: np.random.Generator) -> np.ndarray:
    """Three tokens of two entries, halves between -1 and 2."""
    return rng.choice(HALVES, size=(3, 2))


def int_matrix(rng: np.random.Generator, shape: tuple[int, int] = (2, 2)) -> np.ndarray:
    """A small integer matrix (entries -1 to 2)."""
    return rng.choice(SMALL_INTS, size=shape).astype(float)


def by_hand_tokens(v: Variant) -> None:
    """Well-posed tokens ``v.X``: halves between -1 and 2, none all zero, no two equal."""
    X = v.X
    require(is_grid(X, 0.5) and np.abs(X).max() <= 2, v, "token entries must be halves between -1 and 2")
    require(bool(np.all(np.abs(X).sum(axis=1) > 0)), v, "a token is all zeros")
    require(len({tuple(r) for r in X.tolist()}) == 3, v, "two tokens are equal")

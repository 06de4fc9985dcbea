"""Grading that does not trust the student's notebook: hand in from the kernel, judge outside it.

A hidden test runs in the student's kernel, after the student's own cells, so
anything it looks up there (``np.allclose``, ``attnlib.causal_mask``, even
``variants.agrees``) may have been replaced by an answer cell. So the hidden
test only *hands in*: :func:`hand_in` collects the typed numbers of a by-hand
exercise, or calls the student's function of an implement exercise on the
grader's inputs for the seed, and publishes the result as one output of the
test cell (a display with the MIME type :data:`HAND_IN_MIME`). The grader then
judges that output in its own process (:func:`judge_outputs`, which the book's
nbgrader plugin ``JudgeHandIns`` calls after the notebook has run), with its
own numpy and attnlib and the seed it derived from the roster. A kernel in
which the grader's reporting is broken or silenced hands in nothing, and
nothing handed in scores 0.

An implement exercise also rejects attnlib's own implementation: while the
student's function runs, a profiler hook watches for the code of the
exercise's ``own`` functions (``causal_mask`` for exercise 9.2), so the
function itself, an alias, a copy of its code or a wrapper that calls it at
any depth is reported as such.

Examples
--------
>>> handed = []
>>> hand_in("9.1", None, {"masked_row": [0.5875, 0.0, 0.4125]}, sink=handed)
>>> judge("9.1", None, handed[0]["payload"])
[]
>>> handed = []
>>> hand_in("9.2", None, {"my_causal_mask": __import__("attnlib").causal_mask}, sink=handed)
Traceback (most recent call last):
...
AssertionError: my_causal_mask is attnlib's own causal_mask (or calls it): the exercise is to write it yourself.
>>> judge("9.2", None, handed[0]["payload"])
["my_causal_mask is attnlib's own causal_mask (or calls it): the exercise is to write it yourself."]
"""

from __future__ import annotations

import contextlib
import inspect
import math
import numbers
import sys
import threading
import types
from collections.abc import Callable, Iterator, Mapping
from typing import Any

import numpy as np

from .._validate import as_instance, as_seed
from .by_hand import check_by_hand
from .cases import Case, Notation, cases_of, judge_call, judge_value, merge_messages, not_in_grader
from .from_source import typed_answers
from .registry import EXERCISES, Exercise
from .runner import ARRAY_DTYPES, encode
from .sandbox import TIME_LIMIT_SECONDS

__all__ = [
    "CELL_SECONDS",
    "HAND_IN_MIME",
    "collected",
    "decode",
    "decode_typed",
    "encode",
    "encode_typed",
    "exercise_of_test",
    "graded_cases",
    "hand_in",
    "handed_value",
    "judge",
    "judge_outputs",
    "judge_results",
    "judge_source",
    "own_functions_called",
    "runner_request",
]

#: The MIME type of a hand-in output, whose data is a JSON object ``{"exercise": "9.2", "payload": {...}}``.
HAND_IN_MIME = "application/vnd.attnlib.hand-in+json"


def _entry(number: str) -> Exercise:
    if not isinstance(number, str) or number not in EXERCISES or not EXERCISES[number].graded_outside:
        graded = sorted(n for n, e in EXERCISES.items() if e.graded_outside)
        raise ValueError(f"exercise must be one of the autograded exercises {graded}, got {number!r:.60}")
    return EXERCISES[number]


def exercise_of_test(grade_id: str) -> Exercise | None:
    """The autograded exercise whose test cell has grade id ``grade_id`` (None for other cells).

    The grade id comes from a submitted notebook's cell metadata, which a
    student can edit, and the nbgrader plugins call this for every graded
    cell: so anything that is not exactly a test cell's id, a value that is not
    a string included, gives None and never an exception.

    Raises
    ------
    ValueError
        Never: a ``grade_id`` that is not exactly an autograded test cell's id gives None.

    Examples
    --------
    >>> exercise_of_test("ch09-ex2-test").number, exercise_of_test("ch09-ex4-written")
    ('9.2', None)
    >>> exercise_of_test(["ch09-ex2-test"]) is None
    True
    """
    if not isinstance(grade_id, str):
        return None
    for entry in EXERCISES.values():
        if entry.graded_outside and entry.test_id == grade_id:
            return entry
    return None


# --- values as JSON, exactly (NaN and infinities included) ---------------------------------------

def _hex_array(hexes: Any, shape: list[int]) -> np.ndarray | None:
    if not isinstance(hexes, list) or not all(isinstance(h, str) for h in hexes) or math.prod(shape) != len(hexes):
        return None
    try:
        return np.array([float.fromhex(h) for h in hexes], dtype=float).reshape(shape)
    except (TypeError, ValueError, OverflowError):
        return None


def decode(obj: Any) -> np.ndarray | str:
    """The array :func:`encode` wrote (its dtype, and a masked array, restored), or a sentence saying why there is none.

    ``obj`` comes from a student's kernel, so anything else (hex lists with
    bad entries or another length than the shape, shapes that are not lists of
    integers) gives the sentence, never an exception.

    Raises
    ------
    ValueError
        Never: ``obj`` comes from a student's kernel; whatever it is, the result is an array or a sentence.

    Examples
    --------
    >>> decode({"shape": [2], "bool": False, "hex": ["0x1p-1", "-inf"]})
    array([ 0.5, -inf])
    >>> decode({"shape": [2], "hex": ["0x1p+0", "0x0p+0"], "dtype": "int64"})
    array([1, 0])
    >>> decode({"shape": [10**400], "hex": ["0x1p-1"]}), decode(5)
    ('nothing readable was handed in', 'nothing readable was handed in')
    """
    unreadable = "nothing readable was handed in"
    if not isinstance(obj, dict):
        return unreadable
    if "text" in obj:
        return f"it is {str(obj['text'])[:80]}, not a number"
    shape = obj.get("shape")
    if not isinstance(shape, list) or not all(isinstance(n, int) and not isinstance(n, bool) and n >= 0 for n in shape):
        return unreadable
    arr = _hex_array(obj.get("hex"), shape)
    if arr is None:
        return unreadable
    dtype = obj.get("dtype")
    if obj.get("bool") is True:
        arr = arr.astype(bool)
    elif isinstance(dtype, str) and dtype in ARRAY_DTYPES and dtype != "float64":
        if dtype.startswith("complex"):
            imag = _hex_array(obj.get("imag"), shape)
            if imag is None:
                return unreadable
            arr = (arr + 1j * imag).astype(dtype)
        else:
            with np.errstate(all="ignore"):
                arr = arr.astype(dtype)
    return np.ma.masked_array(arr) if obj.get("masked") is True else arr


def handed_value(obj: Any) -> tuple[Any, str | None]:
    """``(value, None)``: the result a student's function returned, as :func:`encode` wrote it; ``(None, why)`` if unreadable.

    A function that returned None gives ``(None, None)``: the comparator then says so.

    Raises
    ------
    ValueError
        Never: ``obj`` comes from a student's kernel.

    Examples
    --------
    >>> handed_value({"none": True}), handed_value(5)
    ((None, None), (None, 'nothing readable was handed in'))
    """
    if isinstance(obj, dict) and obj.get("none") is True:
        return None, None
    if isinstance(obj, dict) and isinstance(obj.get("string"), str):
        return obj["string"][:200], None
    if isinstance(obj, dict) and "text" in obj and isinstance(obj.get("dtype"), str):
        shape = obj.get("shape")  # an array of something else than numbers: its shape and dtype are what is judged
        if isinstance(shape, list) and all(isinstance(n, int) and not isinstance(n, bool) and n >= 0 for n in shape):
            if math.prod(shape) <= 10**6:
                try:
                    return np.zeros(shape, dtype=np.dtype(obj["dtype"])), None
                except Exception:  # noqa: BLE001 - a dtype a student's kernel wrote
                    pass
    value = decode(obj)
    return (None, value) if isinstance(value, str) else (value, None)


def encode_typed(value: Any) -> Any:
    """A typed by-hand answer as JSON, keeping what the self-check looks at: booleans, integers, text, lists, other types.

    Raises
    ------
    ValueError
        Never: ``value`` comes from a student's kernel; what cannot be written is kept as the name of its type.

    Examples
    --------
    >>> encode_typed([0.5875, False, "3/8"])
    {'list': [{'real': '0x1.2cccccccccccdp-1'}, {'bool': False}, {'text': '3/8'}]}
    >>> decode_typed(encode_typed([0.5875, False, 2]))
    [0.5875, False, 2]
    """
    return _typed_record(value, 0)


def _typed_record(value: Any, depth: int) -> Any:
    if isinstance(value, (bool, np.bool_)):
        return {"bool": bool(value)}
    if isinstance(value, (int, np.integer)):
        try:
            return {"int": str(int(value))}
        except ValueError:  # more digits than Python writes
            return {"unreadable": "int"}
    if isinstance(value, numbers.Real):
        try:
            return {"real": float(value).hex()}
        except (TypeError, ValueError, OverflowError):
            return {"unreadable": type(value).__name__[:40]}
    if isinstance(value, str):
        return {"text": value[:80]}
    if isinstance(value, (list, tuple, np.ndarray)) and depth < 4:
        items = value.tolist() if isinstance(value, np.ndarray) and value.dtype != object else list(value)
        if not isinstance(items, list) or len(items) > 10_000:
            return {"other": type(value).__name__[:40]}
        return {"list": [_typed_record(item, depth + 1) for item in items]}
    return {"other": type(value).__name__[:40]}


class _Unreadable(numbers.Real):
    """A typed number that the student's kernel could not write as a float (the self-check: "could not be read")."""

    def __float__(self) -> float:
        raise ValueError("unreadable")

    __abs__ = __add__ = __ceil__ = __floor__ = __floordiv__ = __le__ = __lt__ = __mod__ = __mul__ = __neg__ = __pos__ = __float__
    __pow__ = __radd__ = __rfloordiv__ = __rmod__ = __rmul__ = __round__ = __rpow__ = __rtruediv__ = __truediv__ = __float__
    __trunc__ = __eq__ = __hash__ = __float__


def decode_typed(obj: Any) -> Any:
    """The typed answer :func:`encode_typed` wrote (another type stands in as an object of that type's name).

    Raises
    ------
    ValueError
        Never: ``obj`` comes from a student's kernel; what is not readable stands in as an object.

    Examples
    --------
    >>> decode_typed({"list": [{"int": "2"}, {"text": "x"}]})
    [2, 'x']
    >>> type(decode_typed({"other": "complex"})).__name__
    'complex'
    """
    return _typed_value(obj, 0)


def _typed_value(obj: Any, depth: int) -> Any:
    if isinstance(obj, dict) and len(obj) == 1:
        (kind, data), = obj.items()
        if kind == "bool" and isinstance(data, bool):
            return data
        if kind == "int" and isinstance(data, str) and data.lstrip("-").isdigit() and len(data) <= 4300:
            return int(data)
        if kind == "real" and isinstance(data, str):
            try:
                return float.fromhex(data)
            except (ValueError, OverflowError):
                return _Unreadable()
        if kind == "text" and isinstance(data, str):
            return data[:80]
        if kind == "list" and isinstance(data, list) and depth < 5:
            return [_typed_value(item, depth + 1) for item in data]
        if kind == "unreadable":
            return _Unreadable()
        if kind == "other" and isinstance(data, str):
            return type(data[:40] or "object", (), {})()
    return type("object", (), {})()


# --- in the student's kernel ------------------------------------------------------------------


def _code_of(fn: Callable[..., Any]) -> Any:
    return getattr(inspect.unwrap(fn), "__code__", None)


def own_functions_called(own: tuple[Callable[..., Any], ...]) -> contextlib.AbstractContextManager[list[str]]:
    """Watch for calls of the functions ``own`` (by their code, so aliases and wrappers count); yields their names.

    ``own`` is a tuple (or list) of functions; anything else is refused when
    it is called, before anything is watched. Functions without Python code
    (built-ins) cannot be watched and are passed over.

    Raises
    ------
    ValueError
        If ``own`` is not a tuple or list of functions, when it is called (before anything is
        watched); the message names it.

    Examples
    --------
    >>> import attnlib
    >>> with own_functions_called((attnlib.causal_mask,)) as hit:
    ...     _ = (lambda n: attnlib.causal_mask(n))(3)
    >>> hit
    ['causal_mask']
    >>> own_functions_called(attnlib.causal_mask)
    Traceback (most recent call last):
    ...
    ValueError: own must be a tuple or list of functions, got <function causal_mask at ...> (function)
    """
    as_instance("own", own, (tuple, list), "a tuple or list of functions")
    if not all(callable(fn) for fn in own):
        raise ValueError(f"own must be a tuple or list of functions; it holds {next(fn for fn in own if not callable(fn))!r:.60}")
    return _watching({c: fn.__name__ for fn in own if isinstance(c := _code_of(fn), types.CodeType)})


@contextlib.contextmanager
def _watching(codes: dict[Any, str]) -> Iterator[list[str]]:
    hit: list[str] = []

    def watch(frame: Any, event: str, arg: Any) -> None:
        if event == "call" and frame.f_code in codes and codes[frame.f_code] not in hit:
            hit.append(codes[frame.f_code])

    previous, previous_threads = sys.getprofile(), threading.getprofile()
    sys.setprofile(watch)
    threading.setprofile(watch)  # a call that runs in a helper thread (the time limit outside the main thread)
    try:
        yield hit
    finally:
        sys.setprofile(previous)
        threading.setprofile(previous_threads)  # type: ignore[arg-type]


def _own_message(entry: Exercise, names: list[str]) -> str:
    return f"{entry.function or 'your answer'} is attnlib's own {' / '.join(names)} (or calls it): the exercise is to write it yourself."


def graded_cases(exercise: str, seed: int | None) -> list[tuple[Case, Notation | None]]:
    """Every case the grader judges an implement exercise on: its self-check's (the seed's own case included), then its calls.

    The self-check's cases come with their typical mistakes and hints, so the grader's feedback says what
    the self-check says; the registry's calls (``Exercise.calls``) follow, judged by the same comparator.

    Raises
    ------
    ValueError
        If ``exercise`` is not an autograded implement exercise's number or ``seed`` is neither None nor an
        integer by the seed rule; the message names it.

    Examples
    --------
    >>> [case.label for case, _ in graded_cases("9.2", None)]
    ['n = 3', 'n = 1 (a single token)', 'n = 6', "the grader's call 1 of 5", "the grader's call 2 of 5", \
"the grader's call 3 of 5", "the grader's call 4 of 5", "the grader's call 5 of 5"]
    """
    entry = _entry(exercise)
    if entry.kind != "implement":
        raise ValueError(f"exercise must be an implement exercise, got {exercise!r} ({entry.kind})")
    v = entry.draw(seed)
    found = list(cases_of(entry.check, seed)) if entry.check is not None else []
    calls = entry.calls(v)
    for k, args in enumerate(calls, start=1):
        with np.errstate(all="ignore"):
            want = np.asarray(entry.reference(*args))
        exact = (want == 0) if entry.exact_zero and want.dtype.kind != "b" else None
        kind = "b" if want.dtype.kind == "b" else None
        found.append((Case(f"the grader's call {k} of {len(calls)}", tuple(args), want, kind=kind, exact_zero=exact, shown=False), None))
    return found


def _payload(entry: Exercise, seed: int | None, namespace: Any) -> dict[str, Any]:
    if entry.kind != "implement":
        names = list(entry.answer(entry.draw(seed))) if entry.answer else []
        return {"answers": {n: encode_typed(namespace[n]) for n in names if n in namespace}}
    fn = namespace.get(entry.function)
    if not callable(fn):
        return {"error": f"{entry.function} is not defined as a function"}
    lacking = not_in_grader(fn, entry.function, entry.given)
    if lacking:  # what the self-check says: the grader's runner (numpy alone) could not run it
        return {"error": lacking[0]}
    outputs = []
    for case, notation in graded_cases(entry.number, seed):
        with own_functions_called(entry.own) as hit:
            message, call = judge_call(fn, case, notation)
        if hit:
            return {"own": hit}
        outputs.append({"error": message} if call.error is not None else encode(call.value))
    return {"outputs": outputs}


_collector: list[dict[str, Any]] | None = None


@contextlib.contextmanager
def collected() -> Iterator[list[dict[str, Any]]]:
    """Collect hand-ins in a list instead of displaying them (grading in one process, as the tests do).

    Examples
    --------
    >>> with collected() as handed:
    ...     hand_in("4.1", None, {"o_by_hand": [0.625, 0.375]})
    >>> [h["exercise"] for h in handed]
    ['4.1']
    """
    global _collector
    previous, _collector = _collector, []
    try:
        yield _collector
    finally:
        _collector = previous


def hand_in(exercise: str, seed: int | None, namespace: Any, sink: list[dict[str, Any]] | None = None) -> None:
    """Hand in exercise ``exercise`` for grading outside the kernel (the hidden tests' one line).

    By-hand and measured exercises hand in the typed values of the names the
    answer cell defines; implement exercises the results of the student's
    function on the grader's inputs for ``seed``. The result is displayed as
    one output with the MIME type :data:`HAND_IN_MIME`; with ``sink``, or
    inside :func:`collected`, it is appended to that list instead. A function that is
    attnlib's own, or a wrong answer, raises AssertionError here as well, so the
    student reads why (this verdict is not trusted; the grader judges again).
    ``namespace`` must be a mapping (the notebook's ``globals()``), ``sink``
    None or a list; odd values *in* the namespace are the student's answer and
    give that AssertionError, never another exception.

    Raises
    ------
    ValueError
        If ``exercise`` is not an autograded exercise's number, ``seed`` is neither None nor an integer by
        the seed rule, ``namespace`` is not a mapping or ``sink`` is neither None nor a list; the message
        names it. A wrong or unreadable answer in ``namespace`` raises ``AssertionError`` instead (the
        test cell fails), and outside a notebook kernel without ``sink`` a ``RuntimeError`` says so.

    Examples
    --------
    >>> hand_in("6.1", None, {"o3_by_hand": [10**400, False]}, sink=[])
    Traceback (most recent call last):
    ...
    AssertionError: o3_by_hand[0]: not yet; it could not be read as a number.; o3_by_hand[1]: not yet; it is bool, not a number.
    >>> hand_in("6.1", None, [("o3_by_hand", [0.5, 0.5])], sink=[])
    Traceback (most recent call last):
    ...
    ValueError: namespace must be a mapping of names to values (the notebook's globals()), got [('o3_by_hand', [0.5, 0.5])] (list)
    """
    entry = _entry(exercise)
    as_instance("namespace", namespace, Mapping, "a mapping of names to values (the notebook's globals())")
    if sink is not None:
        as_instance("sink", sink, list, "None or a list")
    record = {"exercise": exercise, "payload": _payload(entry, seed, namespace)}
    sink = _collector if sink is None else sink
    if sink is not None:
        sink.append(record)
    else:
        _display(record, exercise)
    # Judged here too, so that a wrong answer fails its cell (nbgrader's validator, the feedback); this
    # verdict is not trusted: the grader judges the hand-in again in its own process.
    failures = judge(exercise, seed, record["payload"])
    if failures:
        raise AssertionError("; ".join(failures))


def _display(record: dict[str, Any], exercise: str) -> None:
    try:
        from IPython import get_ipython
        from IPython.display import display
    except ImportError:  # pragma: no cover - graded notebooks always run in IPython
        get_ipython = None
    if get_ipython is None or get_ipython() is None:
        raise RuntimeError("hand_in runs in a notebook kernel; elsewhere pass sink=[] to collect what is handed in")
    display({HAND_IN_MIME: record, "text/plain": f"Exercise {exercise}: handed in for grading."}, raw=True)


# --- in the grader's process -------------------------------------------------------------------


def _text(value: Any, fallback: str) -> str:
    """A message a student's kernel handed in, shortened; ``fallback`` when it is not a non-empty string."""
    return value[:500] if isinstance(value, str) and value else fallback


def judge(exercise: str, seed: int | None, payload: Any) -> list[str]:
    """The failures of one hand-in, judged with this process's own attnlib (empty: full marks).

    The comparison is the self-checks' own: a by-hand answer is judged entry by entry as
    ``check_by_hand`` judges it, an implement exercise's results by
    :func:`attnlib.exercises.cases.judge_value` on :func:`graded_cases` (the self-check's cases, then
    the registry's calls). So the feedback gives the self-check's reasons. Messages never show the
    expected value. ``payload`` comes from the student's kernel: whatever it holds, the result is a list
    of messages (a payload that is not what :func:`hand_in` writes gets at least one, so 0 marks), never
    an exception. ``exercise`` and ``seed`` come from the grader and are checked (a ValueError naming them).

    Raises
    ------
    ValueError
        If ``exercise`` is not an autograded exercise's number or ``seed`` is neither None nor an integer
        by the seed rule; the message names it. Nothing in ``payload`` raises: it gives messages.

    Examples
    --------
    >>> judge("9.1", None, {"answers": 5})
    ['nothing readable was handed in']
    >>> judge("9.2", None, {"own": None})
    ["my_causal_mask is attnlib's own implementation (or calls it): the exercise is to write it yourself."]
    """
    entry = _entry(exercise)
    v = entry.draw(seed)
    unreadable = "nothing readable was handed in"
    if not isinstance(payload, dict):
        return [unreadable]
    if "own" in payload:
        own = payload["own"]
        names = [n[:60] for n in own if isinstance(n, str) and n][:5] if isinstance(own, list) else []
        return [_own_message(entry, names or ["implementation"])]
    if "error" in payload:
        return [_text(payload["error"], unreadable)]
    if entry.kind != "implement":
        answered = payload.get("answers")
        if not isinstance(answered, dict):
            return [unreadable]
        typed = {name: decode_typed(value) for name, value in answered.items() if isinstance(name, str)}
        if entry.kind == "by-hand":
            result = check_by_hand(exercise, typed, seed, verbose=False)
            return [] if result.passed else list(result.messages)
        missing = [f"{name} is not defined yet" for name in (entry.answer(v) if entry.answer else {}) if name not in typed]
        if missing:
            return missing
        return entry.judge(v, typed) if entry.judge is not None else []
    graded = graded_cases(exercise, seed)
    outputs = payload.get("outputs")
    if not isinstance(outputs, list) or len(outputs) != len(graded):
        return [f"the hand-in holds {len(outputs) if isinstance(outputs, list) else 'no'} results, not one per case ({len(graded)})"]
    failures = []
    for (case, _notation), out in zip(graded, outputs, strict=True):
        if isinstance(out, dict) and "error" in out:
            failures.append(_text(out["error"], f"{case.label}: your function raised an error"))
            continue
        value, why = handed_value(out)
        if why is not None:
            failures.append(f"{case.label}: {why}")
            continue
        with np.errstate(all="ignore"):
            message = judge_value(value, case)
        if message:
            failures.append(message)
    return merge_messages(failures, [case.label for case, _ in graded])


def judge_outputs(exercise: str, seed: int | None, outputs: list[Any]) -> list[str]:
    """Judge the hand-in among a test cell's ``outputs`` (exactly one is expected).

    ``outputs`` are the cell's outputs as nbgrader stores them; like a
    payload they come from the student's kernel, so outputs that are not a
    list, outputs that are not dicts or whose ``"data"`` is not a dict are
    passed over (nothing handed in: 0 marks), never an exception.

    Raises
    ------
    ValueError
        If ``exercise`` is not an autograded exercise's number or ``seed`` is neither None nor an
        integer by the seed rule; the message names it. Nothing in ``outputs`` raises: it gives messages.

    Examples
    --------
    >>> judge_outputs("9.1", None, [{"output_type": "display_data", "data": 5}])
    ['exercise 9.1: nothing was handed in for grading (the test cell did not run to its end)']
    """
    _entry(exercise)
    if seed is not None:
        as_seed("seed", seed)
    if not isinstance(outputs, list):
        return [f"exercise {exercise}: the test cell's outputs are not readable, so nothing was handed in"]
    records = [
        o["data"][HAND_IN_MIME]
        for o in outputs
        if isinstance(o, dict) and o.get("output_type") == "display_data" and isinstance(o.get("data"), dict) and HAND_IN_MIME in o["data"]
    ]
    if not records:
        return [f"exercise {exercise}: nothing was handed in for grading (the test cell did not run to its end)"]
    if len(records) > 1:
        return [f"exercise {exercise}: more than one hand-in in one test cell"]
    record = records[0]
    if not isinstance(record, dict) or record.get("exercise") != exercise:
        return [f"exercise {exercise}: the hand-in is for another exercise"]
    return judge(exercise, seed, record.get("payload"))


# --- judging what the student wrote (the answer cells' source), in the grader's process -------------------

#: Seconds one answer cell may run in the grader's runner (a cell that defines a function takes a moment).
CELL_SECONDS = 30.0
_RUNNER_NOTE = (
    "The grader runs your answer cells, in order, in a process of their own that has numpy as np{given} but "
    "neither attnlib nor the notebook's other cells and variables."
)


def judge_source(exercise: str, seed: int | None, source: str) -> list[str]:
    """The failures of a by-hand or measured exercise, judged from the numbers typed in its answer cell's ``source``.

    The numbers are read with :func:`~attnlib.exercises.from_source.typed_answers` (never run), then
    judged as :func:`judge` judges a hand-in (``check_by_hand`` for a by-hand exercise). A name that is
    not typed numbers (a call to attnlib, a name of the notebook) fails with a reason naming it.

    Raises
    ------
    ValueError
        If ``exercise`` is not an autograded by-hand or measured exercise, ``seed`` is neither None nor an
        integer by the seed rule, or ``source`` is not a string; the message names it.

    Examples
    --------
    >>> judge_source("9.1", None, "masked_row = [0.5875, 0.0, 1 - 0.5875]")
    []
    >>> judge_source("9.1", None, "masked_row = variants.answers(v)['masked_row']")[0].split(":")[0]
    'masked_row is not read as typed numbers'
    """
    entry = _entry(exercise)
    if entry.kind not in ("by-hand", "measured"):
        raise ValueError(f"exercise must be a by-hand or measured exercise, got {exercise!r} ({entry.kind})")
    if seed is not None:
        as_seed("seed", seed)
    names = list(entry.answer(entry.draw(seed))) if entry.answer else []
    read, unreadable = typed_answers(source, names)
    failures = judge(exercise, seed, {"answers": {n: encode_typed(v) for n, v in read.items()}})
    failures = [f for f in failures if not any(f.startswith(f"{n} is not defined yet") for n in unreadable)]
    return [unreadable[n] for n in names if n in unreadable] + failures


def runner_request(exercise: str, seed: int | None, cells: list[tuple[str, str]]) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
    """What the grader hands its runner (:mod:`attnlib.exercises.runner`) for an implement exercise: JSON and arrays.

    ``cells`` are the answer cells to run, ``(grade id, source)`` in order
    (:func:`~attnlib.exercises.from_source.answer_sources`); the arguments are those of
    :func:`graded_cases` for ``seed``, arrays by name in the second result (for ``numpy.savez``), numbers as
    JSON (floats as hex, so NaN and infinities cross exactly).

    Raises
    ------
    ValueError
        If ``exercise`` is not an autograded implement exercise, ``seed`` is neither None nor an integer by the
        seed rule, or ``cells`` is not a list of (grade id, source) pairs of strings; the message names it.

    Examples
    --------
    >>> request, arrays = runner_request("9.2", None, [("ch09-ex2-answer", "def my_causal_mask(n): ...")])
    >>> request["function"], request["cases"][0], sorted(arrays)[:0]
    ('my_causal_mask', [{'value': 3}], [])
    """
    entry = _entry(exercise)
    if entry.kind != "implement":
        raise ValueError(f"exercise must be an implement exercise, got {exercise!r} ({entry.kind})")
    as_instance("cells", cells, list, "a list of (grade id, source) pairs")
    if not all(isinstance(c, tuple) and len(c) == 2 and all(isinstance(x, str) for x in c) for c in cells):
        raise ValueError(f"cells must be a list of (grade id, source) pairs of strings, got {cells!r:.80}")
    arrays: dict[str, np.ndarray] = {}
    layouts = []
    for case, _notation in graded_cases(exercise, seed):
        layout: list[dict[str, Any]] = []
        for arg in case.args:
            if isinstance(arg, np.ndarray):
                key = f"a{len(arrays)}"
                arrays[key] = arg
                layout.append({"array": key})
            elif isinstance(arg, float):
                layout.append({"float": arg.hex()})
            else:
                layout.append({"value": arg.item() if isinstance(arg, np.generic) else arg})
        layouts.append(layout)
    request = {
        "cells": [list(c) for c in cells],
        "function": entry.function,
        "given": list(entry.given),
        "cases": layouts,
        "call_seconds": TIME_LIMIT_SECONDS,
        "cell_seconds": CELL_SECONDS,
    }
    return request, arrays


def judge_results(exercise: str, seed: int | None, results: Any, answer_id: str) -> list[str]:
    """The failures of an implement exercise from what the grader's runner wrote (``results.json``, read as JSON).

    Each call's result is judged as :func:`judge` judges a hand-in, by the one comparator on
    :func:`graded_cases`. ``results`` comes from a process that ran the student's code, so whatever it
    holds gives messages, never an exception; a string is the grader's own sentence why there are no
    results (the process stopped, say). A function missing, or calls that fail, are explained with the
    answer cells that stopped (``answer_id`` is the exercise's own).

    Raises
    ------
    ValueError
        If ``exercise`` is not an autograded implement exercise, ``seed`` is neither None nor an integer by
        the seed rule or ``answer_id`` is not a string; the message names it. Nothing in ``results`` raises.

    Examples
    --------
    >>> judge_results("9.2", None, {"cells": {"ch09-ex2-answer": "NameError: name 'attnlib' is not defined"},
    ...     "missing": "my_causal_mask is not defined as a function by your answer cells"}, "ch09-ex2-answer")[0][:98]
    'my_causal_mask is not defined as a function by your answer cells (your answer cell ch09-ex2-answer'
    """
    entry = _entry(exercise)
    if entry.kind != "implement":
        raise ValueError(f"exercise must be an implement exercise, got {exercise!r} ({entry.kind})")
    as_instance("answer_id", answer_id, str, "the grade id of the exercise's answer cell")
    note = _RUNNER_NOTE.format(given=" (and a softmax standing in for attnlib.softmax)" if entry.given else "")
    if isinstance(results, str):
        return [f"{entry.function}: {results[:500]}"]
    if not isinstance(results, dict):
        return ["nothing readable came back from the grader's run of your answer cells"]
    lacking = results.get("unavailable")
    if isinstance(lacking, list) and lacking:  # the function reads what the runner does not have (runner.unavailable)
        return [_text(why, f"{entry.function} uses what the grader does not have") for why in lacking[:5]]
    cells = results.get("cells") if isinstance(results.get("cells"), dict) else {}
    stopped = [f"your answer cell {name[:60]} stopped: {_text(why, 'an error')}" for name, why in cells.items() if why is not None]
    own = [s for s in stopped if s.startswith(f"your answer cell {answer_id} ")]
    if results.get("missing") is not None or not isinstance(results.get("outputs"), list):
        why = _text(results.get("missing"), f"{entry.function} is not defined as a function by your answer cells")
        return [f"{why} ({'; '.join(own or stopped)}). {note}" if (own or stopped) else f"{why}. {note}"]
    graded = graded_cases(exercise, seed)
    outputs = [
        {"error": f"{case.label}: {_text(out['error'], 'your function raised an error')}"}
        if isinstance(out, dict) and "error" in out
        else out
        for (case, _n), out in zip(graded, results["outputs"])
    ] + results["outputs"][len(graded) :]
    failures = judge(exercise, seed, {"outputs": outputs})
    if failures and any("Error: " in f for f in failures):
        failures.append(note + (f" ({'; '.join(stopped)})" if stopped else ""))
    return failures

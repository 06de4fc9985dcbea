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
import sys
import threading
import types
from collections.abc import Callable, Iterator, Mapping
from typing import Any

import numpy as np

from .._validate import as_instance, as_seed
from .registry import EXERCISES, Exercise
from .results import ATOL, RTOL
from .sandbox import call_student

__all__ = ["HAND_IN_MIME", "collected", "decode", "encode", "exercise_of_test", "hand_in", "judge", "judge_outputs", "own_functions_called"]

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


def encode(value: Any) -> dict[str, Any]:
    """A typed value or a function's result as JSON: an array of float hex strings, or why it is none.

    Raises
    ------
    ValueError
        Never: ``value`` comes from a student's kernel; a value that is not real numbers is encoded as text.

    Examples
    --------
    >>> encode([0.5, float("inf")])
    {'shape': [2], 'bool': False, 'hex': ['0x1.0000000000000p-1', 'inf']}
    >>> encode("0.5")
    {'text': "'0.5'"}
    """
    if isinstance(value, (str, bytes)):
        return {"text": repr(value)[:80]}
    try:
        arr = np.asarray(value)
    except Exception:  # noqa: BLE001 - a student's object may raise anything
        return {"text": "(an object that is not an array)"}
    if arr.dtype.kind == "b":
        return {"shape": list(arr.shape), "bool": True, "hex": [float(x).hex() for x in arr.ravel()]}
    if arr.dtype.kind not in "iuf":
        kind = "complex numbers" if arr.dtype.kind == "c" else f"an array of {arr.dtype}"
        return {"text": f"({kind}, not real numbers)"}
    return {"shape": list(arr.shape), "bool": False, "hex": [float(x).hex() for x in arr.astype(float).ravel()]}


def decode(obj: Any) -> np.ndarray | str:
    """The array :func:`encode` wrote, or a sentence saying why there is none.

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
    >>> decode({"shape": [10**400], "hex": ["0x1p-1"]}), decode(5)
    ('nothing readable was handed in', 'nothing readable was handed in')
    """
    unreadable = "nothing readable was handed in"
    if not isinstance(obj, dict):
        return unreadable
    if "text" in obj:
        return f"it is {str(obj['text'])[:80]}, not a number"
    hexes, shape = obj.get("hex"), obj.get("shape")
    if not isinstance(hexes, list) or not isinstance(shape, list) or not all(isinstance(h, str) for h in hexes):
        return unreadable
    if not all(isinstance(n, int) and not isinstance(n, bool) and n >= 0 for n in shape) or math.prod(shape) != len(hexes):
        return unreadable
    try:
        arr = np.array([float.fromhex(h) for h in hexes], dtype=float).reshape(shape)
    except (TypeError, ValueError, OverflowError):
        return unreadable
    return arr.astype(bool) if obj.get("bool") is True else arr


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


def _payload(entry: Exercise, seed: int | None, namespace: Any) -> dict[str, Any]:
    v = entry.draw(seed)
    if entry.kind != "implement":
        names = list(entry.answer(v)) if entry.answer else []
        return {"answers": {n: encode(namespace[n]) if n in namespace else {"text": "(not defined)"} for n in names}}
    fn = namespace.get(entry.function)
    if not callable(fn):
        return {"error": f"{entry.function} is not defined as a function"}
    outputs = []
    for args in entry.calls(v):
        with own_functions_called(entry.own) as hit:
            call = call_student(fn, args)
        if hit:
            return {"own": hit}
        outputs.append({"error": call.error} if call.error else encode(call.value))
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
    >>> hand_in("6.1", None, {"o3_by_hand": 10**400}, sink=[])
    Traceback (most recent call last):
    ...
    AssertionError: o3_by_hand: it is (an array of object, not real numbers), not a number
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


def _same(got: np.ndarray | str, want: Any, exact_zero: bool) -> str | None:
    if isinstance(got, str):
        return got
    want = np.asarray(want)
    if got.shape != want.shape:
        return f"the result has shape {got.shape}, not {want.shape}"
    if want.dtype.kind == "b":
        return None if np.array_equal(got.astype(float), want.astype(float)) else "the values are not right"
    want = want.astype(float)
    if not np.all(np.isfinite(got) == np.isfinite(want)):
        return "the result has NaN or inf where it should not"
    finite = np.isfinite(want)
    if not np.allclose(got[finite], want[finite], atol=ATOL, rtol=RTOL) or not np.array_equal(got[~finite], want[~finite]):
        return "the values are not right"
    if exact_zero and np.any(got[want == 0] != 0):
        return "an entry that must be exactly 0 is not"
    return None


def _text(value: Any, fallback: str) -> str:
    """A message a student's kernel handed in, shortened; ``fallback`` when it is not a non-empty string."""
    return value[:500] if isinstance(value, str) and value else fallback


def judge(exercise: str, seed: int | None, payload: Any) -> list[str]:
    """The failures of one hand-in, judged with this process's own attnlib (empty: full marks).

    Messages name the part that is wrong, never the expected value. ``payload``
    comes from the student's kernel: whatever it holds, the result is a list
    of messages (a payload that is not what :func:`hand_in` writes gets at
    least one, so 0 marks), never an exception. ``exercise`` and ``seed`` come
    from the grader and are checked (a ValueError naming them).

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
        expected = entry.answer(v) if entry.answer else {}
        missing = [f"{name} was not handed in" for name in expected if name not in answered]
        if missing:
            return missing
        handed = {name: decode(answered[name]) for name in expected}
        unreadable_names = [f"{name}: {value}" for name, value in handed.items() if isinstance(value, str)]
        if unreadable_names:
            return unreadable_names
        if entry.judge is not None:
            return entry.judge(v, handed)
        from .registry import agrees

        return [f"{name} is not right" for name, want in expected.items() if not agrees(handed[name], want)]
    if entry.judge is not None:
        return entry.judge(v, payload)
    calls = entry.calls(v)
    outputs = payload.get("outputs")
    if not isinstance(outputs, list) or len(outputs) != len(calls):
        return ["the grader's calls of your function were not all handed in"]
    failures = []
    for k, (args, out) in enumerate(zip(calls, outputs, strict=True), start=1):
        if isinstance(out, dict) and "error" in out:
            failures.append(f"call {k} of {len(calls)}: {_text(out['error'], 'your function raised an error')}")
            continue
        with np.errstate(all="ignore"):
            why = _same(decode(out), entry.reference(*args), entry.exact_zero)
        if why:
            failures.append(f"call {k} of {len(calls)}: {why}")
    return failures


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

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
import sys
import threading
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np

from .registry import EXERCISES, Exercise

__all__ = ["HAND_IN_MIME", "collected", "decode", "encode", "exercise_of_test", "hand_in", "judge", "judge_outputs", "own_functions_called"]

#: The MIME type of a hand-in output, whose data is a JSON object ``{"exercise": "9.2", "payload": {...}}``.
HAND_IN_MIME = "application/vnd.attnlib.hand-in+json"

#: Tolerances of an implement exercise's comparison with attnlib's reference.
ATOL = RTOL = 1e-6


def _entry(number: str) -> Exercise:
    if number not in EXERCISES or not EXERCISES[number].graded_outside:
        graded = sorted(n for n, e in EXERCISES.items() if e.graded_outside)
        raise ValueError(f"exercise must be one of the autograded exercises {graded}, got {number!r}")
    return EXERCISES[number]


def exercise_of_test(grade_id: str) -> Exercise | None:
    """The autograded exercise whose test cell has grade id ``grade_id`` (None for other cells).

    Examples
    --------
    >>> exercise_of_test("ch09-ex2-test").number, exercise_of_test("ch09-ex4-written")
    ('9.2', None)
    """
    for entry in EXERCISES.values():
        if entry.graded_outside and entry.test_id == grade_id:
            return entry
    return None


# --- values as JSON, exactly (NaN and infinities included) ---------------------------------------


def encode(value: Any) -> dict[str, Any]:
    """A typed value or a function's result as JSON: an array of float hex strings, or why it is none.

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
    """The array :func:`encode` wrote, or a sentence saying why there is none."""
    if not isinstance(obj, dict):
        return "nothing readable was handed in"
    if "text" in obj:
        return f"it is {obj['text']}, not a number"
    try:
        arr = np.array([float.fromhex(h) for h in obj["hex"]], dtype=float).reshape(obj["shape"])
    except (KeyError, TypeError, ValueError):
        return "nothing readable was handed in"
    return arr.astype(bool) if obj.get("bool") else arr


# --- in the student's kernel ------------------------------------------------------------------


def _code_of(fn: Callable[..., Any]) -> Any:
    return getattr(inspect.unwrap(fn), "__code__", None)


@contextlib.contextmanager
def own_functions_called(own: tuple[Callable[..., Any], ...]) -> Iterator[list[str]]:
    """Watch for calls of the functions ``own`` (by their code, so aliases and wrappers count); yields their names.

    Examples
    --------
    >>> import attnlib
    >>> with own_functions_called((attnlib.causal_mask,)) as hit:
    ...     _ = (lambda n: attnlib.causal_mask(n))(3)
    >>> hit
    ['causal_mask']
    """
    codes = {c: fn.__name__ for fn in own if (c := _code_of(fn)) is not None}
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
    return f"{entry.function} is attnlib's own {' / '.join(names)} (or calls it): the exercise is to write it yourself."


def _payload(entry: Exercise, seed: int | None, namespace: Any) -> dict[str, Any]:
    from ..checks.runner import call_student

    v = entry.draw(seed)
    if entry.kind != "implement":
        names = list(entry.answer(v)) if entry.answer else []
        return {"answers": {n: encode(namespace[n]) if n in namespace else {"text": "(not defined)"} for n in names}}
    fn = namespace.get(entry.function) if hasattr(namespace, "get") else None
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
    """
    entry = _entry(exercise)
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


def judge(exercise: str, seed: int | None, payload: Any) -> list[str]:
    """The failures of one hand-in, judged with this process's own attnlib (empty: full marks).

    Messages name the part that is wrong, never the expected value.
    """
    entry = _entry(exercise)
    v = entry.draw(seed)
    if not isinstance(payload, dict):
        return ["nothing readable was handed in"]
    if "own" in payload:
        return [_own_message(entry, list(payload["own"]))]
    if "error" in payload:
        return [str(payload["error"])]
    if entry.kind != "implement":
        handed = {name: decode(obj) for name, obj in dict(payload.get("answers", {})).items()}
        expected = entry.answer(v) if entry.answer else {}
        missing = [f"{name} was not handed in" for name in expected if name not in handed]
        if missing:
            return missing
        unreadable = [f"{name}: {value}" for name, value in handed.items() if isinstance(value, str)]
        if unreadable:
            return unreadable
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
            failures.append(f"call {k} of {len(calls)}: {out['error']}")
            continue
        why = _same(decode(out), entry.reference(*args), entry.exact_zero)
        if why:
            failures.append(f"call {k} of {len(calls)}: {why}")
    return failures


def judge_outputs(exercise: str, seed: int | None, outputs: list[Any]) -> list[str]:
    """Judge the hand-in among a test cell's ``outputs`` (exactly one is expected)."""
    records = [o["data"][HAND_IN_MIME] for o in outputs if o.get("output_type") == "display_data" and HAND_IN_MIME in o.get("data", {})]
    if not records:
        return [f"exercise {exercise}: nothing was handed in for grading (the test cell did not run to its end)"]
    if len(records) > 1:
        return [f"exercise {exercise}: more than one hand-in in one test cell"]
    record = records[0]
    if not isinstance(record, dict) or record.get("exercise") != exercise:
        return [f"exercise {exercise}: the hand-in is for another exercise"]
    return judge(exercise, seed, record.get("payload"))

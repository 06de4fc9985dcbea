"""The grader's runner: a student's answer cells and function, in a process that has numpy and nothing of attnlib.

This module imports only Python's standard library and numpy, so the grader
can copy its file into a fresh sandboxed process in which attnlib cannot be
imported (``python -I -S runner.py FOLDER``). There :func:`run_folder` reads
what the grader wrote into ``FOLDER`` (``request.json``: the answer cells'
source, the function's name, the arguments' layout; ``inputs.npz``: the
arrays, read without pickle), runs the cells one by one in a namespace that
holds ``np`` (and the names the exercise gives, such as a ``softmax`` standing
in for ``attnlib.softmax``), calls the function on every case with a time
limit per call, and writes ``results.json``: what each cell raised and each
call's result as :func:`encode` writes it. The grader judges those results in
its own process.

Examples
--------
>>> encode(np.array([True, False]))
{'shape': [2], 'bool': True, 'hex': ['0x1.0000000000000p+0', '0x0.0p+0'], 'dtype': 'bool'}
>>> softmax(np.array([0.0, -np.inf])).tolist()
[1.0, 0.0]
"""

from __future__ import annotations

import contextlib
import io
import json
import linecache
import signal
import sys
import traceback
import types
from pathlib import Path
from typing import Any

import numpy as np

__all__ = ["ARRAY_DTYPES", "CELL_FILE", "RESULTS", "encode", "run_folder", "softmax"]

#: The dtypes a handed-in array keeps, so that the grader sees an int64 mask or a float32 result as what it
#: is and judges it as the self-check does; an array of any other dtype is written as text.
ARRAY_DTYPES = frozenset(
    ["bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64", "float16", "float32", "float64"]
    + ["complex64", "complex128"]
)
#: The file the runner names a cell by in tracebacks (``<answer cell ch09-ex2-answer>``).
CELL_FILE = "<answer cell {}>"
#: The file the runner writes its results to, in the folder it was given.
RESULTS = "results.json"


def encode(value: Any) -> dict[str, Any]:
    """A function's result as JSON: its shape, dtype and entries as float hex strings (None, a masked array kept as such).

    Raises
    ------
    ValueError
        Never: ``value`` comes from a student's code; a value that is not numbers is encoded as text.

    Examples
    --------
    >>> encode([0.5, float("inf")])
    {'shape': [2], 'bool': False, 'hex': ['0x1.0000000000000p-1', 'inf'], 'dtype': 'float64'}
    >>> encode("0.5"), encode(None)
    ({'text': "'0.5'", 'string': '0.5'}, {'none': True})
    """
    if value is None:
        return {"none": True}
    if isinstance(value, (str, bytes)):  # the text itself too: the comparator judges it as the self-check does
        return {"text": repr(value)[:80], "string": value[:200] if isinstance(value, str) else repr(value)[:200]}
    try:
        arr = np.asarray(value)
    except Exception:  # noqa: BLE001 - a student's object may raise anything
        return {"text": "(an object that is not an array)"}
    extra: dict[str, Any] = {"masked": True} if isinstance(value, np.ma.MaskedArray) else {}
    if arr.dtype.kind == "b":
        return {"shape": list(arr.shape), "bool": True, "hex": [float(x).hex() for x in arr.ravel()], "dtype": "bool", **extra}
    if arr.dtype.kind == "c" and arr.dtype.name in ARRAY_DTYPES:
        return {
            "shape": list(arr.shape),
            "bool": False,
            "hex": [float(x).hex() for x in arr.real.ravel()],
            "imag": [float(x).hex() for x in arr.imag.ravel()],
            "dtype": arr.dtype.name,
            **extra,
        }
    if arr.dtype.kind not in "iuf":
        return {"text": f"(an array of {arr.dtype}, not real numbers)", "shape": list(arr.shape), "dtype": str(arr.dtype)[:40]}
    dtype = arr.dtype.name if arr.dtype.name in ARRAY_DTYPES else "float64"
    with np.errstate(all="ignore"):
        hexes = [float(x).hex() for x in arr.astype(float).ravel()]
    return {"shape": list(arr.shape), "bool": False, "hex": hexes, "dtype": dtype, **extra}


def softmax(x: Any, axis: int = -1) -> np.ndarray:
    """Softmax along ``axis``: what the grader's runner gives a student's code as ``attnlib.softmax`` where the exercise allows it.

    Written here with numpy only (the runner has no attnlib), it refuses what ``attnlib.softmax`` refuses, so a
    student's call behaves as in the notebook: ``-inf`` is weight 0, a slice of only ``-inf`` is refused.

    Raises
    ------
    ValueError
        If ``x`` is not a non-empty array (of 1 to 4 dimensions) of real numbers without NaN or ``+inf``, a
        slice along ``axis`` is entirely ``-inf``, or ``axis`` is not an axis of ``x``; the message names it.

    Examples
    --------
    >>> softmax([[0.0, 0.0], [1000.0, 0.0]]).round(4).tolist()
    [[0.5, 0.5], [1.0, 0.0]]
    >>> softmax([-np.inf, -np.inf])
    Traceback (most recent call last):
    ...
    ValueError: softmax of x: a slice along axis -1 is entirely -inf, so no entry may receive weight
    """
    try:
        arr = np.asarray(x)
    except (ValueError, TypeError):
        raise ValueError(f"x must be an array of real numbers; it is ragged or not numbers: {x!r:.80}") from None
    if not isinstance(x, np.ndarray) and arr.dtype.kind != "b" and arr.size < 10**6:
        if any(isinstance(v, (bool, np.bool_)) for v in np.asarray(x, dtype=object).ravel()):
            raise ValueError(f"x must be an array of real numbers; it mixes booleans with numbers: {x!r:.80}")
    if arr.dtype.kind not in "iuf" or arr.dtype == object:
        raise ValueError(f"x must be an array of real numbers, got dtype {arr.dtype} ({x!r:.80})")
    if not 1 <= arr.ndim <= 4 or arr.size == 0:
        raise ValueError(f"x must be a non-empty array of 1 to 4 dimensions, got shape {arr.shape}")
    if isinstance(axis, bool) or not isinstance(axis, (int, np.integer)) or not -arr.ndim <= axis < arr.ndim:
        raise ValueError(f"axis must be an axis of x (an integer from {-arr.ndim} to {arr.ndim - 1}), got {axis!r:.40}")
    x = arr.astype(float)
    if np.isnan(x).any() or np.isposinf(x).any():
        raise ValueError("x contains NaN or inf; entries must be finite (or -inf for a key with weight 0)")
    if np.isneginf(x).all(axis=axis).any():
        raise ValueError(f"softmax of x: a slice along axis {axis} is entirely -inf, so no entry may receive weight")
    with np.errstate(over="ignore", invalid="ignore"):
        e = np.exp(x - np.max(x, axis=axis, keepdims=True))
        return e / np.sum(e, axis=axis, keepdims=True)


class _TimeUp(BaseException):
    """Raised in the student's code when its time is up."""


class _Discard(io.TextIOBase):
    """Where the student's printing goes: nowhere (the grader reads results, not prints)."""

    def writable(self) -> bool:
        return True

    def write(self, text: Any) -> int:
        return len(text) if isinstance(text, str) else 0


def _alarm(signum: int, frame: Any) -> None:
    raise _TimeUp()


def _timed(seconds: float, fn: Any, *args: Any) -> Any:
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        return fn(*args)
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)


def _text(exc: BaseException) -> str:
    try:
        message = str(exc)[:300]
    except BaseException:  # noqa: BLE001 - a student's exception may refuse to be shown
        message = ""
    kind = type(exc).__name__
    return f"{kind}: {message}" if message else kind


def _where(exc: BaseException, cell: bool = True) -> str:
    """`` at line 3 of answer cell ch04-ex3-answer (return attnlib.attention(Q, K, V))``: the student's last line.

    Without ``cell`` the cell is not named: `` at line 3 (return ...)``, the self-check's own words for a
    call of the student's function (attnlib.exercises.sandbox.where_student_code_failed), so that the
    grader's reason is the self-check's.
    """
    frames = [f for f in traceback.extract_tb(exc.__traceback__) if f.filename.startswith("<answer cell ")]
    if not frames:
        return ""
    last = frames[-1]
    line = f" ({last.line.strip()})" if last.line else ""
    return f" at line {last.lineno} of {last.filename[1:-1]}{line}" if cell else f" at line {last.lineno}{line}"


def _arguments(layout: list[Any], arrays: Any) -> tuple[Any, ...]:
    out = []
    for spec in layout:
        if "array" in spec:
            out.append(np.array(arrays[spec["array"]]))
        elif "float" in spec:
            out.append(float.fromhex(spec["float"]))
        else:
            out.append(spec["value"])
    return tuple(out)


def run_folder(folder: str | Path) -> dict[str, Any]:
    """Run the request the grader wrote into ``folder``; write and return the results (``results.json``).

    Raises
    ------
    ValueError
        If ``folder`` is not a folder (a str or Path) holding a ``request.json`` as the grader writes it; the
        message names it.

    Examples
    --------
    >>> run_folder("/nonexistent/folder")
    Traceback (most recent call last):
    ...
    ValueError: folder must be a folder holding the grader's request.json, got '/nonexistent/folder'
    """
    if not isinstance(folder, (str, Path)) or not str(folder) or not (Path(folder) / "request.json").is_file():
        raise ValueError(f"folder must be a folder holding the grader's request.json, got {folder!r:.80}")
    folder = Path(folder)
    try:
        request = json.loads((folder / "request.json").read_text())
        keys = ("cells", "function", "given", "cases", "call_seconds", "cell_seconds")
        if not isinstance(request, dict) or any(k not in request for k in keys):
            raise ValueError("not a request")
    except ValueError:
        why = f"folder must be a folder holding the grader's request.json, got {str(folder)!r:.80} (its request.json is not one)"
        raise ValueError(why) from None
    namespace: dict[str, Any] = {"__name__": "__answers__", "np": np}
    if "attnlib.softmax" in request["given"]:
        namespace["attnlib"] = types.SimpleNamespace(softmax=softmax)
    previous = signal.signal(signal.SIGALRM, _alarm)
    results: dict[str, Any] = {"cells": {}, "outputs": None, "missing": None}
    sink = _Discard()
    for name, source in request["cells"]:
        (folder / "progress.txt").write_text(name)
        try:
            filename = CELL_FILE.format(name)
            # the cell's lines for tracebacks, so the grader quotes the student's line as the self-check does
            linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
            code = compile(source, filename, "exec")
            with contextlib.redirect_stdout(sink), contextlib.redirect_stderr(sink):
                _timed(request["cell_seconds"], exec, code, namespace)
            results["cells"][name] = None
        except _TimeUp:
            results["cells"][name] = f"it ran past the time limit of {request['cell_seconds']:g} s"
        except BaseException as exc:  # noqa: BLE001 - SystemExit and KeyboardInterrupt included: the cell failed
            results["cells"][name] = f"{_text(exc)}{_where(exc)}"
    fn = namespace.get(request["function"])
    if not callable(fn):
        results["missing"] = f"{request['function']} is not defined as a function by your answer cells"
    else:
        (folder / "progress.txt").write_text("calls")
        with np.load(folder / "inputs.npz", allow_pickle=False) as arrays:
            cases = [_arguments(layout, arrays) for layout in request["cases"]]
        outputs: list[dict[str, Any]] = []
        for args in cases:
            if outputs and outputs[-1].get("timed out"):  # one endless call is enough: the rest are not waited for
                outputs.append(outputs[-1])
                continue
            given = tuple(a.copy() if isinstance(a, np.ndarray) else a for a in args)
            try:
                with contextlib.redirect_stdout(sink), contextlib.redirect_stderr(sink), np.errstate(all="ignore"):
                    value = _timed(request["call_seconds"], fn, *given)
                changed = [
                    k for k, (a, b) in enumerate(zip(args, given)) if isinstance(a, np.ndarray) and not np.array_equal(a, b, equal_nan=True)
                ]
                if changed:
                    outputs.append({"error": f"your function changed its input (argument {changed[0] + 1}) in place; work on a copy."})
                else:
                    outputs.append(encode(value))
            except _TimeUp:
                seconds = request["call_seconds"]
                text = f"your function did not finish within the time limit of {seconds:g} seconds per call."
                outputs.append({"error": text, "timed out": True})
            except BaseException as exc:  # noqa: BLE001 - whatever the student's function raises is its result
                outputs.append({"error": f"your function raised {_text(exc)}{_where(exc, cell=False)}."})
        results["outputs"] = outputs
    signal.signal(signal.SIGALRM, previous)
    (folder / RESULTS).write_text(json.dumps(results))
    return results


if __name__ == "__main__":  # pragma: no cover - run by the grader in its sandbox
    run_folder(sys.argv[1])

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

import builtins
import contextlib
import dis
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

__all__ = ["ARRAY_DTYPES", "CELL_FILE", "RESULTS", "encode", "run_folder", "softmax", "unavailable"]

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


def _reads(code: types.CodeType) -> tuple[list[tuple[str, str | None]], set[str]]:
    """The global names ``code`` (and the code nested in it) reads, each with the attribute read from it first,
    and the names it imports or assigns as globals itself."""
    found: list[tuple[str, str | None]] = []
    own: set[str] = set()
    todo = [code]
    while todo:
        current = todo.pop()
        todo += [c for c in current.co_consts if isinstance(c, types.CodeType)]
        instructions = list(dis.get_instructions(current))
        for k, ins in enumerate(instructions):
            if ins.opname in ("STORE_GLOBAL", "DELETE_GLOBAL"):
                own.add(ins.argval)
            elif ins.opname == "IMPORT_NAME" and (ins.argval == "attnlib" or str(ins.argval).startswith("attnlib.")):
                found.append((str(ins.argval), None))
            elif ins.opname == "LOAD_GLOBAL":
                after = instructions[k + 1] if k + 1 < len(instructions) else None
                attr = after.argval if after is not None and after.opname in ("LOAD_ATTR", "LOAD_METHOD") else None
                found.append((ins.argval, attr if isinstance(attr, str) else None))
    return found, own


#: attnlib's folder where this file is attnlib's (in the grader's sandbox it is a copy, and nothing is attnlib's).
_HOME = str(Path(__file__).resolve().parent.parent) + "/"


def _is_attnlib(value: Any) -> bool:
    """Whether ``value`` is attnlib, one of its modules, or a function, class or object of it.

    A function is attnlib's by its code's file (so a function a docstring example defines is not), or by its
    module if its code was compiled from a copy of attnlib's source.
    """
    try:
        if isinstance(value, types.ModuleType):
            name = value.__name__
        elif isinstance(getattr(value, "__code__", None), types.CodeType):
            where = value.__code__.co_filename
            if str(Path(where).resolve()).startswith(_HOME) if not where.startswith("<") else False:
                return True
            name = value.__module__ if not where.startswith("<") else ""
        else:
            name = getattr(value, "__module__", None)
            name = name if isinstance(name, str) else type(value).__module__
        return isinstance(name, str) and (name == "attnlib" or name.startswith("attnlib."))
    except Exception:  # noqa: BLE001 - a student's object may refuse to be looked at
        return False


def unavailable(fn: Any, function: str, namespace: dict[str, Any], given: list[str] | tuple[str, ...] = ()) -> list[str]:
    """Why the grader cannot run ``fn``: the names it reads that ``namespace`` does not hold, or that are attnlib's.

    ``fn`` is the student's function ``function``; ``namespace`` is what the grader's run of the answer cells
    defined (in the notebook's self-check: the notebook's names the grader would have too). Read without
    running anything: the global names of ``fn``'s code, of the code nested in it and of the student's
    functions of ``namespace`` it reads, each with the attribute read from it (``attnlib.chunked_attention``).
    A name is missing if neither ``namespace`` nor Python's built-ins hold it; attnlib (imported, or a module,
    function or object of it) is missing except the names ``given`` allows (``attnlib.softmax``). Returns
    ``[]`` or one sentence naming them, the same in the notebook and in the grader.

    Raises
    ------
    ValueError
        If ``function`` is not a string, ``namespace`` not a dict or ``given`` not a list or tuple of strings;
        the message names it. ``fn`` comes from a student's code: a value without code gives ``[]``.

    Examples
    --------
    >>> def my_attention(Q, K, V):
    ...     return attnlib.chunked_attention(Q, K, V, block_size=2) + 0 * X
    >>> unavailable(my_attention, "my_attention", {"np": np}, ["attnlib.softmax"])[0].split(":")[0]
    'my_attention uses attnlib.chunked_attention and X, which the grader does not have'
    """
    if not isinstance(function, str):
        raise ValueError(f"function must be the name of the student's function (a string), got {function!r:.60}")
    if not isinstance(namespace, dict):
        raise ValueError(f"namespace must be a dict of the names the grader's run defines, got {type(namespace).__name__}")
    if not isinstance(given, (list, tuple)) or not all(isinstance(g, str) for g in given):
        raise ValueError(f"given must be a list of the names the exercise gives (such as 'attnlib.softmax'), got {given!r:.60}")
    offered = " (and a softmax standing in for attnlib.softmax)" if given else ""
    if _is_attnlib(fn) and not isinstance(fn, types.ModuleType):
        name = getattr(fn, "__name__", "implementation")
        return [f"{function} is attnlib's own {name} (or calls it): the exercise is to write it yourself."]
    missing: list[str] = []
    undefined: list[str] = []
    seen: set[int] = set()
    todo = [fn]
    while todo:
        current = todo.pop()
        code = getattr(current, "__code__", None)
        if not isinstance(code, types.CodeType) or id(code) in seen:
            continue
        seen.add(id(code))
        reads, own = _reads(code)
        for name, attr in reads:
            expr = f"{name}.{attr}" if name == "attnlib" and attr else name
            if name in own or expr in missing:
                continue
            if name.startswith("attnlib") and name not in namespace:  # an import of attnlib, or its name unset
                missing.append(expr)
            elif name not in namespace:
                if not hasattr(builtins, name):
                    missing.append(expr)
                    undefined.append(name)
            elif _is_attnlib(namespace[name]):
                if not (name == "attnlib" and expr in given):
                    missing.append(expr)
            elif isinstance(namespace[name], types.FunctionType) and namespace[name].__globals__ is getattr(fn, "__globals__", None):
                todo.append(namespace[name])  # another function of the student's: what it reads counts too
    if not missing:
        return []
    names = missing[0] if len(missing) == 1 else ", ".join(missing[:-1]) + f" and {missing[-1]}"
    there = f" (there: NameError: name '{undefined[0]}' is not defined)" if undefined else ""
    return [
        f"{function} uses {names}, which the grader does not have: it runs your answer cells, in order, with numpy as np"
        f"{offered}, but neither attnlib nor the notebook's other cells and variables{there}."
    ]


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
        namespace["attnlib"] = types.ModuleType("attnlib", "The grader's stand-in: its softmax only.")
        namespace["attnlib"].softmax = softmax
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
    lacking = unavailable(fn, request["function"], namespace, request["given"]) if callable(fn) else []
    if not callable(fn):
        results["missing"] = f"{request['function']} is not defined as a function by your answer cells"
    elif lacking:
        results["unavailable"] = lacking
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

"""What the student wrote, read from the answer cells' source: typed numbers, and the cells an implement exercise runs.

The grader does not take a by-hand answer from the kernel (where any name may
have been computed by a call to attnlib); it reads the numbers typed in the
answer cell with :func:`typed_answers`, which evaluates only a small, safe set
of expressions:

* numbers (``0.5875``, ``3``), and text or True/False (kept as typed, so the
  check says they are not numbers);
* lists and tuples of these;
* ``+ - * / // % **`` and unary ``+ -`` (integer powers and products up to
  :data:`MAX_DIGITS` digits);
* the constants ``pi``, ``e``, ``tau``, ``inf`` of ``math``, ``np`` or ``numpy``;
* the functions :data:`FUNCTIONS` of ``math``, ``np`` or ``numpy`` (``math.exp(1)``),
  the built-ins ``abs``, ``float``, ``int``, ``round``, ``sum``, ``min`` and ``max``,
  and ``np.array(...)`` or ``np.asarray(...)`` of a list;
* names typed earlier in the same cell (``g_bar = 0.5 * 3``, then ``dz_row = [0.5 * (3 - g_bar), ...]``).

Anything else (a call of ``variants.answers``, a name of the notebook) makes
the name it defines unreadable, with a reason naming it; an unreadable answer
scores 0. :func:`answer_sources` picks the answer cells whose source the
grader runs for an implement exercise.

Examples
--------
>>> typed_answers("o_by_hand = [5/8, 1 - 5/8]  # exact", ["o_by_hand"])
({'o_by_hand': [0.625, 0.375]}, {})
>>> typed_answers("o_by_hand = variants.answers(v)['o_by_hand']", ["o_by_hand"])[1]["o_by_hand"].split(". ")[0]
"o_by_hand is not read as typed numbers: variants.answers(v)['o_by_hand'] is not one"
"""

from __future__ import annotations

import ast
import builtins
import math
from collections.abc import Iterable, Sequence
from typing import Any

from .._validate import as_instance

__all__ = ["CONSTANTS", "FUNCTIONS", "MAX_DIGITS", "answer_cell_id", "answer_sources", "typed_answers"]

#: The functions of ``math``, ``np`` and ``numpy`` a typed answer may use, each on numbers (or a list, entry by entry).
FUNCTIONS = ("exp", "log", "log2", "log10", "sqrt", "sin", "cos", "tan", "tanh")
#: The constants of ``math``, ``np`` and ``numpy`` a typed answer may use.
CONSTANTS = {"pi": math.pi, "e": math.e, "tau": math.tau, "inf": math.inf}
#: The most decimal digits an integer of a typed answer may have (so ``9**9**9`` is refused, not computed).
MAX_DIGITS = 4000
_MODULES = ("math", "np", "numpy")
_BUILTINS = ("abs", "float", "int", "round", "sum", "min", "max")
_LONGEST = 10_000  # entries of a typed list


class _Unread(Exception):
    """An expression the reader does not evaluate; the message says what, in the student's words."""


def _short(node: ast.AST) -> str:
    text = ast.unparse(node)
    return text if len(text) <= 60 else text[:57] + "..."


def _digits_ok(value: Any) -> Any:
    if isinstance(value, int) and not isinstance(value, bool) and value.bit_length() > MAX_DIGITS * 3.33:
        raise _Unread(f"a number of more than {MAX_DIGITS} digits")
    return value


def _number(value: Any, node: ast.AST) -> Any:
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return value
    raise _Unread(f"{_short(node)} (not a number)")


def _binary(op: ast.operator, left: Any, right: Any, node: ast.BinOp) -> Any:
    if isinstance(op, ast.Mult) and isinstance(left, list) and isinstance(right, int) and not isinstance(right, bool):
        if 0 <= right and len(left) * right <= _LONGEST:
            return left * right
        raise _Unread(f"{_short(node)} (too long a list)")
    a, b = _number(left, node.left), _number(right, node.right)
    if isinstance(op, ast.Pow) and isinstance(a, int) and isinstance(b, int) and b > 0:
        if abs(a) > 1 and b * math.log10(abs(a)) > MAX_DIGITS:
            raise _Unread(f"{_short(node)} (a number of more than {MAX_DIGITS} digits)")
    if isinstance(op, ast.Mult) and isinstance(a, int) and isinstance(b, int):
        _digits_ok(a * b if a.bit_length() + b.bit_length() <= MAX_DIGITS * 4 else 10 ** (MAX_DIGITS + 1))
    operations = {
        ast.Add: lambda: a + b,
        ast.Sub: lambda: a - b,
        ast.Mult: lambda: a * b,
        ast.Div: lambda: a / b,
        ast.FloorDiv: lambda: a // b,
        ast.Mod: lambda: a % b,
        ast.Pow: lambda: a**b,
    }
    if type(op) not in operations:
        raise _Unread(f"{_short(node)} (an operator other than + - * / // % **)")
    try:
        result = operations[type(op)]()
    except (ZeroDivisionError, OverflowError, ValueError) as exc:
        raise _Unread(f"{_short(node)} ({type(exc).__name__}: {exc})") from None
    if isinstance(result, complex):
        raise _Unread(f"{_short(node)} (a complex number)")
    return _digits_ok(result)


def _call(node: ast.Call, read: Any) -> Any:
    func = node.func
    if node.keywords or any(isinstance(a, ast.Starred) for a in node.args):
        raise _Unread(f"{_short(node)} (a call with keywords or *)")
    args = [read(a) for a in node.args]
    if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) and func.value.id in _MODULES:
        if func.attr in ("array", "asarray") and func.value.id != "math" and len(args) == 1:
            return args[0]
        if func.attr in FUNCTIONS and len(args) == 1:
            return _elementwise(func.attr, args[0], node)
    if isinstance(func, ast.Name) and func.id in _BUILTINS:
        try:
            return _digits_ok(getattr(builtins, func.id)(*args))
        except (TypeError, ValueError, OverflowError) as exc:
            raise _Unread(f"{_short(node)} ({type(exc).__name__}: {exc})") from None
    raise _Unread(f"{_short(node)}")


def _elementwise(name: str, value: Any, node: ast.AST) -> Any:
    if isinstance(value, list):
        return [_elementwise(name, v, node) for v in value]
    x = _number(value, node)
    try:
        return float(getattr(math, name)(x))
    except (ValueError, OverflowError) as exc:
        raise _Unread(f"{_short(node)} ({type(exc).__name__}: {exc})") from None


def _reader(env: dict[str, Any]) -> Any:
    def read(node: ast.AST) -> Any:
        if isinstance(node, ast.Constant) and isinstance(node.value, (int, float, str, bool)):
            return _digits_ok(node.value)
        if isinstance(node, (ast.List, ast.Tuple)):
            if len(node.elts) > _LONGEST:
                raise _Unread(f"{_short(node)} (too long a list)")
            return [read(e) for e in node.elts]
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.UAdd, ast.USub)):
            value = _number(read(node.operand), node.operand)
            return -value if isinstance(node.op, ast.USub) else +value
        if isinstance(node, ast.BinOp):
            return _binary(node.op, read(node.left), read(node.right), node)
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in _MODULES and node.attr in CONSTANTS:
            return CONSTANTS[node.attr]
        if isinstance(node, ast.Call):
            return _call(node, read)
        if isinstance(node, ast.Name):
            if node.id not in env:
                raise _Unread(f"{node.id} (a name this cell does not type)")
            if isinstance(env[node.id], _Unread):
                raise _Unread(f"{node.id} (a name that is not read as typed numbers either)")
            return env[node.id]
        raise _Unread(_short(node))

    return read


def _names_stored(node: ast.AST) -> set[str]:
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}


def _why(name: str, problem: _Unread) -> str:
    return (
        f"{name} is not read as typed numbers: {problem} is not one. The grader reads the numbers typed in the "
        "answer cell (numbers, lists of them, + - * / // % **, math.exp, math.sqrt and the like, and names typed "
        "earlier in the cell), never a value computed in the notebook."
    )


def _assign(env: dict[str, Any], target: ast.AST, value: Any) -> None:
    if isinstance(target, ast.Name):
        env[target.id] = value
        return
    if isinstance(target, (ast.Tuple, ast.List)) and all(isinstance(t, ast.Name) for t in target.elts):
        if isinstance(value, _Unread):
            for t in target.elts:
                env[t.id] = value  # type: ignore[attr-defined]
            return
        if isinstance(value, list) and len(value) == len(target.elts):
            for t, v in zip(target.elts, value):
                env[t.id] = v  # type: ignore[attr-defined]
            return
        problem = _Unread(f"{_short(target)} = ... (the numbers of values and names differ)")
        for t in target.elts:
            env[t.id] = problem  # type: ignore[attr-defined]
        return
    for name in _names_stored(target):
        env[name] = _Unread(f"{_short(target)} = ... (an assignment the reader does not follow)")


def typed_answers(source: str, names: Iterable[str]) -> tuple[dict[str, Any], dict[str, str]]:
    """The numbers typed for ``names`` in an answer cell's ``source``, and a reason for each name that is not typed numbers.

    The statements of ``source`` are read in order, without running them: an
    assignment (``=``, ``+=`` and the like, ``a, b = 1, 2``) whose value is
    made of what the module docstring lists is read; any other value, or a
    name assigned inside a loop, a condition or a function, is unreadable,
    and so is every value that uses it. Other statements (``import math``,
    ``print(x)``) are passed over. Returns ``(read, unreadable)``: name -> value
    (numbers, lists, text or True/False as typed) and name -> the reason;
    a name that ``source`` never assigns is in neither.

    Raises
    ------
    ValueError
        If ``source`` is not a string or ``names`` is not a list (or tuple, or set) of strings; the message
        names it. A source that is not valid Python makes every name unreadable, with the reason.

    Examples
    --------
    >>> typed_answers("g = 0.5 * 3\\nrow = [0.5 * (3 - g), round(math.exp(1), 4)]", ["row"])
    ({'row': [0.75, 2.7183]}, {})
    >>> typed_answers("x = 2 **", ["x"])[1]["x"]
    'x is not read: the answer cell is not valid Python (SyntaxError: invalid syntax, line 1).'
    >>> typed_answers(b"x = 1", ["x"])
    Traceback (most recent call last):
    ...
    ValueError: source must be the answer cell's source, a string, got b'x = 1' (bytes)
    """
    as_instance("source", source, str, "the answer cell's source, a string")
    as_instance("names", names, (list, tuple, set, frozenset), "a list of the answer's names")
    wanted = list(names)
    if not all(isinstance(n, str) for n in wanted):
        raise ValueError(f"names must be a list of the answer's names (strings), got {wanted!r:.80}")
    try:
        tree = ast.parse(source)
    except (RecursionError, MemoryError):
        return {}, {n: f"{n} is not read: the answer cell is nested too deeply to read." for n in wanted}
    except (SyntaxError, ValueError) as exc:
        line = f", line {exc.lineno}" if isinstance(exc, SyntaxError) and exc.lineno else ""
        kind = type(exc).__name__
        message = exc.msg if isinstance(exc, SyntaxError) else str(exc)
        return {}, {n: f"{n} is not read: the answer cell is not valid Python ({kind}: {message}{line})." for n in wanted}
    env: dict[str, Any] = {}
    read = _reader(env)
    for statement in tree.body:
        try:
            if isinstance(statement, ast.Assign):
                value: Any = read(statement.value)
            elif isinstance(statement, ast.AnnAssign) and statement.value is not None:
                value = read(statement.value)
            elif isinstance(statement, ast.AugAssign) and isinstance(statement.target, ast.Name):
                left = ast.Name(statement.target.id, ast.Load())
                value = read(ast.copy_location(ast.BinOp(left, statement.op, statement.value), statement))
            else:
                for name in _names_stored(statement):
                    env[name] = _Unread(f"an assignment inside a {type(statement).__name__.lower()} statement")
                continue
        except _Unread as problem:
            value = problem
        except RecursionError:
            value = _Unread("an expression nested too deeply")
        targets = statement.targets if isinstance(statement, ast.Assign) else [statement.target]
        for target in targets:
            _assign(env, target, value)
    read_values = {n: env[n] for n in wanted if n in env and not isinstance(env[n], _Unread)}
    unreadable = {n: _why(n, env[n]) for n in wanted if isinstance(env.get(n), _Unread)}
    return read_values, unreadable


def answer_cell_id(test_id: str) -> str:
    """The grade id of the answer cell of the exercise whose test cell is ``test_id`` (``ch09-ex2-test`` -> ``ch09-ex2-answer``).

    Raises
    ------
    ValueError
        If ``test_id`` is not a test cell's grade id (a string ending in ``-test``); the message names it.

    Examples
    --------
    >>> answer_cell_id("ch09-ex2-test")
    'ch09-ex2-answer'
    """
    if not isinstance(test_id, str) or not test_id.endswith("-test"):
        raise ValueError(f"test_id must be a test cell's grade id ending in '-test', got {test_id!r:.60}")
    return test_id[: -len("-test")] + "-answer"


def answer_sources(cells: Sequence[Any], answer_id: str) -> list[tuple[str, str]]:
    """``(grade id, source)`` of the answer code cells of ``cells``, in order, up to and including the cell ``answer_id``.

    ``cells`` are a notebook's cells as nbformat reads them (mappings with ``cell_type``, ``source`` and
    ``metadata``); an answer cell is a code cell whose nbgrader metadata says ``solution``. Cells a student
    added, test cells and the notebook's setup are left out: the grader runs only what the student wrote
    in the answer cells. Empty if there is no answer cell ``answer_id``.

    Raises
    ------
    ValueError
        If ``cells`` is not a list of notebook cells or ``answer_id`` is not a string; the message names it.

    Examples
    --------
    >>> def cell(gid, source, solution=True):
    ...     return {"cell_type": "code", "source": source, "metadata": {"nbgrader": {"grade_id": gid, "solution": solution}}}
    >>> cells = [cell("a-answer", "x = 1"), cell("a-test", "check()", False), cell("b-answer", "def f(): ..."), cell("c-answer", "")]
    >>> answer_sources(cells, "b-answer")
    [('a-answer', 'x = 1'), ('b-answer', 'def f(): ...')]
    """
    as_instance("cells", cells, (list, tuple), "a list of notebook cells")
    as_instance("answer_id", answer_id, str, "an answer cell's grade id")
    found: list[tuple[str, str]] = []
    for cell in cells:
        if not hasattr(cell, "get"):
            raise ValueError(f"cells must be a list of notebook cells (mappings), got an item {cell!r:.60}")
        meta = cell.get("metadata", {}).get("nbgrader", {}) if hasattr(cell.get("metadata", {}), "get") else {}
        if cell.get("cell_type") != "code" or not isinstance(meta, dict) or not meta.get("solution"):
            continue
        gid, source = meta.get("grade_id"), cell.get("source", "")
        if not isinstance(gid, str) or not isinstance(source, str):
            continue
        found.append((gid, source))
        if gid == answer_id:
            return found
    return []

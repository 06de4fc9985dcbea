"""The table of right and wrong student answers of issue 49, one source for every column that judges them.

For every implement and by-hand exercise (and the measured 15.3), a list of answers: the right one and
typical wrong ones, plus the findings of the issue. tests/exercises/test_one_comparator.py puts each
row to the self-check, ``check_by_hand``, the in-kernel hand-in and the grader's judge in process;
tests/grading/test_nbgrader.py writes the same rows into answer cells, as a student would type them,
and puts them to a real ``nbgrader autograde``.

* An implement row is the body of a function of ``*args`` that may call ``right(*args)``, the right
  function. In process, ``right`` is any right function (:func:`implement_function`); in a notebook it
  is the chapter's model solution, kept under another name, and the row's function has the model's
  parameters (:func:`implement_source`).
* A by-hand or measured row is the typed values, name -> value (:func:`typed_rows`); in a notebook, one
  line ``name = <literal>`` each (:func:`typed_source`).
"""

from __future__ import annotations

import ast
import linecache
import textwrap
from collections.abc import Callable
from typing import Any

import numpy as np

from attnlib import variants

#: rows that are right answers
RIGHT = frozenset({"right", "1.5 % off"})
#: rows whose verdict the table leaves to the exercise (a transpose of a symmetric result, -0 for 0, a float32
#: softmax and a list of head blocks that the self-checks accept): every column must give the same one
EITHER = frozenset({"transposed", "sign", "float32 softmax", "list of head blocks"})

#: implement: row -> the body of the row's function of ``*args``; ``right`` is the right function
WRONG_BODIES = {
    "None": "return None",
    "doubled": "got = right(*args)\nreturn None if got is None else np.asarray(got, dtype=float) * 2 + 1",
    "transposed": "got = right(*args)\nreturn None if got is None else np.asarray(got).T",
    "raises": 'raise ZeroDivisionError("division by zero")',
    "text": 'return "0.5"',
}

#: implement: the findings of issue 49, exercise -> row -> the whole answer cell (numpy only)
FINDING_SOURCES = {
    "4.2": {
        "naive softmax": (
            "def my_softmax(x):\n"
            "    e = np.exp(np.asarray(x, dtype=float))\n"
            "    return e / e.sum(axis=-1, keepdims=True)\n"
        ),
        "float32 softmax": (
            "def my_softmax(x):\n"
            "    x = np.asarray(x, dtype=np.float32)\n"
            "    e = np.exp(x - x.max(axis=-1, keepdims=True))\n"
            "    return e / e.sum(axis=-1, keepdims=True)\n"
        ),
    },
    "8.2": {"list of head blocks": "def my_split_heads(M, h):\n    return list(np.split(np.asarray(M), h, axis=1))\n"},
    "9.2": {"int64 mask": "def my_causal_mask(n):\n    return np.tril(np.ones((n, n), int))\n"},
    "9.3": {
        "masked array": (
            "def masked_weights(scores, allowed):\n"
            "    s = np.where(allowed, scores, -np.inf)\n"
            "    e = np.exp(s - s.max(axis=-1, keepdims=True))\n"
            "    return np.ma.masked_array(e / e.sum(axis=-1, keepdims=True), mask=~allowed)\n"
        )
    },
}

#: implement: answers the notebook's kernel can run but the grader's runner (numpy alone, issue 46) cannot, exercise ->
#: row -> the whole answer cell; the self-check says "not yet" to each, with the grader's reason (runner.unavailable)
NOT_IN_GRADER_SOURCES = {
    "4.3": {
        "another attnlib routine": "def my_attention(Q, K, V):\n    return attnlib.blocked.chunked_attention(Q, K, V, block_size=2)\n",
        "a chapter variable": (
            "def my_attention(Q, K, V):\n"
            "    scores = Q @ K.T / np.sqrt(K.shape[1])\n"
            "    e = np.exp(scores - scores.max(axis=-1, keepdims=True))\n"
            "    return (e / e.sum(axis=-1, keepdims=True) @ V).astype(X.dtype)\n"
        ),
    },
    "9.2": {"another attnlib routine": "def my_causal_mask(n):\n    return attnlib.induction._block_causal_mask(np.array([n]))\n"},
}
#: the reason each of those rows gets, from the self-check and from the grader alike
NOT_IN_GRADER_REASONS = {
    ("4.3", "another attnlib routine"): "my_attention uses attnlib.blocked, which the grader does not have",
    ("4.3", "a chapter variable"): "my_attention uses X, which the grader does not have",
    ("9.2", "another attnlib routine"): "my_causal_mask uses attnlib.induction, which the grader does not have",
}

#: by-hand: the findings of issue 49 that do not depend on the seed, exercise -> row -> typed values
TYPED_FINDINGS = {
    "9.1": {
        "False for 0": {"masked_row": [0.5875, False, 0.4125]},
        "near 0": {"masked_row": [0.5875, 0.0001, 0.4125]},
    },
}


def implement_function(body: str, right: Callable[..., Any]) -> Callable[..., Any]:
    """The function of ``*args`` whose body is ``body``, with ``right`` the right function (in process)."""
    namespace: dict[str, Any] = {"np": np, "right": right}
    exec(f"def row(*args):\n{textwrap.indent(body, '    ')}\n", namespace)
    return namespace["row"]


def finding_function(number: str, row: str) -> Callable[..., Any]:
    """The function that the finding ``row`` of exercise ``number`` defines (in process).

    A finding runs with numpy only. A row the grader cannot run runs as in the notebook, beside the
    chapter's names (``attnlib``, the running example ``X``) that another cell defined, its own lines
    readable as IPython keeps a cell's (the self-check reads which names the function's cell binds).
    """
    if row in NOT_IN_GRADER_SOURCES.get(number, {}):
        import attnlib

        source = NOT_IN_GRADER_SOURCES[number][row]
        filename = f"<answer table {number} {row}>"
        linecache.cache[filename] = (len(source), None, source.splitlines(keepends=True), filename)
        namespace: dict[str, Any] = {"np": np, "attnlib": attnlib, "X": attnlib.running_example()}
        exec(compile(source, filename, "exec"), namespace)
        return namespace[variants.EXERCISES[number].function]
    namespace = {"np": np}
    exec(FINDING_SOURCES[number][row], namespace)
    return namespace[variants.EXERCISES[number].function]


def implement_source(number: str, row: str, model: str) -> str:
    """The answer cell of exercise ``number`` for ``row``, given the cell's model solution ``model`` (code).

    A wrong row keeps the model's function under another name and defines the exercise's function,
    with the model's parameters, by the row's body.
    """
    if row in FINDING_SOURCES.get(number, {}):
        return FINDING_SOURCES[number][row]
    if row in NOT_IN_GRADER_SOURCES.get(number, {}):
        return NOT_IN_GRADER_SOURCES[number][row]
    name = variants.EXERCISES[number].function
    found = [n for n in ast.walk(ast.parse(model)) if isinstance(n, ast.FunctionDef) and n.name == name]
    if len(found) != 1:
        raise ValueError(f"model must define {name} once, got {len(found)} definitions")
    params = found[0].args
    if params.vararg or params.kwarg or params.kwonlyargs or params.posonlyargs:
        raise ValueError(f"model: {name} has parameters this table does not pass on: {ast.unparse(params)}")
    names = [a.arg for a in params.args]
    if {"args", "right"} & set(names):
        raise ValueError(f"model: a parameter of {name} is called args or right, which the row's body uses")
    args = f"({names[0]},)" if len(names) == 1 else f"({', '.join(names)})"
    body = textwrap.indent(f"args = {args}\nright = _right_{name}\n{WRONG_BODIES[row]}", "    ")
    return f"{model.rstrip()}\n\n\n_right_{name} = {name}\n\n\ndef {name}({ast.unparse(params)}):\n{body}\n"


def implement_rows(number: str) -> list[str]:
    """The rows of an implement exercise: "right", the wrong bodies, the exercise's findings, what the grader cannot run."""
    return ["right", *WRONG_BODIES, *FINDING_SOURCES.get(number, {}), *NOT_IN_GRADER_SOURCES.get(number, {})]


def typed_rows(number: str, seed: int | None) -> dict[str, dict[str, Any]]:
    """The rows of a by-hand or measured exercise for ``seed``: row -> the typed values, name -> value."""
    answers = variants.answers(variants.variant(number, seed))
    out = {"right": dict(answers)}
    if variants.EXERCISES[number].kind == "measured":  # 15.3: a prediction within 2 % of the model
        (name, model), *_ = answers.items()
        for row, value in {"1.5 % off": model * 1.015, "4 % off": model * 1.04, "10 % under": model * 0.9}.items():
            out[row] = {name: value}
        out |= {"text": {name: str(model)}, "a list": {name: [model]}, "bool": {name: True}}
        return out
    out["missing"] = {}
    first, want = next(iter(answers.items()))
    flat = np.asarray(want, dtype=float).ravel().tolist()
    shape = np.shape(want)

    def shaped(values):
        return np.reshape(np.array(values, dtype=object), shape).tolist() if shape else values[0]

    out["off"] = {**answers, first: shaped([v + 1 for v in flat])}
    out["close"] = {**answers, first: shaped([v + 0.003 for v in flat])}
    out["text"] = {**answers, first: shaped([str(v) for v in flat])}
    out["bool"] = {**answers, first: shaped([True, *flat[1:]])}
    out["sign"] = {**answers, first: shaped([-v for v in flat])}
    out["shape"] = {**answers, first: [flat]}
    zeros = np.argwhere(np.asarray(want, dtype=float) == 0)
    if number == "3.1" and len(zeros):  # the finding: the book's answer with its first zero typed as False
        value = np.asarray(want, dtype=object)
        value[tuple(int(i) for i in zeros[0])] = False
        out["False for 0"] = {first: value.tolist()}
    if number == "17.4":  # read off the live explorer: what a reader may read instead of the repeated halves' loss
        out |= misread_17_4(variants.variant(number, seed))
    if seed is None:
        out |= TYPED_FINDINGS.get(number, {})
    return out


def misread_17_4(v: variants.Variant) -> dict[str, dict[str, float]]:
    """Exercise 17.4's wrong readings of the explorer: the rates swapped, the untrained model, the first halves."""
    from attnlib.explorers.kinds.live_training import LR_CHOICES, live_views
    from attnlib.induction import BOOK

    page = {"n_layers": 2, "n_heads": 1, "d_model": 32, "seed": 0}
    low, yours = (live_views({**page, "lr": lr}, v.steps, schedule=BOOK["n_steps"]) for lr in (LR_CHOICES[0], v.lr))
    untrained = live_views({**page, "lr": v.lr})["second"]
    def typed(x: float) -> float:
        return round(float(x), 4)

    return {
        "rates swapped": {"loss_low_lr": typed(yours["second"]), "loss_your_lr": typed(low["second"])},
        "untrained": {"loss_low_lr": typed(untrained), "loss_your_lr": typed(untrained)},
        "first halves": {"loss_low_lr": typed(low["first"]), "loss_your_lr": typed(yours["first"])},
    }


def plain(value: Any) -> Any:
    """``value`` with numpy arrays and scalars turned into Python lists and scalars (for a literal)."""
    if isinstance(value, np.ndarray):
        return plain(value.tolist())
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    return value


def typed_source(typed: dict[str, Any]) -> str:
    """The answer cell that types ``typed`` (name -> value), one literal a line, as a student types it."""
    lines = [f"{name} = {plain(value)!r}" for name, value in typed.items()]
    for line, value in zip(lines, typed.values(), strict=True):
        assert ast.literal_eval(line.split(" = ", 1)[1]) == plain(value), line  # the literal reads back as the row
    return "\n".join(lines) + "\n" if lines else "# no answer typed yet\n"

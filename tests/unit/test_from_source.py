"""The typed-number reader and the answer-cell extraction the grader judges with (issue 46): what is read, what is not,
and why; never a value computed by running the cell."""

from __future__ import annotations

import math

import pytest

from attnlib.exercises.from_source import MAX_DIGITS, answer_cell_id, answer_sources, typed_answers


@pytest.mark.parametrize(
    ("source", "value"),
    [
        ("x = [0.5875, 0.0, 0.4125]", [0.5875, 0.0, 0.4125]),
        ("x = 1/3", 1 / 3),
        ("import math\nx = math.exp(1)/(1+math.exp(1))", math.exp(1) / (1 + math.exp(1))),
        ("x = np.sqrt(2) * numpy.pi", math.sqrt(2) * math.pi),
        ("x = [[1, 2], (3, -4)]", [[1, 2], [3, -4]]),
        ("a = 0.5 * 3\nx = [0.5 * (3 - a), 2 ** 10]", [0.75, 1024]),
        ("x = 1\nx += 2\nx *= 4", 12),
        ("a, b = 1, 2\nx = a - b", -1),
        ("x: float = round(2/3, 4)", 0.6667),
        ("x = np.array([0.25] * 4)", [0.25] * 4),
        ("x = '3/8'", "3/8"),  # kept as text: the check says it is text, not a number
        ("x = True", True),
        ("x = 4 * 768**2 + 4 * 768", 4 * 768**2 + 4 * 768),
        ("x = 1\nprint(x)\nx = 2  # the last assignment counts", 2),
        ("x = sum([0.5, 0.25]) + max(1, 2) + abs(-1) + min(3, 4)", 6.75),
    ],
)
def test_typed_numbers_are_read(source, value):
    read, unreadable = typed_answers(source, ["x"])
    assert unreadable == {} and read == {"x": value}


@pytest.mark.parametrize(
    ("source", "named"),
    [
        ("x = variants.answers(variants.variant('4.1', seed))['x']", "variants.answers(variants.variant('4.1', seed))['x']"),
        ("x = attnlib.softmax([1.0, 2.0])", "attnlib.softmax([1.0, 2.0])"),
        ("x = my_row", "my_row (a name this cell does not type)"),
        ("y = my_row\nx = [y, 1.0]", "y (a name that is not read as typed numbers either)"),
        ("for k in range(2):\n    x = k", "an assignment inside a for statement"),
        ("if True:\n    x = 1", "an assignment inside a if statement"),
        ("x = 9**9**9", f"(a number of more than {MAX_DIGITS} digits)"),
        ("x = 10**5000", f"(a number of more than {MAX_DIGITS} digits)"),
        ("x = [0.0] * 10**9", "(too long a list)"),
        ("x = 1/0", "ZeroDivisionError"),
        ("x = math.sqrt(-1)", "ValueError: math domain error"),
        ("x = 1j", "1j"),
        ("x = (-1) ** 0.5", "(a complex number)"),
        ("x = __import__('os').getpid()", "__import__('os').getpid()"),
        ("x = np.exp(1, out=None)", "(a call with keywords or *)"),
        ("x = globals()['y']", "globals()['y']"),
        ("a, b = 1, 2, 3\nx = a", "a (a name that is not read as typed numbers either)"),
    ],
)
def test_anything_else_is_unreadable_with_a_reason_naming_the_variable(source, named):
    read, unreadable = typed_answers(source, ["x"])
    assert read == {} and list(unreadable) == ["x"]
    assert unreadable["x"].startswith("x is not read as typed numbers: ") and named in unreadable["x"], unreadable["x"]


def test_a_cell_that_is_not_python_or_too_deep_makes_every_name_unreadable():
    _, unreadable = typed_answers("x = (\ny = 1", ["x", "y"])
    assert set(unreadable) == {"x", "y"} and "SyntaxError" in unreadable["x"]
    _, unreadable = typed_answers("x = " + "-" * 100_000 + "1", ["x"])
    assert "x" in unreadable


def test_names_the_cell_never_assigns_are_neither_read_nor_unreadable():
    assert typed_answers("y = 1", ["x"]) == ({}, {})
    assert typed_answers("", ["x"]) == ({}, {})


@pytest.mark.parametrize(
    ("kwargs", "named"),
    [
        ({"source": None, "names": ["x"]}, "source"),
        ({"source": b"x = 1", "names": ["x"]}, "source"),
        ({"source": "x = 1", "names": "x"}, "names"),
        ({"source": "x = 1", "names": [1]}, "names"),
    ],
)
def test_bad_arguments_are_refused_by_name(kwargs, named):
    with pytest.raises(ValueError, match=rf"^{named} must be"):
        typed_answers(**kwargs)


def _cell(gid, source, solution=True, kind="code"):
    return {"cell_type": kind, "source": source, "metadata": {"nbgrader": {"grade_id": gid, "solution": solution}}}


def test_the_answer_cells_up_to_the_exercise_are_extracted_in_order():
    cells = [
        _cell("ch04-ex1-answer", "o_by_hand = [0.625, 0.375]"),
        _cell("ch04-ex1-test", "hand_in(...)", solution=False),
        {"cell_type": "code", "source": "import attnlib  # a cell the student added", "metadata": {}},
        _cell("ch04-ex2-answer", "def my_softmax(x): ..."),
        _cell("ch04-ex3-text", "a written answer", kind="markdown"),
        _cell("ch04-ex3-answer", "def my_attention(Q, K, V): ..."),
        _cell("ch04-ex4-answer", "later = 1"),
    ]
    got = answer_sources(cells, answer_cell_id("ch04-ex3-test"))
    assert got == [("ch04-ex1-answer", "o_by_hand = [0.625, 0.375]"), ("ch04-ex2-answer", "def my_softmax(x): ..."),
                   ("ch04-ex3-answer", "def my_attention(Q, K, V): ...")]
    assert answer_sources(cells, "ch04-ex9-answer") == []  # no such answer cell: nothing to run


@pytest.mark.parametrize(
    ("cells", "answer_id", "named"), [(None, "a", "cells"), ("cells", "a", "cells"), ([5], "a", "cells"), ([], 5, "answer_id")]
)
def test_the_extraction_refuses_bad_arguments_by_name(cells, answer_id, named):
    with pytest.raises(ValueError, match=rf"^{named} must be"):
        answer_sources(cells, answer_id)


@pytest.mark.parametrize("test_id", [None, "", "ch04-ex3-answer", 5])
def test_answer_cell_id_refuses_what_is_not_a_test_cell(test_id):
    with pytest.raises(ValueError, match=r"^test_id must be"):
        answer_cell_id(test_id)

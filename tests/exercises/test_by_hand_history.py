"""The by-hand self-check reads the answer as the grader does: a value computed by code is not typed numbers.

In a notebook ``check_by_hand("9.1", globals())`` finds the cell that last
assigned each answer in IPython's input history and reads it with the
grader's reader (``from_source.typed_answers``), so the self-check and the
grader give one verdict and one reason (issues 46 and 49).
"""

from __future__ import annotations

import pytest
from IPython.core.interactiveshell import InteractiveShell

from attnlib.exercises import registry
from attnlib.exercises.by_hand import check_by_hand
from attnlib.exercises.from_source import typed_answers

RIGHT_9_1 = "masked_row = [0.5875, 0.0, 0.4125]"
COMPUTED_9_1 = "masked_row = list(registry.answers(registry.variant('9.1', None))['masked_row'])"


@pytest.fixture
def shell():
    sh = InteractiveShell.instance()
    sh.reset()
    sh.user_ns["registry"] = registry
    yield sh
    sh.reset()


def test_a_computed_answer_in_a_real_ipython_gets_the_graders_reason(shell):
    assert shell.run_cell(COMPUTED_9_1, store_history=True).success
    result = check_by_hand("9.1", shell.user_ns, verbose=False)
    # the computed numbers are right, but they were not typed: not yet, with the grader's own words
    assert not result.passed
    assert result.entries == (typed_answers(COMPUTED_9_1, ["masked_row"])[1]["masked_row"],)
    assert shell.run_cell(RIGHT_9_1, store_history=True).success  # typed again: the last assignment counts
    assert check_by_hand("9.1", shell.user_ns, verbose=False).passed


def test_history_entries_that_do_not_parse_or_do_not_assign_are_passed_over():
    ns = {"masked_row": [0.5875, 0.0, 0.4125], "In": ["", RIGHT_9_1, "print(masked_row", "print(masked_row)"]}
    assert check_by_hand("9.1", ns, verbose=False).passed
    ns["In"].append("masked_row = some_notebook_name")
    entries = check_by_hand("9.1", ns, verbose=False).entries
    assert len(entries) == 1 and entries[0].startswith("masked_row is not read as typed numbers"), entries


def test_without_an_input_history_the_values_alone_are_checked():
    assert check_by_hand("9.1", {"masked_row": [0.5875, 0.0, 0.4125]}, verbose=False).passed
    assert check_by_hand("9.1", {"masked_row": [0.5875, 0.0, 0.4125], "In": "not a list"}, verbose=False).passed


def test_an_implement_answer_built_on_a_chapter_variable_is_not_yet_in_a_real_ipython(shell):
    """Issue 46: the self-check reads which names the function's own cell binds (IPython keeps each cell's lines), so a
    function reading the chapter's X (another cell's) is "not yet", with the grader's reason; the same name bound in
    the function's own cell, or the softmax that 4.3 gives, passes."""
    from support.answer_table import NOT_IN_GRADER_REASONS, NOT_IN_GRADER_SOURCES

    from attnlib import checks

    assert shell.run_cell("import numpy as np\nimport attnlib\nX = attnlib.running_example()", store_history=True).success
    assert shell.run_cell(NOT_IN_GRADER_SOURCES["4.3"]["a chapter variable"], store_history=True).success
    result = checks.check_attention(shell.user_ns["my_attention"], verbose=False)
    assert not result.passed and result.messages[0].startswith(NOT_IN_GRADER_REASONS["4.3", "a chapter variable"]), result.messages
    own_cell = "X = np.zeros((1, 1))\n" + NOT_IN_GRADER_SOURCES["4.3"]["a chapter variable"]
    assert shell.run_cell(own_cell, store_history=True).success
    assert checks.check_attention(shell.user_ns["my_attention"], verbose=False).passed
    given = "def my_attention(Q, K, V):\n    return attnlib.softmax(Q @ K.T / np.sqrt(K.shape[1])) @ V"
    assert shell.run_cell(given, store_history=True).success
    assert checks.check_attention(shell.user_ns["my_attention"], verbose=False).passed

"""One comparator (issue 49): the self-check, check_by_hand, the in-kernel hand-in and the grader's judge agree.

Before, the self-check (``checks.runner._judge_value``), the hand-in and the judge (``grading._same``,
``registry.agrees``) decided separately, with their own cases and tolerances: a 9.2 mask of int64 and a 9.3
``np.ma`` array failed the self-check but passed the hand-in, a by-hand ``False`` typed for 0 was "not yet"
for ``check_by_hand`` and right for the hand-in, and a softmax without the maximum subtracted passed the
grader's calls on every seed. Now the hand-in is judged on the self-check's own cases (the student's seed
case included) and then the registry's calls, by the self-check's comparator, so verdict and reason are one.
The rows of the table are tests/support/answer_table.py's; tests/grading/test_nbgrader.py puts the same
rows, typed into answer cells, to a real ``nbgrader autograde`` (the fourth column).
"""

from __future__ import annotations

import re

import numpy as np
import pytest
from support.answer_table import (
    EITHER,
    NOT_IN_GRADER_REASONS,
    RIGHT,
    WRONG_BODIES,
    finding_function,
    implement_function,
    implement_rows,
    typed_rows,
)
from support.hand_ins import right_namespace

from attnlib import checks, variants
from attnlib.exercises import grading

SEEDS = (None, 3, 11)
IMPLEMENT = [n for n, e in variants.EXERCISES.items() if e.kind == "implement"]
BY_HAND = [n for n, e in variants.EXERCISES.items() if e.kind == "by-hand"]


def _graded(number, seed, namespace):
    """(what the in-kernel hand-in said or None, the grader's failures) for one answer."""
    handed: list = []
    try:
        grading.hand_in(number, seed, namespace, sink=handed)
        said = None
    except AssertionError as exc:
        said = str(exc)
    return said, grading.judge(number, seed, handed[0]["payload"])


def _body(message: str) -> str:
    """A diagnosis without its case label and repeat count."""
    return re.sub(r" \(the same in \d+ other cases?\)$", "", message.split(": ", 1)[1])


def _self_check(number, seed, fn):
    entry = variants.EXERCISES[number]
    return entry.check(fn, verbose=False, seed=seed)


def _agree(number, seed, fn):
    """Assert that self-check, hand-in and judge give one verdict, with the self-check's reasons in the feedback."""
    result = _self_check(number, seed, fn)
    said, failures = _graded(number, seed, {variants.EXERCISES[number].function: fn})
    assert result.passed == (failures == []) == (said is None), (number, seed, result.messages, failures)
    for message in result.messages:
        if message.startswith("A small case to work through by hand"):
            continue  # the self-check's worked example (the grader never shows a case in full)
        assert _body(message) in "\n".join(failures), (message, failures)
        assert _body(message) in said
    return result, failures


# ---- the findings of the issue, each failing before ----


@pytest.mark.parametrize("seed", SEEDS)
def test_an_int64_causal_mask_is_refused_by_all_for_its_dtype(seed):
    result, failures = _agree("9.2", seed, finding_function("9.2", "int64 mask"))
    assert not result.passed and "return a boolean array" in failures[0]


@pytest.mark.parametrize("seed", SEEDS)
def test_a_masked_array_is_refused_by_all_as_not_a_plain_array(seed):
    result, failures = _agree("9.3", seed, finding_function("9.3", "masked array"))
    assert not result.passed and "return a plain array" in failures[0]


@pytest.mark.parametrize("number", ["9.1", "3.1"])
def test_a_boolean_typed_for_a_number_is_refused_by_all(number):
    typed = typed_rows(number, None)["False for 0"]  # 3.1: the book's answer with its first zero typed as False
    name, value = next(iter(typed.items()))
    assert any(v is False for v in np.ravel(np.asarray(value, dtype=object)))
    mine = checks.check_by_hand(number, typed, verbose=False)
    said, failures = _graded(number, None, typed)
    assert not mine.passed and not variants.agrees(value, variants.answers(variants.variant(number))[name])
    assert failures == list(mine.messages) and said == "; ".join(mine.messages)
    assert any("it is bool, not a number" in f for f in failures)


@pytest.mark.parametrize("seed", range(0, 40, 3))
def test_a_softmax_without_the_maximum_subtracted_is_refused_by_the_grader_too(seed):
    result, failures = _agree("4.2", seed, finding_function("4.2", "naive softmax"))
    assert not result.passed and failures


def test_a_padded_weight_typed_near_zero_is_not_yet_for_all():
    typed = typed_rows("9.1", None)["near 0"]
    assert typed == {"masked_row": [0.5875, 0.0001, 0.4125]}
    mine = checks.check_by_hand("9.1", typed, verbose=False)
    said, failures = _graded("9.1", None, typed)
    line = "masked_row[1] = 0.0001: not yet; this weight is exactly 0 (its key is masked), so type 0."
    assert not mine.passed and failures == list(mine.messages) == [line] and said == line


@pytest.mark.parametrize("seed", SEEDS)
def test_a_float32_softmax_and_a_list_of_head_blocks_get_one_verdict(seed):
    _agree("4.2", seed, finding_function("4.2", "float32 softmax"))
    _agree("8.2", seed, finding_function("8.2", "list of head blocks"))


@pytest.mark.parametrize("seed", [None, 5])
def test_what_the_graders_runner_cannot_run_is_not_yet_for_all_with_its_reason(seed):
    """Issue 46: attnlib beyond the exercise's given names, or a variable of the chapter's cells, passed the self-check
    and scored 0 from the grader (whose runner has numpy alone); now every column says why, in one sentence."""
    for (number, row), reason in NOT_IN_GRADER_REASONS.items():
        fn = finding_function(number, row)
        result, failures = _agree(number, seed, fn)
        assert not result.passed and len(result.messages) == 1 and result.messages[0].startswith(reason + ": "), (row, result.messages)
        assert failures == list(result.messages), (row, failures)
        fn(*grading.graded_cases(number, seed)[0][0].args)  # it runs in the notebook: only the grader could not run it


# ---- the table: every implement and by-hand exercise, right and wrong answers ----


def _wrong_answers(number, seed):
    """The table's rows of an implement exercise as functions, "right" answering the grader's cases."""
    right = right_namespace(number, seed)[variants.EXERCISES[number].function]
    rows = {row: implement_function(body, right) for row, body in WRONG_BODIES.items()}
    rows |= {row: finding_function(number, row) for row in implement_rows(number) if row not in rows and row != "right"}
    return {"right": right, **rows}


@pytest.mark.parametrize("seed", [None, 5])
@pytest.mark.parametrize("number", IMPLEMENT)
def test_every_implement_exercise_gets_one_verdict_for_right_and_wrong_answers(number, seed):
    rows = _wrong_answers(number, seed)
    assert list(rows) == implement_rows(number)
    for name, fn in rows.items():
        result, _ = _agree(number, seed, fn)
        assert result.passed == (name in RIGHT) or name in EITHER, (number, name, result.messages)


@pytest.mark.parametrize("seed", [None, 5])
@pytest.mark.parametrize("number", BY_HAND)
def test_every_by_hand_exercise_gets_one_verdict_and_the_same_lines(number, seed):
    for name, typed in typed_rows(number, seed).items():
        mine = checks.check_by_hand(number, typed, seed, verbose=False)
        said, failures = _graded(number, seed, typed)
        assert failures == list(mine.messages), (number, name)
        assert (said is None) == mine.passed, (number, name)
        assert mine.passed == (name in RIGHT) or name in EITHER, (number, name, mine.entries)


@pytest.mark.parametrize("seed", SEEDS)
def test_the_memory_prediction_has_one_rule_for_the_check_and_the_grader(seed):
    """15.3: before, the hidden test wanted 10 % of the kernel's measurement and the judge 2 % of the model."""
    model = variants.answers(variants.variant("15.3", seed))["predicted_bytes"]
    rows = typed_rows("15.3", seed)
    assert len(rows) == 7 and rows["right"] == {"predicted_bytes": model} and rows["text"] == {"predicted_bytes": str(model)}
    for (predicted,) in (typed.values() for typed in rows.values()):
        mine = checks.check_memory_prediction(predicted, seed, verbose=False)
        said, failures = _graded("15.3", seed, {"predicted_bytes": predicted})
        assert failures == list(mine.messages) and (said is None) == mine.passed, (predicted, failures)
        assert mine.passed == (not isinstance(predicted, (str, list, bool)) and abs(predicted - model) <= 0.02 * model)

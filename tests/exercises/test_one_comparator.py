"""One comparator (issue 49): the self-check, check_by_hand, the in-kernel hand-in and the grader's judge agree.

Before, the self-check (``checks.runner._judge_value``), the hand-in and the judge (``grading._same``,
``registry.agrees``) decided separately, with their own cases and tolerances: a 9.2 mask of int64 and a 9.3
``np.ma`` array failed the self-check but passed the hand-in, a by-hand ``False`` typed for 0 was "not yet"
for ``check_by_hand`` and right for the hand-in, and a softmax without the maximum subtracted passed the
grader's calls on every seed. Now the hand-in is judged on the self-check's own cases (the student's seed
case included) and then the registry's calls, by the self-check's comparator, so verdict and reason are one.
The real-nbgrader side of the same answers is in tests/grading/test_per_student.py.
"""

from __future__ import annotations

import re

import numpy as np
import pytest
from support.hand_ins import right_namespace

from attnlib import checks, softmax, variants
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
    result, failures = _agree("9.2", seed, lambda n: np.tril(np.ones((n, n), int)))
    assert not result.passed and "return a boolean array" in failures[0]


@pytest.mark.parametrize("seed", SEEDS)
def test_a_masked_array_is_refused_by_all_as_not_a_plain_array(seed):
    def masked(scores, allowed):
        return np.ma.masked_array(softmax(np.where(allowed, scores, -np.inf)), mask=~allowed)

    result, failures = _agree("9.3", seed, masked)
    assert not result.passed and "return a plain array" in failures[0]


@pytest.mark.parametrize(("number", "typed"), [("9.1", {"masked_row": [0.5875, False, 0.4125]}), ("3.1", None)])
def test_a_boolean_typed_for_a_number_is_refused_by_all(number, typed):
    if typed is None:  # 3.1: the book's answer with its first zero typed as False
        (name, want), *_ = variants.answers(variants.variant(number)).items()
        flat = np.asarray(want, dtype=float)
        zero = tuple(int(i) for i in np.argwhere(flat == 0)[0])
        value = np.asarray(want, dtype=object)
        value[zero] = False
        typed = {name: value.tolist()}
    name, value = next(iter(typed.items()))
    mine = checks.check_by_hand(number, typed, verbose=False)
    said, failures = _graded(number, None, typed)
    assert not mine.passed and not variants.agrees(value, variants.answers(variants.variant(number))[name])
    assert failures == list(mine.messages) and said == "; ".join(mine.messages)
    assert any("it is bool, not a number" in f for f in failures)


@pytest.mark.parametrize("seed", range(0, 40, 3))
def test_a_softmax_without_the_maximum_subtracted_is_refused_by_the_grader_too(seed):
    def naive(x):
        e = np.exp(np.asarray(x, dtype=float))
        return e / e.sum(axis=-1, keepdims=True)

    result, failures = _agree("4.2", seed, naive)
    assert not result.passed and failures


def test_a_padded_weight_typed_near_zero_is_not_yet_for_all():
    typed = {"masked_row": [0.5875, 0.0001, 0.4125]}
    mine = checks.check_by_hand("9.1", typed, verbose=False)
    said, failures = _graded("9.1", None, typed)
    line = "masked_row[1] = 0.0001: not yet; this weight is exactly 0 (its key is masked), so type 0."
    assert not mine.passed and failures == list(mine.messages) == [line] and said == line


@pytest.mark.parametrize("seed", SEEDS)
def test_a_float32_softmax_and_a_list_of_head_blocks_get_one_verdict(seed):
    def float32_softmax(x):
        x = np.asarray(x, dtype=np.float32)
        e = np.exp(x - x.max(axis=-1, keepdims=True))
        return e / e.sum(axis=-1, keepdims=True)

    _agree("4.2", seed, float32_softmax)
    _agree("8.2", seed, lambda M, h: list(np.split(np.asarray(M), h, axis=1)))


# ---- the table: every implement and by-hand exercise, right and wrong answers ----


def _wrong_answers(number, seed):
    right = right_namespace(number, seed)[variants.EXERCISES[number].function]

    def doubled(*args):
        got = right(*args)
        return None if got is None else np.asarray(got, dtype=float) * 2 + 1

    def transposed(*args):
        got = right(*args)
        return None if got is None else np.asarray(got).T

    def raising(*args):
        raise ZeroDivisionError("division by zero")

    return {
        "right": right,
        "None": lambda *a: None,
        "doubled": doubled,
        "transposed": transposed,
        "raises": raising,
        "text": lambda *a: "0.5",
    }


@pytest.mark.parametrize("seed", [None, 5])
@pytest.mark.parametrize("number", IMPLEMENT)
def test_every_implement_exercise_gets_one_verdict_for_right_and_wrong_answers(number, seed):
    for name, fn in _wrong_answers(number, seed).items():
        result, _ = _agree(number, seed, fn)
        assert result.passed == (name == "right") or name == "transposed", (number, name, result.messages)


def _typed_variants(number, seed):
    answers = variants.answers(variants.variant(number, seed))
    out = {"right": dict(answers), "missing": {}}
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
    return out


@pytest.mark.parametrize("seed", [None, 5])
@pytest.mark.parametrize("number", BY_HAND)
def test_every_by_hand_exercise_gets_one_verdict_and_the_same_lines(number, seed):
    for name, typed in _typed_variants(number, seed).items():
        mine = checks.check_by_hand(number, typed, seed, verbose=False)
        said, failures = _graded(number, seed, typed)
        assert failures == list(mine.messages), (number, name)
        assert (said is None) == mine.passed == (name == "right") or name == "sign", (number, name, mine.entries)


@pytest.mark.parametrize("seed", SEEDS)
def test_the_memory_prediction_has_one_rule_for_the_check_and_the_grader(seed):
    """15.3: before, the hidden test wanted 10 % of the kernel's measurement and the judge 2 % of the model."""
    model = variants.answers(variants.variant("15.3", seed))["predicted_bytes"]
    for predicted in (model, model * 1.015, model * 1.04, model * 0.9, "12528000", [model], True):
        mine = checks.check_memory_prediction(predicted, seed, verbose=False)
        said, failures = _graded("15.3", seed, {"predicted_bytes": predicted})
        assert failures == list(mine.messages) and (said is None) == mine.passed, (predicted, failures)
        assert mine.passed == (not isinstance(predicted, (str, list, bool)) and abs(predicted - model) <= 0.02 * model)

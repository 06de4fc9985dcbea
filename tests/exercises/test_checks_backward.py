"""The gradient-check self-check of chapter 14's exercise: right answers pass, typical mistakes get their hint."""

from __future__ import annotations

import numpy as np

from attnlib import checks


def right(A, dA):
    return A * (dA - np.sum(dA * A, axis=-1, keepdims=True))


def test_the_right_softmax_backward_passes_every_case():
    result = checks.check_softmax_backward(right, verbose=False)
    assert result.passed and result.n_cases == 5


def test_typical_mistakes_fail_with_their_hint():
    cases = {
        "left out the second term": lambda A, dA: A * dA,
        "multiply the bracket by A": lambda A, dA: dA - np.sum(dA * A, axis=-1, keepdims=True),
        "sum over each ROW": lambda A, dA: A * (dA - np.sum(dA * A, axis=0, keepdims=True)),
        "is weighted": lambda A, dA: A * (dA - np.sum(dA, axis=-1, keepdims=True)),
    }
    for hint, fn in cases.items():
        result = checks.check_softmax_backward(fn, verbose=False)
        assert not result.passed
        assert any(hint in m for m in result.messages), (hint, result.messages)


def test_nan_none_and_exceptions_get_plain_messages():
    assert "returned None" in checks.check_softmax_backward(lambda A, dA: None, verbose=False).messages[0]
    assert "NotImplementedError" in checks.check_softmax_backward(_not_done, verbose=False).messages[0]
    nan = checks.check_softmax_backward(lambda A, dA: A * np.nan, verbose=False)
    assert not nan.passed and "NaN" in nan.messages[0]


def _not_done(A, dA):
    raise NotImplementedError()

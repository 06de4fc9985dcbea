"""attnlib.checks against misbehaving student functions: no loophole, no hang, no flood, no escape."""

from __future__ import annotations

import threading
import time

import numpy as np
import pytest
from support import numpy_answers

from attnlib import checks
from attnlib.exercises import CHECKS, sandbox

#: every self-check with a right function for it, written with numpy alone (support/numpy_answers.py): the
#: self-checks say "not yet" to attnlib's own functions, which the grader's runner does not have
ALL_CHECKS = [
    (checks.check_pairwise_dots, lambda X: X @ X.T),
    (checks.check_bilinear_scores, lambda X, A, B: (X @ A) @ (X @ B).T),
    *((getattr(checks, name), fn) for name, fn in numpy_answers.RIGHT.items()),
]
IDS = [c.__name__ for c, _ in ALL_CHECKS]


#: Checks of a typed value, not of a function (each has its odd values in tests/unit/test_edges_modules.py's SPECS).
TYPED_VALUE_CHECKS = {"check_memory_prediction"}


def test_every_self_check_is_tried_here():
    """A chapter's new check_* (attnlib.exercises.CHECKS) gets a correct function in ALL_CHECKS, so every test below tries it."""
    listed = [c.__name__ for c, _ in ALL_CHECKS]
    assert sorted(listed) == sorted(set(listed)), "a check is listed twice"
    missing, extra = sorted(set(CHECKS) - set(listed) - TYPED_VALUE_CHECKS), sorted(set(listed) - set(CHECKS))
    assert not missing and not extra, f"add to ALL_CHECKS: {missing}; not a check of attnlib.exercises.CHECKS: {extra}"
    assert all(getattr(checks, name) is CHECKS[name] for name in listed), "attnlib.checks re-exports every check"


@pytest.fixture
def short_limit(monkeypatch):
    monkeypatch.setattr(sandbox, "TIME_LIMIT_SECONDS", 0.3)
    return 0.3


@pytest.mark.parametrize("check, good", ALL_CHECKS, ids=IDS)
def test_correct_numpy_list_and_float32_versions_pass(check, good):
    assert check(good, verbose=False)
    as_list = check(lambda *a: np.asarray(good(*a)).tolist(), verbose=False)
    assert as_list, as_list.report()
    if check is not checks.check_causal_mask:
        as_f32 = check(lambda *a: np.asarray(good(*a), dtype=np.float32), verbose=False)
        assert as_f32, as_f32.report()


NUMERIC = [(c, g) for c, g in ALL_CHECKS if c is not checks.check_causal_mask]  # a causal mask is boolean
ARRAY_INPUTS = [(c, g) for c, g in ALL_CHECKS if c not in (checks.check_causal_mask, checks.check_sinusoidal_encoding)]


@pytest.mark.parametrize("check, good", NUMERIC, ids=[c.__name__ for c, _ in NUMERIC])
def test_tiny_imaginary_part_fails(check, good):
    result = check(lambda *a: np.asarray(good(*a), dtype=float) + 1e-12j, verbose=False)
    assert not result and result.n_passed == 0
    assert all("complex" in m and "1.0e-12" in m for m in result.messages)


@pytest.mark.parametrize("check, good", ALL_CHECKS, ids=IDS)
def test_hard_coded_answer_stays_caught(check, good):
    captured = {}

    def record(*a):
        captured.setdefault("first", np.asarray(good(*a)))
        return captured["first"]

    result = check(record, verbose=False)
    assert not result and result.n_passed < result.n_cases


@pytest.mark.parametrize("check, good", ARRAY_INPUTS, ids=[c.__name__ for c, _ in ARRAY_INPUTS])
def test_function_that_changes_its_input_is_flagged(check, good):
    def spoil(*args):
        out = good(*args)
        for a in args:
            if isinstance(a, np.ndarray) and a.size:
                a.flat[0] = 12345 if a.dtype != bool else not a.flat[0]
        return out

    result = check(spoil, verbose=False)
    assert not result and result.n_passed == 0
    assert all("changed its input" in m and "in place" in m for m in result.messages)


def test_in_place_softmax_names_the_argument():
    def in_place(x):
        x -= x.max(axis=-1, keepdims=True)
        np.exp(x, out=x)
        x /= x.sum(axis=-1, keepdims=True)
        return x

    result = checks.check_softmax(in_place, verbose=False)
    assert not result
    assert "changed its input x in place" in result.messages[0]


def test_masked_weight_of_1e_minus_7_fails_both_masked_checks():
    def nearly(x):
        w = numpy_answers.softmax(np.where(np.isneginf(x), -1e9, x) if np.ndim(x) else x)
        return np.where(np.isneginf(x), 1e-7, w)

    soft = checks.check_softmax(nearly, verbose=False)
    assert not soft
    assert any("exactly 0" in m and "1.0e-07" in m for m in soft.messages)

    def leaky(S, allowed):
        w = numpy_answers.softmax(np.where(allowed, S, -np.inf))
        return np.where(allowed, w, 1e-7)

    masked = checks.check_masked_weights(leaky, verbose=False)
    assert not masked
    assert any("exactly 0" in m for m in masked.messages)
    # -1e9 instead of -inf leaves exp(-1e9 - max) = 0 in float64, which is exact: that passes, as it should
    assert checks.check_masked_weights(lambda S, a: numpy_answers.softmax(np.where(a, S, -1e9)), verbose=False)


def test_sleeping_function_hits_the_time_limit(short_limit):
    start = time.perf_counter()
    result = checks.check_softmax(lambda x: time.sleep(30), verbose=False)
    elapsed = time.perf_counter() - start
    assert elapsed < 3 * short_limit + 1.0
    assert not result and result.n_passed == 0
    assert f"time limit of {short_limit:g} seconds" in result.messages[0]
    assert "not run" in result.messages[-1]


def test_function_that_swallows_exceptions_still_hits_the_time_limit(short_limit):
    def stubborn(x):
        while True:
            try:
                time.sleep(10)
            except Exception:  # the time limit is not an Exception, so this cannot swallow it
                pass

    result = checks.check_softmax(stubborn, verbose=False)
    assert not result and "time limit" in result.messages[0]


def test_time_limit_outside_the_main_thread(short_limit):
    box = {}
    worker = threading.Thread(target=lambda: box.setdefault("r", checks.check_causal_mask(lambda n: time.sleep(5), verbose=False)))
    worker.start()
    worker.join(10)
    assert not worker.is_alive()
    assert "time limit" in box["r"].messages[0]


def test_default_time_limit_is_a_few_seconds():
    assert 1 <= checks.TIME_LIMIT_SECONDS <= 10


def test_exception_whose_str_raises_does_not_escape():
    class Nasty(Exception):
        def __str__(self):
            raise RuntimeError("no message for you")

    def fn(x):
        raise Nasty()

    result = checks.check_softmax(fn, verbose=False)
    assert not result
    assert "Nasty" in result.messages[0] and "could not be shown" in result.messages[0]
    assert "FAIL" in result.report()


def test_system_exit_is_reported_not_raised():
    import sys

    result = checks.check_causal_mask(lambda n: sys.exit(3), verbose=False)
    assert not result and "SystemExit" in result.messages[0]


def test_result_whose_array_conversion_raises_is_reported():
    class Odd:
        def __array__(self, *a, **k):
            raise TypeError("nope")

    result = checks.check_softmax(lambda x: Odd(), verbose=False)
    assert not result and "nope" in result.messages[0]


def test_twenty_thousand_printed_lines_are_summarised(capsys):
    def chatty(x):
        for i in range(20_000):
            print("step", i)
        return numpy_answers.softmax(x)

    result = checks.check_softmax(chatty)
    out = capsys.readouterr().out
    assert result
    assert len(out.splitlines()) < 10
    n = result.n_cases * 20_000
    assert f"printed {n} line(s)" in out and "'step 0'" in out


def test_inf_and_nan_results_get_a_plain_message():
    inf = checks.check_softmax(lambda x: np.full(np.shape(x), np.inf), verbose=False)
    assert not inf and all("inf" in m for m in inf.messages)
    nan = checks.check_softmax(lambda x: np.full(np.shape(x), np.nan), verbose=False)
    assert not nan and all("NaN" in m for m in nan.messages)


def test_masked_array_result_is_refused():
    result = checks.check_softmax(lambda x: np.ma.masked_invalid(numpy_answers.softmax(x)), verbose=False)
    assert not result and "masked array" in result.messages[0]


def test_sinusoidal_check_tries_an_odd_d_model():
    seen = []

    def spy(n, d):
        seen.append(d)
        return numpy_answers.sinusoidal_encoding(n, d)

    assert checks.check_sinusoidal_encoding(spy, verbose=False)
    assert any(d % 2 for d in seen)

    def even_only(n, d):
        t = np.arange(n)[:, None]
        i = np.arange(d // 2)[None, :]
        pe = np.zeros((n, d))
        pe[:, 0::2] = np.sin(t / 10000 ** (2 * i / d))
        pe[:, 1::2] = np.cos(t / 10000 ** (2 * i / d))
        return pe

    result = checks.check_sinusoidal_encoding(even_only, verbose=False)
    assert not result and result.n_passed == result.n_cases - 1
    assert "odd" in result.messages[0]


def test_call_student_reports_each_problem():
    ok = checks.call_student(lambda x: x * 2, (np.ones(2),))
    assert ok.error is None and ok.value.tolist() == [2.0, 2.0] and not ok.timed_out
    raised = checks.call_student(lambda x: 1 / 0, (1,))
    assert "ZeroDivisionError" in raised.error
    slow = checks.call_student(lambda: time.sleep(5), (), time_limit=0.2)
    assert slow.timed_out and "0.2 seconds" in slow.error

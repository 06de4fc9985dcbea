"""attnlib.exact agrees with the numpy implementation and refuses bad input."""

import numpy as np
import pytest
import sympy as sp

import attnlib as A
from attnlib.exact import exact_attention, exact_matrix, exact_number, exact_softmax, to_float

X = A.running_example()
RNG = np.random.default_rng(20240605)


@pytest.mark.parametrize("scale", [True, False, 3])
@pytest.mark.parametrize("masked", [False, True])
def test_running_example_matches_numpy(scale, masked):
    mask = A.causal_mask(3) if masked else None
    exact = exact_attention(X, mask=mask, scale=scale)
    approx = A.attention(X, X, X, mask=mask, scale=scale)
    np.testing.assert_allclose(to_float(exact.scores), approx.scores, atol=1e-14)
    np.testing.assert_allclose(to_float(exact.scaled), approx.scaled, atol=1e-14)
    np.testing.assert_allclose(to_float(exact.weights), approx.weights, atol=1e-14)
    np.testing.assert_allclose(to_float(exact.output), approx.output, atol=1e-14)
    assert float(exact.divisor) == pytest.approx(approx.divisor)


def test_random_projections_match_numpy():
    x = RNG.integers(-3, 4, size=(4, 3))
    wq, wk, wv = (RNG.integers(-2, 3, size=(3, s)) for s in (2, 2, 3))
    exact = exact_attention(x, wq, wk, wv)
    approx = A.self_attention(x, wq, wk, wv)
    np.testing.assert_allclose(to_float(exact.weights), approx.weights, rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(to_float(exact.output), approx.output, rtol=1e-12, atol=1e-12)


def test_closed_forms_of_the_running_example():
    r = exact_attention([[1, 0], [0, 1], [sp.Rational(1, 2), sp.Rational(1, 2)]])
    a = sp.exp(1 / sp.sqrt(2))
    b = sp.exp(1 / (2 * sp.sqrt(2)))
    assert sp.simplify(r.weights[0, 0] - a / (1 + a + b)) == 0
    assert sp.simplify(r.normalizers[0] - (1 + a + b)) == 0
    assert all(sp.simplify(w - sp.Rational(1, 3)) == 0 for w in r.weights.row(2))
    assert list(r.output.row(2)) == [sp.Rational(1, 2), sp.Rational(1, 2)]


def test_causal_row_two_closed_form():
    r = exact_attention(X, mask=A.causal_mask(3))
    a = sp.exp(1 / sp.sqrt(2))
    expected = [1 / (1 + a), a / (1 + a), 0]
    assert all(sp.simplify(w - e) == 0 for w, e in zip(r.weights.row(1), expected))
    assert r.scaled[0, 1] == -sp.oo
    assert r.weights[0, :] == sp.Matrix([[1, 0, 0]])


def test_rows_sum_to_one_exactly():
    r = exact_attention(X)
    for i in range(3):
        assert sp.simplify(sum(r.weights.row(i)) - 1) == 0


def test_exact_softmax_allowed():
    w, e, Z = exact_softmax([0, 0, 5], allowed=[True, True, False])
    assert w == [sp.Rational(1, 2), sp.Rational(1, 2), 0]
    assert Z == 2


def test_float_conversion_is_decimal():
    assert exact_number("x", 0.1) == sp.Rational(1, 10)
    assert exact_matrix("X", np.array([[0.25]]))[0, 0] == sp.Rational(1, 4)


@pytest.mark.parametrize(
    "call, words",
    [
        (lambda: exact_attention([1, 0]), ["X", "2 dimensions", "(2,)"]),
        (lambda: exact_attention([[1, np.nan]]), ["X[0, 1]", "finite"]),
        (lambda: exact_attention([[1, np.inf]]), ["X[0, 1]", "finite"]),
        (lambda: exact_attention([["a", 1]]), ["X[0, 0]", "number"]),
        (lambda: exact_attention([[True, 1]]), ["X[0, 0]", "number"]),
        (lambda: exact_attention(X, W_Q=np.eye(3)), ["W_Q has 3 rows", "d_model=2"]),
        (lambda: exact_attention(X, W_Q=np.eye(2), W_K=np.ones((2, 3))), ["d_k=2", "d_k=3"]),
        (lambda: exact_attention(X, mask=np.ones((2, 3), bool)), ["mask", "(2, 3)", "(3, 3)"]),
        (lambda: exact_attention(X, mask=np.array([[1, 0, 0], [0, 0, 0], [1, 1, 1]], bool)), ["query row 1", "no key"]),
        (lambda: exact_attention(X, scale=0), ["scale", "positive"]),
        (lambda: exact_attention(X, scale=-sp.sqrt(2)), ["scale", "positive"]),
        (lambda: exact_attention(X, scale="big"), ["scale"]),
        (lambda: exact_softmax([]), ["empty"]),
        (lambda: exact_softmax([1, 2], allowed=[False, False]), ["allowed", "undefined"]),
        (lambda: exact_softmax([1, 2], allowed=[True]), ["allowed has 1", "values has 2"]),
        (lambda: exact_matrix("W", [[]]), ["W", "empty"]),
    ],
)
def test_bad_input_raises_value_error(call, words):
    with pytest.raises(ValueError) as info:
        call()
    for w in words:
        assert w in str(info.value), f"{w!r} not in {info.value}"

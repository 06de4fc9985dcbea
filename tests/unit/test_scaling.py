"""attnlib.scaling: the variance derivation, the Monte Carlo check, the softmax Jacobian, sharpness statistics."""

import numpy as np
import pytest
import sympy as sp
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

import attnlib as A
from attnlib.scaling import (
    dot_product_samples,
    dot_product_variance_steps,
    dot_product_variance_table,
    row_entropy,
    saturation_sweep,
    sharpness_vs_dk,
    softmax_jacobian,
)


def test_derivation_reaches_d_k_and_one():
    steps = dot_product_variance_steps(concrete_dims=(2,))
    values = {s.claim: s.value for s in steps}
    d_k = sp.Symbol("d_k", integer=True, positive=True)
    assert steps[-1].value == 1
    assert any(v == d_k for v in values.values())
    assert values["check with d_k = 2 separate variables"] == 2
    # the constant is chapter 5's beta, and a second coordinate is r' (s is the decoder state, a the weight row)
    rule = [s for s in steps if "scaling rule" in s.claim][0]
    assert "\\beta^{2}" in rule.latex() and "Var(β Y) = β^2 Var(Y)" in rule.claim
    covariance = [s for s in steps if "uncorrelated" in s.claim][0].latex()
    assert "q_{r'}" in covariance and "q_{s}" not in covariance
    assert all(isinstance(s.latex(), str) and "=" in s.latex() for s in steps)


def test_monte_carlo_variance_grows_like_d_k():
    t = dot_product_variance_table([2, 16, 128], n_samples=20_000, seed=3)
    np.testing.assert_allclose(t.unscaled / t.d_k, 1.0, rtol=0.06)
    np.testing.assert_allclose(t.scaled, 1.0, rtol=0.06)
    again = dot_product_variance_table([128], n_samples=20_000, seed=3)
    assert again.unscaled[0] == t.unscaled[2], "each d_k must have its own seeded stream"


def test_samples_are_chunked_consistently():
    s = dot_product_samples(1000, 5000, np.random.default_rng(0))
    assert s.shape == (5000,) and np.isfinite(s).all()


@settings(max_examples=50, deadline=None)
@given(arrays(np.float64, st.integers(1, 6), elements=st.floats(-30, 30)))
def test_jacobian_matches_finite_differences(z):
    J = softmax_jacobian(z)
    np.testing.assert_allclose(J, J.T, atol=1e-15)
    np.testing.assert_allclose(J.sum(axis=0), 0.0, atol=1e-12)
    h = 1e-6
    for j in range(z.size):
        e = np.zeros_like(z)
        e[j] = h
        numeric = (A.softmax(z + e) - A.softmax(z - e)) / (2 * h)
        np.testing.assert_allclose(J[:, j], numeric, atol=1e-6)


def test_saturation_shrinks_the_gradient():
    s = saturation_sweep([1.0, 0.0, 0.5], [1, 2, 4, 8, 16, 32])
    assert np.all(np.diff(s.max_weight) > 0)
    assert np.all(np.diff(s.jacobian_norm) < 0)
    assert s.max_weight[0] == pytest.approx(0.5065, abs=1e-4)
    assert s.jacobian_max[-1] < 1e-6


def test_row_entropy_bounds():
    assert row_entropy(np.full((1, 4), 0.25))[0] == pytest.approx(np.log(4))
    assert row_entropy([[0.0, 1.0, 0.0]])[0] == 0.0


def test_sharpness_unscaled_is_peakier_for_large_d_k():
    t = sharpness_vs_dk([2, 64, 512], n_queries=200, n_keys=10, seed=0)
    assert t.max_weight_unscaled[-1] > 0.9 and t.max_weight_scaled[-1] < 0.45
    assert np.all(t.entropy_unscaled < t.entropy_scaled)
    assert t.entropy_unscaled[-1] < t.entropy_unscaled[0]
    assert np.all(t.entropy_scaled <= np.log(10) + 1e-12)
    assert t.jacobian_norm_unscaled[-1] < 0.5 * t.jacobian_norm_scaled[-1]


@pytest.mark.parametrize(
    "call, words",
    [
        (lambda: dot_product_variance_table([]), ["dims is empty"]),
        (lambda: dot_product_variance_table([0]), ["dims[0]", "positive integer"]),
        (lambda: dot_product_samples(4, 10, 42), ["rng", "Generator"]),
        (lambda: dot_product_samples(4, 0, np.random.default_rng(0)), ["n_samples"]),
        (lambda: softmax_jacobian([[1.0, 2.0]]), ["scores", "1 dimension", "(1, 2)"]),
        (lambda: softmax_jacobian([1.0, np.nan]), ["scores", "NaN"]),
        (lambda: saturation_sweep([1.0, 0.0], [[1.0]]), ["factors", "1 dimension"]),
        (lambda: row_entropy([[0.5, 0.6]]), ["sum to 1"]),
        (lambda: row_entropy([[1.5, -0.5]]), ["negative"]),
        (lambda: row_entropy([0.5, 0.5]), ["weights", "2 dimension"]),
        (lambda: sharpness_vs_dk([]), ["dims is empty"]),
        (lambda: sharpness_vs_dk([4], n_keys=0), ["n_keys"]),
        (lambda: dot_product_variance_steps(concrete_dims=(0,)), ["concrete_dims[0]"]),
    ],
)
def test_bad_input_raises_value_error(call, words):
    with pytest.raises(ValueError) as info:
        call()
    for w in words:
        assert w in str(info.value), f"{w!r} not in {info.value}"

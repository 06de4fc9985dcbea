"""The hand-derived backward pass against finite differences, sympy, and every shape, mask and scale."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import attnlib
from attnlib.backward import (
    attention_backward,
    central_difference,
    cross_attention_backward,
    multi_head_attention_backward,
    projection_gradients,
    relative_error,
    score_change,
    self_attention_backward,
    softmax_backward,
)
from attnlib.exact import exact_attention_gradients, softmax_backward_proof, to_float

TOL = 1e-6


def weighted_output(G, fn):
    """The scalar loss sum(G * fn(...)) whose output gradient is G."""
    return lambda *args: float(np.sum(G * fn(*args)))


def numerical_qkv(Q, K, V, G, mask=None, scale=True):
    def out(q, k, v):
        return attnlib.attention(q, k, v, mask=mask, scale=scale).output

    L = weighted_output(G, out)
    return (
        central_difference(lambda q: L(q, K, V), Q),
        central_difference(lambda k: L(Q, k, V), K),
        central_difference(lambda v: L(Q, K, v), V),
    )


def random_problem(rng, n_q=4, n_k=5, d_k=3, d_v=2):
    return rng.normal(size=(n_q, d_k)), rng.normal(size=(n_k, d_k)), rng.normal(size=(n_k, d_v)), rng.normal(size=(n_q, d_v))


@pytest.mark.parametrize("scale", [True, False, 3.5])
def test_attention_backward_matches_central_differences(scale):
    rng = np.random.default_rng(13)
    Q, K, V, G = random_problem(rng)
    mask = np.array([[1, 1, 0, 1, 0], [1, 0, 0, 0, 0], [1, 1, 1, 1, 1], [0, 0, 1, 1, 0]], dtype=bool)
    for m in (None, mask):
        got = attention_backward(Q, K, V, G, mask=m, scale=scale)
        for g, n in zip(got, numerical_qkv(Q, K, V, G, m, scale)):
            assert relative_error(g, n) <= TOL


def test_a_wrong_gradient_fails_the_finite_difference_check():
    # The check can fail: the backward pass without the softmax's rowsum term is caught.
    rng = np.random.default_rng(3)
    Q, K, V, G = random_problem(rng)
    A = attnlib.attention(Q, K, V).weights
    wrong_dQ = (A * (G @ V.T)) @ K / np.sqrt(3)
    assert relative_error(wrong_dQ, numerical_qkv(Q, K, V, G)[0]) > 1e-2


def test_masked_pairs_get_exactly_zero_score_gradient():
    rng = np.random.default_rng(5)
    Q, K, V, G = random_problem(rng, n_q=3, n_k=3)
    mask = attnlib.causal_mask(3)
    got = attention_backward(Q, K, V, G, mask=mask)
    # query 0 may only see key 0: its query gradient is exactly zero (a one-hot row has no slope)
    assert np.all(got.dQ[0] == 0.0)
    # key 2 is seen only by query 2 with weight < 1; value 2 gets gradient only from query 2
    A = attnlib.attention(Q, K, V, mask=mask).weights
    assert np.array_equal(got.dV[2], A[2, 2] * G[2])
    # the additive form of the same mask gives the same gradients
    same = attention_backward(Q, K, V, G, mask=attnlib.additive_mask(mask))
    for a, b in zip(got, same):
        assert np.array_equal(a, b)


def test_softmax_backward_is_proved_symbolically_and_matches_the_jacobian():
    assert softmax_backward_proof(4).holds
    a = attnlib.softmax(np.array([[0.3, -1.2, 2.0]]))
    g = np.array([[0.5, 1.0, -2.0]])
    jac = np.diag(a[0]) - np.outer(a[0], a[0])
    assert np.allclose(softmax_backward(a, g)[0], jac @ g[0], atol=1e-15)


def test_running_example_agrees_with_sympys_exact_derivative():
    X = attnlib.running_example()
    G = np.array([[1.0, 0.0], [0.0, 1.0], [0.5, -0.5]])
    exact = exact_attention_gradients(X, X, X, G)
    got = attention_backward(X, X, X, G)
    for e, g in zip((exact.dQ, exact.dK, exact.dV), got):
        assert np.abs(to_float(e) - g).max() < 1e-15


def test_running_example_masked_agrees_with_sympy():
    X = attnlib.running_example()
    G = np.array([[1.0, 0.0], [0.0, 1.0], [0.5, -0.5]])
    mask = attnlib.causal_mask(3)
    exact = exact_attention_gradients(X, X, X, G, mask=mask, scale=False)
    got = attention_backward(X, X, X, G, mask=mask, scale=False)
    for e, g in zip((exact.dQ, exact.dK, exact.dV), got):
        assert np.abs(to_float(e) - g).max() < 1e-15


def test_projection_gradients_self_and_cross():
    rng = np.random.default_rng(7)
    Xq, Xm = rng.normal(size=(3, 4)), rng.normal(size=(5, 4))
    WQ, WK, WV = rng.normal(size=(4, 2)), rng.normal(size=(4, 2)), rng.normal(size=(4, 3))
    G = rng.normal(size=(3, 3))
    mask = rng.random((3, 5)) < 0.6
    mask[:, 0] = True

    def L(wq, wk, wv):
        return float(np.sum(G * attnlib.cross_attention(Xq, Xm, wq, wk, wv, mask=mask).output))

    got = cross_attention_backward(Xq, Xm, WQ, WK, WV, G, mask=mask)
    assert relative_error(got.dW_Q, central_difference(lambda w: L(w, WK, WV), WQ)) <= TOL
    assert relative_error(got.dW_K, central_difference(lambda w: L(WQ, w, WV), WK)) <= TOL
    assert relative_error(got.dW_V, central_difference(lambda w: L(WQ, WK, w), WV)) <= TOL

    X = Xm
    Gs = rng.normal(size=(5, 3))

    def Ls(wq, wk, wv):
        return float(np.sum(Gs * attnlib.self_attention(X, wq, wk, wv, scale=False).output))

    got = self_attention_backward(X, WQ, WK, WV, Gs, scale=False)
    assert relative_error(got.dW_Q, central_difference(lambda w: Ls(w, WK, WV), WQ)) <= TOL
    assert relative_error(got.dW_K, central_difference(lambda w: Ls(WQ, w, WV), WK)) <= TOL
    assert relative_error(got.dW_V, central_difference(lambda w: Ls(WQ, WK, w), WV)) <= TOL


@pytest.mark.parametrize("n_heads", [1, 2, 3])
def test_multi_head_gradients_including_W_O(n_heads):
    rng = np.random.default_rng(11 + n_heads)
    d = 6
    Xq, Xm = rng.normal(size=(4, d)), rng.normal(size=(3, d))
    W = [rng.normal(size=(d, d)) / np.sqrt(d) for _ in range(4)]
    G = rng.normal(size=(4, d))
    mask = np.array([[1, 0, 1], [1, 1, 1], [0, 1, 0], [1, 1, 0]], dtype=bool)

    def L(*ws):
        return float(np.sum(G * attnlib.multi_head_attention(Xq, Xm, *ws, n_heads=n_heads, mask=mask)[0]))

    got = multi_head_attention_backward(Xq, Xm, *W, n_heads, G, mask=mask)
    for i, g in enumerate(got):
        num = central_difference(lambda w, i=i: L(*[w if j == i else W[j] for j in range(4)]), W[i])
        assert relative_error(g, num) <= TOL, ("dW_Q", "dW_K", "dW_V", "dW_O")[i]


@settings(max_examples=40, deadline=None)
@given(
    st.integers(1, 4),
    st.integers(1, 5),
    st.integers(1, 4),
    st.integers(1, 3),
    st.sampled_from([True, False, 0.5, 7.0]),
    st.booleans(),
    st.integers(0, 2**32 - 1),
)
def test_hypothesis_shapes_masks_scales(n_q, n_k, d_k, d_v, scale, masked, seed):
    rng = np.random.default_rng(seed)
    Q, K, V, G = random_problem(rng, n_q, n_k, d_k, d_v)
    mask = None
    if masked:
        mask = rng.random((n_q, n_k)) < 0.5
        mask[np.arange(n_q), rng.integers(0, n_k, n_q)] = True
    got = attention_backward(Q, K, V, G, mask=mask, scale=scale)
    assert [g.shape for g in got] == [Q.shape, K.shape, V.shape]
    for g, n in zip(got, numerical_qkv(Q, K, V, G, mask, scale)):
        assert np.abs(g - n).max() <= TOL * max(1.0, np.abs(n).max())
    if mask is not None:
        # a key no query may see gets exactly zero gradient for its key and value rows
        unseen = ~mask.any(axis=0)
        assert np.all(got.dK[unseen] == 0.0) and np.all(got.dV[unseen] == 0.0)


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"d_output": np.ones((3, 3))}, "d_output has shape"),
        ({"d_output": [[np.nan, 0.0]] * 3}, "d_output .* contains NaN"),
        ({"V": np.ones((2, 2))}, "every key needs one value"),
        ({"mask": np.zeros((3, 3), dtype=bool)}, "mask .* no key it may attend to"),
        ({"scale": -1.0}, "scale must be"),
        ({"Q": np.ones((3, 3))}, "same width"),
    ],
)
def test_bad_input_raises_a_named_value_error(kwargs, match):
    X = attnlib.running_example()
    args = {"Q": X, "K": X, "V": X, "d_output": np.ones((3, 2)), **kwargs}
    with pytest.raises(ValueError, match=match):
        attention_backward(**args)


def test_helpers_reject_bad_input():
    with pytest.raises(ValueError, match="d_weights has shape"):
        softmax_backward(np.ones((1, 2)) / 2, np.ones((2, 2)))
    with pytest.raises(ValueError, match="eps"):
        central_difference(lambda x: 0.0, [1.0], eps=0)
    with pytest.raises(ValueError, match="reference has shape"):
        relative_error([1.0], [1.0, 2.0])
    X = attnlib.running_example()
    with pytest.raises(ValueError, match="n_heads"):
        multi_head_attention_backward(X, X, *[np.eye(2)] * 4, 3, np.ones((3, 2)))
    with pytest.raises(ValueError, match="d_output has shape"):
        multi_head_attention_backward(X, X, *[np.eye(2)] * 4, 1, np.ones((3, 3)))


def test_more_bad_input():
    with pytest.raises(ValueError, match="softmax outputs"):
        softmax_backward([[1.5, -0.5]], [[1.0, 1.0]])
    g = attention_backward(np.eye(2), np.eye(2), np.eye(2), np.eye(2))
    with pytest.raises(ValueError, match="grads do not match"):
        projection_gradients(np.ones((3, 2)), np.ones((2, 2)), g)
    X = attnlib.running_example()
    with pytest.raises(ValueError, match="same width"):
        exact_attention_gradients(X, np.ones((3, 3)), X, np.ones((3, 2)))
    with pytest.raises(ValueError, match="every key needs one value"):
        exact_attention_gradients(X, X, np.ones((2, 2)), np.ones((3, 2)))
    with pytest.raises(ValueError, match="d_output has shape"):
        exact_attention_gradients(X, X, X, np.ones((3, 3)))


@settings(max_examples=40, deadline=None)
@given(st.integers(0, 10**6), st.integers(2, 6), st.integers(1, 4), st.booleans())
def test_score_change_is_the_first_order_change_of_the_scores(seed, n, d, scale):
    """Against a central difference of the scores along the move, and the descent identity for the whole matrix."""
    rng = np.random.default_rng(seed)
    Xq, Xm = rng.normal(size=(n, d)), rng.normal(size=(n + 1, d))
    W_Q, W_K, W_V, dWQ, dWK = (rng.normal(size=(d, d)) for _ in range(5))
    got = score_change(Xq, Xm, W_Q, W_K, dWQ, dWK, scale=scale)

    def scores(t):
        return attnlib.cross_attention(Xq, Xm, W_Q + t * dWQ, W_K + t * dWK, W_V, scale=scale).scaled

    eps = 1e-6
    np.testing.assert_allclose(got, (scores(eps) - scores(-eps)) / (2 * eps), rtol=1e-6, atol=1e-6)
    # a gradient step: the change of the whole score matrix has product -(|dW_Q|^2 + |dW_K|^2) with dZ
    G = rng.normal(size=(n, d))
    forward = attnlib.cross_attention(Xq, Xm, W_Q, W_K, W_V, scale=scale)
    dZ = softmax_backward(forward.weights, G @ forward.V.T)
    grads = cross_attention_backward(Xq, Xm, W_Q, W_K, W_V, G, scale=scale)
    moved = score_change(Xq, Xm, W_Q, W_K, -grads.dW_Q, -grads.dW_K, scale=scale)
    want = -(np.sum(grads.dW_Q**2) + np.sum(grads.dW_K**2))
    assert np.sum(dZ * moved) == pytest.approx(want, rel=1e-9, abs=1e-12)


def test_score_change_names_what_does_not_fit():
    X = np.eye(3, 2)
    with pytest.raises(ValueError, match="delta_W_K must have the shape of W_K"):
        score_change(X, X, np.eye(2), np.eye(2), np.eye(2), np.eye(3))
    with pytest.raises(ValueError, match="delta_W_Q"):
        score_change(X, X, np.eye(2), np.eye(2), [[np.nan, 0], [0, 1]], np.eye(2))

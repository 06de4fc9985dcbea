"""One retrieval template for Bahdanau and Transformer attention."""

import numpy as np
import pytest

import attnlib as A
from attnlib.retrieval import bahdanau_retrieval, retrieve, transformer_retrieval

X = A.running_example()
I2 = np.eye(2)


def bahdanau_params():
    rng = np.random.default_rng(7)
    return rng.normal(size=(3, 2)), rng.normal(size=(3, 2)), rng.normal(size=3)


def test_retrieve_is_softmax_then_weighted_average():
    scores = np.array([[1.0, 0.0, 0.5], [2.0, -1.0, 0.0]])
    values = np.array([[1.0, 0.0], [0.0, 1.0], [0.5, 0.5]])
    r = retrieve(scores, values)
    e = np.exp(scores)
    np.testing.assert_allclose(r.weights, e / e.sum(axis=1, keepdims=True))
    np.testing.assert_allclose(r.output, r.weights @ values)
    np.testing.assert_allclose(r.weights.sum(axis=1), 1.0)


def test_retrieve_mask_gives_exact_zeros_and_accepts_additive_form():
    scores = X @ X.T / np.sqrt(2)
    r = retrieve(scores, X, mask=A.causal_mask(3))
    assert r.weights[0, 1] == 0.0 and r.weights[1, 2] == 0.0
    r2 = retrieve(scores, X, mask=A.additive_mask(A.causal_mask(3)))
    np.testing.assert_array_equal(r.weights, r2.weights)
    np.testing.assert_allclose(r.weights[1].round(4), [0.3302, 0.6698, 0.0])


def test_transformer_retrieval_equals_attention():
    rng = np.random.default_rng(0)
    Xq, Xm = rng.normal(size=(2, 4)), rng.normal(size=(5, 4))
    W = [rng.normal(size=(4, 3)) for _ in range(3)]
    r = transformer_retrieval(Xq, Xm, *W)
    ref = A.cross_attention(Xq, Xm, *W)
    np.testing.assert_allclose(r.weights, ref.weights, atol=1e-14)
    np.testing.assert_allclose(r.output, ref.output, atol=1e-14)
    np.testing.assert_allclose(r.values, Xm @ W[2])


def test_running_example_numbers():
    r = transformer_retrieval(X, X, I2, I2, I2)
    assert r.weights[0].round(4).tolist() == [0.4555, 0.2246, 0.3199]
    assert r.output[0].round(4).tolist() == [0.6155, 0.3845]


def test_bahdanau_retrieves_the_annotations():
    W_a, U_a, v_a = bahdanau_params()
    S = np.array([[0.3, -0.2], [1.0, 1.0]])
    r = bahdanau_retrieval(S, X, W_a, U_a, v_a)
    np.testing.assert_allclose(r.scores, A.additive_scores(S, X, W_a, U_a, v_a))
    np.testing.assert_array_equal(r.values, X)
    np.testing.assert_allclose(r.output, r.weights @ X)
    # a context vector is a convex combination of the annotations
    assert r.weights.min() > 0 and np.allclose(r.weights.sum(axis=1), 1)
    # the direct formula for one entry
    e = v_a @ np.tanh(W_a @ S[1] + U_a @ X[2])
    assert r.scores[1, 2] == pytest.approx(e)


def test_equal_scores_give_the_plain_mean():
    r = retrieve(np.zeros((1, 3)), X)
    np.testing.assert_allclose(r.output, [X.mean(axis=0)])


@pytest.mark.parametrize(
    "call, words",
    [
        (lambda: retrieve(np.zeros((2, 3)), np.zeros((4, 2))), ["scores has 3 columns", "values has 4 rows"]),
        (lambda: retrieve([0.0, 1.0], X), ["scores must have 2 dimension"]),
        (lambda: retrieve([[0.0, np.nan, 1.0]], X), ["scores", "NaN"]),
        (lambda: retrieve(np.zeros((1, 3)), X, mask=np.zeros((1, 3), bool)), ["query row 0", "no key"]),
        (lambda: retrieve(np.zeros((1, 3)), X, mask=np.ones((2, 3), bool)), ["mask", "(2, 3)", "(1, 3)"]),
        (lambda: transformer_retrieval(X, X, np.eye(3), I2, I2), ["W_Q has 3 rows"]),
        (lambda: transformer_retrieval(X, X, I2, np.ones((2, 3)), I2), ["d_k"]),
        (lambda: bahdanau_retrieval(X, X, np.ones((3, 3)), np.ones((3, 2)), np.ones(3)), ["W_a has 3 columns"]),
    ],
)
def test_bad_input_raises(call, words):
    with pytest.raises(ValueError) as info:
        call()
    for w in words:
        assert w in str(info.value)

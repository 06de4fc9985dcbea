"""Properties of attention that must hold for every input (hypothesis)."""

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays
from support.strategies import finite, masks, qkv

import attnlib as A


@given(qkv(), st.data())
def test_rows_sum_to_one_and_masked_weights_are_zero(t, data):
    Q, K, V = t
    mask = data.draw(masks(Q.shape[0], K.shape[0]))
    r = A.attention(Q, K, V, mask=mask)
    assert np.allclose(r.weights.sum(axis=1), 1.0)
    assert np.all(r.weights[~mask] == 0.0)
    assert np.all(np.isfinite(r.output))
    assert r.output.shape == (Q.shape[0], V.shape[1])


@given(arrays(np.float64, st.integers(1, 8), elements=finite), st.floats(-1e3, 1e3))
def test_softmax_is_shift_invariant(x, c):
    assert np.allclose(A.softmax(x), A.softmax(x + c), atol=1e-12)


@given(arrays(np.float64, (3, 5), elements=st.sampled_from([1e6, -1e6, 0.0, 1.0])))
def test_huge_logits_give_no_nan_or_inf(x):
    w = A.softmax(x)
    assert np.all(np.isfinite(w))
    assert np.allclose(w.sum(axis=1), 1.0)


@settings(max_examples=50)
@given(st.integers(1, 6), st.integers(1, 4), st.data())
def test_self_attention_is_permutation_equivariant(n, d, data):
    X = data.draw(arrays(np.float64, (n, d), elements=finite))
    W = [data.draw(arrays(np.float64, (d, d), elements=st.floats(-2, 2))) for _ in range(3)]
    perm = data.draw(st.permutations(range(n)))
    P = np.eye(n)[list(perm)]
    out = A.self_attention(X, *W).output
    out_perm = A.self_attention(P @ X, *W).output
    assert np.allclose(out_perm, P @ out, atol=1e-9)


def test_softmax_neg_inf_gets_exact_zero_and_2d_axis():
    w = A.softmax([[0.0, -np.inf], [1.0, 2.0]], axis=-1)
    assert w[0].tolist() == [1.0, 0.0]
    w0 = A.softmax([[0.0, 0.0], [0.0, 0.0]], axis=0)
    assert np.allclose(w0, 0.5)

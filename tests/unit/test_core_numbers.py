"""The source post's numbers, reproduced by attnlib (exact values, not the post's rounding)."""

import math

import numpy as np
import pytest

import attnlib as A

X = A.running_example()
I2 = np.eye(2)


def test_running_example_is_a_fresh_copy():
    first = A.running_example()
    first[0, 0] = 99
    assert A.running_example()[0, 0] == 1.0
    assert A.running_example().tolist() == [[1, 0], [0, 1], [0.5, 0.5]]
    assert A.running_example().dtype == np.float64


def test_raw_scores():
    assert A.scaled_scores(X, X, scale=False).tolist() == [[1, 0, 0.5], [0, 1, 0.5], [0.5, 0.5, 0.5]]


def test_scaled_scores_by_sqrt2():
    s = A.scaled_scores(X, X)
    assert s[0, 0] == pytest.approx(1 / math.sqrt(2))
    assert round(s[0, 0], 4) == 0.7071
    assert round(s[0, 2], 4) == 0.3536
    assert A.scaled_scores(X, X, scale=2.0)[0, 0] == 0.5


def test_exponentials_and_row_sum():
    s = A.scaled_scores(X, X)[0]
    e = np.exp(s)
    assert round(e[0], 4) == 2.0281
    # the post prints 1.4240; the exact value rounds to 1.4241
    assert round(e[2], 4) == 1.4241
    assert round(e.sum(), 4) == 4.4522


def test_weights_rows():
    w = A.attention(X, X, X).weights
    assert np.round(w[0], 4).tolist() == [0.4555, 0.2246, 0.3199]
    assert np.allclose(w[1], w[0][[1, 0, 2]])
    assert np.allclose(w[2], 1 / 3)


def test_outputs():
    o = A.attention(X, X, X).output
    assert np.round(o[0], 4).tolist() == [0.6155, 0.3845]
    assert np.round(o[1], 4).tolist() == [0.3845, 0.6155]
    assert np.allclose(o[2], [0.5, 0.5])


def test_unscaled_row_1():
    w = A.attention(X, X, X, scale=False).weights
    assert np.round(w[0], 4).tolist() == [0.5065, 0.1863, 0.3072]


def test_values_change_scores_do_not():
    base = A.self_attention(X, I2, I2, I2)
    changed = A.self_attention(X, I2, I2, [[1, 0], [1, 1]])
    assert changed.V.tolist() == [[1, 0], [1, 1], [1, 0.5]]
    assert np.array_equal(changed.weights, base.weights)
    assert not np.allclose(changed.output, base.output)


def test_causal_row_2():
    r = A.attention(X, X, X, mask=A.causal_mask(3))
    assert np.round(r.weights[1], 4).tolist() == [0.3302, 0.6698, 0.0]
    assert r.weights[1, 2] == 0.0
    assert np.isneginf(r.scaled[1, 2])


def test_additive_mask_is_the_posts_M():
    M = A.additive_mask(A.causal_mask(3))
    assert M[0].tolist() == [0.0, -np.inf, -np.inf]
    r_bool = A.attention(X, X, X, mask=A.causal_mask(3))
    r_add = A.attention(X, X, X, mask=M)
    assert np.array_equal(r_bool.weights, r_add.weights)


def test_parameter_count_512():
    assert A.attention_parameter_count(512, 8) == 1_048_576 == 4 * 512**2
    assert A.attention_parameter_count(512, 1) == A.attention_parameter_count(512, 64)


def test_positional_first_pair():
    pe = A.sinusoidal_encoding(3, 2)
    assert pe[0].tolist() == [0.0, 1.0]
    assert np.round(pe[1], 4).tolist() == [0.8415, 0.5403]
    assert np.round(pe[2], 4).tolist() == [0.9093, -0.4161]


def test_positional_formula_and_odd_width():
    pe = A.sinusoidal_encoding(50, 7)
    t = np.arange(50)
    for i in range(4):
        assert np.allclose(pe[:, 2 * i], np.sin(t / 10000 ** (2 * i / 7)))
        if 2 * i + 1 < 7:
            assert np.allclose(pe[:, 2 * i + 1], np.cos(t / 10000 ** (2 * i / 7)))


def test_additive_scores_against_loop():
    rng = np.random.default_rng(0)
    S, H = rng.normal(size=(2, 3)), rng.normal(size=(4, 5))
    W, U, v = rng.normal(size=(6, 3)), rng.normal(size=(6, 5)), rng.normal(size=6)
    e = A.additive_scores(S, H, W, U, v)
    for i in range(2):
        for j in range(4):
            assert e[i, j] == pytest.approx(v @ np.tanh(W @ S[i] + U @ H[j]))


def test_multi_head_matches_per_head_loop():
    rng = np.random.default_rng(1)
    Xq, Xm = rng.normal(size=(3, 4)), rng.normal(size=(5, 4))
    WQ, WK, WV, WO = (rng.normal(size=(4, 4)) for _ in range(4))
    out, w = A.multi_head_attention(Xq, Xm, WQ, WK, WV, WO, n_heads=2)
    heads = []
    for r in range(2):
        c = slice(2 * r, 2 * r + 2)
        res = A.attention(Xq @ WQ[:, c], Xm @ WK[:, c], Xm @ WV[:, c])
        assert np.allclose(w[r], res.weights)
        heads.append(res.output)
    assert np.allclose(out, np.hstack(heads) @ WO)
    one, w1 = A.multi_head_attention(Xq, Xm, WQ, WK, WV, WO, n_heads=1)
    assert np.allclose(one, A.cross_attention(Xq, Xm, WQ, WK, WV).output @ WO)
    assert w1.shape == (1, 3, 5)


def test_cross_attention_shapes_and_projections():
    mem = [[1, 2], [3, 4], [5, 6], [7, 8]]
    r = A.cross_attention([[1, 0], [0, 1]], mem, I2, I2, [[0, 1], [1, 0]])
    assert r.weights.shape == (2, 4)
    assert r.V.tolist() == [[2, 1], [4, 3], [6, 5], [8, 7]]
    assert np.allclose(r.weights.sum(axis=1), 1)


def test_inputs_may_be_lists_and_ints():
    r = A.attention([[1, 0], [0, 1]], [[1, 0], [0, 1]], [[1], [2]], scale=2)
    assert r.divisor == 2.0
    assert A.causal_mask(np.int64(2)).shape == (2, 2)

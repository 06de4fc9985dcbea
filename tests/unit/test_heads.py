"""Head splitting, concatenation and the symbolic parameter count."""

import numpy as np
import pytest
import sympy as sp

import attnlib as A
from attnlib.heads import concat_heads, head_dim, split_heads, symbolic_parameter_count

RNG = np.random.default_rng(8)


def test_split_heads_takes_consecutive_column_blocks():
    M = np.arange(24.0).reshape(2, 12)
    blocks = split_heads(M, 3)
    assert blocks.shape == (3, 2, 4)
    np.testing.assert_array_equal(blocks[1], M[:, 4:8])
    np.testing.assert_array_equal(blocks[2], M[:, 8:12])


@pytest.mark.parametrize("n_heads", [1, 2, 3, 6])
def test_concat_undoes_split(n_heads):
    M = RNG.normal(size=(5, 6))
    np.testing.assert_array_equal(concat_heads(split_heads(M, n_heads)), M)


def test_split_heads_matches_the_packed_layout_of_multi_head_attention():
    """Running attention on each column block reproduces multi_head_attention's weights and output."""
    X = RNG.normal(size=(4, 6))
    W_Q, W_K, W_V, W_O = (RNG.normal(size=(6, 6)) for _ in range(4))
    out, weights = A.multi_head_attention(X, X, W_Q, W_K, W_V, W_O, n_heads=3)
    q, k, v = (split_heads(X @ W, 3) for W in (W_Q, W_K, W_V))
    heads = [A.attention(q[r], k[r], v[r]) for r in range(3)]
    np.testing.assert_allclose(np.stack([h.weights for h in heads]), weights)
    np.testing.assert_allclose(concat_heads(np.stack([h.output for h in heads])) @ W_O, out)


def test_two_heads_on_the_running_example_track_different_features():
    X, I = A.running_example(), np.eye(2)
    _, w = A.multi_head_attention(X, X, I, I, I, I, n_heads=2)
    # head 1 compares noun-ness: query x1 ranks keys x1 > x3 > x2; the verb x2 has no noun-ness, so its row is uniform
    assert w[0, 0].argmax() == 0 and w[0, 0, 2] > w[0, 0, 1]
    np.testing.assert_allclose(w[0, 1], 1 / 3)
    # head 2 is the mirror image, for verb-ness
    np.testing.assert_allclose(w[1, 1], w[0, 0][[1, 0, 2]])
    np.testing.assert_allclose(w[1, 0], 1 / 3)
    np.testing.assert_allclose(w[0, 0], np.exp([1, 0, 0.5]) / np.exp([1, 0, 0.5]).sum())


def test_symbolic_count_is_four_d_model_squared_for_every_h():
    c = symbolic_parameter_count()
    assert sp.simplify(c.total - 4 * c.d_model**2) == 0
    assert not c.total.has(c.h)
    assert sp.simplify(c.per_head - 3 * c.d_model**2 / c.h) == 0
    assert sp.simplify(c.output - c.d_model**2) == 0
    assert c.evaluate(512, 8) == 1_048_576


@pytest.mark.parametrize("d_model, n_heads", [(512, 1), (512, 8), (512, 16), (64, 4), (6, 3)])
@pytest.mark.parametrize("bias", [False, True])
def test_symbolic_count_agrees_with_attention_parameter_count(d_model, n_heads, bias):
    assert symbolic_parameter_count(bias).evaluate(d_model, n_heads) == A.attention_parameter_count(d_model, n_heads, bias=bias)


def test_symbolic_count_agrees_with_counting_array_entries():
    d_model, n_heads = 12, 3
    d_head = head_dim(d_model, n_heads)
    per_head = [np.zeros((d_model, d_head)) for _ in range(3 * n_heads)]  # W_r^Q, W_r^K, W_r^V for every head
    W_O = np.zeros((n_heads * d_head, d_model))
    assert sum(w.size for w in per_head) + W_O.size == symbolic_parameter_count().evaluate(d_model, n_heads)


@pytest.mark.parametrize(
    "call, words",
    [
        (lambda: split_heads(np.ones((3, 4)), 3), ["n_heads=3", "d_model=4"]),
        (lambda: split_heads(np.ones(4), 2), ["M", "2 dimension", "(4,)"]),
        (lambda: split_heads(np.ones((3, 4)), 0), ["n_heads", "positive"]),
        (lambda: split_heads([[1.0, np.nan]], 1), ["M", "NaN"]),
        (lambda: concat_heads(np.ones((2, 3))), ["heads", "3 dimension", "(2, 3)"]),
        (lambda: head_dim(10, 4), ["n_heads=4", "d_model=10"]),
        (lambda: head_dim(0, 1), ["d_model", "positive"]),
        (lambda: symbolic_parameter_count().evaluate(10, 3), ["n_heads=3", "d_model=10"]),
    ],
)
def test_bad_input_raises_value_error(call, words):
    with pytest.raises(ValueError) as info:
        call()
    for w in words:
        assert w in str(info.value)

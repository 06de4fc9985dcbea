"""FlashAttention in numpy: tiles of queries and keys give attention's output and attention_backward's gradients."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from support.strategies import masks, qkv

from attnlib.backward import AttentionGradients, attention_backward
from attnlib.blocked import chunked_attention, flash_attention, flash_attention_backward
from attnlib.core import attention, causal_mask, running_example
from attnlib.cost import score_matrix_bytes
from attnlib.measure import peak_memory_bytes

TOL = 1e-12


@st.composite
def tiled_problems(draw):
    """Q, K, V, a gradient dO, tile sizes from 1 to n + 1 and a mask in every form chunked_attention takes."""
    Q, K, V = draw(qkv(max_n=24, max_d_k=5, max_d_v=4))
    n_q, n_k = Q.shape[0], K.shape[0]
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    d_output = rng.standard_normal((n_q, V.shape[1]))
    tiles = draw(st.integers(1, n_q + 1)), draw(st.integers(1, n_k + 1))
    kind = draw(st.sampled_from(["none", "causal", "bool", "additive", "function"]))
    dense_mask = mask = None
    if kind == "causal":
        mask, dense_mask = "causal", np.tril(np.ones((n_q, n_k), dtype=bool))
    elif kind in ("bool", "additive"):
        dense_mask = draw(masks(n_q, n_k))
        mask = dense_mask if kind == "bool" else np.where(dense_mask, 0.0, -np.inf)
    elif kind == "function":
        window = draw(st.integers(1, n_k))
        allowed = (np.arange(n_k)[None, :] <= np.arange(n_q)[:, None]) & (np.arange(n_q)[:, None] - np.arange(n_k)[None, :] < window)
        allowed[:, 0] |= ~allowed.any(axis=1)  # every row keeps a key
        dense_mask = allowed
        mask = lambda i, j: allowed[i, j]  # noqa: E731 - called once per tile with index arrays
    scale = draw(st.sampled_from([True, False, 0.5, 3.0]))
    return Q, K, V, d_output, tiles, mask, dense_mask, scale


@settings(max_examples=150, deadline=None)
@given(tiled_problems())
def test_tiles_give_attention_and_its_gradients(problem):
    Q, K, V, dO, (qt, kt), mask, dense_mask, scale = problem
    want = attention(Q, K, V, mask=dense_mask, scale=scale)
    out, lse = flash_attention(Q, K, V, mask=mask, scale=scale, return_lse=True, query_tile=qt, key_tile=kt)
    np.testing.assert_allclose(out, want.output, atol=TOL, rtol=TOL)
    top = want.scaled.max(axis=1)
    np.testing.assert_allclose(lse, top + np.log(np.exp(want.scaled - top[:, None]).sum(axis=1)), atol=TOL, rtol=TOL)
    grads = flash_attention_backward(Q, K, V, out, lse, dO, mask=mask, scale=scale, query_tile=qt, key_tile=kt)
    assert isinstance(grads, AttentionGradients)
    for got, ref in zip(grads, attention_backward(Q, K, V, dO, mask=dense_mask, scale=scale)):
        np.testing.assert_allclose(got, ref, atol=TOL, rtol=TOL)


def test_workers_share_the_tiles_and_give_the_same_numbers():
    rng = np.random.default_rng(6)
    Q, K, V, dO = rng.standard_normal((50, 4)), rng.standard_normal((45, 4)), rng.standard_normal((45, 3)), rng.standard_normal((50, 3))
    for mask in (None, "causal"):
        out, lse = flash_attention(Q, K, V, mask=mask, return_lse=True, query_tile=8, key_tile=8)
        out2, lse2 = flash_attention(Q, K, V, mask=mask, return_lse=True, query_tile=8, key_tile=8, workers=3)
        assert np.array_equal(out, out2) and np.array_equal(lse, lse2)  # each query tile is computed the same way
        one = flash_attention_backward(Q, K, V, out, lse, dO, mask=mask, query_tile=8, key_tile=8)
        three = flash_attention_backward(Q, K, V, out, lse, dO, mask=mask, query_tile=8, key_tile=8, workers=3)
        assert np.array_equal(one.dK, three.dK) and np.array_equal(one.dV, three.dV)
        np.testing.assert_allclose(three.dQ, one.dQ, atol=1e-14)  # dQ's shares are summed in another order
    with pytest.raises(ValueError, match="mask.*query row 0"):  # an error in a worker thread reaches the caller
        flash_attention(Q, K, V, mask=lambda i, j: i > 0 + 0 * j, query_tile=8, workers=2)


def test_one_online_softmax_for_blocks_and_tiles():
    """A single query tile holding every query is chunked_attention's computation: the same numbers."""
    rng = np.random.default_rng(4)
    Q, K, V = rng.standard_normal((9, 3)), rng.standard_normal((11, 3)), rng.standard_normal((11, 2))
    np.testing.assert_allclose(flash_attention(Q, K, V, query_tile=9, key_tile=4), chunked_attention(Q, K, V, block_size=4), atol=1e-15)


def test_float32_tiles_agree_with_float64_to_float32_precision():
    rng = np.random.default_rng(5)
    Q, K, V = (rng.standard_normal((70, 8)) for _ in range(3))
    out32 = flash_attention(Q, K, V, mask="causal", query_tile=16, key_tile=32, dtype="float32")
    assert out32.dtype == np.float32
    np.testing.assert_allclose(out32, attention(Q, K, V, mask=causal_mask(70)).output, atol=1e-5)
    out, lse = flash_attention(Q, K, V, return_lse=True, dtype="float32")
    g = flash_attention_backward(Q, K, V, out, lse, V[:, :8], query_tile=16, key_tile=32, dtype="float32")
    for got, ref in zip(g, attention_backward(Q, K, V, V[:, :8])):
        assert got.dtype == np.float32
        np.testing.assert_allclose(got, ref, atol=1e-4)
    with pytest.raises(ValueError, match="V has entries beyond the range of float32"):
        flash_attention(Q, K, V * 1e300, dtype="float32")


def test_a_row_with_no_allowed_key_gives_attentions_error():
    X = running_example()
    mask = causal_mask(3)
    mask[1] = False
    with pytest.raises(ValueError) as dense:
        attention(X, X, X, mask=mask)
    for given_mask in (mask, np.where(mask, 0.0, -np.inf), lambda i, j: mask[i, j]):
        for qt, kt in ((1, 1), (2, 2), (3, 3)):
            with pytest.raises(ValueError) as tiled:
                flash_attention(X, X, X, mask=given_mask, query_tile=qt, key_tile=kt)
            assert str(tiled.value) == str(dense.value)


def test_an_overflowed_score_is_an_error_and_never_a_masked_key():
    # q . k0 = -inf after overflow; k1 is fine: taking k0 for masked would silently return V[1]
    Q, K, V = [[1e200, 1.0]], [[-1e200, 0.0], [0.0, 1.0]], [[1.0], [2.0]]
    for kt in (1, 2):
        with pytest.raises(ValueError, match=r"overflowed float64.*Q and K"):
            flash_attention(Q, K, V, scale=False, key_tile=kt)
        with pytest.raises(ValueError, match=r"overflowed float64.*Q and K"):
            flash_attention_backward(Q, K, V, [[2.0]], [1.0], [[1.0]], scale=False, key_tile=kt)


def test_huge_values_give_attentions_finite_output():
    Z = np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]])
    V = np.full((3, 2), 1.7e308) * np.array([1.0, -1.0])
    for kt in (1, 3):
        np.testing.assert_allclose(flash_attention(Z, Z, V, key_tile=kt), attention(Z, Z, V).output, rtol=1e-15)


@pytest.mark.parametrize(
    "call, words",
    [
        (lambda X: flash_attention(X, X, X, query_tile=0), ["query_tile must be a positive integer"]),
        (lambda X: flash_attention(X, X, X, key_tile=2.5), ["key_tile must be a positive integer"]),
        (lambda X: flash_attention(X, X, X, dtype="float16"), ["dtype must be one of"]),
        (lambda X: flash_attention(X, X, X, mask="anti-causal"), ["mask", "attnlib.CAUSAL", "'anti-causal'"]),
        (lambda X: flash_attention_backward(X, X, X, X, [1.0, 2.0], X), ["lse has shape (2,)", "3 queries"]),
        (lambda X: flash_attention_backward(X, X, X, X[:2], [1.0] * 3, X), ["output has shape (2, 2)"]),
        (lambda X: flash_attention_backward(X, X, X, X, [1.0] * 3, X[:, :1]), ["d_output has shape (3, 1)"]),
        (lambda X: flash_attention_backward(X, X, X, X, [np.nan] * 3, X), ["lse", "NaN"]),
    ],
)
def test_bad_arguments_are_named(call, words):
    with pytest.raises(ValueError) as info:
        call(running_example())
    for w in words:
        assert w in str(info.value)


def test_no_n_by_n_array_is_allocated():
    """At n = 1024 one n x n float64 array is 8 MiB: the tiled passes stay far below it, whatever the mask."""
    n, d = 1024, 16
    rng = np.random.default_rng(1)
    Q, K, V, dO = (rng.standard_normal((n, d)) for _ in range(4))
    one_score_matrix = score_matrix_bytes(n, dtype="float64")
    out, lse = flash_attention(Q, K, V, return_lse=True, query_tile=64, key_tile=128)
    tile_and_copies = 8 * (2 * 64 * 128 + 12 * n * d)  # two tiles of scores, linear copies of inputs and results
    for mask in (None, "causal", lambda i, j: j <= i):
        forward = peak_memory_bytes(flash_attention, Q, K, V, mask=mask, query_tile=64, key_tile=128)
        back = peak_memory_bytes(flash_attention_backward, Q, K, V, out, lse, dO, mask=mask, query_tile=64, key_tile=128)
        assert forward < tile_and_copies < one_score_matrix / 4, (mask, forward)
        assert back < tile_and_copies, (mask, back)
    assert peak_memory_bytes(lambda: attention(Q, K, V).output) > 3 * one_score_matrix  # the measurement would see one

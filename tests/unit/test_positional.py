"""Positional encodings: permutations, the offset rotation and its symbolic proof."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import attnlib as A
from attnlib.positional import (
    offset_rotation,
    pair_rotation,
    permutation_matrix,
    positional_frequencies,
    sinusoidal_encoding,
    symbolic_offset_rotation,
)


def test_first_pair_matches_the_post():
    pe = sinusoidal_encoding(3, 8)[:, :2]
    np.testing.assert_allclose(pe, [[0.0, 1.0], [np.sin(1), np.cos(1)], [np.sin(2), np.cos(2)]], atol=0)
    assert pe.round(4).tolist() == [[0.0, 1.0], [0.8415, 0.5403], [0.9093, -0.4161]]


def test_frequencies_follow_the_formula():
    np.testing.assert_allclose(positional_frequencies(8), [1.0, 10000 ** (-2 / 8), 10000 ** (-4 / 8), 10000 ** (-6 / 8)])


def test_every_position_gets_a_distinct_signature():
    pe = sinusoidal_encoding(200, 16)
    dist = np.linalg.norm(pe[:, None, :] - pe[None, :, :], axis=-1)
    assert dist[~np.eye(200, dtype=bool)].min() > 0.1


def test_permutation_matrix_reorders_rows():
    X = np.arange(12.0).reshape(4, 3)
    order = [3, 0, 2, 1]
    P = permutation_matrix(order)
    np.testing.assert_array_equal(P @ X, X[order])
    np.testing.assert_array_equal(P.T @ P, np.eye(4))


@settings(max_examples=30, deadline=None)
@given(seed=st.integers(0, 2**31 - 1), n=st.integers(2, 6))
def test_self_attention_is_permutation_equivariant(seed, n):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 3))
    W = [rng.normal(size=(3, 3)) for _ in range(3)]
    P = permutation_matrix(rng.permutation(n))
    plain, permuted = A.self_attention(X, *W), A.self_attention(P @ X, *W)
    np.testing.assert_allclose(permuted.output, P @ plain.output, atol=1e-12)
    np.testing.assert_allclose(permuted.weights, P @ plain.weights @ P.T, atol=1e-12)


def test_positions_break_the_symmetry():
    X = np.array([[1.0, 0.2], [0.1, 1.0], [0.7, 0.4]])
    P = permutation_matrix([2, 1, 0])
    W = np.eye(2)
    pe = sinusoidal_encoding(3, 2)
    a = A.self_attention(X + pe, W, W, W).output
    b = A.self_attention(P @ X + pe, W, W, W).output
    assert np.abs(b - P @ a).max() > 0.05


@pytest.mark.parametrize("d_model", [2, 4, 16, 64])
@pytest.mark.parametrize("k", [-7, -1, 0, 1, 3, 25])
def test_offset_rotation_moves_every_position_by_k(d_model, k):
    pe = sinusoidal_encoding(120, d_model)
    M = offset_rotation(k, d_model)
    t = np.arange(max(0, -k), 120 - max(0, k))
    np.testing.assert_allclose(pe[t] @ M.T, pe[t + k], atol=1e-10)


def test_offset_rotation_is_orthogonal_block_diagonal_and_composes():
    M3, M4, M7 = (offset_rotation(k, 8) for k in (3, 4, 7))
    np.testing.assert_allclose(M3.T @ M3, np.eye(8), atol=1e-12)
    np.testing.assert_allclose(M3 @ M4, M7, atol=1e-12)
    np.testing.assert_allclose(offset_rotation(-3, 8), M3.T, atol=1e-12)
    off_block = np.ones((8, 8), bool)
    for i in range(4):
        off_block[2 * i : 2 * i + 2, 2 * i : 2 * i + 2] = False
    assert not M3[off_block].any()


def test_pair_rotation_block_is_the_first_pair():
    np.testing.assert_allclose(offset_rotation(2, 6)[:2, :2], pair_rotation(2.0))


def test_symbolic_proof():
    proof = symbolic_offset_rotation()
    assert proof.holds
    assert proof.difference.is_zero_matrix
    assert not proof.rotation_depends_on_t
    assert proof.rotation_is_orthogonal
    # the proof is not vacuous: a wrong sign in R leaves a non-zero difference
    import sympy

    assert proof.pair.shape == (1, 2) and proof.shifted.shape == (1, 2)  # rows, as the book writes PE(t)
    wrong = proof.rotation.T
    assert not (proof.shifted - proof.pair * wrong.T).applyfunc(sympy.simplify).is_zero_matrix
    # substituting numbers gives back the numeric rotation
    R = np.array(proof.rotation.subs({proof.w: 0.1, proof.k: 5}).evalf(), dtype=float)
    np.testing.assert_allclose(R, pair_rotation(0.5))


@pytest.mark.parametrize(
    "call, words",
    [
        (lambda: permutation_matrix([0, 0, 1]), ["order", "exactly once", "[0, 0, 1]"]),
        (lambda: permutation_matrix([1, 2]), ["order", "0 .. 1"]),
        (lambda: permutation_matrix([]), ["order", "non-empty"]),
        (lambda: permutation_matrix([[0, 1]]), ["order", "(1, 2)"]),
        (lambda: permutation_matrix([0.0, 1.0]), ["order", "integers"]),
        (lambda: offset_rotation(1, 3), ["d_model must be even", "d_model=3"]),
        (lambda: offset_rotation(1.5, 4), ["k must be an integer", "1.5"]),
        (lambda: offset_rotation(True, 4), ["k must be an integer"]),
        (lambda: offset_rotation("2", 4), ["k must be an integer"]),
        (lambda: offset_rotation(1, 0), ["d_model must be a positive integer"]),
        (lambda: pair_rotation(np.inf), ["angle", "finite"]),
        (lambda: pair_rotation("x"), ["angle", "finite"]),
        (lambda: sinusoidal_encoding(0, 4), ["n_positions"]),
    ],
)
def test_bad_input_raises(call, words):
    with pytest.raises(ValueError) as info:
        call()
    for w in words:
        assert w in str(info.value)

"""attnlib.compatibility: cost counts, the bilinear view and its symbolic proof."""

import numpy as np
import pytest
import sympy as sp

import attnlib as A
from attnlib import compatibility as C

X = A.running_example()


def test_counts_for_the_running_example_and_a_realistic_size():
    assert C.tanh_evaluation_count(3, 3, 2) == 18
    assert C.matmul_multiply_count(3, 2, 3) == 18
    assert C.tanh_evaluation_count(1024, 1024, 64) == 1024 * 1024 * 64 == 67_108_864
    assert C.matmul_multiply_count(1024, 64, 1024) == 67_108_864
    assert C.tanh_evaluation_count(2, 5, 7) == 70
    assert C.matmul_multiply_count(2, 5, 7) == 70


def test_pairwise_costs_differ_in_kind_not_in_multiplications():
    add = C.pairwise_score_cost("additive", 1024, 512, 64)
    dot = C.pairwise_score_cost("dot", 1024, 512, 64)
    assert add.multiplications == dot.multiplications == 1024 * 512 * 64
    assert (add.tanh_evaluations, add.intermediate_floats, add.matrix_products) == (1024 * 512 * 64, 1024 * 512 * 64, 0)
    assert (dot.tanh_evaluations, dot.intermediate_floats, dot.matrix_products) == (0, 0, 1)
    # each pair: d sums inside the tanh and d - 1 in the dot with v_a, against d - 1 in q_i k_j^T
    assert add.additions == 1024 * 512 * (2 * 64 - 1) and dot.additions == 1024 * 512 * (64 - 1)
    assert add.additions - dot.additions == add.tanh_evaluations


def test_addition_counts_match_a_pair_by_pair_count():
    # count the additions of the two scores one pair at a time, the way the formulas read
    for n_q, n_k, d in [(1, 1, 1), (3, 3, 2), (2, 5, 7)]:
        per_pair_additive = d + (d - 1)  # W_a s_i + U_a h_j entry by entry, then v_a . tanh(...)
        per_pair_dot = d - 1  # the sum of the d products q_ir k_jr
        assert C.pairwise_score_cost("additive", n_q, n_k, d).additions == n_q * n_k * per_pair_additive
        assert C.pairwise_score_cost("dot", n_q, n_k, d).additions == n_q * n_k * per_pair_dot


def test_tanh_count_matches_the_hidden_tensor_additive_scores_builds():
    # additive_scores forms one d_a-vector per pair: n_q * n_k * d_a hidden values
    S, H = np.ones((4, 2)), np.ones((5, 3))
    W_a, U_a, v_a = C.random_additive_parameters(2, 3, 6, seed=1)
    hidden = np.tanh((S @ W_a.T)[:, None, :] + (H @ U_a.T)[None, :, :])
    assert hidden.size == C.tanh_evaluation_count(4, 5, 6)
    np.testing.assert_allclose(A.additive_scores(S, H, W_a, U_a, v_a), hidden @ v_a)


def test_additive_scores_with_seeded_parameters_match_a_pair_by_pair_loop():
    W_a, U_a, v_a = C.random_additive_parameters(2, 2, 3, seed=0)
    E = A.additive_scores(X, X, W_a, U_a, v_a)
    for i in range(3):
        for j in range(3):
            assert E[i, j] == pytest.approx(v_a @ np.tanh(W_a @ X[i] + U_a @ X[j]))


def test_random_additive_parameters_are_seeded_and_shaped():
    a = C.random_additive_parameters(2, 3, 4, seed=7)
    b = C.random_additive_parameters(2, 3, 4, seed=7)
    c = C.random_additive_parameters(2, 3, 4, seed=8)
    assert [m.shape for m in a] == [(4, 2), (4, 3), (4,)]
    assert all(np.array_equal(p, q) for p, q in zip(a, b))
    assert not np.array_equal(a[0], c[0])


def test_bilinear_scores_equal_q_k_transpose():
    rng = np.random.default_rng(3)
    for d_model, d_k, n in [(2, 2, 3), (5, 3, 7), (4, 1, 2)]:
        Xr = rng.standard_normal((n, d_model))
        W_Q, W_K = rng.standard_normal((d_model, d_k)), rng.standard_normal((d_model, d_k))
        Amat = C.bilinear_matrix(W_Q, W_K)
        assert Amat.shape == (d_model, d_model)
        assert np.linalg.matrix_rank(Amat) <= d_k
        np.testing.assert_allclose(C.bilinear_scores(Xr, Amat), A.scaled_scores(Xr @ W_Q, Xr @ W_K, scale=False), atol=1e-12)


def test_bilinear_scores_with_a_second_sequence():
    Y = np.array([[2.0, 1.0]])
    Amat = np.array([[1.0, 2.0], [0.0, 1.0]])
    np.testing.assert_allclose(C.bilinear_scores(X, Amat, Y), [[4.0], [1.0], [2.5]])


def test_bilinear_with_identity_is_the_running_example_gram_matrix():
    np.testing.assert_array_equal(C.bilinear_scores(X, np.eye(2)), X @ X.T)


@pytest.mark.parametrize("d_model, d_k", [(1, 1), (2, 2), (3, 2), (2, 5), (4, 3)])
def test_symbolic_regrouping_holds(d_model, d_k):
    proof = C.symbolic_bilinear_regrouping(d_model, d_k)
    assert proof.holds is True
    assert proof.difference == 0
    assert proof.W_Q.shape == proof.W_K.shape == (d_model, d_k)
    assert proof.x_i.shape == proof.x_j.shape == (1, d_model)
    # the expression is the full polynomial: one monomial per (a, b, r) index triple
    assert len(sp.Add.make_args(proof.bilinear)) == d_model * d_model * d_k
    assert sp.expand(proof.bilinear - proof.regrouped) == 0


def test_symbolic_proof_detects_a_wrong_grouping():
    # guard against a proof that is trivially 0: dropping the transpose on W_K changes the expression
    proof = C.symbolic_bilinear_regrouping(2, 2)
    wrong = sp.expand((proof.x_i * proof.W_Q * proof.W_K * proof.x_j.T)[0, 0])
    assert sp.expand(proof.bilinear - wrong) != 0


def test_symbolic_proof_agrees_with_numbers():
    proof = C.symbolic_bilinear_regrouping(2, 2)
    rng = np.random.default_rng(0)
    xi, xj, wq, wk = rng.standard_normal(2), rng.standard_normal(2), rng.standard_normal((2, 2)), rng.standard_normal((2, 2))
    subs = {}
    for mat, vals in ((proof.x_i, xi[None, :]), (proof.x_j, xj[None, :]), (proof.W_Q, wq), (proof.W_K, wk)):
        subs.update({mat[r, c]: vals[r, c] for r in range(mat.rows) for c in range(mat.cols)})
    assert float(proof.bilinear.subs(subs)) == pytest.approx(xi @ wq @ wk.T @ xj)


def test_weight_entries_are_not_named_like_queries_and_keys():
    """Entries of W_Q and W_K are w^Q_rr' and w^K_rr': q_21 would read as coordinate 1 of query 2 (chapter 2)."""
    proof = C.symbolic_bilinear_regrouping(2, 1)
    names = {s.name for s in proof.bilinear.free_symbols}
    assert names == {"w^Q_11", "w^Q_21", "w^K_11", "w^K_21", "x_i1", "x_i2", "x_j1", "x_j2"}
    assert "w^{Q}_{21}" in sp.latex(proof.bilinear)


def test_two_digit_sizes_keep_symbol_names_unambiguous():
    proof = C.symbolic_bilinear_regrouping(11, 1)
    names = {s.name for s in proof.W_Q}
    assert "w^Q_11,1" in names and "w^Q_1,1" in names
    assert len(names) == 11


def test_value_contributions_sum_to_the_attention_output():
    r = A.attention(X, X, X)
    terms = C.value_contributions(r.weights, r.V)
    assert terms.shape == (3, 3, 2)
    np.testing.assert_allclose(terms.sum(axis=1), r.output)
    np.testing.assert_allclose(terms[0, 2], r.weights[0, 2] * X[2])


@pytest.mark.parametrize(
    "call, words",
    [
        (lambda: C.tanh_evaluation_count(0, 3, 2), ["n_q must be a positive integer"]),
        (lambda: C.tanh_evaluation_count(3, 3, 2.5), ["d_a must be a positive integer"]),
        (lambda: C.matmul_multiply_count(3, -1, 3), ["n_inner must be a positive integer"]),
        (lambda: C.matmul_multiply_count(True, 1, 3), ["n_rows must be a positive integer"]),
        (lambda: C.pairwise_score_cost("cosine", 3, 3, 2), ["kind", "'cosine'"]),
        (lambda: C.pairwise_score_cost("dot", 3, 0, 2), ["n_k must be a positive integer"]),
        (lambda: C.random_additive_parameters(2, 2, 0), ["d_a must be a positive integer"]),
        (lambda: C.random_additive_parameters(2, 2, 2, seed=-1), ["seed", "non-negative"]),
        (lambda: C.random_additive_parameters(2, 2, 2, seed=1.5), ["seed"]),
        (lambda: C.bilinear_matrix(np.ones((2, 2)), np.ones((2, 3))), ["W_Q and W_K", "(2, 2)", "(2, 3)"]),
        (lambda: C.bilinear_matrix([1.0, 2.0], np.ones((2, 1))), ["W_Q must have 2 dimension"]),
        (lambda: C.bilinear_scores(X, np.eye(3)), ["A must be", "(2, 2)", "(3, 3)"]),
        (lambda: C.bilinear_scores(X, np.eye(2), np.ones((2, 3))), ["A must be", "(2, 3)"]),
        (lambda: C.bilinear_scores([[1.0, np.nan]], np.eye(2)), ["X", "NaN"]),
        (lambda: C.symbolic_bilinear_regrouping(0, 2), ["d_model must be a positive integer"]),
        (lambda: C.symbolic_bilinear_regrouping(2, 13), ["d_k=13", "too large"]),
        (lambda: C.value_contributions(np.ones((3, 3)), np.ones((2, 2))), ["weights has 3 columns", "V has 2 rows"]),
    ],
)
def test_bad_input_raises_a_named_value_error(call, words):
    with pytest.raises(ValueError) as info:
        call()
    for w in words:
        assert w in str(info.value)

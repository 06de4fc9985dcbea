"""The scaled rows' response to the raw scores S (not to the softmax input S / sqrt(d_k))."""

import numpy as np

import attnlib
from attnlib.scaling import sharpness_vs_dk


def _mean_jacobian_norm_wrt_raw_scores(Q, K, scale, eps=1e-6):
    """Finite-difference d softmax(row) / d S, averaged over the rows, Frobenius norm."""
    S = Q @ K.T
    d = np.sqrt(Q.shape[1]) if scale else 1.0
    norms = []
    for s in S:
        J = np.empty((s.size, s.size))
        for j in range(s.size):
            e = np.zeros_like(s)
            e[j] = eps
            J[:, j] = (attnlib.softmax((s + e) / d) - attnlib.softmax((s - e) / d)) / (2 * eps)
        norms.append(np.linalg.norm(J))
    return float(np.mean(norms))


def test_the_property_is_the_derivative_with_respect_to_the_raw_scores():
    t = sharpness_vs_dk([4, 64], n_queries=20, n_keys=5, seed=3)
    for i, dk in enumerate(t.d_k):
        rng = np.random.default_rng([3, int(dk)])  # the stream sharpness_vs_dk draws from
        Q, K = rng.standard_normal((20, dk)), rng.standard_normal((5, dk))
        assert np.isclose(_mean_jacobian_norm_wrt_raw_scores(Q, K, scale=True), t.jacobian_norm_scaled_wrt_scores[i], rtol=1e-5)
        assert np.isclose(_mean_jacobian_norm_wrt_raw_scores(Q, K, scale=False), t.jacobian_norm_unscaled[i], rtol=1e-5)


def test_with_respect_to_the_scores_the_scaled_rows_respond_less():
    t = sharpness_vs_dk([64, 512], seed=0)
    assert (t.jacobian_norm_scaled_wrt_scores < t.jacobian_norm_unscaled).all()
    assert np.allclose(t.jacobian_norm_scaled_wrt_scores * np.sqrt(t.d_k), t.jacobian_norm_scaled)

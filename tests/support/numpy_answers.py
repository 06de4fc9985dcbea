"""Right answers to the implement exercises written with numpy alone, as the grader's runner can run them.

The self-checks say "not yet" to a function built on attnlib (beyond the ``attnlib.softmax`` an exercise
gives), since the grader, which runs the answer cells with numpy alone, would give it 0. So the tests hand
the self-checks these functions as the right answers, never attnlib's own.
"""

from __future__ import annotations

import numpy as np


def softmax(x, axis=-1):
    """Softmax along ``axis``, the maximum subtracted first (``-inf`` is weight 0)."""
    x = np.asarray(x, dtype=float)
    e = np.exp(x - np.max(x, axis=axis, keepdims=True))
    return e / np.sum(e, axis=axis, keepdims=True)


def attention(Q, K, V):
    return softmax(Q @ K.T / np.sqrt(K.shape[1])) @ V


def scaled_scores(Q, K):
    return Q @ K.T / np.sqrt(K.shape[1])


def attention_head(X, W_Q, W_K, W_V):
    return attention(X @ W_Q, X @ W_K, X @ W_V)


def split_heads(M, h):
    return np.stack(np.split(np.asarray(M), h, axis=1))


def causal_mask(n):
    return np.tril(np.ones((n, n), dtype=bool))


def masked_weights(S, allowed):
    return softmax(np.where(allowed, S, -np.inf))


def sinusoidal_encoding(n, d):
    angles = np.arange(n)[:, None] / 10000 ** (np.arange(0, d, 2) / d)
    pe = np.empty((n, d))
    pe[:, 0::2], pe[:, 1::2] = np.sin(angles), np.cos(angles[:, : d // 2])
    return pe


def softmax_backward(A, dA):
    return A * (dA - np.sum(dA * A, axis=-1, keepdims=True))


def two_block_normaliser(s1, s2):
    m1 = np.max(s1)
    l1 = np.sum(np.exp(s1 - m1)) if np.isfinite(m1) else 0.0
    m = max(m1, np.max(s2))
    return m, (l1 * np.exp(m1 - m) if np.isfinite(m1) else 0.0) + np.sum(np.exp(s2 - m))


def layer_norm(X, gamma, beta, eps):
    mean = X.mean(axis=-1, keepdims=True)
    return gamma * (X - mean) / np.sqrt(X.var(axis=-1, keepdims=True) + eps) + beta


def previous_token_score(W):
    return float(np.mean(np.diag(np.asarray(W, dtype=float), -1)))


#: check name -> a right function for it
RIGHT = {
    "check_softmax": softmax,
    "check_attention": attention,
    "check_scaled_scores": scaled_scores,
    "check_attention_head": attention_head,
    "check_split_heads": split_heads,
    "check_causal_mask": causal_mask,
    "check_masked_weights": masked_weights,
    "check_sinusoidal_encoding": sinusoidal_encoding,
    "check_softmax_backward": softmax_backward,
    "check_two_block_normaliser": two_block_normaliser,
    "check_layer_norm": layer_norm,
    "check_previous_token_score": previous_token_score,
}

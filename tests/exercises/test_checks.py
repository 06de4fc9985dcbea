"""The exercise self-checks accept right answers, reject wrong ones with a useful hint, and never leak the answer."""

from __future__ import annotations

import numpy as np
import pytest
from support.notebooks import chapter_notebooks

import attnlib
from attnlib import checks
from attnlib.core import self_attention


def good_softmax(x):
    x = np.asarray(x, dtype=float)
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def naive_softmax(x):
    e = np.exp(np.asarray(x, dtype=float))
    return e / e.sum(axis=-1, keepdims=True)


def column_softmax(x):
    x = np.atleast_1d(np.asarray(x, dtype=float))
    e = np.exp(x - x.max(axis=0, keepdims=True))
    return e / e.sum(axis=0, keepdims=True)


def good_head(X, W_Q, W_K, W_V):
    Q, K, V = X @ W_Q, X @ W_K, X @ W_V
    return good_softmax(Q @ K.T / np.sqrt(K.shape[1])) @ V


def good_two_block(s1, s2):
    m1 = s1.max()
    m = max(m1, s2.max())
    l1 = np.exp(s1 - m1).sum() if m1 > -np.inf else 0.0
    return m, l1 * np.exp(m1 - m) + np.exp(s2 - m).sum()


def _l1(s1):
    """Block 1's own normaliser, relative to its own maximum (0 for a block that is masked entirely)."""
    return np.exp(s1 - s1.max()).sum() if s1.max() > -np.inf else 0.0


def good_encoding(n, d):
    """The sinusoidal table with numpy alone (the grader's runner has no attnlib)."""
    angles = np.arange(n)[:, None] / 10000 ** (np.arange(0, d, 2) / d)
    pe = np.empty((n, d))
    pe[:, 0::2], pe[:, 1::2] = np.sin(angles), np.cos(angles[:, : d // 2])
    return pe


def good_layer_norm(X, gamma, beta, eps):
    centred = X - X.mean(axis=-1, keepdims=True)
    return gamma * centred / np.sqrt((centred**2).mean(axis=-1, keepdims=True) + eps) + beta


RIGHT = {
    "check_pairwise_dots": lambda X: X @ X.T,
    "check_bilinear_scores": lambda X, WQ, WK: (X @ WQ) @ (X @ WK).T,
    "check_softmax": good_softmax,
    "check_attention": lambda Q, K, V: good_softmax(Q @ K.T / np.sqrt(Q.shape[1])) @ V,
    "check_scaled_scores": lambda Q, K: Q @ K.T / np.sqrt(K.shape[1]),
    "check_attention_head": good_head,
    "check_split_heads": lambda M, h: np.stack(np.split(M, h, axis=1)),
    "check_causal_mask": lambda n: np.tril(np.ones((n, n))).astype(bool),
    "check_masked_weights": lambda S, allowed: good_softmax(np.where(allowed, S, -np.inf)),
    "check_sinusoidal_encoding": lambda n, d: good_encoding(n, d).tolist(),  # a list is accepted too
    "check_softmax_backward": lambda A, dA: A * (dA - np.sum(dA * A, axis=-1, keepdims=True)),
    "check_two_block_normaliser": good_two_block,
    "check_layer_norm": good_layer_norm,  # issue 26
    "check_previous_token_score": lambda W: float(np.mean(np.diag(np.asarray(W, dtype=float), k=-1))),
}

# (check, wrong implementation, a phrase its message must contain)
WRONG = [
    ("check_pairwise_dots", lambda X: X.T @ X, "shape"),
    ("check_pairwise_dots", lambda X: X * X, "entry by entry"),
    ("check_bilinear_scores", lambda X, WQ, WK: (X @ WK) @ (X @ WQ).T, "transpose"),
    ("check_softmax", naive_softmax, "Subtract the largest entry"),
    ("check_softmax", column_softmax, "axis=-1"),
    ("check_softmax", lambda x: 0.5 * (1 + np.tanh(np.asarray(x) / 2)), "sigmoid"),
    ("check_attention", lambda Q, K, V: good_softmax(Q @ K.T) @ V, "without the 1/sqrt(d_k)"),
    ("check_attention", lambda Q, K, V: good_softmax(Q @ K.T / K.shape[1]) @ V, "divided by d_k"),
    ("check_attention", lambda Q, K, V: naive_softmax(Q @ K.T / np.sqrt(K.shape[1])) @ V, "NaN"),
    ("check_scaled_scores", lambda Q, K: Q @ K.T, "raw scores"),
    ("check_scaled_scores", lambda Q, K: Q @ K.T / np.sqrt(K.shape[0]), "number of keys"),
    ("check_scaled_scores", lambda Q, K: K @ Q.T / np.sqrt(Q.shape[1]), "transpose"),
    ("check_attention_head", lambda X, a, b, c: good_softmax((X @ a) @ (X @ b).T / np.sqrt(a.shape[1])), "weights"),
    ("check_attention_head", lambda X, a, b, c: good_head(X, np.eye(X.shape[1]), np.eye(X.shape[1]), np.eye(X.shape[1])), "project"),
    ("check_attention_head", lambda X, a, b, c: good_softmax((X @ a) @ (X @ b).T) @ (X @ c), "without the 1/sqrt(d_k)"),
    ("check_split_heads", lambda M, h: np.stack([M[:, r::h] for r in range(h)]), "CONSECUTIVE"),
    ("check_split_heads", lambda M, h: M.reshape(h, M.shape[0], -1), "reshape"),
    ("check_causal_mask", lambda n: np.triu(np.ones((n, n), dtype=bool)), "transpose"),
    ("check_causal_mask", lambda n: np.tril(np.ones((n, n))), "boolean"),
    ("check_causal_mask", lambda n: np.tril(np.ones((n, n), dtype=bool), -1), "itself"),
    ("check_causal_mask", lambda n: np.where(np.tril(np.ones((n, n))) > 0, 0.0, -np.inf), "boolean"),
    ("check_masked_weights", lambda S, allowed: good_softmax(S) * allowed, "after the softmax"),
    ("check_masked_weights", lambda S, allowed: good_softmax(S), "nothing is masked"),
    ("check_sinusoidal_encoding", lambda n, d: good_encoding(n + 1, d)[1:], "t = 0"),
    ("check_sinusoidal_encoding", lambda n, d: good_encoding(n, d)[:, ::-1], "wrong"),
    ("check_softmax_backward", lambda A, dA: A * dA, "second term"),
    ("check_softmax_backward", lambda A, dA: A * (dA - np.sum(dA * A, axis=0, keepdims=True)), "ROW"),
    ("check_two_block_normaliser", lambda a, b: (max(a.max(), b.max()), _l1(a) + np.exp(b - max(a.max(), b.max())).sum()), "rescaling"),
    ("check_two_block_normaliser", lambda a, b: (b.max(), _l1(a) + np.exp(b - b.max()).sum()), "BOTH blocks"),
    ("check_two_block_normaliser", lambda a, b: (max(a.max(), b.max()), np.exp(np.concatenate([a, b])).sum()), "not of exp(s)"),
    # issue 26: chapter 16's layer norm
    (
        "check_layer_norm",
        lambda X, g, b, eps: g * (X - X.mean(-1, keepdims=True)) / np.sqrt(X.var(-1, ddof=1, keepdims=True) + eps) + b,
        "not d_model - 1",
    ),
    ("check_layer_norm", lambda X, g, b, eps: g * (X - X.mean(0)) / np.sqrt(X.var(0) + eps) + b, "each ROW"),
    (
        "check_layer_norm",
        lambda X, g, b, eps: (X - X.mean(-1, keepdims=True)) / np.sqrt(X.var(-1, keepdims=True) + eps),
        "left out the gain",
    ),
    ("check_previous_token_score", lambda W: float(np.mean(np.diag(np.asarray(W)))), "main diagonal"),
    ("check_previous_token_score", lambda W: float(np.diag(np.asarray(W), k=-1).sum()), "you summed"),
]


@pytest.mark.parametrize("name", sorted(RIGHT))
def test_right_implementation_passes(name, capsys):
    result = getattr(checks, name)(RIGHT[name])
    out = capsys.readouterr().out
    assert result.passed and bool(result), result.report()
    assert result.n_cases >= 3 and result.n_passed == result.n_cases
    assert out.startswith("PASS") and f"all {result.n_cases} checks passed" in out


def test_every_check_is_covered():
    # typed values, not functions: check_by_hand in test_checks_feedback.py, check_memory_prediction in test_one_comparator.py
    public = {n for n in dir(checks) if n.startswith("check_") and n not in ("check_by_hand", "check_memory_prediction")}
    assert public == set(RIGHT)
    assert public == {w[0] for w in WRONG}


@pytest.mark.parametrize(("name", "fn", "phrase"), WRONG, ids=[f"{w[0]}-{i}" for i, w in enumerate(WRONG)])
def test_wrong_implementation_fails_with_hint(name, fn, phrase, capsys):
    result = getattr(checks, name)(fn)
    out = capsys.readouterr().out
    assert not result and not result.passed
    assert result.n_passed < result.n_cases
    assert out.startswith("FAIL")
    assert phrase in out, out


@pytest.mark.parametrize("name", sorted(RIGHT))
def test_a_raising_function_gets_a_plain_message(name, capsys):
    def broken(*args):
        raise NotImplementedError()

    def typo(*args):
        return undefined_name  # noqa: F821

    assert not getattr(checks, name)(broken)
    assert "NotImplementedError" in capsys.readouterr().out
    result = getattr(checks, name)(typo)
    out = capsys.readouterr().out
    assert not result
    assert "NameError" in out and "undefined_name" in out
    assert "Traceback" not in out


@pytest.mark.parametrize("name", sorted(RIGHT))
def test_none_nan_and_wrong_shape_get_messages(name, capsys):
    assert not getattr(checks, name)(lambda *a: None)
    assert "forget the `return`" in capsys.readouterr().out
    assert not getattr(checks, name)(lambda *a: np.zeros((7, 7, 7)))
    assert "has shape (7, 7, 7) but should have shape" in capsys.readouterr().out
    assert not getattr(checks, name)(lambda *a: "hello")


def test_nan_is_reported_as_nan(capsys):
    assert not checks.check_softmax(lambda x: np.full(np.shape(x), np.nan))
    assert "contains NaN" in capsys.readouterr().out


def test_not_a_function(capsys):
    result = checks.check_softmax(good_softmax([1.0, 2.0]))
    assert not result and result.n_passed == 0
    assert "expected a function" in capsys.readouterr().out


def test_messages_never_contain_the_expected_numbers(capsys):
    """A failing check describes the mistake, not the answer."""
    X = attnlib.running_example()
    weights = self_attention(X, np.eye(2), np.eye(2), np.eye(2)).weights
    checks.check_softmax(lambda x: np.zeros(np.shape(x)))
    checks.check_attention(lambda Q, K, V: np.zeros((Q.shape[0], V.shape[1])))
    out = capsys.readouterr().out
    for value in (weights[0, 0], weights[0, 1], 0.6155, 0.3845):
        assert f"{value:.4f}" not in out and f"{value:.3f}" not in out


def test_quiet_mode_prints_nothing(capsys):
    result = checks.check_causal_mask(RIGHT["check_causal_mask"], verbose=False)
    assert result and capsys.readouterr().out == ""
    assert "PASS causal_mask" in result.report()


def test_every_check_is_used_by_a_chapter_exercise():
    import json

    text = ""
    for path in chapter_notebooks():
        for cell in json.loads(path.read_text())["cells"]:
            if "exercise" in cell.get("metadata", {}).get("tags", []):
                text += "".join(cell["source"])
    for name in RIGHT:
        assert f"checks.{name}(" in text, f"no exercise calls checks.{name}"

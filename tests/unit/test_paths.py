"""Path lengths: an RNN needs |i - j| recurrent steps, one self-attention layer needs 1."""

import numpy as np
import pytest

import attnlib as A
from attnlib.paths import attention_path_length, path_length_matrix, rnn_path_length, rnn_route


def test_the_posts_three_token_route():
    route = rnn_route(1, 3)
    assert route == ["x1", "h1", "h2", "h3"]
    transitions = sum(a.startswith("h") and b.startswith("h") for a, b in zip(route, route[1:]))
    assert transitions == 2 == rnn_path_length(1, 3)
    assert attention_path_length(3, 1) == 1


@pytest.mark.parametrize("i, j", [(1, 1), (1, 2), (1, 16), (16, 1), (5, 9), (100, 3)])
def test_rnn_grows_with_distance_attention_does_not(i, j):
    assert rnn_path_length(i, j) == abs(i - j)
    assert attention_path_length(i, j) == (0 if i == j else 1)
    assert attention_path_length(i, j) <= rnn_path_length(i, j)


def test_route_length_matches_path_length():
    for j in range(1, 10):
        assert len(rnn_route(1, j)) - 2 == rnn_path_length(1, j)


def test_left_to_right_rnn_allows_forward_only():
    assert rnn_path_length(2, 5, bidirectional=False) == 3
    with pytest.raises(ValueError, match="backward"):
        rnn_path_length(5, 2, bidirectional=False)


def test_matrices():
    n = 16
    rnn = path_length_matrix(n, "rnn")
    att = path_length_matrix(n, "attention")
    assert rnn.shape == att.shape == (n, n)
    assert rnn.max() == n - 1 and att.max() == 1
    np.testing.assert_array_equal(rnn, rnn.T)
    np.testing.assert_array_equal(np.diag(rnn), 0)
    np.testing.assert_array_equal(att, 1 - np.eye(n, dtype=int))
    np.testing.assert_array_equal(rnn[0], np.arange(n))


def test_attention_reaches_every_pair_in_the_score_matrix():
    """The one-step claim: every off-diagonal score S_ij is computed directly, e.g. S_31 = 0.5 in the running example."""
    X = A.running_example()
    S = A.scaled_scores(X, X, scale=False)
    assert S.shape == path_length_matrix(3, "attention").shape
    assert S[2, 0] == 0.5
    assert round(A.scaled_scores(X, X)[2, 0], 4) == 0.3536


@pytest.mark.parametrize(
    "call, words",
    [
        (lambda: rnn_path_length(0, 3), ["source", "positive"]),
        (lambda: attention_path_length(1, -2), ["target", "positive"]),
        (lambda: rnn_path_length(1, 1.5), ["target", "positive"]),
        (lambda: rnn_path_length(1, 17, n=16), ["target=17", "n=16"]),
        (lambda: attention_path_length(20, 1, n=16), ["source=20", "n=16"]),
        (lambda: rnn_route(3, 1), ["cannot", "source=3"]),
        (lambda: path_length_matrix(4, "cnn"), ["kind", "'cnn'"]),
        (lambda: path_length_matrix(0, "rnn"), ["n", "positive"]),
    ],
)
def test_bad_input_raises_value_error(call, words):
    with pytest.raises(ValueError) as info:
        call()
    for w in words:
        assert w in str(info.value)

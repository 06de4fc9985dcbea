"""Every bad input raises ValueError with a message that names the problem."""

import numpy as np
import pytest

import attnlib as A

X = A.running_example()
I2 = np.eye(2)


@pytest.mark.parametrize(
    "call, words",
    [
        (lambda: A.scaled_scores(np.ones((3, 2)), np.ones((3, 3))), ["Q has d_k=2 but K has d_k=3", "(3, 2)", "(3, 3)"]),
        (lambda: A.attention(X, X, np.ones((4, 2))), ["K has 3 rows", "V has 4"]),
        (lambda: A.attention([1, 0], X, X), ["Q must have 2 dimension", "(2,)"]),
        (lambda: A.attention(X, X, [[1, np.nan], [0, 1], [1, 1]]), ["V", "NaN", "(0, 1)"]),
        (lambda: A.attention(X, [[1, np.inf], [0, 1], [1, 1]], X), ["K", "inf"]),
        (lambda: A.scaled_scores(X, X, scale=0), ["scale", "positive"]),
        (lambda: A.scaled_scores(X, X, scale=-2.0), ["scale", "positive"]),
        (lambda: A.scaled_scores(X, X, scale="big"), ["scale"]),
        (lambda: A.multi_head_attention(np.ones((2, 4)), np.ones((2, 4)), *[np.eye(4)] * 4, n_heads=3), ["n_heads=3", "d_model=4"]),
        (lambda: A.attention_parameter_count(10, 3), ["n_heads=3", "d_model=10"]),
        (lambda: A.attention(X, X, X, mask=np.ones((2, 3), bool)), ["mask", "(2, 3)", "(3, 3)"]),
        (lambda: A.attention(X, X, X, mask=np.array([[1, 0, 0], [1, 1, 0], [0, 0, 0]], bool)), ["query row 2", "no key"]),
        (lambda: A.attention(X, X, X, mask=np.ones((3, 3))), ["mask", "boolean", "additive"]),
        (lambda: A.softmax([-np.inf, -np.inf]), ["entirely -inf"]),
        (lambda: A.softmax([[0.0, 1.0], [-np.inf, -np.inf]]), ["entirely -inf", "(1,)"]),
        (lambda: A.softmax([1.0, np.nan]), ["NaN"]),
        (lambda: A.softmax([1.0, np.inf]), ["inf"]),
        (lambda: A.softmax([1.0, 2.0], axis=3), ["axis=3"]),
        (lambda: A.causal_mask(0), ["n must be a positive integer"]),
        (lambda: A.causal_mask(2.5), ["n must be a positive integer"]),
        (lambda: A.causal_mask(True), ["n must be a positive integer"]),
        (lambda: A.additive_mask(np.ones((2, 2))), ["boolean"]),
        (lambda: A.additive_mask(np.ones(2, bool)), ["2 dimensions"]),
        (lambda: A.self_attention(X, np.eye(3), I2, I2), ["X has d_model=2", "W_Q has 3 rows"]),
        (lambda: A.cross_attention(X, np.ones((2, 3)), I2, I2, I2), ["X_memory has d_model=3", "W_K"]),
        (lambda: A.multi_head_attention(X, np.ones((3, 3)), *[I2] * 4, n_heads=1), ["X_memory has d_model=3"]),
        (lambda: A.multi_head_attention(X, X, np.eye(3), I2, I2, I2, n_heads=1), ["W_Q must be (d_model, d_model)"]),
        (lambda: A.additive_scores(X, X, np.ones((2, 3)), I2, [1, 1]), ["W_a has 3 columns", "d_s=2"]),
        (lambda: A.additive_scores(X, X, I2, np.ones((2, 3)), [1, 1]), ["U_a has 3 columns", "d_h=2"]),
        (lambda: A.additive_scores(X, X, I2, I2, [1, 1, 1]), ["share d_a"]),
        (lambda: A.sinusoidal_encoding(0, 4), ["n_positions"]),
        (lambda: A.sinusoidal_encoding(3, -1), ["d_model"]),
        (lambda: A.attention(np.ones((0, 2)), X, X), ["Q is empty"]),
        (lambda: A.attention([["a", "b"]], X, X), ["Q must be numeric"]),
    ],
)
def test_bad_input_raises_clear_valueerror(call, words):
    with pytest.raises(ValueError) as info:
        call()
    for w in words:
        assert w in str(info.value), f"{w!r} not in {info.value!r}"

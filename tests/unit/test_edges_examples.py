"""Every example of issue 11 ("attnlib keeps its promises at the edges"), one test each."""

from __future__ import annotations

import re
import subprocess
import warnings

import matplotlib
import numpy as np
import pytest
import sympy as sp
from support.errors import raises
from support.paths import ROOT

import attnlib
from attnlib import _memory, compatibility, cost, exact, paths, plots
from attnlib.core import (
    attention,
    causal_mask,
    multi_head_attention,
    project,
    running_example,
    scaled_scores,
    self_attention,
    softmax,
)

matplotlib.use("Agg")

X = running_example()
I2 = np.eye(2)


# --- security ----------------------------------------------------------------------------------


def test_to_float_never_evaluates_a_string(tmp_path):
    target = tmp_path / "p"
    raises(lambda: exact.to_float(f"__import__('pathlib').Path({str(target)!r}).touch() or 1"), "M", "strings are never parsed")
    assert not target.exists()
    raises(lambda: exact.to_float("1"), "strings are never parsed")
    raises(lambda: exact.exact_number("x", "1"), "x", "number")
    raises(lambda: exact.exact_attention([["__import__('os')", 1]]), "X[0, 0]")


def test_no_sympify_eval_exec_or_parse_expr_in_attnlib():
    found = subprocess.run(
        ["grep", "-rnE", r"sympify|eval\(|exec\(|parse_expr", str(ROOT / "attnlib")], capture_output=True, text=True
    ).stdout
    # ``evalf(`` is sympy's numeric evaluation of an expression, not code evaluation
    lines = [line for line in found.splitlines() if re.search(r"sympify|(?<!\.)\beval\(|exec\(|parse_expr", line.split(":", 2)[-1])]
    code = [line for line in lines if not line.split(":", 2)[-1].lstrip().startswith(("#", '"', "'", "``", "*", ">>>"))]
    assert not [c for c in code if "widgets.py" not in c], code


# --- 1. silent overflow --------------------------------------------------------------------------


@pytest.mark.parametrize(
    "call, inputs",
    [
        (lambda: scaled_scores([[1e200, 1e200]], [[1e200, -1e200]]), "Q and K"),
        (lambda: project([[1e200, 1e200]], [[1e200], [1e200]]), "X and W"),
        (lambda: compatibility.bilinear_scores([[1e200]], [[1e200]]), "X and A"),
        (lambda: compatibility.bilinear_matrix([[1e200]], [[1e200]]), "W_Q and W_K"),
        (lambda: attnlib.additive_scores([[1e200]], [[1.0]], [[1e200]], [[1.0]], [1.0]), "S and W_a"),
        (lambda: compatibility.value_contributions([[1e200]], [[1e200]]), "weights and V"),
        (lambda: multi_head_attention(X, X, I2, I2, I2 * 1e300, I2 * 1e300, 1), "W_O"),
        (lambda: attention([[1e200]], [[1e200]], [[1.0]]), "Q and K"),
        (lambda: self_attention([[1e150, 1e150]], I2 * 1e150, I2, I2), "X, W_Q, W_K"),
    ],
)
def test_overflow_raises_and_names_the_inputs(call, inputs):
    text = raises(call, "overflowed", inputs)
    assert "may attend to no key" not in text and "scores (shape" not in text


def test_to_float_of_nan_is_refused():
    raises(lambda: exact.to_float(sp.nan), "NaN")
    raises(lambda: exact.to_float(sp.Matrix([[1, sp.nan]])), "M[0, 1]")
    raises(lambda: exact.to_float(sp.Integer(10) ** 400), "overflowed")
    assert exact.to_float(sp.Matrix([[-sp.oo]])).tolist() == [[-np.inf]]


def test_softmax_of_the_extremes_is_right_and_silent():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert softmax([1e308, -1e308]).tolist() == [1.0, 0.0]
        assert softmax([1e-320, 0.0]).tolist() == [0.5, 0.5]


# --- 2. errors that name the caller's argument ---------------------------------------------------


def test_errors_name_the_callers_argument():
    raises(lambda: self_attention(X, np.ones((2, 3)), np.ones((2, 2)), I2), "W_Q has 3 columns", "W_K has 2")
    raises(lambda: multi_head_attention(X, np.ones((3, 3)), I2, I2, I2, I2, 1), "X_query", "(3, 2)", "X_memory", "(3, 3)")
    raises(lambda: attention(X, X, X, mask=[[True], [True, False], [True]]), "mask", "ragged")
    raises(lambda: exact.exact_softmax([1, 2], [[True, False]]), "allowed", "1-d")
    raises(lambda: plots.format_value(1.0, decimals=-1), "decimals", "non-negative integer", "-1")
    raises(lambda: plots.token_vectors(X, extra={"o": [1, 2, 3]}), "extra['o']", "2 numbers", "(3,)")
    raises(lambda: paths.path_length_matrix(3, ["rnn"]), "kind", "'rnn', 'rnn_left_to_right' or 'attention'", "['rnn']")


# --- 3. inputs silently changed in meaning ---------------------------------------------------------


def test_complex_masked_strings_and_bools_are_refused():
    raises(lambda: softmax(np.array([1 + 5j, 2])), "x", "complex")
    raises(lambda: softmax(np.ma.array([1.0, 2.0], mask=[True, False])), "x", "masked array")
    raises(lambda: attention(X, X, X, scale="2"), "scale", "'2'")
    raises(lambda: attention(np.array([["1", "0"]]), X, X), "Q", "text")
    raises(lambda: attention(np.array([[True, False]]), X, X), "Q", "booleans")
    raises(lambda: attention(X, X, X, scale=1 + 0j), "scale")


@pytest.mark.parametrize("seed", ["3", {}, True, [1, 2], -1, 2.5, None])
def test_seeds_refuse_what_is_not_an_integer(seed):
    for call in (
        lambda: compatibility.random_additive_parameters(2, 2, 2, seed=seed),
        lambda: attnlib.scaling.dot_product_variance_table([2], n_samples=10, seed=seed),
        lambda: attnlib.scaling.sharpness_vs_dk([2], n_queries=2, n_keys=2, seed=seed),
    ):
        raises(call, "seed")


@pytest.mark.parametrize("seed", [2, 2.0, np.int64(2), np.uint8(2)])
def test_seeds_accept_integers_and_integral_floats(seed):
    want = compatibility.random_additive_parameters(2, 2, 2, seed=2)[0]
    assert np.array_equal(compatibility.random_additive_parameters(2, 2, 2, seed=seed)[0], want)
    table = attnlib.scaling.dot_product_variance_table
    assert table([2], n_samples=10, seed=seed).rows() == table([2], n_samples=10, seed=2).rows()


# --- 4. integers and sizes -------------------------------------------------------------------------


def test_integers_of_any_size_are_integers():
    raises(lambda: causal_mask(10**400), "causal_mask", "would need", "memory")
    assert cost.score_matrix_entries(2**53 + 1) == (2**53 + 1) ** 2
    assert cost.score_matrix_entries(np.uint64(3)) == 9
    assert attnlib.attention_parameter_count(np.uint64(8), 2) == 256
    raises(lambda: causal_mask(True), "n", "bool")
    raises(lambda: causal_mask("3"), "n", "str")
    raises(lambda: causal_mask(2.5), "n", "whole number")


def test_sizes_beyond_memory_say_how_much_they_need():
    text = raises(lambda: causal_mask(10**7), "causal_mask(n=10000000)", "would need 90.9 TiB")
    assert "MemoryError" not in text
    raises(lambda: attnlib.sinusoidal_encoding(10**6, 10**6), "sinusoidal_encoding", "would need")
    raises(lambda: paths.path_length_matrix(10**7, "rnn"), "would need")


def test_memory_limit_is_this_machines_memory():
    assert 2**28 <= _memory.MAX_ARRAY_BYTES


def test_format_bytes_of_huge_and_numpy_numbers():
    assert cost.format_bytes(10**400) == "8.3e+375 YiB"
    assert cost.format_bytes(np.float32(1536)) == "1.5 KiB"
    assert cost.format_bytes(np.uint64(2**64 - 1)) == "16.0 EiB"
    raises(lambda: cost.format_bytes(True), "num_bytes")
    raises(lambda: cost.format_bytes(float("nan")), "num_bytes")


# --- 5. display helpers ---------------------------------------------------------------------------


def test_nan_and_inf_never_reach_a_reader_as_numbers():
    for bad in (float("nan"), np.inf, np.float32("nan"), 1j, "0.5", True):
        assert not plots.is_displayable(bad)
        raises(lambda bad=bad: plots.format_value(bad), "value")
    raises(lambda: plots.format_row([0.5, np.nan]), "values", "NaN")
    raises(lambda: plots.heatmap([[0.5, np.nan]]), "matrix", "NaN")
    assert plots.format_value(-np.inf) == plots.MASKED_TEXT
    assert plots.format_value(1e308, decimals=1) == "1.0e+308"


def test_only_minus_inf_cells_are_styled_as_masked():
    import matplotlib.pyplot as plt

    fig = plots.heatmap([[1e308, -1e308], [0.0, -np.inf]])
    image = fig.axes[0].images[0]
    data = image.get_array()
    assert np.ma.getmaskarray(data).tolist() == [[False, False], [False, True]]
    colours = [t.get_color() for t in fig.axes[0].texts]
    texts = [t.get_text() for t in fig.axes[0].texts]
    assert texts[-1] == plots.MASKED_TEXT and "nan" not in " ".join(texts).lower()
    # the two extremes sit at the two ends of the colour scale, not at the grey 'bad' colour
    assert data[0, 0] == 1.0 and data[0, 1] == 0.0
    assert colours[0] != colours[1] or colours[0] in ("black", "white")
    plt.close(fig)


def test_readable_text_colour_refuses_nonsense():
    raises(lambda: plots.readable_text_colour((np.nan, 0, 0)), "rgba")
    raises(lambda: plots.readable_text_colour("red"), "rgba")
    assert plots.readable_text_colour((1, 1, 0.5)) == "black"

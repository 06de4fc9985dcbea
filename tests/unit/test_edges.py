"""Property-based edge suite: every public function of attnlib, called with odd values.

For each function, hypothesis builds well-shaped arguments with every dtype
(float64/32/16, signed and unsigned ints, lists) and magnitudes from 1e-320
to 1.7e308, shapes from empty to a few rows, and then (in most examples)
replaces one argument by an odd value: a string, a bool, a complex or
``numpy.ma`` masked array, a ragged list, NaN, inf, a huge int, a date, ...

The promise checked on every call:

* the call either returns, or raises :class:`ValueError`; no other
  exception, and no warning (warnings are errors here);
* when it raises, the message names one of the caller's arguments;
* every float in the result is finite (``-inf`` only where the docs say:
  masked scores);
* no input array is changed.

How many cases each function got is written to
``test-artifacts/edge-cases.json`` (the number hypothesis actually ran).
"""

from __future__ import annotations

import dataclasses
import json
import os
import warnings
from collections import Counter

import matplotlib
import numpy as np
import pytest
import sympy as sp
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from attnlib import _memory, compatibility, core, cost, exact, formatting, heads, paths, plots, positional, retrieval, scaling

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from support.odd_values import EVERY
from support.paths import ARTIFACTS

RUNS: Counter[str] = Counter()

#: Odd values that one argument is replaced by: every value of the one table (support/odd_values.py).
ODD = EVERY

SIZES = st.sampled_from([1, 1, 2, 3, 4])
EXPONENT = st.integers(-320, 308)


@st.composite
def real_array(draw, shape):
    """An array of ``shape`` with one magnitude 10**e (e in -320..308) and a random dtype or a nested list."""
    kind = draw(st.sampled_from(["f8", "f8", "f4", "f2", "i8", "u1", "list", "f8-neg-inf"]))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    with np.errstate(all="ignore"):
        if kind in ("i8", "u1"):
            arr = rng.integers(0 if kind == "u1" else -5, 6, size=shape).astype(kind)
        else:
            arr = rng.uniform(-1.7, 1.7, size=shape) * 10.0 ** draw(EXPONENT)
            if kind in ("f4", "f2"):
                arr = arr.astype(kind)
    if kind == "list":
        return arr.tolist()
    if kind == "f8-neg-inf" and arr.size:
        arr.flat[0] = -np.inf
    return arr


@st.composite
def integer(draw, low=1, high=6):
    small = min(high, 2**62)
    return draw(st.one_of(st.integers(low, high), st.integers(low, min(high, 2**53)).map(float), st.integers(low, small).map(np.int64)))


def mask_for(draw, shape):
    kind = draw(st.sampled_from(["none", "causal", "random", "additive"]))
    if kind == "none":
        return None
    rng = np.random.default_rng(draw(st.integers(0, 1000)))
    allowed = rng.random(shape) < 0.7
    allowed[:, 0] = True
    if kind == "causal" and shape[0] == shape[1]:
        allowed = core.causal_mask(shape[0])
    return np.where(allowed, 0.0, -np.inf) if kind == "additive" else allowed


# --- the builders: one per public function; each returns keyword arguments ------------------------


def b_softmax(draw):
    return {"x": draw(real_array((draw(SIZES), draw(SIZES)))), "axis": draw(st.sampled_from([-1, 0, 1, -2]))}


def b_qk(draw):
    n, m, d = draw(SIZES), draw(SIZES), draw(SIZES)
    return {"Q": draw(real_array((n, d))), "K": draw(real_array((m, d))), "scale": draw(st.sampled_from([True, False, 2.0, 0.5, 1e-300]))}


def b_attention(draw):
    n, m, d, dv = draw(SIZES), draw(SIZES), draw(SIZES), draw(SIZES)
    kw = {"Q": draw(real_array((n, d))), "K": draw(real_array((m, d))), "V": draw(real_array((m, dv)))}
    kw["mask"] = mask_for(draw, (n, m))
    kw["scale"] = draw(st.sampled_from([True, False, 3, 1e-300]))
    return kw


def b_self_attention(draw):
    n, d, dk, dv = draw(SIZES), draw(SIZES), draw(SIZES), draw(SIZES)
    return {
        "X": draw(real_array((n, d))),
        "W_Q": draw(real_array((d, dk))),
        "W_K": draw(real_array((d, dk))),
        "W_V": draw(real_array((d, dv))),
        "mask": mask_for(draw, (n, n)),
        "scale": draw(st.sampled_from([True, False, 2.0])),
    }


def b_cross_attention(draw):
    n, m, d, dk, dv = draw(SIZES), draw(SIZES), draw(SIZES), draw(SIZES), draw(SIZES)
    return {
        "X_query": draw(real_array((n, d))),
        "X_memory": draw(real_array((m, d))),
        "W_Q": draw(real_array((d, dk))),
        "W_K": draw(real_array((d, dk))),
        "W_V": draw(real_array((d, dv))),
        "mask": mask_for(draw, (n, m)),
    }


def b_mha(draw):
    h = draw(st.sampled_from([1, 2]))
    n, m, d = draw(SIZES), draw(SIZES), h * draw(st.sampled_from([1, 2]))
    kw = {"X_query": draw(real_array((n, d))), "X_memory": draw(real_array((m, d)))}
    for w in ("W_Q", "W_K", "W_V", "W_O"):
        kw[w] = draw(real_array((d, d)))
    kw["n_heads"] = h
    kw["mask"] = mask_for(draw, (n, m))
    return kw


def b_project(draw):
    n, d, k = draw(SIZES), draw(SIZES), draw(SIZES)
    return {"X": draw(real_array((n, d))), "W": draw(real_array((d, k)))}


def b_additive(draw):
    n, m, ds, dh, da = (draw(SIZES) for _ in range(5))
    return {
        "S": draw(real_array((n, ds))),
        "H": draw(real_array((m, dh))),
        "W_a": draw(real_array((da, ds))),
        "U_a": draw(real_array((da, dh))),
        "v_a": draw(real_array((da,))),
    }


def b_bahdanau(draw):
    kw = b_additive(draw)
    kw["mask"] = mask_for(draw, (np.shape(kw["S"])[0], np.shape(kw["H"])[0]))
    return kw


def b_transformer_retrieval(draw):
    kw = b_cross_attention(draw)
    kw["scale"] = draw(st.sampled_from([True, False, 2.0]))
    return kw


def b_retrieve(draw):
    n, m, dv = draw(SIZES), draw(SIZES), draw(SIZES)
    return {"scores": draw(real_array((n, m))), "values": draw(real_array((m, dv))), "mask": mask_for(draw, (n, m))}


def b_bilinear_matrix(draw):
    d, k = draw(SIZES), draw(SIZES)
    return {"W_Q": draw(real_array((d, k))), "W_K": draw(real_array((d, k)))}


def b_bilinear_scores(draw):
    n, m, d, e = (draw(SIZES) for _ in range(4))
    return {"X": draw(real_array((n, d))), "A": draw(real_array((d, e))), "Y": draw(real_array((m, e)))}


def b_value_contributions(draw):
    n, m, dv = draw(SIZES), draw(SIZES), draw(SIZES)
    return {"weights": draw(real_array((n, m))), "V": draw(real_array((m, dv)))}


def b_ints(*names, low=1, high=6):
    def build(draw):
        return {n: draw(integer(low, high)) for n in names}

    return build


def b_random_additive(draw):
    kw = b_ints("d_s", "d_h", "d_a")(draw)
    kw["seed"] = draw(st.one_of(st.integers(0, 2**70), st.integers(0, 9).map(float), st.integers(0, 9).map(np.uint32)))
    return kw


def b_pairwise_cost(draw):
    kw = b_ints("n_q", "n_k", "d")(draw)
    kw["kind"] = draw(st.sampled_from(["additive", "dot"]))
    return kw


def b_parameter_count(draw):
    h = draw(st.sampled_from([1, 2, 4]))
    return {"d_model": h * draw(st.integers(1, 64)), "n_heads": h, "bias": draw(st.booleans())}


def b_score_bytes(draw):
    kw = b_ints("n", "heads", "batch", high=10**30)(draw)
    kw["dtype"] = draw(st.sampled_from(sorted(cost.DTYPE_BYTES)))
    return kw


def b_flops(draw):
    kw = b_ints("n", "d_k", "heads", high=10**30)(draw)
    kw.update(b_ints("d_v", "n_keys", high=10**6)(draw))
    return kw


def b_working_set(draw):
    kw = b_ints("n", "d_k", "block_size", "heads", high=10**30)(draw)
    kw["dtype"] = draw(st.sampled_from(sorted(cost.DTYPE_BYTES)))
    kw["input_copies"] = draw(st.booleans())
    return kw


def b_traffic(draw):  # issue 25: the memory-traffic model
    kw = b_ints("n", "d", "cache_bytes", "block_size", "query_tile", "key_tile", high=10**30)(draw)
    kw["method"] = draw(st.sampled_from(cost.TRAFFIC_METHODS))
    kw["dtype"] = draw(st.sampled_from(sorted(cost.DTYPE_BYTES)))
    return kw


def b_key_block_steps(draw):
    from attnlib.blocked import block_count

    n, b = draw(st.integers(1, 40)), draw(st.integers(1, 41))
    step = draw(st.integers(0, block_count(n, b) - 1))
    return {"n": n, "block_size": b, "causal": draw(st.booleans()), "steps": [step], "title": "blocks"}


def b_format_bytes(draw):
    num = draw(
        st.one_of(
            st.integers(0, 10**400),
            st.floats(0, 1.7e308),
            st.floats(0, 3e38).map(np.float32),
            st.integers(0, 2**64 - 1).map(np.uint64),
        )
    )
    return {"num_bytes": num, "decimals": draw(st.integers(0, 6))}


def b_exact_matrix(draw):
    shape = (draw(SIZES), draw(SIZES))
    return {"name": "X", "value": draw(real_array(shape))}


def b_exact_softmax(draw):
    n = draw(SIZES)
    values = draw(real_array((n,)))
    allowed = None if draw(st.booleans()) else [True] + [draw(st.booleans()) for _ in range(n - 1)]
    return {"values": values, "allowed": allowed}


def b_exact_attention(draw):
    n, d = draw(st.sampled_from([1, 2])), draw(st.sampled_from([1, 2]))
    return {"X": draw(real_array((n, d))), "mask": mask_for(draw, (n, n)), "scale": draw(st.sampled_from([True, False, 2]))}


def b_exact_gradients(draw):
    n, m, d = draw(st.sampled_from([1, 2])), draw(st.sampled_from([1, 2])), draw(st.sampled_from([1, 2]))
    kw = {"Q": draw(real_array((n, d))), "K": draw(real_array((m, d))), "V": draw(real_array((m, 1))), "d_output": draw(real_array((n, 1)))}
    kw["mask"] = mask_for(draw, (n, m))
    kw["scale"] = draw(st.sampled_from([True, False, 2]))
    return kw


def b_loss_curves(draw):
    runs, steps = draw(SIZES), draw(SIZES)
    return {"curves": {"a": np.abs(draw(real_array((runs, steps)))) + 1e-3}, "log": draw(st.booleans()), "xlabel": "step", "ylabel": "loss",
            **DISPLAY}  # fmt: skip


def b_label_points(draw):
    n = draw(SIZES)
    fig, ax = plt.subplots(figsize=(3, 2))
    x, y = draw(real_array((n,))), draw(real_array((n,)))
    if draw(st.booleans()):
        y = np.abs(y) + 1e-3
        ax.set_yscale("log")
    ax.plot(x, y, "o")
    return {"ax": ax, "x": x, "y": y, "labels": [str(k) for k in range(n)], "fontsize": draw(st.sampled_from([8, 10.5, 72]))}


def b_to_float(draw):
    M = draw(
        st.sampled_from(
            [sp.Matrix([[sp.sqrt(2), -sp.oo]]), sp.Integer(10) ** 400, sp.exp(800), sp.Rational(1, 3), sp.pi, sp.Matrix([[1, 2]])]
        )
    )
    return {"M": M, "digits": draw(st.sampled_from([15, 30, 1]))}


def b_split_heads(draw):
    h = draw(st.sampled_from([1, 2, 3]))
    return {"M": draw(real_array((draw(SIZES), h * draw(SIZES)))), "n_heads": h}


def b_concat_heads(draw):
    return {"heads": draw(real_array((draw(SIZES), draw(SIZES), draw(SIZES))))}


def b_paths(draw):
    n = draw(st.integers(1, 6))
    return {"source": draw(st.integers(1, n)), "target": draw(st.integers(1, n)), "n": n}


def b_rnn_path(draw):
    kw = b_paths(draw)
    kw["bidirectional"] = draw(st.booleans())
    return kw


def b_path_matrix(draw):
    return {"n": draw(integer(1, 8)), "kind": draw(st.sampled_from(["rnn", "attention"]))}


def b_offset_rotation(draw):
    return {"k": draw(st.one_of(st.integers(-(10**6), 10**6), st.integers(-5, 5).map(float))), "d_model": 2 * draw(st.integers(1, 4))}


def b_permutation(draw):
    n = draw(st.integers(1, 5))
    order = draw(st.permutations(list(range(n))))
    return {"order": draw(st.sampled_from([order, np.array(order), np.array(order, dtype=np.uint8)]))}


def b_pair_rotation(draw):
    return {"angle": draw(st.one_of(st.floats(-1e308, 1e308), st.integers(-(10**6), 10**6), st.floats(-10, 10).map(np.float32)))}


def b_dot_samples(draw):
    return {"d_k": draw(integer(1, 8)), "n_samples": draw(integer(1, 50)), "rng": np.random.default_rng(draw(st.integers(0, 9)))}


def b_variance_table(draw):
    return {
        "dims": draw(st.lists(integer(1, 8), min_size=1, max_size=3)),
        "n_samples": draw(integer(1, 200)),
        "seed": draw(st.one_of(st.integers(0, 2**70), st.integers(0, 5).map(float))),
    }


def b_jacobian(draw):
    return {"scores": draw(real_array((draw(SIZES),)))}


def b_sweep(draw):
    return {"scores": draw(real_array((draw(SIZES),))), "factors": draw(real_array((draw(SIZES),)))}


def b_entropy(draw):
    n, m = draw(SIZES), draw(SIZES)
    rng = np.random.default_rng(draw(st.integers(0, 99)))
    w = rng.random((n, m))
    return {"weights": draw(st.sampled_from([w / w.sum(axis=1, keepdims=True), np.eye(m)[:n] if n <= m else np.eye(m), w]))}


def b_sharpness(draw):
    return {
        "dims": draw(st.lists(integer(1, 16), min_size=1, max_size=2)),
        "n_queries": draw(integer(1, 20)),
        "n_keys": draw(integer(1, 10)),
        "seed": draw(st.one_of(st.integers(0, 2**70), st.integers(0, 5).map(float))),
    }


def b_format_value(draw):
    value = draw(st.one_of(st.floats(allow_nan=True, allow_infinity=True), st.integers(-(10**400), 10**400), st.just(-np.inf)))
    return {"value": value, "decimals": draw(st.integers(0, 8))}


def b_format_row(draw):
    return {"values": draw(real_array((draw(st.sampled_from([0, 1, 3])),))), "decimals": draw(st.integers(0, 6))}


def b_rgba(draw):
    return {"rgba": tuple(draw(st.floats(0, 1)) for _ in range(draw(st.sampled_from([3, 4]))))}


DISPLAY = {"title": "t", "ax": None}  # the display arguments of the plots (issue 47: they get odd values too)


def b_heatmap(draw):
    n, m = draw(SIZES), draw(SIZES)
    kw = {"matrix": draw(real_array((n, m))), "decimals": draw(st.integers(0, 4)), **DISPLAY}
    return {**kw, "cmap": "viridis", "vmin": None, "vmax": None, "xlabel": "key", "ylabel": "query"}


def b_token_vectors(draw):
    n = draw(SIZES)
    match = {"o": draw(st.integers(0, n - 1))} if draw(st.booleans()) else None
    return {"X": draw(real_array((n, 2))), "extra": {"o": draw(real_array((2,)))}, "match_rows": match, "axis_names": ("a", "b"), **DISPLAY}


def b_path_heatmap(draw):
    n = draw(st.integers(1, 5))
    kind = draw(st.sampled_from(["rnn", "rnn_left_to_right", "attention"]))
    return {"matrix": paths.path_length_matrix(n, kind), "labels": [f"x{i + 1}" for i in range(n)], "vmax": None, **DISPLAY}


def b_layer_comparison(draw):
    return {"n": draw(integer(1, 10**9)), "d": draw(integer(1, 10**6)), "kernel": draw(integer(2, 9))}


def b_centred_layers(draw):
    return {"n": draw(integer(1, 10**9)), "kernel": draw(st.sampled_from([3, 5, 7, 9]))}


def b_scalar(name, strategy):
    def build(draw):
        return {name: draw(strategy)}

    return build


#: (name, function, builder, max_examples, result fields that may hold -inf)
SPECS = [
    ("core.softmax", core.softmax, b_softmax, 150, ()),
    ("core.scale_divisor", core.scale_divisor, lambda d: {"d_k": d(integer()), "scale": d(st.sampled_from([True, False, 2, 0.5]))}, 75, ()),
    ("core.scaled_scores", core.scaled_scores, b_qk, 150, ()),
    ("core.causal_mask", core.causal_mask, b_ints("n", high=8), 75, ()),
    ("core.additive_mask", core.additive_mask, lambda d: {"allowed": core.causal_mask(d(SIZES))}, 50, ("*",)),
    ("core.attention", core.attention, b_attention, 150, ("scaled",)),
    ("core.self_attention", core.self_attention, b_self_attention, 125, ("scaled",)),
    ("core.cross_attention", core.cross_attention, b_cross_attention, 125, ("scaled",)),
    ("core.multi_head_attention", core.multi_head_attention, b_mha, 125, ()),
    ("core.multi_head_parts", core.multi_head_parts, b_mha, 75, ("scaled",)),
    ("core.project", core.project, b_project, 100, ()),
    ("core.attention_parameter_count", core.attention_parameter_count, b_parameter_count, 75, ()),
    ("core.head_width", core.head_width, b_ints("d_model", "n_heads", high=10**30), 75, ()),
    ("core.additive_scores", core.additive_scores, b_additive, 125, ()),
    ("compatibility.random_additive_parameters", compatibility.random_additive_parameters, b_random_additive, 75, ()),
    ("compatibility.tanh_evaluation_count", compatibility.tanh_evaluation_count, b_ints("n_q", "n_k", "d_a", high=10**40), 75, ()),
    ("compatibility.matmul_multiply_count", compatibility.matmul_multiply_count, b_ints("n_rows", "n_inner", "n_cols", high=10**9), 75, ()),
    ("compatibility.pairwise_score_cost", compatibility.pairwise_score_cost, b_pairwise_cost, 75, ()),
    ("compatibility.bilinear_matrix", compatibility.bilinear_matrix, b_bilinear_matrix, 100, ()),
    ("compatibility.bilinear_scores", compatibility.bilinear_scores, b_bilinear_scores, 100, ()),
    ("compatibility.symbolic_bilinear_regrouping", compatibility.symbolic_bilinear_regrouping, b_ints("d_model", "d_k", high=2), 10, ()),
    ("compatibility.value_contributions", compatibility.value_contributions, b_value_contributions, 100, ()),
    ("cost.bytes_per_entry", cost.bytes_per_entry, lambda d: {"dtype": d(st.sampled_from(sorted(cost.DTYPE_BYTES)))}, 25, ()),
    ("cost.score_matrix_entries", cost.score_matrix_entries, b_ints("n", "n_keys", "heads", "batch", high=10**30), 75, ()),
    ("cost.score_matrix_bytes", cost.score_matrix_bytes, b_score_bytes, 75, ()),
    ("formatting.format_bytes", formatting.format_bytes, b_format_bytes, 150, ()),
    ("cost.attention_flops", cost.attention_flops, b_flops, 75, ()),
    ("cost.blocked_working_set_bytes", cost.blocked_working_set_bytes, b_working_set, 75, ()),
    ("cost.attention_traffic", cost.attention_traffic, b_traffic, 75, ()),
    ("cost.attention_traffic_terms", cost.attention_traffic_terms, b_traffic, 40, ()),
    ("exact.exact_number", exact.exact_number, lambda d: {"name": "x", "value": d(st.one_of(st.floats(), st.integers()))}, 100, ()),
    ("exact.exact_matrix", exact.exact_matrix, b_exact_matrix, 75, ()),
    ("exact.exact_softmax", exact.exact_softmax, b_exact_softmax, 50, ()),
    ("exact.exact_attention", exact.exact_attention, b_exact_attention, 20, ()),
    ("exact.to_float", exact.to_float, b_to_float, 50, ("*",)),
    ("exact.exact_attention_gradients", exact.exact_attention_gradients, b_exact_gradients, 15, ()),
    ("exact.softmax_backward_proof", exact.softmax_backward_proof, b_ints("n", high=3), 10, ()),
    ("heads.head_dim", heads.head_dim, b_ints("d_model", "n_heads", high=10**30), 75, ()),
    ("heads.split_heads", heads.split_heads, b_split_heads, 100, ()),
    ("heads.concat_heads", heads.concat_heads, b_concat_heads, 75, ()),
    ("heads.symbolic_parameter_count", heads.symbolic_parameter_count, lambda d: {"bias": d(st.booleans())}, 5, ()),
    ("paths.rnn_route", paths.rnn_route, lambda d: {k: v for k, v in b_paths(d).items() if k != "n"}, 75, ()),
    ("paths.rnn_path_length", paths.rnn_path_length, b_rnn_path, 75, ()),
    ("paths.attention_path_length", paths.attention_path_length, b_paths, 75, ()),
    ("paths.path_length_matrix", paths.path_length_matrix, b_path_matrix, 50, ()),
    ("positional.positional_frequencies", positional.positional_frequencies, b_ints("d_model", high=64), 75, ()),
    ("positional.sinusoidal_encoding", positional.sinusoidal_encoding, b_ints("n_positions", "d_model", high=40), 75, ()),
    ("positional.permutation_matrix", positional.permutation_matrix, b_permutation, 75, ()),
    ("positional.pair_rotation", positional.pair_rotation, b_pair_rotation, 75, ()),
    ("positional.offset_rotation", positional.offset_rotation, b_offset_rotation, 75, ()),
    ("retrieval.retrieve", retrieval.retrieve, b_retrieve, 125, ()),
    ("retrieval.bahdanau_retrieval", retrieval.bahdanau_retrieval, b_bahdanau, 100, ()),
    ("retrieval.transformer_retrieval", retrieval.transformer_retrieval, b_transformer_retrieval, 100, ()),
    ("scaling.dot_product_variance_steps", scaling.dot_product_variance_steps, lambda d: {"concrete_dims": ()}, 1, ()),
    ("scaling.dot_product_samples", scaling.dot_product_samples, b_dot_samples, 75, ()),
    ("scaling.dot_product_variance_table", scaling.dot_product_variance_table, b_variance_table, 50, ()),
    ("scaling.softmax_jacobian", scaling.softmax_jacobian, b_jacobian, 100, ()),
    ("scaling.saturation_sweep", scaling.saturation_sweep, b_sweep, 100, ()),
    ("scaling.row_entropy", scaling.row_entropy, b_entropy, 75, ()),
    ("scaling.sharpness_vs_dk", scaling.sharpness_vs_dk, b_sharpness, 20, ()),
    ("formatting.format_value", formatting.format_value, b_format_value, 150, ()),
    ("formatting.format_row", formatting.format_row, b_format_row, 100, ()),
    ("formatting.is_displayable", formatting.is_displayable,
     lambda d: {"value": d(st.one_of(st.floats(), st.integers(), st.sampled_from(ODD)))}, 100, ()),
    ("formatting.is_masked", formatting.is_masked, lambda d: {"value": d(st.one_of(st.floats(), st.sampled_from(ODD)))}, 50, ()),
    ("plots.readable_text_colour", plots.readable_text_colour, b_rgba, 75, ()),
    ("plots.colour_table", plots.colour_table, lambda d: {**b_ints("n", high=300)(d), "cmap": "viridis"}, 25, ()),
    ("plots.path_length_heatmap", plots.path_length_heatmap, b_path_heatmap, 30, ()),
    ("plots.attention_data_flow", plots.attention_data_flow, b_ints("n", "d_model", "d_k", "d_v", high=600), 5, ()),
    ("plots.multi_head_data_flow", plots.multi_head_data_flow, b_ints("n", "d_model", "h", "d_k", "d_v", high=600), 5, ()),
    ("plots.as_svg", plots.as_svg, lambda d: {"fig": plt.figure(figsize=(d(st.sampled_from([1, 2])), 1))}, 5, ()),
    ("compatibility.bilinear_parameter_counts", compatibility.bilinear_parameter_counts, b_ints("d_model", "d_k", high=10**30), 50, ()),
    ("paths.layer_comparison", paths.layer_comparison, b_layer_comparison, 50, ()),
    ("paths.centred_convolution_layers", paths.centred_convolution_layers, b_centred_layers, 50, ()),
    ("plots.heatmap", plots.heatmap, b_heatmap, 20, ()),
    ("plots.token_vectors", plots.token_vectors, b_token_vectors, 15, ()),
    ("plots.loss_curves", plots.loss_curves, b_loss_curves, 15, ()),
    ("plots.label_points", plots.label_points, b_label_points, 15, ()),
    ("plots.key_block_steps", plots.key_block_steps, b_key_block_steps, 15, ()),
    # issue 47: the functions without arguments and the methods of the records (the completeness guard found them)
    ("core.running_example", core.running_example, lambda d: {}, 1, ()),
    ("positional.symbolic_offset_rotation", positional.symbolic_offset_rotation, lambda d: {}, 1, ()),
    ("heads.ParameterCount.evaluate", lambda d_model, n_heads: heads.symbolic_parameter_count().evaluate(d_model, n_heads),
     b_ints("d_model", "n_heads", high=10**30), 50, ()),
    ("scaling.DerivationStep.latex", lambda: scaling.dot_product_variance_steps()[0].latex(), lambda d: {}, 1, ()),
    ("scaling.VarianceTable.rows", lambda: scaling.dot_product_variance_table([1, 2], 50, 0).rows(), lambda d: {}, 1, ()),
]

#: Words of numpy's or Python's own errors that must never reach a reader.
INTERNAL_WORDS = ("inhomogeneous", "truth value", "unhashable", "unpack", "Format specifier", "could not convert", "object of type")


def _snapshot(kwargs):
    out = {}
    for k, v in kwargs.items():
        if isinstance(v, np.ndarray):
            out[k] = (v.copy(), np.ma.getmaskarray(v).copy() if isinstance(v, np.ma.MaskedArray) else None)
    return out


def _floats_in(result, allowed_neg_inf, field=""):
    """Yield (field, float array) for every float array or number inside a result."""
    if isinstance(result, np.ndarray) or isinstance(result, (float, np.floating)):
        arr = np.asarray(result)
        if arr.dtype.kind in "fc":
            yield field, arr
    elif dataclasses.is_dataclass(result):
        for f in dataclasses.fields(result):
            yield from _floats_in(getattr(result, f.name), allowed_neg_inf, f.name)
    elif isinstance(result, (tuple, list)):
        for i, item in enumerate(result):
            yield from _floats_in(item, allowed_neg_inf, field or str(i))


def _call_and_judge(name, fn, kwargs, replaced, neg_inf_fields):
    before = _snapshot(kwargs)
    RUNS[name] += 1
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        try:
            result = fn(**kwargs)
        except ValueError as exc:
            text = str(exc)
            assert text, f"{name}: empty ValueError"
            assert not any(w in text for w in INTERNAL_WORDS), f"{name}: internal error text reached the caller: {text}"
            named = [k for k in kwargs if k in text] + [v for k, v in kwargs.items() if k == "name" and isinstance(v, str) and v in text]
            assert named, f"{name}({', '.join(kwargs)}) raised without naming an argument: {text}"
            result = None
        finally:
            plt.close("all")
    for field, arr in _floats_in(result, neg_inf_fields):
        ok = np.isfinite(arr) | (np.isneginf(arr) if ("*" in neg_inf_fields or field in neg_inf_fields) else False)
        assert np.all(ok), f"{name}: field {field or 'result'} has non-finite entries {arr}"
        assert not np.iscomplexobj(arr), f"{name}: complex result"
    for key, (copy, mask) in before.items():
        now = np.asarray(kwargs[key])
        nan_ok = now.dtype.kind in "fc"
        assert np.array_equal(now, np.asarray(copy), equal_nan=nan_ok), f"{name} changed its input {key}"
        if mask is not None:
            assert np.array_equal(np.ma.getmaskarray(kwargs[key]), mask), f"{name} changed the mask of {key}"


def _odd_argument_names(fn, kwargs):
    return [k for k in kwargs if k not in ("name", "rng")]


@pytest.fixture(autouse=True)
def small_memory(monkeypatch):
    """The suite must not allocate gigabytes on a shared machine: pretend it has 128 MiB."""
    monkeypatch.setattr(_memory, "MAX_ARRAY_BYTES", 2**27)


@pytest.mark.parametrize("name, fn, builder, n_examples, neg_inf", SPECS, ids=[s[0] for s in SPECS])
def test_public_function_keeps_its_promises_at_the_edges(name, fn, builder, n_examples, neg_inf):
    n_examples = max(1, int(n_examples * float(os.environ.get("ATTNLIB_EDGE_SCALE", "1"))))

    @settings(
        max_examples=n_examples,
        deadline=None,
        database=None,
        derandomize=True,
        phases=[Phase.explicit, Phase.generate],  # no shrinking: the failing call is printed as it came
        suppress_health_check=list(HealthCheck),
    )
    @given(st.data())
    def run(data):
        kwargs = builder(data.draw)
        replaced = None
        names = _odd_argument_names(fn, kwargs)
        if names and data.draw(st.integers(0, 9)) < 6:  # in most examples, one argument becomes odd
            replaced = data.draw(st.sampled_from(names))
            kwargs[replaced] = data.draw(st.sampled_from(ODD))
        _call_and_judge(name, fn, kwargs, replaced, neg_inf)

    run()
    assert RUNS[name] >= min(n_examples, 3)


def test_write_the_case_counts():
    """Runs last in this file (pytest keeps file order): the number of cases per function, for the record."""
    out = ARTIFACTS
    out.mkdir(exist_ok=True)
    (out / "edge-cases.json").write_text(json.dumps(dict(sorted(RUNS.items())), indent=1))
    assert _memory.MAX_ARRAY_BYTES > 0

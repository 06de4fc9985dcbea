"""Blocked attention with an online softmax: the same output as attention, without the n x n scores."""

from __future__ import annotations

import numpy as np
import pytest
import sympy as sp
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays
from support.strategies import masks, qkv

from attnlib.blocked import (
    block_count,
    chunked_attention,
    key_block,
    key_blocks,
    online_softmax_step,
    online_softmax_trace,
    two_block_identity,
)
from attnlib.core import attention, causal_mask, running_example, scaled_scores
from attnlib.cost import blocked_working_set_bytes, score_matrix_bytes
from attnlib.measure import fit_power_law, measure_attention, peak_memory_bytes

TOL = 1e-12


@st.composite
def problems(draw):
    """Q, K, V of random shapes, a block size from 1 to n_k + 1 and a mask in one of the accepted forms."""
    Q, K, V = draw(qkv(max_n=40, max_d_k=6, max_d_v=4))
    n_q, n_k = Q.shape[0], K.shape[0]
    block = draw(st.integers(1, n_k + 1))
    kind = draw(st.sampled_from(["none", "causal", "bool", "additive", "function"]))
    dense_mask: np.ndarray | None = None
    mask = None
    if kind == "causal":
        mask, dense_mask = "causal", np.tril(np.ones((n_q, n_k), dtype=bool))
    elif kind in ("bool", "additive"):
        dense_mask = draw(masks(n_q, n_k))
        mask = dense_mask if kind == "bool" else np.where(dense_mask, 0.0, -np.inf)
    elif kind == "function":
        window = draw(st.integers(1, max(n_k, 1)))
        mask = lambda i, j: (j <= i) & (i - j < window)  # noqa: E731 - a sliding window
        dense_mask = mask(np.arange(n_q)[:, None], np.arange(n_k)[None, :])
        dense_mask[:, 0] |= ~dense_mask.any(axis=1)  # rows beyond n_k would see nothing; keep them valid
        fixed = dense_mask.copy()
        mask = lambda i, j: fixed[i, j]  # noqa: E731
    scale = draw(st.sampled_from([True, False, 0.5, 3.0]))
    return Q, K, V, block, mask, dense_mask, scale


def log_sum_exp(scaled: np.ndarray) -> np.ndarray:
    top = scaled.max(axis=1)
    return top + np.log(np.exp(scaled - top[:, None]).sum(axis=1))


@settings(max_examples=300, deadline=None)
@given(problems())
def test_equals_attention_for_any_shape_block_and_mask(p):
    Q, K, V, block, mask, dense_mask, scale = p
    want = attention(Q, K, V, mask=dense_mask, scale=scale)
    out, lse = chunked_attention(Q, K, V, block_size=block, mask=mask, scale=scale, return_lse=True)
    assert out.shape == want.output.shape
    np.testing.assert_allclose(out, want.output, atol=TOL, rtol=TOL)
    np.testing.assert_allclose(lse, log_sum_exp(want.scaled), atol=TOL, rtol=TOL)
    assert np.array_equal(chunked_attention(Q, K, V, block_size=block, mask=mask, scale=scale), out)


def test_running_example_and_lse_by_hand():
    X = running_example()
    want = attention(X, X, X)
    for block in (1, 2, 3, 4):
        np.testing.assert_allclose(chunked_attention(X, X, X, block_size=block), want.output, atol=TOL)
    _, lse = chunked_attention(X, X, X, block_size=2, return_lse=True)
    e = np.exp(scaled_scores(X, X))
    np.testing.assert_allclose(lse, np.log(e.sum(axis=1)), atol=TOL)
    # exp(lse) is each row's normaliser Z_i, e.g. Z_1 = 1 + e^(1/sqrt 2) + e^(1/(2 sqrt 2))
    assert abs(np.exp(lse[0]) - (1 + np.exp(2**-0.5) + np.exp(2**-1.5))) < TOL


def test_huge_scores_give_no_overflow():
    Q = np.array([[30.0, 0.0], [0.0, -30.0]])
    K = np.array([[30.0, 1.0], [-30.0, 5.0], [29.0, 30.0]])
    V = np.arange(6.0).reshape(3, 2)
    for block in (1, 2):
        np.testing.assert_allclose(chunked_attention(Q, K, V, block_size=block, scale=False), attention(Q, K, V, scale=False).output)


def test_never_makes_an_n_by_n_array():
    n, d, block = 1024, 16, 64
    rng = np.random.default_rng(1)
    Q, K, V = (rng.standard_normal((n, d)) for _ in range(3))
    one_score_matrix = score_matrix_bytes(n, dtype="float64")
    for mask in (None, "causal", lambda i, j: j <= i):
        peak = peak_memory_bytes(chunked_attention, Q, K, V, block_size=block, mask=mask)
        model = blocked_working_set_bytes(n, d, block, dtype="float64", input_copies=True)
        assert peak < one_score_matrix / 4, (mask, peak)
        assert 0.5 * model < peak < 1.5 * model, (mask, peak, model)
    assert peak_memory_bytes(lambda: attention(Q, K, V).output) > 3 * one_score_matrix


def test_causal_mask_skips_the_blocks_no_row_can_see():
    assert [(b.keys, b.rows) for b in key_blocks(5, 5, 2, causal=True)] == [((0, 2), (0, 5)), ((2, 4), (2, 5)), ((4, 5), (4, 5))]
    assert [b.keys for b in key_blocks(2, 7, 3, causal=True)] == [(0, 3)]
    assert [b.shape for b in key_blocks(4, 5, 2)] == [(4, 2), (4, 2), (4, 1)]
    assert [b.keys for b in key_blocks(3, 3, 10)] == [(0, 3)]


@given(st.integers(1, 300), st.integers(1, 300), st.integers(1, 301), st.booleans())
def test_one_block_at_a_time_agrees_with_the_list(n_q, n_k, block, causal):
    blocks = key_blocks(n_q, n_k, block, causal=causal)
    assert [key_block(n_q, n_k, block, i, causal=causal) for i in range(len(blocks))] == blocks
    assert len(key_blocks(n_q, n_k, block)) == block_count(n_k, block)
    covered = sorted(j for b in key_blocks(n_q, n_k, block) for j in range(*b.keys))
    assert covered == list(range(n_k))
    with pytest.raises(ValueError, match="index must be a block number"):
        key_block(n_q, n_k, block, block_count(n_k, block))


BAD_INPUTS = [
    ([[1.0, 0.0]], [[1.0, 0.0, 2.0]], [[1.0]]),  # d_k differs
    ([[1.0, 0.0]], [[1.0, 0.0]], [[1.0], [2.0]]),  # K and V rows differ
    ([[np.nan, 0.0]], [[1.0, 0.0]], [[1.0]]),
    ([1.0, 0.0], [[1.0, 0.0]], [[1.0]]),
    ([[1.0, 0.0]], [[np.inf, 0.0]], [[1.0]]),
    ([[1.0, 0.0]], [[1.0, 0.0]], [[-np.inf]]),
    ("ab", [[1.0, 0.0]], [[1.0]]),
    ([[1.0, 0.0]], [[1.0, 0.0]], np.zeros((1, 0))),
]


@pytest.mark.parametrize("Q, K, V", BAD_INPUTS)
def test_validation_errors_are_attentions(Q, K, V):
    with pytest.raises(ValueError) as dense:
        attention(Q, K, V)
    with pytest.raises(ValueError) as blocked:
        chunked_attention(Q, K, V, block_size=1)
    assert str(blocked.value) == str(dense.value)


@pytest.mark.parametrize("scale", [0, -1.0, np.nan, "2x"])
def test_bad_scale_is_refused_like_attention(scale):
    X = running_example()
    with pytest.raises(ValueError) as dense:
        attention(X, X, X, scale=scale)
    with pytest.raises(ValueError) as blocked:
        chunked_attention(X, X, X, scale=scale)
    assert str(blocked.value) == str(dense.value)


def test_a_row_with_no_allowed_key_gives_attentions_error():
    X = running_example()
    mask = causal_mask(3)
    mask[1] = False
    with pytest.raises(ValueError) as dense:
        attention(X, X, X, mask=mask)
    for given_mask in (mask, np.where(mask, 0.0, -np.inf), lambda i, j: mask[i, j]):
        with pytest.raises(ValueError) as blocked:
            chunked_attention(X, X, X, block_size=2, mask=given_mask)
        assert str(blocked.value) == str(dense.value)
        assert "query row 1" in str(blocked.value)


@pytest.mark.parametrize(
    "kwargs, words",
    [
        ({"block_size": 0}, ["block_size must be a positive integer"]),
        ({"block_size": 2.5}, ["block_size must be a positive integer"]),
        ({"block_size": True}, ["block_size"]),
        ({"mask": "anti-causal"}, ["mask", "attnlib.CAUSAL", "'anti-causal'"]),
        ({"mask": np.ones((3, 2), dtype=bool)}, ["mask has shape (3, 2)"]),
        ({"mask": lambda i, j: (i + j).astype(float)}, ["mask(i, j) must return booleans"]),
        ({"mask": lambda i, j: np.ones((2, 2), dtype=bool)}, ["mask(i, j) returned shape (2, 2)"]),
        ({"mask": lambda i, j: 1 / 0}, ["mask(i, j) raised ZeroDivisionError"]),
    ],
)
def test_bad_block_size_and_mask(kwargs, words):
    X = running_example()
    with pytest.raises(ValueError) as info:
        chunked_attention(X, X, X, **kwargs)
    for w in words:
        assert w in str(info.value)


def test_overflowing_scores_raise():
    with pytest.raises(ValueError, match="overflowed"):
        chunked_attention([[1e200, 1e200]], [[1e200, 1e200]], [[1.0]], scale=False)


# --- the online-softmax step ------------------------------------------------------------------


@settings(max_examples=200, deadline=None)
@given(arrays(np.float64, st.integers(1, 30), elements=st.floats(-800, 800)), st.data())
def test_any_split_into_blocks_gives_max_and_normaliser(x, data):
    cuts = sorted(data.draw(st.sets(st.integers(1, max(1, x.size - 1)), max_size=5)))
    cuts = [c for c in cuts if c < x.size]
    m, l = -np.inf, 0.0
    for block in np.split(x, cuts):
        m, l, _, _ = online_softmax_step(m, l, block)
    assert m == x.max()
    np.testing.assert_allclose(l, np.exp(x - x.max()).sum(), rtol=1e-12)


def test_step_rescales_when_the_maximum_grows():
    m, l, rescale, p = online_softmax_step(np.array([0.0, 5.0]), np.array([1.0, 2.0]), [[2.0], [1.0]])
    np.testing.assert_allclose(m, [2.0, 5.0])
    np.testing.assert_allclose(rescale, [np.exp(-2.0), 1.0])
    np.testing.assert_allclose(l, [np.exp(-2.0) + 1.0, 2.0 + np.exp(-4.0)])
    np.testing.assert_allclose(p, [[1.0], [np.exp(-4.0)]])


def test_step_with_masked_keys():
    m, l, rescale, p = online_softmax_step(-np.inf, 0.0, [-np.inf, -np.inf])
    assert m == -np.inf and l == 0.0 and p.tolist() == [0.0, 0.0]
    m, l, rescale, p = online_softmax_step(m, l, [1.0, -np.inf])
    assert (float(m), float(l), float(rescale)) == (1.0, 1.0, 0.0)


def test_step_does_not_modify_its_inputs():
    scores = np.array([[3.0, 1.0]])
    m, l = np.array([0.0]), np.array([1.0])
    online_softmax_step(m, l, scores)
    assert scores.tolist() == [[3.0, 1.0]] and m.tolist() == [0.0] and l.tolist() == [1.0]


@pytest.mark.parametrize(
    "args, words",
    [
        ((0.0, 1.0, [[1.0, 2.0]]), ["m and l need one entry per row", "(1,)"]),
        ((np.zeros(2), np.ones(3), [[1.0], [2.0]]), ["m and l need one entry per row"]),
        ((0.0, -1.0, [1.0]), ["l is a sum of exponentials"]),
        ((-np.inf, 2.0, [1.0]), ["l must be 0"]),
        ((0.0, 1.0, [np.nan]), ["scores", "NaN"]),
        ((np.nan, 1.0, [1.0]), ["m", "NaN"]),
        ((0.0, 1.0, []), ["scores is empty"]),
    ],
)
def test_step_errors(args, words):
    with pytest.raises(ValueError) as info:
        online_softmax_step(*args)
    for w in words:
        assert w in str(info.value)


def trace_by_prefixes(scores, bounds, values=None):
    """Every field of every step of an online-softmax trace, from the prefixes of the row in plain numpy.

    Step k has seen the keys before ``bounds[k][1]``; its fields are sums over that prefix taken
    directly (no running update), so a trace that records the wrong thing, or after the wrong step,
    disagrees here. A prefix whose keys are all masked is shifted by 0, as the chapter explains.
    """
    s = np.asarray(scores, dtype=float)
    steps = []
    for start, stop in bounds:
        before, after = s[:start], s[:stop]
        m_before = before.max() if start else -np.inf
        m_after = after.max()
        shift_before = 0.0 if np.isneginf(m_before) else m_before
        shift_after = 0.0 if np.isneginf(m_after) else m_after
        fields = {
            "keys": (start, stop),
            "scores": tuple(s[start:stop].tolist()),
            "m_before": float(m_before),
            "m_after": float(m_after),
            "rescale": float(np.exp(m_before - shift_after)),
            "terms": tuple(np.exp(s[start:stop] - shift_after).tolist()),
            "l_before": float(np.exp(before - shift_before).sum()),
            "l_after": float(np.exp(after - shift_after).sum()),
            "acc_after": None if values is None else tuple((np.exp(after - shift_after) @ np.asarray(values, float)[:stop]).tolist()),
        }
        steps.append(fields)
    return steps


def assert_trace_matches(steps, expected):
    assert len(steps) == len(expected)
    for step, want in zip(steps, expected):
        got = {f: getattr(step, f) for f in step.__dataclass_fields__}
        assert set(got) == set(want), f"fields not checked: {set(got) ^ set(want)}"
        assert got["keys"] == want["keys"]
        for name in ("scores", "terms", "acc_after"):
            if want[name] is None:
                assert got[name] is None
            else:
                assert isinstance(got[name], tuple) and len(got[name]) == len(want[name]), name
                # acc_after sums values up to 9 in size times terms up to 1 over up to 9 keys: where that sum
                # cancels to about 0, rounding leaves up to 9 * 9 * 2**-52, about 2e-14, in either order of adding
                atol = 1e-13 if name == "acc_after" else 1e-15
                np.testing.assert_allclose(got[name], want[name], rtol=1e-13, atol=atol, err_msg=name)
        for name in ("m_before", "m_after", "rescale", "l_before", "l_after"):
            np.testing.assert_allclose(got[name], want[name], rtol=1e-13, atol=1e-15, err_msg=name)


def test_trace_of_the_running_example_by_hand():
    """Chapter 15's worked example: query x2 of the running example, keys in blocks of 1 and 2."""
    X = running_example()
    row2 = scaled_scores(X, X)[1]  # query x2: [0, 1/sqrt 2, 1/(2 sqrt 2)]
    first, second = online_softmax_trace(row2, [1, 2], values=X)
    # the entries are the row's scores, as the chapter prints them, not their exponentials
    assert first.scores == (0.0,)
    np.testing.assert_allclose(second.scores, [2**-0.5, 2**-1.5], atol=TOL)
    assert (first.keys, first.m_before, first.m_after, first.rescale) == ((0, 1), -np.inf, 0.0, 0.0)
    assert (first.terms, first.l_before, first.l_after, first.acc_after) == ((1.0,), 0.0, 1.0, (1.0, 0.0))
    a, b = np.exp(-(2**-0.5)), np.exp(2**-1.5 - 2**-0.5)
    assert second.keys == (1, 3) and second.m_before == 0.0 and second.l_before == 1.0
    assert abs(second.m_after - 2**-0.5) < TOL and abs(second.rescale - a) < TOL
    np.testing.assert_allclose(second.terms, [1.0, b], atol=TOL)
    assert abs(second.l_after - (a + 1 + b)) < TOL
    np.testing.assert_allclose(second.acc_after, a * X[0] + X[1] + b * X[2], atol=TOL)
    np.testing.assert_allclose(np.array(second.acc_after) / second.l_after, attention(X, X, X).output[1], atol=TOL)
    assert_trace_matches([first, second], trace_by_prefixes(row2, [(0, 1), (1, 3)], X))
    with pytest.raises(ValueError, match="add up to 2"):
        online_softmax_trace(row2, [1, 1])
    with pytest.raises(ValueError, match="-inf everywhere"):
        online_softmax_trace([-np.inf, -np.inf], 1)
    with pytest.raises(ValueError, match="values has 2 rows"):
        online_softmax_trace(row2, 2, values=X[:2])


@settings(max_examples=60, deadline=None)
@given(st.data())
def test_every_field_of_a_trace_equals_its_prefix_sums(data):
    """Any row (masked keys included, a masked first block too), any split into blocks, with and without values."""
    n = data.draw(st.integers(1, 9))
    row = np.array(data.draw(st.lists(st.floats(-5, 5), min_size=n, max_size=n)))
    masked = np.array(data.draw(st.lists(st.booleans(), min_size=n, max_size=n)))
    masked[data.draw(st.integers(0, n - 1))] = False  # at least one key is allowed
    row[masked] = -np.inf
    sizes, left = [], n
    while left:
        sizes.append(data.draw(st.integers(1, left)))
        left -= sizes[-1]
    values = data.draw(st.one_of(st.none(), st.just(np.arange(2.0 * n).reshape(n, 2) - n)))
    bounds = np.cumsum([0, *sizes])
    before = row.copy()
    steps = online_softmax_trace(row, sizes, values=values)
    assert np.array_equal(row, before)  # the caller's row is left as it was
    assert_trace_matches(steps, trace_by_prefixes(row, list(zip(bounds[:-1], bounds[1:])), values))


def test_sympy_proves_the_two_block_merge():
    for a, b in ((1, 1), (2, 3)):
        proof = two_block_identity(a, b)
        assert proof.holds
        # the proof is not vacuous: forgetting the rescaling breaks it
        wrong = sp.Add(*(sp.exp(x - proof.m1) for x in proof.scores[:a])) + sp.Add(*(sp.exp(x - proof.m2) for x in proof.scores[a:]))
        assert sp.simplify(wrong - proof.full_normaliser) != 0
        values = dict(zip(proof.scores, np.linspace(-1, 2, a + b)))
        full = float(proof.full_normaliser.subs(values).subs(proof.m, 0))
        assert abs(full - np.exp(np.linspace(-1, 2, a + b)).sum()) < 1e-12


def test_blocks_and_memory_of_a_long_sequence():
    blocks = key_blocks(1000, 1000, 128)
    assert (blocks[0].keys, blocks[0].rows) == ((0, 128), (0, 1000)) and blocks[-1].keys == (896, 1000) and len(blocks) == 8
    assert score_matrix_bytes(1000) == 4_000_000
    assert blocked_working_set_bytes(1000, 64, 128) == 4 * (2 * 1000 * 128 + 2 * 1000 * 64 + 2000)
    assert [b.rows for b in key_blocks(10, 10, 4, causal=True)] == [(0, 10), (4, 10), (8, 10)]


def test_measure_and_fit_on_a_tiny_sweep():
    rows = measure_attention([64, 128], d_k=8, block_size=16, repeats=1)
    assert [r.n for r in rows] == [64, 128]
    assert all(r.max_difference < TOL for r in rows)
    assert all(r.blocked_peak < r.dense_peak for r in rows)
    fit = fit_power_law([r.n for r in rows], [r.dense_peak for r in rows])
    assert 1.8 < fit.exponent < 2.2
    one_thread = measure_attention([32], d_k=4, block_size=8, repeats=1, clock="cpu", blas_threads=1)
    assert one_thread[0].max_difference < TOL and one_thread[0].dense_seconds >= 0
    with pytest.raises(ValueError, match="clock must be one of"):
        measure_attention([32], clock="sundial")
    with pytest.raises(ValueError, match="blas_threads must be a positive integer"):
        measure_attention([32], blas_threads=0)
    with pytest.raises(ValueError, match="two different sizes"):
        fit_power_law([3, 3], [1, 2])
    with pytest.raises(ValueError, match="positive"):
        fit_power_law([1, 2], [0, 2])


# --- the exercise's self-check ----------------------------------------------------------------


def test_two_block_check_passes_correct_versions_and_explains_mistakes():
    import math

    from attnlib.checks import check_two_block_normaliser

    def numpy_version(s1, s2):
        m1 = s1.max()
        m = max(m1, s2.max())
        l1 = np.exp(s1 - m1).sum() if m1 > -np.inf else 0.0
        return m, l1 * np.exp(m1 - m) + np.exp(s2 - m).sum()

    def plain_python(s1, s2):
        m = l = None
        for block in (list(s1), list(s2)):
            top = max(block)
            if top == -math.inf:
                continue
            new_m = top if m is None else max(m, top)
            l = (0.0 if l is None else l * math.exp(m - new_m)) + sum(math.exp(x - new_m) for x in block)
            m = new_m
        return [m, l]

    assert check_two_block_normaliser(numpy_version, verbose=False)
    assert check_two_block_normaliser(plain_python, verbose=False)

    def no_rescaling(s1, s2):
        m = max(s1.max(), s2.max())
        l1 = np.exp(s1 - s1.max()).sum() if s1.max() > -np.inf else 0.0
        return m, l1 + np.exp(s2 - m).sum()

    result = check_two_block_normaliser(no_rescaling, verbose=False)
    assert not result and any("without rescaling" in msg for msg in result.messages)

    def nan_on_masked_block(s1, s2):
        m1 = s1.max()
        m = max(m1, s2.max())
        return m, np.exp(s1 - m1).sum() * np.exp(m1 - m) + np.exp(s2 - m).sum()

    result = check_two_block_normaliser(nan_on_masked_block, verbose=False)
    assert result.n_passed == result.n_cases - 1 and "NaN" in result.messages[0]
    answers = [numpy_version(np.array([0.0]), np.array([2**-0.5, 2**-1.5]))]
    assert not check_two_block_normaliser(lambda s1, s2: answers[0], verbose=False)  # a hard-coded answer

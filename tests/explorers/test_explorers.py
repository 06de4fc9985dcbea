"""The explorers' Python models: state, checks and ``.result``, read from the model itself (never from HTML).

Changes arrive two ways, and both are tested: from code (``ex.W_Q = ...``,
``ex.set(...)``) and from the browser (``ex.set_state(...)``, what ipywidgets
calls when the front end sends a comm message). Whatever the way, ``.result``
must be attnlib's for the setting the model holds, and a refused value must
leave state and result exactly as they were.
"""

from __future__ import annotations

import json
from html.parser import HTMLParser

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as hs

import attnlib
from attnlib import experiments, explorers, training
from attnlib.explorers import kinds

X3 = attnlib.running_example()
I2 = np.eye(2)
POST_W_V = [[1.0, 0.0], [1.0, 1.0]]
X8 = np.random.default_rng(7).uniform(-1.0, 1.0, size=(8, 4)).round(2)

STEPS = round((kinds.attention.SLIDER["max"] - kinds.attention.SLIDER["min"]) / kinds.attention.SLIDER["step"])
ON_GRID = hs.integers(0, STEPS).map(lambda k: round(kinds.attention.SLIDER["min"] + k * kinds.attention.SLIDER["step"], 2))


def grid_matrix(d: int):
    return hs.lists(hs.lists(ON_GRID, min_size=d, max_size=d), min_size=d, max_size=d)


def pattern(bits: int, n: int) -> np.ndarray:
    return np.array([[(bits >> (i * n + j)) & 1 for j in range(n)] for i in range(n)], dtype=bool)


def scale_for(dk: int) -> bool | float:
    return False if dk == 0 else attnlib.scale_divisor(dk)


def kept(ex) -> dict:
    """The model's state (everything but the ``error`` report) and its result, to compare before/after."""
    s = ex.state_dict()
    s.pop("error")
    return {"state": json.dumps(s, sort_keys=True), "result": _plain(ex.result)}


def _plain(r):
    if r is None:
        return None
    if isinstance(r, attnlib.AttentionResult):
        return (r.weights.tolist(), r.output.tolist())
    if isinstance(r, tuple):
        return tuple(_plain(x) for x in r)
    if isinstance(r, dict):
        return {k: _plain(v) for k, v in r.items()}
    return np.asarray(r).tolist()


def assert_matches_attnlib(ex) -> None:
    """``ex.result`` (or the message) is exactly what attnlib computes for the setting the model holds."""
    mask = ex.mask
    scale = scale_for(ex.dk)
    n = ex.X.shape[0]
    allowed = np.ones((n, n), dtype=bool) if mask is None else mask
    empty = [i for i in range(n) if not allowed[i].any()]
    if not empty:
        direct = attnlib.self_attention(ex.X, ex.W_Q, ex.W_K, ex.W_V, mask=mask, scale=scale)
        assert ex.result is not None and ex.message is None
        for name in ("Q", "K", "V", "scores", "scaled", "weights", "output"):
            assert np.array_equal(getattr(ex.result, name), getattr(direct, name)), name
        return
    assert ex.result is None
    names = ", ".join(ex.tokens[i] for i in empty)
    rows = "query row" if len(empty) == 1 else "query rows"
    assert ex.message == f"{rows} {names} may attend to no key; their weights and outputs are undefined"
    views = ex.shown
    assert [m is not None for m in views.messages] == [i in empty for i in range(n)]
    for i in empty:
        assert views.messages[i] == kinds.attention.no_key_message(ex.tokens[i])
    ok = [i for i in range(n) if i not in empty]
    if ok:
        part = attnlib.attention(views.Q[ok], views.K, views.V, mask=allowed[ok], scale=scale)
        assert np.array_equal(views.weights[ok], part.weights) and np.array_equal(views.output[ok], part.output)


class SentMessages:
    """Records what the model sends to the front end (the comm of a widget without a kernel sends nowhere)."""

    def __init__(self, ex) -> None:
        self.states: list[dict] = []
        original = ex.comm.send

        def send(data=None, metadata=None, buffers=None):
            if data and data.get("method") == "update":
                self.states.append(data["state"])
            return original(data=data, metadata=metadata, buffers=buffers)

        ex.comm.send = send


# ---------------------------------------------------------------------------
# The post's checks and the defaults
# ---------------------------------------------------------------------------


def test_defaults_are_the_running_example():
    ex = explorers.attention_explorer()
    assert np.array_equal(ex.X, X3) and ex.tokens == ["x1", "x2", "x3"]
    assert ex.d_k == 2 and ex.dk == 2 and ex.true_dk == 2 and ex.mask is None and ex.mask_mode == "none"
    assert ex.slider == {"min": -3.0, "max": 3.0, "step": 0.05}
    assert ex.result.weights.round(4)[0].tolist() == [0.4555, 0.2246, 0.3199]
    assert_matches_attnlib(ex)


def test_posts_value_projection_keeps_the_weights_and_moves_the_outputs():
    ex = explorers.attention_explorer()
    before = ex.result.weights.copy()
    ex.W_V = POST_W_V
    assert np.array_equal(ex.result.weights, before)
    assert ex.result.V.tolist() == [[1.0, 0.0], [1.0, 1.0], [1.0, 0.5]]
    assert ex.result.output.round(4)[2].tolist() == [1.0, 0.5]


def test_posts_causal_row_and_unscaled_row():
    ex = explorers.attention_explorer()
    ex.mask = attnlib.CAUSAL
    assert ex.result.weights.round(4)[1].tolist() == [0.3302, 0.6698, 0.0]
    assert ex.mask.astype(int).tolist() == [[1, 0, 0], [1, 1, 0], [1, 1, 1]]
    ex.set(mask=None, d_k=attnlib.NO_SCALING)
    assert ex.d_k is attnlib.NO_SCALING and ex.dk == 0 and ex.divisor == 1.0
    assert ex.result.weights.round(4)[0].tolist() == [0.5065, 0.1863, 0.3072]


def test_playground_calls_keep_working():
    ex = explorers.attention_explorer()
    assert ex.set(W_V=[[1, 0], [1, 1]], mask="causal") is ex
    assert ex.W_V.tolist() == POST_W_V and ex.mask_mode == "causal"
    direct = attnlib.self_attention(ex.X, ex.W_Q, ex.W_K, ex.W_V, mask=attnlib.causal_mask(3))
    assert np.array_equal(direct.weights, ex.result.weights) and np.array_equal(direct.output, ex.result.output)
    ex.reset()
    assert ex.W_V.tolist() == I2.tolist() and ex.mask is None and ex.d_k == 2
    words = ["the", "cat", "sat", "on", "mats"]
    X5 = np.array([[0.1, 0.1], [1.0, 0.1], [0.1, 1.0], [0.3, 0.2], [0.9, 0.2]])
    ex5 = explorers.attention_explorer(X5, words)
    assert ex5.tokens == words and ex5.mask_cells.shape == (5, 5)
    assert_matches_attnlib(ex5)


def test_widgets_is_a_deprecated_alias_of_explorers():
    from attnlib import widgets

    assert attnlib.widgets is widgets and attnlib.explorers is explorers
    for name in explorers.__all__:
        with pytest.warns(DeprecationWarning, match=rf"attnlib\.explorers\.{name}\b"):
            assert getattr(widgets, name) is getattr(explorers, name)
    with pytest.raises(AttributeError):
        widgets.no_such_explorer  # noqa: B018


def test_exercise_six_three_fits_the_slider_range():
    ex = explorers.attention_explorer()
    ex.set(W_Q=3 * np.eye(2))
    direct = attnlib.self_attention(X3, 3 * I2, I2, I2)
    assert np.array_equal(ex.result.weights, direct.weights)


# ---------------------------------------------------------------------------
# Every control over its whole range, from code and from the browser
# ---------------------------------------------------------------------------

EX = explorers.attention_explorer()


@settings(max_examples=150, deadline=None)
@given(
    W_Q=grid_matrix(2),
    W_K=grid_matrix(2),
    W_V=grid_matrix(2),
    dk=hs.sampled_from(kinds.attention.dk_choices_for(2)),
    bits=hs.integers(0, 511),
    browser=hs.booleans(),
)
def test_every_setting_of_the_controls_gives_attnlibs_numbers(W_Q, W_K, W_V, dk, bits, browser):
    cells = pattern(bits, 3)
    if browser:
        EX.set_state({"W_Q": W_Q, "W_K": W_K, "W_V": W_V, "dk": dk, "mask_mode": "custom", "mask_cells": cells.tolist()})
        assert EX.error == ""
    else:
        EX.set(W_Q=W_Q, W_K=W_K, W_V=W_V, d_k=None if dk == 0 else dk, mask=cells)
    assert EX.W_Q.tolist() == W_Q and EX.dk == dk and np.array_equal(EX.mask, cells)
    assert_matches_attnlib(EX)


def test_all_512_masks_of_three_tokens():
    ex = explorers.attention_explorer()
    for bits in range(512):
        cells = pattern(bits, 3)
        ex.set_state({"mask_mode": "custom", "mask_cells": cells.tolist()})
        assert np.array_equal(ex.mask, cells)
        assert_matches_attnlib(ex)
        empty = ~cells.any(axis=1)
        assert (ex.result is None) == bool(empty.any())


@settings(max_examples=40, deadline=None)
@given(
    extremes=hs.lists(hs.sampled_from([kinds.attention.SLIDER["min"], kinds.attention.SLIDER["max"]]), min_size=48, max_size=48),
    dk=hs.sampled_from(kinds.attention.dk_choices_for(4)),
    mode=hs.sampled_from(["none", "causal"]),
)
def test_eight_tokens_of_width_four_at_the_ends_of_the_sliders(extremes, dk, mode):
    ex = explorers.attention_explorer(X8)
    Ws = np.array(extremes).reshape(3, 4, 4)
    ex.set(W_Q=Ws[0], W_K=Ws[1], W_V=Ws[2], d_k=None if dk == 0 else dk, mask=None if mode == "none" else mode)
    assert ex.error == "" and ex.result is not None and np.isfinite(ex.result.weights).all()
    assert_matches_attnlib(ex)


def test_mask_modes_keep_the_cells_the_effective_pattern():
    ex = explorers.attention_explorer()
    ex.set_state({"mask_mode": "causal"})  # the browser sent only the mode: the model fills in the pattern
    assert ex.mask_cells.tolist() == attnlib.causal_mask(3).tolist()
    ex.set_state({"mask_mode": "none"})
    assert ex.mask_cells.all() and ex.mask is None
    assert_matches_attnlib(ex)


def test_presets_draws_and_reset():
    ex = explorers.attention_explorer()
    assert [p["id"] for p in ex.presets] == ["identity", "post"]
    assert len(ex.random_draws) == 12 and ex.initial["dk"] == 2
    first = ex.random_draws[0]
    ex.randomise()
    assert ex.W_Q.tolist() == first["W_Q"] and ex.W_V.tolist() == first["W_V"]
    ex.randomise()
    assert ex.W_K.tolist() == ex.random_draws[1]["W_K"]
    for draw in ex.random_draws:
        for matrix in draw.values():
            values = np.array(matrix)
            assert np.allclose(values / kinds.attention.SLIDER["step"], np.round(values / kinds.attention.SLIDER["step"]))
            assert (np.abs(values) <= 1.5).all()
    ex.set(mask="causal", d_k=64)
    ex.reset()
    assert ex.W_Q.tolist() == I2.tolist() and ex.mask is None and ex.d_k == 2
    assert_matches_attnlib(ex)


# ---------------------------------------------------------------------------
# Refused values: a named ValueError, nothing changes
# ---------------------------------------------------------------------------

BAD = [
    ("W_Q", lambda ex: setattr(ex, "W_Q", [[3.05, 0], [0, 1]])),
    ("W_Q", lambda ex: setattr(ex, "W_Q", [[1, 0, 0], [0, 1, 0]])),
    ("W_K", lambda ex: setattr(ex, "W_K", [[np.nan, 0], [0, 1]])),
    ("W_K", lambda ex: setattr(ex, "W_K", [[np.inf, 0], [0, 1]])),
    ("W_V", lambda ex: setattr(ex, "W_V", "identity")),
    ("W_V", lambda ex: setattr(ex, "W_V", [[1, 0], [0, None]])),
    ("d_k", lambda ex: setattr(ex, "d_k", 5)),
    ("d_k", lambda ex: setattr(ex, "d_k", -1)),
    ("d_k", lambda ex: setattr(ex, "d_k", "2")),
    ("d_k", lambda ex: setattr(ex, "d_k", 2.5)),
    ("d_k", lambda ex: setattr(ex, "dk", 7)),
    ("mask", lambda ex: setattr(ex, "mask", "diagonal")),
    ("mask", lambda ex: setattr(ex, "mask", np.eye(3))),
    ("mask", lambda ex: setattr(ex, "mask", np.ones((2, 2), dtype=bool))),
    ("mask", lambda ex: setattr(ex, "mask_mode", "causl")),
    ("mask", lambda ex: setattr(ex, "mask_cells", [[1, 0, 0], [1, 1, 0], [1, 1, 1]])),
    ("set", lambda ex: ex.set(W_O=I2)),
    ("d_k", lambda ex: ex.set(W_Q=2 * I2, mask="causal", d_k=3.5)),  # all or nothing: W_Q and the mask stay
    ("X", lambda ex: setattr(ex, "X", np.ones((4, 2)))),
    ("tokens", lambda ex: setattr(ex, "tokens", ["a", "b"])),
]


@pytest.mark.parametrize("setting, change", BAD, ids=[f"{s}-{i}" for i, (s, _) in enumerate(BAD)])
def test_refused_change_names_the_setting_and_changes_nothing(setting, change):
    ex = explorers.attention_explorer()
    ex.set(W_V=POST_W_V, mask="causal")
    before = kept(ex)
    with pytest.raises(ValueError, match=rf"^{setting} must be") as err:
        change(ex)
    assert isinstance(err.value, explorers.InvalidSetting) and err.value.setting == setting
    assert kept(ex) == before
    assert_matches_attnlib(ex)


BROWSER_BAD = [
    ("W_Q", {"W_Q": [[9, 0], [0, 1]]}),
    ("W_K", {"W_K": [[1, 0]]}),
    ("d_k", {"dk": 5}),
    ("mask", {"mask_mode": "diagonal"}),
    ("mask", {"mask_cells": [[True, False], [True, True]]}),
    ("W_V", {"W_Q": [[2, 0], [0, 2]], "W_V": [[0, 0], [0, "x"]]}),  # one bad key: the good one is not kept either
]


@pytest.mark.parametrize("setting, sent", BROWSER_BAD, ids=[f"{s}-{i}" for i, (s, _) in enumerate(BROWSER_BAD)])
def test_refused_change_from_the_browser_is_sent_back(setting, sent):
    ex = explorers.attention_explorer()
    before = kept(ex)
    messages = SentMessages(ex)
    ex.set_state(sent)  # no exception escapes into the comm handler
    assert kept(ex) == before
    assert ex.error.startswith(f"{setting} must be")
    restored = {k: v for m in messages.states for k, v in m.items()}
    for key in sent:
        assert restored[key] == ex.state_dict()[key], f"{key}: the page did not get the kept value back"
    assert_matches_attnlib(ex)


def test_the_browser_cannot_change_data():
    ex = explorers.attention_explorer()
    before = kept(ex)
    messages = SentMessages(ex)
    ex.set_state({"X": [[5, 5], [5, 5], [5, 5]], "W_Q": [[2, 0], [0, 2]]})
    assert ex.X.tolist() == X3.tolist() and "X cannot be changed" in ex.error
    assert ex.W_Q.tolist() == [[2.0, 0.0], [0.0, 2.0]]  # the state key of the same message is taken
    assert any("X" in m for m in messages.states)
    assert kept(ex) != before
    assert_matches_attnlib(ex)


def test_new_tokens_of_the_same_shape_from_code_recompute():
    ex = explorers.attention_explorer()
    ex.X = 2 * X3
    ex.tokens = ["a", "b", "c"]
    assert ex.tokens == ["a", "b", "c"] and np.array_equal(ex.X, 2 * X3)
    assert_matches_attnlib(ex)


def test_matrices_read_from_the_model_are_read_only():
    ex = explorers.attention_explorer()
    with pytest.raises(ValueError, match="read-only"):
        ex.W_Q[0, 0] = 2.0
    assert ex.W_Q.tolist() == I2.tolist()


def test_constructor_refuses_bad_input_with_named_errors():
    with pytest.raises(ValueError, match="^X must be"):
        explorers.attention_explorer(np.ones((9, 2)))
    with pytest.raises(ValueError, match="^X must be"):
        explorers.attention_explorer(np.ones((3, 5)))
    with pytest.raises(ValueError, match="^X must be"):
        explorers.attention_explorer([[1, np.nan]])
    with pytest.raises(ValueError, match="^tokens must be"):
        explorers.attention_explorer(X3, ["a", "b"])
    with pytest.raises(ValueError, match="^controls must be"):
        explorers.AttentionExplorer(controls=("sliders",))


# ---------------------------------------------------------------------------
# Rows with nowhere to look, overflow
# ---------------------------------------------------------------------------


def test_row_with_no_allowed_key_gives_its_message():
    ex = explorers.attention_explorer()
    cells = np.ones((3, 3), dtype=bool)
    cells[1] = False
    ex.mask = cells
    assert ex.result is None and ex.error == ""
    assert ex.shown.messages == (None, kinds.attention.no_key_message("x2"), None)
    said = kinds.attention.no_key_message("x2")
    assert said == "x2 may attend to no key, so its softmax is undefined: no weights and no output for this row."
    assert "x2 may attend to no key" in ex.summary_text()
    assert_matches_attnlib(ex)
    ex.mask = np.zeros((3, 3), dtype=bool)
    assert ex.shown.weights.sum() == 0 and ex.message.startswith("query rows x1, x2, x3 ")


@pytest.mark.parametrize("browser", [False, True])
def test_overflow_gives_a_message_and_a_consistent_state(browser):
    ex = explorers.attention_explorer(np.eye(2) * 1e154)
    assert ex.result is not None and ex.error == ""
    bigger = [[2.0, 0.0], [0.0, 1.0]]
    if browser:
        ex.set_state({"W_Q": bigger})
    else:
        ex.W_Q = bigger
    assert ex.W_Q.tolist() == bigger  # the setting is taken; it just cannot be shown
    assert ex.result is None
    assert ex.error == ex.message == kinds.attention.overflow_message("scores")
    data, _ = ex._repr_mimebundle_()
    assert kinds.attention.overflow_message("scores") in data["text/plain"]
    ex.W_Q = I2
    assert ex.result is not None and ex.error == "" and ex.message is None
    assert_matches_attnlib(ex)


def test_overflow_in_the_projections():
    ex = explorers.AttentionExplorer(np.full((2, 2), 1e308), W_Q=2 * I2)
    assert ex.result is None and ex.error == kinds.attention.overflow_message("Q")
    ex.set(W_Q=I2, W_V=[[3, 0], [0, 3]])
    assert ex.result is None and ex.error == kinds.attention.overflow_message("V")


# ---------------------------------------------------------------------------
# The focused explorers
# ---------------------------------------------------------------------------


@settings(max_examples=60, deadline=None)
@given(W_V=grid_matrix(2))
def test_value_projection_explorer_never_moves_the_weights(W_V):
    ex = explorers.value_projection_explorer()
    before = ex.result.weights.copy()
    ex.set_state({"W_V": W_V})
    assert np.array_equal(ex.result.weights, before)
    assert np.array_equal(ex.result.V, X3 @ np.array(W_V))
    assert_matches_attnlib(ex)


def test_value_projection_explorer_controls():
    ex = explorers.value_projection_explorer()
    assert ex.controls == ["W_V", "presets"] and ex.views == ["V", "weights", "output", "plane"]
    assert [p["values"].keys() for p in ex.presets] == [{"W_V": 0}.keys()] * 2 and ex.random_draws == []
    with pytest.raises(ValueError, match="^randomise"):
        ex.randomise()


def test_mask_explorer():
    ex = explorers.mask_explorer()
    assert ex.controls == ["mask"] and ex.presets == [] and ex.random_draws == []
    ex.mask = "causal"
    assert ex.result.weights.round(4)[0].tolist() == [1.0, 0.0, 0.0]
    assert ex.result.weights.round(4)[1].tolist() == [0.3302, 0.6698, 0.0]
    assert_matches_attnlib(ex)


def test_scaling_explorer_over_every_d_k():
    ex = explorers.scaling_explorer()
    assert ex.dk_choices == [1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024] and ex.d_k == 2
    for d_k in ex.dk_choices:
        ex.set_state({"dk": d_k})
        q, k = ex.sample()
        raw = attnlib.scaled_scores(q, k, scale=False)
        assert np.array_equal(ex.result["raw"], raw)
        assert np.array_equal(ex.result["scaled_weights"], attnlib.softmax(raw / np.sqrt(d_k)))
        qs = np.random.default_rng([0, d_k, 1]).standard_normal((2, ex.N_SAMPLES, d_k))
        assert ex.spread() == (float((qs[0] @ qs[1].T).std()), float(attnlib.scaled_scores(qs[0], qs[1]).std()))
    raw, scaled = ex.spread()
    assert 25 < raw < 40 and 0.8 < scaled < 1.2  # d_k = 1024: the spread grows like sqrt(d_k), the scaled one stays near 1
    before = kept(ex)
    for bad in (3, None, 0, 2048, "4"):
        with pytest.raises(ValueError, match="^d_k must be"):
            ex.d_k = bad
    assert kept(ex) == before


def test_scale_comparison_explorer():
    ex = explorers.scale_comparison_explorer()
    for length in np.arange(0.25, 6.0 + 1e-9, 0.25):
        ex.set_state({"length": float(length)})
        raw, scaled = ex.results()
        X = X3 * float(length)
        assert np.array_equal(raw.weights, attnlib.attention(X, X, X, scale=False).weights)
        assert np.array_equal(scaled.weights, attnlib.attention(X, X, X).weights)
    ex.length = 1.0
    before = kept(ex)
    for bad in (float("nan"), float("inf"), 0.0, 6.5, -1, "2", True):
        with pytest.raises(ValueError, match="^length must be"):
            ex.length = bad
        assert ex.length == 1.0 and kept(ex) == before
    ex.set_state({"length": float("nan")})
    assert ex.length == 1.0 and ex.error.startswith("length must be")


def test_head_count_explorer():
    ex = explorers.head_count_explorer()
    assert ex.head_choices == [1, 2, 4, 8] and ex.n_heads == 2 and ex.X.shape == (4, 8)
    assert ex.param_counts == {str(h): 256 for h in (1, 2, 4, 8)}
    for h in ex.head_choices:
        ex.n_heads = h
        out, weights = ex.results()
        direct = attnlib.multi_head_attention(ex.X, ex.X, ex.W_Q, ex.W_K, ex.W_V, ex.W_O, n_heads=h)
        assert np.array_equal(out, direct[0]) and np.array_equal(weights, direct[1]) and weights.shape == (h, 4, 4)
    before = kept(ex)
    for bad in (3, 0, 16, 2.5, "2"):
        with pytest.raises(ValueError, match="^n_heads must be one of") as err:
            ex.n_heads = bad
        assert isinstance(err.value, explorers.InvalidSetting)
    assert kept(ex) == before


def test_block_memory_explorer():
    from attnlib.blocked import key_block
    from attnlib.cost import blocked_working_set_bytes, format_bytes, score_matrix_bytes

    ex = explorers.block_memory_explorer()
    assert (ex.n, ex.block_size, ex.dtype, ex.causal) == (4096, 128, "float32", False)
    for n, b, dtype, causal in ((131072, 1, "bfloat16", True), (512, 1024, "float32", False), (8192, 64, "float32", True)):
        ex.set_state({"n": n, "block_size": b, "dtype": dtype, "causal": causal})
        assert ex.result["dense"] == format_bytes(score_matrix_bytes(n, dtype=dtype))
        assert ex.result["blocked_bytes"] == blocked_working_set_bytes(n, 64, b, dtype=dtype)
        assert ex.block_at(2 if n > b else 1) == key_block(n, n, b, 1 if n > b else 0, causal=causal)
        assert f"{n:,d}" in ex.summary_text()
    before = kept(ex)
    for name, bad in (("n", 1000), ("n", "4096"), ("block_size", 3), ("dtype", "int8"), ("causal", 1), ("causal", "yes")):
        with pytest.raises(ValueError, match=f"^{name} must be") as err:
            setattr(ex, name, bad)
        assert isinstance(err.value, explorers.InvalidSetting)
    assert kept(ex) == before
    ex.set_state({"table": {}})  # data cannot be changed from the page
    assert "table" in ex.error and ex.table == kinds.blocks.block_memory_table()
    with pytest.raises(ValueError, match="^step must be a step from 1 to"):  # block_at names the step (issue 20)
        ex.block_at(10**6)
    ex.set_state({"n": 4096, "block_size": 128, "step": 32})
    assert ex.result["block"].keys == (3968, 4096) and "step 32 of 32" in ex.summary_text()
    ex.block_size = 1024  # four blocks now: the step moves back to the last one
    assert ex.step == 4 and ex.result["block"].keys == (3072, 4096)
    with pytest.raises(ValueError, match="^step must be a step from 1 to 4"):
        ex.step = 5


def test_positional_explorer():
    ex = explorers.positional_explorer()
    assert ex.position == 1 and ex.d_model == 2 and ex.d_model_choices == [2, 4, 6, 8, 10, 12, 14, 16]
    for d_model in ex.d_model_choices:
        for t in range(ex.N_POSITIONS):
            ex.set_state({"position": t, "d_model": d_model})
            pe = attnlib.sinusoidal_encoding(ex.N_POSITIONS, d_model)
            assert np.array_equal(ex.table(), pe)
            assert np.array_equal(ex.result, pe @ pe[t])
        assert ex.frequencies[str(d_model)] == attnlib.positional_frequencies(d_model).tolist()
    before = kept(ex)
    for name, bad in (("position", 12), ("position", -1), ("position", 1.5), ("d_model", 3), ("d_model", 18)):
        with pytest.raises(ValueError, match=f"^{name} must be"):
            setattr(ex, name, bad)
    assert kept(ex) == before


# ---------------------------------------------------------------------------
# The display bundle and the embedded state
# ---------------------------------------------------------------------------


class _Embed(HTMLParser):
    """The contract's structure of the text/html output (not its numbers: those are tested above)."""

    def __init__(self) -> None:
        super().__init__()
        self.outer: dict = {}
        self.state_text = ""
        self.note = ""
        self._in: str | None = None
        self.snapshot_inside_outer = False
        self._depth = 0

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        cls = a.get("class") or ""
        if tag == "div":
            self._depth += 1
            if "attnlib-explorer" in cls.split():
                self.outer = a
            if "attnlib-snapshot" in cls.split():
                self.snapshot_inside_outer = self._depth == 2
        if tag == "script" and "attnlib-state" in cls:
            self._in = "state"
        if tag == "p" and "attnlib-snapshot-note" in cls:
            self._in = "note"

    def handle_endtag(self, tag):
        if tag == "div":
            self._depth -= 1
        if tag in ("script", "p"):
            self._in = None

    def handle_data(self, data):
        if self._in == "state":
            self.state_text += data
        elif self._in == "note":
            self.note += data


ALL = [
    explorers.attention_explorer,
    explorers.value_projection_explorer,
    explorers.mask_explorer,
    explorers.scaling_explorer,
    explorers.scale_comparison_explorer,
    explorers.head_count_explorer,
    explorers.positional_explorer,
    explorers.training_explorer,
    explorers.block_memory_explorer,
]


@pytest.mark.parametrize("make", ALL, ids=[f.__name__ for f in ALL])
def test_display_bundle_embeds_the_state_and_the_snapshot(make):
    ex = make()
    data, _ = ex._repr_mimebundle_()
    assert data["application/vnd.jupyter.widget-view+json"]["model_id"] == ex.model_id
    assert data["text/plain"] == ex.summary_text() == repr(ex)
    page = _Embed()
    page.feed(data["text/html"])
    assert page.outer["data-attnlib-kind"] == ex.kind
    assert json.loads(page.state_text) == json.loads(json.dumps(ex.state_dict()))
    assert page.snapshot_inside_outer and explorers.SNAPSHOT_NOTE in page.note
    assert "_esm" not in ex.state_dict() and "_css" not in ex.state_dict()
    assert set(ex.STATE) <= set(ex.state_dict())
    style = ex.state_dict()["look"]
    assert len(style["lut"]) == len(style["text"]) == 256 and style["neg_inf"] == "\u2212\u221e"
    assert ex._esm == explorers.frontend.module_source(ex.kind) and ex._css == explorers.frontend.css_source()


def test_token_labels_are_escaped_everywhere():
    tokens = ["</script><script>alert(1)</script>", "a&b", '"q"']
    ex = explorers.attention_explorer(X3, tokens)
    cells = np.ones((3, 3), dtype=bool)
    cells[0] = False  # the message row names the token too
    ex.mask = cells
    html_text = ex._repr_mimebundle_()[0]["text/html"]
    assert html_text.count("<script") == 1 and html_text.count("</script>") == 1
    assert "<script>alert" not in html_text and "&lt;/script&gt;&lt;script&gt;alert(1)" in html_text
    assert "a&amp;b" in html_text and "a&b<" not in html_text
    page = _Embed()
    page.feed(html_text)
    assert json.loads(page.state_text)["tokens"] == tokens
    assert ex.shown.messages[0] == kinds.attention.no_key_message(tokens[0])


def test_reference_views_are_the_models_views():
    ex = explorers.attention_explorer(X8[:5, :3])
    ex.set(W_Q=np.full((3, 3), 0.35), mask=np.tril(np.ones((5, 5), dtype=bool), -1), d_k=None)
    ref = kinds.attention.reference_views(ex.state_dict())
    views = ex.shown
    assert ref["messages"] == list(views.messages) and ref["messages"][0] == kinds.attention.no_key_message("x1")
    assert ref["weights"][0] is None and ref["weights"][1:] == views.weights[1:].tolist()
    assert ref["scaled"] == views.scaled.tolist() and ref["divisor"] == 1.0 and ref["error"] == ""


def test_training_explorer_shows_attnlib_recorded_steps():
    ex = explorers.training_explorer()
    run = experiments.learn_previous_token(seed=0, record_steps=kinds.training.RECORD_STEPS)
    probe = experiments.previous_token_probe()
    assert ex.steps == list(kinds.training.RECORD_STEPS) and ex.step == 0
    assert ex.tokens == [f"t{i}" for i in range(6)] and ex.features == list(probe.features)
    for snap in run.snapshots[::5] + run.snapshots[-1:]:
        ex.set_state({"step": snap.step})
        assert ex.result["loss"] == snap.loss
        assert np.array_equal(ex.result["weights"], snap.weights[:6, :6])
        assert np.array_equal(ex.result["bilinear"], snap.params["W_Q"] @ snap.params["W_K"].T)
        assert ex.result["previous"] == training.relation_mass(snap.weights, probe, "previous")[0]
        assert f"Step {snap.step} of 300" in ex.summary_text()
    assert round(ex.result["previous"], 3) == 0.969  # the chapter's last recorded step
    before = kept(ex)
    for bad in (5, -10, 310, None, "300", True, 2.5):
        with pytest.raises(ValueError, match="^step must be"):
            ex.step = bad
    assert kept(ex) == before
    ex.set_state({"step": 7})
    assert ex.step == 300 and ex.error.startswith("step must be")
    ex.set_state({"losses": [0.0] * len(ex.steps)})  # data cannot be changed from the page
    assert ex.losses[0] == run.snapshots[0].loss and "cannot be changed from the page" in ex.error

"""The explorers, driven from code: the numbers they display are attnlib's, whatever the controls say.

Every check reads the HTML the widget shows (parsed like a browser would, ignoring the
screen-reader-only "changed from" text and the arrows) and compares it with attnlib.
"""

from __future__ import annotations

import asyncio
import itertools
import math
from html.parser import HTMLParser

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import attnlib
from attnlib import widgets as aw
from attnlib.plots import format_value

X3 = attnlib.running_example()
I2 = np.eye(2)
X8 = np.random.default_rng(7).uniform(-1.0, 1.0, size=(8, 2)).round(2)


class _Tables(HTMLParser):
    """Collect every ``table.attnlib-view``: cell texts by (i, j), row messages, row sums."""

    def __init__(self) -> None:
        super().__init__()
        self.tables: dict[str, dict] = {}
        self._view: str | None = None
        self._cell: tuple[str, tuple[int, ...]] | None = None
        self._span = 0
        self._buf: list[str] = []

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "table" and "attnlib-view" in (a.get("class") or ""):
            self._view = a["data-view"]
            self.tables[self._view] = {"cells": {}, "messages": {}, "sums": {}}
        elif tag == "td" and self._view is not None:
            if "data-j" in a:
                self._cell = ("cells", (int(a["data-i"]), int(a["data-j"])))
            elif "attnlib-message" in (a.get("class") or ""):
                self._cell = ("messages", (int(a["data-i"]),))
            elif "attnlib-rowsum" in (a.get("class") or ""):
                self._cell = ("sums", (int(a["data-i"]),))
            self._buf = []
        elif tag == "span" and self._cell is not None:
            self._span += 1

    def handle_endtag(self, tag):
        if tag == "span" and self._span:
            self._span -= 1
        elif tag == "td" and self._cell is not None:
            kind, key = self._cell
            self.tables[self._view][kind][key if kind == "cells" else key[0]] = "".join(self._buf).strip()
            self._cell = None
        elif tag == "table":
            self._view = None

    def handle_data(self, data):
        if self._cell is not None and self._span == 0:
            self._buf.append(data)


def tables(html_text: str) -> dict[str, dict]:
    p = _Tables()
    p.feed(html_text)
    return p.tables


def shown(ex, view: str) -> dict:
    return tables(ex.views[view].value)[view]


def as_grid(table: dict) -> list[list[str]]:
    cells = table["cells"]
    if not cells:
        return []
    n_rows = max(i for i, _ in cells) + 1
    n_cols = max(j for _, j in cells) + 1
    return [[cells.get((i, j)) for j in range(n_cols)] for i in range(n_rows)]


def fmt(M) -> list[list[str]]:
    return [[format_value(float(v)) for v in row] for row in np.atleast_2d(M)]


def outlined(ex, view: str) -> int:
    return ex.views[view].value.count("attnlib-changed")


def assert_clean(text: str) -> None:
    low = text.lower()
    assert "nan" not in low.replace("nanmean", ""), "NaN on screen"
    assert "inf" not in low and "traceback" not in low and "error" not in low, "inf/traceback on screen"


# -- the post's numbers ----------------------------------------------------


def test_default_views_are_attnlibs_numbers():
    ex = aw.attention_explorer()
    r = attnlib.self_attention(X3, I2, I2, I2)
    assert as_grid(shown(ex, "weights")) == fmt(r.weights)
    assert as_grid(shown(ex, "output")) == fmt(r.output)
    assert as_grid(shown(ex, "scores")) == fmt(r.scores)
    assert as_grid(shown(ex, "scaled")) == fmt(r.scaled)
    assert as_grid(shown(ex, "Q")) == fmt(r.Q)
    assert shown(ex, "weights")["sums"] == {0: "1.0000", 1: "1.0000", 2: "1.0000"}
    assert as_grid(shown(ex, "weights"))[0] == ["0.4555", "0.2246", "0.3199"]
    assert ex.d_k == 2 and ex.mask is None and ex.message is None
    assert "\u221a2 = 1.4142" in ex.divisor_label.value


def test_post_value_matrix_changes_values_not_weights():
    ex = aw.attention_explorer()
    before = as_grid(shown(ex, "weights"))
    for i, j, v in ((1, 0, 1.0),):  # W_V[1,0] from 0 to 1 by moving its slider
        ex.sliders["W_V"][i][j].value = v
    assert np.array_equal(ex.W_V, [[1.0, 0.0], [1.0, 1.0]])
    assert as_grid(shown(ex, "V")) == [["1.0000", "0.0000"], ["1.0000", "1.0000"], ["1.0000", "0.5000"]]
    assert as_grid(shown(ex, "weights")) == before
    assert outlined(ex, "weights") == 0
    assert outlined(ex, "V") == 2  # v2 and v3 changed in their first coordinate
    expected = attnlib.self_attention(X3, I2, I2, [[1, 0], [1, 1]])
    assert as_grid(shown(ex, "output")) == fmt(expected.output)
    np.testing.assert_array_equal(ex.result.output, expected.output)


def test_causal_mask_row_two():
    ex = aw.attention_explorer()
    ex.mask_mode.value = "causal"
    assert as_grid(shown(ex, "weights"))[1] == ["0.3302", "0.6698", "0.0000"]
    assert as_grid(shown(ex, "scaled"))[0][1:] == ["\u2212\u221e", "\u2212\u221e"]
    np.testing.assert_array_equal(ex.mask, attnlib.causal_mask(3))
    assert as_grid(shown(ex, "weights")) == fmt(attnlib.self_attention(X3, I2, I2, I2, mask=attnlib.causal_mask(3)).weights)
    assert [[cb.value for cb in row] for row in ex.mask_cells] == attnlib.causal_mask(3).tolist()


def test_no_scaling_row_one():
    ex = aw.attention_explorer()
    ex.d_k_control.value = 0
    assert ex.d_k is None and ex.divisor == 1.0
    assert as_grid(shown(ex, "weights"))[0] == ["0.5065", "0.1863", "0.3072"]
    assert "no scaling" in ex.divisor_label.value


@pytest.mark.parametrize("d_k", [1, 3, 64, 512])
def test_d_k_control_divides_by_its_root(d_k):
    ex = aw.attention_explorer()
    ex.d_k_control.value = d_k
    r = attnlib.self_attention(X3, I2, I2, I2, scale=attnlib.scale_divisor(d_k))
    assert math.isclose(ex.result.divisor, math.sqrt(d_k))
    assert as_grid(shown(ex, "scaled")) == fmt(r.scaled)
    assert as_grid(shown(ex, "weights")) == fmt(r.weights)


def test_moving_one_slider_marks_what_changed():
    ex = aw.attention_explorer()
    ex.sliders["W_Q"][0][0].value = 1.5
    assert "W_Q[1,1] moved from 1.00 to 1.50" in ex.status.value
    r = attnlib.self_attention(X3, [[1.5, 0], [0, 1]], I2, I2)
    assert as_grid(shown(ex, "weights")) == fmt(r.weights)
    # q1 and q3 change, q2 = (0, 1) does not
    assert outlined(ex, "Q") == 2
    assert "\u25b2" in ex.views["Q"].value and "changed from 1.0000, now" in ex.views["Q"].value
    ex.sliders["W_Q"][0][0].value = 1.5  # no move, nothing new
    ex.sliders["W_K"][1][1].value = 1.0  # same value: no event
    assert outlined(ex, "Q") == 2


def test_custom_mask_toggle_and_empty_row_message():
    ex = aw.attention_explorer()
    ex.mask_cells[0][1].value = False
    assert ex.mask_mode.value == "custom"
    m = np.ones((3, 3), bool)
    m[0, 1] = False
    assert as_grid(shown(ex, "weights")) == fmt(attnlib.self_attention(X3, I2, I2, I2, mask=m).weights)
    for j in (0, 2):
        ex.mask_cells[0][j].value = False
    assert ex.result is None and "x1 may attend to no key" in ex.message
    w = shown(ex, "weights")
    assert "x1 may attend to no key" in w["messages"][0]
    assert "x1 may attend to no key" in shown(ex, "output")["messages"][0]
    m[0] = False
    rest = attnlib.attention(ex.partial.Q, ex.partial.K, ex.partial.V, mask=m[1:], scale=attnlib.scale_divisor(2))
    assert [w["cells"][(i, j)] for i in (1, 2) for j in range(3)] == [c for row in fmt(rest.weights) for c in row]
    with pytest.raises(ValueError, match="row 0"):
        attnlib.self_attention(X3, I2, I2, I2, mask=m)  # what the explorer avoided calling
    assert_clean(ex.views["weights"].value + ex.views["output"].value + ex.status.value)
    ex.mask_cells[0][0].value = True
    assert ex.message is None and as_grid(shown(ex, "weights"))[0] == ["1.0000", "0.0000", "0.0000"]


def test_presets_and_reset():
    ex = aw.attention_explorer()
    ex.buttons["post"].click()
    np.testing.assert_array_equal(ex.W_V, [[1, 0], [1, 1]])
    ex.buttons["random"].click()
    first = (ex.W_Q, ex.W_K, ex.W_V)
    assert all(np.all(np.abs(w) <= 2) for w in first)
    assert as_grid(shown(ex, "weights")) == fmt(attnlib.self_attention(X3, *first).weights)
    again = aw.attention_explorer()
    again.buttons["random"].click()
    assert all(np.array_equal(a, b) for a, b in zip(first, (again.W_Q, again.W_K, again.W_V))), "random preset is not seeded"
    ex.mask = "causal"
    ex.d_k = None
    ex.buttons["reset"].click()
    assert all(np.array_equal(w, I2) for w in (ex.W_Q, ex.W_K, ex.W_V)) and ex.d_k == 2 and ex.mask is None
    ex.buttons["identity"].click()
    assert as_grid(shown(ex, "weights"))[0] == ["0.4555", "0.2246", "0.3199"]


def test_state_setters_from_code():
    ex = aw.attention_explorer()
    ex.set(W_Q=[[0.5, 0], [0, 0.5]], d_k=4, mask="causal")
    r = attnlib.self_attention(X3, [[0.5, 0], [0, 0.5]], I2, I2, mask=attnlib.causal_mask(3), scale=2.0)
    np.testing.assert_allclose(ex.result.weights, r.weights)
    assert ex.renders >= 1
    ex.mask = np.array([[True, False, False], [True, True, False], [False, False, True]])
    assert ex.mask_mode.value == "custom" and ex.mask[2].tolist() == [False, False, True]


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"X": np.zeros((9, 2))}, "at most 8"),
        ({"X": np.zeros((3, 5))}, "d_model"),
        ({"X": np.zeros((3, 2)), "tokens": ["a"]}, "tokens has 1"),
    ],
)
def test_bad_construction_is_a_clear_error(kwargs, match):
    with pytest.raises(ValueError, match=match):
        aw.attention_explorer(**kwargs)


def test_bad_settings_are_clear_errors():
    ex = aw.attention_explorer()
    with pytest.raises(ValueError, match=r"range \[-2, 2\]"):
        ex.W_Q = [[3, 0], [0, 1]]
    with pytest.raises(ValueError, match=r"\(2, 2\)"):
        ex.W_K = np.eye(3)
    with pytest.raises(ValueError, match="d_k must be"):
        ex.d_k = 5
    with pytest.raises(ValueError, match="boolean"):
        ex.mask = np.ones((3, 3))
    with pytest.raises(ValueError, match="mask must be"):
        ex.mask = "upper"
    with pytest.raises(ValueError, match="unknown setting"):
        ex.set(W_O=I2)


# -- extremes ----------------------------------------------------------------

STEPS = np.round(np.arange(-2.0, 2.0001, 0.05), 2).tolist()
slider_value = st.one_of(st.sampled_from([-2.0, 2.0]), st.sampled_from(STEPS))


def _check_everything(ex, X, W, d_k, mask):
    text = "".join(v.value for v in ex.views.values()) + ex.status.value + ex.summary_text()
    # −∞ (the masked-score symbol) is the only infinity allowed, and only in the scaled view
    assert_clean(text.replace("\u2212\u221e", ""))
    scale = False if d_k is None else attnlib.scale_divisor(d_k)
    full = attnlib.self_attention(X, *W, scale=scale)
    if "scores" in ex.views:
        assert as_grid(shown(ex, "scores")) == fmt(full.scores)
    if "scaled" in ex.views:
        masked = full.scaled if mask is None else full.scaled + attnlib.additive_mask(mask)
        assert as_grid(shown(ex, "scaled")) == fmt(masked)
    if mask is None or mask.any(axis=1).all():
        r = attnlib.self_attention(X, *W, mask=mask, scale=scale)
        assert as_grid(shown(ex, "weights")) == fmt(r.weights)
        assert as_grid(shown(ex, "output")) == fmt(r.output)
        assert ex.message is None
    else:
        empty = set(np.flatnonzero(~mask.any(axis=1)).tolist())
        assert set(shown(ex, "weights")["messages"]) == empty == set(shown(ex, "output")["messages"])
        assert ex.result is None and ex.message
        ok = [i for i in range(len(X)) if i not in empty]
        if ok:
            part = attnlib.attention(full.Q[ok], full.K, full.V, mask=mask[ok], scale=scale)
            grid = shown(ex, "weights")["cells"]
            assert [[grid[(i, j)] for j in range(len(X))] for i in ok] == fmt(part.weights)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    entries=st.lists(slider_value, min_size=12, max_size=12),
    d_k=st.sampled_from(aw.DK_CHOICES),
    mask_bits=st.integers(0, 2**9 - 1),
    mode=st.sampled_from(["none", "causal", "custom"]),
)
def test_any_setting_of_every_control_shows_attnlibs_numbers(entries, d_k, mask_bits, mode):
    ex = aw.attention_explorer()
    W = [np.array(entries[4 * m : 4 * m + 4]).reshape(2, 2) for m in range(3)]
    for name, w in zip(("W_Q", "W_K", "W_V"), W):
        for i, j in itertools.product(range(2), range(2)):
            ex.sliders[name][i][j].value = float(w[i, j])
    ex.d_k_control.value = d_k
    ex.mask_mode.value = mode
    if mode == "custom":
        for i, j in itertools.product(range(3), range(3)):
            ex.mask_cells[i][j].value = bool(mask_bits >> (3 * i + j) & 1)
    _check_everything(ex, X3, W, None if d_k == 0 else d_k, ex.mask)


def test_every_mask_pattern_of_three_tokens():
    ex = aw.attention_explorer()
    for bits in range(2**9):
        m = np.array([[bool(bits >> (3 * i + j) & 1) for j in range(3)] for i in range(3)])
        ex.mask = m
        _check_everything(ex, X3, [I2, I2, I2], 2, m)


@pytest.mark.parametrize("corner", list(itertools.product([-2.0, 2.0], repeat=3)))
def test_all_sliders_at_their_ends_with_eight_tokens(corner):
    ex = aw.attention_explorer(X8 * 2, [f"t{i}" for i in range(8)])
    W = [np.full((2, 2), c) for c in corner]
    W[1][0, 1] = -corner[1]
    ex.set(W_Q=W[0], W_K=W[1], W_V=W[2], d_k=None, mask="causal")
    _check_everything(ex, X8 * 2, W, None, attnlib.causal_mask(8))
    ex.d_k = 512
    _check_everything(ex, X8 * 2, W, 512, attnlib.causal_mask(8))


@settings(max_examples=25, deadline=None)
@given(rows=st.lists(st.integers(0, 2**8 - 1), min_size=8, max_size=8))
def test_eight_token_masks_including_empty_rows(rows):
    ex = aw.attention_explorer(X8)
    m = np.array([[bool(r >> j & 1) for j in range(8)] for r in rows])
    ex.mask = m
    _check_everything(ex, X8, [np.eye(2)] * 3, 2, m)


# -- display bundle, snapshot, speed guards ----------------------------------------


def test_display_bundle_has_live_widget_and_static_snapshot():
    ex = aw.attention_explorer()
    bundle = ex._repr_mimebundle_()
    assert bundle["application/vnd.jupyter.widget-view+json"]["model_id"] == ex.widget.model_id
    snap = bundle["text/html"]
    assert aw.SNAPSHOT_NOTE in snap
    assert as_grid(tables(snap)["weights"])[0] == ["0.4555", "0.2246", "0.3199"]
    assert "<caption" in snap and 'role="img"' in snap
    text = bundle["text/plain"]
    assert "x1: 0.4555  0.2246  0.3199" in text and "o1: 0.6155  0.3845" in text


def test_bursts_render_once_inside_an_event_loop():
    ex = aw.attention_explorer(X8)

    async def burst():
        before = ex.renders
        for k in range(30):  # like 30 slider messages that arrived together
            ex.sliders["W_Q"][0][0].value = round(1.0 - 0.05 * (k + 1), 2)
        assert ex.renders == before, "rendered before the burst ended"
        await asyncio.sleep(0)
        return ex.renders - before

    assert asyncio.run(burst()) == 1
    assert math.isclose(ex.W_Q[0, 0], -0.5)
    expected = attnlib.self_attention(X8, [[-0.5, 0], [0, 1]], I2, I2)
    assert as_grid(shown(ex, "weights")) == fmt(expected.weights)


def test_result_is_fresh_even_while_a_render_is_pending():
    ex = aw.attention_explorer()

    async def change_and_read():
        ex.d_k_control.value = 0
        return ex.result.weights.round(4)[0].tolist()

    assert asyncio.run(change_and_read()) == [0.5065, 0.1863, 0.3072]


# -- focused explorers ---------------------------------------------------------


def test_value_projection_explorer_weights_stay():
    ex = aw.value_projection_explorer()
    assert set(ex.views) == {"V", "weights", "output", "plane"}
    before = as_grid(shown(ex, "weights"))
    ex.sliders["W_V"][1][0].value = 1.0
    assert as_grid(shown(ex, "V")) == [["1.0000", "0.0000"], ["1.0000", "1.0000"], ["1.0000", "0.5000"]]
    assert as_grid(shown(ex, "weights")) == before and outlined(ex, "weights") == 0
    ex.sliders["W_V"][0][1].value = -2.0
    assert as_grid(shown(ex, "output")) == fmt(attnlib.self_attention(X3, I2, I2, ex.W_V).output)
    assert "o3 at" in ex.views["plane"].value


def test_mask_explorer_every_pattern():
    ex = aw.mask_explorer()
    assert set(ex.views) == {"scaled", "weights", "output"}
    for bits in range(0, 2**9, 7):
        m = np.array([[bool(bits >> (3 * i + j) & 1) for j in range(3)] for i in range(3)])
        for i, j in itertools.product(range(3), range(3)):
            ex.mask_cells[i][j].value = bool(m[i, j])
        _check_everything(ex, X3, [I2] * 3, 2, m)


def test_scaling_explorer_over_its_whole_range():
    ex = aw.scaling_explorer()
    for d_k in ex.d_k_control.options:
        ex.d_k_control.value = d_k
        q, k = ex.sample()
        assert q.shape == (1, d_k) and k.shape == (ex.N_KEYS, d_k)
        t = tables(ex.view.value)
        raw = attnlib.scaled_scores(q, k, scale=False)
        scaled = attnlib.scaled_scores(q, k)
        assert as_grid(t["scores"]) == fmt(np.vstack([raw, scaled]))
        assert as_grid(t["weights"]) == fmt(np.vstack([attnlib.softmax(raw), attnlib.softmax(scaled)]))
        sd_raw, sd_scaled = ex.spread()
        assert 0.8 * math.sqrt(d_k) < sd_raw < 1.2 * math.sqrt(d_k) and 0.8 < sd_scaled < 1.2
        assert f"{sd_raw:.4f} unscaled" in ex.view.value
        assert_clean(ex.view.value + ex.summary_text())


def test_scale_comparison_explorer():
    ex = aw.scale_comparison_explorer()
    t = tables(ex.view.value)
    assert as_grid(t["unscaled"])[0] == ["0.5065", "0.1863", "0.3072"]
    assert as_grid(t["scaled"])[0] == ["0.4555", "0.2246", "0.3199"]
    for c in (0.25, 6.0):
        ex.length_control.value = c
        raw = attnlib.attention(X3 * c, X3 * c, X3 * c, scale=False)
        assert as_grid(tables(ex.view.value)["unscaled"]) == fmt(raw.weights)
        assert_clean(ex.view.value)
    assert "0.5065" in aw.scale_comparison_explorer().summary_text()


def test_head_count_explorer_every_option():
    ex = aw.head_count_explorer()
    for h in (1, 2, 4, 8):
        ex.heads_control.value = h
        t = tables(ex.view.value)
        _, w = attnlib.multi_head_attention(ex.X, ex.X, ex.W_Q, ex.W_K, ex.W_V, ex.W_O, n_heads=h)
        assert sorted(t) == sorted(f"head{r}" for r in range(h))
        for r in range(h):
            assert as_grid(t[f"head{r}"]) == fmt(w[r])
        assert "= 256, whatever the number of heads" in ex.view.value
        assert_clean(ex.view.value)


def test_positional_explorer_every_position_and_width():
    ex = aw.positional_explorer()
    assert as_grid(tables(ex.view.value)["pe"])[:3] == [["0.0000", "1.0000"], ["0.8415", "0.5403"], ["0.9093", "-0.4161"]]
    for d_model in range(2, 17, 2):
        ex.d_model_control.value = d_model
        for t in (0, ex.N_POSITIONS - 1):
            ex.position_control.value = t
            pe = attnlib.sinusoidal_encoding(ex.N_POSITIONS, d_model)
            got = tables(ex.view.value)
            assert as_grid(got["pe"]) == fmt(pe)
            assert as_grid(got["similarity"]) == fmt((pe @ pe[t])[:, None])
            assert_clean(ex.view.value)


@pytest.mark.parametrize(
    "make",
    [aw.attention_explorer, aw.value_projection_explorer, aw.mask_explorer, aw.scaling_explorer, aw.scale_comparison_explorer,
     aw.head_count_explorer, aw.positional_explorer],
)
def test_every_explorer_has_a_snapshot_and_text(make):
    bundle = make()._repr_mimebundle_()
    assert {"application/vnd.jupyter.widget-view+json", "text/html", "text/plain"} <= set(bundle)
    assert aw.SNAPSHOT_NOTE in bundle["text/html"] and tables(bundle["text/html"])
    assert any(ch.isdigit() for ch in bundle["text/plain"])


def test_matrix_html_rejects_nan():
    with pytest.raises(ValueError, match="NaN"):
        aw.matrix_html([[np.nan]])


@given(st.floats(-1e6, 1e6, allow_nan=False))
def test_fast_formatter_agrees_with_plots(v):
    assert aw._fmt(v) == format_value(v)

"""The induction explorer (chapter 17) live on a static page, in chromium: typing moves both maps and the predictions.

The maps are drawn on canvases (48 x 48 cells would not fit a page as tables); the numbers drawn are
kept on each canvas (``attnlibValues``) and compared here, the predictions are a table. The page is
the explorer's own cell output (``text/html``) with the files ``frontend.write_modules``
writes, as the web book serves them; no book build is needed. The weights are a seeded model of the
chapter's shape (the golden cases hold the JavaScript to attnlib on random weights; this test holds
what the page *shows* after key presses, a mode change and a shared link to attnlib's numbers). Each map's
canvas is sized to the tokens (no blank band under a short text; the full size at 48 tokens), its backing
store at the device pixel ratio (the page runs at ratio 2).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from support.browser import browser_context
from support.servers import serve

import attnlib.explorers as explorers
from attnlib import induction
from attnlib.explorers import frontend
from attnlib.explorers.kinds.induction import induction_view
from attnlib.formatting import format_value

pytestmark = pytest.mark.slow

MAP_VALUES = """(view) => { const c = document.querySelector(`.attnlib-live canvas[data-view="${view}"]`);
  return {values: c.attnlibValues, label: c.getAttribute('aria-label')}; }"""
PREDICTIONS = """() => [...document.querySelectorAll('.attnlib-live table[data-view=predictions] tbody tr:not([hidden])')].map(tr =>
  [tr.querySelector('th').textContent, ...[...tr.querySelectorAll('td')].map(td => td.textContent)])"""
MAP_SIZES = """() => [...document.querySelectorAll('.attnlib-live canvas.attnlib-map')].map(c =>
  ({view: c.dataset.view, css: [c.clientWidth, c.clientHeight], store: [c.width, c.height], ratio: window.devicePixelRatio}))"""
INKS_ARE = """(ink) => [...document.querySelectorAll('.attnlib-live canvas.attnlib-map')].every(c => c.attnlibInk === ink)"""
# the maps' geometry in induction.js: a gutter of 56 px for the labels, cells of 22 px while they fit in 360 px
GUTTER, MAX_CELL, FULL = 56, 22, 360


def _expected(data: dict, text: str, mode: str) -> dict:
    v = induction_view(data, text, mode)
    maps = {f"layer{layer + 1}-head0": [[format_value(float(x), 2) for x in row] for row in v["layers"][layer][0]] for layer in range(2)}
    rows = [[f"{i}:{t}", p, format_value(q, 2)] for i, (t, p, q) in enumerate(zip(v["labels"], v["predicted_labels"], v["probability"]))]
    return {"maps": maps, "predictions": rows}


def _shown(page) -> dict:
    maps = {}
    for view in ("layer1-head0", "layer2-head0"):
        got = page.evaluate(MAP_VALUES, view)
        n = len(got["values"])
        assert got["label"].startswith(f"layer {view[5]}, head 1: {n} by {n} attention weights"), got["label"]  # heads counted from 1
        maps[view] = [[format_value(float(x), 2) for x in row] for row in got["values"]]
    return {"maps": maps, "predictions": page.evaluate(PREDICTIONS)}


def _check_map_sizes(page, n: int) -> None:
    """Both maps are drawn on a canvas sized to the n tokens (no blank band under a short text), the full size at 48 tokens."""
    side = min(GUTTER + MAX_CELL * n, FULL)
    sizes = page.evaluate(MAP_SIZES)
    assert len(sizes) == 2
    for c in sizes:
        assert c["css"] == [side, side], f"{c['view']} at {n} tokens: {c['css']} px, not {side} x {side}"
        assert c["ratio"] == 2 and c["store"] == [2 * side, 2 * side], f"{c['view']}: backing store {c['store']} at ratio {c['ratio']}"


def test_typing_moves_both_maps_and_the_predictions_and_a_link_restores_the_text(tmp_path):
    model = induction.book_model()
    params = induction.book_run(0, n_steps=300).final_params
    ex = explorers.induction_explorer(params, model)
    data = ex.weights
    site = tmp_path / "site"
    frontend.write_modules(site / "_explorers")
    html = ex._repr_mimebundle_()[0]["text/html"]
    page_html = (
        '<!doctype html><html lang="en"><head><meta charset="utf-8"><link rel="icon" href="data:,"><title>induction</title></head>'
        f'<body><main>{html}</main><script type="module" src="_explorers/host.js"></script></body></html>'
    )
    (site / "index.html").write_text(page_html, encoding="utf-8")
    with serve(site) as base, browser_context(tmp_path / "chromium", device_scale_factor=2) as (context, blocker):
        page = context.new_page()
        errors: list[str] = []
        page.on("pageerror", lambda e: errors.append(str(e)))
        page.goto(base + "index.html")
        page.wait_for_function("() => document.querySelector('div.attnlib-explorer.attnlib-mounted') !== null", timeout=20_000)
        assert _shown(page) == _expected(data, ex.text, ex.mode)
        _check_map_sizes(page, 6)  # the default text: 6 words, a map of 188 px
        box = page.locator(".attnlib-live input.attnlib-text")
        box.click()
        page.keyboard.press("End")
        page.keyboard.type(" the cat")
        page.wait_for_function("() => document.querySelector('.attnlib-live .attnlib-facts').textContent.startsWith('8 tokens')")
        text = box.input_value()
        assert text == "the cat sat on the mat the cat"
        assert _shown(page) == _expected(data, text, "words")
        _check_map_sizes(page, 8)
        page.locator(".attnlib-live select.attnlib-mode").select_option("letters")
        page.wait_for_function("() => document.querySelector('.attnlib-live .attnlib-facts').textContent.startsWith('23 tokens')")
        assert _shown(page) == _expected(data, text, "letters")
        _check_map_sizes(page, 23)  # more than 13 tokens: the full size, the cells shrink
        # more than 48 letters: the rest is left out, and the page says so
        page.keyboard.press("End")
        box.press("End")
        box.type(" and the dog sat on the log again and again")
        page.wait_for_function("() => document.querySelector('.attnlib-live .attnlib-facts').textContent.startsWith('48 tokens')")
        assert "left out" in page.locator(".attnlib-live .attnlib-error").inner_text()
        long_text = box.input_value()
        assert _shown(page) == _expected(data, long_text, "letters")
        _check_map_sizes(page, 48)
        # a theme switch redraws the labels in the theme's text colour (they were drawn once, in the first one's)
        assert page.evaluate(INKS_ARE, "rgb(26, 26, 26)")  # explorer.css: the light theme's text colour
        page.evaluate("() => { document.documentElement.dataset.theme = 'dark'; }")
        page.wait_for_function(INKS_ARE, arg="rgb(230, 230, 230)", timeout=5_000)
        page.locator(".attnlib-live button.attnlib-copy-link").click()
        fresh = context.new_page()
        fresh.goto(page.url)
        fresh.wait_for_function("() => document.querySelector('div.attnlib-explorer.attnlib-mounted') !== null", timeout=20_000)
        assert fresh.locator(".attnlib-live input.attnlib-text").input_value() == long_text
        assert fresh.locator(".attnlib-live select.attnlib-mode").input_value() == "letters"
        assert _shown(fresh) == _expected(data, long_text, "letters")
        assert not errors and not blocker.blocked


# a reader's own text of 24 letters, with accents, digits, an emoji and capitals (issue 45, item 7)
OWN_TEXT = "Déjà vu: a cat 🐈 sat on 2 mats, a cat sat!"
LABELS = """(view) => { const c = document.querySelector(`.attnlib-live canvas[data-view="${view}"]`);
  return {...c.attnlibLabels, label: c.getAttribute('aria-label'),
          detail: c.closest('figure').querySelector('.attnlib-map-detail').textContent,
          box: c.getBoundingClientRect().toJSON()}; }"""
NOTES = """() => Object.fromEntries([...document.querySelectorAll('.attnlib-live .attnlib-induction-note')].map(p =>
  [p.dataset.note, p.hidden ? '' : p.textContent]))"""


def _page(tmp_path, ex) -> Path:
    site = tmp_path / "site"
    frontend.write_modules(site / "_explorers")
    html = ex._repr_mimebundle_()[0]["text/html"]
    (site / "index.html").write_text(
        '<!doctype html><html lang="en"><head><meta charset="utf-8"><link rel="icon" href="data:,"><title>induction</title></head>'
        f'<body><main>{html}</main><script type="module" src="_explorers/host.js"></script></body></html>',
        encoding="utf-8",
    )
    return site


def test_own_text_labels_stay_readable_and_left_out_characters_and_unknown_predictions_are_explained(tmp_path):
    """24 letters with accents, digits and an emoji: every token labelled in full at 10 px (no 1-letter labels), the
    whole token on hover and with the arrow keys, the left-out characters named, a "#k" prediction explained."""
    model = induction.book_model()
    params = induction.book_run(0, n_steps=300).final_params
    ex = explorers.induction_explorer(params, model)
    data = ex.weights
    letters = induction_view(data, OWN_TEXT, "letters")
    assert len(letters["ids"]) == 24 and letters["dropped"] == ["é", "à", "🐈", "2"], letters["dropped"]
    with serve(_page(tmp_path, ex)) as base, browser_context(tmp_path / "chromium", device_scale_factor=2) as (context, blocker):
        page = context.new_page()
        errors: list[str] = []
        page.on("pageerror", lambda e: errors.append(str(e)))
        page.goto(base + "index.html")
        page.wait_for_function("() => document.querySelector('div.attnlib-explorer.attnlib-mounted') !== null", timeout=20_000)
        assert page.evaluate(NOTES) == {"dropped": "", "predicted": "", "wrapped": ""}  # the default text: nothing to say
        box = page.locator(".attnlib-live input.attnlib-text")
        box.fill(OWN_TEXT)
        page.locator(".attnlib-live select.attnlib-mode").select_option("letters")
        page.wait_for_function("() => document.querySelector('.attnlib-live .attnlib-facts').textContent.startsWith('24 tokens')")
        assert _shown(page) == _expected(data, OWN_TEXT, "letters")
        notes = page.evaluate(NOTES)
        assert notes == {"dropped": letters["dropped_note"], "predicted": letters["predicted_note"], "wrapped": letters["wrapped_note"]}
        assert notes["dropped"].startswith("Left out: é à 🐈 2.") and "a to z" in notes["dropped"]
        for view in ("layer1-head0", "layer2-head0"):
            got = page.evaluate(LABELS, view)
            assert got["font"] >= 10 and got["step"] == 1 and got["shown"] == list(range(24)), got
            assert "Tokens: 0:d, 1:j, 2:v" in got["label"]
        # pointing at a cell names both tokens in full and gives the weight
        got = page.evaluate(LABELS, "layer2-head0")
        cell = (got["box"]["width"] - GUTTER) / 24
        page.mouse.move(got["box"]["x"] + GUTTER + 2.5 * cell, got["box"]["y"] + GUTTER + 5.5 * cell)
        w = format_value(float(letters["layers"][1][0][5][2]), 2)
        assert page.evaluate(LABELS, "layer2-head0")["detail"] == f"query 5:\u201cc\u201d, key 2:\u201cv\u201d: weight {w}."
        # words: long words are written whole; a prediction "#k" is explained under the table
        page.locator(".attnlib-live select.attnlib-mode").select_option("words")
        words = induction_view(data, OWN_TEXT, "words")
        facts = "document.querySelector('.attnlib-live .attnlib-facts').textContent"
        page.wait_for_function(f"() => {facts}.startsWith('{len(words['ids'])} tokens')")
        assert _shown(page) == _expected(data, OWN_TEXT, "words")
        notes = page.evaluate(NOTES)
        assert notes == {"dropped": words["dropped_note"], "predicted": words["predicted_note"], "wrapped": words["wrapped_note"]}
        assert notes["dropped"].endswith("and they split words.")
        # the keyboard: the map takes the focus, the arrow keys move over its cells
        page.locator('.attnlib-live canvas[data-view="layer1-head0"]').focus()
        page.keyboard.press("ArrowUp")
        n = len(words["ids"])
        detail = page.evaluate(LABELS, "layer1-head0")["detail"]
        first, before_last = words["labels"][0], words["labels"][n - 2]
        assert detail.startswith(f"query {n - 2}:\u201c{before_last}\u201d, key 0:\u201c{first}\u201d: weight"), detail
        assert not errors and not blocker.blocked


def test_a_prediction_outside_the_text_is_explained():
    """The view's note on "#k" predictions (the browser shows the same text: the golden cases hold it)."""
    model = induction.InductionModel(vocab_size=32, n_positions=48, d_model=8)
    data = explorers.induction_explorer(model.init(1, std=1.0), model).weights
    found = {}
    for text in ("the cat sat", "a b a b c", "one two three one", "x y z x y z w"):
        for mode in ("words", "letters"):
            v = induction_view(data, text, mode)
            unknown = sorted({t for t, lab in zip(v["predicted"], v["predicted_labels"]) if lab.startswith("#")})
            assert bool(unknown) == bool(v["predicted_note"]), (text, mode, v["predicted_note"])
            if unknown:
                assert v["predicted_note"].startswith(", ".join(f"#{t}" for t in unknown) + ": a token id that no ")
                found[mode] = True
    assert found == {"words": True, "letters": True}, "no text here gave a #k prediction: choose others"


def test_words_that_share_a_token_id_after_the_ids_wrap_are_explained():
    """Past the model's 32 ids, words are numbered from 0 again: the view names the first pair that shares an id (the
    browser shows the same text: the golden cases hold it), and says nothing while every word has its own id."""
    model = induction.InductionModel(vocab_size=32, n_positions=48, d_model=8)
    data = explorers.induction_explorer(model.init(1, std=1.0), model).weights
    words = [f"w{c}{d}" for c in "abcdefghijklmn" for d in "xyz"][:40]
    assert induction_view(data, " ".join(words[:32]), "words")["wrapped_note"] == ""
    assert induction_view(data, "the cat sat on the mat", "words")["wrapped_note"] == ""
    v = induction_view(data, " ".join(words), "words")
    assert v["ids"][32:] == list(range(8))
    assert v["wrapped_note"].startswith("Your text has 40 distinct words, but the model knows only 32 token ids")
    assert f'"{words[32]}" and "{words[0]}" are the same token (id 0)' in v["wrapped_note"]
    assert "(and 7 more such pairs)" in v["wrapped_note"]
    assert induction_view(data, " ".join(words), "letters")["wrapped_note"] == ""  # a to z are 0 to 25: no wrap

"""The explorers live in the static web book: Debian chromium, every host but 127.0.0.1 blocked, no kernel.

On the playground and on every chapter page with an explorer, the test moves a slider with the
keyboard and with the mouse, picks a d_k, toggles mask cells (down to a query row with no allowed
key), and after every step reads the setting back from the page's controls and checks that every
table on the page shows attnlib's numbers for it (``tests/explorer_support.py``). It also checks that
"copy link" puts the setting into the URL and a fresh page opened at that URL shows the same setting,
that a bad link is ignored with a message, that nothing is requested from another host and nothing
is logged as an error, that the layout keeps cause and effect on one 1280x800 screen and reflows at
390 px, and that with JavaScript disabled the page still shows the static snapshot.
Screenshots go to ``test-artifacts/explorers/``.
"""

from __future__ import annotations

import base64
import json
import re
import time
from dataclasses import dataclass
from pathlib import Path

import pytest
from support.browser import browser_contexts
from support.explorers import READ_EXPLORER_JS, mismatches
from support.paths import ARTIFACTS
from support.servers import serve

from attnlib.explorers import frontend
from attnlib.explorers.kinds.attention import no_key_message

pytestmark = pytest.mark.slow

# page (chapter number) -> the kind of explorer its widget cell shows (a page may hold more, e.g. in an exercise)
PAGES = {
    "playground": "attention",
    "03": "attention",
    "05": "scaling",
    "06": "attention",
    "07": "scale_comparison",
    "08": "head_count",
    "09": "attention",
    "11": "positional",
    "14": "training",
    "15": "blocks",
}
KIND = re.compile(r'<div class="attnlib-explorer" data-attnlib-kind="([a-z_]+)"')
SHOTS = ARTIFACTS / "explorers"
MOUNTED_JS = "(n) => document.querySelectorAll('div.attnlib-explorer.attnlib-mounted').length === n"


def _resolve_pages(html: Path) -> dict[str, tuple[str, list[str]]]:
    """Each chapter's built page (found by its number) and the kinds of the explorers on it, in page order."""
    out = {}
    for name, kind in PAGES.items():
        found = sorted((html / "chapters").glob(f"{name}*.html"))
        assert len(found) == 1, f"no single built page for chapter {name}: {found}"
        kinds = KIND.findall(found[0].read_text(encoding="utf-8"))
        assert kind in kinds, f"{found[0].name}: no {kind} explorer (found {kinds})"
        out[name] = (found[0].relative_to(html).as_posix(), kinds)
    return out


@dataclass
class Site:
    base: str
    context: object
    blocker: object
    pages: dict
    no_js: object

    def __iter__(self):
        return iter((self.base, self.context, self.blocker, self.pages))


@pytest.fixture(scope="module")
def site(web_html, tmp_path_factory):
    pages = _resolve_pages(web_html)
    profiles = [
        (tmp_path_factory.mktemp("chromium-explorers"), {"viewport": {"width": 1280, "height": 800}}),
        (tmp_path_factory.mktemp("chromium-no-js"), {"java_script_enabled": False}),
    ]
    with serve(web_html) as base, browser_contexts(profiles) as [(context, blocker), (no_js, _)]:
        yield Site(base, context, blocker, pages, no_js)


class Watch:
    """Console errors, uncaught exceptions and failed requests of one page."""

    def __init__(self, page) -> None:
        self.errors: list[str] = []
        page.on("console", lambda m: self.errors.append(f"console.{m.type}: {m.text}") if m.type in ("error", "warning") else None)
        page.on("pageerror", lambda e: self.errors.append(f"uncaught: {e}"))
        page.on("requestfailed", lambda r: self.errors.append(f"failed request {r.url}"))


def _open(context, url: str, count: int):
    page = context.new_page()
    watch = Watch(page)
    page.goto(url, wait_until="load")
    page.wait_for_function(MOUNTED_JS, arg=count, timeout=20_000)
    return page, watch


def _read(page, index: int) -> dict:
    return page.evaluate(READ_EXPLORER_JS, index)


def _agrees(page, index: int, step: str) -> dict:
    """The explorer's tables equal attnlib's numbers for the setting its controls show (polled briefly)."""
    deadline = time.monotonic() + 3
    while True:
        info = _read(page, index)
        bad = mismatches(info)
        if not bad or time.monotonic() > deadline:
            break
        page.wait_for_timeout(50)
    assert info["mounted"] and info["tables"], f"{step}: no live tables"
    assert not bad, f"{step}: the page's numbers differ from attnlib's for {info['controls']}: {bad}"
    return info


def _explorer(page, index: int):
    return page.locator("div.attnlib-explorer").nth(index).locator(".attnlib-live")


def _exercise(page, index: int, kind: str) -> list[str]:
    """Every kind of control of one explorer, each followed by the check; returns what was done."""
    ex = _explorer(page, index)
    done = []
    start = _agrees(page, index, "initial setting")
    ranges = ex.locator("input[type=range]")
    if ranges.count():
        first = ranges.first
        first.focus()
        before = first.input_value()
        page.keyboard.press("ArrowRight")
        page.keyboard.press("ArrowRight")
        if first.input_value() == before:  # at the top of its range
            page.keyboard.press("ArrowLeft")
        assert first.input_value() != before, "the keyboard did not move the slider"
        _agrees(page, index, f"keyboard on {first.get_attribute('aria-label')}")
        done.append("keyboard slider")
        last = ranges.last
        box = last.bounding_box()
        before = last.input_value()
        page.mouse.click(box["x"] + box["width"] * 0.8, box["y"] + box["height"] / 2)
        if last.input_value() == before:
            page.mouse.click(box["x"] + box["width"] * 0.2, box["y"] + box["height"] / 2)
        assert last.input_value() != before, "the mouse did not move the slider"
        _agrees(page, index, f"mouse on {last.get_attribute('aria-label')}")
        done.append("mouse slider")
    dk = ex.locator("select.attnlib-dk")
    if dk.count():
        for value in ("0", "512"):
            dk.select_option(value)
            _agrees(page, index, f"d_k = {value}")
        done.append("d_k")
    cells = ex.locator(".attnlib-mask-grid input[type=checkbox]")
    if cells.count():
        n = len(start["data"]["tokens"])
        target = ex.locator(f".attnlib-mask-{min(1, n - 1)}-{n - 1}")
        target.click()
        assert _read(page, index)["controls"]["mask_mode"] == "custom"
        _agrees(page, index, "mask cell toggled with the mouse")
        # keyboard: tick off the whole first row, so query 1 may attend to no key
        for j in range(n):
            box = ex.locator(f".attnlib-mask-0-{j}")
            if box.is_checked():
                box.focus()
                page.keyboard.press("Space")
        info = _agrees(page, index, "query row 1 with no allowed key")
        assert info["tables"]["weights"][0] == {"message": no_key_message(start["data"]["tokens"][0])}
        done.append("mask cells")
    return done


@pytest.mark.parametrize("name", list(PAGES))
def test_explorers_are_live_and_agree_with_attnlib(site, name):
    base, context, blocker, pages = site
    real, kinds = pages[name]
    blocked_before = len(blocker.blocked)
    page, watch = _open(context, base + real, len(kinds))
    try:
        assert [_read(page, i)["kind"] for i in range(len(kinds))] == kinds
        # the snapshot is hidden, the live explorer and its note are shown
        first = page.locator("div.attnlib-explorer").first
        assert not first.locator(".attnlib-snapshot").is_visible() and first.locator(".attnlib-live-note").is_visible()
        for i, kind in enumerate(kinds):
            done = _exercise(page, i, kind)
            assert "keyboard slider" in done or "mask cells" in done, f"explorer {i}: nothing to move"
        SHOTS.mkdir(parents=True, exist_ok=True)
        first.scroll_into_view_if_needed()
        page.screenshot(path=str(SHOTS / f"{Path(real).stem}-moved.png"))
        # copy link -> a fresh page at that URL shows the same setting and agrees with attnlib
        settings = [_read(page, i)["controls"] for i in range(len(kinds))]
        for i in range(len(kinds)):
            _explorer(page, i).locator("button.attnlib-copy-link").click()
        url = page.url
        assert all(f"e{i + 1}=" in url for i in range(len(kinds))), url
        fresh, fresh_watch = _open(context, url, len(kinds))
        for i in range(len(kinds)):
            assert _read(fresh, i)["controls"] == settings[i], f"explorer {i}: the link did not restore the setting"
            _agrees(fresh, i, "restored from the link")
        assert not fresh_watch.errors, fresh_watch.errors
        fresh.close()
    finally:
        page.close()
    assert not watch.errors, f"{real}: {watch.errors}"
    assert blocker.blocked[blocked_before:] == [], f"{real} asked another host: {blocker.blocked[blocked_before:]}"


def test_the_status_line_counts_what_a_move_changed_even_when_a_label_changes(site):
    """Moving t in the positional explorer renames the dot-product column (PE(t=2)\u00b7PE) and changes its 12
    values: each is outlined and the status line counts them. Switching the number of heads builds new tables:
    the line then names the change without a count (nothing was shown before to compare with)."""
    base, context, _, pages = site
    page, watch = _open(context, base + pages["11"][0], len(pages["11"][1]))
    try:
        ex = _explorer(page, 0)
        slider = ex.locator("input.attnlib-position")
        slider.focus()
        page.keyboard.press("ArrowRight")
        t = ex.locator("output.attnlib-readout").first.inner_text()
        header = ".attnlib-live table[data-view=similarity] th[scope=col]"
        page.wait_for_function(f"(t) => document.querySelector('{header}').textContent.includes(`t=${{t}}`)", arg=t)
        outlined = ex.locator("table[data-view=similarity] td.attnlib-changed").count()
        status = ex.locator(".attnlib-status").inner_text()
        assert outlined == 12, f"{outlined} outlined cells after moving t to {t}"
        assert re.search(rf"\b{outlined} values changed", status), status
    finally:
        page.close()
    page, _ = _open(context, base + pages["08"][0], len(pages["08"][1]))
    try:
        ex = _explorer(page, 0)
        ex.locator("input.attnlib-heads").focus()
        page.keyboard.press("ArrowRight")
        page.wait_for_function("() => document.querySelector('.attnlib-live .attnlib-status').textContent.includes('heads changed')")
        status = ex.locator(".attnlib-status").inner_text()
        assert "values changed" not in status and "value changed" not in status, status
    finally:
        page.close()
    assert not watch.errors, watch.errors


def test_a_bad_link_is_ignored_with_a_message(site):
    base, context, _, pages = site
    real, kinds = pages["06"]
    page, watch = _open(context, base + real + "#e1=not-a-setting!", len(kinds))
    note = page.locator(".attnlib-link-problem")
    assert note.is_visible() and "not fully used" in note.inner_text()
    _agrees(page, 0, "after a bad link")
    page.close()
    # well-formed JSON with an out-of-range W_Q: that part is ignored, the rest (d_k) is used
    link = base64.urlsafe_b64encode(json.dumps({"W_Q": [[9, 0], [0, 1]], "dk": 1}).encode()).decode().rstrip("=")
    page, watch2 = _open(context, f"{base}{real}#e1={link}", len(kinds))
    note = page.locator(".attnlib-link-problem").inner_text()
    assert "W_Q" in note, note
    controls = _read(page, 0)["controls"]
    assert controls["dk"] == 1 and controls["W_Q[1,1]"] == 1.0, controls
    _agrees(page, 0, "after a partly bad link")
    page.close()
    assert not watch.errors and not watch2.errors, watch.errors + watch2.errors


def test_one_screen_at_1280x800_and_reflow_at_390(site):
    base, context, _, pages = site
    real, kinds = pages["playground"]
    page, watch = _open(context, base + real, len(kinds))
    page.set_viewport_size({"width": 1280, "height": 800})
    page.evaluate("() => document.querySelector('div.attnlib-explorer .attnlib-panel').scrollIntoView()")
    rects = page.evaluate(
        """() => {
          const live = document.querySelector('div.attnlib-explorer .attnlib-live');
          const r = (el) => { const b = el.getBoundingClientRect(); return {top: b.top, bottom: b.bottom, left: b.left, right: b.right}; };
          return {sliders: [...live.querySelectorAll('input[type=range]')].map(r),
                  weights: r(live.querySelector('table[data-view=weights]')),
                  output: r(live.querySelector('table[data-view=output]'))};
        }"""
    )
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SHOTS / "playground-1280x800.png"))
    every = rects["sliders"] + [rects["weights"], rects["output"]]
    off = [r for r in every if r["top"] < 0 or r["bottom"] > 800 or r["left"] < 0 or r["right"] > 1280]
    assert not off, f"not on one 1280x800 screen: {off}"
    page.set_viewport_size({"width": 390, "height": 844})
    page.wait_for_timeout(200)
    page.evaluate("() => document.querySelector('div.attnlib-explorer .attnlib-panel').scrollIntoView()")
    page.screenshot(path=str(SHOTS / "playground-390.png"))
    phone = page.evaluate(
        """() => {
          const panel = document.querySelector('div.attnlib-explorer .attnlib-panel');
          const inputs = [...panel.querySelectorAll('input, select, button')];
          return {panelRight: panel.getBoundingClientRect().right, width: window.innerWidth,
                  tiny: inputs.filter(i => { const b = i.getBoundingClientRect(); return b.width < 12 || b.height < 12; }).length};
        }"""
    )
    assert phone["panelRight"] <= phone["width"] + 1, phone
    assert phone["tiny"] == 0, phone
    _explorer(page, 0).locator("input[type=range]").first.focus()
    page.keyboard.press("ArrowLeft")
    _agrees(page, 0, "moved at 390 px")
    page.close()
    assert not watch.errors, watch.errors


def test_without_javascript_the_snapshot_is_shown(site):
    for real, kinds in site.pages.values():
        page = site.no_js.new_page()
        page.goto(site.base + real)
        divs = page.locator("div.attnlib-explorer")
        assert divs.count() == len(kinds), real
        for i in range(len(kinds)):
            snap = divs.nth(i).locator(".attnlib-snapshot")
            assert snap.is_visible(), f"{real}: snapshot {i} hidden without JavaScript"
            assert snap.locator("table, img, svg").count() >= 1 and snap.inner_text().strip(), real
            assert divs.nth(i).locator(".attnlib-live").count() == 0
        page.close()


# the pages whose requests are counted: every page above, chapter 17 (the live trainer) and its page for the reader's text
BUDGET_PAGES = ("chapters/17-induction-heads.html", "chapters/induction-own-text.html", "chapters/15-long-sequences.html")


def test_a_page_fetches_exactly_the_explorer_files_its_kinds_need(site, web_html):
    """The budget of tests/explorers/test_frontend_shape.py counts frontend.page_files: here chromium shows that a
    built page requests exactly those files of _explorers/ (nothing a kind on it does not import), every byte of them."""
    reals = {real: kinds for real, kinds in site.pages.values()}
    for real in BUDGET_PAGES:
        reals.setdefault(real, KIND.findall((web_html / real).read_text(encoding="utf-8")))
    assert "live_training" in reals["chapters/17-induction-heads.html"] and reals["chapters/induction-own-text.html"] == ["induction"]
    for real, kinds in reals.items():
        page = site.context.new_page()
        fetched = {}
        page.on("requestfinished", lambda r, fetched=fetched: fetched.update(
            {r.url.split("/_explorers/")[1]: len(r.response().body())} if "/_explorers/" in r.url else {}))
        page.goto(site.base + real, wait_until="load")
        page.wait_for_function(MOUNTED_JS, arg=len(kinds), timeout=20_000)
        page.close()
        expected = frontend.page_files(sorted(set(kinds)))
        assert sorted(fetched) == sorted(expected), f"{real}: fetched {sorted(fetched)}, page_files gives {expected}"
        size = sum(fetched.values())
        assert size == sum((web_html / "_explorers" / name).stat().st_size for name in expected), real
        assert size <= 80 * 1024, f"{real}: {size} bytes of explorer JS and CSS"

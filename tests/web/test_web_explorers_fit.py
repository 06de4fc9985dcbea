"""Nothing of an explorer is cut off: every live panel fits its column at 1280 x 800 and at 390 px wide.

On every built page with an explorer (the run's one strict build, ``web_html``), in one chromium,
each page is opened once; then at both widths and in the light and the dark theme (the theme's
``data-theme`` switched in place) the test measures every live explorer: the panel, its layout
boxes, its views and every table must not be wider than the box that holds them
(``scrollWidth <= clientWidth``, and no table's right edge past the panel's), and the note above the
panel must sit on the page's own background (not on the light output panel the dark theme puts behind
HTML outputs). It saves a
screenshot of every explorer at 390 px in the light theme, of the training explorers (chapter 14's
recorded run and chapter 17's live trainer) at both widths in both themes, and of any explorer that does
not fit, to ``test-artifacts/explorers-fit/``.
"""

from __future__ import annotations

import json

import pytest
from support.browser import browser_context
from support.paths import ARTIFACTS
from support.servers import serve

pytestmark = pytest.mark.slow

SHOTS = ARTIFACTS / "explorers-fit"
WIDTHS = {"1280": {"width": 1280, "height": 800}, "390": {"width": 390, "height": 844}}
THEMES = ("light", "dark")

# Every box of every live explorer that could overflow, measured in the page: a box is too wide when it
# scrolls sideways (scrollWidth > clientWidth) or reaches past the right edge of the panel or the page.
MEASURE_JS = """
() => {
  const out = [];
  const page = document.documentElement.clientWidth;
  document.querySelectorAll('div.attnlib-explorer.attnlib-mounted').forEach((div, index) => {
    const panel = div.querySelector('.attnlib-panel');
    if (!panel) { out.push({index, kind: div.dataset.attnlibKind, problems: ['no panel']}); return; }
    const right = panel.getBoundingClientRect().right;
    const problems = [];
    if (right > page + 0.5) problems.push(`panel reaches ${Math.round(right)} px, past the page's ${page} px`);
    const inner = '.attnlib-layout, .attnlib-controls, .attnlib-main, .attnlib-views, .attnlib-cell, fieldset';
    const boxes = [panel, ...panel.querySelectorAll(inner)];
    for (const box of boxes) {
      if (box.scrollWidth > box.clientWidth + 1) {
        problems.push(`${box.className.split(' ')[0] || box.tagName}: content ${box.scrollWidth} px in ${box.clientWidth} px`);
      }
    }
    for (const table of panel.querySelectorAll('table')) {
      const r = table.getBoundingClientRect().right;
      const what = table.dataset.view || table.className;
      if (r > right + 0.5) problems.push(`table ${what}: right edge ${Math.round(r)} px past the panel's ${Math.round(right)} px`);
    }
    // the note above the panel sits on the page's own background in either theme (the dark theme's
    // light output panel must not show around a mounted explorer)
    const note = div.querySelector(':scope > .attnlib-live-note');
    if (note) {
      let box = note;
      while (box && getComputedStyle(box).backgroundColor === 'rgba(0, 0, 0, 0)') box = box.parentElement;
      const behind = box ? getComputedStyle(box).backgroundColor : 'none';
      const pageBg = getComputedStyle(document.body).backgroundColor;
      if (behind !== pageBg) problems.push(`live note on ${behind} (${box && box.className}), the page is ${pageBg}`);
    }
    out.push({index, kind: div.dataset.attnlibKind, width: Math.round(panel.getBoundingClientRect().width), problems});
  });
  return out;
}
"""


def _explorer_pages(html) -> list[str]:
    pages = sorted(
        p.relative_to(html).as_posix() for p in html.rglob("*.html") if 'class="attnlib-explorer"' in p.read_text(encoding="utf-8")
    )
    assert len(pages) >= 8, f"only {len(pages)} pages with an explorer in {html}"
    return pages


def test_every_explorer_fits_its_panel_at_both_widths_in_both_themes(web_html, tmp_path):
    SHOTS.mkdir(parents=True, exist_ok=True)
    found, measured = {}, []
    with serve(web_html) as base, browser_context(tmp_path / "chromium-fit", viewport=WIDTHS["1280"]) as (context, _):
        page = context.new_page()
        for name in _explorer_pages(web_html):
            page.goto(base + name, wait_until="domcontentloaded")
            count = (web_html / name).read_text(encoding="utf-8").count('class="attnlib-explorer"')
            page.wait_for_function("(n) => document.querySelectorAll('div.attnlib-explorer.attnlib-mounted').length === n", arg=count)
            for width, viewport in WIDTHS.items():
                page.set_viewport_size(viewport)
                for theme in THEMES:
                    page.evaluate(
                        "(t) => { document.documentElement.dataset.theme = t; document.documentElement.dataset.mode = t; }", theme
                    )
                    page.evaluate("() => new Promise((done) => requestAnimationFrame(() => requestAnimationFrame(done)))")
                    for row in page.evaluate(MEASURE_JS):
                        case = f"{name} #{row['index'] + 1} ({row['kind']}) at {width} px, {theme}"
                        measured.append({"case": case, **row})
                        if row["problems"]:
                            found[case] = row["problems"]
                        # pictures (each costs a screenshot): every explorer at 390 px in the light theme, the training
                        # explorers (recorded and live) in every case, and every case that does not fit
                        if (theme == "light" and width == "390") or row["problems"] or row["kind"] in ("training", "live_training"):
                            stem = name.replace("/", "_").removesuffix(".html")
                            shot = SHOTS / f"{stem}-{row['index'] + 1}-{row['kind']}-{width}-{theme}.png"
                            page.locator("div.attnlib-explorer").nth(row["index"]).screenshot(path=str(shot))
            page.set_viewport_size(WIDTHS["1280"])
    (SHOTS / "measured.json").write_text(json.dumps(measured, indent=1))
    # every registered kind is measured on some page (the live trainer of chapter 17 included), at both widths in both themes
    seen = {(row["kind"], row["case"].rsplit(" at ", 1)[1]) for row in measured}
    kinds = {row["kind"] for row in measured}
    assert "live_training" in kinds, f"chapter 17's live trainer was measured on no page; measured kinds {sorted(kinds)}"
    assert all((k, f"{w} px, {t}") in seen for k in kinds for w in WIDTHS for t in THEMES), sorted(seen)
    assert measured and not found, "explorers cut off or scrolling sideways:\n" + "\n".join(f"{k}: {v}" for k, v in found.items())

"""Fig. 4.1, the data flow of the whole formula, as a reader sees it in chromium at 1280 px.

It is an SVG (text drawn as outlines, sharp at any zoom and on paper). Shown at the width the page
gives it, its box text must be about the size of the body text (16 px) and no text, subscripts
included, below 9 px; in the dark theme it keeps its own white background, so its black text
stays readable.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from support.browser import browser_context
from support.servers import serve
from support.svg_text import text_sizes_pt

pytestmark = pytest.mark.slow

PAGE = "chapters/04-full-formula.html"

FIGURE_JS = """
() => {
  const img = document.querySelector('#fig-attention-data-flow img');
  if (!img) return null;
  const body = getComputedStyle(document.querySelector('article.bd-article p')).fontSize;
  const cs = getComputedStyle(img);  // the dark theme pads images on a light panel: measure the picture only
  const frame = ['paddingLeft', 'paddingRight', 'borderLeftWidth', 'borderRightWidth'].reduce((s, k) => s + parseFloat(cs[k]), 0);
  return {src: img.getAttribute('src'), width: img.getBoundingClientRect().width - frame,
          alt: img.getAttribute('alt'), complete: img.complete && img.naturalWidth > 0,
          body: parseFloat(body), theme: document.documentElement.dataset.theme};
}
"""


@pytest.mark.parametrize("theme", ["light", "dark"])
def test_figure_4_1_is_an_svg_with_body_size_text(web_html, tmp_path, theme):
    with serve(web_html) as base, browser_context(
        tmp_path / "profile", viewport={"width": 1280, "height": 900}, color_scheme=theme
    ) as (context, blocker):
        page = context.new_page()
        page.goto(base + PAGE, wait_until="load")
        page.evaluate("(t) => document.documentElement.dataset.theme = t", theme)
        facts = page.evaluate(FIGURE_JS)
        page.screenshot(path=str(tmp_path / f"fig-4-1-{theme}.png"))
        assert blocker.blocked == []
    assert facts, f"{PAGE} has no figure #fig-attention-data-flow"
    assert facts["src"].endswith(".svg") and facts["complete"], facts
    assert "Z = S over the square root of d_k plus M" in facts["alt"]
    svg = (Path(web_html) / PAGE).parent.joinpath(facts["src"]).resolve().read_text(encoding="utf-8")
    assert "<text" not in svg and "<image" not in svg  # outlines, not a font and not a bitmap
    assert re.search(r'<g id="patch_1">\s*<path d="M 0 [^"]*"\s*style="fill: #ffffff', svg), "no white background"
    width_pt, largest_pt, smallest_pt = text_sizes_pt(svg)
    px_per_pt = facts["width"] / width_pt
    box_text, smallest = largest_pt * px_per_pt, smallest_pt * px_per_pt
    assert box_text >= 0.85 * facts["body"], f"box text {box_text:.1f} px next to body text {facts['body']} px"
    assert smallest >= 9, f"the smallest text of Fig. 4.1 is {smallest:.1f} px at 1280 px"

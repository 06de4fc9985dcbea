"""The cheat sheet is what it promises: linked from the front page, and one printed page.

Headless Debian chromium prints the built page to A4 PDF (every host but
127.0.0.1 blocked) and the test counts the pages of that PDF.
"""

from __future__ import annotations

import json
import re

import pytest
from support.browser import browser_context
from support.paths import CHAPTERS
from support.servers import serve
from support.site import parse_html

pytestmark = pytest.mark.slow

#: the text of every h1 that is rendered (in the current media), in page order
PRINTED_HEADINGS_JS = """() => [...document.querySelectorAll('h1')].filter((h) => h.getClientRects().length)
  .map((h) => h.innerText.replace(/#$/, '').trim())"""


def _heading() -> str:
    """The cheat sheet's title: the first level-1 heading of its notebook."""
    cells = json.loads((CHAPTERS / "cheatsheet.ipynb").read_text())["cells"]
    text = "\n".join("".join(c["source"]) for c in cells if c["cell_type"] == "markdown")
    return re.search(r"^# (.+)$", text, re.M).group(1).strip()


def test_front_page_links_to_the_cheat_sheet(web_html):
    links = parse_html(web_html / "intro.html").links
    assert any(link.split("#")[0].endswith("chapters/cheatsheet.html") for link in links)


def test_cheat_sheet_prints_on_one_page(web_html, tmp_path):
    with serve(web_html) as base, browser_context(tmp_path / "profile") as (context, blocker):
        page = context.new_page()
        page.goto(base + "chapters/cheatsheet.html", wait_until="networkidle")
        page.wait_for_function("() => !window.MathJax || !MathJax.startup || MathJax.startup.promise")
        page.emulate_media(media="print")
        # the headings a printed page shows (a theme print rule hid the first h1 of each parent: _static/print-headings.css)
        printed = page.evaluate(PRINTED_HEADINGS_JS)
        pdf = page.pdf(format="A4")
    pages = len(re.findall(rb"/Type\s*/Page(?!s)", pdf))
    assert not blocker.blocked, blocker.blocked
    assert pages == 1, f"the cheat sheet prints on {pages} A4 pages"
    assert printed and printed[0] == _heading(), f"the printed cheat sheet's headings: {printed}"

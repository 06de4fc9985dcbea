"""The cheat sheet is what it promises: linked from the front page, and one printed page.

Headless Debian chromium prints the built page to A4 PDF (every host but
127.0.0.1 blocked) and the test counts the pages of that PDF.
"""

from __future__ import annotations

import re

import pytest
from support.browser import browser_context
from support.servers import serve
from support.site import parse_html

pytestmark = pytest.mark.slow


def test_front_page_links_to_the_cheat_sheet(web_html):
    links = parse_html(web_html / "intro.html").links
    assert any(link.split("#")[0].endswith("chapters/cheatsheet.html") for link in links)


def test_cheat_sheet_prints_on_one_page(web_html, tmp_path):
    with serve(web_html) as base, browser_context(tmp_path / "profile") as (context, blocker):
        page = context.new_page()
        page.goto(base + "chapters/cheatsheet.html", wait_until="networkidle")
        page.wait_for_function("() => !window.MathJax || !MathJax.startup || MathJax.startup.promise")
        page.emulate_media(media="print")
        pdf = page.pdf(format="A4")
    pages = len(re.findall(rb"/Type\s*/Page(?!s)", pdf))
    assert not blocker.blocked, blocker.blocked
    assert pages == 1, f"the cheat sheet prints on {pages} A4 pages"

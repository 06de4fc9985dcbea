"""The chapter list is reachable on every screen, in headless Debian chromium (every host but 127.0.0.1 blocked).

* On a phone (390 px) the ☰ button opens the chapter list, and a chapter's link in it opens that
  chapter; the "contents" button opens the page's sections.
* On a wide screen (1280 px) the ☰ button collapses the chapter list and a second click brings it back.

pydata-sphinx-theme 0.17 binds these buttons' handlers to the first button of each kind in the page
only, a hidden one, so the visible buttons did nothing (its issue #2451; ``_static/sidebar-toggles.js``).
"""

from __future__ import annotations

import pytest
from support.browser import browser_context
from support.servers import serve

pytestmark = pytest.mark.slow

#: the visible button of a kind (the page holds hidden ones too)
VISIBLE = ":visible"
CHAPTER = "chapters/16-"

SIDEBAR_STATE_JS = """() => {
  const sidebar = document.getElementById('pst-primary-sidebar');
  const box = sidebar.getBoundingClientRect();
  return {hidden: sidebar.classList.contains('pst-sidebar-hidden'), width: box.width,
          visible: !!(sidebar.offsetWidth || sidebar.offsetHeight) && getComputedStyle(sidebar).visibility !== 'hidden',
          dialogOpen: !!document.querySelector('dialog[open]')};
}"""


def test_phone_menu_opens_the_chapter_list_and_a_chapter(web_html, tmp_path):
    chapter = sorted((web_html / "chapters").glob("16-*.html"))
    assert len(chapter) == 1, chapter
    with serve(web_html) as base, browser_context(tmp_path / "profile", viewport={"width": 390, "height": 844}) as (context, blocker):
        page = context.new_page()
        page.goto(base + "intro.html", wait_until="load")
        page.locator(f".primary-toggle{VISIBLE}").click()
        dialog = page.locator("dialog#pst-primary-sidebar-modal")
        dialog.wait_for(state="visible", timeout=5_000)
        link = dialog.locator(f'a[href*="{CHAPTER}"]')
        assert link.count() == 1, f"the chapter list in the phone's menu has {link.count()} links to chapter 16"
        link.click()
        page.wait_for_url(f"**/{chapter[0].relative_to(web_html).as_posix()}", timeout=10_000)
        assert "16" in page.locator("article h1").first.inner_text()
        # on a chapter, the "contents" button opens its sections
        page.locator(f".secondary-toggle{VISIBLE}").click()
        sections = page.locator("dialog#pst-secondary-sidebar-modal")
        sections.wait_for(state="visible", timeout=5_000)
        assert sections.locator("nav.page-toc a").count() >= 3, "the contents dialog lists no sections"
        assert blocker.blocked == []


def test_wide_screen_menu_collapses_and_restores_the_chapter_list(web_html, tmp_path):
    chapter = sorted((web_html / "chapters").glob("16-*.html"))[0].relative_to(web_html).as_posix()
    with serve(web_html) as base, browser_context(tmp_path / "profile", viewport={"width": 1280, "height": 800}) as (context, blocker):
        page = context.new_page()
        page.goto(base + chapter, wait_until="load")
        before = page.evaluate(SIDEBAR_STATE_JS)
        assert before["visible"] and not before["hidden"] and before["width"] > 100, before
        toggle = page.locator(f".primary-toggle{VISIBLE}")
        toggle.click()
        page.wait_for_timeout(400)  # the theme's transition
        collapsed = page.evaluate(SIDEBAR_STATE_JS)
        assert collapsed["hidden"] and not collapsed["dialogOpen"], f"☰ did not collapse the chapter list: {collapsed}"
        assert not collapsed["visible"] or collapsed["width"] < 1, collapsed
        toggle.click()
        page.wait_for_timeout(400)
        restored = page.evaluate(SIDEBAR_STATE_JS)
        assert restored["visible"] and not restored["hidden"] and restored["width"] > 100, restored
        assert blocker.blocked == []

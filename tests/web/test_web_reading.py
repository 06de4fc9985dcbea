"""How the built book reads in less friendly conditions, in headless Debian chromium.

* search works offline (Sphinx's own index, no service);
* with JavaScript switched off, chapters still show their figures, their explorers'
  snapshot tables and the TeX source of every formula;
* with MathJax blocked too (as if its files were missing), every formula still reads
  as its TeX source instead of disappearing;
* the reference pages link to each other and the front page links to the notation;
* on a phone (390 px) no page a reader reads (all but the API reference and the indexes) is wider than
  the screen: nothing makes the reader scroll sideways.
"""

from __future__ import annotations

import pkgutil
import re
from pathlib import Path

import pytest
from support.browser import browser_context
from support.servers import serve
from support.site import parse_html, site_pages

pytestmark = pytest.mark.slow

MATH_SOURCES_JS = """
() => [...document.querySelectorAll('span.math, div.math')].map(m => m.textContent.trim())
"""

READING_FACTS_JS = """
() => {
  const visible = (el) => !!(el.offsetWidth || el.offsetHeight || el.getClientRects().length);
  const outputs = [...document.querySelectorAll('div.cell_output')];
  return {
    text: (document.querySelector('article.bd-article') || document.body).innerText.trim().length,
    images: outputs.flatMap(o => [...o.querySelectorAll('img')])
      .map(img => ({src: img.getAttribute('src'), ok: visible(img) && img.complete && img.naturalWidth > 0})),
    tables: outputs.filter(o => [...o.querySelectorAll('table')].some(visible)).length,
    widgetCells: [...document.querySelectorAll('div.cell.tag_widget div.cell_output')]
      .map(o => !!o.querySelector('table, img') && visible(o)),
  };
}
"""


@pytest.fixture(scope="module")
def site(web_html) -> Path:
    return web_html


def _chapters(site: Path) -> list[str]:
    pages = [p.relative_to(site).as_posix() for p in site_pages(site)]
    chapters = [p for p in pages if p.startswith("chapters/")]
    assert chapters, f"no chapter pages in {site}"
    return chapters


def test_search_finds_chapters_offline(site, tmp_path):
    with serve(site) as base, browser_context(tmp_path / "profile") as (context, blocker):
        page = context.new_page()
        page.goto(base + "search.html?q=softmax", wait_until="load")
        page.wait_for_selector("#search-results ul.search li", timeout=20_000)
        hrefs = page.eval_on_selector_all("#search-results ul.search li a", "as => as.map(a => a.getAttribute('href'))")
        assert blocker.blocked == []
    assert any("chapters/" in h for h in hrefs), f"search for 'softmax' found no chapter: {hrefs}"


def test_chapters_read_without_javascript(site, tmp_path):
    """No JavaScript at all: figures, snapshot tables and formulas (as TeX) are still on every chapter."""
    problems = {}
    with serve(site) as base, browser_context(tmp_path / "profile", java_script_enabled=False) as (context, blocker):
        for path in _chapters(site):
            page = context.new_page()
            page.goto(base + path, wait_until="load")
            facts = page.evaluate(READING_FACTS_JS)
            maths = page.evaluate(MATH_SOURCES_JS)
            page.close()
            issues = []
            if facts["text"] < 200:
                issues.append(f"only {facts['text']} characters of text")
            issues += [f"image not shown: {img['src']}" for img in facts["images"] if not img["ok"]]
            if not all(facts["widgetCells"]):
                issues.append("an explorer cell shows no snapshot")
            issues += [f"formula without its TeX source: {m!r}" for m in maths if not m]
            problems[path] = issues
        assert blocker.blocked == []
    problems = {k: v for k, v in problems.items() if v}
    assert not problems, problems


def test_formulas_read_as_tex_when_mathjax_is_blocked(site, tmp_path):
    """If MathJax cannot load (a build without npm points at the CDN, which may be blocked), formulas stay readable."""
    problems = {}
    with serve(site) as base, browser_context(tmp_path / "profile") as (context, blocker):
        context.route("**/mathjax/**", lambda route: route.abort("blockedbyclient"))
        for path in ["notation.html", *_chapters(site)]:
            page = context.new_page()
            page.goto(base + path, wait_until="load")
            maths = page.evaluate(MATH_SOURCES_JS)
            rendered = page.evaluate("() => document.querySelectorAll('mjx-container').length")
            page.close()
            issues = [f"formula without its TeX source: {m!r}" for m in maths if not m]
            if rendered:
                issues.append(f"{rendered} formulas rendered although MathJax was blocked: the test did not block it")
            problems[path] = issues
            if path == "notation.html":
                assert any("\\sqrt{d_k}" in m for m in maths), "the notation page shows no TeX source for sqrt(d_k)"
    problems = {k: v for k, v in problems.items() if v}
    assert not problems, problems


def test_reference_pages_link_to_each_other(site):
    def links(page: str) -> set[str]:
        return {Path(h.split("#")[0]).name for h in parse_html(site / page).links if not h.startswith(("http:", "https:", "#"))}

    assert "glossary.html" in links("notation.html")
    assert "notation.html" in links("glossary.html")
    assert {"notation.html", "glossary.html"} <= links("api.html")
    assert "notation.html" in links("intro.html"), "the front page's short notation table should point to the full page"
    assert any(h.startswith("chapters/") for h in parse_html(site / "glossary.html").links), "the glossary points into no chapter"


def _attnlib_modules() -> list[str]:
    """Every public module of attnlib, subpackages' modules included (what autosummary :recursive: must find)."""
    import attnlib

    found = ["attnlib"]
    for info in pkgutil.walk_packages(attnlib.__path__, prefix="attnlib."):
        if not any(part.startswith("_") for part in info.name.split(".")):
            found.append(info.name)
    return sorted(found)


def test_api_pages_document_every_attnlib_module(site):
    """api.md's autosummary writes one page per module; the package page links every module's page."""
    modules = _attnlib_modules()
    assert len(modules) > 10, modules
    pages = {m: site / "api" / f"{m}.html" for m in modules}
    missing = [m for m, page in pages.items() if not page.is_file() or f"module-{m}" not in parse_html(page).ids]
    assert not missing, f"modules without their own page api/<module>.html (with its module anchor): {missing}"
    # every page is linked from its package's page (attnlib's own from api.html), so each is reachable from api.html
    def linked_from(page: Path) -> set[str]:
        return {Path(h.split("#")[0]).name for h in parse_html(page).links}

    assert "attnlib.html" in linked_from(site / "api.html"), "api.html does not link attnlib's own page"
    top = linked_from(site / "api.html") | linked_from(site / "api" / "attnlib.html")
    unlinked = [
        m for m in modules
        if m != "attnlib" and f"{m}.html" not in (top if m.count(".") == 1 else linked_from(site / "api" / f"{m.rsplit('.', 1)[0]}.html"))
    ]  # fmt: skip
    assert not unlinked, f"module pages that their package's page does not link: {unlinked}"
    core = parse_html(site / "api" / "attnlib.core.html").ids
    assert {"attnlib.core.attention", "attnlib.core.softmax"} <= core, "attnlib.core's page does not document its functions"


def test_page_tables_of_contents_show_titles_not_labels(site):
    """A {ref} inside a heading shows its raw label (e.g. "ch-qkv") in the page's table of contents."""
    problems = {}
    for page in site_pages(site):
        html = page.read_text(encoding="utf-8")
        for nav in re.findall(r'<nav[^>]*class="[^"]*page-toc[^"]*"[^>]*>.*?</nav>', html, flags=re.S):
            text = re.sub(r"<[^>]+>", " ", nav)
            labels = re.findall(r"\b(?:ch|fig|eq|sec|tab)-[a-z0-9][a-z0-9-]*\b", text)
            if labels:
                problems[page.relative_to(site).as_posix()] = labels
    assert not problems, problems


#: The page's width, the screen's, and up to five elements that reach past the screen's right edge and are not
#: inside a box that scrolls on its own (a code block, a wide table's wrapper): the culprits when the page is too wide.
PAST_THE_EDGE_JS = """
async () => {
  if (window.MathJax && MathJax.startup && MathJax.startup.promise) await MathJax.startup.promise;
  const W = document.documentElement.clientWidth;
  const scrollsOnItsOwn = (e) => {
    for (let p = e.parentElement; p; p = p.parentElement) {
      const s = getComputedStyle(p);
      if (['auto', 'scroll', 'hidden'].includes(s.overflowX) && p.getBoundingClientRect().right <= W + 1) return true;
    }
    return false;
  };
  const past = [...document.querySelectorAll('body *')]
    .filter((e) => e.getBoundingClientRect().right > W + 1 && e.getBoundingClientRect().width > 0 && !scrollsOnItsOwn(e))
    .map((e) => `${e.tagName.toLowerCase()}.${[...e.classList].join('.')}: ${(e.textContent || '').trim().slice(0, 50)}`);
  return {width: document.documentElement.scrollWidth, screen: W, past: past.slice(0, 5)};
}
"""


#: The boxes that hold wide content (display equations, code, outputs, tables) and are narrower than what they
#: hold, and do not show it: each must scroll sideways itself (overflow-x auto or scroll) and draw a scrollbar
#: that takes room below its content. Run with overlay scrollbars (chromium's mobile emulation, as on phones and
#: macOS), which take no room and show only while the reader scrolls: only a drawn scrollbar is measured. Boxes
#: that are not displayed (a folded solution, a snapshot the live explorer replaced) are skipped.
HIDDEN_SCROLL_JS = """
async () => {
  if (window.MathJax && MathJax.startup && MathJax.startup.promise) await MathJax.startup.promise;
  const selector = 'div.math, mjx-container[display="true"], pre, div.cell_output .output, '
    + '.pst-scrollable-table-container, table';
  const found = [];
  for (const box of document.querySelectorAll(`article.bd-article :is(${selector})`)) {
    if (box.scrollWidth <= box.clientWidth + 1 || !box.getClientRects().length) continue;
    const s = getComputedStyle(box);
    const scrolls = ['auto', 'scroll'].includes(s.overflowX);
    const bar = box.offsetHeight - box.clientHeight - parseFloat(s.borderTopWidth) - parseFloat(s.borderBottomWidth);
    if (!(scrolls && bar > 0)) {
      found.push(`${box.tagName.toLowerCase()}.${[...box.classList].join('.')} ${box.scrollWidth} px in ${box.clientWidth} px `
        + `(overflow-x ${s.overflowX}, scrollbar ${bar} px): ${(box.textContent || '').trim().slice(0, 40)}`);
    }
  }
  return found;
}
"""


def _reading_pages(site: Path) -> list[str]:
    """The pages a reader reads: all but the API reference (api/...), the indexes and the front page's redirect."""
    skip = {"index.html", "genindex.html", "py-modindex.html", "search.html"}
    pages = [p.relative_to(site).as_posix() for p in site_pages(site)]
    return [p for p in pages if not p.startswith("api/") and p not in skip]


def test_no_page_is_wider_than_the_screen_and_wide_boxes_show_their_scrollbar(site, tmp_path):
    """At 390 px every page a reader reads fits the screen (a long inline call in the text used to push
    chapters 2, 3, 5, 11, 14, 15 and 17 to 395-515 px); at 390 and at 1280 px every chapter (the cheat
    sheet and the playground too) keeps each wide equation, code line, output and table in a box that
    scrolls sideways with a scrollbar that is drawn even where scrollbars are overlays (chapter 16's
    equations (16.1)-(16.4) looked cut off at both widths; the cheat sheet's shape table scrolled
    without a scrollbar)."""
    pages = _reading_pages(site)
    chapters = [p for p in pages if p.startswith("chapters/")]
    assert "intro.html" in pages and len(chapters) >= 17, pages
    assert {"chapters/cheatsheet.html", "chapters/playground.html"} <= set(chapters), chapters
    wide, hidden = {}, {}
    # overlay scrollbars, drawn when they are drawn: mobile emulation, without playwright's --hide-scrollbars
    phone = {"viewport": {"width": 390, "height": 844}, "is_mobile": True, "has_touch": True,
             "ignore_default_args": ["--hide-scrollbars"]}
    with serve(site) as base, browser_context(tmp_path / "profile", **phone) as (context, blocker):
        page = context.new_page()  # one page for all: a new one for each only adds its start-up
        for width, paths in ((390, pages), (1280, chapters)):
            page.set_viewport_size({"width": width, "height": 844 if width == 390 else 800})
            for path in paths:
                page.goto(base + path, wait_until="load")
                facts = page.evaluate(PAST_THE_EDGE_JS)
                if facts["width"] > facts["screen"]:  # the page scrolls sideways (the theme's closed drawers stick out, hidden)
                    wide[f"{path} at {width} px"] = facts
                if path in chapters:
                    found = page.evaluate(HIDDEN_SCROLL_JS)
                    if found:
                        hidden[f"{path} at {width} px"] = found
        assert blocker.blocked == []
    assert not wide, f"pages wider than the screen: {wide}"
    assert not hidden, f"wide content cut off or scrolling without a visible scrollbar: {hidden}"

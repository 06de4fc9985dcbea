"""What a reader meets first, and small things that read badly (issue 45, item 9), in chromium on the built book.

* The front page's first screen holds a picture (at 1280 x 800 and at 390 px), and the page does not end
  in a list of the API's module pages (the list of contents stops at the API reference's own page).
* No title, sidebar entry or page heading writes the subscript of d_k as a literal underscore.
* Chapter 15's title takes at most three lines on a phone.
* Figure captions are set in a regular weight (400 or more), not the theme's faint 300.
* The search page's snippets show formulas as readable text, not as LaTeX (``_static/search-math.js``).
* The page's "Contents" list highlights the section in view after jumps of most of a screen, as Page Down
  makes them (``_static/page-toc-follow.js``; the theme's own highlight stayed behind).
"""

from __future__ import annotations

import re

import pytest
from support.browser import browser_context
from support.servers import serve

pytestmark = pytest.mark.slow

FIRST_SCREEN_PICTURE = """() => [...document.querySelectorAll('article.bd-article img')].filter(img => {
  const r = img.getBoundingClientRect();
  return img.complete && img.naturalWidth > 0 && r.width >= 200 && r.top >= 0 && r.top + 0.5 * r.height <= window.innerHeight;
}).map(img => img.getAttribute('src'))"""


@pytest.mark.parametrize("width,height", [(1280, 800), (390, 844)])
def test_front_page_opens_on_a_picture_and_does_not_end_in_api_links(web_html, tmp_path, width, height):
    with serve(web_html) as base, browser_context(tmp_path / "profile", viewport={"width": width, "height": height}) as (context, blocker):
        page = context.new_page()
        page.goto(base + "intro.html", wait_until="load")
        pictures = page.evaluate(FIRST_SCREEN_PICTURE)
        links = page.eval_on_selector_all("article.bd-article a[href]", "as => as.map(a => a.getAttribute('href'))")
        assert blocker.blocked == []
    assert pictures, f"no picture at least half in the first {width} x {height} screen of the front page"
    assert any(h.startswith("chapters/01-") for h in links), "the front page lists no chapters"
    api = [h for h in links if h.startswith("api/")]
    assert not api, f"the front page links {len(api)} API module pages: {api[:3]} ..."


def test_no_title_or_sidebar_entry_writes_d_k_with_an_underscore(web_html):
    found = {}
    for path in sorted(web_html.rglob("*.html")):
        rel = path.relative_to(web_html).as_posix()
        if rel.startswith(("api/", "_", "lite/")):
            continue
        html = path.read_text(encoding="utf-8")
        title = re.search(r"<title>(.*?)</title>", html, re.S)
        if title is None:  # index.html: the redirect to intro.html
            continue
        title = title[1]
        nav = re.search(r"<nav class=\"[^\"]*bd-docs-nav.*?</nav>", html, re.S)
        heads = re.findall(r"<h1[^>]*>(.*?)</h1>", html, re.S)
        texts = [title, *(re.findall(r">([^<]*)</a>", nav[0]) if nav else []), *heads]
        bad = [t for t in texts if re.search(r"\bd_k\b", re.sub(r"<[^>]+>", "", t))]
        if bad:
            found[rel] = bad[:2]
    assert not found, f"d_k with an underscore in titles, sidebar entries or h1 headings: {found}"


def test_chapter_15_title_fits_three_lines_on_a_phone(web_html, tmp_path):
    with serve(web_html) as base, browser_context(tmp_path / "profile", viewport={"width": 390, "height": 844}) as (context, blocker):
        page = context.new_page()
        page.goto(base + "chapters/15-long-sequences.html", wait_until="load")
        h1 = page.evaluate("""() => { const h = document.querySelector('article.bd-article h1'); const cs = getComputedStyle(h);
          return {height: h.getBoundingClientRect().height, line: parseFloat(cs.lineHeight) || 1.2 * parseFloat(cs.fontSize),
                  text: h.textContent}; }""")
        assert blocker.blocked == []
    lines = round(h1["height"] / h1["line"])
    assert lines <= 3, f"chapter 15's title takes {lines} lines at 390 px: {h1['text']!r}"


@pytest.mark.parametrize("theme", ["light", "dark"])
def test_figure_captions_are_not_faint(web_html, tmp_path, theme):
    with serve(web_html) as base, browser_context(tmp_path / "profile", viewport={"width": 1280, "height": 800}) as (context, blocker):
        page = context.new_page()
        page.goto(base + "chapters/05-scaling.html", wait_until="load")
        page.evaluate("(t) => document.documentElement.dataset.theme = t", theme)
        weights = page.eval_on_selector_all("figure figcaption", "fs => fs.map(f => Number(getComputedStyle(f).fontWeight))")
        assert blocker.blocked == []
    assert weights and min(weights) >= 400, f"figure captions in weights {sorted(set(weights))}"


def test_search_snippets_show_formulas_as_text_not_latex(web_html, tmp_path):
    with serve(web_html) as base, browser_context(tmp_path / "profile") as (context, blocker):
        page = context.new_page()
        page.goto(base + "search.html?q=variance", wait_until="load")
        page.wait_for_function("() => document.querySelectorAll('#search-results ul.search li p.context').length >= 5", timeout=30_000)
        page.wait_for_timeout(1500)  # the snippets arrive page by page
        snippets = page.eval_on_selector_all("#search-results ul.search li p.context", "ps => ps.map(p => p.textContent)")
        assert blocker.blocked == []
    latex = [s for s in snippets if re.search(r"\\[A-Za-z(\[)]|\^\{|_\{", s)]
    assert not latex, f"{len(latex)} of {len(snippets)} search snippets show LaTeX, e.g. {latex[0][:200]!r}"
    assert any(re.search("[√ᵀₖ]", s) for s in snippets), "no snippet shows a formula at all: search for another word"


FOLLOW_JS = """() => {
  const header = document.querySelector('#pst-header').getBoundingClientRect().height;
  const line = header + 0.3 * (window.innerHeight - header);
  const links = [...document.querySelectorAll('#pst-page-toc-nav a.nav-link')];
  let expected = null;
  for (const a of links) {
    const s = document.getElementById(decodeURIComponent(a.hash.slice(1)));
    const h = s && (s.querySelector(':is(h1,h2,h3,h4,h5,h6)') || s);
    if (h && h.getBoundingClientRect().top <= line) expected = a.hash;
  }
  const active = links.filter(a => a.classList.contains('active')).map(a => a.hash);
  return {expected, active, y: window.scrollY};
}"""


def test_contents_highlight_follows_jumps_of_a_screen(web_html, tmp_path):
    with serve(web_html) as base, browser_context(tmp_path / "profile", viewport={"width": 1280, "height": 800}) as (context, blocker):
        page = context.new_page()
        page.goto(base + "chapters/04-full-formula.html", wait_until="load")
        page.wait_for_timeout(500)
        wrong, stops = [], 0
        while True:
            before = page.evaluate("() => window.scrollY")
            page.evaluate("() => window.scrollBy(0, Math.round(0.85 * window.innerHeight))")  # as Page Down does
            page.wait_for_timeout(250)
            got = page.evaluate(FOLLOW_JS)
            if got["y"] == before:
                break
            stops += 1
            if got["expected"] and got["active"] != [got["expected"]]:
                wrong.append(got)
        assert blocker.blocked == []
    assert stops >= 8
    assert not wrong, f"{len(wrong)} of {stops} stops highlight another section than the one in view: {wrong[:3]}"

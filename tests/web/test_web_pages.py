"""The built web book, page by page, in headless Debian chromium with every host but 127.0.0.1 blocked.

One session fixture visits every built page in the light theme and the pages of
:func:`axe_pages` again in the dark theme, and records what it saw; the tests
below then check those records. The pages are found by walking the built site,
so a new chapter or reference page is covered without touching this file.

axe-core runs with every rule on every page in the light theme, except the API
reference's module pages, of which it takes a sample (:func:`axe_pages`); the
dark pass runs its colour-contrast rule on the same pages. Every module page is
still loaded and checked for console errors, failed or foreign requests,
content, images and heading order.

Artifacts for review (git-ignored) are written to ``test-artifacts/``: a
full-page screenshot of every chapter in the light theme and one of its first screen in the
dark theme (JPEG, quality 80), and
``axe-report.json`` with every axe-core violation of every page audited.
"""

from __future__ import annotations

import json
import re
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urljoin

import pytest
import yaml
from support.browser import AXE_JS, browser_context
from support.paths import ARTIFACTS, ROOT
from support.servers import SERVED, serve
from support.site import broken_internal_links, parse_html, site_pages

pytestmark = pytest.mark.slow

SERIOUS = {"serious", "critical"}
WIDGETS = "VBox|HBox|Box|GridBox|IntSlider|FloatSlider|Dropdown|ToggleButtons|interactive|Output|Tab"
WIDGET_REPR = re.compile(rf"\b({WIDGETS})\(children=|\bA Jupyter widget\b")

# Evaluated in the page after load: everything the tests need to know about it.
PAGE_FACTS_JS = """
async () => {
  if (window.MathJax && window.MathJax.startup && window.MathJax.startup.promise) {
    await window.MathJax.startup.promise;
  }
  // the live explorers (_ext/live_explorers.py) are audited as the reader meets them: mounted
  const explorers = document.querySelectorAll('div.attnlib-explorer').length;
  for (let t = 0; t < 200 && document.querySelectorAll('div.attnlib-explorer.attnlib-mounted').length < explorers; t++) {
    await new Promise(r => setTimeout(r, 50));
  }
  const article = document.querySelector('article.bd-article') || document.body;
  const visible = (el) => !!(el.offsetWidth || el.offsetHeight || el.getClientRects().length);
  const maths = [...document.querySelectorAll('span.math, div.math')];
  const outputs = [...document.querySelectorAll('div.cell_output')];
  return {
    title: document.title,
    theme: document.documentElement.dataset.theme || '',
    textLength: article.innerText.trim().length,
    headings: [...article.querySelectorAll('h1, h2, h3, h4, h5, h6')].filter(visible)
      .map(h => ({level: Number(h.tagName[1]), text: h.innerText.trim().slice(0, 60)})),
    images: [...document.querySelectorAll('img')].map(img => ({
      src: img.getAttribute('src'), alt: img.getAttribute('alt'),
      hidden: img.getAttribute('aria-hidden') === 'true' || img.getAttribute('role') === 'presentation',
      loaded: img.complete && img.naturalWidth > 0, inOutput: !!img.closest('div.cell_output'),
      visible: visible(img), background: getComputedStyle(img).backgroundColor,
    })),
    math: {
      total: maths.length,
      rendered: maths.filter(m => m.querySelector('mjx-container')).length,
      errors: document.querySelectorAll('mjx-merror').length,
    },
    outputTables: outputs.filter(o => o.querySelector('table')).length,
    outputImages: outputs.flatMap(o => [...o.querySelectorAll('img')])
      .filter(img => visible(img) && img.complete && img.naturalWidth > 0).length,
    // cells of attnlib's explorers (tag "widget"): what the static page shows in their place
    widgetCells: [...document.querySelectorAll('div.cell.tag_widget')].map(c => {
      const out = c.querySelector('div.cell_output');
      return {
        id: c.closest('section') ? c.closest('section').id : '',
        hasOutput: !!out,
        snapshot: !!(out && out.querySelector('.text_html table, .text_html img, img')),
        text: out ? out.innerText.trim().length : 0,
      };
    }),
    explorers: {total: explorers, live: document.querySelectorAll('div.attnlib-explorer.attnlib-mounted').length},
    // the theme's copy buttons on printed text are real (they copy), and so are the live explorers'
    // controls (tests/web/test_web_explorers.py moves them); anything else would be a dead control
    outputControls: outputs.flatMap(o => [...o.querySelectorAll(
      'input, select, textarea, button:not(.copybtn), [role=slider], [contenteditable=true]')])
      .filter(e => !e.closest('.attnlib-live')).map(e => e.outerHTML.slice(0, 120)),
    widgetScripts: document.querySelectorAll(
      'script[type="application/vnd.jupyter.widget-view+json"], script[type="application/vnd.jupyter.widget-state+json"]').length,
    outputText: outputs.map(o => o.innerText).join('\\n'),
  };
}
"""

AXE_JS_RUN = """
async (rules) => {
  const options = {resultTypes: ['violations']};
  if (rules) options.runOnly = {type: 'rule', values: rules};
  const result = await axe.run(document, options);
  return result.violations.map(v => ({id: v.id, impact: v.impact, help: v.help,
    nodes: v.nodes.length, targets: v.nodes.slice(0, 5).map(n => n.target.join(' ')),
    summary: v.nodes.slice(0, 2).map(n => n.failureSummary)}));
}
"""


@dataclass
class PageVisit:
    path: str
    facts: dict
    console_errors: list[str] = field(default_factory=list)
    failed_requests: list[str] = field(default_factory=list)
    blocked: list[str] = field(default_factory=list)
    #: axe-core's violations, or None where axe-core did not run (the API module pages outside :func:`axe_pages`)
    axe: list[dict] | None = None
    seconds: float = 0.0


@dataclass
class Audit:
    html: Path
    pages: list[str]
    light: dict[str, PageVisit]
    dark: dict[str, PageVisit]
    seconds: float
    #: every request the book's server answered during both visits: (path, HTTP status)
    served: list[tuple[str, int]] = field(default_factory=list)


def is_chapter(path: str) -> bool:
    return path.startswith("chapters/")


def axe_pages(html: Path, pages: list[str]) -> list[str]:
    """The pages axe-core audits (every rule in the light theme, colour contrast in the dark one): every
    page but the API reference's module pages, of which it takes the package pages and the largest
    module page. The module pages (59 of 89 pages) are one autosummary template with the same
    elements (signatures, parameter lists, literals, formulas); axe-core took about 1 s on each, 60 s
    of CPU per run on a 2-core machine that the CI's 10 minutes cannot spare. The light pass still
    loads every module page and checks what it records for every page (:data:`PAGE_FACTS_JS`).
    """
    api = [p for p in pages if p.startswith("api/")]
    packages = {p for p in api if (html / p).read_text(encoding="utf-8").count('class="rubric">Modules') > 0}
    largest = max(api, key=lambda p: (html / p).stat().st_size, default=None)
    return [p for p in pages if not p.startswith("api/") or p in packages or p == largest]


def _visit(
    context, blocker, base: str, path: str, *, axe: bool, axe_rules: list[str] | None, screenshot: Path | None, dark: bool
) -> PageVisit:
    page = context.new_page()
    errors: list[str] = []
    failed: list[str] = []
    page.on("console", lambda msg: errors.append(f"console.{msg.type}: {msg.text}") if msg.type == "error" else None)
    page.on("pageerror", lambda exc: errors.append(f"uncaught: {exc}"))
    page.on("requestfailed", lambda req: failed.append(f"{req.url} ({req.failure})"))
    page.on("response", lambda resp: failed.append(f"{resp.url} (HTTP {resp.status})") if resp.status >= 400 else None)
    start = time.perf_counter()
    blocked_before = len(blocker.blocked)
    page.goto(base + path, wait_until="load")
    facts = page.evaluate(PAGE_FACTS_JS)
    violations = None
    if axe:
        page.add_script_tag(path=str(AXE_JS))
        violations = page.evaluate(AXE_JS_RUN, axe_rules)
    if screenshot is not None:
        screenshot.parent.mkdir(parents=True, exist_ok=True)
        # JPEG (PNG took 1.3-2.7 s a chapter); the dark pass keeps the first screen only: the whole page
        # in the dark theme took about 25 s of one CI run, and the explorers' dark screenshots come from
        # tests/web/test_web_explorers_fit.py
        page.screenshot(path=str(screenshot), full_page=not dark, type="jpeg", quality=80)
    seconds = time.perf_counter() - start
    page.close()
    blocked = blocker.blocked[blocked_before:]
    failed = [f for f in failed if not any(f.startswith(b) for b in blocked)]
    return PageVisit(path, facts, errors, failed, blocked, violations, seconds)


def is_redirect(html: Path, path: str) -> bool:
    return bool(re.search(r'http-equiv="refresh"', (html / path).read_text(encoding="utf-8"), re.IGNORECASE))


@pytest.fixture(scope="session")
def audit(web_html, tmp_path_factory) -> Audit:
    assert AXE_JS.exists(), f"{AXE_JS} is missing: run `npm ci` (python3 dev.py test does it)"
    html = web_html
    # redirect stubs (index.html -> intro.html) are checked by the link test, not visited
    pages = [p.relative_to(html).as_posix() for p in site_pages(html) if not is_redirect(html, p.relative_to(html).as_posix())]
    assert len(pages) > 3, f"only {pages} found in {html}"
    shots = ARTIFACTS / "screenshots"
    start = time.perf_counter()

    audited = set(axe_pages(html, pages))

    def visit_all(theme: str, axe_rules: list[str] | None, suffix: str, visited: list[str]) -> dict[str, PageVisit]:
        with browser_context(tmp_path_factory.mktemp(f"chromium-{theme}"), color_scheme=theme) as (context, blocker):
            return {
                path: _visit(context, blocker, base, path, axe=path in audited, axe_rules=axe_rules, dark=theme == "dark",
                             screenshot=shots / f"{Path(path).stem}{suffix}.jpg" if is_chapter(path) else None)
                for path in visited
            }  # fmt: skip

    with serve(html) as base, ThreadPoolExecutor(max_workers=2) as pool:
        # The two themes in two browsers at once (each thread its own playwright, as its sync API
        # requires): chromium renders and runs axe-core in one process per page, so on two cores
        # the passes overlap. The theme follows the system's colour scheme by default
        # (data-theme="dark"): the dark pass checks text contrast again there, including the
        # HTML tables of the outputs.
        light_pass = pool.submit(visit_all, "light", None, "", pages)
        dark_pass = pool.submit(visit_all, "dark", ["color-contrast"], "-dark", [p for p in pages if p in audited])
        light, dark = light_pass.result(), dark_pass.result()
        served = list(SERVED.get(base, []))
    seconds = time.perf_counter() - start
    report = {
        "seconds": round(seconds, 1),
        "pages": {
            p: {
                "light": {"seconds": round(light[p].seconds, 2), "violations": light[p].axe},
                **({"dark": {"seconds": round(dark[p].seconds, 2), "violations": dark[p].axe}} if p in dark else {}),
            }
            for p in pages
        },
        "counts_by_impact": {
            theme: dict(Counter(v["impact"] for visit in visits.values() for v in visit.axe or []))
            for theme, visits in (("light", light), ("dark", dark))
        },
    }
    ARTIFACTS.mkdir(exist_ok=True)
    (ARTIFACTS / "axe-report.json").write_text(json.dumps(report, indent=2))
    return Audit(html, pages, light, dark, seconds, served)


def _fail_if(problems: dict[str, object], what: str) -> None:
    problems = {k: v for k, v in problems.items() if v}
    assert not problems, f"{what}:\n" + "\n".join(f"  {k}: {v}" for k, v in problems.items())


def test_every_book_page_is_audited(audit):
    toc = yaml.safe_load((ROOT / "_toc.yml").read_text())
    files = [toc["root"]] + [c["file"] for part in toc.get("parts", []) for c in part.get("chapters", [])]
    missing = [f for f in files if f + ".html" not in audit.pages]
    assert not missing, f"pages in _toc.yml that were not built/audited: {missing}"
    assert {"search.html", "genindex.html"} <= set(audit.pages)
    skipped = [p for p in audit.pages if p not in audit.dark]
    assert all(p.startswith("api/") for p in skipped), f"the dark pass skipped pages outside the API reference: {skipped}"
    assert sum(p.startswith("api/") for p in audit.dark) >= 3, "the dark pass visits no sample of the API pages"
    no_axe = [p for p, v in audit.light.items() if v.axe is None]
    assert all(p.startswith("api/") and p not in audit.dark for p in no_axe), f"axe-core did not audit {no_axe}"
    assert {p for p, v in audit.light.items() if v.axe is not None} == set(audit.dark), "the two passes audit different pages"
    target = re.search(r'url=([^"]+)"', (audit.html / "index.html").read_text(), re.IGNORECASE)
    assert target and (audit.html / target.group(1).strip()).exists(), "index.html does not redirect to a built page"


def test_pages_load_without_console_errors(audit):
    _fail_if({p: v.console_errors for p, v in {**audit.light}.items()}, "console errors (light theme)")
    _fail_if({p: v.console_errors for p, v in audit.dark.items()}, "console errors (dark theme)")


def test_no_page_needs_another_host(audit):
    """With every host but 127.0.0.1 blocked, no page even tries to load anything from elsewhere."""
    _fail_if({p: v.blocked for p, v in audit.light.items()}, "requests to other hosts (blocked)")
    _fail_if({p: v.failed_requests for p, v in audit.light.items()}, "failed local requests")


def test_the_server_answers_every_request_favicon_included(audit):
    """No 404 on any page, counted by the server: chromium does not report its favicon requests to the page."""
    assert len(audit.served) >= 2 * len(audit.pages)
    _fail_if({path: f"HTTP {code}" for path, code in audit.served if code >= 400}, "requests the server could not answer")
    icons = {p: urljoin(p, parse_html(audit.html / p).icon or "") for p in audit.pages}
    _fail_if({p: icon for p, icon in icons.items() if icon != "_static/favicon.svg"}, "pages without the book's icon")
    assert any(path.endswith("/_static/favicon.svg") and code == 200 for path, code in audit.served), "no page loaded the favicon"


def test_pages_have_content_and_a_title(audit):
    _fail_if({p: "empty" for p, v in audit.light.items() if v.facts["textLength"] < 20}, "pages without text")
    _fail_if({p: "no title" for p, v in audit.light.items() if not v.facts["title"].strip()}, "pages without a title")


def test_math_is_rendered_from_the_book_itself(audit):
    """MathJax is served from _static/mathjax; every formula renders and none is a TeX error."""
    problems = {}
    for p, v in audit.light.items():
        m = v.facts["math"]
        if m["rendered"] != m["total"] or m["errors"]:
            problems[p] = m
    _fail_if(problems, "math not rendered (rendered of total, errors)")
    assert sum(v.facts["math"]["total"] for v in audit.light.values()) > 0


def test_every_image_has_alt_text_and_loads(audit):
    problems = {}
    for p, v in audit.light.items():
        bad = [img["src"] for img in v.facts["images"] if not img["hidden"] and not (img["alt"] or "").strip()]
        broken = [img["src"] for img in v.facts["images"] if img["visible"] and not img["loaded"]]
        if bad or broken:
            problems[p] = {"no alt": bad, "not loaded": broken}
    _fail_if(problems, "images")


def test_heading_levels_are_in_order(audit):
    problems = {}
    for p, v in audit.light.items():
        levels = [h["level"] for h in v.facts["headings"]]
        if not levels:
            continue
        issues = []
        if levels[0] != 1 or levels.count(1) != 1:
            issues.append(f"expected exactly one h1, first; got {levels}")
        heads = v.facts["headings"]
        issues += [f"h{a} followed by h{b}: {heads[i + 1]['text']!r}" for i, (a, b) in enumerate(zip(levels, levels[1:])) if b > a + 1]
        problems[p] = issues
    _fail_if(problems, "heading levels")


def test_axe_finds_no_serious_or_critical_violation(audit):
    problems = {}
    for theme, visits in (("light", audit.light), ("dark", audit.dark)):
        for p, v in visits.items():
            serious = [f"{x['id']} ({x['impact']}, {x['nodes']} nodes: {x['targets'][:2]})" for x in v.axe or [] if x["impact"] in SERIOUS]
            problems[f"{p} [{theme}]"] = serious
    _fail_if(problems, "axe-core serious/critical violations (details in test-artifacts/axe-report.json)")


def _luminance(css_color: str) -> float:
    """Relative luminance (WCAG) of a computed CSS colour; transparent counts as the dark page (0)."""
    m = re.match(r"rgba?\(([\d.]+),\s*([\d.]+),\s*([\d.]+)(?:,\s*([\d.]+))?\)", css_color)
    if not m or (m.group(4) is not None and float(m.group(4)) < 0.5):
        return 0.0

    def channel(c: float) -> float:
        c /= 255
        return c / 12.92 if c <= 0.03928 else ((c + 0.055) / 1.055) ** 2.4

    r, g, b = (channel(float(m.group(i))) for i in (1, 2, 3))
    return 0.2126 * r + 0.7152 * g + 0.0722 * b


def test_dark_theme_is_really_dark_and_figures_keep_a_light_ground(audit):
    """Figures are drawn for a white page; in the dark theme they must sit on a light background."""
    problems = {}
    for p, v in audit.dark.items():
        if v.facts["theme"] != "dark":
            problems[p] = f"data-theme is {v.facts['theme']!r}"
            continue
        figures = [img for img in v.facts["images"] if img["inOutput"]]
        dark_ground = [f"{img['src']} on {img['background']}" for img in figures if _luminance(img["background"]) < 0.6]
        if dark_ground:
            problems[p] = {"figures without a light background": dark_ground}
    _fail_if(problems, "dark theme")


def _figure_cells(notebook: Path) -> int:
    """Code cells of the committed notebook that declare a figure (alt text in their mystnb metadata)."""
    nb = json.loads(notebook.read_text())
    return sum(1 for c in nb["cells"] if c["cell_type"] == "code" and "image" in c.get("metadata", {}).get("mystnb", {}))


def test_chapters_show_their_precomputed_figures_and_tables(audit):
    """Every declared figure is on the page as a loaded image; every explorer cell shows its static snapshot."""
    chapters = [p for p in audit.pages if is_chapter(p)]
    assert chapters, "no chapter pages were built"
    problems = {}
    for p in chapters:
        facts = audit.light[p].facts
        issues = []
        source = ROOT / Path(p).with_suffix(".ipynb")
        if source.exists():
            want = _figure_cells(source)
            if facts["outputImages"] < want:
                issues.append(f"{facts['outputImages']} loaded images in outputs, the notebook declares {want} figures")
        for cell in facts["widgetCells"]:
            if cell["hasOutput"] and not (cell["snapshot"] and cell["text"] > 0):
                issues.append(f"widget cell in #{cell['id']} shows no static snapshot (table or image)")
        problems[p] = issues
    _fail_if(problems, "chapter outputs")


def test_no_dead_widget_on_the_static_pages(audit):
    """No control that looks live but computes nothing, no widget JS/state, no bare widget repr; every explorer is live."""
    problems = {}
    for p, v in audit.light.items():
        f = v.facts
        issues = []
        if f["explorers"]["live"] != f["explorers"]["total"]:
            issues.append(f"{f['explorers']['live']} of {f['explorers']['total']} explorers became live")
        if f["outputControls"]:
            issues.append(f"form controls in outputs: {f['outputControls'][:3]}")
        if f["widgetScripts"]:
            issues.append(f"{f['widgetScripts']} embedded widget scripts")
        if WIDGET_REPR.search(f["outputText"]):
            issues.append(f"widget repr shown as text: {WIDGET_REPR.search(f['outputText']).group(0)!r}")
        problems[p] = issues
    _fail_if(problems, "dead widgets")


def test_chapter_screenshots_are_saved(audit):
    for p in (p for p in audit.pages if is_chapter(p)):
        for suffix in ("", "-dark"):
            shot = ARTIFACTS / "screenshots" / f"{Path(p).stem}{suffix}.jpg"
            assert shot.exists() and shot.stat().st_size > 10_000, f"missing or empty screenshot {shot}"


def test_internal_links_and_anchors_resolve(audit):
    _fail_if(broken_internal_links(audit.html, audit.pages), "broken internal links")


def test_each_chapter_has_download_and_repository_links(audit):
    repo = yaml.safe_load((ROOT / "_config.yml").read_text())["repository"]["url"].rstrip("/")
    problems = {}
    for p in (p for p in audit.pages if is_chapter(p)):
        links = parse_html(audit.html / p).links
        source = "_sources/" + Path(p).with_suffix(".ipynb").as_posix()
        issues = []
        if not any(link.endswith(source) for link in links):
            issues.append(f"no download link to {source}")
        elif not json.loads((audit.html / source).read_text()).get("cells"):
            issues.append(f"{source} is not a notebook")
        if not any(link.startswith(repo) for link in links):
            issues.append(f"no link to the repository {repo}")
        problems[p] = issues
    _fail_if(problems, "download/repository links")

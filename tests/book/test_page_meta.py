"""What a browser tab and a shared link show: the favicon, the logo and the Open Graph tags of every page.

sphinxext-opengraph writes ``og:title`` (the page title), ``og:description`` and
``<meta name="description">`` (the page's first text), ``og:url`` and one
``og:image`` for every page; link previews need absolute addresses, so they
start with ``ogp_site_url``, the GitHub Pages address of the repository of
``_config.yml`` (a fast test checks that the two agree). On the built book
(slow): every page has the tags, the image is a 1200 x 630 PNG of the site, and
every page links the favicon and shows the logo. That the browser fetches the
favicon without a 404 is checked by tests/web/test_web_pages.py.
"""

from __future__ import annotations

import html as htmllib
import re
import struct
from html.parser import HTMLParser
from pathlib import Path

import pytest
import yaml
from support.paths import ROOT
from support.repository import repository
from support.site import site_pages

IMAGE = "_static/og-image.png"
#: pages that Sphinx writes itself, with no document behind them: they get the icon and the logo, no og: tags
GENERATED = {"genindex.html", "search.html", "py-modindex.html"}


def site_url() -> str:
    return yaml.safe_load((ROOT / "_config.yml").read_text())["sphinx"]["config"]["ogp_site_url"]


class _Head(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.meta: dict[str, str] = {}
        self.icon: str | None = None
        self.logos: list[str] = []

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "meta" and (a.get("property") or a.get("name")):
            self.meta[a.get("property") or a.get("name")] = a.get("content") or ""
        if tag == "link" and a.get("rel") == "icon":
            self.icon = a.get("href")
        if tag == "img" and "logo__image" in (a.get("class") or ""):
            self.logos.append(a.get("src") or "")


def test_published_address_is_the_repositorys_github_pages():
    owner, name, _ = repository()
    assert site_url() == f"https://{owner}.github.io/{name}/", f"ogp_site_url should be https://{owner}.github.io/{name}/"


def test_logo_favicon_and_preview_image_are_in_the_repository():
    config = yaml.safe_load((ROOT / "_config.yml").read_text())
    assert (ROOT / config["logo"]).is_file() and config["logo"].endswith(".svg")
    assert (ROOT / config["html"]["favicon"]).is_file()
    png = (ROOT / IMAGE).read_bytes()
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    assert struct.unpack(">II", png[16:24]) == (1200, 630), "the preview image should be 1200 x 630 pixels"


def _open_graph_problems(m: dict[str, str], base: str, page: str) -> list[str]:
    issues = []
    if not m.get("og:title", "").strip():
        issues.append("no og:title")
    if len(m.get("og:description", "")) < 20 or m.get("description") != m.get("og:description"):
        issues.append(f"description {m.get('og:description')!r}")
    if m.get("og:url") != base + page:
        issues.append(f"og:url {m.get('og:url')!r}")
    if m.get("og:image") != base + IMAGE or not m.get("og:image:alt"):
        issues.append(f"og:image {m.get('og:image')!r}")
    if m.get("og:site_name") != "Deriving Attention" or m.get("twitter:card") != "summary_large_image":
        issues.append(f"site name {m.get('og:site_name')!r}, card {m.get('twitter:card')!r}")
    return issues


@pytest.mark.slow
def test_every_page_has_title_description_and_preview_image_for_a_shared_link(web_html):
    base = site_url()
    assert (web_html / IMAGE).is_file(), f"{IMAGE} is not in the built site"
    problems = {}
    pages = [p.relative_to(web_html).as_posix() for p in site_pages(web_html)]
    for page in pages:
        text = (web_html / page).read_text(encoding="utf-8")
        if re.search(r'http-equiv="refresh"', text, re.IGNORECASE):
            continue  # the redirect from index.html
        head = _Head()
        head.feed(text)
        issues = [] if page in GENERATED else _open_graph_problems(head.meta, base, page)
        if head.icon is None or not (web_html / page).parent.joinpath(head.icon).resolve().is_file():
            issues.append(f"icon {head.icon!r}")
        if not head.logos or not all((web_html / page).parent.joinpath(src).resolve().is_file() for src in head.logos):
            issues.append(f"logo {head.logos}")
        if issues:
            problems[page] = issues
    assert problems == {}, "\n".join(f"{p}: {v}" for p, v in problems.items())
    # a chapter's description is its own opening prose, not the book's
    chapter = _Head()
    chapter.feed((web_html / "chapters" / "05-scaling.html").read_text(encoding="utf-8"))
    front = _Head()
    front.feed((web_html / "intro.html").read_text(encoding="utf-8"))
    assert chapter.meta["og:description"] != front.meta["og:description"]
    assert "Deriving Attention" in htmllib.unescape(front.meta["og:title"])
    assert Path(chapter.icon).name == "favicon.svg"

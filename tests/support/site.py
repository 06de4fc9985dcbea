"""The built site's structure without a browser: ids, links and resources of a page, the pages, broken links."""

from __future__ import annotations

from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urljoin, urlparse


class PageParser(HTMLParser):
    """Collect element ids and the targets of links and resources of one HTML file."""

    def __init__(self) -> None:
        super().__init__()
        self.ids: set[str] = set()
        self.links: list[str] = []
        self.resources: list[str] = []
        self.icon: str | None = None

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        for key in ("id", "name") if tag == "a" else ("id",):
            if a.get(key):
                self.ids.add(a[key])
        if tag == "a" and a.get("href"):
            self.links.append(a["href"])
        if tag in ("img", "script") and a.get("src"):
            self.resources.append(a["src"])
        if tag == "link" and a.get("rel") == "icon":
            self.icon = a.get("href")
        if tag == "link" and a.get("href") and a.get("rel") in ("stylesheet", "preload", "icon"):
            self.resources.append(a["href"])


def parse_html(path: Path) -> PageParser:
    parser = PageParser()
    parser.feed(path.read_text(encoding="utf-8"))
    return parser


def site_pages(html_root: Path) -> list[Path]:
    """Every HTML page of the built site, except files copied verbatim (e.g. a JupyterLite site)."""
    skip = {"_static", "_sources", "_images", "lite", "_downloads"}
    return sorted(p for p in html_root.rglob("*.html") if not (set(p.relative_to(html_root).parts[:-1]) & skip))


def broken_internal_links(html_root: Path, pages: list[str]) -> dict[str, list[str]]:
    """For each page (path relative to ``html_root``), its links and resources to missing files or anchors."""
    parsed = {p: parse_html(html_root / p) for p in pages}
    problems: dict[str, list[str]] = {}
    for p, info in parsed.items():
        base = "http://book.invalid/" + p
        bad = []
        for href in info.links + info.resources:
            url = urlparse(urljoin(base, href))
            if url.scheme not in ("http", "https") or url.hostname != "book.invalid":
                continue  # external link, mailto:, javascript:, data:
            target = html_root / unquote(url.path.lstrip("/"))
            if target.is_dir():
                target = target / "index.html"
            if not target.exists():
                bad.append(f"{href} (no file)")
                continue
            if url.fragment and target.suffix == ".html":
                rel = target.relative_to(html_root).as_posix()
                ids = parsed[rel].ids if rel in parsed else parse_html(target).ids
                if unquote(url.fragment) not in ids:
                    bad.append(f"{href} (no anchor)")
        problems[p] = sorted(set(bad))
    return problems

"""Debian's chromium driven by playwright, with every host but 127.0.0.1 blocked.

The browser is the system ``/usr/bin/chromium`` (``pdf/chromium.py`` names it and its
flags once for the whole project; ``.ci/run`` installs it). Playwright's own browser
downloads are never used. Every request to a host other than 127.0.0.1 fails and is
recorded, so a page that needs a CDN shows up as a failure instead of passing on a machine
that happens to be online.

The blocking is chromium's own (:data:`BLOCK_OTHER_HOSTS`: every host name resolves to
nothing, 127.0.0.1 is an address and needs no resolving); playwright only listens
(``request`` events). An earlier version routed every request through playwright
(``context.route("**/*")``) to let it through or abort it: each of a chapter page's ~45
requests then waited for a round trip to this Python process, which made a page load
~100-250 ms slower and cost ~0.2-0.5 s of CPU a page (measured on the chapters of a
built book, 28 pages in a row, 2026-12-02). A test that needs to abort requests to
127.0.0.1 itself still routes those (``context.route(pattern, ...)`` intercepts only what
the pattern matches).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlparse

from pdf.chromium import CHROMIUM, CHROMIUM_ARGS, INSTALL_HINT
from support.paths import ROOT

AXE_JS = ROOT / "node_modules" / "axe-core" / "axe.min.js"


def require_chromium() -> Path:
    """Fail (never skip) with the install command when Debian's chromium is missing."""
    assert CHROMIUM.exists(), (
        f"{CHROMIUM} is missing: the browser tests need Debian's chromium. "
        f"Install it with `{INSTALL_HINT}` (.ci/run does this)."
    )
    return CHROMIUM


#: chromium's flag that makes every request to another host fail (its host name resolves to nothing)
BLOCK_OTHER_HOSTS = "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1"


@dataclass
class Blocker:
    """Records every request to a host other than 127.0.0.1 (chromium makes them fail: BLOCK_OTHER_HOSTS)."""

    blocked: list[str] = field(default_factory=list)

    def __call__(self, request) -> None:
        url = urlparse(request.url)
        if url.scheme in ("http", "https", "ws", "wss") and url.hostname != "127.0.0.1":
            self.blocked.append(request.url)


def _launch(pw, user_data_dir: Path, options: dict) -> tuple[object, Blocker]:
    options = dict(options)
    options.setdefault("viewport", {"width": 1280, "height": 900})
    context = pw.chromium.launch_persistent_context(
        str(user_data_dir),
        executable_path=str(CHROMIUM),
        headless=True,
        args=[*CHROMIUM_ARGS, BLOCK_OTHER_HOSTS],
        **options,
    )
    blocker = Blocker()
    context.on("request", blocker)
    return context, blocker


@contextmanager
def browser_context(user_data_dir: Path, **options) -> Iterator[tuple[object, Blocker]]:
    """A fresh chromium profile with every host but 127.0.0.1 blocked; yields (context, blocker)."""
    with browser_contexts([(user_data_dir, options)]) as ((context, blocker),):
        yield context, blocker


@contextmanager
def browser_contexts(profiles: list[tuple[Path, dict]]) -> Iterator[list[tuple[object, Blocker]]]:
    """Several chromium profiles (user data folder, launch options) from one playwright; yields [(context, blocker)]."""
    from playwright.sync_api import sync_playwright

    require_chromium()
    with sync_playwright() as pw:
        opened = []
        try:
            for user_data_dir, options in profiles:
                opened.append(_launch(pw, user_data_dir, options))
            yield opened
        finally:
            for context, _ in opened:
                context.close()

"""Debian's chromium driven by playwright, with every host but 127.0.0.1 blocked.

The browser is the system ``/usr/bin/chromium`` (``pdf/chromium.py`` names it and its
flags once for the whole project; ``.ci/run`` installs it). Playwright's own browser
downloads are never used. Every request to a host other than 127.0.0.1 is aborted and
recorded, so a page that needs a CDN shows up as a failure instead of passing on a machine
that happens to be online.
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


@dataclass
class Blocker:
    """Route handler that lets 127.0.0.1 through and aborts (and records) everything else."""

    blocked: list[str] = field(default_factory=list)

    def __call__(self, route) -> None:
        url = route.request.url
        if urlparse(url).hostname == "127.0.0.1":
            route.continue_()
        else:
            self.blocked.append(url)
            route.abort("blockedbyclient")


def _launch(pw, user_data_dir: Path, options: dict) -> tuple[object, Blocker]:
    options = dict(options)
    options.setdefault("viewport", {"width": 1280, "height": 900})
    context = pw.chromium.launch_persistent_context(
        str(user_data_dir),
        executable_path=str(CHROMIUM),
        headless=True,
        args=CHROMIUM_ARGS,
        **options,
    )
    blocker = Blocker()
    context.route("**/*", blocker)
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

"""Helpers for the browser tests: serve a built site on 127.0.0.1 and drive Debian's chromium.

The browser is the system ``/usr/bin/chromium`` (``apt-get install chromium``;
``.ci/run`` installs it), driven through the Python ``playwright`` package.
Playwright's own browser downloads are never used. Every request to a host
other than 127.0.0.1 is aborted and recorded, so a page that needs a CDN shows
up as a failure instead of passing on a machine that happens to be online.
"""

from __future__ import annotations

import functools
import http.server
import os
import secrets
import signal
import socket
import socketserver
import subprocess
import sys
import threading
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urljoin, urlparse

CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-dev-shm-usage",
]
ROOT = Path(__file__).resolve().parent.parent
ARTIFACTS = ROOT / "test-artifacts"
AXE_JS = ROOT / "node_modules" / "axe-core" / "axe.min.js"


def require_chromium() -> Path:
    """Fail (never skip) with the install command when Debian's chromium is missing."""
    assert CHROMIUM.exists(), (
        f"{CHROMIUM} is missing: the browser tests need Debian's chromium. "
        "Install it with `apt-get update && apt-get install -y chromium` (.ci/run does this)."
    )
    return CHROMIUM


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    # explicit types for what JupyterLite's Pyodide kernel loads (workers, modules, wasm)
    extensions_map = {
        **http.server.SimpleHTTPRequestHandler.extensions_map,
        ".js": "text/javascript",
        ".mjs": "text/javascript",
        ".wasm": "application/wasm",
        ".json": "application/json",
    }

    def log_message(self, format, *args):  # noqa: A002 (signature of the base class)
        pass

    def log_request(self, code="-", size="-"):
        # every answer, kept for the tests: the browser does not report every request (the favicon)
        if isinstance(code, int):
            SERVED.setdefault(f"http://127.0.0.1:{self.server.server_address[1]}/", []).append((self.path, int(code)))


#: what each server of serve() answered, by its base URL: (path, HTTP status) in order
SERVED: dict[str, list[tuple[str, int]]] = {}


class _Server(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True
    allow_reuse_address = True


@contextmanager
def serve(directory: Path) -> Iterator[str]:
    """Serve ``directory`` over HTTP on a free port of 127.0.0.1; yield the base URL (ending in /)."""
    handler = functools.partial(_QuietHandler, directory=str(directory))
    server = _Server(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    base = f"http://127.0.0.1:{server.server_address[1]}/"
    SERVED[base] = []
    try:
        yield base
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)


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


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextmanager
def jupyterlab(root: Path, home: Path) -> Iterator[tuple[str, str]]:
    """A JupyterLab server from this environment on 127.0.0.1 serving ``root``; yields (base_url, token).

    Its settings, runtime and config live in ``home`` (every cell stays in the page, no news);
    the server and the kernels it started are stopped afterwards.
    """
    port, token = _free_port(), secrets.token_hex(16)
    settings = {
        "@jupyterlab/notebook-extension/tracker.jupyterlab-settings": '{"windowingMode": "none"}',
        "@jupyterlab/apputils-extension/notification.jupyterlab-settings": '{"fetchNews": "false", "checkForUpdates": false}',
    }
    for rel, text in settings.items():
        target = home / "settings" / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text)
    env = dict(
        os.environ,
        JUPYTER_RUNTIME_DIR=str(home / "runtime"),
        JUPYTER_CONFIG_DIR=str(home / "config"),
        JUPYTERLAB_WORKSPACES_DIR=str(home / "workspaces"),
        JUPYTERLAB_SETTINGS_DIR=str(home / "settings"),
        IPYTHONDIR=str(home / "ipython"),
        PYTHONPATH=os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])),
    )
    env.pop("MPLBACKEND", None)
    cmd = [
        sys.executable, "-m", "jupyterlab",
        "--no-browser", "--ServerApp.ip=127.0.0.1", f"--ServerApp.port={port}", "--ServerApp.port_retries=0",
        f"--IdentityProvider.token={token}", f"--ServerApp.root_dir={root}",
        "--LabApp.expose_app_in_browser=True", "--LabApp.news_url=", "--LabServerApp.open_browser=False",
        "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate", "--ServerApp.allow_root=True",
    ]  # fmt: skip
    log_path = home / "server.log"
    log = open(log_path, "w")  # noqa: SIM115 - closed below
    proc = subprocess.Popen(cmd, cwd=root, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 40
        while True:
            if proc.poll() is not None:
                raise RuntimeError(f"JupyterLab exited with {proc.returncode}:\n{log_path.read_text()[-3000:]}")
            try:
                with urllib.request.urlopen(f"{base}/api/status?token={token}", timeout=2) as r:
                    if r.status == 200:
                        break
            except OSError:
                pass
            if time.monotonic() > deadline:
                raise RuntimeError(f"JupyterLab did not answer within 40 s:\n{log_path.read_text()[-3000:]}")
            time.sleep(0.3)
        yield base, token
    finally:
        # the server's own process group: the server and the kernels it started
        try:
            os.killpg(proc.pid, signal.SIGTERM)
            proc.wait(timeout=10)
        except (ProcessLookupError, subprocess.TimeoutExpired):
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            proc.wait(timeout=5)
        log.close()


# JavaScript: JupyterLab's current notebook has a kernel and it is idle
KERNEL_IDLE_JS = """() => {
  const w = window.jupyterapp && window.jupyterapp.shell.currentWidget;
  const k = w && w.sessionContext && w.sessionContext.session && w.sessionContext.session.kernel;
  return k && k.status === 'idle';
}"""

# JavaScript: every code cell of the current notebook ran and the kernel is idle
ALL_CELLS_RAN_JS = """() => { const w = window.jupyterapp.shell.currentWidget;
  return w.sessionContext.session.kernel.status === 'idle'
         && [...w.content.widgets].every(c => c.model.type !== 'code' || c.model.executionCount); }"""

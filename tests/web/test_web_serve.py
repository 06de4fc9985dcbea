"""``python3 dev.py serve``: the way the README tells readers to open the built book.

The real command runs as a subprocess on a free port of 127.0.0.1 and serves the built site; in
headless Debian chromium (every host but 127.0.0.1 blocked) the playground's explorer becomes live
there. Opened as a file (``file://``), where chromium does not run ES modules, the same page keeps
its static snapshot and its note says why and names ``python3 dev.py serve``.
"""

from __future__ import annotations

import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from support.browser import browser_context
from support.paths import ROOT

pytestmark = pytest.mark.slow

PLAYGROUND = "chapters/playground.html"
MOUNTED_JS = "() => document.querySelectorAll('div.attnlib-explorer.attnlib-mounted').length"
NOTES_JS = "() => [...document.querySelectorAll('p.attnlib-snapshot-note')].map(p => p.innerText)"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextmanager
def dev_serve(site: Path, port: int) -> Iterator[tuple[str, subprocess.Popen]]:
    """``python3 dev.py serve --port PORT --dir SITE`` until the block ends; yields (the URL it printed, the process)."""
    proc = subprocess.Popen(
        [sys.executable, ROOT / "dev.py", "serve", "--port", str(port), "--dir", str(site)],
        cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
    )  # fmt: skip
    try:
        first = proc.stdout.readline()
        url = next((word for word in first.split() if word.startswith("http://")), None)
        assert url, f"dev.py serve printed no address: {first!r} (exit code {proc.poll()})"
        yield url, proc
    finally:
        proc.terminate()
        proc.wait(timeout=10)
        proc.stdout.close()


def test_dev_serve_makes_the_playground_live(web_html, tmp_path):
    port = _free_port()
    with dev_serve(web_html, port) as (url, proc), browser_context(tmp_path / "profile") as (context, blocker):
        assert url == f"http://127.0.0.1:{port}/", url
        page = context.new_page()
        page.goto(url + PLAYGROUND, wait_until="load")
        page.wait_for_function(f"() => ({MOUNTED_JS})() > 0", timeout=20_000)
        assert proc.poll() is None
        assert blocker.blocked == []


def test_file_page_says_why_the_explorer_is_not_live(web_html, tmp_path):
    with browser_context(tmp_path / "profile") as (context, blocker):
        page = context.new_page()
        page.goto((web_html / PLAYGROUND).resolve().as_uri(), wait_until="load")
        time.sleep(1)  # time for a module that would mount the explorer (chromium refuses them from files)
        assert page.evaluate(MOUNTED_JS) == 0, "an explorer mounted from file://: the note would be wrong"
        notes = page.evaluate(NOTES_JS)
        assert notes, "no snapshot note on the playground"
        for note in notes:
            assert "python3 dev.py serve" in note and "file://" in note, note
        assert blocker.blocked == []


def test_dev_serve_refuses_a_bad_port_by_name():
    done = subprocess.run([sys.executable, ROOT / "dev.py", "serve", "--port", "http"], cwd=ROOT,
                          capture_output=True, text=True, timeout=60)
    assert done.returncode != 0 and "--port" in done.stderr, done.stderr

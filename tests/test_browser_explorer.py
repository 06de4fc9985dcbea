"""The explorer in a real browser: JupyterLab on 127.0.0.1, headless Debian chromium, a slider moved by keyboard.

The test starts a JupyterLab server from this environment on a free port with a random
token, serving a temporary copy of the playground page (so nothing in the repository is
touched), opens it in ``/usr/bin/chromium`` through the ``playwright`` package (never
``playwright install``), runs all cells, presses the right-arrow key on the W_Q[1,1]
slider, and checks that the weights table on the page changes to what
``attnlib.self_attention`` computes for the slider's new value. Everything is stopped
afterwards. A missing chromium is a failure with the install command, not a skip.
"""

from __future__ import annotations

import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import numpy as np
import pytest
from web_support import browser_context

import attnlib
from attnlib.plots import format_value

ROOT = Path(__file__).resolve().parent.parent
PLAYGROUND = ROOT / "chapters" / "playground.ipynb"
TIMEOUT_MS = 45_000

# JavaScript: the displayed text of each weights cell of the first explorer (without the
# screen-reader-only "changed from" text and the arrow), as rows of strings.
READ_WEIGHTS = """() => {
  const t = document.querySelector('.attnlib-explorer table[data-view="weights"]');
  if (!t) return null;
  const rows = [];
  for (const td of t.querySelectorAll('td[data-i][data-j]')) {
    const c = td.cloneNode(true);
    c.querySelectorAll('span').forEach(s => s.remove());
    const i = +td.dataset.i, j = +td.dataset.j;
    (rows[i] = rows[i] || [])[j] = c.textContent.trim();
  }
  return rows;
}"""


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    """A JupyterLab server serving a copy of the playground; yields (base_url, token)."""
    root = tmp_path_factory.mktemp("lab-root")
    shutil.copy(PLAYGROUND, root / "playground.ipynb")
    home = tmp_path_factory.mktemp("lab-home")
    port, token = _free_port(), secrets.token_hex(16)
    # keep every cell in the page (no virtual scrolling) and ask for no news
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
        PYTHONPATH=str(ROOT),
    )
    env.pop("MPLBACKEND", None)
    cmd = [
        sys.executable, "-m", "jupyterlab",
        "--no-browser", "--ServerApp.ip=127.0.0.1", f"--ServerApp.port={port}", "--ServerApp.port_retries=0",
        f"--IdentityProvider.token={token}", f"--ServerApp.root_dir={root}",
        "--LabApp.expose_app_in_browser=True", "--LabApp.news_url=", "--LabServerApp.open_browser=False",
        "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate", "--ServerApp.allow_root=True",
    ]  # fmt: skip
    log = open(home / "server.log", "w")  # noqa: SIM115 - closed in the teardown
    proc = subprocess.Popen(cmd, cwd=root, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 40
        while True:
            if proc.poll() is not None:
                pytest.fail(f"JupyterLab exited with {proc.returncode}:\n{(home / 'server.log').read_text()[-3000:]}")
            try:
                with urllib.request.urlopen(f"{base}/api/status?token={token}", timeout=2) as r:
                    if r.status == 200:
                        break
            except OSError:
                pass
            if time.monotonic() > deadline:
                pytest.fail(f"JupyterLab did not answer within 40 s:\n{(home / 'server.log').read_text()[-3000:]}")
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


def _expected_weights(w_q00: float) -> list[list[str]]:
    W_Q = np.eye(2)
    W_Q[0, 0] = w_q00
    r = attnlib.self_attention(attnlib.running_example(), W_Q, np.eye(2), np.eye(2))
    return [[format_value(float(v)) for v in row] for row in r.weights]


def test_moving_a_slider_in_jupyterlab_updates_the_weights(lab, tmp_path):
    base, token = lab
    started = time.monotonic()
    # a fresh chromium profile; every host but 127.0.0.1 is blocked
    with browser_context(tmp_path / "profile", viewport={"width": 1400, "height": 1000}) as (context, _blocker):
        page = context.new_page()
        try:
            page.set_default_timeout(TIMEOUT_MS)
            page.goto(f"{base}/lab/tree/playground.ipynb?reset&token={token}")
            page.wait_for_function(
                """() => {
                  const w = window.jupyterapp && window.jupyterapp.shell.currentWidget;
                  const k = w && w.sessionContext && w.sessionContext.session && w.sessionContext.session.kernel;
                  return k && k.status === 'idle';
                }"""
            )
            print(f"{time.monotonic() - started:.1f}s kernel idle")
            page.evaluate("() => window.jupyterapp.commands.execute('notebook:run-all-cells')")
            # both explorers of the page are drawn and the kernel is done with every cell
            page.wait_for_function("() => document.querySelectorAll('.attnlib-explorer').length === 2")
            print(f"{time.monotonic() - started:.1f}s explorers drawn")
            page.wait_for_function(
                """() => { const w = window.jupyterapp.shell.currentWidget;
                           return w.sessionContext.session.kernel.status === 'idle'
                                  && [...w.content.widgets].every(c => c.model.type !== 'code' || c.model.executionCount); }"""
            )
            print(f"{time.monotonic() - started:.1f}s all cells ran")
            page.wait_for_function(f"() => JSON.stringify(({READ_WEIGHTS})()) === {_js(_expected_weights(1.0))}")
            before = page.evaluate(READ_WEIGHTS)
            assert before[0] == ["0.4555", "0.2246", "0.3199"]

            slider = page.locator(".attnlib-explorer").first.locator(".attnlib-W_Q-0-0")
            handle = slider.locator(".noUi-handle").first
            handle.focus()
            pressed = time.monotonic()
            for _ in range(4):
                page.keyboard.press("ArrowRight")
            page.wait_for_function(
                "(el) => el.textContent.trim() !== '1.00'", arg=slider.locator(".widget-readout").element_handle()
            )
            moved_to = float(slider.locator(".widget-readout").inner_text().strip())
            assert moved_to > 1.0, f"the slider did not move right (readout {moved_to})"
            want = _expected_weights(moved_to)
            try:
                page.wait_for_function(f"() => JSON.stringify(({READ_WEIGHTS})()) === {_js(want)}", timeout=15_000)
            except Exception:  # show what the page has instead
                pytest.fail(f"weights on the page {page.evaluate(READ_WEIGHTS)} != attnlib's {want} for W_Q[1,1] = {moved_to}")
            after = page.evaluate(READ_WEIGHTS)
            print(f"4 key presses to weights updated on the page: {1000 * (time.monotonic() - pressed):.0f} ms")
            assert after == want and after != before
            # the moved cells are marked as changed on the page
            assert page.locator(".attnlib-explorer").first.locator('table[data-view="weights"] td.attnlib-changed').count() >= 1
            page.locator(".attnlib-explorer").first.screenshot(path=str(tmp_path / "explorer.png"))
            print(f"W_Q[1,1] moved to {moved_to}; weights on the page {after}; screenshot {tmp_path / 'explorer.png'}")
            status = page.locator(".attnlib-explorer").first.locator(".attnlib-status").inner_text()
            assert f"to {moved_to:.2f}" in status
        except Exception:
            shot = tmp_path / "failure.png"
            page.screenshot(path=str(shot), full_page=True)
            print(f"screenshot of the failure: {shot}")
            raise
    assert time.monotonic() - started < 90


def _js(rows: list[list[str]]) -> str:
    import json

    return json.dumps(json.dumps(rows, separators=(",", ":")))

"""Local servers for the tests, on 127.0.0.1 only: a static file server and a JupyterLab server."""

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
from pathlib import Path

from support.paths import ROOT


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

#: JavaScript for JupyterLab's page: run code in the current notebook's kernel and return what it printed
RUN_IN_KERNEL = """async (code) => {
  const kernel = window.jupyterapp.shell.currentWidget.sessionContext.session.kernel;
  const future = kernel.requestExecute({code, store_history: false});
  let out = '';
  future.onIOPub = (msg) => {
    if (msg.header.msg_type === 'stream') out += msg.content.text;
    if (msg.header.msg_type === 'error') out += 'ERROR ' + msg.content.ename + ': ' + msg.content.evalue;
  };
  await future.done;
  return out;
}"""

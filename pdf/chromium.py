"""The browser this project drives, defined once: Debian's chromium and the flags it is started with.

Used by the PDF printer (``pdf/make_pdf.py``), the browser tests
(``tests/support/browser.py``), the speed benchmark and ``dev.py``. Only the
system ``/usr/bin/chromium`` is used (``apt-get install chromium``), never a
browser that playwright downloads. The flags keep a headless run on this
closed network quiet: no sandbox (the tests run as root), no GPU, no first-run
pages and none of the background connections chromium would try to make.
Standard library only, so that ``dev.py`` can import it before any install.
"""

from __future__ import annotations

from pathlib import Path

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
INSTALL_HINT = "apt-get update && apt-get install -y chromium"

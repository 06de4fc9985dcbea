"""Live explorers in the static web book: attnlib's front-end modules, served by the book itself.

Every explorer cell's ``text/html`` output is a ``<div class="attnlib-explorer">`` holding
the state the cell produced (as JSON) and a static snapshot (see ``attnlib.explorers``).
This extension

* copies the front-end files (``attnlib.explorers.frontend.write_modules``: the ES modules,
  ``host.js`` and the stylesheet) into ``<html>/_explorers/`` when the build finishes. Not
  into ``_static/``: Jupyter Book 1 adds a ``<script>`` for every ``.js`` file there to
  every page;
* adds ``<script type="module" async src=".../_explorers/host.js">`` to the pages whose body
  contains an explorer, and to no other page. ``host.js`` mounts each explorer live in the
  page (no kernel, nothing from another host) and hides the snapshot, which stays for
  print and for readers without JavaScript. The page's ``<head>`` also links the stylesheet
  and ``modulepreload``s the modules it will import, so they download while the page parses.
"""

from __future__ import annotations

import re
from pathlib import Path

from sphinx.application import Sphinx
from sphinx.builders.html._assets import _JavaScript
from sphinx.util import logging

from attnlib.explorers.frontend import CSS, KINDS, SHARED, write_modules

logger = logging.getLogger(__name__)

#: Folder of the front-end files inside the built site.
TARGET = "_explorers"
HOST = f"{TARGET}/host.js"
MARKER = 'class="attnlib-explorer"'
KIND = re.compile(r'class="attnlib-explorer" data-attnlib-kind="([a-z_]+)"')


def page_has_explorer(body: str) -> bool:
    """Whether a page body contains an explorer (its output div)."""
    return MARKER in body


def head_links(body: str, pathto) -> str:
    """``<head>`` links that let the browser fetch the explorers' files while it parses the page:
    the stylesheet, and a ``modulepreload`` for the shared modules and each kind on the page."""
    kinds = sorted(set(KIND.findall(body)) & set(KINDS))
    modules = [*SHARED, *(f"{kind}.js" for kind in kinds)]
    links = [f'<link rel="stylesheet" href="{pathto(f"{TARGET}/{CSS}", 1)}" data-attnlib-css="">']
    links += [f'<link rel="modulepreload" href="{pathto(f"{TARGET}/{name}", 1)}">' for name in modules]
    return "\n".join(links) + "\n"


def _add_host(app: Sphinx, pagename: str, templatename: str, context: dict, doctree) -> None:
    body = context.get("body", "")
    if page_has_explorer(body):
        # this page only, and relative to the site's root (app.add_js_file would put it under _static/)
        # async: the host runs as soon as it and its modules are loaded, before the theme's deferred scripts
        # and MathJax, and mounts each explorer as the parser reaches it (static/host.js)
        context.setdefault("script_files", []).append(_JavaScript(HOST, type="module", **{"async": "async"}))
        context["metatags"] = context.get("metatags", "") + head_links(body, context["pathto"])


def _copy(app: Sphinx, exception: Exception | None) -> None:
    if exception is not None or app.builder.format != "html":
        return
    written = write_modules(Path(app.outdir) / TARGET)
    size = sum(p.stat().st_size for p in written)
    logger.info(f"live_explorers: {len(written)} front-end files ({size} bytes) in {Path(app.outdir) / TARGET}")


def setup(app: Sphinx) -> dict:
    app.connect("html-page-context", _add_host)
    app.connect("build-finished", _copy)
    return {"parallel_read_safe": True, "parallel_write_safe": True, "version": "1"}

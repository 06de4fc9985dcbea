"""Live explorers in the static web book: attnlib's front-end modules, served by the book itself.

Every explorer cell's ``text/html`` output is a ``<div class="attnlib-explorer">`` holding
the state the cell produced (as JSON) and a static snapshot (see ``attnlib.explorers``).
This extension

* copies the front-end files (``attnlib.explorers.frontend.write_modules``: the ES modules,
  ``host.js`` and the stylesheet) into ``<html>/_explorers/`` when the build finishes. Not
  into ``_static/``: Jupyter Book 1 adds a ``<script>`` for every ``.js`` file there to
  every page;
* adds an entry module (``<script type="module">``, :func:`entry_module`, the first script of
  the page) to the pages whose body contains an explorer, and to no other page: it imports
  ``host.js`` and the kinds of the page and starts the host as soon as the page is parsed, before
  the theme's deferred scripts and MathJax. The host mounts each explorer live in the page (no
  kernel, nothing from another host) and hides the snapshot, which stays for print and for
  readers without JavaScript. The page's ``<head>`` also links the stylesheet and ``modulepreload``s the
  modules it will import, so they download while the page parses.
"""

from __future__ import annotations

import re
from pathlib import Path

from sphinx.application import Sphinx
from sphinx.util import logging

from attnlib.explorers import frontend
from attnlib.explorers.frontend import CSS, SHARED, write_modules

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
    modules = [*SHARED, HOST.removeprefix(f"{TARGET}/"), *(f"{kind}.js" for kind in page_kinds(body))]
    links = [f'<link rel="stylesheet" href="{pathto(f"{TARGET}/{CSS}", 1)}" data-attnlib-css="">']
    links += [f'<link rel="modulepreload" href="{pathto(f"{TARGET}/{name}", 1)}">' for name in modules]
    return "\n".join(links) + "\n"


def page_kinds(body: str) -> list[str]:
    """The registered kinds of the explorers in a page body, sorted."""
    return sorted(set(KIND.findall(body)) & set(frontend.KINDS))


def entry_module(body: str, pathto) -> str:
    """The page's entry: a module importing the host and the page's kinds, then ``start(modules)``.

    Static imports (not the host's dynamic ``import()``, which would wait for a later task, behind
    MathJax) let the host mount every explorer in the turn it starts.
    """
    kinds = page_kinds(body)
    lines = [f'import {{ start }} from "{pathto(HOST, 1)}";']
    lines += [f'import * as k{i} from "{pathto(f"{TARGET}/{kind}.js", 1)}";' for i, kind in enumerate(kinds)]
    lines.append("start({" + ", ".join(f'"{kind}": k{i}' for i, kind in enumerate(kinds)) + "});")
    return "\n".join(lines)


def _add_host(app: Sphinx, pagename: str, templatename: str, context: dict, doctree) -> None:
    body = context.get("body", "")
    if page_has_explorer(body):
        # this page only, and relative to the site's root (app.add_js_file would put it under _static/).
        # A module script is deferred: it runs when the page is parsed, in document order with the other
        # deferred scripts. In the metatags (the top of <head>, before the theme's fontawesome.js and the
        # script files) it runs before the theme's scripts and MathJax, which take hundreds of milliseconds
        # on a chapter page: the explorers are live before the formulas are typeset.
        entry = f'<script type="module">{entry_module(body, context["pathto"])}</script>\n'
        context["metatags"] = context.get("metatags", "") + head_links(body, context["pathto"]) + entry


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

"""Live explorers in the static web book: attnlib's front-end modules, served by the book itself.

Every explorer cell's ``text/html`` output is a ``<div class="attnlib-explorer">`` holding
the state the cell produced (as JSON) and a static snapshot (see ``attnlib.explorers``).
This extension

* copies the front-end files (``attnlib.explorers.frontend.write_modules``: the ES modules,
  ``host.js`` and the stylesheet) into ``<html>/_explorers/`` when the build finishes. Not
  into ``_static/``: Jupyter Book 1 adds a ``<script>`` for every ``.js`` file there to
  every page;
* adds an entry module (:func:`entry_module`, the first scripts of the page) to the pages whose body
  contains an explorer, and to no other page: it imports ``host.js`` and the kinds of the page and
  starts the host as soon as these modules are there. It is written twice (:func:`entry_scripts`):
  once as an ``async`` module, which may run while the page is still being parsed, and once as a
  plain (deferred) module, which runs when parsing ends, before every deferred script of the theme
  and MathJax. Whichever runs first starts the host (``start()`` runs once); the modules are fetched
  and evaluated once. The async one alone was at the mercy of chromium's scheduler: on chapter 15 it
  ran after MathJax, at DOMContentLoaded, in 1 of 10 loads in one run and in at least 5 of 9 in
  another (median 1,118 ms; first live 1.1-1.3 s instead of ~0.3 s, 2026-12-02). The host mounts
  each explorer live as soon as the parser has reached it (no kernel, nothing from another host)
  and hides the snapshot, which stays for print and for readers without JavaScript. The page's
  ``<head>`` also links the stylesheet and ``modulepreload``s the modules it will import, so they
  download while the page parses;
* tells the reader why an explorer is not live when the page was opened as a file (``file://``):
  browsers do not run ES modules there, so the host never starts and the static snapshot stays.
  A small classic script (:func:`file_page_script`, which does run from a file) replaces each
  snapshot's note with :data:`FILE_NOTE`, which says why and names ``python3 dev.py serve``. Only
  the web build gets it: the single-page build is printed from a file on purpose (the PDF);
* lets the parser reach the explorers sooner on every page: the extensions' script files in the
  ``<head>`` (doctools, copybutton, the book theme's, togglebutton, ...) are loaded with ``defer``
  (:func:`deferred_scripts`), which keeps their order and runs them before ``DOMContentLoaded``, as
  before (except on the search page, whose own blocking search scripts need ``doctools.js``
  first). Only ``documentation_options.js`` stays a blocking script: inline scripts of the theme
  use the ``DOCUMENTATION_OPTIONS`` it defines. The theme's search scripts (``searchindex.js``
  among them), which pydata-sphinx-theme's ``layout.html`` writes as blocking scripts into every
  page, are deferred by ``_templates/layout.html``.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from sphinx.application import Sphinx
from sphinx.builders.html._assets import _JavaScript
from sphinx.util import logging

from attnlib.explorers import frontend
from attnlib.explorers.frontend import CSS, write_modules

logger = logging.getLogger(__name__)

#: Folder of the front-end files inside the built site.
TARGET = "_explorers"
HOST = f"{TARGET}/host.js"
MARKER = 'class="attnlib-explorer"'
KIND = re.compile(r'class="attnlib-explorer" data-attnlib-kind="([a-z_]+)"')


#: What each snapshot's note says instead when the page was opened from a file (file://), where the live
#: explorer cannot start. One definition for the page and the tests.
FILE_NOTE = (
    "Static snapshot: the numbers below do not move. This page was opened as a file (its address starts "
    "with file://), and browsers do not run the explorers' JavaScript modules from files. To use the live "
    "explorer, open the book through a local web server: in the book's folder run python3 dev.py serve "
    "and open the address it prints."
)


def file_page_script() -> str:
    """A classic (non-module) inline script: on a ``file://`` page, every snapshot note says :data:`FILE_NOTE`.

    The title in the note (its ``<strong>``) stays; the rest of the note is replaced.
    """
    note = json.dumps(FILE_NOTE)
    return (
        '<script>if (location.protocol === "file:") document.addEventListener("DOMContentLoaded", () => {'
        ' for (const p of document.querySelectorAll("p.attnlib-snapshot-note")) {'
        ' const title = p.querySelector("strong"); p.replaceChildren(...(title ? [title, " "] : []), ' + note + '); } });'
        "</script>\n"
    )


def page_has_explorer(body: str) -> bool:
    """Whether a page body contains an explorer (its output div)."""
    return MARKER in body


def head_links(body: str, pathto) -> str:
    """``<head>`` links that let the browser fetch the explorers' files while it parses the page:
    the stylesheet, and a ``modulepreload`` for each module the page will import: the host, the kinds on the page
    and the shared modules these import (``frontend.page_files``; a shared module no one on the page imports is not
    fetched)."""
    modules = [name for name in frontend.page_files(page_kinds(body)) if name != CSS]
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


def entry_scripts(body: str, pathto) -> str:
    """The entry module twice: ``async`` (it may run while the page is parsed) and deferred (it runs at the
    latest when parsing ends, before the theme's deferred scripts). The first to run starts the host."""
    entry = entry_module(body, pathto)
    return f'<script type="module" async>{entry}</script>\n<script type="module">{entry}</script>\n'


def _add_host(app: Sphinx, pagename: str, templatename: str, context: dict, doctree) -> None:
    body = context.get("body", "")
    if page_has_explorer(body):
        # this page only, and relative to the site's root (app.add_js_file would put it under _static/).
        # The async entry may run while the page is still being parsed, the deferred one at the latest when
        # parsing ends; the host then mounts each explorer once the parser has passed it (static/host.js), so
        # neither the theme's scripts nor MathJax, which take hundreds of milliseconds on a chapter
        # page, hold the explorers back.
        context["metatags"] = context.get("metatags", "") + head_links(body, context["pathto"]) + entry_scripts(body, context["pathto"])
        if app.builder.name == "html":  # not the single page printed into the PDF (from a file, on purpose)
            context["metatags"] += file_page_script()


def _defer_head_scripts(app: Sphinx, pagename: str, templatename: str, context: dict, doctree) -> None:
    # The search page loads searchtools.js as a blocking script, which needs doctools.js before it: it keeps
    # the theme's order (it has no explorer; the search index is what it waits for anyway).
    if pagename != "search" and isinstance(context.get("script_files"), list):
        # in place: the list is the builder's, which Sphinx restores before the next page
        context["script_files"][:] = deferred_scripts(context["script_files"])


#: Script files that must stay blocking: the inline scripts of the theme's templates read what they define.
BLOCKING = ("documentation_options.js",)


def deferred_scripts(scripts: list) -> list:
    """The page's script files with ``defer`` on every plain external script except :data:`BLOCKING`.

    Deferred scripts run in document order once the page is parsed and before ``DOMContentLoaded``,
    so scripts that wait for the document to be ready (all of the extensions' here) behave as before;
    inline snippets (no file) and scripts that are already ``async``, ``defer`` or modules are kept
    as they are.
    """
    out = []
    for js in scripts:
        name = str(getattr(js, "filename", "") or "")
        attributes = dict(getattr(js, "attributes", {}))
        plain = not ({"async", "defer"} & set(attributes)) and attributes.get("type", "text/javascript") == "text/javascript"
        if not name or attributes.get("body") or not plain or Path(name.split("?")[0]).name in BLOCKING:
            out.append(js)
        else:
            out.append(_JavaScript(js.filename, priority=js.priority, **attributes, defer="defer"))
    return out


def _copy(app: Sphinx, exception: Exception | None) -> None:
    if exception is not None or app.builder.format != "html":
        return
    written = write_modules(Path(app.outdir) / TARGET)
    size = sum(p.stat().st_size for p in written)
    logger.info(f"live_explorers: {len(written)} front-end files ({size} bytes) in {Path(app.outdir) / TARGET}")


def setup(app: Sphinx) -> dict:
    app.connect("html-page-context", _add_host)
    app.connect("html-page-context", _defer_head_scripts, priority=900)  # after the handlers that add scripts (mathjax's)
    app.connect("build-finished", _copy)
    return {"parallel_read_safe": True, "parallel_write_safe": True, "version": "1"}

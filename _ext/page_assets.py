"""Each page's scripts and stylesheets: every one once, and none from another host.

* sphinx-thebe 0.3.1 registers its inline configuration script
  (``const THEBE_JS_URL = ...``) and sphinx-togglebutton its selector script a
  second time during a Jupyter Book build (once with filename ``None``, once
  with ``""``). The second ``const`` throws ``SyntaxError: Identifier
  'THEBE_JS_URL' has already been declared`` in every page's console. Exact
  duplicates (same file or inline body, priority and attributes) are dropped,
  keeping the first.
* jupyterlite-sphinx adds a Google Fonts stylesheet (a decorative font for its
  "try it" button) to every page. The book serves everything it needs itself,
  so remote stylesheets are dropped; the button falls back to the page's font.
* myst-nb labels the ``<summary>`` of collapsed cells "Toggle hidden content"
  while it shows "Show code cell source": a name that does not contain the
  visible text (axe-core: label-content-name-mismatch, serious). The label is
  dropped so the visible text is the name.
* pydata-sphinx-theme folds a sidebar entry with children (the API reference
  and its generated module pages) in a ``<details>`` whose ``<summary>``
  holds only an icon: no accessible name (axe-core: summary-name, serious).
  The summary is named "Show or hide the pages under this entry".
* myst-nb embeds a notebook's saved ipywidgets state in its page. No widget
  manager is loaded (``nb_ipywidgets_js`` is empty: the explorers show a static
  snapshot instead), so that state is dead weight and is dropped.
"""

from __future__ import annotations

import functools

from markupsafe import Markup
from sphinx.application import Sphinx


def _key(asset) -> tuple:
    attributes = tuple(sorted((k, str(v)) for k, v in getattr(asset, "attributes", {}).items()))
    return (getattr(asset, "filename", asset) or "", getattr(asset, "priority", None), attributes)


def _unique(assets: list) -> list:
    seen: set[tuple] = set()
    unique = []
    for asset in assets:
        key = _key(asset)
        if key not in seen:
            seen.add(key)
            unique.append(asset)
    return unique


WIDGET_STATE = "application/vnd.jupyter.widget-state+json"


def _is_widget_state(asset) -> bool:
    return getattr(asset, "attributes", {}).get("type") == WIDGET_STATE


def _is_remote(asset) -> bool:
    name = str(getattr(asset, "filename", asset) or "")
    return name.startswith(("http://", "https://", "//"))


SUMMARY_LABEL = '<summary aria-label="Toggle hidden content">'


TOGGLE = '<summary><span class="toctree-toggle" role="presentation">'
NAMED_TOGGLE = '<summary aria-label="Show or hide the pages under this entry"><span class="toctree-toggle" role="presentation">'


def _name_toggles(generate):
    @functools.wraps(generate)
    def named(*args, **kwargs):
        html = generate(*args, **kwargs)
        fixed = str(html).replace(TOGGLE, NAMED_TOGGLE)
        return Markup(fixed) if isinstance(html, Markup) else fixed

    return named


def _clean(app: Sphinx, pagename: str, templatename: str, context: dict, doctree) -> None:
    if callable(context.get("generate_toctree_html")):
        context["generate_toctree_html"] = _name_toggles(context["generate_toctree_html"])
    if SUMMARY_LABEL in context.get("body", ""):
        context["body"] = context["body"].replace(SUMMARY_LABEL, "<summary>")
    if context.get("script_files"):
        context["script_files"][:] = [js for js in _unique(context["script_files"]) if not _is_widget_state(js)]
    if context.get("css_files"):
        context["css_files"][:] = [css for css in _unique(context["css_files"]) if not _is_remote(css)]


def setup(app: Sphinx) -> dict:
    # after the other html-page-context handlers (MathJax, thebe, togglebutton) have added their assets
    app.connect("html-page-context", _clean, priority=900)
    return {"parallel_read_safe": True, "parallel_write_safe": True, "version": "1"}

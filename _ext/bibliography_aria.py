"""The References page's list of entries as valid ARIA: a ``list`` of ``listitem`` entries.

docutils writes a bibliography (sphinxcontrib-bibtex's ``{bibliography}`` in ``references.md``)
as ``<div role="list" class="citation-list">`` holding ``<div class="citation" id="..."
role="doc-biblioentry">`` entries. axe-core reports that as a critical ``aria-required-children`` violation: a ``list`` must
own ``listitem`` children, and ``doc-biblioentry`` is deprecated (DPUB-ARIA 1.1). This extension
gives every such entry ``role="listitem"`` in the HTML of every page (the single-page build that
the PDF is printed from included), so the list is announced with its number of entries.
"""

from __future__ import annotations

from typing import Any

from sphinx.application import Sphinx

ENTRY = 'role="doc-biblioentry"'
FIXED = 'role="listitem"'


def _fix_entries(app: Sphinx, pagename: str, templatename: str, context: dict[str, Any], doctree: Any) -> None:
    body = context.get("body")
    if isinstance(body, str) and ENTRY in body:
        context["body"] = body.replace(ENTRY, FIXED)


def setup(app: Sphinx) -> dict[str, Any]:
    app.connect("html-page-context", _fix_entries)
    return {"parallel_read_safe": True, "parallel_write_safe": True}

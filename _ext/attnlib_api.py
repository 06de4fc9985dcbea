"""What the API pages (``api.md`` and the pages Sphinx's autosummary generates) need on top.

``api.md`` holds one ``autosummary`` directive with ``:recursive:`` and
``:toctree: api``: at every build autosummary writes one page per module of
the installed ``attnlib`` package into ``api/`` (git-ignored) from the
template ``_templates/autosummary/module.rst`` (a package page lists its
modules, a module page documents its members with autodoc). A module added
to the package gets its page at the next build without touching any file.

The generated pages are not in ``_toc.yml``: Jupyter Book's
``only_build_toc_files`` would exclude them from the second build on (when
the files exist at start-up), so the folder is taken off the exclude list
again; the pages are reached through autosummary's own table of contents.

Names that the package re-exports (``attnlib.softmax`` is
``attnlib.core.softmax``) are documented once, in their own module; a
cross-reference to the short name is resolved to that entry.

napoleon reads the first line of a property's docstring as ``type: text``;
a sentence such as "What the scores are divided by: ``sqrt(d_k)``" would
turn its first words into a (broken) type reference. Such a line is kept as
plain text.
"""

from __future__ import annotations

import importlib
import re

from sphinx.application import Sphinx
from sphinx.config import Config

# prose (words separated by spaces) before the first colon: not a type
_PROSE_BEFORE_COLON = re.compile(r"^\s*[A-Za-z][^:`]*\s[^:`]*:(\s|$)")
#: where autosummary writes the module pages (``:toctree:`` of api.md)
GENERATED = "api"


def _keep_generated_pages(app: Sphinx, config: Config) -> None:
    # after sphinx-external-toc (priority 500) added every file outside _toc.yml to exclude_patterns
    prefix = GENERATED + "/"
    config.exclude_patterns[:] = [p for p in config.exclude_patterns if not p.startswith(prefix)]


def _resolve_reexport(app: Sphinx, env, node, contnode):
    """Resolve ``attnlib.name`` to the module where ``name`` is defined and documented."""
    target = node.get("reftarget", "")
    if node.get("refdomain") != "py" or not target.startswith("attnlib.") or target.count(".") != 1:
        return None
    obj = getattr(importlib.import_module("attnlib"), target.split(".")[1], None)
    module, qualname = getattr(obj, "__module__", None), getattr(obj, "__qualname__", None)
    if not module or not qualname or f"{module}.{qualname}" == target:
        return None
    domain = env.get_domain("py")
    return domain.resolve_xref(env, node["refdoc"], app.builder, node["reftype"], f"{module}.{qualname}", node, contnode)


def _keep_property_sentence(app: Sphinx, what: str, name: str, obj, options, lines: list[str]) -> None:
    # runs before napoleon (priority 500): napoleon splits only the first line, so put an
    # empty reST comment there and keep the sentence as an ordinary paragraph after it
    if what == "property" and lines and _PROSE_BEFORE_COLON.match(lines[0]):
        lines[:0] = ["..", ""]


def setup(app: Sphinx) -> dict:
    app.connect("autodoc-process-docstring", _keep_property_sentence, priority=400)
    app.connect("config-inited", _keep_generated_pages, priority=900)
    app.connect("missing-reference", _resolve_reexport)
    return {"parallel_read_safe": True, "parallel_write_safe": True, "version": "1"}

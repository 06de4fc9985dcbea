"""Fill the API reference page with one section per attnlib module that exists.

``api.md`` holds the marker line ``<!-- attnlib-modules -->``. When Sphinx
reads that page, the marker is replaced by a heading and an ``automodule``
directive (through ``eval-rst``, so that numpy-style docstrings converted by
napoleon are parsed as reStructuredText) for every public module of the
installed ``attnlib`` package. A module added to the package appears on the
page at the next build; a module that does not exist is never named, so the
page cannot break on a missing import.

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
import pkgutil
import re

from sphinx.application import Sphinx

MARKER = "<!-- attnlib-modules -->"
# prose (words separated by spaces) before the first colon: not a type
_PROSE_BEFORE_COLON = re.compile(r"^\s*[A-Za-z][^:`]*\s[^:`]*:(\s|$)")
DOCNAME = "api"


def public_modules(package: str = "attnlib") -> list[str]:
    """Names of the package's public submodules, sorted, skipping names with a leading underscore."""
    pkg = importlib.import_module(package)
    return sorted(f"{package}.{info.name}" for info in pkgutil.iter_modules(pkg.__path__) if not info.name.startswith("_"))


def module_sections(modules: list[str]) -> str:
    parts = []
    for name in modules:
        label = "api-" + name.replace(".", "-")
        parts.append(f"({label})=\n## `{name}`\n\n```{{eval-rst}}\n.. automodule:: {name}\n   :members:\n```\n")
    return "\n".join(parts)


def _fill(app: Sphinx, docname: str, source: list[str]) -> None:
    if docname == DOCNAME and MARKER in source[0]:
        source[0] = source[0].replace(MARKER, module_sections(public_modules()))


def _always_reread(app: Sphinx, env, added, changed, removed) -> list[str]:
    # a new module in attnlib changes the page although api.md did not change
    return [DOCNAME] if DOCNAME in env.found_docs else []


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
    app.connect("source-read", _fill)
    app.connect("missing-reference", _resolve_reexport)
    app.connect("env-get-outdated", _always_reread)
    return {"parallel_read_safe": True, "parallel_write_safe": True, "version": "1"}

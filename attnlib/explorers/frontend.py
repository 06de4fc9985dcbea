"""The explorers' front end: the JavaScript modules and the stylesheet shipped in ``static/``.

One ES module per kind of explorer (``attention.js``, ``scaling.js``, ...) imports the
shared math (``compute.js``) and DOM helpers (``ui.js``). anywidget loads a widget's
``_esm`` from a string, where relative imports cannot be resolved, so
:func:`module_source` composes the three files into one self-contained module. The web
book serves the files as they are (:func:`write_modules`); the browser resolves the
imports itself and loads the shared files once for every explorer of a page.

Examples
--------
>>> "export default" in module_source("attention")
True
>>> 'from "./' in module_source("attention")
False
>>> sorted(KINDS)
['attention', 'blocks', 'head_count', 'positional', 'scale_comparison', 'scaling', 'training']
"""

from __future__ import annotations

import re
import shutil
from functools import cache
from pathlib import Path

__all__ = ["KINDS", "STATIC", "SHARED", "module_source", "css_source", "module_files", "write_modules"]

#: Folder of the front-end files (package data).
STATIC = Path(__file__).resolve().parent / "static"
#: The kinds of explorer, each with its module ``static/<kind>.js``.
KINDS = ("attention", "scaling", "scale_comparison", "head_count", "positional", "training", "blocks")
#: The modules every kind imports, in the order they are composed.
SHARED = ("compute.js", "ui.js")
#: The web page host (not part of the anywidget modules).
HOST = "host.js"
CSS = "explorer.css"

_IMPORT = re.compile(r'^import\s*\{[^}]*\}\s*from\s*"\./([a-z_]+)\.js";[ \t]*\n', re.MULTILINE)


def _check_kind(kind: str) -> str:
    if kind not in KINDS:
        raise ValueError(f"kind must be one of {KINDS}; got {kind!r}")
    return kind


def _read(name: str) -> str:
    return (STATIC / name).read_text(encoding="utf-8")


@cache
def module_source(kind: str) -> str:
    """One self-contained ES module for ``kind``: ``compute.js``, ``ui.js`` and ``<kind>.js``.

    The relative ``import {...} from "./x.js"`` lines are removed (their names are then
    declared in the same module); the named exports of every part stay, so the composed
    module also exports the math that the golden test checks.

    Examples
    --------
    >>> src = module_source("scaling")
    >>> src.count("export default")
    1
    >>> module_source("heads")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: kind must be one of ('attention', 'scaling', ...); got 'heads'
    """
    _check_kind(kind)
    parts = []
    for name in (*SHARED, f"{kind}.js"):
        text = _read(name)
        for imported in _IMPORT.findall(text):
            if f"{imported}.js" not in SHARED:
                raise ValueError(f"{name} imports ./{imported}.js, which is not a shared module {SHARED}")
        text = _IMPORT.sub("", text)
        if re.search(r"^\s*import\s", text, re.MULTILINE):
            raise ValueError(f"{name} has an import that cannot be composed (only `import {{...}} from \"./x.js\";` lines)")
        parts.append(f"// ---- {name} ----\n{text}")
    return "\n".join(parts)


@cache
def css_source() -> str:
    """The explorers' stylesheet (light and dark themes).

    Examples
    --------
    >>> ".attnlib-live" in css_source()
    True
    """
    return _read(CSS)


def module_files() -> list[str]:
    """Every front-end file the web book serves: shared modules, one per kind, the host and the CSS."""
    return [*SHARED, *(f"{k}.js" for k in KINDS), HOST, CSS]


def write_modules(target: str | Path) -> list[Path]:
    """Copy the front-end files into ``target`` (created if needed); return the written paths."""
    target = Path(target)
    target.mkdir(parents=True, exist_ok=True)
    written = []
    for name in module_files():
        shutil.copy2(STATIC / name, target / name)
        written.append(target / name)
    return written

"""The explorers' front end: the JavaScript modules and the stylesheet.

One ES module per kind of explorer (its path is in the registry,
:func:`attnlib.explorers.registry.module_path`) imports the shared modules in
``static/`` (:data:`SHARED`: the math ``compute.js``, the number formatting ``format.js``,
the link codec ``link.js`` and the DOM helpers ``dom.js``).
anywidget loads a widget's ``_esm`` from a string, where relative imports cannot
be resolved, so :func:`compose` joins the shared files and the kind's module
into one self-contained module. The web book serves the files as they are
(:func:`write_modules`, which also writes the registry's list of kinds into
``host.js``); the browser resolves the imports itself and loads the shared
files once for every explorer of a page.

This file imports nothing from attnlib at module level, so that it can be
loaded on its own (JupyterLite's test loads it without numpy); then the
built-in kinds' modules are found by their file names in ``static/``.

Examples
--------
>>> "export default" in module_source("attention")
True
>>> 'from "./' in module_source("attention")
False
>>> from attnlib.explorers import frontend, registry
>>> frontend.KINDS == registry.kinds()
True
"""

from __future__ import annotations

import re
import shutil
from functools import cache
from pathlib import Path
from typing import Any

__all__ = [
    "CSS", "HOST", "SHARED", "STATIC", "compose", "css_source", "module_files", "module_source", "page_files", "write_modules",
]

#: Folder of the shared front-end files (package data).
STATIC = Path(__file__).resolve().parent / "static"
#: The modules every kind may import, in the order they are composed (each only imports earlier ones).
SHARED = ("compute.js", "format.js", "link.js", "dom.js")
#: The web page host (not part of the anywidget modules).
HOST = "host.js"
CSS = "explorer.css"

_IMPORT = re.compile(r'^import\s*\{[^}]*\}\s*from\s*"\./([a-z_]+)\.js";[ \t]*\n', re.MULTILINE)
#: The line of ``host.js`` that :func:`write_modules` fills in with the registry's kinds.
_HOST_KINDS = re.compile(r"^const KINDS = \[[^\]]*\];.*$", re.MULTILINE)


def __getattr__(name: str) -> Any:
    if name == "KINDS":  # the registry's kinds (read when asked for, so that a kind registered later counts)
        return _registry().kinds()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _registry() -> Any:
    from attnlib.explorers import registry

    return registry


def _module_path(kind: str) -> Path:
    try:
        registry = _registry()
    except ImportError:  # loaded on its own (no numpy): the built-in kinds' files
        path = STATIC / f"{kind}.js"
        if not re.fullmatch(r"[a-z][a-z0-9_]*", kind) or not path.is_file() or path.name in (*SHARED, HOST):
            raise ValueError(f"kind must name a kind's module in {STATIC}; got {kind!r}") from None
        return path
    return registry.module_path(kind)


def _read(path: Path) -> str:
    return path.read_text(encoding="utf-8")


@cache
def compose(path: Path) -> str:
    """One self-contained ES module: the shared modules, then the kind's module at ``path``.

    The relative ``import {...} from "./x.js"`` lines are removed (their names are then
    declared in the same module); the named exports of every part stay, so the composed
    module also exports the math that the golden test checks.

    Raises
    ------
    ValueError
        Never for the settings its explorer has checked: this is the explorer's plumbing, which checks nothing itself
        (call it with other input and numpy's own errors may come). Use the explorer's settings instead.
    """
    parts = []
    for name, text in [*((n, _read(STATIC / n)) for n in SHARED), (Path(path).name, _read(Path(path)))]:
        for imported in _IMPORT.findall(text):
            if f"{imported}.js" not in SHARED:
                raise ValueError(f"{name} imports ./{imported}.js, which is not a shared module {SHARED}")
        text = _IMPORT.sub("", text)
        if re.search(r"^\s*import\s", text, re.MULTILINE):
            raise ValueError(f'{name} has an import that cannot be composed (only `import {{...}} from "./x.js";` lines)')
        parts.append(f"// ---- {name} ----\n{text}")
    return "\n".join(parts)


def module_source(kind: str) -> str:
    """The composed module of ``kind`` (what anywidget loads as ``_esm``).

    Raises
    ------
    ValueError
        Never for the settings its explorer has checked: this is the explorer's plumbing, which checks nothing itself
        (call it with other input and numpy's own errors may come). Use the explorer's settings instead.

    Examples
    --------
    >>> src = module_source("scaling")
    >>> src.count("export default")
    1
    >>> module_source("heads")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: kind must be one of ('attention', 'blocks', ...); got 'heads'
    """
    return compose(_module_path(kind))


@cache
def css_source() -> str:
    """The explorers' stylesheet (light and dark themes).

    Examples
    --------
    >>> ".attnlib-live" in css_source()
    True
    """
    return _read(STATIC / CSS)


def module_files() -> list[str]:
    """Every front-end file the web book serves: shared modules, one per kind, the host and the CSS."""
    return [*SHARED, *(f"{k}.js" for k in _registry().kinds()), HOST, CSS]


def page_files(kinds: list[str] | tuple[str, ...]) -> list[str]:
    """The front-end files a web page showing explorers of ``kinds`` loads, and nothing else.

    The shared modules that the host or the kinds' modules import, directly or through another shared
    module, in :data:`SHARED` order; then the host, the kinds' modules and the stylesheet. A shared
    module that none of them imports is not loaded: the browser fetches only what the imports name,
    and the page's ``<head>`` preloads exactly this list (``_ext/live_explorers.py``).

    Parameters
    ----------
    kinds : list or tuple of str
        The kinds of the page's explorers (each once or more; an empty list is a page without one).

    Raises
    ------
    ValueError
        If ``kinds`` is one string or not a list or tuple, or an entry of it is not a registered kind.

    Examples
    --------
    >>> page_files(["scaling"])
    ['compute.js', 'format.js', 'link.js', 'dom.js', 'host.js', 'scaling.js', 'explorer.css']
    >>> "compute.js" in page_files(["live_training"])
    False
    >>> page_files("scaling")
    Traceback (most recent call last):
    ...
    ValueError: kinds must be a list or tuple of kind names, got str: 'scaling'
    """
    if not isinstance(kinds, (list, tuple)):
        raise ValueError(f"kinds must be a list or tuple of kind names, got {type(kinds).__name__}: {kinds!r}")
    not_names = [k for k in kinds if not isinstance(k, str)]
    if not_names:
        raise ValueError(f"kinds must hold kind names (str), got {not_names[0]!r}")
    modules = {}
    for kind in dict.fromkeys(kinds):
        try:
            modules[f"{kind}.js"] = _module_path(kind)
        except ValueError as err:
            raise ValueError(f"kinds: {err}") from None
    needed, todo = set(), [STATIC / HOST, *modules.values()]
    while todo:
        for imported in _IMPORT.findall(_read(todo.pop())):
            if f"{imported}.js" in SHARED and f"{imported}.js" not in needed:
                needed.add(f"{imported}.js")
                todo.append(STATIC / f"{imported}.js")
    return [*(n for n in SHARED if n in needed), HOST, *modules, CSS]


def host_source() -> str:
    """``host.js`` with the registry's kinds in its ``KINDS`` line (the page imports only these modules)."""
    text = _read(STATIC / HOST)
    kinds = ", ".join(f'"{k}"' for k in _registry().kinds())
    line = f"const KINDS = [{kinds}]; // written by attnlib.explorers.frontend.write_modules from the registry"
    new, count = _HOST_KINDS.subn(line, text)
    if count != 1:
        raise ValueError(f"{HOST} must have one line `const KINDS = [...];` for the registry's kinds")
    return new


def write_modules(target: str | Path) -> list[Path]:
    """Write the front-end files into ``target`` (created if needed); return the written paths.

    Raises
    ------
    ValueError
        Never for the settings its explorer has checked: this is the explorer's plumbing, which checks nothing itself
        (call it with other input and numpy's own errors may come). Use the explorer's settings instead.
    """
    target = Path(target)
    target.mkdir(parents=True, exist_ok=True)
    registry = _registry()
    written = []
    for name in (*SHARED, CSS):
        shutil.copy2(STATIC / name, target / name)
        written.append(target / name)
    for kind in registry.kinds():
        shutil.copy2(registry.module_path(kind), target / f"{kind}.js")
        written.append(target / f"{kind}.js")
    (target / HOST).write_text(host_source(), encoding="utf-8")
    written.append(target / HOST)
    return written

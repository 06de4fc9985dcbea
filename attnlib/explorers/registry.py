"""The registry of explorer kinds: every list of kinds in attnlib is read from here.

A kind registers itself when its class is defined (``class X(Explorer, kind="x",
module="x.js")``: ``Explorer.__init_subclass__`` calls
:func:`register`), and its constructors register with :func:`factory`. The
package :mod:`attnlib.explorers` imports every module of
:mod:`attnlib.explorers.kinds` (:func:`load_builtin_kinds`), so a new module
there is a new kind; a kind defined anywhere else (a test's temporary module)
registers the same way when it is imported. What reads the registry:

* :mod:`attnlib.explorers` (its factories and ``__all__``, which is
  :data:`PUBLIC`, kept up to date here);
* :mod:`attnlib.explorers.frontend` (``KINDS``, the module of each kind, the
  files the web book serves, and the list of kinds written into ``host.js``);
* the golden test harness (``tests/support/golden.py``: every kind's
  ``golden_cases``).

This module imports nothing heavy (no numpy, no anywidget).

Examples
--------
>>> import attnlib.explorers
>>> kinds()[:3]
('attention', 'blocks', 'head_count')
>>> explorer_class("scaling").__name__, module_path("scaling").name
('ScalingExplorer', 'scaling.js')
"""

from __future__ import annotations

import importlib
import pkgutil
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

__all__ = ["PUBLIC", "explorer_class", "factories", "factory", "kinds", "load_builtin_kinds", "module_path", "register", "unregister"]

#: Folder of the shared front-end files (and of the built-in kinds' modules).
STATIC = Path(__file__).resolve().parent / "static"
#: The names :mod:`attnlib.explorers` exports (its ``__all__`` is this list): kept sorted, grown by registration.
PUBLIC: list[str] = []

_KIND_NAME = re.compile(r"^[a-z][a-z0-9_]*$")
_CLASSES: dict[str, type] = {}
_MODULES: dict[str, Path] = {}
_FACTORIES: dict[str, Callable[..., Any]] = {}


def _publish(name: str) -> None:
    if name not in PUBLIC:
        PUBLIC.append(name)
        PUBLIC.sort()


def register(cls: type, kind: str, module: str | Path) -> None:
    """Record the class of ``kind`` and its front-end module (a path, or a file name in ``static/``).

    A kind is registered once; registering the same name again with another class is refused
    (two kinds cannot share a name, since the page picks the module by the name).

    Raises
    ------
    ValueError
        Never for the settings its explorer has checked: this is the explorer's plumbing, which checks nothing itself
        (call it with other input and numpy's own errors may come). Use the explorer's settings instead.
    """
    if not isinstance(kind, str) or not _KIND_NAME.match(kind):
        raise ValueError(f"kind must be a lower-case name of letters, digits and _; got {kind!r}")
    path = Path(module)
    path = path if path.is_absolute() else STATIC / path
    if not path.is_file():
        raise ValueError(f"module of kind {kind!r} must be an existing .js file; got {path}")
    old = _CLASSES.get(kind)
    if old is not None and (old.__module__, old.__qualname__) != (cls.__module__, cls.__qualname__):
        raise ValueError(f"kind {kind!r} is already registered by {old.__module__}.{old.__qualname__}")
    _CLASSES[kind] = cls
    _MODULES[kind] = path
    _publish(cls.__name__)


def factory(fn: Callable[..., Any]) -> Callable[..., Any]:
    """Decorator: publish a constructor of an explorer (``attnlib.explorers.<name>``).

    Raises
    ------
    ValueError
        Never for the settings its explorer has checked: this is the explorer's plumbing, which checks nothing itself
        (call it with other input and numpy's own errors may come). Use the explorer's settings instead.
    """
    _FACTORIES[fn.__name__] = fn
    _publish(fn.__name__)
    return fn


def unregister(kind: str) -> None:
    """Forget ``kind``, its class and the constructors defined in its module (a test's temporary kind).

    Raises
    ------
    ValueError
        Never for the settings its explorer has checked: this is the explorer's plumbing, which checks nothing itself
        (call it with other input and numpy's own errors may come). Use the explorer's settings instead.
    """
    cls = explorer_class(kind)
    del _CLASSES[kind], _MODULES[kind]
    gone = {cls.__name__} | {name for name, fn in _FACTORIES.items() if fn.__module__ == cls.__module__}
    for name in gone:
        _FACTORIES.pop(name, None)
        if name in PUBLIC:
            PUBLIC.remove(name)


def kinds() -> tuple[str, ...]:
    """Every registered kind, sorted."""
    return tuple(sorted(_CLASSES))


def explorer_class(kind: str) -> type:
    """The class of ``kind``.

    Raises
    ------
    ValueError
        Never for the settings its explorer has checked: this is the explorer's plumbing, which checks nothing itself
        (call it with other input and numpy's own errors may come). Use the explorer's settings instead.
    """
    if kind not in _CLASSES:
        raise ValueError(f"kind must be one of {kinds()}; got {kind!r}")
    return _CLASSES[kind]


def module_path(kind: str) -> Path:
    """The front-end ES module of ``kind``.

    Raises
    ------
    ValueError
        Never for the settings its explorer has checked: this is the explorer's plumbing, which checks nothing itself
        (call it with other input and numpy's own errors may come). Use the explorer's settings instead.
    """
    explorer_class(kind)
    return _MODULES[kind]


def factories() -> dict[str, Callable[..., Any]]:
    """Every published constructor by name."""
    return dict(_FACTORIES)


def load_builtin_kinds() -> None:
    """Import every module of :mod:`attnlib.explorers.kinds` (each registers its kind when imported)."""
    package = importlib.import_module("attnlib.explorers.kinds")
    for info in sorted(pkgutil.iter_modules(package.__path__), key=lambda i: i.name):
        if not info.name.startswith("_"):
            importlib.import_module(f"{package.__name__}.{info.name}")

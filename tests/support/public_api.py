"""attnlib's public surface, found from the package itself (never from a list kept by hand).

A module is public when no part of its dotted name starts with ``_``; its public names are its
``__all__`` (every public module of attnlib has one; :func:`modules_without_all` says which do not).
A public callable is a function or class that a public module defines (``obj.__module__`` is that
module, so a re-export is counted once, where it is defined) and lists in ``__all__``, and every
public method that such a class defines itself. Each gets one label, its dotted path below
``attnlib``: ``core.softmax``, ``induction.InductionModel.forward``, ``exercises.grading.hand_in``.
"""

from __future__ import annotations

import importlib
import inspect
import pkgutil
from collections.abc import Iterator
from types import ModuleType
from typing import Any

import attnlib
from attnlib._validate import Word


def public_modules() -> list[ModuleType]:
    """Every public module and package of attnlib, imported, in a stable order."""
    names = ["attnlib"] + sorted(m.name for m in pkgutil.walk_packages(attnlib.__path__, "attnlib."))
    return [importlib.import_module(n) for n in names if not any(part.startswith("_") for part in n.split("."))]


def modules_without_all() -> list[str]:
    return [m.__name__ for m in public_modules() if not hasattr(m, "__all__")]


def label_of(module: str, qualname: str) -> str:
    """``attnlib.core`` and ``softmax`` give ``core.softmax``."""
    return f"{module.removeprefix('attnlib').lstrip('.')}.{qualname}".lstrip(".")


def public_callables() -> Iterator[tuple[str, Any]]:
    """(label, object) of every public function, class and public method of a public class of attnlib."""
    for module in public_modules():
        for name in getattr(module, "__all__", ()):
            obj = getattr(module, name, None)
            if not callable(obj) or getattr(obj, "__module__", None) != module.__name__:
                continue
            if isinstance(obj, Word):
                continue  # attnlib.CAUSAL can be called (a mask function), but it is a word of the vocabulary
            yield label_of(module.__name__, name), obj
            if inspect.isclass(obj):
                for meth, member in vars(obj).items():
                    if inspect.isfunction(member) and not meth.startswith("_"):
                        yield label_of(module.__name__, f"{name}.{meth}"), member


def resolve(label: str) -> Any:
    """The object a label names (``induction.InductionModel.forward``), or None."""
    parts = label.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            obj: Any = importlib.import_module(".".join(["attnlib", *parts[:cut]]) if parts[:cut] else "attnlib")
        except ImportError:
            continue
        for attr in parts[cut:]:
            obj = getattr(obj, attr, None)
            if obj is None:
                return None
        return obj
    obj = attnlib
    for attr in parts:
        obj = getattr(obj, attr, None)
        if obj is None:
            return None
    return obj


def parameters(obj: Any) -> list[str]:
    """The parameter names of a function, or of a class's constructor (without ``self``)."""
    try:
        return [p for p in inspect.signature(obj).parameters if p != "self"]
    except (TypeError, ValueError):
        return []

"""Live explorers: move W_Q, W_K, W_V, d_k or the mask and watch attention respond.

Every explorer is an anywidget model whose state is checked in Python and whose
numbers come from attnlib's math modules. Each kind lives in one module of
:mod:`attnlib.explorers.kinds` (settings and their checks, views, static snapshot,
class, constructors, golden cases) with one front-end module; what the kinds share is
:mod:`~attnlib.explorers.base` (the class every kind extends),
:mod:`~attnlib.explorers.settings` (the checks, built on ``attnlib._validate``),
:mod:`~attnlib.explorers.snapshot` (the static HTML) and
:mod:`~attnlib.explorers.frontend` (the JavaScript). The front end runs the same in
JupyterLab, Binder, JupyterLite and the static web book; a page without JavaScript
shows the static snapshot.

This package imports every kind module, and each registers itself
(:mod:`~attnlib.explorers.registry`); the constructors and classes exported here, and
``__all__``, are read from the registry.

Examples
--------
>>> ex = attention_explorer()
>>> ex.result.weights.round(4)[0].tolist()
[0.4555, 0.2246, 0.3199]
>>> ex.W_V = [[1, 0], [1, 1]]
>>> ex.result.output.round(4)[2].tolist()
[1.0, 0.5]
>>> ex.mask = "causal"
>>> ex.result.weights.round(4)[1].tolist()
[0.3302, 0.6698, 0.0]
"""

from __future__ import annotations

from typing import Any

from . import registry

# the shared public names (re-exported: ``X as X``)
from .base import Explorer as Explorer
from .base import InvalidSetting as InvalidSetting
from .kinds.attention import reference_views as reference_views
from .settings import MAX_D_MODEL as MAX_D_MODEL
from .settings import MAX_TOKENS as MAX_TOKENS
from .settings import SettingError as SettingError
from .snapshot import CSS as CSS
from .snapshot import SNAPSHOT_NOTE as SNAPSHOT_NOTE
from .snapshot import matrix_html as matrix_html

registry.load_builtin_kinds()

for _name in ("CSS", "Explorer", "InvalidSetting", "MAX_D_MODEL", "MAX_TOKENS", "SNAPSHOT_NOTE", "SettingError", "matrix_html",
              "reference_views"):  # fmt: skip
    registry._publish(_name)


def _registered(name: str) -> Any:
    factories = registry.factories()
    if name in factories:
        return factories[name]
    for kind in registry.kinds():
        cls = registry.explorer_class(kind)
        if cls.__name__ == name:
            return cls
    return None


# the built-in kinds' classes and constructors as module globals (a kind registered later is found by __getattr__)
globals().update({name: _registered(name) for name in registry.PUBLIC if name not in globals()})

#: The public names: the shared ones above, every registered kind's class and every constructor (kept up to date by the registry).
__all__ = registry.PUBLIC


def __getattr__(name: str) -> Any:
    # the classes and constructors of every kind, also of a kind registered after this package was imported
    found = _registered(name)
    if found is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return found


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(registry.PUBLIC))

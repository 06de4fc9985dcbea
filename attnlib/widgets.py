"""Deprecated: the old name of :mod:`attnlib.explorers`. Import from ``attnlib.explorers`` instead.

Every name of :mod:`attnlib.explorers` is still found here, with a
``DeprecationWarning`` on each use (the way QuantEcon keeps a moved module's old
path working: a module-level ``__getattr__`` that warns and forwards). The
objects are the same ones.

Examples
--------
>>> import warnings
>>> from attnlib import explorers, widgets
>>> with warnings.catch_warnings(record=True) as caught:
...     warnings.simplefilter("always")
...     same = widgets.attention_explorer is explorers.attention_explorer
>>> same, caught[0].category.__name__
(True, 'DeprecationWarning')
"""

from __future__ import annotations

import warnings
from typing import Any

from . import explorers


def __getattr__(name: str) -> Any:
    if name.startswith("__"):
        raise AttributeError(name)
    value = getattr(explorers, name)  # an AttributeError for a name explorers does not have
    warnings.warn(f"attnlib.widgets is deprecated; use attnlib.explorers.{name} (the same object)", DeprecationWarning, stacklevel=2)
    return value

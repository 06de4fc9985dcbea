"""Modules imported on first use, so that ``import attnlib`` stays light.

sympy takes about 0.7 s to import, two thirds of ``import attnlib``, and most processes that import
attnlib never compute a symbol: the kernels nbgrader starts, the graders, the book build's helpers.
The modules that compute with sympy (:mod:`attnlib.blocked`, :mod:`attnlib.compatibility`,
:mod:`attnlib.exact`, :mod:`attnlib.heads`, :mod:`attnlib.positional`, :mod:`attnlib.scaling`)
therefore bind it with :func:`lazy_module` instead of ``import sympy as sp``::

    if TYPE_CHECKING:  # type checkers and editors see sympy itself
        import sympy as sp
    else:
        sp = lazy_module("sympy")

Their code keeps writing ``sp.Matrix``, ``sp.exp(x)``, ``isinstance(e, sp.Expr)``: the first such
use imports sympy, every later one is an ordinary attribute of the module. The annotations stay
strings (``from __future__ import annotations``) and still resolve, with ``typing.get_type_hints``
too, since ``sp`` is a global of the module.
"""

from __future__ import annotations

import importlib
from types import ModuleType
from typing import Any

__all__ = ["LazyModule", "lazy_module"]


class LazyModule:
    """A stand-in for the module ``name``, which is imported when one of its attributes is first read.

    Reading any attribute (``sp.Matrix``, ``sp.__version__``, the ``__wrapped__`` that ``inspect``
    looks for) imports the module with :func:`importlib.import_module`, so it is the module that
    ``import name`` gives, with the same errors; until then ``name`` is not in ``sys.modules``.
    Importing is thread-safe (Python's import lock); the module found is kept, so later reads cost
    one ``getattr``.
    """

    __slots__ = ("_name", "_module")

    def __init__(self, name: str) -> None:
        self._name = name
        self._module: ModuleType | None = None

    def _load(self) -> ModuleType:
        if self._module is None:
            self._module = importlib.import_module(self._name)
        return self._module

    def __getattr__(self, attr: str) -> Any:  # only called for names the stand-in itself lacks
        if attr in LazyModule.__slots__:  # a copy not yet filled in: no endless recursion through _load
            raise AttributeError(attr)
        return getattr(self._load(), attr)

    def __dir__(self) -> list[str]:
        return dir(self._load())

    def __repr__(self) -> str:
        if self._module is None:
            return f"<module {self._name!r}, imported on first use>"
        return repr(self._module)


def lazy_module(name: str) -> Any:
    """The module ``name`` (``"sympy"``, ``"sympy.stats"``), imported when an attribute is first read.

    Parameters
    ----------
    name:
        The absolute name of the module, as ``importlib.import_module`` takes it.

    Returns
    -------
    LazyModule
        A stand-in whose attributes are those of the module. Typed ``Any`` so that a type checker
        accepts ``sp.Matrix``; modules that want real types import the module under
        ``TYPE_CHECKING`` (see above).

    Examples
    --------
    >>> import sys
    >>> fractions = lazy_module("fractions")
    >>> fractions
    <module 'fractions', imported on first use>
    >>> fractions.Fraction(1, 2) + fractions.Fraction(1, 3)
    Fraction(5, 6)
    >>> fractions.Fraction is sys.modules["fractions"].Fraction
    True
    >>> lazy_module("no_such_module_here").x
    Traceback (most recent call last):
    ...
    ModuleNotFoundError: No module named 'no_such_module_here'
    """
    return LazyModule(name)

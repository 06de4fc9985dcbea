"""One module per explorer kind; :mod:`attnlib.explorers` imports every module here, and each registers its kind.

A kind's module holds everything about it: its settings and their checks (built
from :mod:`attnlib.explorers.settings`), its views (numbers from attnlib's math
modules), its static snapshot, its class (``class X(Explorer, kind=..., module=...)``),
its constructors (``@factory``) and its golden cases; its front-end module is the
``module=`` file (``static/<kind>.js`` for the kinds of the book).
"""

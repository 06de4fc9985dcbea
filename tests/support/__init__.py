"""What the tests share, each defined once: paths, notebooks, hypothesis strategies, the browser,
local servers, the built site's structure, the explorers' page readers, the JupyterLite copy,
the nbgrader helpers and the once-per-run resources.

Test modules import these by name (``from support.paths import ROOT``); ``tests/`` is on the
import path through ``pythonpath`` in ``pyproject.toml``.
"""

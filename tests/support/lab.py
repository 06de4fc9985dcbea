"""A one-cell notebook opened in a real JupyterLab, in chromium, with every cell run."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path

import nbformat

from support.browser import Blocker, browser_context
from support.servers import KERNEL_IDLE_JS, jupyterlab


@contextlib.contextmanager
def notebook_in_lab(tmp_path: Path, name: str, cell: str) -> Iterator[tuple[object, list[str], Blocker]]:
    """Write ``cell`` as the notebook ``name``, open it in JupyterLab and run all its cells.

    Yields the page, the list its uncaught errors go to, and the blocker of other hosts. The caller
    waits for what its cell shows (and for ``ALL_CELLS_RAN_JS``) itself.
    """
    root = tmp_path / "lab-root"
    root.mkdir()
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(cell)])
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nbformat.write(nb, root / name)
    with jupyterlab(root, tmp_path / "lab-home") as (base, token):
        with browser_context(tmp_path / "profile", viewport={"width": 1400, "height": 1000}) as (context, blocker):
            page = context.new_page()
            errors: list[str] = []
            page.on("pageerror", lambda exc: errors.append(f"uncaught: {exc}"))
            page.set_default_timeout(90_000)
            page.goto(f"{base}/lab/tree/{name}?reset&token={token}")
            page.wait_for_function(KERNEL_IDLE_JS)
            page.evaluate("() => window.jupyterapp.commands.execute('notebook:run-all-cells')")
            yield page, errors, blocker

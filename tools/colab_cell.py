"""The first cell of every notebook: in Google Colab it installs attnlib from the book's repository.

Colab starts a notebook from GitHub with its own Python and without this repository; the cell
(id ``colab-install``, tag ``remove-cell`` so the web book does not show it) installs attnlib from
the repository of ``_config.yml`` when it cannot be imported, and does nothing anywhere else.
After a fork changes ``_config.yml`` or a notebook is added, write it into every notebook::

    .venv/bin/python tools/colab_cell.py

``tests/book/test_colab.py`` fails until every notebook starts with it.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from repository import ROOT, repository  # noqa: E402

CHAPTERS = ROOT / "chapters"
CELL_ID = "colab-install"
CELL_TAGS = ["remove-cell"]
COLAB = "https://colab.research.google.com"


def notebooks() -> list[Path]:
    """Every notebook of chapters/ (the chapters, the cheat sheet and the playground): each has a Colab button."""
    return sorted(CHAPTERS.glob("*.ipynb"))


def install_spec() -> str:
    """What pip installs in Colab: attnlib from the configured repository and branch."""
    owner, name, branch = repository()
    return f"git+https://github.com/{owner}/{name}@{branch}"


def install_cell_source() -> str:
    return (
        "# In Google Colab: install attnlib from the book's repository.\n"
        "# Anywhere attnlib is installed already, this cell does nothing.\n"
        "import importlib.util\n"
        "\n"
        'if importlib.util.find_spec("attnlib") is None:\n'
        f"    %pip install --quiet {install_spec()}\n"
    )


def write_install_cells() -> list[Path]:
    """Put the install cell first in every notebook (replacing an older one); return the notebooks changed."""
    import nbformat

    changed = []
    for path in notebooks():
        nb = nbformat.read(path, as_version=4)
        old = [c for c in nb.cells if c.get("id") == CELL_ID]
        cell = old[0] if old else nbformat.v4.new_code_cell()
        cell.id = CELL_ID
        cell.source = install_cell_source()
        cell.metadata = {"tags": list(CELL_TAGS)}
        cell.outputs = []
        cell.execution_count = None
        cells = [cell] + [c for c in nb.cells if c.get("id") != CELL_ID]
        before = path.read_text(encoding="utf-8")
        nb.cells = cells
        after = nbformat.writes(nb) + "\n"
        if after != before:
            path.write_text(after, encoding="utf-8")
            changed.append(path)
    return changed


if __name__ == "__main__":
    for changed in write_install_cells():
        print(f"wrote the install cell into {changed.relative_to(ROOT)}")

"""Google Colab: every notebook opens in Colab and installs attnlib there itself.

Colab starts a notebook from GitHub with its own Python and without this
repository, so every notebook of ``chapters/`` begins with one code cell (id
``colab-install``, tag ``remove-cell`` so the web book does not show it) that
installs attnlib from the repository of ``_config.yml`` when it cannot be
imported. Locally, on Binder, in JupyterLite and in the book build attnlib is
installed already and the cell does nothing. The Colab launch button of every
chapter is made by the theme from ``launch_buttons.colab_url`` and the same
repository.

Checked here: every notebook starts with exactly that cell (a fast test), and
on the built book every chapter's Colab link opens the reader's copy of that
chapter (unsolved answer cells: the download menu's copy, as published on the
site's branch, never ``chapters/`` with the model solutions), while the cell's
code is not on the page (slow: the built book). The cell itself runs in a fresh virtual environment without
attnlib in ``tests/package/test_package.py``. Colab itself cannot be reached from here.

The cell and its writer are ``tools/colab_cell.py``; after a fork changes ``_config.yml`` or a
new notebook is added, ``.venv/bin/python tools/colab_cell.py`` writes it into every notebook.
"""

from __future__ import annotations

import sys
from html.parser import HTMLParser

import pytest
import yaml
from support.paths import ROOT
from support.repository import repository

from tools.colab_cell import CELL_ID, CELL_TAGS, COLAB, install_cell_source, notebooks


def reader_branch() -> str:
    """The branch the built site is published to (``sphinx.config.reader_notebooks_branch`` in ``_config.yml``)."""
    config = yaml.safe_load((ROOT / "_config.yml").read_text())
    return config["sphinx"]["config"]["reader_notebooks_branch"]


def colab_chapter_url(notebook: str) -> str:
    """The address a chapter's Colab button must have: the reader's copy as published (``_sources/``), opened by Colab."""
    owner, name, _ = repository()
    return f"{COLAB}/github/{owner}/{name}/blob/{reader_branch()}/_sources/{notebook}"


def test_every_notebook_starts_with_the_install_cell():
    import nbformat

    assert len(notebooks()) >= 15
    problems = {}
    for path in notebooks():
        nb = nbformat.read(path, as_version=4)
        first = nb.cells[0]
        if [c.get("id") for c in nb.cells].count(CELL_ID) != 1 or first.get("id") != CELL_ID:
            problems[path.name] = "the first cell is not the only install cell"
        elif first.cell_type != "code" or first.source != install_cell_source():
            problems[path.name] = f"the install cell differs: {first.source!r}"
        elif first.metadata.get("tags") != CELL_TAGS or first.get("outputs"):
            problems[path.name] = f"tags {first.metadata.get('tags')}, outputs {first.get('outputs')}"
    listing = "\n".join(f"  {k}: {v}" for k, v in problems.items())
    assert problems == {}, f"run `.venv/bin/python tools/colab_cell.py` to write the cell:\n{listing}"


def test_colab_button_is_configured():
    config = yaml.safe_load((ROOT / "_config.yml").read_text())
    assert config["launch_buttons"]["colab_url"] == COLAB


def test_explorers_ask_colab_for_its_widget_manager(monkeypatch):
    """In Colab (``google.colab.output`` imported), anywidget turns on Colab's custom widget manager and
    the explorer's display passes anywidget's Colab metadata on, next to the snapshot.

    Colab's module is stood in for by a stub that records the call; Colab's front end is not run here.
    """
    import types

    import anywidget._util

    calls = []
    output = types.ModuleType("google.colab.output")
    output.enable_custom_widget_manager = lambda: calls.append("enabled")
    output._widgets = types.SimpleNamespace(_installed_url="https://colab.invalid/widget-manager.js")
    google = types.ModuleType("google")
    colab = types.ModuleType("google.colab")
    colab.output, google.colab = output, colab
    monkeypatch.setitem(sys.modules, "google", google)
    monkeypatch.setitem(sys.modules, "google.colab", colab)
    monkeypatch.setitem(sys.modules, "google.colab.output", output)
    anywidget._util.enable_custom_widget_manager_once.cache_clear()
    try:
        from attnlib.explorers import attention_explorer

        data, metadata = attention_explorer()._repr_mimebundle_()
    finally:
        anywidget._util.enable_custom_widget_manager_once.cache_clear()
    assert calls == ["enabled"]
    view = "application/vnd.jupyter.widget-view+json"
    assert metadata[view]["colab"]["custom_widget_manager"]["url"] == "https://colab.invalid/widget-manager.js"
    assert view in data and "<table" in data["text/html"]


class _Links(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.hrefs: list[str] = []

    def handle_starttag(self, tag, attrs):
        href = dict(attrs).get("href")
        if tag == "a" and href:
            self.hrefs.append(href)


@pytest.mark.slow
def test_every_chapter_page_opens_its_own_reader_notebook_in_colab(web_html):
    """Colab opens the published copy (``_sources/`` of the built site): no answer cell there holds a solution."""
    import json

    _, _, source_branch = repository()
    assert reader_branch() != source_branch, "the source branch's chapters/ hold the model solutions"
    for path in notebooks():
        page = web_html / "chapters" / f"{path.stem}.html"
        assert page.is_file(), f"{page} was not built"
        text = page.read_text(encoding="utf-8")
        parser = _Links()
        parser.feed(text)
        colab = [h for h in parser.hrefs if h.startswith(COLAB)]
        notebook = f"chapters/{path.name}"
        assert colab == [colab_chapter_url(notebook)], f"{page.name}: Colab links {colab}"
        published = web_html / "_sources" / notebook  # what ghp-import puts on the reader branch
        cells = json.loads(published.read_text())["cells"]
        answers = [c for c in cells if c["metadata"].get("nbgrader", {}).get("solution")]
        for cell in answers:
            text = "".join(cell["source"])
            assert "BEGIN SOLUTION" not in text, f"{published}: an answer cell holds its solution"
            assert "YOUR CODE HERE" in text or "YOUR ANSWER HERE" in text, f"{published}: answer cell {text[:200]!r}"
        # the install cell is the notebook's business, not the chapter's: the page leaves it out
        assert "find_spec" not in text and "git+https://" not in text, f"{page.name} shows the install cell"

"""``jupyter nbconvert --to html --execute`` of a chapter shows the explorers' static snapshot.

An explorer's display holds the widget view, a ``text/html`` snapshot (tables of
its numbers) and a ``text/plain`` summary. nbclient stores the widgets' state in
the notebook by default, and nbconvert's HTML exporter then picks the widget view,
which needs require.js and the widget manager from CDNs and shows an empty
``Out[ ]`` offline. With ``--ExecutePreprocessor.store_widget_state=False`` no
state is stored and nbconvert picks the snapshot. The README shows that command;
this test runs the README's line itself (with the output folder moved to a
temporary one) on the chapter it names (chapter 3, the quickest with explorers)
and reads the HTML it wrote.
"""

from __future__ import annotations

import json
import re
import shlex
import subprocess
from pathlib import Path

import pytest
from support.paths import BIN, ROOT

pytestmark = pytest.mark.slow

WIDGET_MIMES = ("application/vnd.jupyter.widget-view+json", "application/vnd.jupyter.widget-state+json")


def readme_command() -> list[str]:
    lines = [line for line in (ROOT / "README.md").read_text().splitlines() if line.startswith(".venv/bin/jupyter nbconvert ")]
    assert len(lines) == 1, f"README.md should show one `.venv/bin/jupyter nbconvert` line, not {lines}"
    return shlex.split(lines[0].split("  #")[0])


@pytest.fixture(scope="session")
def exported(tmp_path_factory) -> tuple[Path, Path]:
    out = tmp_path_factory.mktemp("nbconvert")
    cmd = readme_command()
    assert cmd[:4] == [".venv/bin/jupyter", "nbconvert", "--to", "html"] and "--execute" in cmd, cmd
    assert "--ExecutePreprocessor.store_widget_state=False" in cmd, cmd
    i = cmd.index("--output-dir")
    cmd[i + 1] = str(out)
    notebook = ROOT / cmd[-1]
    assert notebook.suffix == ".ipynb" and notebook.is_file(), cmd[-1]
    cmd[0] = str(BIN / "jupyter")
    proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, f"{shlex.join(cmd)} failed:\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
    page = out / f"{notebook.stem}.html"
    assert page.is_file(), sorted(out.iterdir())
    return notebook, page


def test_exported_chapter_shows_every_explorers_snapshot(exported):
    notebook, page = exported
    html = page.read_text(encoding="utf-8")
    cells = json.loads(notebook.read_text())["cells"]
    explorers = [c for c in cells if "widget" in c["metadata"].get("tags", [])]
    assert len(explorers) >= 2, f"{notebook.name} has no explorer cells to check"
    # one snapshot (the explorers' text/html: a div with the state and the tables) per explorer cell
    snapshots = re.findall(r'<div class="attnlib-explorer"[^>]*>', html)
    assert len(snapshots) == len(explorers), f"{len(snapshots)} snapshots for {len(explorers)} explorer cells"
    # each with its tables, before the next cell of the page begins
    outputs = [part.split('class="jp-Cell ')[0] for part in html.split('<div class="attnlib-explorer"')[1:]]
    assert all("<table" in part for part in outputs), [part[:200] for part in outputs if "<table" not in part]


def test_exported_chapter_does_not_need_the_widget_manager(exported):
    _, page = exported
    html = page.read_text(encoding="utf-8")
    assert not any(mime in html for mime in WIDGET_MIMES), "a widget view or widget state is in the exported page"
    assert "@jupyter-widgets/html-manager" not in html

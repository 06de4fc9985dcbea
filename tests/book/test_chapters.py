"""Every chapter runs top to bottom in a fresh kernel, quickly, and prints the post's numbers."""

from __future__ import annotations

import nbformat
import pytest
from support.expected_outputs import CHEAT_SHEET, EXPECTED
from support.notebooks import chapter_notebooks, output_text
from support.paths import CHAPTERS

NOTEBOOKS = chapter_notebooks()
# A chapter runs in well under a minute on an idle 2-core machine (chapter 17, the slowest, 39 s, the
# others under 20 s). Here the chapters run two at a time beside the nbgrader tests, so a chapter's
# wall time is up to about three times its idle time: the limit catches a chapter that hangs or
# grows, not a slow moment of the machine.
MAX_SECONDS = 180


def test_there_are_chapters():
    assert len(NOTEBOOKS) >= 1


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_committed_without_outputs(path):
    nb = nbformat.read(path, as_version=4)
    for cell in nb.cells:
        if cell.cell_type == "code":
            assert cell.outputs == [], f"{path.name}: a code cell has committed outputs"
            assert cell.execution_count is None, f"{path.name}: a code cell has an execution count"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_chapter_runs_and_prints_the_posts_numbers(path, executed):
    assert path.stem in EXPECTED and EXPECTED[path.stem], f"no expected outputs listed for {path.stem}"
    nb, seconds = executed(path)
    assert seconds < MAX_SECONDS, f"{path.name} took {seconds:.1f} s"
    text = output_text(nb)
    missing = [s for s in EXPECTED[path.stem] if s not in text]
    assert not missing, f"{path.name}: outputs lack {missing}"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_every_figure_has_alt_text_or_caption(path, executed):
    nb, _ = executed(path)
    for i, cell in enumerate(nb.cells):
        if any("image/png" in o.get("data", {}) or "image/svg+xml" in o.get("data", {}) for o in cell.get("outputs", [])):
            meta = cell.metadata.get("mystnb", {})
            alt = meta.get("image", {}).get("alt") or meta.get("figure", {}).get("caption")
            assert alt, f"{path.name} cell {i} shows a figure without alt text or caption"


def test_cheat_sheet_runs_and_shows_the_summary(executed):
    path = CHAPTERS / "cheatsheet.ipynb"
    nb = nbformat.read(path, as_version=4)
    assert all(c.outputs == [] and c.execution_count is None for c in nb.cells if c.cell_type == "code")
    nb, seconds = executed(path)
    assert seconds < MAX_SECONDS
    text = output_text(nb)
    missing = [s for s in CHEAT_SHEET if s not in text]
    assert not missing, f"the cheat sheet's outputs lack {missing}"

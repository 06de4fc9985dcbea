"""Every chapter runs top to bottom in a fresh kernel, quickly, and prints the post's numbers."""

from __future__ import annotations

import nbformat
import pytest
from support.expected_outputs import CHEAT_SHEET, EXPECTED
from support.notebooks import chapter_notebooks, output_text
from support.paths import CHAPTERS

NOTEBOOKS = chapter_notebooks()
# What a chapter costs is measured in CPU seconds of its kernel and of the processes the kernel
# started (conftest's EXECUTE), not in wall time: here the chapters run two at a time beside the
# grading and build tests, and chapter 17's wall time went from 45-85 s alone to 160-322 s in CI
# runs, which measured the machine's load, not the notebook. Alone on an idle 2-core machine the
# chapters used 4-19 CPU-s each, chapter 14 38 CPU-s and chapter 17 127-136 CPU-s (ten training runs in
# two processes). The limit catches a chapter that grows or spins; a kernel that waits forever
# is stopped by the cell timeout of _config.yml.
MAX_CPU_SECONDS = 240


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
    nb, ran = executed(path)
    assert ran.cpu < MAX_CPU_SECONDS, f"{path.name} took {ran.cpu:.1f} CPU-s ({ran.wall:.1f} s wall)"
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
    nb, ran = executed(path)
    assert ran.cpu < MAX_CPU_SECONDS, f"the cheat sheet took {ran.cpu:.1f} CPU-s ({ran.wall:.1f} s wall)"
    text = output_text(nb)
    missing = [s for s in CHEAT_SHEET if s not in text]
    assert not missing, f"the cheat sheet's outputs lack {missing}"

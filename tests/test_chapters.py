"""Every chapter runs top to bottom in a fresh kernel, quickly, and prints the post's numbers."""

from __future__ import annotations

import re

import nbformat
import pytest
from conftest import chapter_notebooks, execute_notebook
from expected_outputs import EXPECTED

NOTEBOOKS = chapter_notebooks()
MAX_SECONDS = 60
#: Chapters whose prose is checked number by number: every decimal in their Markdown cells must appear
#: in their executed outputs (so no number in the text is typed by hand).
DECIMALS_CHECKED = {"15-long-sequences"}
DECIMAL = re.compile(r"(?<![\w.])\d[\d,]*\.\d+(?!\d|\.\d)")
NOT_A_NUMBER = re.compile(r"Exercise \d+\.\d+")


def output_text(nb) -> str:
    parts = []
    for cell in nb.cells:
        for out in cell.get("outputs", []):
            if "text" in out:
                parts.append(out["text"])
            for mime in ("text/plain", "text/html", "text/markdown", "text/latex"):
                if mime in out.get("data", {}):
                    parts.append(out["data"][mime])
    return "\n".join(parts)


@pytest.fixture(scope="module")
def executed():
    cache: dict[str, tuple[object, float]] = {}

    def run(path):
        if path.stem not in cache:
            cache[path.stem] = execute_notebook(path, timeout=MAX_SECONDS)
        return cache[path.stem]

    return run


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


@pytest.mark.parametrize("path", [p for p in NOTEBOOKS if p.stem in DECIMALS_CHECKED], ids=lambda p: p.stem)
def test_every_decimal_in_the_text_is_printed(path, executed):
    nb, _ = executed(path)
    text = output_text(nb)
    prose = "\n".join(NOT_A_NUMBER.sub("", c.source) for c in nb.cells if c.cell_type == "markdown")
    decimals = set(DECIMAL.findall(prose))
    assert decimals, f"{path.name}: no decimals found in the text (is the pattern right?)"
    missing = sorted(d for d in decimals if d not in text)
    assert not missing, f"{path.name}: the text states {missing}, which no code cell prints"

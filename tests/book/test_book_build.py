"""The strict book build: zero warnings, every page present, outputs executed."""

import re

import pytest
from support.notebooks import book_notebooks, chapter_notebooks

pytestmark = pytest.mark.slow


def test_build_has_no_warnings(built_book):
    lines = [line for line in built_book.log.splitlines() if re.search(r"\bWARNING\b", line) and "[IPKernelApp]" not in line]
    assert lines == []
    assert "build succeeded" in built_book.log


def test_every_chapter_and_intro_is_built(built_book):
    assert (built_book.html / "intro.html").exists()
    assert (built_book.html / "index.html").exists()
    for nb in chapter_notebooks():
        page = built_book.html / "chapters" / (nb.stem + ".html")
        assert page.exists(), f"{page} was not built"


def test_chapter_one_shows_executed_outputs(built_book):
    html = (built_book.html / "chapters" / "01-running-example.html").read_text()
    # printed by code at build time, not typed in the prose
    assert "shape of X: (3, 2)" in html
    assert "length of x3: 0.7071" in html
    assert re.search(r'<img alt="Three arrows from the origin', html)


def test_build_reuses_the_runs_one_execution(built_book):
    """Every notebook comes from the execution cache that the Binder-environment build filled (tests/conftest.py)."""
    log = built_book.log
    cached = set(re.findall(r"^(\S+\.ipynb): Using cached notebook", log, re.M))
    assert {str(p) for p in book_notebooks()} <= cached, f"not taken from the cache: {sorted({str(p) for p in book_notebooks()} - cached)}"
    assert "Executing notebook" not in log, "the strict build executed a notebook a second time"

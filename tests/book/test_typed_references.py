"""Chapters 1-12, the Notation page and the Glossary refer to equations and figures by link, never by a typed number.

Equations and figures are numbered per chapter by the build, so "(8.1)" or "Fig. 11.4" typed into
the prose would go stale the moment a chapter gains an equation; {eq} and {numref} do not.
"""

from __future__ import annotations

import json
import re

import pytest
from support.notebooks import chapter_notebooks
from support.paths import ROOT

CHAPTERS = chapter_notebooks()[:12]
TYPED = re.compile(r"(?:Fig\.|Figure|[Ee]quation|eq\.)\s*\(?\d+(?:\.\d+)?\)?|\b(?:as|by|in|see) \(\d+(?:\.\d+)?\)")


def _prose(text: str) -> str:
    text = re.sub(r"\$\$.*?\$\$", "", text, flags=re.S)  # display maths
    text = re.sub(r"\$[^$]*\$", "", text)  # inline maths
    return re.sub(r"`[^`]*`", "", text)  # code and roles' targets


def test_the_files_are_found():
    assert [p.name[:2] for p in CHAPTERS] == [f"{k:02d}" for k in range(1, 13)]


@pytest.mark.parametrize("path", CHAPTERS, ids=lambda p: p.stem)
def test_no_typed_equation_or_figure_numbers(path):
    cells = json.loads(path.read_text())["cells"]
    text = _prose("\n".join("".join(c["source"]) for c in cells if c["cell_type"] == "markdown"))
    assert not TYPED.findall(text), f"{path.name}: typed numbers {TYPED.findall(text)}; use {{eq}} or {{numref}}"


@pytest.mark.parametrize("name", ["notation.md", "glossary.md"])
def test_reference_pages_name_no_equation_numbers(name):
    text = _prose((ROOT / name).read_text())
    assert not TYPED.findall(text), f"{name}: typed numbers {TYPED.findall(text)}"
    if name == "glossary.md":
        # the glossary points to the Notation page's sections; an {eq} there would print "(N.3)"-like numbers
        assert "{eq}" not in (ROOT / name).read_text()

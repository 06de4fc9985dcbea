"""Chapters 1-15 are numbered 1-15 across their three parts, so equations and figures read (14.3), Fig. 14.2.

Sphinx numbers equations and figures by chapter only inside a numbered toctree (``numfig`` and
``math_numfig`` are on, ``numfig_secnum_depth`` is 1); outside one they share a single running
counter, which is how chapter 14 came to open at "(3)". Jupyter Book's ``use_multitoc_numbering``
(on by default) continues the count from one numbered part to the next.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import yaml
from support.paths import ROOT


def _parts():
    return yaml.safe_load((ROOT / "_toc.yml").read_text())["parts"]


def test_chapters_one_to_fifteen_sit_in_numbered_parts_in_order():
    numbered = [c["file"] for part in _parts() if part.get("numbered") for c in part["chapters"]]
    expected = sorted(str(p.relative_to(ROOT).with_suffix("")) for p in (ROOT / "chapters").glob("[0-9][0-9]-*.ipynb"))
    assert numbered == expected, "every chapter NN-*.ipynb, and nothing else, in a numbered part, in order"
    assert [int(Path(f).name[:2]) for f in numbered] == list(range(1, len(numbered) + 1))
    config = yaml.safe_load((ROOT / "_config.yml").read_text())
    assert config.get("html", {}).get("use_multitoc_numbering", True), "numbering must continue across parts"


def test_no_hand_written_equation_or_figure_numbers_in_chapters_13_to_15():
    """References to equations and figures are links ({eq}, {numref}), never typed numbers."""
    for name in ("13-closing", "14-attention-learns", "15-long-sequences", "16-transformer-block", "cheatsheet"):
        cells = json.loads((ROOT / "chapters" / f"{name}.ipynb").read_text())["cells"]
        text = "\n".join("".join(c["source"]) for c in cells if c["cell_type"] == "markdown")
        text = re.sub(r"\$\$.*?\$\$", "", text, flags=re.S)  # display maths
        text = re.sub(r"\$[^$]*\$", "", text)  # inline maths
        typed = re.findall(r"(?:Fig\.|Figure|equation|eq\.)\s*\(?\d+(?:\.\d+)?\)?|\bas \(\d+(?:\.\d+)?\)", text)
        assert not typed, f"{name}: typed numbers {typed}; use {{eq}} or {{numref}}"

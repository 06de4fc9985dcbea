"""The book's notebooks: which they are, and what their executed outputs show."""

from __future__ import annotations

import importlib.util
from pathlib import Path

from support.paths import CHAPTERS, ROOT

_spec = importlib.util.spec_from_file_location("exact_streams", ROOT / "_ext" / "exact_streams.py")
#: the book's extension that joins a cell's stream chunks (also what the tests read outputs with)
exact_streams = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(exact_streams)
concatenate_streams = exact_streams.concatenate_streams


def chapter_notebooks() -> list[Path]:
    """The numbered chapters, in order (not the cheat sheet or the playground)."""
    return sorted(CHAPTERS.glob("[0-9][0-9]-*.ipynb"))


def book_notebooks() -> list[Path]:
    """Every notebook the book executes: the chapters, chapter 17's page for the reader's own text, the cheat sheet and the playground."""
    return [*chapter_notebooks(), CHAPTERS / "induction-own-text.ipynb", CHAPTERS / "cheatsheet.ipynb", CHAPTERS / "playground.ipynb"]


def output_text(nb) -> str:
    """Everything a notebook's executed cells showed: streams, text, HTML, Markdown and LaTeX.

    Each cell's stream chunks are joined exactly, as the web book joins them (_ext/exact_streams.py):
    a kernel may cut one printed line into two chunks.
    """
    parts = []
    for cell in nb.cells:
        for out in concatenate_streams(cell.get("outputs", [])):
            if "text" in out:
                parts.append(out["text"])
            for mime in ("text/plain", "text/html", "text/markdown", "text/latex"):
                if mime in out.get("data", {}):
                    parts.append(out["data"][mime])
    return "\n".join(parts)

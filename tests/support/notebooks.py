"""The book's notebooks: which they are, and what their executed outputs show."""

from __future__ import annotations

from pathlib import Path

from support.paths import CHAPTERS


def chapter_notebooks() -> list[Path]:
    """The numbered chapters, in order (not the cheat sheet or the playground)."""
    return sorted(CHAPTERS.glob("[0-9][0-9]-*.ipynb"))


def book_notebooks() -> list[Path]:
    """Every notebook the book executes: the chapters, the cheat sheet and the playground."""
    return [*chapter_notebooks(), CHAPTERS / "cheatsheet.ipynb", CHAPTERS / "playground.ipynb"]


def output_text(nb) -> str:
    """Everything a notebook's executed cells showed: streams, text, HTML, Markdown and LaTeX."""
    parts = []
    for cell in nb.cells:
        for out in cell.get("outputs", []):
            if "text" in out:
                parts.append(out["text"])
            for mime in ("text/plain", "text/html", "text/markdown", "text/latex"):
                if mime in out.get("data", {}):
                    parts.append(out["data"][mime])
    return "\n".join(parts)

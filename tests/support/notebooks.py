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
        stream = None  # the name of the stream the last part came from: its next chunk continues that part
        for out in cell.get("outputs", []):
            if "text" in out:
                # a kernel may cut one printed line into chunks (_ext/exact_streams.py): joined exactly
                if out.get("output_type") == "stream" and out.get("name") == stream:
                    parts[-1] += out["text"]
                else:
                    parts.append(out["text"])
                stream = out.get("name") if out.get("output_type") == "stream" else None
                continue
            stream = None
            for mime in ("text/plain", "text/html", "text/markdown", "text/latex"):
                if mime in out.get("data", {}):
                    parts.append(out["data"][mime])
    return "\n".join(parts)

"""The repository that ``_config.yml`` names (defined once in ``tools/repository.py``), and the addresses derived from it."""

from __future__ import annotations

from tools.repository import BINDER, GITHUB, repository

__all__ = ["BINDER", "GITHUB", "binder_chapter_url", "repository"]


def binder_chapter_url(notebook: str) -> str:
    """The Binder address a chapter's launch button must have (used by tests/book/test_lite.py)."""
    owner, name, branch = repository()
    return f"https://mybinder.org/v2/gh/{owner}/{name}/{branch}?urlpath=lab/tree/{notebook}"

"""Shared fixtures: the built book and the executed chapter notebooks.

Both are expensive, so each is made once per test session and shared.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
CHAPTERS = ROOT / "chapters"
BIN = Path(sys.executable).parent

# Kernels started by the tests inherit this environment; a forced backend such as
# MPLBACKEND=Agg would stop notebooks from displaying their figures inline.
os.environ.pop("MPLBACKEND", None)


def chapter_notebooks() -> list[Path]:
    return sorted(CHAPTERS.glob("[0-9][0-9]-*.ipynb"))


def execute_notebook(path: Path, timeout: int = 60):
    """Run a notebook top to bottom in a fresh kernel (cwd: chapters/); return (notebook, seconds)."""
    import nbformat
    from nbclient import NotebookClient

    nb = nbformat.read(path, as_version=4)
    start = time.perf_counter()
    NotebookClient(nb, timeout=timeout, kernel_name="python3", resources={"metadata": {"path": str(CHAPTERS)}}).execute()
    return nb, time.perf_counter() - start


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


@pytest.fixture(scope="session")
def executed():
    """``executed(path)`` runs a chapter once per session and returns ``(notebook, seconds)``.

    Shared by every test that reads executed chapters (outputs, figures, prose numbers).
    """
    cache: dict[str, tuple[object, float]] = {}

    def run(path: Path):
        if path.stem not in cache:
            cache[path.stem] = execute_notebook(path, timeout=60)
        return cache[path.stem]

    return run


@dataclass
class BuiltBook:
    html: Path
    log: str
    seconds: float


@pytest.fixture(scope="session")
def built_book(tmp_path_factory) -> BuiltBook:
    """Build the whole book strictly into a fresh folder (no cache), as CI and readers do."""
    out = tmp_path_factory.mktemp("book")
    jb = shutil.which("jupyter-book", path=str(BIN)) or shutil.which("jupyter-book")
    assert jb, "jupyter-book is not installed in the test environment"
    start = time.perf_counter()
    proc = subprocess.run(
        [jb, "build", str(ROOT), "--path-output", str(out), "-W", "-n", "--keep-going"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env=dict(os.environ, PATH=f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}"),
    )
    seconds = time.perf_counter() - start
    log = proc.stdout + proc.stderr
    (out / "build.log").write_text(log)
    assert proc.returncode == 0, f"strict book build failed ({proc.returncode}):\n{log[-6000:]}"
    return BuiltBook(out / "_build" / "html", log, seconds)


@pytest.fixture(scope="session")
def web_html(request) -> Path:
    """The built site: the strict build of this session, or WEB_BOOK_HTML (an existing build, to iterate on the web tests)."""
    existing = os.environ.get("WEB_BOOK_HTML")
    return Path(existing) if existing else request.getfixturevalue("built_book").html

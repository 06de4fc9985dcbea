"""The chapters as a reader runs them: answer cells unsolved, every solution folded one click away.

The chapters in ``chapters/`` are the source: their answer cells hold the
model solutions between nbgrader's ``### BEGIN SOLUTION`` and ``### END
SOLUTION`` markers (the book build executes them, nbgrader grades against
them), and their solution boxes are MyST dropdowns, which only the web
book folds. :func:`student_notebook` turns one chapter into what a reader
should get instead, the same cells nbgrader's student version has:

* in a code answer cell each solution block becomes nbgrader's stub
  (``# YOUR CODE HERE`` and ``raise NotImplementedError()``), at the
  block's indentation;
* a written answer (a Markdown answer cell) becomes ``YOUR ANSWER HERE``;
* each solution (the model code, a model answer, a "Solution" box) is kept
  in a Markdown cell right after the exercise's check, inside an HTML
  ``<details>`` element, which JupyterLab, Jupyter Notebook, VS Code,
  Colab and GitHub all show folded.

Everything else, the chapter's prose and nbgrader's metadata included, is
left as it is. Only the standard library is used, so Binder's image can run
this file before any package is installed.

Where readers get the student versions:

* the download menu of every chapter page: after an HTML build this
  extension rewrites the copies in ``_build/html/_sources/chapters/``;
* JupyterLite: ``_ext/jupyterlite_book.py`` copies ``chapters/`` into the
  site's contents and calls :func:`write_student_versions` on the copy;
* Binder, which opens the repository's own files: the repository's
  ``postBuild`` runs ``python3 _ext/student_notebooks.py --in-place chapters``
  inside the image, so its ``chapters/`` hold the student versions;
* Colab, which opens a notebook from a branch on GitHub: after an HTML build
  this extension points every page's Colab button at the download menu's
  copy on the branch the built site is published to (``reader_notebooks_branch``,
  default ``gh-pages``, where ``ghp-import`` puts ``_build/html``), instead of
  ``chapters/`` on the source branch, which holds the model solutions.

Command line: ``python3 _ext/student_notebooks.py [--in-place] FOLDER``
rewrites the chapter notebooks (``NN-name.ipynb``) in ``FOLDER``; without
``--in-place`` it only lists what would change.
"""

from __future__ import annotations

import copy
import json
import re
import sys
from pathlib import Path
from typing import Any

SOLUTION = re.compile(r"^([ \t]*)### BEGIN SOLUTION[ \t]*\n(.*?)^[ \t]*### END SOLUTION[ \t]*(?:\n|$)", re.S | re.M)
CODE_STUB = "# YOUR CODE HERE\nraise NotImplementedError()"
WRITTEN_STUB = "YOUR ANSWER HERE"
DROPDOWN = re.compile(r"\A:::\{admonition\}[ \t]*(?P<title>[^\n]*)\n(?::[a-z_-]+:[^\n]*\n)*\n?(?P<body>.*?)\n?:::[ \t]*\Z", re.S)
#: Tag of the folded solution cells this module adds (and of nothing else).
FOLDED_TAG = "solution-folded"
CHAPTER = re.compile(r"\d\d-.*\.ipynb")
#: A Colab launch link to a chapter notebook on a branch of GitHub (what the theme makes from launch_buttons.colab_url).
COLAB_LINK = re.compile(
    r"(?P<repo>https://colab\.research\.google\.com/github/[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+)/blob/[^/\"'\s]+/(?P<path>chapters/[^/\"'\s]*\.ipynb)"
)


def _source(cell: dict[str, Any]) -> str:
    src = cell.get("source", "")
    return "".join(src) if isinstance(src, list) else src


def _nbgrader(cell: dict[str, Any]) -> dict[str, Any]:
    return cell.get("metadata", {}).get("nbgrader", {})


def _tags(cell: dict[str, Any]) -> list[str]:
    return cell.get("metadata", {}).get("tags", [])


def folded(title: str, body: str) -> str:
    """Markdown for a folded block: ``<details>`` with ``title`` as its summary, the blank lines Markdown needs."""
    return f"<details>\n<summary>{title} (open it after you have tried)</summary>\n\n{body.strip()}\n\n</details>"


def _stubbed(source: str) -> tuple[str, str]:
    """``(the cell with nbgrader's stubs, the model code without the markers)``."""

    def stub(match: re.Match) -> str:
        indent = match.group(1)
        return "".join(f"{indent}{line}\n" for line in CODE_STUB.splitlines())

    model = SOLUTION.sub(lambda m: m.group(2), source)
    return SOLUTION.sub(stub, source).rstrip("\n"), model.strip("\n")


def _folded_cell(cell_id: str, text: str) -> dict[str, Any]:
    cell = {"cell_type": "markdown", "metadata": {"tags": ["exercise", FOLDED_TAG]}, "source": text}
    if cell_id:
        cell["id"] = cell_id
    return cell


def _dropdown_text(source: str, default_title: str) -> tuple[str, str]:
    """``(title, body)`` of a MyST dropdown admonition (the whole text as body if it is none)."""
    m = DROPDOWN.match(source.strip())
    if not m:
        return default_title, source
    return m.group("title").strip() or default_title, m.group("body")


def student_notebook(nb: dict[str, Any]) -> dict[str, Any]:
    """The reader's version of one chapter notebook (a new dict; ``nb`` is not changed).

    Examples
    --------
    >>> answer = {"cell_type": "code", "metadata": {"nbgrader": {"solution": True, "grade_id": "ch04-ex1-answer"}},
    ...           "source": "### BEGIN SOLUTION\\no_by_hand = [0.625, 0.375]\\n### END SOLUTION", "outputs": []}
    >>> test = {"cell_type": "code", "metadata": {"nbgrader": {"grade": True, "grade_id": "ch04-ex1-test"}},
    ...         "source": "checks.check_by_hand('4.1', globals(), seed=seed).require()", "outputs": []}
    >>> cells = student_notebook({"cells": [answer, test]})["cells"]
    >>> print(cells[0]["source"])
    # YOUR CODE HERE
    raise NotImplementedError()
    >>> cells[2]["metadata"]["tags"], "o_by_hand = [0.625, 0.375]" in cells[2]["source"]
    (['exercise', 'solution-folded'], True)
    """
    out = copy.deepcopy(nb)
    cells: list[dict[str, Any]] = []
    pending: list[tuple[str, str, str]] = []  # (id, title, body) waiting for the exercise's check cell
    for cell in out.get("cells", []):
        meta, tags, src = _nbgrader(cell), _tags(cell), _source(cell)
        if FOLDED_TAG in tags or (cell["cell_type"] == "markdown" and meta.get("solution") and src.strip() == WRITTEN_STUB):
            cells.append(cell)  # already a student version's cell: running this again changes nothing
            continue
        cid = cell.get("id", "")
        if cell["cell_type"] == "code" and SOLUTION.search(src):
            cell["source"], model = _stubbed(src)
            cell["outputs"], cell["execution_count"] = [], None
            pending.append((f"{cid}-solution" if cid else "", "Solution", f"```python\n{model}\n```"))
            cells.append(cell)
            continue
        if cell["cell_type"] == "markdown" and meta.get("solution"):
            title, body = _dropdown_text(src, "A model answer")
            cell["source"] = WRITTEN_STUB
            cells.append(cell)
            cells.append(_folded_cell(f"{cid}-solution" if cid else "", folded(title, body)))
            continue
        if cell["cell_type"] == "markdown" and "book-only" in tags:
            title, body = _dropdown_text(src, "Solution")
            cell["source"] = folded(title, body)
            cell["metadata"]["tags"] = [t for t in tags if t != "book-only"] + [FOLDED_TAG]
            cells.append(cell)
            continue
        cells.append(cell)
        if cell["cell_type"] == "code" and meta.get("grade") and pending:
            # the exercise's check: the model code goes right after it
            cells += [_folded_cell(i, folded(t, b)) for i, t, b in pending]
            pending = []
    cells += [_folded_cell(i, folded(t, b)) for i, t, b in pending]
    out["cells"] = cells
    return out


def dumps(nb: dict[str, Any]) -> str:
    """A notebook as nbformat writes it (one-space indent, keys sorted, a final newline)."""
    return json.dumps(nb, indent=1, sort_keys=True, ensure_ascii=False) + "\n"


def write_student_versions(folder: Path) -> list[Path]:
    """Rewrite every chapter notebook in ``folder`` as its student version; returns the files that changed."""
    changed = []
    for path in sorted(Path(folder).glob("*.ipynb")):
        if not CHAPTER.fullmatch(path.name):
            continue
        text = path.read_text(encoding="utf-8")
        new = dumps(student_notebook(json.loads(text)))
        if new != text:
            path.write_text(new, encoding="utf-8")
            changed.append(path)
    return changed


def colab_to_reader(html: str, branch: str) -> str:
    """Point the Colab links of a built page at the reader's copy on ``branch`` (``_sources/...``), not the source.

    ``https://colab.research.google.com/github/OWNER/REPO/blob/SOURCE_BRANCH/chapters/NN-x.ipynb`` becomes
    ``.../blob/BRANCH/_sources/chapters/NN-x.ipynb``, the download menu's student version as published.
    """
    return COLAB_LINK.sub(lambda m: f"{m.group('repo')}/blob/{branch}/_sources/{m.group('path')}", html)


def _rewrite_downloads(app: Any, exception: Exception | None) -> None:
    """After an HTML build: the download menu's copies of the chapters become the student versions, and Colab opens them."""
    if exception is not None or getattr(app.builder, "format", "") != "html":
        return
    sources = Path(app.outdir) / "_sources" / "chapters"
    if sources.is_dir():
        write_student_versions(sources)
    branch = getattr(getattr(app, "config", None), "reader_notebooks_branch", "gh-pages")
    for page in (Path(app.outdir) / "chapters").glob("*.html"):
        text = page.read_text(encoding="utf-8")
        new = colab_to_reader(text, branch)
        if new != text:
            page.write_text(new, encoding="utf-8")


def setup(app: Any) -> dict[str, Any]:
    app.add_config_value("reader_notebooks_branch", "gh-pages", "html")
    app.connect("build-finished", _rewrite_downloads)
    return {"parallel_read_safe": True, "parallel_write_safe": True}


def main(argv: list[str]) -> int:
    args = [a for a in argv if a != "--in-place"]
    if len(args) != 1:
        print(__doc__.split("Command line: ")[1].strip())
        return 2
    folder = Path(args[0])
    if "--in-place" in argv:
        for path in write_student_versions(folder):
            print(f"student version: {path}")
        return 0
    for path in sorted(folder.glob("*.ipynb")):
        if CHAPTER.fullmatch(path.name) and dumps(student_notebook(json.loads(path.read_text(encoding="utf-8")))) != path.read_text(
            encoding="utf-8"
        ):
            print(f"would rewrite {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

"""The chapters a reader downloads or runs (Binder, JupyterLite, the download menu): unsolved, solutions folded.

``_ext/student_notebooks.py`` makes them from the chapters in ``chapters/``,
which keep the model solutions for the book build and for nbgrader. These
tests compare its answer cells with what nbgrader's own ClearSolutions
gives a student, check that every solution is kept, folded, after its
exercise's check, and that each of the three ways a reader gets a notebook
uses it. No notebook is executed and no book is built.
"""

from __future__ import annotations

import copy
import importlib.util
import json
import re
import shutil
import subprocess
import sys
from types import SimpleNamespace

import nbformat
import pytest
from nbgrader.preprocessors import ClearSolutions
from support.notebooks import chapter_notebooks
from support.paths import ROOT

CHAPTERS = chapter_notebooks()
SOLUTION_RE = re.compile(r"### BEGIN SOLUTION\n(.*?)### END SOLUTION", re.S)


def _load(name: str):
    spec = importlib.util.spec_from_file_location(name, ROOT / "_ext" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


student = _load("student_notebooks")


def _text(cell) -> str:
    src = cell["source"]
    return "".join(src) if isinstance(src, list) else src


@pytest.fixture(scope="module")
def versions() -> dict[str, tuple[dict, dict]]:
    return {p.name: (json.loads(p.read_text()), student.student_notebook(json.loads(p.read_text()))) for p in CHAPTERS}


def test_answer_cells_are_what_nbgrader_gives_a_student(versions):
    compared = 0
    for name, (source, mine) in versions.items():
        cleared, _ = ClearSolutions().preprocess(nbformat.reads(json.dumps(source), as_version=4), {})
        by_id = {c.get("id"): _text(c) for c in mine["cells"]}
        for cell in cleared.cells:
            if cell.metadata.get("nbgrader", {}).get("solution"):
                assert by_id[cell.get("id")].strip() == cell.source.strip(), f"{name}: {cell.metadata['nbgrader']['grade_id']}"
                compared += 1
    assert compared >= 40  # every answer cell of the book (code and written)


def test_no_solution_is_left_open_and_none_is_lost(versions):
    for name, (source, mine) in versions.items():
        folded = "\n".join(_text(c) for c in mine["cells"] if student.FOLDED_TAG in c["metadata"].get("tags", []))
        open_text = "\n".join(_text(c) for c in mine["cells"] if student.FOLDED_TAG not in c["metadata"].get("tags", []))
        assert "BEGIN SOLUTION" not in open_text and ":::{admonition}" not in open_text, name
        for cell in source["cells"]:
            meta, tags = cell["metadata"].get("nbgrader", {}), cell["metadata"].get("tags", [])
            blocks = SOLUTION_RE.findall(_text(cell))
            if cell["cell_type"] == "markdown" and (meta.get("solution") or "book-only" in tags):
                blocks = [_text(cell)]
            for block in blocks:
                for line in block.splitlines():
                    line = line.strip()
                    if len(line) > 12 and not line.startswith((":::", ":class:", "#")):
                        assert line in folded, f"{name}: {line!r} is not kept in a folded solution"
                        assert line not in open_text, f"{name}: {line!r} is still open"
        assert all(c["source"].startswith("<details>") for c in mine["cells"] if student.FOLDED_TAG in c["metadata"].get("tags", []))


def test_each_code_solution_comes_after_its_exercises_check(versions):
    for name, (_, mine) in versions.items():
        cells = mine["cells"]
        for i, cell in enumerate(cells):
            if student.FOLDED_TAG in cell["metadata"].get("tags", []) and "```python" in _text(cell):
                before = [c for c in cells[:i] if c["cell_type"] == "code"]
                assert before[-1]["metadata"].get("nbgrader", {}).get("grade"), f"{name}: a solution before its check"


def test_a_student_version_is_a_valid_notebook_and_making_it_twice_changes_nothing(versions, tmp_path):
    for name, (_, mine) in versions.items():
        nbformat.validate(nbformat.from_dict(copy.deepcopy(mine)))
        assert student.student_notebook(mine) == mine, name
    shutil.copy(CHAPTERS[0], tmp_path / CHAPTERS[0].name)
    assert student.write_student_versions(tmp_path) == [tmp_path / CHAPTERS[0].name]
    assert student.write_student_versions(tmp_path) == []


def test_the_download_menu_gives_the_student_versions(tmp_path):
    sources = tmp_path / "_sources" / "chapters"
    sources.mkdir(parents=True)
    shutil.copy(CHAPTERS[3], sources / CHAPTERS[3].name)
    app = SimpleNamespace(outdir=str(tmp_path), builder=SimpleNamespace(format="html"))
    student._rewrite_downloads(app, None)
    text = (sources / CHAPTERS[3].name).read_text()
    assert "BEGIN SOLUTION" not in text and "raise NotImplementedError()" in text and "<details>" in text


def test_colab_buttons_open_the_published_student_version(tmp_path):
    """The theme's Colab link opens chapters/ on the source branch (model solutions); after the build it opens _sources/."""
    pages = tmp_path / "chapters"
    pages.mkdir()
    name = CHAPTERS[3].name
    theme = f'<a href="https://colab.research.google.com/github/owner/book/blob/main/chapters/{name}" class="btn">'
    (pages / f"{CHAPTERS[3].stem}.html").write_text(f"<p>{theme}</p><a href=\"https://github.com/owner/book/blob/main/chapters/{name}\">")
    config = SimpleNamespace(reader_notebooks_branch="site")
    app = SimpleNamespace(outdir=str(tmp_path), builder=SimpleNamespace(format="html"), config=config)
    student._rewrite_downloads(app, None)
    text = (pages / f"{CHAPTERS[3].stem}.html").read_text()
    assert f"https://colab.research.google.com/github/owner/book/blob/site/_sources/chapters/{name}" in text
    assert "colab.research.google.com/github/owner/book/blob/main" not in text
    assert f"https://github.com/owner/book/blob/main/chapters/{name}" in text  # the repository link is left alone


def test_jupyterlite_copies_the_student_versions(tmp_path):
    lite = _load("jupyterlite_book")
    lite._copy_chapters(None, SimpleNamespace(jupyterlite_content_dir=str(tmp_path)))
    copied = tmp_path / "chapters" / CHAPTERS[0].name
    assert json.loads(copied.read_text()) == student.student_notebook(json.loads(CHAPTERS[0].read_text()))
    assert (tmp_path / "chapters" / "playground.ipynb").read_text() == (ROOT / "chapters" / "playground.ipynb").read_text()


def test_binder_runs_the_tool_on_its_own_copy_of_the_chapters(tmp_path):
    (tmp_path / "_ext").mkdir()
    shutil.copy(ROOT / "_ext" / "student_notebooks.py", tmp_path / "_ext")
    shutil.copytree(ROOT / "chapters", tmp_path / "chapters", ignore=shutil.ignore_patterns(".*", "__pycache__"))
    out = subprocess.run(["bash", str(ROOT / "postBuild")], cwd=tmp_path, capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    for path in CHAPTERS:
        assert json.loads((tmp_path / "chapters" / path.name).read_text()) == student.student_notebook(json.loads(path.read_text()))


def test_dev_notebooks_gives_a_local_reader_the_student_versions(tmp_path):
    """``python3 dev.py notebooks --dir DIR``, what the README tells a reader to run locally: student versions, never overwritten."""
    target = tmp_path / "reader"
    run = [sys.executable, str(ROOT / "dev.py"), "notebooks", "--dir", str(target)]
    out = subprocess.run(run, cwd=ROOT, capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    for path in CHAPTERS:
        copied = json.loads((target / path.name).read_text())
        assert copied == student.student_notebook(json.loads(path.read_text())), path.name
        assert "BEGIN SOLUTION" not in (target / path.name).read_text(), path.name
    assert (target / "playground.ipynb").read_text() == (ROOT / "chapters" / "playground.ipynb").read_text()
    # a reader's work is kept when the command runs again
    mine = target / CHAPTERS[0].name
    mine.write_text(mine.read_text().replace("raise NotImplementedError()", "my_own_answer = 0.5", 1))
    again = subprocess.run(run, cwd=ROOT, capture_output=True, text=True)
    assert again.returncode == 0 and "kept" in again.stdout, again.stdout + again.stderr
    assert "my_own_answer = 0.5" in mine.read_text() and "BEGIN SOLUTION" not in mine.read_text()
    # the instructor's source is never the target
    refused = subprocess.run([*run[:-1], str(ROOT / "chapters")], cwd=ROOT, capture_output=True, text=True)
    assert refused.returncode != 0 and "--dir" in refused.stderr and "instructor" in refused.stderr, refused.stderr

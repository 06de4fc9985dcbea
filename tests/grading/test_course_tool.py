"""instructor/course.py on small hand-made course folders (fast; the page's whole run is test_per_student.py)."""

from __future__ import annotations

import importlib.util

import nbformat
from support.paths import ROOT

ANSWER = """def masked_weights(scores, allowed):
    s = np.where(allowed, scores, -np.inf)
    e = np.exp(s - s.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)
"""


def _course_tool(monkeypatch):
    monkeypatch.syspath_prepend(str(ROOT / "instructor"))  # course.py imports the book's nbgrader plugins
    spec = importlib.util.spec_from_file_location("course_tool_fast", ROOT / "instructor" / "course.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _notebook(source: str):
    cell = nbformat.v4.new_code_cell(source)
    cell.metadata["nbgrader"] = {"grade_id": "ch09-ex3-answer", "solution": True, "grade": False, "locked": False}
    return nbformat.v4.new_notebook(cells=[cell])


def test_similar_names_and_skips_an_unreadable_submission_and_reports_the_rest(tmp_path, capsys, monkeypatch):
    """Issue 49: one corrupt notebook made `course.py similar` exit 2 without naming it, and the report was lost."""
    (tmp_path / "release" / "ch09").mkdir(parents=True)
    nbformat.write(_notebook("# YOUR CODE HERE\nraise NotImplementedError()"), tmp_path / "release" / "ch09" / "ch09.ipynb")
    for student in ("s001", "s002", "s003"):
        (tmp_path / "submitted" / student / "ch09").mkdir(parents=True)
    for student in ("s001", "s002"):
        nbformat.write(_notebook(ANSWER), tmp_path / "submitted" / student / "ch09" / "ch09.ipynb")
    (tmp_path / "submitted" / "s003" / "ch09" / "ch09.ipynb").write_text('{"cells": [')  # cut short
    code = _course_tool(monkeypatch).main(["--course", str(tmp_path), "similar", "ch09"])
    out = capsys.readouterr().out
    assert code == 0, out
    assert "s001 and s002: mean similarity 1.00" in out
    assert "skipped, could not be read: submitted/s003/ch09/ch09.ipynb: " in out

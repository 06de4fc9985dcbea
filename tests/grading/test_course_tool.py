"""instructor/course.py on small hand-made course folders (fast; the page's whole run is test_per_student.py)."""

from __future__ import annotations

import ast
import importlib.util
import inspect

import nbformat
import pytest
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


def _notebook(source: str, grade_id: str = "ch09-ex3-answer"):
    cell = nbformat.v4.new_code_cell(source)
    cell.metadata["nbgrader"] = {"grade_id": grade_id, "solution": True, "grade": False, "locked": False}
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


def _release_ch06(course):
    (course / "release" / "ch06").mkdir(parents=True)
    nbformat.write(_notebook("# YOUR CODE HERE"), course / "release" / "ch06" / "ch06.ipynb")


def test_place_reads_the_names_canvas_and_moodle_give_and_an_upper_case_id(tmp_path, capsys, monkeypatch):
    """Issue 49: Moodle's folders, Canvas's names and an upper-case id were skipped without a word (exit 0)."""
    course, downloads = tmp_path / "course", tmp_path / "downloads"
    _release_ch06(course)
    (tmp_path / "roster.csv").write_text("id,lms_user_id\ns001,\ns002,48213\ns003,77120\n")
    files = {
        "S001_ch06.ipynb": "s001",  # the id in capitals
        "leeann_LATE_48213_990001_ch06.ipynb": "s002",  # Canvas: sortable name, LATE, user id, submission id, file
        "Bo Chen_77120_assignsubmission_file_/ch06.ipynb": "s003",  # Moodle: one folder per participant
    }
    for name, student in files.items():
        (downloads / name).parent.mkdir(parents=True, exist_ok=True)
        nbformat.write(_notebook(f"# {student}"), downloads / name)
    args = ["--course", str(course), "place", "ch06", str(downloads), "--roster", str(tmp_path / "roster.csv")]
    code = _course_tool(monkeypatch).main(args)
    out = capsys.readouterr()
    assert code == 0, out.err
    for student in files.values():
        placed = nbformat.read(course / "submitted" / student / "ch06" / "ch06.ipynb", as_version=4)
        assert placed.cells[0].source == f"# {student}"
        assert (course / "submitted" / student / "ch06" / "timestamp.txt").exists()


def test_place_stops_with_a_clear_error_and_places_nothing_when_a_name_holds_no_id(tmp_path, capsys, monkeypatch):
    course, downloads = tmp_path / "course", tmp_path / "downloads"
    _release_ch06(course)
    (tmp_path / "roster.csv").write_text("id\ns001\ns002\n")
    downloads.mkdir()
    nbformat.write(_notebook("# s001"), downloads / "s001_ch06.ipynb")
    nbformat.write(_notebook("# who?"), downloads / "leeann_48213_990001_ch06.ipynb")  # Canvas, no lms_user_id in the roster
    args = ["--course", str(course), "place", "ch06", str(downloads), "--roster", str(tmp_path / "roster.csv")]
    code = _course_tool(monkeypatch).main(args)
    err = capsys.readouterr().err
    assert code == 1
    assert "leeann_48213_990001_ch06.ipynb: its name holds no roster id" in err
    assert "nothing placed" in err and "lms_user_id" in err
    assert not (course / "submitted").exists()  # not even s001's: a second run places each download once


class _Rename(ast.NodeTransformer):
    """Every name a copier would change: the function's, its arguments', its variables'."""

    def __init__(self, names: dict[str, str]) -> None:
        self.names = names

    def visit_FunctionDef(self, node):
        node.name = self.names.get(node.name, node.name)
        if ast.get_docstring(node):
            node.body = node.body[1:]
        return self.generic_visit(node)

    def visit_arg(self, node):
        node.arg, node.annotation = self.names.get(node.arg, node.arg), None
        return node

    def visit_Name(self, node):
        node.id = self.names.get(node.id, node.id)
        return node


def _pasted_copy() -> str:
    """attnlib's softmax_backward as a student would paste it: renamed, no docstring or annotations, reformatted, commented."""
    from attnlib import backward

    tree = ast.parse(inspect.getsource(backward.softmax_backward))
    names = {"softmax_backward": "my_grad", "weights": "P", "d_weights": "dP", "a": "p", "da": "dp", "inner": "s"}
    code = ast.unparse(_Rename(names).visit(tree))
    return "# my own implementation\n" + code.replace("\n    ", "\n    # the softmax gradient, row by row\n    ", 1)


#: An honest 14.2: the chapter's model answer.
HONEST_14_2 = """def softmax_backward(A, dA):
    A = np.asarray(A, dtype=float)
    dA = np.asarray(dA, dtype=float)
    return A * (dA - np.sum(dA * A, axis=-1, keepdims=True))
"""


def test_similar_names_a_renamed_copy_of_attnlibs_function_and_not_an_honest_solution(tmp_path, capsys, monkeypatch):
    """Issue 46: a pasted copy of the library passes the grader's own-function check; the report names it."""
    copied = _pasted_copy()
    assert "def my_grad(P, dP)" in copied and "softmax_backward" not in copied and "Gradient with respect" not in copied
    (tmp_path / "release" / "ch14").mkdir(parents=True)
    nbformat.write(_notebook("# YOUR CODE HERE", "ch14-ex2-answer"), tmp_path / "release" / "ch14" / "ch14.ipynb")
    for student, source in (("s001", HONEST_14_2), ("s002", copied)):
        (tmp_path / "submitted" / student / "ch14").mkdir(parents=True)
        nbformat.write(_notebook(source, "ch14-ex2-answer"), tmp_path / "submitted" / student / "ch14" / "ch14.ipynb")
    code = _course_tool(monkeypatch).main(["--course", str(tmp_path), "similar", "ch14"])
    out = capsys.readouterr().out
    assert code == 0, out
    assert "ch14: 1 submitted function(s) matching attnlib's own source" in out, out
    assert "-- s002 ch14-ex2-answer: my_grad matches attnlib.backward.softmax_backward (similarity 1.00): s002 | attnlib" in out
    assert "s001 ch14" not in out


@pytest.mark.parametrize("threshold", ["2", "-0.5"])
def test_similar_refuses_a_threshold_outside_0_to_1_and_names_it(tmp_path, capsys, monkeypatch, threshold):
    (tmp_path / "release" / "ch14").mkdir(parents=True)
    nbformat.write(_notebook("# YOUR CODE HERE", "ch14-ex2-answer"), tmp_path / "release" / "ch14" / "ch14.ipynb")
    code = _course_tool(monkeypatch).main(["--course", str(tmp_path), "similar", "ch14", "--threshold", threshold])
    assert code == 2
    assert "--threshold must be a number from 0 to 1" in capsys.readouterr().err


def test_regrade_stops_with_a_clear_error_outside_a_course_folder(tmp_path, capsys, monkeypatch):
    code = _course_tool(monkeypatch).main(["--course", str(tmp_path), "regrade", "ch06"])
    assert code == 2
    assert f"{tmp_path / 'nbgrader_config.py'} is missing" in capsys.readouterr().err


def test_no_model_answer_of_the_book_matches_an_attnlib_function(monkeypatch):
    """What instructors.md says: an honest solution (every chapter's model answer) is not reported as a copy."""
    tool = _course_tool(monkeypatch)
    answers = [
        cell.source
        for path in sorted((ROOT / "chapters").glob("*.ipynb"))
        for cell in nbformat.read(path, as_version=4).cells
        if cell.cell_type == "code" and cell.metadata.get("nbgrader", {}).get("solution")
    ]
    functions = [name for source in answers for name, _ in tool.defined_functions(source)]
    assert len(functions) >= 10, functions  # the implement exercises' functions are there to compare
    assert [m for source in answers for m in tool.library_matches(source)] == []

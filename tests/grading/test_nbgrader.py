"""The instructor path, end to end with real nbgrader and a sqlite gradebook in a temporary course.

For every chapter, ``instructor/make_assignments.py`` makes the nbgrader source
notebook from the chapter's exercise cells. Then:

* the source passes its own tests (nbgrader's ``Validator``; the ``nbgrader
  validate`` command exits 0 even when validation fails, so it is not used);
* ``generate_assignment`` makes a student version without solution code or
  hidden tests (checked by scanning it);
* ``autograde`` gives the solutions full marks, a submission whose answer
  raises 0 on that part (and full marks elsewhere, so the grader did not
  crash), and the untouched student version with every locked test cell
  edited into ``pass`` gets the original tests back and so 0 on every
  autograded part (one submission for both checks, which keeps this test,
  which grades every chapter, at three autogrades per chapter).

These run with ``seed = None`` (the book's numbers); tests/grading/test_per_student.py
grades per-student variants with the course's seed preprocessor.
"""

from __future__ import annotations

import copy
import multiprocessing
import os
import re
import time
import warnings
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import nbformat
import pytest
from nbgrader.api import Gradebook
from nbgrader.apps import NbGraderAPI
from nbgrader.coursedir import CourseDirectory
from nbgrader.validator import Validator
from sqlalchemy.exc import SAWarning
from support.grading import ASSIGNMENT_CHAPTERS, make_assignments, nbg, nbgrader_plugins
from support.paths import BIN
from traitlets.config import Config

CHAPTERS = ASSIGNMENT_CHAPTERS
if os.environ.get("ATTN_NBGRADER_ONLY"):  # development aid: grade only some assignments, e.g. "01 04"
    CHAPTERS = [c for c in CHAPTERS if c.name[:2] in os.environ["ATTN_NBGRADER_ONLY"].split()]
NAMES = [make_assignments.assignment_name(c) for c in CHAPTERS]
SOLUTION_RE = re.compile(r"### BEGIN SOLUTION\n(.*?)### END SOLUTION", re.S)
HIDDEN_RE = re.compile(r"### BEGIN HIDDEN TESTS\n(.*?)### END HIDDEN TESTS", re.S)
MARKERS = ("BEGIN SOLUTION", "END SOLUTION", "BEGIN HIDDEN TESTS", "END HIDDEN TESTS")
BROKEN = 'raise RuntimeError("a bug in the submitted answer")\n'


def autograded_tests(nb) -> list:
    """Locked code cells with points and no solution: the autograder's tests."""
    return [c for c in nb.cells if c.cell_type == "code" and nbg(c).get("grade") and not nbg(c).get("solution")]


def answer_before(nb, test_cell):
    """The code solution cell that the test cell ``test_cell`` grades (the last one before it)."""
    answer = None
    for cell in nb.cells:
        if cell is test_cell:
            return answer
        if cell.cell_type == "code" and nbg(cell).get("solution"):
            answer = cell
    return answer


@dataclass
class Graded:
    """Everything that happened to one chapter's assignment."""

    source: nbformat.NotebookNode
    release: nbformat.NotebookNode
    validation: dict
    scores: dict[str, dict[str, tuple[float | None, float]]] = field(default_factory=dict)
    autograded: dict[str, nbformat.NotebookNode] = field(default_factory=dict)
    broken_part: str = ""


def broken_test(source):
    """The test whose answer the "raising" submission breaks: an implemented function if there is one."""
    tests = autograded_tests(source)
    functions = [t for t in tests if "def " in answer_before(source, t).source]
    return (functions or tests)[0]


def make_submissions(source, release) -> dict[str, nbformat.NotebookNode]:
    """The three submissions: solutions, one raising answer, the untouched version with edited locked tests."""
    # (c) one answer raises instead of answering
    broken = copy.deepcopy(source)
    idx = source.cells.index(answer_before(source, broken_test(source)))
    broken.cells[idx].source = SOLUTION_RE.sub(lambda m: " " * _indent(m) + BROKEN, broken.cells[idx].source)
    # (d) the untouched student version with every test cell replaced by a test that always passes
    tampered = copy.deepcopy(release)
    for cell in autograded_tests(tampered):
        cell.source = "# nothing to test here\npass"
    return {"solutions": copy.deepcopy(source), "raising": broken, "tampered": tampered}


def _indent(match: re.Match) -> int:
    body = match.group(1)
    first = body.splitlines()[0] if body.strip() else ""
    return len(first) - len(first.lstrip())


def grade_part(root: Path, names: list[str]) -> dict[str, Graded]:
    """Make, release, submit and autograde the assignments ``names`` in the course folder ``root``."""
    os.environ["PATH"] = f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}"  # nbgrader runs `alembic` by name
    warnings.simplefilter("ignore", SAWarning)  # see course() below
    make_assignments.write_course(root, [int(n[2:]) for n in names])
    cfg = Config()
    cfg.CourseDirectory.root = str(root)
    cfg.CourseDirectory.db_url = f"sqlite:///{root / 'gradebook.db'}"
    cfg.CourseDirectory.course_id = "test-course"
    cfg.ExecutePreprocessor.timeout = 120
    # the book's preprocessors (restored cells, judging outside the kernel), without a per-student seed
    cfg.Autograde.sanitize_preprocessors = nbgrader_plugins.sanitize_preprocessors(seed=False)
    cfg.Autograde.autograde_preprocessors = nbgrader_plugins.autograde_preprocessors()
    api = NbGraderAPI(coursedir=CourseDirectory(config=cfg), config=cfg)
    validator = Validator(config=cfg)
    results = {}
    for name in names:
        src_path = root / "source" / name / f"{name}.ipynb"
        result = api.generate_assignment(name)
        assert result["success"], result.get("error") or result.get("log")
        source = nbformat.read(src_path, as_version=4)
        release = nbformat.read(root / "release" / name / f"{name}.ipynb", as_version=4)
        graded = Graded(source, release, validator.validate(str(src_path)))
        submissions = make_submissions(source, release)
        for student, nb in submissions.items():
            target = root / "submitted" / student / name / f"{name}.ipynb"
            target.parent.mkdir(parents=True, exist_ok=True)
            nbformat.write(nb, target)
            result = api.autograde(name, student)
            assert result["success"], f"autograde of {name} for {student} crashed: {result.get('error')}\n{result.get('log')}"
            graded.autograded[student] = nbformat.read(root / "autograded" / student / name / f"{name}.ipynb", as_version=4)
        with Gradebook(cfg.CourseDirectory.db_url) as gb:
            for student in submissions:
                sub = gb.find_submission_notebook(name, name, student)
                graded.scores[student] = {g.name: (g.auto_score, g.max_score) for g in sub.grades if g.cell.cell_type == "code"}
        graded.broken_part = nbg(broken_test(source))["grade_id"]
        results[name] = graded
    return results


@pytest.fixture(scope="module")
def course(tmp_path_factory) -> dict[str, Graded]:
    """Every chapter's assignment, graded in two course folders at once (the machine has two cores).

    nbgrader 0.9.6 with SQLAlchemy 2 warns about its own session use (SAWarning is a RuntimeWarning,
    which pyproject.toml turns into an error); the workers ignore that warning, and the grades nbgrader
    writes are checked by the tests below.
    """
    root = tmp_path_factory.mktemp("course")
    start = time.perf_counter()
    parts = [NAMES[k::2] for k in range(2) if NAMES[k::2]]
    with ProcessPoolExecutor(max_workers=len(parts), mp_context=multiprocessing.get_context("spawn")) as pool:
        futures = [pool.submit(grade_part, root / f"part{k}", names) for k, names in enumerate(parts)]
        results = {}
        for future in futures:
            results.update(future.result())
    print(f"\nnbgrader: {len(NAMES)} assignments made, validated and autograded in {time.perf_counter() - start:.1f} s")
    return results


def test_every_chapter_has_an_assignment():
    assert len(CHAPTERS) >= 13  # every chapter with exercise cells (make_assignments globs them)
    for chapter in CHAPTERS:
        nb = make_assignments.assignment_notebook(chapter)
        statements = [c for c in nb.cells if c.cell_type == "markdown" and c.source.startswith("### Exercise")]
        assert 2 <= len(statements) <= 4, f"{chapter.name}: {len(statements)} exercises"
        for s in statements:
            assert re.match(r"### Exercise \d+\.\d ★{1,3} ", s.source), f"{chapter.name}: no difficulty mark in {s.source[:60]!r}"
        assert autograded_tests(nb), f"{chapter.name}: no autograded part"
        for test in autograded_tests(nb):
            assert nbg(test).get("locked") and nbg(test).get("points", 0) > 0
            assert HIDDEN_RE.search(test.source), f"{chapter.name}: {nbg(test)['grade_id']} has no hidden tests"
            assert answer_before(nb, test) is not None


def test_exercises_close_each_chapter_and_hide_their_solutions():
    for chapter in CHAPTERS:
        cells = nbformat.read(chapter, as_version=4).cells
        flags = ["exercise" in c.metadata.get("tags", []) for c in cells]
        first = flags.index(True)
        assert all(flags[first:]), f"{chapter.name}: the exercise cells must be the last cells"
        recap = any("## Recap" in c.source for c in cells[:first] if c.cell_type == "markdown")
        assert recap, f"{chapter.name}: no Recap before the exercises"
        assert cells[first].source.startswith("## Exercises")
        for cell in cells[first:]:
            meta, tags = nbg(cell), cell.metadata.get("tags", [])
            if cell.cell_type == "code" and (meta.get("solution") or meta.get("grade")):
                assert "hide-input" in tags, f"{chapter.name}: {meta.get('grade_id')} is not folded in the web book"
            if cell.cell_type == "markdown" and (meta.get("solution") or "book-only" in tags):
                assert ":class: dropdown" in cell.source, f"{chapter.name}: a written solution is not in a dropdown"
            assert "solution-start" not in cell.source and "solution-end" not in cell.source


def test_generator_leaves_out_book_only_cells_and_keeps_order():
    chapter = CHAPTERS[0]
    full = nbformat.read(chapter, as_version=4)
    made = make_assignments.assignment_notebook(chapter)
    kept = [c.source for c in full.cells if "exercise" in c.metadata.get("tags", []) and "book-only" not in c.metadata.get("tags", [])]
    hidden = re.compile(r"### BEGIN HIDDEN TESTS\n.*?### END HIDDEN TESTS\n", re.S)  # at the start of its test cell
    assert [hidden.sub("", c.source) for c in made.cells] == kept
    assert any(hidden.search(c.source) for c in made.cells), "no hidden tests generated from the registry"
    assert all(c.outputs == [] for c in made.cells if c.cell_type == "code")


@pytest.mark.slow
@pytest.mark.parametrize("name", NAMES)
def test_source_passes_its_own_tests(course, name):
    assert course[name].validation == {}, f"{name}: the source notebook fails its own tests: {course[name].validation}"


@pytest.mark.slow
@pytest.mark.parametrize("name", NAMES)
def test_student_version_has_no_solution_and_no_hidden_test(course, name):
    g = course[name]
    text = "\n".join(c.source for c in g.release.cells)
    for marker in MARKERS:
        assert marker not in text, f"{name}: {marker!r} left in the student version"
    assert "book-only" not in str([c.metadata for c in g.release.cells])
    for cell in g.source.cells:
        for block in SOLUTION_RE.findall(cell.source) + HIDDEN_RE.findall(cell.source):
            for line in block.splitlines():
                line = line.strip()
                if len(line) > 8 and not line.startswith("#"):
                    assert line not in text, f"{name}: {line!r} from a solution or hidden test is in the student version"
        if cell.cell_type == "markdown" and nbg(cell).get("solution"):
            assert cell.source not in text
    answers = [c for c in g.release.cells if nbg(c).get("solution")]
    assert answers and all("YOUR CODE HERE" in c.source or "YOUR ANSWER HERE" in c.source for c in answers)


@pytest.mark.slow
@pytest.mark.parametrize("name", NAMES)
def test_autograde_scores(course, name):
    scores = course[name].scores
    parts = set(scores["solutions"])
    assert parts and all(scores[s].keys() == parts for s in scores)
    for part, (score, max_score) in scores["solutions"].items():
        assert max_score > 0 and score == max_score, f"{name}: the solutions get {score}/{max_score} on {part}"
    broken = course[name].broken_part
    for part, (score, max_score) in scores["raising"].items():
        want = 0 if part == broken else max_score
        assert score == want, f"{name}: with a raising answer to {broken}, {part} gets {score} (expected {want})"
    for part, (score, _) in scores["tampered"].items():
        assert score == 0, f"{name}: the untouched version with edited tests gets {score} on {part} (not restored?)"


@pytest.mark.slow
@pytest.mark.parametrize("name", NAMES)
def test_edited_locked_test_cells_are_restored(course, name):
    g = course[name]
    original = {nbg(c)["grade_id"]: c.source for c in autograded_tests(g.source)}
    graded = {nbg(c)["grade_id"]: c.source for c in autograded_tests(g.autograded["tampered"])}
    assert graded == original
    raising = g.autograded["raising"]
    errors = [o for c in raising.cells if c.cell_type == "code" for o in c.outputs if o.get("output_type") == "error"]
    assert errors, f"{name}: the raising answer produced no error output"

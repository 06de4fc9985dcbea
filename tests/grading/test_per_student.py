"""Per-student homework, end to end with real nbgrader 0.9.6 and its sqlite gradebook.

A course of three chapters (1, 6 and 9) and a roster of two students: the
roster goes in with ``nbgrader db student import``, ``instructor/course.py
release`` writes one version per student, and ``autograde`` runs with the
course's own ``nbgrader_config.py`` (its StudentSeed preprocessor). Round 1:
each student hands in the model answers of their own seed. Round 2: student
s002 hands in s001's answers in their own notebook, and s001 hands in s002's
whole notebook, seed cell included (an edited seed cell). Then ``nbgrader
export`` with the book's LMS exporter writes the CSV a gradebook imports,
and ``course.py release --exchange`` makes one copy whose seed cell gives
every user their own seed.
"""

from __future__ import annotations

import copy
import csv
import html
import os
import re
import subprocess
import sys
import time
import warnings
from pathlib import Path

import nbformat
import pytest
from sqlalchemy.exc import SAWarning
from support.grading import BY_HAND, make_assignments, model_answer, nbg
from support.paths import BIN, INSTRUCTOR

from attnlib import variants

sys.path.insert(0, str(INSTRUCTOR))
from nbgrader_plugins import seed_cell_source  # noqa: E402

CHAPTERS = ["ch01", "ch06", "ch09"]
STUDENTS = ["s001", "s002"]
ROSTER = "id,first_name,last_name,email\ns001,Ada,Lovelace,ada@example.org\ns002,Alan,Turing,alan@example.org\n"
BY_HAND_TESTS = {e.test_id for e in BY_HAND.values()}


def nbgrader(root: Path, *args: str) -> str:
    """Run the real nbgrader command line in the course folder."""
    env = {**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}"}
    done = subprocess.run([str(BIN / "nbgrader"), *args], cwd=root, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, f"nbgrader {' '.join(args)} failed:\n{done.stdout}\n{done.stderr}"
    return done.stdout + done.stderr


def answered(release, source, seed: int):
    """The student version with every answer cell filled in with the model answer for ``seed``."""
    nb = copy.deepcopy(release)
    by_id = {nbg(c).get("grade_id"): c for c in source.cells}
    for cell in nb.cells:
        if cell.cell_type == "code" and nbg(cell).get("solution"):
            cell.source = model_answer(by_id[nbg(cell)["grade_id"]], seed)
    return nb


@pytest.fixture(scope="module")
def course(tmp_path_factory):
    from nbgrader.api import Gradebook
    from nbgrader.apps import NbGraderAPI
    from nbgrader.coursedir import CourseDirectory
    from traitlets.config.loader import PyFileConfigLoader

    os.environ["PATH"] = f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}"  # nbgrader runs `alembic` by name
    warnings.simplefilter("ignore", SAWarning)  # nbgrader 0.9.6 with SQLAlchemy 2, see test_nbgrader.py
    start = time.perf_counter()
    root = tmp_path_factory.mktemp("per-student")
    make_assignments.write_course(root, [int(n[2:]) for n in CHAPTERS])
    assert len((root / "variant_key.txt").read_text().strip()) == 32  # a fresh random key per course
    (root / "variant_key.txt").write_text("a fixed key, so that this test always draws the same numbers\n")
    (root / "roster.csv").write_text(ROSTER)
    nbgrader(root, "db", "student", "import", "roster.csv")
    cfg = PyFileConfigLoader("nbgrader_config.py", path=str(root)).load_config()
    api = NbGraderAPI(coursedir=CourseDirectory(config=cfg), config=cfg)
    key = (root / "variant_key.txt").read_text().strip()
    seeds = {(s, a): variants.student_seed(s, a, key) for s in STUDENTS for a in CHAPTERS}
    out = {"root": root, "seeds": seeds, "scores": {}, "autograded": {}, "personal": {}}

    def grade(round_: str, a: str, s: str, nb) -> None:
        target = root / "submitted" / s / a / f"{a}.ipynb"
        target.parent.mkdir(parents=True, exist_ok=True)
        nbformat.write(nb, target)
        result = api.autograde(a, s, force=True)
        assert result["success"], f"autograde {a} {s}: {result.get('error')}\n{result.get('log')}"
        out["autograded"][round_, a, s] = nbformat.read(root / "autograded" / s / a / f"{a}.ipynb", as_version=4)
        with Gradebook(cfg.CourseDirectory.db_url) as gb:
            sub = gb.find_submission_notebook(a, a, s)
            out["scores"][round_, a, s] = {g.name: (g.auto_score, g.max_score) for g in sub.grades if g.cell.cell_type == "code"}

    for a in CHAPTERS:
        result = api.generate_assignment(a)
        assert result["success"], result.get("error") or result.get("log")
        done = subprocess.run(
            [sys.executable, str(INSTRUCTOR / "course.py"), "--course", str(root), "release", a, "--roster", "roster.csv"],
            cwd=root, capture_output=True, text=True, timeout=120,
        )
        assert done.returncode == 0, done.stderr
        source = nbformat.read(root / "source" / a / f"{a}.ipynb", as_version=4)
        own = {}
        for s in STUDENTS:
            personal = nbformat.read(root / "personalized" / s / a / f"{a}.ipynb", as_version=4)
            out["personal"][a, s] = personal
            own[s] = answered(personal, source, seeds[s, a])
            grade("own", a, s, own[s])
        # s002: s001's answers in s002's own notebook; s001: s002's whole notebook (seed cell edited)
        swapped = copy.deepcopy(own["s002"])
        for cell, theirs in zip(swapped.cells, own["s001"].cells, strict=True):
            if nbg(cell).get("solution"):
                cell.source = theirs.source
        grade("swapped", a, "s002", swapped)
        grade("swapped", a, "s001", own["s002"])
    result = api.generate_feedback("ch09", "s002")
    assert result["success"], result.get("error") or result.get("log")
    out["feedback"] = (root / "feedback" / "s002" / "ch09" / "ch09.html").read_text()
    out["export"] = nbgrader(root, "export", "--exporter=book_plugins.LmsGradesExporter", "--to", "lms_grades.csv")
    out["seconds"] = time.perf_counter() - start
    print(f"\nper-student nbgrader: {len(CHAPTERS)} assignments x {len(STUDENTS)} students, 2 rounds, in {out['seconds']:.1f} s")
    return out


def by_hand_numbers(cell) -> bool:
    """Whether a "your numbers" cell belongs to a by-hand exercise (predict ones have few variants)."""
    return nbg(cell)["grade_id"].replace("-numbers", "-test") in BY_HAND_TESTS


def seed_cell(nb):
    cells = [c for c in nb.cells if nbg(c).get("grade_id", "").endswith("-seed")]
    assert len(cells) == 1
    return cells[0]


@pytest.mark.slow
@pytest.mark.parametrize("a", CHAPTERS)
def test_each_student_gets_their_own_locked_seed_and_numbers(course, a):
    personal = {s: course["personal"][a, s] for s in STUDENTS}
    for s in STUDENTS:
        cell = seed_cell(personal[s])
        assert cell.source == seed_cell_source(course["seeds"][s, a], s)
        assert nbg(cell)["locked"] and not nbg(cell).get("solution")
    assert course["seeds"]["s001", a] != course["seeds"]["s002", a]
    printed = {}
    for s in STUDENTS:
        nb = course["autograded"]["own", a, s]
        cells = [c for c in nb.cells if nbg(c).get("grade_id", "").endswith("-numbers")]
        assert cells and all(c.outputs for c in cells)
        printed[s] = ["".join(o.get("text", "") for o in c.outputs) for c in cells if by_hand_numbers(c)]
    assert printed["s001"] and all(x != y for x, y in zip(printed["s001"], printed["s002"], strict=True)), printed


@pytest.mark.slow
@pytest.mark.parametrize("a", CHAPTERS)
def test_own_model_answers_get_full_marks(course, a):
    for s in STUDENTS:
        for part, (score, max_score) in course["scores"]["own", a, s].items():
            if not part.endswith("-written"):
                assert max_score > 0 and score == max_score, f"{a} {s}: {part} gets {score}/{max_score}"


@pytest.mark.slow
@pytest.mark.parametrize("a", CHAPTERS)
def test_someone_elses_answers_get_zero_on_the_by_hand_parts(course, a):
    for s in STUDENTS:
        scores = course["scores"]["swapped", a, s]
        by_hand = BY_HAND_TESTS & set(scores)
        assert by_hand, f"{a} has no by-hand part"
        for part, (score, max_score) in scores.items():
            if part in by_hand:
                assert score == 0, f"{a}: {s} handing in the other's answers gets {score} on {part}"
            elif not part.endswith("-written"):
                assert score == max_score, f"{a}: {s} loses points on {part}, which does not depend on the seed"


@pytest.mark.slow
@pytest.mark.parametrize("a", CHAPTERS)
def test_an_edited_seed_cell_is_restored_and_graded_with_the_rosters_seed(course, a):
    nb = course["autograded"]["swapped", a, "s001"]  # s001 handed in s002's notebook, seed cell and all
    assert seed_cell(nb).source == seed_cell_source(course["seeds"]["s001", a], "s001")
    tests = [c for c in nb.cells if nbg(c).get("grade") and not nbg(c).get("solution") and c.cell_type == "code"]
    assert tests and all(c.source.startswith(f"seed = {course['seeds']['s001', a]} ") for c in tests)


@pytest.mark.slow
def test_feedback_shows_neither_hidden_tests_nor_their_lines(course):
    text = html.unescape(re.sub(r"<[^>]+>", "", course["feedback"]))  # the text a student reads
    assert "Exercise 9.1" in text and "masked_row" in text
    assert "HIDDEN TESTS" not in text
    for code in make_assignments.hidden_tests("ch09").values():
        for line in code.splitlines():
            assert line.strip() not in text, f"feedback quotes the hidden test line {line.strip()!r}"


@pytest.mark.slow
def test_lms_export_holds_every_students_points(course):
    with open(course["root"] / "lms_grades.csv", newline="") as fh:
        rows = list(csv.reader(fh))
    header, points, students = rows[0], rows[1], rows[2:]
    assert header[:5] == ["Student", "ID", "SIS User ID", "SIS Login ID", "Section"] and header[5:] == CHAPTERS
    assert points[0] == "Points Possible"
    for k, a in enumerate(CHAPTERS):
        assert float(points[5 + k]) == sum(m for _, m in course["scores"]["own", a, "s001"].values()) + written_points(course, a)
    assert sorted(r[2] for r in students) == STUDENTS
    for row in students:
        assert row[0] in ("Lovelace, Ada", "Turing, Alan") and row[3] == row[2]
        for k, a in enumerate(CHAPTERS):
            want = sum(score for score, _ in course["scores"]["swapped", a, row[2]].values())
            assert float(row[5 + k]) == want, f"{row[2]} {a}: exported {row[5 + k]}, graded {want}"


def written_points(course, a: str) -> float:
    """Points of the manually graded Markdown answers (not in the code-cell scores)."""
    source = nbformat.read(course["root"] / "source" / a / f"{a}.ipynb", as_version=4)
    return sum(nbg(c)["points"] for c in source.cells if c.cell_type == "markdown" and nbg(c).get("grade"))


@pytest.mark.slow
def test_exchange_release_computes_each_users_own_seed(course, monkeypatch):
    """``course.py release --exchange``: one copy for everybody, whose seed cell gives each user their seed."""
    from nbgrader import utils
    from nbgrader.validator import Validator

    root = course["root"]
    done = subprocess.run(
        [sys.executable, str(INSTRUCTOR / "course.py"), "--course", str(root), "release", "ch06", "--exchange"],
        capture_output=True, text=True, timeout=120,
    )
    assert done.returncode == 0, done.stderr
    nb = nbformat.read(root / "release" / "ch06" / "ch06.ipynb", as_version=4)
    cell = seed_cell(nb)
    assert nbg(cell)["checksum"] == utils.compute_checksum(cell)  # students' `nbgrader validate` stays quiet
    assert Validator().validate(str(root / "release" / "ch06" / "ch06.ipynb")).get("changed") is None
    for user in STUDENTS:
        monkeypatch.setenv("LOGNAME", user)  # what getpass.getuser() reads first
        ns: dict = {}
        exec(cell.source, ns)
        assert ns["seed"] == course["seeds"][user, "ch06"]

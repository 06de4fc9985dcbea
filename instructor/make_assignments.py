#!/usr/bin/env python3
"""Make nbgrader source notebooks from the exercises at the end of the chapters.

The chapter notebooks are the source of truth of the exercises: their
exercise cells (tag ``exercise``) carry the nbgrader metadata (the seed cell,
solution cells, autograded test cells, manually graded answers, points and
grade ids). The hidden tests are not in the chapters: this script generates
one per autograded exercise from the exercises' registry (``attnlib.exercises``):
``hand_in("9.2", seed, globals())``, which hands the answer in for the grader to
judge in its own process. It puts the block, between nbgrader's hidden-test
markers, at the *start* of the test cell: the answer is handed in (and refused,
with the self-check's reason) even when the visible self-check below it fails.
An exercise that needs more writes its block by hand in
``instructor/hidden_tests/chNN.py`` (``# %% grade-id`` then the code), with a
line ``# Hand-written because ...`` that says why; it replaces the generated one.
It copies the exercise cells, in order, into one small assignment notebook
per chapter that has exercises, leaving out the cells tagged ``book-only``
(worked solutions shown as dropdowns in the web book). The result is an
nbgrader course folder::

    COURSE/nbgrader_config.py        (written once; edit it freely afterwards)
    COURSE/course_secret.txt         (written once: the course secret every seed derives from)
    COURSE/book_plugins.py           (rewritten every run: the book's nbgrader plugins, importable in COURSE)
    COURSE/source/ch04/ch04.ipynb    (one assignment per chapter)

Usage::

    python instructor/make_assignments.py COURSE                # every chapter
    python instructor/make_assignments.py COURSE --chapters 4 9  # some chapters

Then, inside COURSE, run nbgrader as described in the book's page
"For instructors" (instructors.md).
"""

from __future__ import annotations

import argparse
import copy
import re
import secrets
import sys
from pathlib import Path

import nbformat

ROOT = Path(__file__).resolve().parent.parent
CHAPTERS = ROOT / "chapters"
HIDDEN_TESTS = ROOT / "instructor" / "hidden_tests"
PLUGINS = ROOT / "instructor" / "nbgrader_plugins.py"
BLOCK_RE = re.compile(r"^# %% (\S+)\n", re.M)
EXERCISE_TAG = "exercise"
#: The course secret: every assignment's keys (per release route) derive from it (attnlib.variants.route_key).
SECRET = "course_secret.txt"
BOOK_ONLY_TAG = "book-only"

CONFIG = '''"""nbgrader configuration of the course made by instructor/make_assignments.py (edit freely)."""

c = get_config()  # noqa: F821 (nbgrader provides get_config)

c.CourseDirectory.course_id = {course_id!r}
c.CourseDirectory.root = {root!r}
# One assignment per chapter with exercises (ch01, ch02, ...), each with one notebook of the same name.
# The gradebook: this sqlite file, or the PostgreSQL server whose SQLAlchemy URL is in the environment
# variable COURSE_GRADEBOOK_URL (postgresql+psycopg://USER@HOST/DATABASE; instructors.md, "Many students").
import os  # noqa: E402

c.CourseDirectory.db_url = os.environ.get("COURSE_GRADEBOOK_URL") or "sqlite:///" + {db!r}
# The exchange folder is where release_assignment puts assignments and collect picks up submissions.
c.Exchange.root = {exchange!r}
# Students' kernels need attnlib: install the book's requirements.txt in the grading environment.
c.ExecutePreprocessor.timeout = 120
# Late submissions: nbgrader's penalty ("none", or "zero": a late submission scores 0). The due date of an
# assignment is set with `nbgrader db assignment add chNN --duedate="2027-01-15 17:00:00 UTC"`.
c.LateSubmissionPlugin.penalty_method = "none"

# The book's plugins (instructor/nbgrader_plugins.py in the clone this course was made from).
import sys  # noqa: E402
from pathlib import Path  # noqa: E402

sys.path.insert(0, {plugins_dir!r})
import nbgrader_plugins as book  # noqa: E402

# Per-student numbers: autograde puts back deleted locked cells, restores edited ones, then sets the seed of
# the student it grades (from the roster id, the assignment's route and the course secret), so an edited or
# deleted seed cell changes nothing; after the notebook has run, each hidden test's hand-in is judged here,
# outside the student's kernel.
c.StudentSeed.secret = (Path({root!r}) / "course_secret.txt").read_text().strip()
c.StudentSeed.routes_file = str(Path({root!r}) / "routes.json")
c.Autograde.sanitize_preprocessors = book.sanitize_preprocessors()
c.Autograde.autograde_preprocessors = book.autograde_preprocessors()
# A submitted file that is not a readable notebook is graded as handed out, unanswered (and kept beside it).
c.Autograde.pre_convert_hook = book.unreadable_as_unanswered
# Feedback shows the student their results and the visible self-checks, never the hidden tests.
c.GenerateFeedback.preprocessors = book.feedback_preprocessors()
# release_feedback releases the feedback of every submission that came through the exchange and names the
# others (placed by hand with course.py place), instead of stopping at the first of them.
c.ExchangeFactory.release_feedback = book.ReleaseFeedbackReportingSkips
# The LMS export: roster students only, columns in this order.
c.LmsGradesExporter.roster = str(Path({root!r}) / "roster.csv")
c.LmsGradesExporter.assignment_order = {assignments!r}
'''

SHIM = '''"""The book's nbgrader plugins, importable from this course folder (make_assignments.py rewrites it on every run)."""

import sys

sys.path.insert(0, {plugins_dir!r})
from nbgrader_plugins import LmsGradesExporter, StudentSeed  # noqa: E402, F401
'''


def chapter_files() -> list[Path]:
    """Every chapter with exercise cells, in order (new chapters are picked up by this glob)."""
    return [p for p in sorted(CHAPTERS.glob("[0-9][0-9]-*.ipynb")) if exercise_cells(nbformat.read(p, as_version=4))]


def assignment_name(chapter: Path) -> str:
    """``chapters/04-full-formula.ipynb`` -> ``ch04``."""
    return "ch" + chapter.name[:2]


def tags(cell) -> list[str]:
    return list(cell.get("metadata", {}).get("tags", []))


def exercise_cells(nb) -> list:
    """The chapter's exercise cells for the assignment, in order (book-only cells left out)."""
    out = []
    for cell in nb.cells:
        t = tags(cell)
        if EXERCISE_TAG in t and BOOK_ONLY_TAG not in t:
            out.append(copy.deepcopy(cell))
    return out


#: The hidden test of an autograded exercise, generated from the registry.
GENERATED_BLOCK = 'from attnlib.exercises.grading import hand_in\n\nhand_in("{number}", seed, globals())'
#: A hand-written block says why the generated one does not do.
WHY_RE = re.compile(r"^# Hand-written because \S.*$", re.M)


def written_hidden_tests(name: str) -> dict[str, str]:
    """grade id -> hand-written hidden test code, from ``instructor/hidden_tests/<name>.py`` (empty if there is none).

    Each block must hold a line ``# Hand-written because ...``; a block without one is refused (ValueError).
    """
    path = HIDDEN_TESTS / f"{name}.py"
    if not path.exists():
        return {}
    parts = BLOCK_RE.split(path.read_text())
    blocks = {gid: code.strip("\n") for gid, code in zip(parts[1::2], parts[2::2], strict=True)}
    silent = sorted(gid for gid, code in blocks.items() if not WHY_RE.search(code))
    if silent:
        raise ValueError(f"{path.name}: the hand-written hidden tests of {silent} do not say why (a line '# Hand-written because ...')")
    return blocks


def hidden_tests(name: str) -> dict[str, str]:
    """grade id -> hidden test code of assignment ``name``: generated from the registry, or hand-written where one is."""
    if str(ROOT) not in sys.path:  # the book's own attnlib, also when it is not installed
        sys.path.append(str(ROOT))
    from attnlib.exercises import EXERCISES

    graded = [e for e in EXERCISES.values() if e.graded_outside and e.assignment == name]
    generated = {e.test_id: GENERATED_BLOCK.format(number=e.number) for e in graded}
    return {**generated, **written_hidden_tests(name)}


def inject_hidden_tests(cells: list, blocks: dict[str, str], where: str) -> None:
    """Put each hidden test block at the start of the test cell of its grade id, between nbgrader's markers.

    First, so that the answer is handed in before the visible self-check can stop the cell: the grader then
    judges every answer, and a refused one gets the self-check's reason instead of "nothing was handed in".
    """
    by_id = {c.metadata.get("nbgrader", {}).get("grade_id"): c for c in cells}
    unknown = sorted(set(blocks) - set(by_id))
    if unknown:
        raise ValueError(f"{where}: hidden tests for grade ids that no exercise cell has: {unknown}")
    for gid, code in blocks.items():
        cell = by_id[gid]
        meta = cell.metadata["nbgrader"]
        if cell.cell_type != "code" or not meta.get("grade") or meta.get("solution"):
            raise ValueError(f"{where}: {gid} is not an autograded test cell")
        cell.source = f"### BEGIN HIDDEN TESTS\n{code}\n### END HIDDEN TESTS\n{cell.source}"


def assignment_notebook(chapter: Path):
    """The nbgrader source notebook of one chapter: its exercise cells and hidden tests, without outputs."""
    nb = nbformat.read(chapter, as_version=4)
    cells = exercise_cells(nb)
    if not cells:
        raise ValueError(f"{chapter.name} has no cells tagged {EXERCISE_TAG!r}")
    grade_ids = [c.metadata["nbgrader"]["grade_id"] for c in cells if "nbgrader" in c.metadata]
    dupes = {g for g in grade_ids if grade_ids.count(g) > 1}
    if dupes:
        raise ValueError(f"{chapter.name}: grade ids used twice: {sorted(dupes)}")
    if not any(c.metadata.get("nbgrader", {}).get("grade") for c in cells):
        raise ValueError(f"{chapter.name}: no graded cell among its exercises")
    inject_hidden_tests(cells, hidden_tests(assignment_name(chapter)), chapter.name)
    for cell in cells:
        if cell.cell_type == "code":
            cell.outputs = []
            cell.execution_count = None
    out = nbformat.v4.new_notebook(cells=cells, metadata=copy.deepcopy(nb.metadata))
    nbformat.validate(out)
    return out


def write_course(course: Path, numbers: list[int] | None = None) -> list[Path]:
    """Write ``source/chNN/chNN.ipynb`` for the chosen chapters (all by default) and the config if missing."""
    course = course.resolve()
    course.mkdir(parents=True, exist_ok=True)
    config = course / "nbgrader_config.py"
    if not config.exists():
        config.write_text(
            CONFIG.format(
                course_id="deriving-attention",
                root=str(course),
                db=str(course / "gradebook.db"),
                exchange=str(course / "exchange"),
                plugins_dir=str(PLUGINS.parent),
                assignments=[assignment_name(c) for c in chapter_files()],
            )
        )
    secret = course / SECRET
    if not secret.exists():
        secret.write_text(secrets.token_hex(16) + "\n")
        secret.chmod(0o600)
    (course / "book_plugins.py").write_text(SHIM.format(plugins_dir=str(PLUGINS.parent)))
    written = []
    for chapter in chapter_files():
        if numbers and int(chapter.name[:2]) not in numbers:
            continue
        name = assignment_name(chapter)
        target = course / "source" / name / f"{name}.ipynb"
        target.parent.mkdir(parents=True, exist_ok=True)
        nbformat.write(assignment_notebook(chapter), target)
        written.append(target)
    return written


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("course", type=Path, help="the nbgrader course folder to create or update")
    parser.add_argument("--chapters", type=int, nargs="*", help="chapter numbers (default: all)")
    args = parser.parse_args(argv)
    for path in write_course(args.course, args.chapters):
        print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

#!/usr/bin/env python3
"""Make nbgrader source notebooks from the exercises at the end of the chapters.

The chapter notebooks are the only source of truth: their exercise cells
(tag ``exercise``) already carry the nbgrader metadata (solution cells,
autograded test cells with hidden tests, manually graded answers, points
and grade ids). This script copies those cells, in order, into one small
assignment notebook per chapter, leaving out the cells tagged ``book-only``
(worked solutions shown as dropdowns in the web book). The result is an
nbgrader course folder::

    COURSE/nbgrader_config.py        (written once; edit it freely afterwards)
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
import sys
from pathlib import Path

import nbformat

ROOT = Path(__file__).resolve().parent.parent
CHAPTERS = ROOT / "chapters"
EXERCISE_TAG = "exercise"
BOOK_ONLY_TAG = "book-only"

CONFIG = '''"""nbgrader configuration of the course made by instructor/make_assignments.py (edit freely)."""

c = get_config()  # noqa: F821 (nbgrader provides get_config)

c.CourseDirectory.course_id = {course_id!r}
c.CourseDirectory.root = {root!r}
# One assignment per chapter, named ch01 .. ch13, each with one notebook of the same name.
c.CourseDirectory.db_url = "sqlite:///" + {db!r}
# The exchange folder is where release_assignment puts assignments and collect picks up submissions.
c.Exchange.root = {exchange!r}
# Students' kernels need attnlib: install the book's requirements.txt in the grading environment.
c.ExecutePreprocessor.timeout = 120
'''


def chapter_files() -> list[Path]:
    return sorted(CHAPTERS.glob("[0-9][0-9]-*.ipynb"))


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


def assignment_notebook(chapter: Path):
    """The nbgrader source notebook of one chapter: its exercise cells only, without outputs."""
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
            )
        )
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

#!/usr/bin/env python3
"""Per-student versions of the book's assignments: every student gets their own numbers.

Run inside an nbgrader course folder made by ``instructor/make_assignments.py``
(it holds ``variant_key.txt``, the course's key), after ``nbgrader
generate_assignment``. The seed of a student is an HMAC of their roster id
and the assignment name under that key (``attnlib.variants.student_seed``);
the grader derives it again from the id it grades, so the seed written into
a notebook is only there to show the student their numbers.

Subcommands::

    course.py release chNN --roster roster.csv   # one file per student: personalized/<id>/chNN/chNN.ipynb
    course.py release chNN --exchange            # release/chNN for the exchange: seed from the user name
    course.py seeds chNN --roster roster.csv     # the table of seeds (student id, seed)

The roster is the CSV that ``nbgrader db student import`` reads (a column
``id``; ``first_name``, ``last_name`` and ``email`` are optional).
"""

from __future__ import annotations

import argparse
import csv
import sys
from pathlib import Path

import nbformat

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from nbgrader_plugins import personalize, seed_cell_source  # noqa: E402

from attnlib.variants import student_seed  # noqa: E402

PERSONALIZED = "personalized"


def read_roster(path: Path) -> list[str]:
    """The student ids of a roster CSV in nbgrader's ``db student import`` format."""
    with open(path, newline="") as fh:
        rows = list(csv.DictReader(fh))
    if not rows or "id" not in rows[0]:
        raise ValueError(f"roster {path} must be a CSV with a column 'id' (nbgrader's student import format)")
    ids = [r["id"].strip() for r in rows]
    if any(not i for i in ids) or len(set(ids)) != len(ids):
        raise ValueError(f"roster {path}: every row needs an id, and ids must be unique")
    return ids


def course_key(course: Path) -> str:
    path = course / "variant_key.txt"
    if not path.exists():
        raise ValueError(f"{path} is missing: make the course with instructor/make_assignments.py first")
    return path.read_text().strip()


def released_notebooks(course: Path, assignment: str) -> list[Path]:
    folder = course / "release" / assignment
    notebooks = sorted(folder.glob("*.ipynb"))
    if not notebooks:
        raise ValueError(f"no notebooks in {folder}: run `nbgrader generate_assignment {assignment}` first")
    return notebooks


def release_files(course: Path, assignment: str, students: list[str]) -> list[Path]:
    """One copy of the student version per student, its seed cell holding that student's seed."""
    key, written = course_key(course), []
    for path in released_notebooks(course, assignment):
        nb = nbformat.read(path, as_version=4)
        for student in students:
            seed = student_seed(student, assignment, key)
            target = course / PERSONALIZED / student / assignment / path.name
            target.parent.mkdir(parents=True, exist_ok=True)
            nbformat.write(personalize(nb, seed_cell_source(seed, student)), target)
            written.append(target)
    return written


def exchange_seed_source(assignment: str, key: str) -> str:
    return (
        "# Your own numbers, from your user name; this cell is read-only.\n"
        "from attnlib.variants import current_user, student_seed\n\n"
        f"seed = student_seed(current_user(), {assignment!r}, key={key!r})"
    )


def release_exchange(course: Path, assignment: str) -> list[Path]:
    """Rewrite ``release/<assignment>`` so that each student's copy computes their seed from their user name."""
    key, written = course_key(course), []
    for path in released_notebooks(course, assignment):
        nb = nbformat.read(path, as_version=4)
        nbformat.write(personalize(nb, exchange_seed_source(assignment, key)), path)
        written.append(path)
    return written


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--course", type=Path, default=Path.cwd(), help="the nbgrader course folder (default: here)")
    sub = parser.add_subparsers(dest="command", required=True)
    rel = sub.add_parser("release", help="make the students' versions of one assignment")
    rel.add_argument("assignment", help="for example ch06")
    how = rel.add_mutually_exclusive_group(required=True)
    how.add_argument("--roster", type=Path, help="write one notebook per student of this roster CSV")
    how.add_argument("--exchange", action="store_true", help="prepare release/<assignment> for nbgrader release_assignment")
    seeds = sub.add_parser("seeds", help="print every student's seed for one assignment as CSV")
    seeds.add_argument("assignment")
    seeds.add_argument("--roster", type=Path, required=True)
    args = parser.parse_args(argv)
    course = args.course.resolve()
    try:
        if args.command == "seeds":
            key = course_key(course)
            print("id,seed")
            for student in read_roster(args.roster):
                print(f"{student},{student_seed(student, args.assignment, key)}")
            return 0
        paths = release_exchange(course, args.assignment) if args.exchange else release_files(
            course, args.assignment, read_roster(args.roster)
        )
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    for path in paths:
        print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

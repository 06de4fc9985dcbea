"""The book's two nbgrader plugins: the grader's seed and the grade export for an LMS.

* :class:`StudentSeed`, a preprocessor that ``nbgrader autograde`` runs right
  after nbgrader restores the locked cells (``OverwriteCells``). It derives the
  seed of the student being graded from the roster id nbgrader is grading
  (``resources["nbgrader"]["student"]``) and the course key, writes it into the
  notebook's seed cell, and sets it again at the top of every autograded test
  cell, so neither an edited seed cell nor ``seed = ...`` in an answer cell
  changes which numbers are graded.
* :class:`ShortTracebacks`, a feedback preprocessor: a failed test's
  traceback would quote the hidden test lines, so feedback keeps only the
  error and its message.
* :class:`LmsGradesExporter`, an export plugin
  (``nbgrader export --exporter=book_plugins.LmsGradesExporter``) writing one
  row per student and one column per assignment, in the layout of a Canvas
  gradebook CSV, which Moodle's CSV grade import reads as well.

``instructor/course.py setup`` writes ``nbgrader_config.py`` and a two-line
``book_plugins.py`` into the course folder that make both importable there.
"""

from __future__ import annotations

import copy
import csv
import sys
from pathlib import Path

from nbgrader import utils
from nbgrader.api import Gradebook, MissingEntry
from nbgrader.plugins import ExportPlugin
from nbgrader.preprocessors import NbGraderPreprocessor
from traitlets import Bool, Unicode

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # the book's attnlib, when run from a clone

from attnlib.variants import student_seed  # noqa: E402

SEED_SUFFIX = "-seed"


def seed_cell_source(seed: int, student: str) -> str:
    """The seed cell of one student's notebook."""
    return f"# Your own numbers (student {student}); this cell is read-only.\nseed = {seed}"


def is_seed_cell(cell) -> bool:
    return cell.cell_type == "code" and cell.metadata.get("nbgrader", {}).get("grade_id", "").endswith(SEED_SUFFIX)


def is_autograded_test(cell) -> bool:
    meta = cell.metadata.get("nbgrader", {})
    return cell.cell_type == "code" and bool(meta.get("grade")) and not meta.get("solution")


class StudentSeed(NbGraderPreprocessor):
    """Set the seed of the student being graded (from the roster id, never from the notebook)."""

    key = Unicode("", help="The course's variant key (course.py setup writes it).").tag(config=True)

    def preprocess(self, nb, resources):
        if not self.key:
            raise ValueError("StudentSeed.key is empty: set c.StudentSeed.key in nbgrader_config.py")
        student = resources["nbgrader"]["student"]
        seed = student_seed(student, resources["nbgrader"]["assignment"], self.key)
        for cell in nb.cells:
            if is_seed_cell(cell):
                cell.source = seed_cell_source(seed, student)
            elif is_autograded_test(cell):
                cell.source = f"seed = {seed}  # the grader's seed for {student}\n{cell.source}"
        self.log.info("Graded %s with the seed of %s", resources["nbgrader"]["assignment"], student)
        return nb, resources


class ShortTracebacks(NbGraderPreprocessor):
    """In feedback, a failed test shows its error but not the traceback, which would quote the hidden tests."""

    def preprocess_cell(self, cell, resources, index):
        if is_autograded_test(cell):
            for out in cell.get("outputs", []):
                if out.get("output_type") == "error":
                    out["traceback"] = [f"{out.get('ename', 'Error')}: {out.get('evalue', '')}".rstrip(": ")]
        return cell, resources


def personalize(nb, seed_source: str):
    """A copy of a released notebook whose seed cell says ``seed_source`` (its checksum updated)."""
    out = copy.deepcopy(nb)
    for cell in out.cells:
        if is_seed_cell(cell):
            cell.source = seed_source
            cell.metadata.nbgrader["checksum"] = utils.compute_checksum(cell)
            return out
    raise ValueError("the notebook has no seed cell (a code cell whose grade_id ends in '-seed')")


class LmsGradesExporter(ExportPlugin):
    """Grades as a CSV for Canvas or Moodle: one row per student, one column of points per assignment."""

    points_possible_row = Bool(
        True, help="Write Canvas's 'Points Possible' row under the header (turn off for Moodle)."
    ).tag(config=True)

    def export(self, gradebook: Gradebook) -> None:
        dest = self.to or "lms_grades.csv"
        assignments = [a for a in gradebook.assignments if not self.assignment or a.name in self.assignment]
        students = [s for s in gradebook.students if not self.student or s.id in self.student]
        header = ["Student", "ID", "SIS User ID", "SIS Login ID", "Section"] + [a.name for a in assignments]
        with open(dest, "w", newline="") as fh:
            writer = csv.writer(fh)
            writer.writerow(header)
            if self.points_possible_row:
                writer.writerow(["Points Possible", "", "", "", ""] + [_points(a.max_score) for a in assignments])
            for student in students:
                name = ", ".join(p for p in (student.last_name, student.first_name) if p) or student.id
                row = [name, "", student.id, student.id, ""]
                for a in assignments:
                    try:
                        row.append(_points(gradebook.find_submission(a.name, student.id).score))
                    except MissingEntry:
                        row.append("0")
                writer.writerow(row)
        self.log.info("Wrote %d students x %d assignments to %s", len(students), len(assignments), dest)


def _points(x: float) -> str:
    return f"{float(x):g}"

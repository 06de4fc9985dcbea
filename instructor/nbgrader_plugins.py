"""The book's nbgrader plugins: restored cells, the grader's seed, judging outside the kernel, feedback, LMS export.

``nbgrader autograde`` runs, on each submission (``sanitize_preprocessors()``):

* :class:`RestoreDeletedCells`, before nbgrader's ``OverwriteCells``: puts back
  every locked cell of the source (seed cell, setup, test cells, texts) that
  the submission lacks, from the gradebook, where it stood, so a deleted test
  or seed cell is graded like an edited one; and gives back the full source
  of a locked cell that is exactly the copy the grader handed out (a test cell
  without its hidden tests, the seed cell this student was given), so that
  nbgrader warns about changed checksums only for cells a student changed.
* nbgrader's ``OverwriteCells``, which restores every edited locked cell.
* :class:`StudentSeed`: derives the seed of the student being graded from the
  roster id nbgrader grades (``resources["nbgrader"]["student"]``), the
  assignment, its release route and the course secret
  (``attnlib.variants.route_key``), writes it into the seed cell, and sets it
  again at the top of every autograded test cell.

and, after the notebook has run (``autograde_preprocessors()``):

* :class:`JudgeHandIns`, right after ``Execute``: judges what each test cell's
  hidden test handed in (``attnlib.exercises.grading``) in the grader's own
  process, with the seed the grader wrote, and turns a wrong or missing
  hand-in into an error output, which nbgrader scores 0.

``nbgrader generate_feedback`` uses :class:`ClearHiddenTestsQuietly` and
:class:`ShortTracebacks` (a failed test shows its error, never the hidden test
lines). :class:`LmsGradesExporter` (``nbgrader export
--exporter=book_plugins.LmsGradesExporter``) writes one row per roster student
and one column per assignment, after late penalties, in the layout of a Canvas
gradebook CSV, which Moodle's CSV grade import reads as well.

``instructor/make_assignments.py`` writes ``nbgrader_config.py`` and a short
``book_plugins.py`` into the course folder, which make all of these importable there.
"""

from __future__ import annotations

import copy
import csv
import json
import re
from pathlib import Path

import nbformat
from nbconvert.preprocessors import ClearMetadataPreprocessor
from nbgrader import utils
from nbgrader.api import Gradebook, MissingEntry
from nbgrader.plugins import ExportPlugin
from nbgrader.preprocessors import (
    AssignLatePenalties,
    CheckCellMetadata,
    ClearHiddenTests,
    ClearOutput,
    DeduplicateIds,
    Execute,
    IgnorePattern,
    LimitOutput,
    NbGraderPreprocessor,
    OverwriteCells,
    OverwriteKernelspec,
    SaveAutoGrades,
)
from traitlets import Bool, List, Unicode

from attnlib.exercises import grading
from attnlib.variants import ROUTES, route_key, student_seed

SEED_SUFFIX = "-seed"
#: What nbconvert's HTML exporter sets for every NbConvertBase (nbgrader's base class hides it from config).
_PRIORITY = ["text/html", "application/pdf", "text/latex", "image/svg+xml", "image/png", "image/jpeg", "text/plain"]
_SEED_LINE = re.compile(r"^seed = (None|\d+)\b", re.M)


def seed_cell_source(seed: int, student: str) -> str:
    """The seed cell of one student's notebook (the per-student files route)."""
    return f"# Your own numbers (student {student}); this cell is read-only.\nseed = {seed}"


def exchange_seed_source(assignment: str, key: str) -> str:
    """The seed cell of the exchange copy: each user's seed from their user name and this assignment's key."""
    return (
        "# Your own numbers, from your user name; this cell is read-only.\n"
        "from attnlib.variants import current_user, student_seed\n\n"
        f"seed = student_seed(current_user(), {assignment!r}, key={key!r})"
    )


def is_seed_cell(cell) -> bool:
    return cell.cell_type == "code" and cell.metadata.get("nbgrader", {}).get("grade_id", "").endswith(SEED_SUFFIX)


def is_autograded_test(cell) -> bool:
    meta = cell.metadata.get("nbgrader", {})
    return cell.cell_type == "code" and bool(meta.get("grade")) and not meta.get("solution")


def graded_seed(nb) -> int | None:
    """The seed the grader wrote into the notebook's seed cell (``None``: the book's numbers)."""
    cells = [c for c in nb.cells if is_seed_cell(c)]
    found = _SEED_LINE.findall(cells[0].source) if len(cells) == 1 else []
    if not found:
        raise ValueError("the graded notebook has no seed cell with a line `seed = <number or None>`")
    return None if found[-1] == "None" else int(found[-1])


def read_routes(path: str | Path) -> dict[str, str]:
    """assignment -> release route, as ``course.py release`` records them (missing file: none yet)."""
    p = Path(path)
    return json.loads(p.read_text()) if p.exists() else {}


class _BookPreprocessor(NbGraderPreprocessor):
    display_data_priority = List(_PRIORITY).tag(config=True)  # declared, so nbconvert's setting is no "unknown option"


class StudentSeed(_BookPreprocessor):
    """Set the seed of the student being graded (from the roster id, never from the notebook)."""

    secret = Unicode("", help="The course secret (course_secret.txt); every assignment's keys derive from it.").tag(config=True)
    routes_file = Unicode("", help="JSON file assignment -> release route, written by course.py release.").tag(config=True)
    default_route = Unicode("files", help="The route of an assignment that routes_file does not list.").tag(config=True)

    def route(self, assignment: str) -> str:
        route = read_routes(self.routes_file).get(assignment, self.default_route) if self.routes_file else self.default_route
        if route not in ROUTES:
            raise ValueError(f"{self.routes_file}: route of {assignment} must be one of {ROUTES}, got {route!r}")
        return route

    def key(self, assignment: str) -> str:
        """The key of the assignment on the route it was released by."""
        if not self.secret:
            raise ValueError("StudentSeed.secret is empty: set c.StudentSeed.secret in nbgrader_config.py")
        return route_key(self.secret, assignment, self.route(assignment))

    def seed(self, student: str, assignment: str) -> int:
        return student_seed(student, assignment, self.key(assignment))

    def released_sources(self, student: str, assignment: str) -> set[str]:
        """The seed cells the grader handed this student (whichever route), for :class:`RestoreDeletedCells`."""
        if not self.secret:
            return set()
        return {
            seed_cell_source(student_seed(student, assignment, route_key(self.secret, assignment, "files")), student),
            exchange_seed_source(assignment, route_key(self.secret, assignment, "exchange")),
        }

    def preprocess(self, nb, resources):
        student, assignment = resources["nbgrader"]["student"], resources["nbgrader"]["assignment"]
        seed = self.seed(student, assignment)
        for cell in nb.cells:
            if is_seed_cell(cell):
                cell.source = seed_cell_source(seed, student)
            elif is_autograded_test(cell):
                cell.source = f"seed = {seed}  # the grader's seed for {student}\n{cell.source}"
        self.log.info("Graded %s with the seed of %s (route %s)", assignment, student, self.route(assignment))
        return nb, resources


class RestoreDeletedCells(_BookPreprocessor):
    """Put back deleted locked cells from the gradebook, and the full source of locked cells handed out stripped.

    Runs before ``OverwriteCells``, which restores only the cells that are present.
    """

    def _released_form(self, source: str) -> str:
        cell = nbformat.v4.new_code_cell(source)
        ClearHiddenTests()._remove_hidden_test_region(cell)
        return cell.source

    def _new_cell(self, gb: Gradebook, sc, notebook: str, assignment: str):
        meta = {"grade": False, "grade_id": sc.name, "locked": True, "solution": False, "task": False, "schema_version": 3}
        try:
            meta.update(grade=True, points=gb.find_graded_cell(sc.name, notebook, assignment).max_score)
        except MissingEntry:
            pass
        meta["checksum"] = sc.checksum
        make = nbformat.v4.new_code_cell if sc.cell_type == "code" else nbformat.v4.new_markdown_cell
        cell = make(sc.source, metadata={"nbgrader": meta, "deletable": False, "editable": False})
        return cell

    def preprocess(self, nb, resources):
        info = resources["nbgrader"]
        notebook, assignment, student = info["notebook"], info["assignment"], info["student"]
        seeds = StudentSeed(config=self.config).released_sources(student, assignment)
        with Gradebook(info["db_url"]) as gb:
            source = gb.find_notebook(notebook, assignment)
            locked = {sc.name: sc for sc in source.source_cells if sc.locked}
            order = [
                c.metadata["nbgrader"]["grade_id"] for c in self._source_cells(resources) if "grade_id" in c.metadata.get("nbgrader", {})
            ]
            order += sorted(set(locked) - set(order))
            present = {c.metadata.get("nbgrader", {}).get("grade_id"): c for c in nb.cells}
            for name, sc in locked.items():
                cell = present.get(name)
                if cell is None or cell.cell_type != sc.cell_type or cell.source == sc.source:
                    continue
                handed_out = cell.source == self._released_form(sc.source) or (is_seed_cell(cell) and cell.source in seeds)
                if handed_out:
                    cell.source = sc.source  # the copy the grader handed out: no alarm for it
            for k, name in enumerate(order):
                if name not in locked or name in present:
                    continue
                cell = self._new_cell(gb, locked[name], notebook, assignment)
                before = [present[n] for n in order[:k] if n in present]
                at = nb.cells.index(before[-1]) + 1 if before else 0
                nb.cells.insert(at, cell)
                present[name] = cell
                self.log.warning("Cell %s was deleted from the submission of %s; restored it from the source", name, student)
        return nb, resources

    def _source_cells(self, resources) -> list:
        """The cells of the source notebook, in order (the gradebook keeps no order)."""
        from nbgrader.coursedir import CourseDirectory

        info = resources["nbgrader"]
        coursedir = CourseDirectory(config=self.config)
        path = Path(coursedir.format_path(coursedir.source_directory, ".", info["assignment"])) / f"{info['notebook']}.ipynb"
        return nbformat.read(path, as_version=4).cells if path.exists() else []


class JudgeHandIns(_BookPreprocessor):
    """After the notebook ran: judge each test cell's hand-in in this process; a failure becomes an error output."""

    def preprocess(self, nb, resources):
        seed = graded_seed(nb)
        for cell in nb.cells:
            if not is_autograded_test(cell):
                continue
            entry = grading.exercise_of_test(cell.metadata["nbgrader"]["grade_id"])
            if entry is None:
                continue
            failures = grading.judge_outputs(entry.number, seed, cell.get("outputs", []))
            if failures:
                text = "; ".join(failures)
                cell.outputs.append(
                    nbformat.v4.new_output("error", ename="NotRight", evalue=f"graded outside the notebook: {text}", traceback=[])
                )
                self.log.info("%s: %s", cell.metadata["nbgrader"]["grade_id"], text)
        return nb, resources


class ShortTracebacks(_BookPreprocessor):
    """In feedback, a failed test shows its error but not the traceback, which would quote the hidden tests."""

    def preprocess_cell(self, cell, resources, index):
        if is_autograded_test(cell):
            for out in cell.get("outputs", []):
                if out.get("output_type") == "error":
                    out["traceback"] = [f"{out.get('ename', 'Error')}: {out.get('evalue', '')}".rstrip(": ")]
        return cell, resources


class ClearHiddenTestsQuietly(ClearHiddenTests):
    """nbgrader's ClearHiddenTests, declaring the display priority nbconvert configures (no warning about it)."""

    display_data_priority = List(_PRIORITY).tag(config=True)


def sanitize_preprocessors(seed: bool = True) -> list:
    """``c.Autograde.sanitize_preprocessors``: nbgrader's, with the book's restore and seed steps."""
    return [
        ClearOutput,
        DeduplicateIds,
        OverwriteKernelspec,
        RestoreDeletedCells,
        OverwriteCells,
        *([StudentSeed] if seed else []),
        CheckCellMetadata,
    ]


def autograde_preprocessors() -> list:
    """``c.Autograde.autograde_preprocessors``: nbgrader's, with the outside judge right after Execute."""
    return [
        Execute,
        JudgeHandIns,
        IgnorePattern,
        ClearMetadataPreprocessor,
        LimitOutput,
        SaveAutoGrades,
        AssignLatePenalties,
        CheckCellMetadata,
    ]


def feedback_preprocessors() -> list:
    """``c.GenerateFeedback.preprocessors``: results and visible checks, never the hidden tests."""
    from nbconvert.preprocessors import CSSHTMLHeaderPreprocessor
    from nbgrader.preprocessors import GetGrades

    return [GetGrades, ClearHiddenTestsQuietly, ShortTracebacks, CSSHTMLHeaderPreprocessor]


def personalize(nb, seed_source: str):
    """A copy of a released notebook whose seed cell says ``seed_source`` (its checksum updated)."""
    out = copy.deepcopy(nb)
    for cell in out.cells:
        if is_seed_cell(cell):
            cell.source = seed_source
            cell.metadata.nbgrader["checksum"] = utils.compute_checksum(cell)
            return out
    raise ValueError("the notebook has no seed cell (a code cell whose grade_id ends in '-seed')")


def read_roster(path: str | Path) -> list[dict[str, str]]:
    """The rows of a roster CSV in nbgrader's ``db student import`` format (a column ``id``)."""
    with open(path, newline="") as fh:
        rows = list(csv.DictReader(fh))
    if not rows or "id" not in rows[0]:
        raise ValueError(f"roster {path} must be a CSV with a column 'id' (nbgrader's student import format)")
    ids = [r["id"].strip() for r in rows]
    if any(not i for i in ids) or len(set(ids)) != len(ids):
        raise ValueError(f"roster {path}: every row needs an id, and ids must be unique")
    return [{**r, "id": r["id"].strip()} for r in rows]


class LmsGradesExporter(ExportPlugin):
    """Grades as a CSV for Canvas or Moodle: one row per roster student, one column of points per assignment.

    Points are nbgrader's after its late penalty (``max(0, score - penalty)``,
    as in nbgrader's own ``grades.csv``); columns are in the order of
    ``assignment_order`` (default: by name, ch01, ch02, ...), so a due date
    does not move a column; only students of ``roster`` get a row (others are
    named in a warning); a submission whose hand-graded parts are not graded
    yet gets an empty cell, which a gradebook import leaves ungraded, and is
    named in a warning. An assignment not handed in counts 0.
    """

    points_possible_row = Bool(True, help="Write Canvas's 'Points Possible' row under the header (turn off for Moodle).").tag(config=True)
    roster = Unicode("roster.csv", help="The roster CSV (nbgrader's student import format); only its students are exported.").tag(
        config=True
    )
    assignment_order = List([], help="Assignment names in column order (default: sorted by name).").tag(config=True)
    ungraded_marker = Unicode("", help="What a submission with ungraded hand-graded parts gets (default: empty).").tag(config=True)

    def export(self, gradebook: Gradebook) -> None:
        dest = self.to or "lms_grades.csv"
        roster = read_roster(self.roster)
        names = {a.name: a for a in gradebook.assignments if not self.assignment or a.name in self.assignment}
        order = [n for n in self.assignment_order if n in names] + sorted(set(names) - set(self.assignment_order))
        assignments = [names[n] for n in order]
        wanted = [r for r in roster if not self.student or r["id"] in self.student]
        known = {s.id: s for s in gradebook.students}
        off_roster = sorted(set(known) - {r["id"] for r in roster})
        if off_roster:
            self.log.warning("Not on the roster %s, so not exported: %s", self.roster, ", ".join(off_roster))
        header = ["Student", "ID", "SIS User ID", "SIS Login ID", "Section"] + [a.name for a in assignments]
        ungraded = []
        with open(dest, "w", newline="") as fh:
            writer = csv.writer(fh)
            writer.writerow(header)
            if self.points_possible_row:
                writer.writerow(["Points Possible", "", "", "", ""] + [_points(a.max_score) for a in assignments])
            for row_in in wanted:
                sid = row_in["id"]
                student = known.get(sid)
                first = (student.first_name if student else None) or row_in.get("first_name", "")
                last = (student.last_name if student else None) or row_in.get("last_name", "")
                name = ", ".join(p for p in (last, first) if p) or sid
                row = [name, "", sid, sid, ""]
                for a in assignments:
                    try:
                        sub = gradebook.find_submission(a.name, sid)
                    except MissingEntry:
                        row.append("0")
                        continue
                    if sub.needs_manual_grade:
                        ungraded.append(f"{sid} {a.name}")
                        row.append(self.ungraded_marker)
                        continue
                    row.append(_points(max(0.0, sub.score - (sub.late_submission_penalty or 0.0))))
                writer.writerow(row)
        if ungraded:
            self.log.warning(
                "Hand-graded parts not graded yet (exported as %r; grade them in the Formgrader and export again): %s",
                self.ungraded_marker,
                ", ".join(ungraded),
            )
        self.log.info("Wrote %d students x %d assignments to %s", len(wanted), len(assignments), dest)


def _points(x: float) -> str:
    return f"{float(x):g}"

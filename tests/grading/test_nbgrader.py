"""The instructor path, end to end with real nbgrader and a sqlite gradebook in a temporary course.

For every chapter, ``instructor/make_assignments.py`` makes the nbgrader source
notebook from the chapter's exercise cells. Then:

* the source passes its own tests: nbgrader's ``Validator`` (the ``nbgrader
  validate`` command exits 0 even when validation fails, so it is not used) on
  the first assignment of each course folder (:data:`VALIDATED`); on the others,
  the solutions' autograde below runs the same notebook's tests and must show
  the same (no test cell with an error, full points), which saves the
  Validator's own execution of each chapter;
* ``generate_assignment`` makes a student version without solution code or
  hidden tests (checked by scanning it);
* ``autograde`` gives the solutions full marks, and a submission whose answer
  raises 0 on that part (and full marks elsewhere, so the grader did not
  crash);
* the table of right and wrong answers of issue 49 (tests/support/answer_table.py), the fourth column
  after the self-check, ``check_by_hand`` and the hand-in judge of tests/exercises/test_one_comparator.py:
  every row of every judged exercise typed into its answer cell, one row per exercise in each
  submission ``row01``, ``row02``, ... (as many as the chapter's longest list; the right rows are the
  solutions' submission), all of a chapter's rows autograded in one ``nbgrader autograde`` run. Each
  row must get the points of the self-check's verdict (0 or full) and the self-check's reasons in the
  grader's feedback;
* the first of those submissions (``row01``, wrong answers throughout) also has every locked test cell
  edited into ``pass``: it must get the original tests back (their sources, as in the source notebook)
  and so its rows' points (0 for every wrong row, where a ``pass`` would have passed). One submission
  for both checks: a separate "tampered" submission would cost each chapter one more autograde;
* nbgrader's ``Validator`` starts its kernels over ipc sockets, and so does the grader for every
  submission (no TCP port for parallel workers to collide on).

These run with ``seed = None`` (the book's numbers); tests/grading/test_per_student.py
grades per-student variants with the course's seed preprocessor.
"""

from __future__ import annotations

import ast
import contextlib
import copy
import io
import linecache
import multiprocessing
import os
import re
import tempfile
import time
import warnings
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import nbformat
import pytest
from nbclient.util import run_sync
from nbgrader.api import Gradebook
from nbgrader.apps import NbGraderAPI
from nbgrader.coursedir import CourseDirectory
from sqlalchemy.exc import SAWarning
from support import answer_table
from support.grading import (
    ASSIGNMENT_CHAPTERS,
    IpcExecute,
    ipc_validator,
    kernel_facts,
    make_assignments,
    model_answer,
    nbg,
    nbgrader_plugins,
)
from support.paths import BIN
from traitlets.config import Config

from attnlib import checks, variants
from attnlib.exercises import grading

CHAPTERS = ASSIGNMENT_CHAPTERS
if os.environ.get("ATTN_NBGRADER_ONLY"):  # development aid: grade only some assignments, e.g. "01 04"
    CHAPTERS = [c for c in CHAPTERS if c.name[:2] in os.environ["ATTN_NBGRADER_ONLY"].split()]
NAMES = [make_assignments.assignment_name(c) for c in CHAPTERS]
#: the assignments nbgrader's Validator runs on: the first of each of the two course folders (see ``course``)
VALIDATED = frozenset(NAMES[:2])
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
    #: the Validator's report (``{}``: the source passes its own tests), or None where it did not run (:data:`VALIDATED`)
    validation: dict | None
    scores: dict[str, dict[str, tuple[float | None, float]]] = field(default_factory=dict)
    autograded: dict[str, nbformat.NotebookNode] = field(default_factory=dict)
    broken_part: str = ""
    #: (student, test cell grade id) -> (exercise, row of the answer table)
    table: dict[tuple[str, str], tuple[str, str]] = field(default_factory=dict)
    #: the kernels the Validator started: transport, address, sockets seen as files
    kernels: list[dict] = field(default_factory=list)
    #: the kernels the grader started for the chapter's submissions, the same facts
    grading_kernels: list[dict] = field(default_factory=list)
    #: seconds of the one autograde run of the table's submissions
    table_seconds: float = 0.0


class RecordedSandboxExecute(nbgrader_plugins.SandboxExecute):
    """The grader's ``SandboxExecute``, recording each kernel it starts in ``IpcExecute.started`` as ``IpcExecute`` does."""

    async def async_start_new_kernel_client(self):
        kc = await super().async_start_new_kernel_client()  # the kernel answered: its sockets are bound
        IpcExecute.started.append(kernel_facts(self.km))
        return kc

    start_new_kernel_client = run_sync(async_start_new_kernel_client)  # nbclient's synchronous name wraps its own coroutine


def broken_test(source):
    """The test whose answer the "raising" submission breaks: an implemented function if there is one."""
    tests = autograded_tests(source)
    functions = [t for t in tests if "def " in answer_before(source, t).source]
    return (functions or tests)[0]


def make_submissions(source) -> dict[str, nbformat.NotebookNode]:
    """The two submissions besides the answer table's: solutions, and one raising answer."""
    broken = copy.deepcopy(source)
    idx = source.cells.index(answer_before(source, broken_test(source)))
    broken.cells[idx].source = SOLUTION_RE.sub(lambda m: " " * _indent(m) + BROKEN, broken.cells[idx].source)
    return {"solutions": copy.deepcopy(source), "raising": broken}


TABLE_PREFIX = "row"  # the table's submissions are row01, row02, ...
#: the table's submission whose locked test cells are also edited into ``pass`` (see the module docstring)
TAMPERED = f"{TABLE_PREFIX}01"
NOTHING_TO_TEST = "# nothing to test here\npass"


def tamper(nb: nbformat.NotebookNode) -> nbformat.NotebookNode:
    """``nb`` with every locked test cell replaced by a test that always passes."""
    out = copy.deepcopy(nb)
    for cell in autograded_tests(out):
        cell.source = NOTHING_TO_TEST
    return out


def _names(source: str, ctx: type) -> set[str]:
    try:
        tree = ast.parse(source)
    except SyntaxError:  # a magic (the Colab cell): kept as it is needed or not by its imports
        return set()
    found = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and isinstance(n.ctx, ctx)}
    if ctx is ast.Store:
        found |= {n.name for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.ClassDef))}
        imports = [n for n in ast.walk(tree) if isinstance(n, (ast.Import, ast.ImportFrom))]
        found |= {(a.asname or a.name).split(".")[0] for n in imports for a in n.names}
    return found


def lean(nb: nbformat.NotebookNode) -> nbformat.NotebookNode:
    """``nb`` without the chapter's own cells that its exercises do not need (a student may delete them).

    Kept: every cell from the first nbgrader cell on, and before it each code cell that defines a name
    a kept cell reads (followed back: the imports, ``caches`` of chapter 15). The table's submissions
    are graded this way so that each autograde runs the exercises, not the chapter's training runs and
    figures again; nbgrader grades the cells there are, as for a student who deleted the rest.
    """
    cells = nb.cells
    first = next((i for i, c in enumerate(cells) if nbg(c).get("grade_id")), 0)
    keep = set(range(first, len(cells)))
    code = [cells[i].source for i in keep if cells[i].cell_type == "code"]
    needed = set().union(*(_names(c, ast.Load) for c in code)) - set().union(*(_names(c, ast.Store) for c in code))
    for i in range(first - 1, -1, -1):
        if cells[i].cell_type == "code" and _names(cells[i].source, ast.Store) & needed:
            keep.add(i)
            needed |= _names(cells[i].source, ast.Load) - _names(cells[i].source, ast.Store)
    out = copy.deepcopy(nb)
    out.cells = [c for i, c in enumerate(cells) if i in keep]
    return out


def table_submissions(source) -> tuple[dict[str, nbformat.NotebookNode], dict[tuple[str, str], tuple[str, str]]]:
    """The answer table's rows (seed None) as submissions: the k-th wrong row of every judged exercise in ``row<k>``.

    An exercise with fewer rows than the chapter's longest list keeps its model answer (its right row)
    in the later submissions. Returns the submissions and (student, test grade id) -> (exercise, row),
    the solutions' submission holding every right row.
    """
    rows, where = {}, {}
    for test in autograded_tests(source):
        entry = grading.exercise_of_test(nbg(test)["grade_id"])
        if entry is None:
            continue
        answer = answer_before(source, test)
        model = model_answer(answer, None)  # the solution's code without its markers
        if entry.kind == "implement":
            wrong = [row for row in answer_table.implement_rows(entry.number) if row != "right"]
            made = [(row, answer_table.implement_source(entry.number, row, model)) for row in wrong]
        else:
            typed = answer_table.typed_rows(entry.number, None)
            made = [(row, answer_table.typed_source(values)) for row, values in typed.items() if row != "right"]
        rows[nbg(test)["grade_id"]] = (entry.number, made)
        where[nbg(test)["grade_id"]] = source.cells.index(answer)
    table = {("solutions", gid): (number, "right") for gid, (number, _) in rows.items()}
    submissions = {}
    for k in range(max(len(made) for _, made in rows.values())):
        student = f"{TABLE_PREFIX}{k + 1:02d}"
        nb = copy.deepcopy(source)
        for gid, (number, made) in rows.items():
            row, code = made[k] if k < len(made) else ("right", None)
            if code is not None:
                nb.cells[where[gid]].source = code
            table[student, gid] = (number, row)
        submissions[student] = lean(nb)
    return submissions, table


def self_checks(nb) -> dict[str, tuple[bool, list[str]]]:
    """Test grade id -> (passed, messages) of the self-check of each judged exercise, the notebook run in process.

    The cells a student's kernel runs before the tests (seed, setup, numbers, answers) run in one
    namespace, as in the kernel (their lines readable, so that a message may quote the line that
    failed, as in the kernel); then each exercise's self-check judges what they defined, as the
    visible check of its test cell does.
    """
    ns: dict = {}
    with contextlib.redirect_stdout(io.StringIO()):
        for cell in nb.cells:
            meta = nbg(cell)
            if cell.cell_type == "code" and meta and not (meta.get("grade") and not meta.get("solution")):
                filename = f"<cell {meta['grade_id']} {id(nb)}>"  # its lines readable, as IPython keeps a cell's
                linecache.cache[filename] = (len(cell.source), None, cell.source.splitlines(keepends=True), filename)
                exec(compile(cell.source, filename, "exec"), ns)
        found = {}
        for test in autograded_tests(nb):
            entry = grading.exercise_of_test(nbg(test)["grade_id"])
            if entry is None:
                continue
            if entry.kind == "implement":
                result = entry.check(ns[entry.function], seed=None, verbose=False)
            elif entry.kind == "by-hand":
                result = checks.check_by_hand(entry.number, ns, None, verbose=False)
            else:  # 15.3, the one measured exercise
                (name,) = variants.answers(entry.draw(None))
                result = checks.check_memory_prediction(ns[name], None, verbose=False)
            found[nbg(test)["grade_id"]] = (result.passed, list(result.messages))
    return found


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
    grader = nbgrader_plugins.autograde_preprocessors()
    assert nbgrader_plugins.SandboxExecute in grader
    cfg.Autograde.autograde_preprocessors = [RecordedSandboxExecute if p is nbgrader_plugins.SandboxExecute else p for p in grader]
    api = NbGraderAPI(coursedir=CourseDirectory(config=cfg), config=cfg)
    validator = ipc_validator(cfg)
    results = {}
    for name in names:
        src_path = root / "source" / name / f"{name}.ipynb"
        result = api.generate_assignment(name)
        assert result["success"], result.get("error") or result.get("log")
        source = nbformat.read(src_path, as_version=4)
        release = nbformat.read(root / "release" / name / f"{name}.ipynb", as_version=4)
        IpcExecute.started.clear()
        graded = Graded(source, release, validator.validate(str(src_path)) if name in VALIDATED else None)
        graded.kernels = list(IpcExecute.started)
        IpcExecute.started.clear()
        submissions = make_submissions(source)
        for student, nb in submissions.items():
            target = root / "submitted" / student / name / f"{name}.ipynb"
            target.parent.mkdir(parents=True, exist_ok=True)
            nbformat.write(nb, target)
            result = api.autograde(name, student)
            assert result["success"], f"autograde of {name} for {student} crashed: {result.get('error')}\n{result.get('log')}"
            graded.autograded[student] = nbformat.read(root / "autograded" / student / name / f"{name}.ipynb", as_version=4)
        rows, graded.table = table_submissions(source)
        rows[TAMPERED] = tamper(rows[TAMPERED])
        for student, nb in rows.items():
            target = root / "submitted" / student / name / f"{name}.ipynb"
            target.parent.mkdir(parents=True, exist_ok=True)
            nbformat.write(nb, target)
        began = time.perf_counter()
        result = api.autograde(name, f"{TABLE_PREFIX}*")  # every row of the chapter in one run
        graded.table_seconds = time.perf_counter() - began
        assert result["success"], f"autograde of {name}'s answer table crashed: {result.get('error')}\n{result.get('log')}"
        for student in rows:
            graded.autograded[student] = nbformat.read(root / "autograded" / student / name / f"{name}.ipynb", as_version=4)
        submissions |= rows
        graded.grading_kernels = list(IpcExecute.started)
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
    rows = sum(len({s for s, _ in g.table}) - 1 for g in results.values())
    print(f"\nnbgrader: {len(NAMES)} assignments made, validated and autograded in {time.perf_counter() - start:.1f} s", end="")
    print(f" (the answer table's {rows} submissions: {sum(g.table_seconds for g in results.values()):.1f} s", end="")
    print(f" summed over both processes; load average {os.getloadavg()[0]:.1f})")
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
    """nbgrader's Validator where it ran (:data:`VALIDATED`); elsewhere the solutions' autograde of the same notebook:
    no test cell of it has an error output, and every part gets its points (what the Validator checks of a source)."""
    g = course[name]
    if name in VALIDATED:
        assert g.validation == {}, f"{name}: the source notebook fails its own tests: {g.validation}"
        return
    assert g.validation is None
    tests = autograded_tests(g.autograded["solutions"])
    failing = [nbg(c)["grade_id"] for c in tests if any(o.get("output_type") == "error" for o in c.outputs)]
    assert tests and not failing, f"{name}: the source notebook fails its own tests {failing} when graded"
    assert all(max_score > 0 and score == max_score for score, max_score in g.scores["solutions"].values()), g.scores["solutions"]


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
    rows = {part: course[name].table.get((TAMPERED, part), (None, "right"))[1] for part in scores[TAMPERED]}
    wrong = [part for part, row in rows.items() if row not in answer_table.RIGHT | answer_table.EITHER]
    assert wrong, f"{name}: {TAMPERED} has no wrong row, so its edited tests show nothing"
    for part in wrong:
        score = scores[TAMPERED][part][0]
        assert score == 0, f"{name}: {TAMPERED} with edited tests gets {score} on {part} (row {rows[part]!r}; not restored?)"


@pytest.mark.slow
@pytest.mark.parametrize("name", NAMES)
def test_edited_locked_test_cells_are_restored(course, name):
    g = course[name]
    original = {nbg(c)["grade_id"]: c.source for c in autograded_tests(g.source)}
    graded = {nbg(c)["grade_id"]: c.source for c in autograded_tests(g.autograded[TAMPERED])}
    assert graded == original
    raising = g.autograded["raising"]
    errors = [o for c in raising.cells if c.cell_type == "code" for o in c.outputs if o.get("output_type") == "error"]
    assert errors, f"{name}: the raising answer produced no error output"


def _body(message: str) -> str:
    """A self-check's diagnosis without its case label and repeat count (the grader judges more cases)."""
    return re.sub(r" \(the same in \d+ other cases?\)$", "", message.split(": ", 1)[1])


def _graded_outside(cell) -> str:
    """What the feedback shows of the grader's verdict on a test cell (its error lines after the notebook ran), or ""."""
    shown = nbgrader_plugins.ShortTracebacks().preprocess_cell(copy.deepcopy(cell), {}, 0)[0]  # generate_feedback's step
    said = [line for o in shown.outputs if o.get("output_type") == "error" for line in o.get("traceback", [])]
    return "\n".join(e.split("graded outside the notebook: ", 1)[1] for e in said if "graded outside the notebook: " in e)


def test_the_answer_table_covers_every_judged_exercise_and_row():
    """The submissions carry every row of tests/support/answer_table.py once, wrong rows in exactly one submission each."""
    for name in NAMES:
        source = make_assignments.assignment_notebook(CHAPTERS[NAMES.index(name)])
        submissions, table = table_submissions(source)
        numbers = {number for number, _ in table.values()}
        chapter = {n for n, e in variants.EXERCISES.items() if e.test_id.startswith(f"{name}-") and e.kind != "predict"}
        assert numbers == chapter, name
        for number in numbers:
            entry = variants.EXERCISES[number]
            want = answer_table.implement_rows(number) if entry.kind == "implement" else list(answer_table.typed_rows(number, None))
            got = [row for (student, gid), (n, row) in table.items() if n == number and (row != "right" or student == "solutions")]
            assert sorted(got) == sorted(want), (number, got)
            for student, nb in submissions.items():
                answer = answer_before(nb, next(t for t in autograded_tests(nb) if nbg(t)["grade_id"] == entry.test_id))
                if table[student, entry.test_id][1] == "right":
                    assert "### BEGIN SOLUTION" in answer.source  # the model answer, as the solutions hand it in
                else:
                    assert "### BEGIN SOLUTION" not in answer.source and answer.source.strip()


@pytest.mark.slow
@pytest.mark.parametrize("name", NAMES)
def test_every_row_of_the_answer_table_gets_the_self_checks_verdict_and_reason_from_a_real_autograde(course, name):
    """Issue 49's table, its fourth column: points 0 or full as the self-check decides, and its reasons in the feedback."""
    g = course[name]
    students = sorted({s for s, _ in g.table})
    assert len(students) >= 8 and "solutions" in students
    verdicts = {"right": 0, "wrong": 0}
    runs_here = 0
    for student in students:
        mine = self_checks(g.autograded[student])
        cells = {nbg(c).get("grade_id"): c for c in g.autograded[student].cells}
        for gid, (passed, messages) in mine.items():
            number, row = g.table[student, gid]
            score, max_score = g.scores[student][gid]
            where = f"{name} {student}: exercise {number}, row {row!r}"
            graded = f"self-check {passed} {messages}, autograde {score}/{max_score}"
            assert max_score > 0 and score == (max_score if passed else 0), f"{where}: {graded}"
            assert passed == (row in answer_table.RIGHT) or row in answer_table.EITHER, f"{where}: self-check {passed} {messages}"
            said = _graded_outside(cells[gid])
            if passed:
                assert said == "" and not [o for o in cells[gid].outputs if o.get("output_type") == "error"], f"{where}: {said}"
            else:
                assert messages and said, f"{where}: no reason given"
                for message in messages:
                    if message.startswith("A small case to work through by hand"):
                        continue  # the self-check's worked example (the grader never shows a case in full)
                    reason = _body(message) if variants.EXERCISES[number].kind == "implement" else message
                    assert reason in said, f"{where}: the self-check says {message!r}, the grader {said!r}"
                if (number, row) in answer_table.NOT_IN_GRADER_REASONS:  # issue 46: the self-check and the grader, word for word
                    assert messages[0].startswith(answer_table.NOT_IN_GRADER_REASONS[number, row]), f"{where}: {messages}"
                    assert messages[0] in said, f"{where}: the self-check says {messages[0]!r}, the grader {said!r}"
                    runs_here += 1
            verdicts["right" if passed else "wrong"] += 1
    assert verdicts["right"] and verdicts["wrong"] >= 7
    assert runs_here == sum(n.startswith(name[2:].lstrip("0") + ".") for n, _ in answer_table.NOT_IN_GRADER_REASONS), name


@pytest.mark.slow
@pytest.mark.parametrize("name", NAMES)
def test_the_validators_kernels_talk_over_ipc_sockets(course, name):
    """Issue 46: a kernel started over TCP may find its port taken by a parallel worker (ZMQError: Address already in use).

    The Validator's kernels where it ran (:data:`VALIDATED`), and the grader's kernels of every submission."""
    g = course[name]
    assert bool(g.kernels) == (name in VALIDATED), f"{name}: the Validator started {len(g.kernels)} kernels"
    students = {s for s in g.autograded}
    assert len(g.grading_kernels) >= len(students), f"{name}: {len(g.grading_kernels)} kernels for {len(students)} submissions"
    for kernel in g.kernels + g.grading_kernels:
        assert kernel["transport"] == "ipc" and kernel["socket_files"], kernel
        assert kernel["ip"].startswith(tempfile.gettempdir()), kernel  # a fresh folder of its own, not the shared runtime folder

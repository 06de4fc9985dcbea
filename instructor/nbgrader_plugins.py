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

* :class:`JudgeHandIns`, right after ``Execute``: judges each autograded
  exercise from what the student wrote, in the grader's own process, with the
  seed the grader wrote: the numbers typed in a by-hand answer cell, and for
  an implement exercise the answer cells' source run in a fresh sandboxed
  process without attnlib (:func:`run_answers`); a wrong answer becomes an
  error output, which nbgrader scores 0. The kernel's own hand-in is feedback only.

``nbgrader generate_feedback`` uses :class:`ClearHiddenTestsQuietly` and
:class:`ShortTracebacks` (a failed test shows its error, never the hidden test
lines). :class:`ReleaseFeedbackReportingSkips` (``nbgrader release_feedback``)
releases the feedback of every submission that came through the exchange and
names the ones placed by hand. :class:`LmsGradesExporter` (``nbgrader export
--exporter=book_plugins.LmsGradesExporter``) writes one row per roster student
and one column per assignment, after the configured late penalty
(:func:`late_penalty`), in the layout of a Canvas gradebook CSV, which Moodle's
CSV grade import reads as well.

``instructor/make_assignments.py`` writes ``nbgrader_config.py`` and a short
``book_plugins.py`` into the course folder, which make all of these importable there.

With the environment variable ``COURSE_PHASE_LOG`` set to a file, every grading process
appends one JSON line to it when it ends: the seconds it spent in each phase of
:data:`PHASES` (the grading scale benchmark, ``benchmarks/grading_scale.py``, reads them).
"""

from __future__ import annotations

import atexit
import contextlib
import copy
import csv
import fcntl
import glob
import json
import os
import re
import secrets
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import nbformat
from jupyter_client.manager import AsyncKernelManager
from nbclient.exceptions import CellTimeoutError, DeadKernelError
from nbconvert.preprocessors import ClearMetadataPreprocessor
from nbgrader import utils
from nbgrader.api import Gradebook, MissingEntry
from nbgrader.exchange.default import ExchangeReleaseFeedback
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
from traitlets import Bool, Dict, Instance, Integer, List, Unicode

from attnlib.exercises import from_source, grading
from attnlib.variants import ROUTES, route_key, student_seed

SEED_SUFFIX = "-seed"
#: The environment variable naming the file where each grading process appends its phase times (one JSON line).
PHASE_LOG_ENV = "COURSE_PHASE_LOG"
#: The phases timed: the sandbox's check, the kernel's start, the notebook's cells, the kernel's stop, the judge's
#: sandboxed runs of implement answers, and nbgrader's statements and commits on the gradebook (reads: SELECT).
PHASES = ("sandbox probe", "kernel start", "cells", "kernel stop", "judge runner", "gradebook reads", "gradebook writes")
_phase_seconds: dict[str, float] = {}
_phase_student: dict[str, str] = {}


def _check_phase(phase: str) -> None:
    if phase not in PHASES:
        raise ValueError(f"phase must be one of {', '.join(PHASES)}, not {phase!r}")


def add_phase_time(phase: str, seconds: float) -> None:
    """Add ``seconds`` to this process's time in ``phase`` (written out at exit when ``COURSE_PHASE_LOG`` is set).

    Raises
    ------
    ValueError
        ``phase`` is not one of :data:`PHASES`.
    """
    _check_phase(phase)
    _phase_seconds[phase] = _phase_seconds.get(phase, 0.0) + seconds


@contextlib.contextmanager
def timed_phase(phase: str):
    """Time the ``with`` block as ``phase`` (:func:`add_phase_time`), also when it raises.

    Raises
    ------
    ValueError
        ``phase`` is not one of :data:`PHASES`.
    """
    _check_phase(phase)
    began = time.perf_counter()
    try:
        yield
    finally:
        add_phase_time(phase, time.perf_counter() - began)


def write_phase_times(path: str | Path | None = None) -> dict | None:
    """Append this process's phase times to ``path`` (default: ``$COURSE_PHASE_LOG``) as one JSON line, under a lock.

    The line is ``{"pid", "student", "assignment", "phases": {phase: seconds}}``; nothing is written
    when no path is given and the variable is unset.

    Raises
    ------
    OSError
        The file cannot be written.
    """
    path = path or os.environ.get(PHASE_LOG_ENV)
    if not path:
        return None
    line = {"pid": os.getpid(), **_phase_student, "phases": {p: round(s, 6) for p, s in _phase_seconds.items()}}
    with open(path, "a") as log:
        fcntl.flock(log, fcntl.LOCK_EX)
        log.write(json.dumps(line) + "\n")
    return line


def _time_gradebook_statements() -> None:
    """Wrap SQLAlchemy's execute and commit (every dialect's default ones) so that their seconds count as gradebook time."""
    from sqlalchemy.engine.default import DefaultDialect

    def timed(method):
        def wrapper(self, cursor_or_connection, *args, **kwargs):
            statement = args[0] if args and isinstance(args[0], str) else ""
            kind = "gradebook reads" if statement.lstrip()[:6].upper() == "SELECT" else "gradebook writes"
            with timed_phase(kind):
                return method(self, cursor_or_connection, *args, **kwargs)

        return wrapper

    for name in ("do_execute", "do_executemany", "do_execute_no_params", "do_commit"):
        setattr(DefaultDialect, name, timed(getattr(DefaultDialect, name)))


if os.environ.get(PHASE_LOG_ENV):
    _time_gradebook_statements()
    atexit.register(write_phase_times)
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
    """After the notebook ran: judge each autograded exercise from what the student wrote, in the grader's process.

    A by-hand or measured exercise is judged from the numbers typed in its answer cell's source
    (``grading.judge_source``); an implement exercise by running the student's answer cells up to its own,
    and its function on the grader's cases, in a fresh process without attnlib, in the sandbox
    (``run_answers``; ``c.SandboxExecute.sandbox = False`` runs it without, with the same warning). That
    verdict is the one that counts: a failure becomes an error output of the test cell (0 points); a pass
    turns the kernel's own errors in that cell into a note, so the points do not hang on what the kernel
    said. The kernel's hand-in stays in the cell as the reader's feedback.
    """

    call_timeout = Integer(120, help="Seconds the run of one implement exercise's answer cells and calls may take.").tag(config=True)

    def preprocess(self, nb, resources):
        seed = graded_seed(nb)
        sandbox = SandboxExecute(config=self.config, parent=self.parent)
        hidden, limits = sandbox.hidden_folders(resources), sandbox.limits()
        if not sandbox.sandbox:
            self.log.warning("Grading WITHOUT the sandbox (c.SandboxExecute.sandbox = False): students' code runs as you")
        for cell in nb.cells:
            if not is_autograded_test(cell):
                continue
            gid = cell.metadata["nbgrader"]["grade_id"]
            entry = grading.exercise_of_test(gid)
            if entry is None:
                continue
            answer_id = from_source.answer_cell_id(gid)
            if entry.kind == "implement":
                cells = from_source.answer_sources(nb.cells, answer_id)
                if not cells:
                    failures = [f"there is no answer cell {answer_id} to grade"]
                else:
                    request, arrays = grading.runner_request(entry.number, seed, cells)
                    if sandbox.sandbox:
                        with timed_phase("sandbox probe"):
                            probe_sandbox(hidden, limits)
                    with timed_phase("judge runner"):
                        results = run_answers(request, arrays, hidden, limits, sandbox.sandbox, self.call_timeout)
                    failures = grading.judge_results(entry.number, seed, results, answer_id)
            else:
                answer = [c for c in nb.cells if c.cell_type == "code" and c.metadata.get("nbgrader", {}).get("grade_id") == answer_id]
                failures = grading.judge_source(entry.number, seed, answer[0].source if answer else "")
            if failures:
                text = "; ".join(failures)
                cell.outputs.append(
                    nbformat.v4.new_output("error", ename="NotRight", evalue=f"graded outside the notebook: {text}", traceback=[])
                )
                self.log.info("%s: %s", gid, text)
                continue
            kept = []
            for out in cell.get("outputs", []):
                if out.get("output_type") == "error":
                    said = f"{out.get('ename', 'Error')}: {out.get('evalue', '')}"[:2000]
                    note = f"The notebook's own check said: {said}\nGraded outside the notebook, from your answer cells: right.\n"
                    out = nbformat.v4.new_output("stream", name="stdout", text=note)
                kept.append(out)
            cell.outputs = kept
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


# --- the grading sandbox --------------------------------------------------------------------

#: The system folders a Python kernel needs, shown read-only (a symbolic link, as on merged-/usr systems, stays one).
_SYSTEM = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc", "/opt")
#: The unprivileged user ids the per-kernel users are drawn from when the grader runs as root (no account needed).
_UID_RANGE = (1 << 20, 1 << 30)
#: Bytes the sandbox's scratch folder may hold in all (a tmpfs of this size), unless ``limits["scratch"]`` says otherwise.
SCRATCH_BYTES = 512 << 20
_probed: dict[tuple, str] = {}


class SandboxUnavailable(RuntimeError):
    """The grading sandbox cannot start on this machine (the message says why and what to do)."""


def _inside(path: Path, folder: Path) -> bool:
    return path == folder or folder in path.parents


def sandbox_command(
    cmd: list[str],
    kernel_dir: Path,
    hidden: list[Path],
    limits: dict[str, int],
    uid: int | None = None,
    env: dict[str, str] | None = None,
    library: bool = True,
    extra: tuple[Path, ...] = (),
) -> list[str]:
    """The command that runs ``cmd`` in the grading sandbox (bubblewrap, ``prlimit``, and ``setpriv`` as root).

    The sandbox sees the system folders, the Python installation and every
    folder on the grader's ``sys.path`` read-only, and ``kernel_dir`` (its
    sockets, connection file and scratch folder ``kernel_dir/work``, its current
    and home folder) read-write; nothing else of the machine's files. The scratch folder is a fresh
    tmpfs of ``limits["scratch"]`` bytes in all (:data:`SCRATCH_BYTES` if not given), so writing past
    it fails inside the sandbox ("No space left on device"); the kernel's own folder keeps what the
    grader and the kernel exchange (sockets, connection file, the runner's request and results). Every
    folder of ``hidden`` (the course, the exchange, the gradebook's folder) is
    covered by an empty one even where it lies inside a shown folder. It has
    its own network (loopback only), process, IPC and host-name namespaces, no
    capabilities, ``no_new_privs``, and the resource limits ``limits``
    (``prlimit`` option name -> value, for example ``{"cpu": 600}``). As root,
    it runs as the user id ``uid``, which owns nothing outside ``kernel_dir``.

    Parameters
    ----------
    cmd : list of str
        The kernel's command (its connection file inside ``kernel_dir``).
    kernel_dir : Path
        The kernel's own folder, absolute.
    hidden : list of Path
        Absolute folders the code must never see.
    limits : dict of str to int
        ``prlimit`` resource name -> limit (``cpu``, ``as``, ``nproc``, ``fsize``, ``nofile``, ``core``), and
        ``scratch``: the bytes the scratch folder may hold in all.
    uid : int, optional
        The user id to run as (the grader must be root); ``None``: the grader's own, in a user namespace.
    env : dict of str to str, optional
        Extra environment variables; the sandbox starts from an empty environment.
    library : bool, optional
        False: the clone and every package folder (the virtual environment, site-packages) are not shown,
        only the base Python installation and ``extra`` (the grader's runner: numpy without attnlib).
    extra : tuple of Path, optional
        Further absolute folders shown read-only (after ``hidden`` and the package folders are covered).

    Returns
    -------
    list of str
        The command line.

    Raises
    ------
    ValueError
        If ``kernel_dir`` or a hidden folder is not absolute, or a limit is not a non-negative integer.
    SandboxUnavailable
        If ``bwrap``, ``prlimit`` or (as root) ``setpriv`` is not installed.
    """
    kernel_dir = Path(kernel_dir)
    if not kernel_dir.is_absolute() or not all(Path(h).is_absolute() for h in hidden):
        raise ValueError(f"sandbox_command: kernel_dir and hidden must be absolute paths, got {kernel_dir} and {hidden}")
    for name, value in limits.items():
        if not isinstance(value, int) or value < 0:
            raise ValueError(f"sandbox_command: limit {name} must be a non-negative integer, got {value!r}")
    tools = {"bwrap": "bubblewrap", "prlimit": "util-linux"} | ({"setpriv": "util-linux"} if uid is not None else {})
    found = {tool: shutil.which(tool) for tool in tools}
    missing = [f"{tool} (Debian/Ubuntu package {pkg})" for tool, pkg in tools.items() if not found[tool]]
    if missing:
        raise SandboxUnavailable(
            f"the grading sandbox needs {', '.join(missing)}: install it (for example `sudo apt-get install bubblewrap`), "
            "or grade without the sandbox by setting c.SandboxExecute.sandbox = False in nbgrader_config.py "
            "(students' code then runs as you and can read and change everything you can)"
        )
    hidden = [Path(os.path.realpath(h)) for h in hidden]
    scratch = limits.get("scratch", SCRATCH_BYTES)
    rlimits = {name: value for name, value in limits.items() if name != "scratch"}
    out = [found["prlimit"], *(f"--{name}={value}" for name, value in sorted(rlimits.items())), "--", found["bwrap"]]
    # no --new-session: the kernel is the leader of a session without a terminal already (jupyter_client starts it
    # so), and staying in its process group lets the grader interrupt it on a timeout
    out += ["--die-with-parent", "--unshare-ipc", "--unshare-pid", "--unshare-net", "--unshare-uts"]
    if uid is None:
        out += ["--unshare-user", "--cap-drop", "ALL"]
    shown: list[Path] = []
    for folder in _SYSTEM:
        if os.path.islink(folder):
            out += ["--symlink", os.readlink(folder), folder]
        elif os.path.isdir(folder):
            out += ["--ro-bind", folder, folder]
            shown.append(Path(folder))
    book = Path(__file__).resolve().parent.parent  # the clone: attnlib and the grader's code, read-only
    if library:
        wanted = {Path(sys.prefix), Path(sys.base_prefix), Path(os.path.realpath(sys.executable)).parent.parent, book}
        wanted |= {Path(os.path.realpath(p)) for p in sys.path if p and os.path.isdir(p)}
    else:  # the base Python only; its and every other package folder and the clone covered below
        wanted = {Path(sys.base_prefix), Path(os.path.realpath(base_python())).parent.parent}
        hidden = hidden + [Path(os.path.realpath(p)) for p in (*package_folders(), book, sys.prefix) if os.path.isdir(p)]
    for folder in sorted(wanted, key=lambda p: len(p.parts)):
        if folder == Path("/") or any(_inside(folder, s) for s in shown) or any(_inside(folder, h) for h in hidden):
            continue  # shown already, or inside the course (a grader started there has it on sys.path): never shown
        for parent in reversed(folder.parents[:-1]):
            out += ["--perms", "0755", "--dir", str(parent)]
        out += ["--ro-bind", str(folder), str(folder)]
        shown.append(folder)
    for h in sorted(set(hidden), key=lambda p: len(p.parts)):
        if any(_inside(h, s) for s in shown):
            out += ["--tmpfs", str(h)]
    for folder in extra:
        for parent in reversed(Path(folder).parents[:-1]):
            out += ["--perms", "0755", "--dir", str(parent)]
        out += ["--ro-bind", str(folder), str(folder)]
    for parent in reversed(kernel_dir.parents[:-1]):
        out += ["--perms", "0755", "--dir", str(parent)]
    work = kernel_dir / "work"
    out += ["--bind", str(kernel_dir), str(kernel_dir)]
    # the scratch folder: a tmpfs capped in all (RLIMIT_FSIZE caps each file only); sticky and writable by all, as
    # bwrap makes it before setpriv gives up root (as root) and the sandbox has one user
    out += ["--perms", "01777", "--size", str(scratch), "--tmpfs", str(work)]
    out += ["--proc", "/proc", "--dev", "/dev", "--chdir", str(work), "--clearenv"]
    base = {
        "PATH": f"{Path(sys.executable).parent}:/usr/local/bin:/usr/bin:/bin",
        "HOME": str(work),
        "TMPDIR": str(work),
        "MPLCONFIGDIR": str(work),
        "LANG": "C.UTF-8",
        "OPENBLAS_NUM_THREADS": "1",
        "OMP_NUM_THREADS": "1",
        "MKL_NUM_THREADS": "1",
        # the grader's pid means nothing in the sandbox's pid namespace (--die-with-parent stops it with its
        # parent); 1 tells ipykernel it has a parent, so it prints no "Ctrl-C will not work" note to the log
        "JPY_PARENT_PID": "1",
    }
    for name, value in {**base, **(env or {})}.items():
        out += ["--setenv", name, value]
    if uid is not None:
        out += [found["setpriv"], f"--reuid={uid}", f"--regid={uid}", "--clear-groups", "--inh-caps=-all", "--bounding-set=-all"]
        out += ["--no-new-privs", "--"]
    return out + list(cmd)


def make_kernel_dir(uid: int | None) -> Path:
    """A fresh private folder for one kernel (sockets, connection file, ``work/``), owned by ``uid`` if given.

    Raises
    ------
    OSError
        If the folder cannot be made or handed to ``uid``.
    """
    folder = Path(tempfile.mkdtemp(prefix="attn-kernel-"))
    (folder / "work").mkdir()
    if uid is not None:
        for path in (folder, folder / "work"):
            os.chown(path, uid, uid)
    return folder


def sandbox_uid() -> int | None:
    """A fresh unprivileged user id for one kernel when the grader is root, else ``None`` (the grader's own)."""
    return secrets.randbelow(_UID_RANGE[1] - _UID_RANGE[0]) + _UID_RANGE[0] if os.geteuid() == 0 else None


#: What a grader who is not root needs for the sandbox, said when bubblewrap cannot make its namespaces.
NAMESPACES_NEEDED = (
    "Grading as a user other than root, bubblewrap needs unprivileged user namespaces: the sysctl "
    "user.max_user_namespaces above 0 (`sudo sysctl -w user.max_user_namespaces=10000`), on older Debian kernels "
    "kernel.unprivileged_userns_clone=1, and on Ubuntu 23.10 or later an AppArmor profile that lets bwrap use them "
    "(or kernel.apparmor_restrict_unprivileged_userns=0). Or grade as root: the sandbox then runs each kernel as a "
    "fresh user id (setpriv) and needs no user namespace. "
)


def probe_sandbox(hidden: list[Path], limits: dict[str, int]) -> None:
    """Start Python with ipykernel and attnlib in the sandbox once, so that a broken sandbox is named before grading.

    Raises
    ------
    SandboxUnavailable
        If the sandbox's tools are missing or Python does not start in it (the message quotes its error).
    """
    key = (tuple(map(str, hidden)), tuple(sorted(limits.items())))
    if key in _probed:
        if _probed[key]:
            raise SandboxUnavailable(_probed[key])
        return
    uid = sandbox_uid()
    folder = make_kernel_dir(uid)
    try:
        cmd = sandbox_command([sys.executable, "-c", "import ipykernel, attnlib; print('sandbox ok')"], folder, hidden, limits, uid)
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
        ok = done.returncode == 0 and "sandbox ok" in done.stdout
        _probed[key] = "" if ok else (
            f"Python does not start in the grading sandbox (exit code {done.returncode}): {done.stderr.strip()[-800:]}\n"
            + (NAMESPACES_NEEDED if uid is None else "Check that bubblewrap can make its namespaces here. ")
            + "Or grade without the sandbox by setting c.SandboxExecute.sandbox = False in nbgrader_config.py "
            "(students' code then runs as you and can read and change everything you can)."
        )
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    if _probed[key]:
        raise SandboxUnavailable(_probed[key])


def base_python() -> str:
    """The base Python interpreter of the grader's environment (outside its virtual environment, if any)."""
    exe = Path(sys.base_prefix) / "bin" / f"python{sys.version_info.major}.{sys.version_info.minor}"
    return str(exe) if exe.exists() else sys.executable


def package_folders() -> list[str]:
    """Every folder packages are installed in for the grader's Python (site-packages of the environment and of its base)."""
    import site
    import sysconfig

    found = set(site.getsitepackages()) | {sysconfig.get_paths()[k] for k in ("purelib", "platlib")}
    for prefix in (sys.prefix, sys.base_prefix):
        found |= {sysconfig.get_paths(vars={"base": prefix, "platbase": prefix})[k] for k in ("purelib", "platlib")}
    return sorted(found)


def numpy_folders() -> list[Path]:
    """numpy's package folder, and the folder of the libraries its wheels bring (``numpy.libs``) if there is one."""
    import numpy

    package = Path(os.path.realpath(numpy.__file__)).parent
    return [package] + [f for f in (package.parent / "numpy.libs",) if f.is_dir()]


#: How ``run_answers`` starts the runner: numpy's folder first on ``sys.path``, then the runner as ``__main__``.
_START = "import sys; sys.path.insert(0, {lib!r}); import runpy; runpy.run_path({runner!r}, run_name='__main__')"
#: The largest results file the grader reads from its runner, in bytes.
RESULTS_BYTES = 20 << 20


def run_answers(request: dict, arrays: dict, hidden: list[Path], limits: dict[str, int], sandboxed: bool, timeout: float) -> dict | str:
    """Run the student's answer cells and function for ``request`` in a fresh process; its results, or why there are none.

    The process is the base Python with ``-I -S``: numpy is the only package on its path, attnlib is not
    importable. With ``sandboxed`` it runs in the grading sandbox without the clone or any package folder
    (``sandbox_command(..., library=False)``); inputs and results cross as files (JSON and ``.npz``, no pickle).

    Raises
    ------
    SandboxUnavailable
        If ``sandboxed`` and the sandbox's tools are missing.
    """
    from attnlib.exercises import runner

    uid = sandbox_uid() if sandboxed else None
    folder = make_kernel_dir(uid)
    work = folder / "runner"  # what the grader and the runner exchange; the student's code runs in folder/work, the scratch
    try:
        work.mkdir()
        lib = work / "lib"
        lib.mkdir()
        for target in numpy_folders():
            (lib / target.name).symlink_to(target)
        (work / "runner.py").write_text(Path(runner.__file__).read_text())
        (work / "request.json").write_text(json.dumps(request))
        import numpy as np

        np.savez(work / "inputs.npz", **arrays)
        if uid is not None:
            for path in work.rglob("*"):
                os.lchown(path, uid, uid)
            os.chown(work, uid, uid)
        cmd = [base_python(), "-I", "-S", "-c", _START.format(lib=str(lib), runner=str(work / "runner.py")), str(work)]
        if sandboxed:
            cpu = min(limits.get("cpu", 600), int(timeout) + 5)
            cmd = sandbox_command(cmd, folder, hidden, {**limits, "cpu": cpu}, uid, library=False, extra=tuple(numpy_folders()))
        with open(folder / "stderr.txt", "wb") as errors:  # outside work/: the student's code cannot write it
            proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=errors, start_new_session=True, cwd=folder / "work")
            try:
                proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, 9)
                proc.wait()
                where = (work / "progress.txt").read_text()[:80] if (work / "progress.txt").exists() else "the start"
                return f"your answer cells and function ran past the grader's time limit of {timeout:g} s (in {_where(where)})"
        results = work / runner.RESULTS
        if not results.exists() or results.stat().st_size > RESULTS_BYTES:
            where = (work / "progress.txt").read_text()[:80] if (work / "progress.txt").exists() else "the start"
            with open(folder / "stderr.txt", "rb") as errors:
                errors.seek(max(0, (folder / "stderr.txt").stat().st_size - 400))
                tail = errors.read().decode(errors="replace").strip().splitlines()[-1:]
            said = f": {tail[0][:200]}" if tail else ""
            return f"the grader's process stopped in {_where(where)} (exit code {proc.returncode}){said}"
        try:
            return json.loads(results.read_text())
        except ValueError:
            return "the grader could not read what its run of your answer cells wrote"
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def _where(progress: str) -> str:
    return "the calls of your function" if progress == "calls" else f"your answer cell {progress}"


class SandboxedKernelManager(AsyncKernelManager):
    """A kernel manager whose kernels talk over ipc sockets in a folder of their own, optionally in the sandbox.

    ipc sockets are files in a fresh folder per kernel, so kernels started at
    the same moment by parallel graders cannot take each other's ports (TCP
    ports are picked free, then bound by the kernel: a race).
    """

    sandboxed = Bool(True, help="Run the kernel in the grading sandbox (sandbox_command).").tag(config=True)
    hidden = List(Unicode(), help="Folders the kernel must not see.").tag(config=True)
    limits = Dict(help="prlimit resource -> limit for the kernel.").tag(config=True)
    kernel_dir = Instance(Path, allow_none=True)
    uid = Integer(None, allow_none=True)

    async def _async_pre_start_kernel(self, **kw):
        if self.kernel_dir is None:
            self.uid = sandbox_uid() if self.sandboxed else None
            self.kernel_dir = make_kernel_dir(self.uid)
            self.transport = "ipc"
            self.ip = str(self.kernel_dir / "kernel")
            self.connection_file = str(self.kernel_dir / "kernel.json")
        cmd, kw = await super()._async_pre_start_kernel(**kw)
        if self.uid is not None:
            os.chown(self.connection_file, self.uid, self.uid)
        if self.sandboxed:
            cmd = sandbox_command(cmd, self.kernel_dir, [Path(h) for h in self.hidden], dict(self.limits), self.uid)
        return cmd, kw

    async def _async_cleanup_resources(self, restart: bool = False) -> None:
        await super()._async_cleanup_resources(restart=restart)
        if not restart and self.kernel_dir is not None:
            shutil.rmtree(self.kernel_dir, ignore_errors=True)
            self.kernel_dir = None


class SandboxExecute(Execute):
    """nbgrader's ``Execute`` in the grading sandbox, over ipc sockets, grading every cell it can.

    A cell that stops the kernel (``os._exit``, a crash, a resource limit) or
    runs past the timeout (even one that swallows the interrupt) gets an error
    output naming what happened; the kernel is started afresh, the cells
    before it run again and the cells after it run as usual. So the cell costs
    the items it touches, and the submission is graded (and not retried by
    the next ``nbgrader autograde``). After ``max_restarts`` such cells, the
    cells not yet run get an error output saying so.
    """

    sandbox = Bool(
        True,
        help="Run students' code in the grading sandbox (bubblewrap). False runs it as the grader: only for trusted notebooks.",
    ).tag(config=True)
    hide = List(Unicode(), help="Further folders that students' code must not see (the course and exchange always are hidden).").tag(
        config=True
    )
    cpu_seconds = Integer(600, help="CPU seconds a kernel may use (then it is stopped).").tag(config=True)
    memory_bytes = Integer(4 << 30, help="Address space of a kernel in bytes.").tag(config=True)
    processes = Integer(256, help="Processes and threads of a kernel's user.").tag(config=True)
    file_bytes = Integer(256 << 20, help="Largest file a kernel may write, in bytes.").tag(config=True)
    scratch_bytes = Integer(SCRATCH_BYTES, help="Bytes a kernel's scratch folder may hold in all (a tmpfs).").tag(config=True)
    max_restarts = Integer(2, help="Cells that may stop the kernel before the rest of the notebook is given up.").tag(config=True)

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.kernel_manager_class = SandboxedKernelManager

    def hidden_folders(self, resources) -> list[Path]:
        """The course, the exchange, the gradebook's folder, the hidden tests and ``hide``: never visible to students' code."""
        cfg = self.config
        folders = [Path(h) for h in self.hide]
        root = cfg.CourseDirectory.get("root") or os.getcwd()
        folders.append(Path(root))
        folders.append(Path(cfg.Exchange.get("root") or "/srv/nbgrader/exchange"))
        db_url = (resources or {}).get("nbgrader", {}).get("db_url", "") or cfg.CourseDirectory.get("db_url", "")
        if db_url.startswith("sqlite:///"):
            folders.append(Path(db_url[len("sqlite:///") :]).parent)
        folders.append(Path(os.environ.get("JUPYTER_RUNTIME_DIR") or Path.home() / ".local/share/jupyter/runtime"))
        folders.append(Path(__file__).resolve().parent / "hidden_tests")  # in the clone, which the kernel sees: not these
        return list(dict.fromkeys(Path(os.path.realpath(f)).absolute() for f in folders))

    def limits(self) -> dict[str, int]:
        return {
            "cpu": self.cpu_seconds,
            "as": self.memory_bytes,
            "nproc": self.processes,
            "fsize": self.file_bytes,
            "scratch": self.scratch_bytes,
            "nofile": 256,
            "core": 0,
        }

    def create_kernel_manager(self):
        km = super().create_kernel_manager()
        km.sandboxed = self.sandbox
        km.hidden = [str(h) for h in self._hidden]
        km.limits = self.limits()
        return km

    def _time_limit(self, cell):
        """The seconds ``cell`` may run, as nbclient decides them: ``timeout_func(cell)`` if it is set, else ``timeout``."""
        return self.timeout_func(cell) if self.timeout_func is not None else self.timeout

    def _stopped(self, cell, reason: str) -> None:
        cell.outputs.append(nbformat.v4.new_output("error", ename="KernelStopped", evalue=reason, traceback=[f"KernelStopped: {reason}"]))

    def preprocess(self, nb, resources=None, km=None):
        from nbclient import NotebookClient

        self._hidden = self.hidden_folders(resources)
        about = (resources or {}).get("nbgrader", {})
        _phase_student.update({k: str(about[k]) for k in ("student", "assignment") if k in about})
        if self.sandbox:
            with timed_phase("sandbox probe"):
                probe_sandbox(self._hidden, self.limits())
        else:
            self.log.warning("Grading WITHOUT the sandbox (c.SandboxExecute.sandbox = False): students' code runs as you")
        NotebookClient.__init__(self, nb, km)
        self.reset_execution_trackers()
        self._check_assign_resources(resources)
        skipped: set[int] = set()
        timeout_name = (self.error_on_timeout or {}).get("ename", "CellTimeoutError")
        who = "/".join(str(resources.get("nbgrader", {}).get(k, "?")) for k in ("student", "assignment")) if resources else "?"
        while True:
            stopped = None
            began = time.perf_counter()
            with self.setup_kernel():
                info = self.wait_for_reply(self.kc.kernel_info())
                self.nb.metadata["language_info"] = info["content"]["language_info"]
                add_phase_time("kernel start", time.perf_counter() - began)
                began = time.perf_counter()
                for index, cell in enumerate(self.nb.cells):
                    if index in skipped:
                        continue
                    try:
                        self.preprocess_cell(cell, resources, index)
                    except DeadKernelError:
                        stopped = (index, "the kernel stopped (an exit, a crash or a resource limit) while running this cell")
                        break
                    except CellTimeoutError:  # the interrupt did not end the cell, and its output never settled
                        stopped = (index, f"this cell ran past the time limit of {self._time_limit(cell)} s")
                        break
                    except Exception as exc:  # noqa: BLE001 (nbclient's timeouts of the output channel, a kernel gone mute)
                        stopped = (index, f"the kernel stopped answering while running this cell ({type(exc).__name__})")
                        break
                    if any(o.get("output_type") == "error" and o.get("ename") == timeout_name for o in cell.get("outputs", [])):
                        stopped = (index, f"this cell ran past the time limit of {self._time_limit(cell)} s")
                        break
                add_phase_time("cells", time.perf_counter() - began)
                began = time.perf_counter()
            add_phase_time("kernel stop", time.perf_counter() - began)
            if stopped is None:
                break
            index, reason = stopped
            cell = self.nb.cells[index]
            name = cell_name(self.nb, index)
            self._stopped(cell, f"{reason}; the other cells were graded without it")
            self.log.warning("%s: %s: %s; graded the other cells without it", who, name, reason)
            skipped.add(index)
            if len(skipped) > self.max_restarts:
                for later in self.nb.cells[index + 1 :]:
                    if later.cell_type == "code":
                        later.outputs = []
                        self._stopped(later, f"not run: {len(skipped)} cells stopped the kernel")
                self.log.warning("%s: %d cells stopped the kernel; the cells after %s were not run", who, len(skipped), name)
                break
        self.set_widgets_metadata()
        return self.nb, self.resources


UNREADABLE_SUFFIX = ".unreadable"


def unreadable_as_unanswered(notebooks=(), **_) -> list[Path]:
    """``c.Autograde.pre_convert_hook``: a submitted notebook that cannot be read is graded as handed out, unanswered.

    nbgrader stops on a file that is not a notebook (a truncated download, say)
    and tries it again on every run. This keeps the file as
    ``<name>.ipynb.unreadable`` beside it and puts the released version in its
    place, with a first cell saying so: every item scores 0, the submission is
    graded once, and the feedback and the LMS export name it. Returns the files
    replaced.

    Raises
    ------
    FileNotFoundError
        If the released version (``release/<assignment>/<name>.ipynb``) is missing.
    """
    replaced = []
    for name in notebooks:
        path = Path(name)
        try:
            nbformat.read(path, as_version=4)  # what nbgrader reads (schema problems are only warnings there)
            continue
        except Exception as exc:  # noqa: BLE001 (any reason the file is not a notebook)
            problem = f"{type(exc).__name__}: {str(exc)[:300]}"
        kept = path.with_name(path.name + UNREADABLE_SUFFIX)
        if not kept.exists():
            path.replace(kept)
        assignment, root = path.parent.name, path.parents[3]
        nb = nbformat.read(root / "release" / assignment / path.name, as_version=4)
        note = (
            f"**The submitted file {path.name} could not be read** ({problem}); it was graded as handed out, "
            f"unanswered, and is kept as {kept.name}."
        )
        nb.cells.insert(0, nbformat.v4.new_markdown_cell(note))
        nbformat.write(nb, path)
        print(f"[WARNING] {path}: not a readable notebook ({problem}); graded as unanswered, kept as {kept.name}", file=sys.stderr)
        replaced.append(path)
    return replaced


def cell_name(nb, index: int) -> str:
    """A cell's grade id, or, for a cell a student added, where it stands (``the cell after ch09-ex1-test``, ``cell 2 after ...``)."""
    ids = [c.metadata.get("nbgrader", {}).get("grade_id") for c in nb.cells[: index + 1]]
    if ids[index]:
        return ids[index]
    named = [k for k, gid in enumerate(ids) if gid]
    if not named:
        return f"cell {index + 1}"
    offset = index - named[-1]
    return f"{'the cell' if offset == 1 else f'cell {offset}'} after {ids[named[-1]]}"


def stopped_cells(nb) -> list[str]:
    """The cells of a graded notebook that stopped the kernel or ran past the time limit (``SandboxExecute``)."""
    return [
        cell_name(nb, k)
        for k, cell in enumerate(nb.cells)
        if any(o.get("output_type") == "error" and o.get("ename") == "KernelStopped" for o in cell.get("outputs", []))
        and "not run:" not in "".join(o.get("evalue", "") for o in cell.get("outputs", []))
    ]


class LimitOutputCharacters(_BookPreprocessor):
    """Cap the characters a cell's outputs keep (nbgrader's LimitOutput caps lines, and a line may be 200 MB).

    Outputs past the budget are shortened or dropped, with a note; every error
    output, the first ``stderr`` stream and the first result are kept
    (shortened), so the points nbgrader reads from them do not change. These
    get the budget first, the last first, so the grader's verdict (the error
    output ``JudgeHandIns`` appends last) is kept whole however long the
    kernel's own outputs (a hand-in, a traceback) were.
    """

    max_characters = Integer(200_000, help="Characters of output kept per cell (text, data and tracebacks together).").tag(config=True)

    def _cut(self, text: str, budget: int) -> str:
        return text if len(text) <= budget else text[: max(budget, 0)]

    def preprocess_cell(self, cell, resources, index):
        if cell.cell_type != "code":
            return cell, resources
        outputs = list(cell.get("outputs", []))
        must, seen_stderr, seen_result = [], False, False
        for out in outputs:
            kind = out.get("output_type")
            keep = kind == "error" or (kind == "stream" and out.get("name") == "stderr" and not seen_stderr)
            must.append(keep or (kind == "execute_result" and not seen_result))
            seen_stderr |= kind == "stream" and out.get("name") == "stderr"
            seen_result |= kind == "execute_result"
        # the outputs that must stay get the budget first, the last first: the grader's verdict, which JudgeHandIns
        # appends after the kernel's outputs, is never cut for a long hand-in or a long error of the kernel's
        order = [k for k in reversed(range(len(outputs))) if must[k]] + [k for k in range(len(outputs)) if not must[k]]
        budget, dropped, kept = self.max_characters, 0, set()
        for k in order:
            out, size = outputs[k], _output_size(outputs[k])
            if size <= budget:
                budget -= size
                kept.add(k)
                continue
            if not must[k] and budget <= 0:
                dropped += size
                continue
            share = max(budget, 200 if must[k] else 0)
            dropped += size - _shorten(out, share)
            budget -= share
            kept.add(k)
        if dropped:
            cell.outputs = [out for k, out in enumerate(outputs) if k in kept]
            cell.outputs.append(
                nbformat.v4.new_output(
                    "stream", name="stdout", text=f"\n[output cut: {dropped} characters beyond the limit of {self.max_characters}]\n"
                )
            )
            self.log.warning("Cut %d characters of output from cell %s", dropped, cell.metadata.get("nbgrader", {}).get("grade_id", index))
        return cell, resources


def _output_size(out) -> int:
    size = len(out.get("text", "")) + len(out.get("evalue", "")) + sum(len(t) for t in out.get("traceback", []))
    return size + sum(len(v) if isinstance(v, str) else len(json.dumps(v)) for v in out.get("data", {}).values())


def _shorten(out, budget: int) -> int:
    """Shorten one output in place to about ``budget`` characters; returns its new size."""
    if "text" in out:
        out["text"] = out["text"][:budget]
    if "evalue" in out:  # half for the message, half for the traceback's last line (the error itself)
        out["evalue"] = out["evalue"][: budget // 2]
        out["traceback"] = [t[: budget // 2] for t in out.get("traceback", [])[-1:]]
    if "data" in out:
        data = out["data"]
        text = data.get("text/plain", "")
        out["data"] = {"text/plain": (text if isinstance(text, str) else str(text))[:budget]}
    return _output_size(out)


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
    """``c.Autograde.autograde_preprocessors``: nbgrader's, the notebook run in the sandbox, the outside judge right after it."""
    return [
        SandboxExecute,
        JudgeHandIns,
        IgnorePattern,
        ClearMetadataPreprocessor,
        LimitOutputCharacters,
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

    Points are the score after the late penalty as configured
    (``c.LateSubmissionPlugin.penalty_method``, or ``c.AssignLatePenalties.plugin_class``),
    worked out here from the score as it stands now: nbgrader works a penalty
    out when it autogrades and keeps it, so points given by hand afterwards
    would escape it (a late submission under ``"zero"`` would export its
    hand-graded points); see :func:`late_penalty`. Columns are in the order of
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
        ungraded, stopped = [], []
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
                    stopped.extend(f"{sid} {a.name} ({name})" for name in self._stopped_cells(sid, a.name))
                    if sub.needs_manual_grade:
                        ungraded.append(f"{sid} {a.name}")
                        row.append(self.ungraded_marker)
                        continue
                    row.append(_points(max(0.0, sub.score - late_penalty(sub, self.config))))
                writer.writerow(row)
        if ungraded:
            self.log.warning(
                "Hand-graded parts not graded yet (exported as %r; grade them in the Formgrader and export again): %s",
                self.ungraded_marker,
                ", ".join(ungraded),
            )
        if stopped:
            self.log.warning(
                "Cells that stopped the grader's kernel or ran past its time limit, and unreadable files "
                "(each costs the items it touches): %s",
                ", ".join(stopped),
            )
        self.log.info("Wrote %d students x %d assignments to %s", len(wanted), len(assignments), dest)

    def _stopped_cells(self, student: str, assignment: str) -> list[str]:
        coursedir = getattr(self.parent, "coursedir", None)
        if coursedir is None:
            return []
        folder = Path(coursedir.format_path(coursedir.autograded_directory, student, assignment))
        found = [name for path in sorted(folder.glob("*.ipynb")) for name in stopped_cells(nbformat.read(path, as_version=4))]
        submitted = Path(coursedir.format_path(coursedir.submitted_directory, student, assignment))
        unreadable = sorted(submitted.glob(f"*.ipynb{UNREADABLE_SUFFIX}"))
        return found + [f"{p.name[: -len(UNREADABLE_SUFFIX)]} could not be read, graded as unanswered" for p in unreadable]


#: The files ``nbgrader submit`` leaves beside a submission, which ``release_feedback`` needs to file feedback under.
EXCHANGE_RECEIPTS = ("timestamp.txt", "submission_secret.txt")


class ReleaseFeedbackReportingSkips(ExchangeReleaseFeedback):
    """``nbgrader release_feedback`` that releases what it can and names what it cannot.

    nbgrader files a student's feedback in the exchange under a hash of the
    ``submission_secret.txt`` that ``nbgrader submit`` wrote beside their
    submission; a submission placed by hand (``course.py place``, or copied
    into ``submitted/``) has none, and nbgrader's own release stops at the
    first such feedback folder with a ``FileNotFoundError`` (exit code 1),
    having released the ones it reached before it, in the file system's order.
    This one leaves those students out, releases everyone else's feedback, and
    names each left-out file with what to do instead. Chosen in
    ``nbgrader_config.py`` with ``c.ExchangeFactory.release_feedback``.
    """

    def copy_files(self) -> None:
        """Release every feedback file whose submission came through the exchange; log the others.

        Raises
        ------
        OSError
            Copying a releasable feedback file into the exchange failed (as in nbgrader's own release).
        """
        excluded = {s for s in (self.coursedir.student_id_exclude or "").split(",") if s}
        skipped = {}
        coursedir = self.coursedir
        folder = coursedir.format_path(coursedir.feedback_directory, "(?P<student_id>.*)", coursedir.assignment_id, escape=True)
        for html_file in sorted(Path(p) for p in glob.glob(os.path.join(self.src_path, "*.html"))):
            found = re.match(folder + re.escape(os.path.sep), str(html_file))
            missing = [name for name in EXCHANGE_RECEIPTS if not (html_file.parent / name).exists()]
            student = found["student_id"] if found else html_file.parent.parent.name
            if missing and student not in excluded:
                skipped.setdefault(student, []).append(f"{html_file} (no {' or '.join(missing)})")
        previous = self.coursedir.student_id_exclude
        self.coursedir.student_id_exclude = ",".join(sorted(excluded | set(skipped)))
        try:
            super().copy_files()
        finally:
            self.coursedir.student_id_exclude = previous
        if skipped:
            self.log.warning(
                "Not released, because these submissions did not come through the exchange (placed by hand), so "
                "the exchange has no place for their feedback; hand each file to its student yourself: %s",
                "; ".join(line for student in sorted(skipped) for line in skipped[student]),
            )


def late_penalty(submission, config=None) -> float:
    """The late penalty of a submitted assignment, from its scores as they stand and the configured penalty.

    nbgrader's ``AssignLatePenalties`` asks the late-submission plugin for a
    penalty when it autogrades, from the score at that moment, and stores it;
    points a grader gives by hand later (written answers) are not in that
    score, so ``score - stored penalty`` gives a late submission under
    ``penalty_method = "zero"`` exactly its hand-graded points. This asks the
    same plugin, with the same rule per notebook (the penalty kept between 0
    and the notebook's score), for the scores of now.

    Parameters
    ----------
    submission : nbgrader.api.SubmittedAssignment
        A submission from an open gradebook.
    config : traitlets.config.Config, optional
        The course's configuration (``c.AssignLatePenalties.plugin_class``,
        ``c.LateSubmissionPlugin.penalty_method``); nbgrader's defaults when ``None``.

    Returns
    -------
    float
        The points to take off (0 for a submission that is not late).

    Raises
    ------
    TypeError
        ``submission`` is not a submitted assignment of nbgrader's gradebook.
    """
    if not hasattr(submission, "total_seconds_late") or not hasattr(submission, "notebooks"):
        raise TypeError(f"submission must be an nbgrader SubmittedAssignment, not {type(submission).__name__}")
    late = submission.total_seconds_late
    if not late or late <= 0:
        return 0.0
    settings = {} if config is None else {"config": config}
    plugin = AssignLatePenalties(**settings).plugin_class(**settings)
    total = 0.0
    for notebook in submission.notebooks:
        penalty = plugin.late_submission_penalty(submission.student.id, notebook.score, late)
        if penalty is not None:
            total += min(max(float(penalty), 0.0), float(notebook.score))
    return total


def _points(x: float) -> str:
    return f"{float(x):g}"

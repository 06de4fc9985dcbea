"""The gradebook on a real PostgreSQL server, and ``course.py autograde --workers``: parallel, idempotent, safe to kill.

One chapter (6), a roster of three (two honest students and one who hands in the student version
unanswered), one course graded into sqlite with one worker and one into a throwaway PostgreSQL server
(``support.postgres``) with two workers, the second run by the blocks of instructors.md's section "Many
students". The first PostgreSQL run loses a worker to SIGKILL in the middle of a submission.
"""

from __future__ import annotations

import copy
import importlib.util
import os
import signal
import subprocess
import time
from pathlib import Path

import nbformat
import pytest
from support.grading import model_answer, nbg, source_notebook
from support.paths import BIN, INSTRUCTOR
from support.postgres import throwaway_server
from test_per_student import RUN_ELSEWHERE, Page

from attnlib import variants

A = "ch06"
ROSTER = ["s001", "s002", "s003"]
HONEST = ["s001", "s002"]  # s003 hands in the student version as released
SECRET = "a fixed secret for the gradebook server tests"
COURSE_TOOL = [str(BIN / "python"), str(INSTRUCTOR / "course.py")]


def tool(course: Path, *args: str, env: dict | None = None, check: bool = True) -> subprocess.CompletedProcess:
    done = subprocess.run([*COURSE_TOOL, "--course", str(course), *args], capture_output=True, text=True, env=env, timeout=600)
    assert not check or done.returncode == 0, f"course.py {' '.join(args)}:\n{done.stdout}\n{done.stderr}"
    return done


def make_course(course: Path, env: dict) -> None:
    """Chapter 6 released as files to the roster, and each student's submission in ``submitted/``."""
    subprocess.run([str(BIN / "python"), str(INSTRUCTOR / "make_assignments.py"), str(course), "--chapters", "6"], check=True,
                   capture_output=True, env=env)
    (course / "course_secret.txt").write_text(SECRET + "\n")
    (course / "roster.csv").write_text("id\n" + "\n".join(ROSTER) + "\n")
    for command in (["db", "student", "import", "roster.csv"], ["generate_assignment", A]):
        done = subprocess.run([str(BIN / "nbgrader"), *command], cwd=course, env=env, capture_output=True, text=True)
        assert done.returncode == 0, f"nbgrader {' '.join(command)}:\n{done.stdout}\n{done.stderr}"
    key = variants.route_key(SECRET, A, "files")
    tool(course, "release", A, "--roster", str(course / "roster.csv"), env=env)
    release, source = nbformat.read(course / "release" / A / f"{A}.ipynb", as_version=4), source_notebook(A)
    by_id = {nbg(c).get("grade_id"): c for c in source.cells}
    for student in ROSTER:
        nb = copy.deepcopy(release)
        if student in HONEST:
            for cell in nb.cells:
                if cell.cell_type == "code" and nbg(cell).get("solution"):
                    cell.source = model_answer(by_id[nbg(cell)["grade_id"]], variants.student_seed(student, A, key))
        folder = course / "submitted" / student / A
        folder.mkdir(parents=True)
        nbformat.write(nb, folder / f"{A}.ipynb")
        (folder / "timestamp.txt").write_text("2027-01-10 12:00:00.000000 UTC")


def grades(url: str) -> dict[str, dict[str, float]]:
    from nbgrader.api import Gradebook

    with Gradebook(url, course_id="deriving-attention") as gb:
        subs = gb.find_assignment(A).submissions
        return {s.student.id: {g.name: g.auto_score for nb in s.notebooks for g in nb.grades} for s in subs}


def course_tool():
    """``instructor/course.py`` as a module (it imports the book's plugins by name, as support.grading loads them)."""
    spec = importlib.util.spec_from_file_location("course_tool_gradebook", INSTRUCTOR / "course.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def events(course: Path) -> list[str]:
    """The students of every grading ``course.py autograde`` finished in ``course``, in order."""
    return [e["student"] for e in course_tool().autograde_events(course, A)]


def children(pid: int) -> list[int]:
    """The child processes of ``pid`` (of every thread of it)."""
    out = []
    for task in Path(f"/proc/{pid}/task").glob("*"):
        try:
            out += [int(c) for c in (task / "children").read_text().split()]
        except OSError:
            continue
    return out


def kill_a_worker_mid_submission(course: Path, env: dict) -> tuple[str, subprocess.CompletedProcess]:
    """Start ``course.py autograde --workers 2``; SIGKILL the first worker whose kernel has started; let the run end."""
    run = subprocess.Popen([*COURSE_TOOL, "--course", str(course), "autograde", A, "--workers", "2"], env=env,
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    victim, deadline = None, time.monotonic() + 300
    while victim is None and time.monotonic() < deadline and run.poll() is None:
        for worker in children(run.pid):
            if children(worker):  # its kernel is running: in the middle of a submission
                cmdline = Path(f"/proc/{worker}/cmdline").read_bytes().split(b"\0")
                victim = cmdline[cmdline.index(b"--student") + 1].decode()
                os.kill(worker, signal.SIGKILL)
                break
        time.sleep(0.02)
    out, err = run.communicate(timeout=600)
    assert victim is not None, f"no worker was caught mid-submission:\n{out}\n{err}"
    return victim, subprocess.CompletedProcess(run.args, run.returncode, out, err)


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    began = time.perf_counter()
    home = tmp_path_factory.mktemp("gradebook-home")
    env = {**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}"}
    env.pop("COURSE_GRADEBOOK_URL", None)
    out = {"seconds": {}}
    lite = home / "sqlite-course"
    make_course(lite, env)
    t = time.perf_counter()
    out["sqlite_run"] = tool(lite, "autograde", A, env=env)
    out["seconds"]["sqlite, 1 worker"] = time.perf_counter() - t
    out["sqlite"] = grades(f"sqlite:///{lite / 'gradebook.db'}")
    # handed in again: s003 with s001's answers, s002 the same notebook at a later time; graded two at a time into sqlite
    copied = nbformat.read(lite / "submitted" / "s001" / A / f"{A}.ipynb", as_version=4)
    nbformat.write(copied, lite / "submitted" / "s003" / A / f"{A}.ipynb")
    (lite / "submitted" / "s002" / A / "timestamp.txt").write_text("2027-01-11 12:00:00.000000 UTC")
    t = time.perf_counter()
    out["changed_run"] = tool(lite, "autograde", A, "--workers", "2", env=env).stdout
    out["seconds"]["sqlite, 2 workers, 2 changed submissions"] = time.perf_counter() - t
    out["changed_events"] = events(lite)
    out["changed"] = grades(f"sqlite:///{lite / 'gradebook.db'}")
    with throwaway_server() as url:
        page = Page(home)
        page.course = home / "attention-course"
        pg_env = {**env, "COURSE_GRADEBOOK_URL": url}
        make_course(page.course, pg_env)
        folder = url.split("host=")[1]
        page.env.update(PGUSER="grader", PGDATABASE="gradebook", PGHOST=folder)
        out["summary"] = page.run("instructors-gradebook-server")
        t = time.perf_counter()
        out["victim"], out["killed_run"] = kill_a_worker_mid_submission(page.course, pg_env)
        out["events_after_kill"] = events(page.course)
        page.env["COURSE_GRADEBOOK_URL"] = url  # exported by the previous block in an instructor's shell
        out["second_run"] = page.run("instructors-autograde-parallel")
        out["seconds"]["PostgreSQL, 2 workers, killed and run again"] = time.perf_counter() - t
        out["postgres"] = grades(url)
        out["events"] = events(page.course)
        out["third_run"] = tool(page.course, "--db-url", url, "autograde", A, "--workers", "2", env=env).stdout
        out["ran"] = page.ran
    out["seconds"]["whole fixture"] = time.perf_counter() - began
    print(f"\ngradebook server tests: {out['seconds']} (load average {os.getloadavg()})")
    return out


@pytest.mark.slow
def test_two_workers_into_postgresql_give_the_grades_one_worker_gives_into_sqlite(graded):
    assert set(graded["sqlite"]) == set(ROSTER)
    assert graded["postgres"] == graded["sqlite"]
    full = {s: sum(v for v in graded["sqlite"][s].values() if v) for s in ROSTER}
    assert full["s001"] > full["s003"] and full["s002"] > full["s003"], full  # the grades say something


@pytest.mark.slow
def test_the_page_names_the_postgresql_gradebook(graded):
    assert "(PostgreSQL): 3 student(s), 1 assignment(s), 0 submission(s)" in graded["summary"], graded["summary"]


@pytest.mark.slow
def test_a_killed_worker_loses_nothing_and_the_next_run_grades_exactly_its_submission(graded):
    killed = graded["killed_run"]
    assert killed.returncode == 1, killed.stdout + killed.stderr
    assert f"{graded['victim']} failed (exit code -9)" in killed.stderr
    assert sorted(graded["events_after_kill"]) == sorted(s for s in ROSTER if s != graded["victim"])
    assert f"{A}: 1 graded, 2 unchanged since graded, 0 failed" in graded["second_run"], graded["second_run"]
    assert sorted(graded["events"]) == ROSTER  # every submission graded exactly once


@pytest.mark.slow
def test_a_third_run_grades_nothing(graded):
    assert f"{A}: 0 graded, 3 unchanged since graded, 0 failed" in graded["third_run"]


@pytest.mark.slow
def test_changed_submissions_are_graded_again_two_at_a_time_into_sqlite(graded):
    assert f"{A}: 2 graded, 1 unchanged since graded, 0 failed" in graded["changed_run"], graded["changed_run"]
    assert sorted(graded["changed_events"]) == sorted([*ROSTER, "s002", "s003"])
    assert graded["changed"]["s002"] == graded["sqlite"]["s002"]
    assert graded["changed"]["s003"] != graded["sqlite"]["s003"]
    assert graded["changed"]["s001"] == graded["sqlite"]["s001"]


@pytest.mark.slow
def test_the_pages_blocks_for_many_students_run_here(graded):
    assert graded["ran"] == {name for name, why in RUN_ELSEWHERE.items() if why.startswith("test_gradebook_server.py")}


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["autograde", A, "--workers", "0"], "--workers must be a whole number of at least 1, not 0"),
        (["autograde", A, "--workers", "two"], "--workers must be a whole number of at least 1, not 'two'"),
        (["autograde", A, "--shard", "4/4"], "--shard must be I/N, two whole numbers with 0 <= I < N (for example 0/4), not '4/4'"),
        (["--db-url", "mysql://x@y/z", "gradebook"], "--db-url 'mysql://x@y/z' names the driver 'mysql'"),
        (["--db-url", "not a url", "gradebook"], "--db-url 'not a url' is not a database URL"),
        (["--db-url", "postgresql+psycopg://x@/nowhere?host=/nonexistent", "gradebook"], "cannot be opened: "),
    ],
)
def test_bad_workers_and_db_urls_get_a_clear_error_naming_the_argument(tmp_path, args, message):
    (tmp_path / "nbgrader_config.py").write_text('c = get_config()  # noqa: F821\nc.CourseDirectory.course_id = "x"\n')
    done = tool(tmp_path, *args, check=False)
    assert done.returncode == 2, done.stdout + done.stderr
    assert message in done.stderr, done.stderr

"""How autograding scales: seconds per submission per core, the speed-up of a second worker, where the time goes.

Run from the repository root (needs the dev environment, bubblewrap for the grading sandbox, and
Debian's PostgreSQL server programs; about ten minutes on a 2-core machine with the defaults):

    nice .venv/bin/python benchmarks/grading_scale.py                       # chapter 6, 10 submissions
    nice .venv/bin/python benchmarks/grading_scale.py --submissions 12 --workers 1 2 4 --cost-chapters 1 9 14
    .venv/bin/python benchmarks/grading_scale.py --dry-run                  # the plan and the model, nothing graded

In one run on one machine, with the load average before and after:

* **The submissions.** A course of ``--submissions`` students is made for ``--chapter`` with the
  instructor tools (``make_assignments.py``, ``nbgrader generate_assignment``, ``course.py release
  --roster``). Every other student hands in honest answers: the source notebook's model solutions and,
  for the by-hand and measured exercises, attnlib's answers for that student's own seed
  (``attnlib.variants``); the others hand in wrong ones: every typed number off by one and every
  implemented exercise function doubled plus one (the answer table's ``doubled`` row).
* **The grading.** The real ``course.py autograde CHAPTER --workers W`` (each submission one ``nbgrader
  autograde`` process, students' code in the grading sandbox), for each ``W`` of ``--workers``, into
  sqlite and into a throwaway PostgreSQL server (``tools/throwaway_postgres.py``), each run from a fresh
  copy of the same gradebook. Each grading process writes its phase times
  (``COURSE_PHASE_LOG``, ``instructor/nbgrader_plugins.py``): the sandbox's check, the kernel's start, the
  cells, the kernel's stop, the judge's sandboxed runner, nbgrader's gradebook reads and writes (every SQL
  statement and commit, lock waits included); "other" is the rest of the process's wall time (Python's
  start, imports, nbgrader's copying). Every run must give every student the same score.
* **The other chapters.** Two submissions (one honest, one wrong) of each of ``--cost-chapters``,
  graded with one worker into sqlite: each chapter's seconds per submission.

The projection (1,000 students x every chapter with exercises) is a model, stated with the table: a
chapter's cost per submission is measured for the chapters run and, for the others, the mean of the
measured ones; a core's cost is that times the measured per-core slow-down of running two workers on
two cores (every core busy, as a larger machine or a Kubernetes Job runs them); the hours are the
sum over chapters x 1,000 / cores. With sqlite only one process writes at a time, so a round cannot
take less than its submissions times the measured gradebook write seconds: the table gives that floor.
This is a measurement script, not a test: it never fails on a figure.
"""

from __future__ import annotations

import argparse
import copy
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
INSTRUCTOR = ROOT / "instructor"
sys.path[:0] = [str(ROOT), str(INSTRUCTOR)]

import nbformat  # noqa: E402

from attnlib import variants  # noqa: E402

#: the phases each grading process times (instructor/nbgrader_plugins.py's PHASES), then the rest of its wall time
PHASES = ("sandbox probe", "kernel start", "cells", "kernel stop", "judge runner", "gradebook reads", "gradebook writes")
COLUMNS = ("gradebook", "workers", "wall s", "s/submission", "s/submission/core", "speed-up", *PHASES, "other")
PROJECTION_COLUMNS = ("cores", "submissions", "hours (compute)", "sqlite write floor h", "hours")
STUDENTS = 1000
CORES = (2, 16, 64)
SOLUTION_RE = re.compile(r"[ \t]*### BEGIN SOLUTION\n(.*?)[ \t]*### END SOLUTION\n?", re.S)
SECRET = "grading scale benchmark secret"


def chapters_with_exercises() -> list[int]:
    """The chapter numbers of the book that have exercises (an assignment each).

    Raises
    ------
    OSError
        A chapter notebook cannot be read.
    """
    import make_assignments

    return [int(make_assignments.assignment_name(p)[2:]) for p in make_assignments.chapter_files()]


def whole(text: str, name: str, least: int = 1) -> int:
    """``text`` as a whole number of at least ``least``.

    Raises
    ------
    argparse.ArgumentTypeError
        ``text`` is not such a number (the message names ``name``).
    """
    try:
        value = int(text)
    except (TypeError, ValueError):
        value = None
    if value is None or value < least:
        raise argparse.ArgumentTypeError(f"{name} must be a whole number of at least {least}, not {text!r}")
    return value


# --- the course and its submissions -------------------------------------------------------------


def _run(command: list[str], cwd: Path | None = None, env: dict | None = None) -> str:
    """Run ``command``; its standard output, or RuntimeError with the end of its output."""
    done = subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(command)} failed:\n{done.stdout[-2000:]}\n{done.stderr[-2000:]}")
    return done.stdout


def _nbgrader(course: Path, env: dict, *args: str) -> str:
    return _run([sys.executable, "-m", "nbgrader", *args], cwd=course, env=env)


def _course_tool(course: Path, env: dict, *args: str) -> str:
    return _run([sys.executable, str(INSTRUCTOR / "course.py"), "--course", str(course), *args], env=env)


def _off_by_one(value):
    """``value`` with every number one more (nested lists kept)."""
    if isinstance(value, bool):
        return not value
    if isinstance(value, int | float):
        return value + 1
    if isinstance(value, list | tuple):
        return [_off_by_one(v) for v in value]
    return value


def _answer_source(cell, seed: int, honest: bool) -> str:
    """What the student writes in a solution cell of the source notebook: the model answer, or a wrong one."""
    gid = cell.metadata["nbgrader"]["grade_id"]
    typed = {e.test_id.replace("-test", "-answer"): e for e in variants.EXERCISES.values() if e.answer is not None}
    if gid in typed:
        got = variants.answers(typed[gid].draw(seed))
        return "\n".join(f"{k} = {(v if honest else _off_by_one(v))!r}" for k, v in got.items())
    code = SOLUTION_RE.sub(lambda m: m.group(1), cell.source)
    if honest:
        return code
    names = {e.function for e in variants.EXERCISES.values() if e.kind == "implement"}
    defined = [n for n in names if re.search(rf"^def {re.escape(n)}\(", code, re.M)]
    for name in defined:  # the answer table's "doubled" row
        code += (
            f"\n\n_right_{name} = {name}\n\n\ndef {name}(*args, **kwargs):\n    got = _right_{name}(*args, **kwargs)\n"
            "    return None if got is None else np.asarray(got, dtype=float) * 2 + 1\n"
        )
    return code


def make_course(course: Path, chapter: int, students: list[str], env: dict) -> str:
    """The course of ``chapter`` for ``students``, each with a submission in ``submitted/``; returns the assignment name.

    Every other student (the first, the third, ...) hands in honest answers, the others wrong ones.

    Raises
    ------
    RuntimeError
        A step of the instructor tools (``make_assignments.py``, ``nbgrader``, ``course.py release``) fails; its output is given.
    """
    assignment = f"ch{chapter:02d}"
    _run([sys.executable, str(INSTRUCTOR / "make_assignments.py"), str(course), "--chapters", str(chapter)], env=env)
    (course / "course_secret.txt").write_text(SECRET + "\n")
    (course / "roster.csv").write_text("id\n" + "\n".join(students) + "\n")
    _nbgrader(course, env, "db", "student", "import", "roster.csv")
    _nbgrader(course, env, "generate_assignment", assignment)
    _course_tool(course, env, "release", assignment, "--roster", str(course / "roster.csv"))
    source = nbformat.read(course / "source" / assignment / f"{assignment}.ipynb", as_version=4)
    by_id = {c.metadata.get("nbgrader", {}).get("grade_id"): c for c in source.cells}
    key = variants.route_key(SECRET, assignment, "files")
    for k, student in enumerate(students):
        nb = nbformat.read(course / "personalized" / student / assignment / f"{assignment}.ipynb", as_version=4)
        seed = variants.student_seed(student, assignment, key)
        for cell in nb.cells:
            meta = cell.metadata.get("nbgrader", {})
            if cell.cell_type == "code" and meta.get("solution"):
                cell.source = _answer_source(by_id[meta["grade_id"]], seed, honest=k % 2 == 0)
        folder = course / "submitted" / student / assignment
        folder.mkdir(parents=True)
        nbformat.write(copy.deepcopy(nb), folder / f"{assignment}.ipynb")
        (folder / "timestamp.txt").write_text("2027-01-10 12:00:00.000000 UTC")
    return assignment


def _scores(url: str, assignment: str) -> dict[str, float]:
    from nbgrader.api import Gradebook

    with Gradebook(url, course_id="deriving-attention") as gb:
        return {s.student.id: round(s.score, 6) for s in gb.find_assignment(assignment).submissions}


# --- one run of course.py autograde ------------------------------------------------------------


def grade_run(course: Path, assignment: str, workers: int, url: str, env: dict, label: str) -> dict:
    """``course.py autograde`` from scratch into ``url``; wall time, per-submission seconds and phases, scores.

    Raises
    ------
    RuntimeError
        ``course.py autograde`` fails (a submission could not be graded); its output is given.
    """
    for folder in ("autograde-state", "autograded", "feedback"):
        shutil.rmtree(course / folder, ignore_errors=True)
    phase_log = course / f"phases-{label}.jsonl"
    phase_log.unlink(missing_ok=True)
    env = {**env, "COURSE_GRADEBOOK_URL": url, "COURSE_PHASE_LOG": str(phase_log)}
    began = time.perf_counter()
    out = _course_tool(course, env, "autograde", assignment, "--workers", str(workers))
    wall = time.perf_counter() - began
    events = [json.loads(line) for line in (course / "autograde-state" / "events.jsonl").read_text().splitlines()]
    phases = [json.loads(line) for line in phase_log.read_text().splitlines()] if phase_log.exists() else []
    graded = [p for p in phases if p.get("student")]
    seconds = [e["seconds"] for e in events]
    mean = {p: statistics.fmean(g["phases"].get(p, 0.0) for g in graded) if graded else 0.0 for p in PHASES}
    mean["other"] = statistics.fmean(seconds) - sum(mean.values())
    return {"workers": workers, "wall": wall, "submissions": len(events), "process_seconds": seconds, "phases": mean,
            "scores": _scores(url, assignment), "summary": out.strip().splitlines()[-1]}  # fmt: skip


def _sqlite_fresh(course: Path, template: Path) -> str:
    shutil.copyfile(template, course / "gradebook.db")
    return f"sqlite:///{course / 'gradebook.db'}"


# --- the tables --------------------------------------------------------------------------------


def run_row(kind: str, result: dict, one_worker_wall: float, cores: int) -> dict:
    """One row of the results table from one run (``one_worker_wall``: the same gradebook's run with one worker).

    Raises
    ------
    KeyError
        ``result`` lacks a figure of :func:`grade_run` (``submissions``, ``workers``, ``wall``, a phase).
    """
    n, w = result["submissions"], result["workers"]
    row = {"gradebook": kind, "workers": w, "wall s": result["wall"], "s/submission": result["wall"] / n,
           "s/submission/core": result["wall"] * min(w, cores) / n, "speed-up": one_worker_wall / result["wall"]}  # fmt: skip
    row.update({p: result["phases"][p] for p in (*PHASES, "other")})
    return row


def projection(chapter_costs: dict[int, float], all_chapters: list[int], slowdown: float, write_seconds: float,
               students: int = STUDENTS, cores: tuple[int, ...] = CORES) -> tuple[list[dict], dict[int, float]]:  # fmt: skip
    """Hours for ``students`` x every chapter on each number of ``cores``: the model of the module's docstring.

    Parameters
    ----------
    chapter_costs : dict
        Measured chapters: chapter -> seconds per submission with one worker.
    all_chapters : list of int
        Every chapter with exercises; those not in ``chapter_costs`` cost the mean of the measured ones.
    slowdown : float
        A core's cost with every core busy over its cost alone (the measured two-worker run on two cores).
    write_seconds : float
        The gradebook's write seconds per submission (sqlite: one writer at a time).
    students : int
        Students in the course.
    cores : tuple of int
        The machine sizes (cores, all grading).

    Returns
    -------
    tuple
        One row per machine size (``PROJECTION_COLUMNS``), and the cost used for every chapter.

    Raises
    ------
    ValueError
        No chapter measured, a cost, ``slowdown`` or ``write_seconds`` not a positive number, or ``students`` or a
        core count not a whole number of at least 1.
    """
    if not chapter_costs:
        raise ValueError("chapter_costs must hold at least one measured chapter")
    for name, value in [*(("chapter_costs", v) for v in chapter_costs.values()), ("slowdown", slowdown)]:
        if isinstance(value, bool) or not isinstance(value, int | float) or not value > 0:
            raise ValueError(f"{name} must be positive numbers of seconds or a positive factor, not {value!r}")
    if isinstance(write_seconds, bool) or not isinstance(write_seconds, int | float) or write_seconds < 0:
        raise ValueError(f"write_seconds must be a number of at least 0, not {write_seconds!r}")
    for name, value in [("students", students), *(("cores", c) for c in cores)]:
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise ValueError(f"{name} must be a whole number of at least 1, not {value!r}")
    mean = statistics.fmean(chapter_costs.values())
    costs = {c: chapter_costs.get(c, mean) for c in sorted(set(all_chapters) | set(chapter_costs))}
    per_student = sum(costs.values()) * slowdown
    submissions = students * len(costs)
    rows = []
    for n in cores:
        compute = students * per_student / n / 3600
        floor = submissions * write_seconds / 3600
        rows.append({"cores": n, "submissions": submissions, "hours (compute)": compute, "sqlite write floor h": floor,
                     "hours": max(compute, floor)})  # fmt: skip
    return rows, costs


def markdown(rows: list[dict], columns: tuple[str, ...]) -> str:
    """``rows`` as a markdown table of ``columns`` (numbers with two decimals, or three below 1).

    Raises
    ------
    KeyError
        A row lacks one of ``columns``.
    """

    def cell(v) -> str:
        if isinstance(v, float):
            return f"{v:.3f}" if abs(v) < 1 else f"{v:.2f}"
        return str(v)

    lines = ["| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]
    lines += ["| " + " | ".join(cell(r[c]) for c in columns) + " |" for r in rows]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--chapter", type=lambda t: whole(t, "--chapter"), default=6, help="the chapter graded at scale (default 6)")
    parser.add_argument("--submissions", type=lambda t: whole(t, "--submissions", 2), default=10, help="students (default 10)")
    parser.add_argument("--workers", type=lambda t: whole(t, "--workers"), nargs="+", default=[1, 2, 4], help="default 1 2 4")
    parser.add_argument("--cost-chapters", type=lambda t: whole(t, "--cost-chapters"), nargs="*", default=[1, 9, 14],
                        help="chapters whose per-submission cost is measured too (default 1 9 14)")  # fmt: skip
    parser.add_argument("--gradebooks", nargs="+", choices=["sqlite", "postgresql"], default=["sqlite", "postgresql"])
    parser.add_argument("--dry-run", action="store_true", help="print the plan and the model's chapters; grade nothing")
    parser.add_argument("--json", type=Path, default=ROOT / "test-artifacts" / "grading-scale.json", help="where to write the figures")
    args = parser.parse_args(argv)
    every = chapters_with_exercises()
    for chapter in [args.chapter, *args.cost_chapters]:
        if chapter not in every:
            parser.error(f"--chapter/--cost-chapters: chapter {chapter} has no exercises (chapters with exercises: {every})")
    if 1 not in args.workers or 2 not in args.workers:
        parser.error(f"--workers must include 1 and 2 (the speed-up and the model use both), not {args.workers}")
    workers = sorted(set(args.workers))
    measured = sorted({args.chapter, *args.cost_chapters})
    print(f"plan: chapter {args.chapter}, {args.submissions} submissions (half honest, half wrong), workers {workers}, "
          f"gradebooks {args.gradebooks}; per-submission cost of chapters {measured} measured, of the other "
          f"{len(set(every) - set(measured))} of the {len(every)} chapters with exercises estimated as their mean")  # fmt: skip
    if args.dry_run:
        return 0
    cores = os.cpu_count() or 1
    load_before = os.getloadavg()
    os.environ["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"  # nbgrader runs alembic
    env = dict(os.environ)
    env.pop("COURSE_GRADEBOOK_URL", None)
    students = [f"b{k:03d}" for k in range(1, args.submissions + 1)]
    results: dict[str, dict[int, dict]] = {}
    home = Path(tempfile.mkdtemp(prefix="grading-scale-"))
    try:
        course = home / "course"
        assignment = make_course(course, args.chapter, students, env)
        template = home / "gradebook-template.db"
        shutil.copyfile(course / "gradebook.db", template)
        if "sqlite" in args.gradebooks:
            results["sqlite"] = {}
            for w in workers:
                results["sqlite"][w] = grade_run(course, assignment, w, _sqlite_fresh(course, template), env, f"sqlite-{w}")
                print(f"sqlite, {w} worker(s): {results['sqlite'][w]['wall']:.1f} s ({results['sqlite'][w]['summary']})", flush=True)
        if "postgresql" in args.gradebooks:
            from tools.throwaway_postgres import copy_database, throwaway_server

            with throwaway_server() as base:
                pg_env = {**env, "COURSE_GRADEBOOK_URL": base}
                _nbgrader(course, pg_env, "db", "student", "import", "roster.csv")
                _nbgrader(course, pg_env, "generate_assignment", assignment, "--force")
                results["postgresql"] = {}
                for w in workers:
                    url = copy_database(base, f"run_{w}")
                    results["postgresql"][w] = grade_run(course, assignment, w, url, env, f"postgresql-{w}")
                    print(f"postgresql, {w} worker(s): {results['postgresql'][w]['wall']:.1f} s", flush=True)
        costs: dict[int, float] = {}
        for chapter in measured:
            if chapter == args.chapter and "sqlite" in results:
                costs[chapter] = statistics.fmean(results["sqlite"][1]["process_seconds"])
                continue
            other = home / f"cost-ch{chapter:02d}"
            name = make_course(other, chapter, students[:2], env)
            done = grade_run(other, name, 1, f"sqlite:///{other / 'gradebook.db'}", env, "cost")
            costs[chapter] = statistics.fmean(done["process_seconds"])
            print(f"chapter {chapter}: {costs[chapter]:.1f} s per submission (1 worker, sqlite)", flush=True)
    finally:
        shutil.rmtree(home, ignore_errors=True)
    load_after = os.getloadavg()
    rows = [run_row(kind, by[w], by[1]["wall"], cores) for kind, by in results.items() for w in workers]
    all_scores = [r["scores"] for by in results.values() for r in by.values()]
    same = all(s == all_scores[0] for s in all_scores)
    first = next(iter(results.values()))
    slowdown = (first[2]["wall"] * min(2, cores)) / first[1]["wall"]  # a core's cost with both cores busy / alone
    writes = results.get("sqlite", first)[1]["phases"]["gradebook writes"]
    proj, used = projection(costs, every, slowdown, writes)
    print()
    when = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    print(f"load average before {load_before[0]:.2f} {load_before[1]:.2f} {load_before[2]:.2f}, "
          f"after {load_after[0]:.2f} {load_after[1]:.2f} {load_after[2]:.2f} ({cores} cores), {when}")  # fmt: skip
    print(f"chapter {args.chapter}, {args.submissions} submissions; every run gave every student the same score: {same}; "
          f"honest/wrong scores: {sorted(set(all_scores[0].values()))}")  # fmt: skip
    print("phases: mean seconds per submission in each grading process; speed-up: the one-worker run's wall time over this run's")
    print(markdown(rows, COLUMNS))
    print()
    print("per-submission cost with one worker (sqlite), measured: " + ", ".join(f"ch{c:02d} {s:.2f} s" for c, s in costs.items()))
    print(f"model: the other chapters {statistics.fmean(costs.values()):.2f} s each (the mean); every core busy costs "
          f"{slowdown:.2f}x (2 workers on 2 cores); sqlite's floor: {writes:.3f} s of gradebook writes "
          "per submission, one writer at a time")  # fmt: skip
    print(f"projection: {STUDENTS} students x {len(used)} chapters")
    print(markdown(proj, PROJECTION_COLUMNS))
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps({"load_before": load_before, "load_after": load_after, "rows": rows, "costs": costs,
                                     "slowdown": slowdown, "projection": proj, "same_scores": same}, indent=1))  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())

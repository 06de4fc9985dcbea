#!/usr/bin/env python3
"""Per-student versions of the book's assignments, and a similarity report of the submissions.

Run inside an nbgrader course folder made by ``instructor/make_assignments.py``
(it holds ``course_secret.txt``, the course secret), after ``nbgrader
generate_assignment``. A student's seed for an assignment is an HMAC of their
roster id and the assignment name under that assignment's key for its release
route, derived from the secret (``attnlib.variants.route_key``); the grader
derives it again from the id it grades, so the seed written into a notebook is
only there to show the student their numbers.

Subcommands::

    course.py release chNN --roster roster.csv   # one file per student: personalized/<id>/chNN/chNN.ipynb
    course.py release chNN --exchange            # release/chNN for the exchange: seed from the user name
    course.py seeds chNN --roster roster.csv     # the table of seeds (student id, seed)
    course.py place chNN DOWNLOADS --roster roster.csv  # LMS downloads -> submitted/<id>/chNN/chNN.ipynb
    course.py similar chNN                       # pairs of submissions with near-identical answer cells
    course.py sandbox                            # check that the grading sandbox works and hides the course

``release`` records the route in ``routes.json`` (the grader reads it); an
assignment has one route. The roster is the CSV that ``nbgrader db student
import`` reads (a column ``id``; ``first_name``, ``last_name`` and ``email`` are optional).
"""

from __future__ import annotations

import argparse
import builtins
import difflib
import io
import itertools
import json
import keyword
import re
import shutil
import subprocess
import sys
import textwrap
import tokenize
from datetime import UTC, datetime
from pathlib import Path

import nbformat

# python instructor/course.py puts instructor/ first on sys.path, so the book's plugins import by name
import nbgrader_plugins
from nbgrader_plugins import exchange_seed_source, personalize, read_roster, seed_cell_source

from attnlib.variants import route_key, student_seed

PERSONALIZED = "personalized"
SECRET = "course_secret.txt"
ROUTES = "routes.json"
#: Answer cells with fewer normalised tokens than this are too short to say anything about copying.
MIN_TOKENS = 12


def course_secret(course: Path) -> str:
    path = course / SECRET
    if not path.exists():
        raise ValueError(f"{path} is missing: make the course with instructor/make_assignments.py first")
    return path.read_text().strip()


def record_route(course: Path, assignment: str, route: str) -> None:
    """Note in routes.json how ``assignment`` was released; one route per assignment."""
    path = course / ROUTES
    routes = json.loads(path.read_text()) if path.exists() else {}
    if routes.get(assignment, route) != route:
        raise ValueError(
            f"{assignment} was released by the {routes[assignment]} route already; its students' seeds come from that "
            f"route's key, so it cannot also go out by the {route} route (edit {path} only before anything is handed out)"
        )
    routes[assignment] = route
    path.write_text(json.dumps(routes, indent=1, sort_keys=True) + "\n")


def released_notebooks(course: Path, assignment: str) -> list[Path]:
    folder = course / "release" / assignment
    notebooks = sorted(folder.glob("*.ipynb"))
    if not notebooks:
        raise ValueError(f"no notebooks in {folder}: run `nbgrader generate_assignment {assignment}` first")
    return notebooks


def seeds(course: Path, assignment: str, students: list[str], route: str = "files") -> dict[str, int]:
    key = route_key(course_secret(course), assignment, route)
    return {s: student_seed(s, assignment, key) for s in students}


def release_files(course: Path, assignment: str, students: list[str]) -> list[Path]:
    """One copy of the student version per student, its seed cell holding that student's seed."""
    notebooks = released_notebooks(course, assignment)
    record_route(course, assignment, "files")
    written, own = [], seeds(course, assignment, students)
    for path in notebooks:
        nb = nbformat.read(path, as_version=4)
        for student in students:
            target = course / PERSONALIZED / student / assignment / path.name
            target.parent.mkdir(parents=True, exist_ok=True)
            nbformat.write(personalize(nb, seed_cell_source(own[student], student)), target)
            written.append(target)
    return written


def release_exchange(course: Path, assignment: str) -> list[Path]:
    """Rewrite ``release/<assignment>`` so that each student's copy computes their seed from their user name.

    The copy holds this assignment's exchange key only: from it nobody computes
    the seeds of another assignment, nor those of the per-student files.
    """
    notebooks = released_notebooks(course, assignment)
    record_route(course, assignment, "exchange")
    key, written = route_key(course_secret(course), assignment, "exchange"), []
    for path in notebooks:
        nb = nbformat.read(path, as_version=4)
        nbformat.write(personalize(nb, exchange_seed_source(assignment, key)), path)
        written.append(path)
    return written


def place_downloads(
    course: Path, assignment: str, downloads: Path, students: list[str] | list[dict[str, str]]
) -> tuple[list[Path], list[str]]:
    """Copy each downloaded notebook to ``submitted/<id>/<assignment>/``, all of them or none.

    A download belongs to the one roster student whose id, or whose ``lms_user_id``
    (a roster column for the number the LMS puts in its names: Canvas's user id,
    Moodle's participant id), appears in its path below ``downloads`` as a whole
    word, in any case: ``s001_ch06.ipynb``, Canvas's
    ``leeann_LATE_12345_67890_ch06.ipynb`` and Moodle's folder
    ``Ann Lee_12345_assignsubmission_file_/ch06.ipynb`` are all placed. The
    file's modification time becomes the submission time (``timestamp.txt``,
    which nbgrader compares with the due date).

    Returns the placed files and a sentence for every download that could not
    be placed. When there is any such sentence nothing is placed, so that a
    fixed roster (or a renamed file) and a second run place every download once.

    Raises
    ------
    ValueError
        ``downloads`` is not a folder, or the assignment has more than one released notebook.
    """
    if not Path(downloads).is_dir():
        raise ValueError(f"{downloads} is not a folder: unpack the LMS's download of {assignment} into one")
    names = [p.name for p in released_notebooks(course, assignment)]
    if len(names) != 1:
        raise ValueError(f"{assignment} has {len(names)} notebooks; place its downloads by hand")
    rows = [r if isinstance(r, dict) else {"id": r} for r in students]
    keys = {r["id"]: [k for k in (r["id"], (r.get("lms_user_id") or "").strip()) if k] for r in rows}
    plan, problems, seen = [], [], {}
    for path in sorted(Path(downloads).rglob("*.ipynb")):
        where = path.relative_to(downloads).as_posix()
        ids = [
            sid
            for sid, words in keys.items()
            if any(re.search(rf"(?<![A-Za-z0-9]){re.escape(w)}(?![A-Za-z0-9])", where, re.IGNORECASE) for w in words)
        ]
        if len(ids) != 1:
            problems.append(f"{path}: its name holds {'no roster id' if not ids else 'several roster ids: ' + ', '.join(ids)}")
            continue
        if ids[0] in seen:
            problems.append(f"{path}: a second file for {ids[0]} (after {seen[ids[0]]})")
            continue
        seen[ids[0]] = path
        plan.append((path, ids[0]))
    if problems:
        return [], problems
    placed = []
    for path, sid in plan:
        target = course / "submitted" / sid / assignment / names[0]
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(path, target)
        when = datetime.fromtimestamp(path.stat().st_mtime, UTC)
        (target.parent / "timestamp.txt").write_text(when.strftime("%Y-%m-%d %H:%M:%S.%f UTC"))
        placed.append(target)
    return placed, problems


# --- the similarity report ------------------------------------------------------------------


def normalised(cell) -> list[str]:
    """The tokens of an answer cell with names, comments, whitespace and case made irrelevant.

    Code: Python tokens, comments dropped, every name that is not a keyword or
    a builtin replaced by ``v1, v2, ...`` in order of first use (so renaming
    the variables of a copied answer changes nothing). Text: lower-case words.
    """
    if cell.cell_type != "code":
        return re.findall(r"[a-z0-9]+", cell.source.lower())
    names: dict[str, str] = {}
    out = []
    try:
        for tok in tokenize.generate_tokens(io.StringIO(cell.source).readline):
            if tok.type in (tokenize.COMMENT, tokenize.NL, tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT, tokenize.ENDMARKER):
                continue
            text = tok.string
            if tok.type == tokenize.NAME and not keyword.iskeyword(text) and not hasattr(builtins, text):
                text = names.setdefault(text, f"v{len(names) + 1}")
            out.append(text)
    except (tokenize.TokenError, IndentationError, SyntaxError):
        return cell.source.split()
    return out


def answer_cells(nb) -> dict[str, object]:
    return {c.metadata["nbgrader"]["grade_id"]: c for c in nb.cells if c.metadata.get("nbgrader", {}).get("solution")}


def similar_pairs(course: Path, assignment: str, threshold: float = 0.9, skipped: list[str] | None = None) -> list[dict]:
    """Pairs of submissions whose answered cells are near-identical (mean similarity >= ``threshold``).

    A submission that cannot be read (not a notebook, cut short, not nbgrader's) is left out and named,
    with the reason, in ``skipped``: one broken file must not cost the report of the others.
    """
    release = {}
    for path in released_notebooks(course, assignment):
        release.update({gid: normalised(c) for gid, c in answer_cells(nbformat.read(path, as_version=4)).items()})
    subs: dict[str, dict[str, tuple[list[str], str]]] = {}
    for path in sorted((course / "submitted").glob(f"*/{assignment}/*.ipynb")):
        student = path.parent.parent.name
        try:
            cells = answer_cells(nbformat.read(path, as_version=4))
        except Exception as exc:  # noqa: BLE001 - a submission may be any file at all
            if skipped is not None:
                skipped.append(f"{path.relative_to(course)}: {type(exc).__name__}: {str(exc)[:200]}")
            continue
        mine = subs.setdefault(student, {})
        for gid, cell in cells.items():
            tokens = normalised(cell)
            if tokens != release.get(gid) and len(tokens) >= MIN_TOKENS:  # unanswered or tiny cells say nothing
                mine[gid] = (tokens, cell.source)
    pairs = []
    for a, b in itertools.combinations(sorted(subs), 2):
        shared = sorted(set(subs[a]) & set(subs[b]))
        if not shared:
            continue
        ratios = {g: difflib.SequenceMatcher(None, subs[a][g][0], subs[b][g][0], autojunk=False).ratio() for g in shared}
        mean = sum(ratios.values()) / len(ratios)
        if mean >= threshold:
            cells = [(g, r, subs[a][g][1], subs[b][g][1]) for g, r in ratios.items() if r >= threshold]
            pairs.append({"students": (a, b), "mean": mean, "compared": len(shared), "cells": cells})
    return sorted(pairs, key=lambda p: -p["mean"])


def side_by_side(left: str, right: str, width: int = 58) -> str:
    """Two cells' sources in two columns."""

    def lines(text: str) -> list[str]:
        return [part for line in text.splitlines() or [""] for part in (textwrap.wrap(line, width, drop_whitespace=False) or [""])]

    a, b = lines(left), lines(right)
    return "\n".join(f"  {x:<{width}} | {y}" for x, y in itertools.zip_longest(a, b, fillvalue=""))


def similarity_report(course: Path, assignment: str, threshold: float = 0.9) -> str:
    skipped: list[str] = []
    pairs = similar_pairs(course, assignment, threshold, skipped)
    out = [
        f"{assignment}: {len(pairs)} pair(s) of submissions with near-identical answer cells "
        f"(names, comments and whitespace ignored; similarity >= {threshold:g})"
    ]
    out += [f"skipped, could not be read: {line}" for line in skipped]
    for p in pairs:
        a, b = p["students"]
        out.append(f"\n{a} and {b}: mean similarity {p['mean']:.2f} over {p['compared']} answered cell(s)")
        for gid, ratio, left, right in p["cells"]:
            out.append(f"-- {gid} (similarity {ratio:.2f}): {a} | {b}")
            out.append(side_by_side(left, right))
    return "\n".join(out)


#: What ``course.py sandbox`` tries from inside the sandbox: (what, Python expression over the course folder ``c``).
SANDBOX_TRIES = [
    ("read the course secret", "open(c + '/course_secret.txt').read()"),
    ("list the course folder (submissions, gradebook)", "os.listdir(c)"),
    ("write into the course folder", "open(c + '/sandbox-probe.txt', 'w').write('x')"),
    ("write into the book's clone", "open(book + '/attnlib/sandbox-probe.txt', 'w').write('x')"),
    ("open a network connection", "socket.create_connection(('127.0.0.1', 22), timeout=2)"),
]


def sandbox_report(course: Path) -> tuple[bool, str]:
    """Start Python in the grading sandbox as ``nbgrader autograde`` would for this course, and try what a student would.

    Returns whether every attempt was refused, and a report of each. Raises
    ``nbgrader_plugins.SandboxUnavailable`` (with what to install) when the
    sandbox cannot start, ``ValueError`` when ``course`` has no nbgrader_config.py.
    """
    from traitlets.config.loader import PyFileConfigLoader

    if not (course / "nbgrader_config.py").exists():
        raise ValueError(f"{course / 'nbgrader_config.py'} is missing: make the course with instructor/make_assignments.py first")
    cfg = PyFileConfigLoader("nbgrader_config.py", path=str(course)).load_config()
    execute = nbgrader_plugins.SandboxExecute(config=cfg)
    if not execute.sandbox:
        return False, "the sandbox is turned off (c.SandboxExecute.sandbox = False): students' code runs as you"
    hidden, limits = execute.hidden_folders({}), execute.limits()
    nbgrader_plugins.probe_sandbox(hidden, limits)
    book = Path(nbgrader_plugins.__file__).resolve().parent.parent
    code = f"import os, socket\nc, book = {str(course)!r}, {str(book)!r}\n"
    for k, (_, expr) in enumerate(SANDBOX_TRIES):
        code += f"try:\n    {expr}\n    print({k}, 'DONE')\nexcept Exception as e:\n    print({k}, type(e).__name__)\n"
    uid = nbgrader_plugins.sandbox_uid()
    folder = nbgrader_plugins.make_kernel_dir(uid)
    try:
        done = subprocess.run(
            nbgrader_plugins.sandbox_command([sys.executable, "-c", code], folder, hidden, limits, uid),
            capture_output=True, text=True, timeout=120,
        )
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    answers = dict(line.split(" ", 1) for line in done.stdout.splitlines() if " " in line)
    lines, safe = [f"hidden from students' code: {', '.join(map(str, hidden))}"], True
    for k, (what, _) in enumerate(SANDBOX_TRIES):
        got = answers.get(str(k), f"no answer (exit code {done.returncode}: {done.stderr.strip()[-300:]})")
        safe &= got not in ("DONE",) and not got.startswith("no answer")
        lines.append(f"{'refused' if got != 'DONE' else 'ALLOWED'}: {what} ({got})")
    limits_text = ", ".join(f"{k} {v}" for k, v in sorted(limits.items()))
    lines.append(f"limits: {limits_text} (prlimit names: cpu seconds, as/fsize bytes, nproc, nofile, core)")
    return safe, "\n".join(lines)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--course", type=Path, default=Path.cwd(), help="the nbgrader course folder (default: here)")
    sub = parser.add_subparsers(dest="command", required=True)
    rel = sub.add_parser("release", help="make the students' versions of one assignment")
    rel.add_argument("assignment", help="for example ch06")
    how = rel.add_mutually_exclusive_group(required=True)
    how.add_argument("--roster", type=Path, help="write one notebook per student of this roster CSV")
    how.add_argument("--exchange", action="store_true", help="prepare release/<assignment> for nbgrader release_assignment")
    seeds_cmd = sub.add_parser("seeds", help="print every student's seed for one assignment as CSV")
    seeds_cmd.add_argument("assignment")
    seeds_cmd.add_argument("--roster", type=Path, required=True)
    place = sub.add_parser("place", help="put notebooks downloaded from an LMS where nbgrader grades them")
    place.add_argument("assignment")
    place.add_argument("downloads", type=Path, help="folder of the downloaded notebooks (searched recursively)")
    place.add_argument("--roster", type=Path, required=True)
    sim = sub.add_parser("similar", help="list pairs of submissions whose answer cells are near-identical")
    sim.add_argument("assignment")
    sim.add_argument("--threshold", type=float, default=0.9, help="similarity from 0 to 1 (default 0.9)")
    sub.add_parser("sandbox", help="check that students' code runs sandboxed, away from the course, when autograded")
    args = parser.parse_args(argv)
    course = args.course.resolve()
    try:
        if args.command == "sandbox":
            try:
                safe, report = sandbox_report(course)
            except nbgrader_plugins.SandboxUnavailable as exc:
                print(f"error: {exc}", file=sys.stderr)
                return 1
            print(report)
            verdict = "The grading sandbox works." if safe else "The grading sandbox does NOT protect this course."
            print(verdict, file=sys.stdout if safe else sys.stderr)
            return 0 if safe else 1
        if args.command == "seeds":
            routes = json.loads((course / ROUTES).read_text()) if (course / ROUTES).exists() else {}
            students = [r["id"] for r in read_roster(args.roster)]
            print("id,seed")
            for student, seed in seeds(course, args.assignment, students, routes.get(args.assignment, "files")).items():
                print(f"{student},{seed}")
            return 0
        if args.command == "place":
            placed, problems = place_downloads(course, args.assignment, args.downloads, read_roster(args.roster))
            for path in placed:
                print(f"placed {path}")
            for line in problems:
                print(f"could not place {line}", file=sys.stderr)
            if problems:
                print(
                    f"course.py place: nothing placed, {len(problems)} download(s) could not be placed. Add the number "
                    "the LMS puts in its names as a column lms_user_id of the roster, or rename the files, and run it again.",
                    file=sys.stderr,
                )
                return 1
            return 0
        if args.command == "similar":
            print(similarity_report(course, args.assignment, args.threshold))
            return 0
        if args.exchange:
            paths = release_exchange(course, args.assignment)
        else:
            paths = release_files(course, args.assignment, [r["id"] for r in read_roster(args.roster)])
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    for path in paths:
        print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

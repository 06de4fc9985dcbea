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
    course.py similar chNN                       # near-identical pairs of submissions; functions copied from attnlib
    course.py regrade chNN                       # autograde --force, keeping the grades given by hand
    course.py sandbox                            # check that the grading sandbox works and hides the course
    course.py gradebook                          # which gradebook (sqlite or PostgreSQL) and what it holds
    course.py autograde chNN --workers N         # N submissions at once; only the missing and the changed ones
    course.py autograde chNN --shard I/N         # only shard I of N (0 <= I < N) of the students: one machine's part

The gradebook is the course's sqlite file unless a PostgreSQL server is given, by
``--db-url postgresql+psycopg://USER@HOST/DATABASE`` or the environment variable
``COURSE_GRADEBOOK_URL`` (which the course's ``nbgrader_config.py`` reads, so
that plain ``nbgrader`` commands use the same gradebook).

``release`` records the route in ``routes.json`` (the grader reads it); an
assignment has one route. The roster is the CSV that ``nbgrader db student
import`` reads (a column ``id``; ``first_name``, ``last_name`` and ``email`` are optional).
"""

from __future__ import annotations

import argparse
import ast
import builtins
import difflib
import fcntl
import functools
import hashlib
import io
import itertools
import json
import keyword
import os
import re
import shutil
import subprocess
import sys
import textwrap
import time
import tokenize
from concurrent.futures import ThreadPoolExecutor
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
#: The environment variable naming a PostgreSQL gradebook (read by the course's nbgrader_config.py too).
GRADEBOOK_ENV = "COURSE_GRADEBOOK_URL"
#: The drivers a gradebook URL may name: sqlite (nbgrader's default) and PostgreSQL through psycopg 3.
GRADEBOOK_DRIVERS = ("sqlite", "postgresql+psycopg")
#: ``course.py autograde``'s record of what it graded: STATE/<assignment>/<student>.json, one line per grading in EVENTS.
STATE = "autograde-state"
EVENTS = "events.jsonl"


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


#: Functions whose normalised syntax tree has fewer tokens than this are too short to call a copy.
MIN_FUNCTION_TOKENS = 60


#: Fields of a syntax tree that say nothing about what a function computes.
_IGNORED_FIELDS = {"annotation", "returns", "decorator_list", "type_comment", "type_params", "ctx", "kind"}
#: Which field of which node holds a name the normalisation renames.
_NAME_FIELDS = {("Name", "id"), ("arg", "arg"), ("FunctionDef", "name"), ("AsyncFunctionDef", "name")}


def _is_docstring(node) -> bool:
    return isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str)


def function_tokens(node: ast.FunctionDef | ast.AsyncFunctionDef) -> list[str]:
    """The tokens of a function's normalised syntax tree: names, docstrings, comments and formatting made irrelevant.

    The tree is written out node by node; every name a builtin does not own
    (the function's, its arguments', its variables', a module's such as
    ``np``) becomes ``v1, v2, ...`` in order of first use; docstrings, strings
    standing alone, type annotations and decorators are left out; comments
    and layout are gone with the source. Attribute names (``.sum``, ``.T``),
    keyword names and constants stay.

    Parameters
    ----------
    node : ast.FunctionDef or ast.AsyncFunctionDef
        A function definition from ``ast.parse``.

    Returns
    -------
    list of str
        Node types, ``[`` and ``]`` around lists, renamed names and constants' ``repr``.

    Raises
    ------
    TypeError
        ``node`` is not a function definition.
    """
    if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
        raise TypeError(f"node must be a function definition from ast.parse, not {type(node).__name__}")
    names: dict[str, str] = {}
    tokens: list[str] = []

    def emit(item, kind: str = "", field: str = "") -> None:
        if isinstance(item, ast.AST):
            if _is_docstring(item):
                return  # a docstring, or a string standing as a comment
            kind = type(item).__name__
            tokens.append(kind)
            for name, value in ast.iter_fields(item):
                if name not in _IGNORED_FIELDS:
                    emit(value, kind, name)
        elif isinstance(item, list):
            tokens.append("[")
            for part in item:
                emit(part, kind, field)
            tokens.append("]")
        elif (kind, field) in _NAME_FIELDS and not hasattr(builtins, item):
            tokens.append(names.setdefault(item, f"v{len(names) + 1}"))
        else:
            tokens.append(repr(item))

    emit(node)
    return tokens


def defined_functions(source: str) -> list[tuple[str, ast.FunctionDef | ast.AsyncFunctionDef]]:
    """Every function defined in ``source`` (nested ones and methods too), with its dotted name; ``[]`` if it does not parse.

    Lines of IPython magics and shell escapes (``%``, ``!``) are left out first.

    Raises
    ------
    TypeError
        ``source`` is not a string.
    """
    if not isinstance(source, str):
        raise TypeError(f"source must be a string of Python code, not {type(source).__name__}")
    lines = ["" if line.lstrip().startswith(("%", "!")) else line for line in source.splitlines()]
    try:
        tree = ast.parse("\n".join(lines))
    except (SyntaxError, ValueError):
        return []
    found = []

    def walk(node, prefix: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef):
                found.append((prefix + child.name, child))
                walk(child, prefix + child.name + ".")
            elif isinstance(child, ast.ClassDef):
                walk(child, prefix + child.name + ".")
            else:
                walk(child, prefix)

    walk(tree, "")
    return found


def source_lines(source: str, node: ast.AST) -> str:
    """The lines of ``source`` that ``node`` (from ``ast.parse(source)``) spans, decorators included.

    Raises
    ------
    TypeError
        ``node`` is not a syntax-tree node with line numbers (a statement or an expression).
    """
    if getattr(node, "lineno", None) is None or getattr(node, "end_lineno", None) is None:
        raise TypeError(f"node must be a statement or expression from ast.parse, not {type(node).__name__}")
    first = min([node.lineno, *(d.lineno for d in getattr(node, "decorator_list", []))])
    return "\n".join(source.splitlines()[first - 1 : node.end_lineno])


@functools.cache
def library_functions() -> tuple[tuple[str, tuple[str, ...], str], ...]:
    """attnlib's own functions: (``attnlib.module.name``, normalised tokens, source), long enough to call a copy.

    Read from the source files of the attnlib that this Python imports.

    Raises
    ------
    OSError
        A source file of attnlib cannot be read.
    """
    import attnlib

    package = Path(attnlib.__file__).resolve().parent
    out = []
    for path in sorted(package.rglob("*.py")):
        module = ".".join(path.relative_to(package.parent).with_suffix("").parts).removesuffix(".__init__")
        text = path.read_text(encoding="utf-8")
        for name, node in defined_functions(text):
            tokens = function_tokens(node)
            if len(tokens) >= MIN_FUNCTION_TOKENS:
                out.append((f"{module}.{name}", tuple(tokens), source_lines(text, node)))
    return tuple(out)


def library_matches(source: str, threshold: float = 0.9) -> list[dict]:
    """The functions defined in ``source`` whose normalised syntax tree matches one of attnlib's own.

    A student's function is compared with every function of attnlib's source
    (:func:`function_tokens`: names, docstrings, comments and formatting do not
    count), so a pasted and renamed copy of the library is found; functions
    shorter than ``MIN_FUNCTION_TOKENS`` tokens are left out.

    Parameters
    ----------
    source : str
        Python code, for example an answer cell.
    threshold : float, optional
        The least similarity (0 to 1, ``difflib``'s ratio of the token lists) reported.

    Returns
    -------
    list of dict
        One per matching function: ``function`` (its name), ``matches`` (the
        library function's dotted name), ``similarity``, ``source`` and ``library_source``.

    Raises
    ------
    TypeError
        ``source`` is not a string.
    ValueError
        ``threshold`` is not a number from 0 to 1.
    """
    if not isinstance(threshold, int | float) or not 0 <= threshold <= 1:
        raise ValueError(f"threshold must be a number from 0 to 1, not {threshold!r}")
    found = []
    for name, node in defined_functions(source):
        mine = function_tokens(node)
        if len(mine) < MIN_FUNCTION_TOKENS:
            continue
        best = None
        for qualname, theirs, library_source in library_functions():
            if 2 * min(len(mine), len(theirs)) / (len(mine) + len(theirs)) < threshold:
                continue  # the ratio cannot reach the threshold
            matcher = difflib.SequenceMatcher(None, mine, theirs, autojunk=False)
            if matcher.real_quick_ratio() < threshold or matcher.quick_ratio() < threshold:
                continue
            ratio = matcher.ratio()
            if ratio >= threshold and (best is None or ratio > best["similarity"]):
                best = {"function": name, "matches": qualname, "similarity": ratio, "library_source": library_source}
        if best:
            best["source"] = source_lines(source, node)
            found.append(best)
    return found


def library_copies(course: Path, assignment: str, threshold: float = 0.9, skipped: list[str] | None = None) -> list[dict]:
    """Answer cells of the submissions that define a function matching one of attnlib's own (:func:`library_matches`).

    Returns one dict per match: ``student``, ``cell`` (the grade id) and the keys of :func:`library_matches`.
    A submission that cannot be read is named in ``skipped``, as in :func:`similar_pairs`.

    Raises
    ------
    ValueError
        The assignment has no released notebook, or ``threshold`` is not from 0 to 1.
    """
    released = {}
    for path in released_notebooks(course, assignment):
        released.update({gid: c.source for gid, c in answer_cells(nbformat.read(path, as_version=4)).items()})
    out = []
    for path in sorted((course / "submitted").glob(f"*/{assignment}/*.ipynb")):
        try:
            cells = answer_cells(nbformat.read(path, as_version=4))
        except Exception as exc:  # noqa: BLE001 - a submission may be any file at all
            if skipped is not None:
                skipped.append(f"{path.relative_to(course)}: {type(exc).__name__}: {str(exc)[:200]}")
            continue
        for gid, cell in cells.items():
            if cell.cell_type == "code" and cell.source != released.get(gid):
                out += [{"student": path.parent.parent.name, "cell": gid, **m} for m in library_matches(cell.source, threshold)]
    return out


def side_by_side(left: str, right: str, width: int = 58) -> str:
    """Two cells' sources in two columns."""

    def lines(text: str) -> list[str]:
        return [part for line in text.splitlines() or [""] for part in (textwrap.wrap(line, width, drop_whitespace=False) or [""])]

    a, b = lines(left), lines(right)
    return "\n".join(f"  {x:<{width}} | {y}" for x, y in itertools.zip_longest(a, b, fillvalue=""))


def similarity_report(course: Path, assignment: str, threshold: float = 0.9) -> str:
    """The report of ``course.py similar``: near-identical pairs of submissions, then functions copied from attnlib.

    Raises
    ------
    ValueError
        The assignment has no released notebook, or ``threshold`` is not from 0 to 1.
    """
    if not isinstance(threshold, int | float) or not 0 <= threshold <= 1:
        raise ValueError(f"--threshold must be a number from 0 to 1, not {threshold!r}")
    skipped: list[str] = []
    pairs = similar_pairs(course, assignment, threshold, skipped)
    copies = library_copies(course, assignment, threshold)
    out = [
        f"{assignment}: {len(pairs)} pair(s) of submissions with near-identical answer cells "
        f"(names, comments and whitespace ignored; similarity >= {threshold:g})"
    ]
    out += [f"skipped, could not be read: {line}" for line in skipped]
    out.append(
        f"{assignment}: {len(copies)} submitted function(s) matching attnlib's own source "
        f"(names, docstrings, comments and formatting ignored; similarity >= {threshold:g})"
    )
    for c in copies:
        who = f"-- {c['student']} {c['cell']}: {c['function']} matches {c['matches']}"
        out.append(f"{who} (similarity {c['similarity']:.2f}): {c['student']} | attnlib")
        out.append(side_by_side(c["source"], c["library_source"]))
    for p in pairs:
        a, b = p["students"]
        out.append(f"\n{a} and {b}: mean similarity {p['mean']:.2f} over {p['compared']} answered cell(s)")
        for gid, ratio, left, right in p["cells"]:
            out.append(f"-- {gid} (similarity {ratio:.2f}): {a} | {b}")
            out.append(side_by_side(left, right))
    return "\n".join(out)


# --- re-grading that keeps the grades given by hand ------------------------------------------


def course_config(course: Path):
    """The traitlets configuration of ``course`` (its ``nbgrader_config.py``).

    Raises
    ------
    ValueError
        ``course`` has no ``nbgrader_config.py``.
    """
    from traitlets.config.loader import PyFileConfigLoader

    if not (course / "nbgrader_config.py").exists():
        raise ValueError(f"{course / 'nbgrader_config.py'} is missing: make the course with instructor/make_assignments.py first")
    cfg = PyFileConfigLoader("nbgrader_config.py", path=str(course)).load_config()
    if os.environ.get(GRADEBOOK_ENV):  # also for a course whose nbgrader_config.py predates the variable
        cfg.CourseDirectory.db_url = os.environ[GRADEBOOK_ENV]
    return cfg


def _answer_fingerprint(course: Path, cfg, student: str, assignment: str, notebook: str, grade_id: str) -> str | None:
    """What a hand grade was given for: the graded cell's source if it is an answer cell, else all answer cells' sources."""
    from nbgrader.coursedir import CourseDirectory

    coursedir = CourseDirectory(config=cfg, root=str(course))
    path = Path(coursedir.format_path(coursedir.autograded_directory, student, assignment)) / f"{notebook}.ipynb"
    try:
        cells = answer_cells(nbformat.read(path, as_version=4))
    except (OSError, ValueError, KeyError):
        return None
    if grade_id in cells:
        return cells[grade_id].source
    return "\n\x00".join(f"{gid}\n{cell.source}" for gid, cell in sorted(cells.items()))


def hand_grades(course: Path, assignment: str, student: str | None = None) -> dict[tuple[str, str, str], dict]:
    """The grades given by hand and confirmed (a manual score, not waiting for review) of an assignment's submissions.

    Returns, for each (student, notebook, grade id), the manual score, extra
    credit, the autograder's score and the fingerprint of the answer it was
    given for (the graded cell's source in the autograded notebook, or every
    answer cell's for a hand-corrected test cell).

    Raises
    ------
    ValueError
        ``course`` has no ``nbgrader_config.py``, or ``assignment`` is not in its gradebook.
    """
    from nbgrader.api import Gradebook, MissingEntry

    cfg = course_config(course)
    out = {}
    with Gradebook(cfg.CourseDirectory.db_url) as gb:
        try:
            subs = gb.find_assignment(assignment).submissions
        except MissingEntry:
            raise ValueError(f"assignment {assignment!r} is not in the gradebook of {course}") from None
        for sub in subs:
            if student and sub.student.id != student:
                continue
            for nb in sub.notebooks:
                for g in nb.grades:
                    if g.manual_score is not None and not g.needs_manual_grade:
                        out[sub.student.id, nb.name, g.name] = {
                            "manual_score": g.manual_score,
                            "extra_credit": g.extra_credit,
                            "auto_score": g.auto_score,
                            "answer": _answer_fingerprint(course, cfg, sub.student.id, assignment, nb.name, g.name),
                        }
    return out


def restore_hand_grades(course: Path, assignment: str, before: dict[tuple[str, str, str], dict]) -> tuple[list[str], list[str]]:
    """Give back the hand grades of ``before`` (from :func:`hand_grades`) whose answer and autograder score are unchanged.

    ``nbgrader autograde --force`` keeps a manual score but marks every part
    that has one as needing a manual grade again, so the LMS export leaves the
    whole submission ungraded until each is confirmed again. A grade whose
    answer cell reads as it did when it was graded, and whose autograder score
    is the same, is confirmed again here; every other one is left for review.

    Returns
    -------
    tuple of list of str
        The grades kept, and the grades to confirm again (each ``"student notebook grade_id: why"``).

    Raises
    ------
    ValueError
        ``course`` has no ``nbgrader_config.py``, or ``assignment`` is not in its gradebook.
    """
    from nbgrader.api import Gradebook, MissingEntry

    cfg = course_config(course)
    kept, review = [], []
    with Gradebook(cfg.CourseDirectory.db_url) as gb:
        for (sid, notebook, gid), was in sorted(before.items()):
            where = f"{sid} {notebook} {gid}"
            try:
                grade = gb.find_grade(gid, notebook, assignment, sid)
            except MissingEntry:
                review.append(f"{where}: no longer in the gradebook")
                continue
            now = _answer_fingerprint(course, cfg, sid, assignment, notebook, gid)
            if was["answer"] is None or now != was["answer"]:
                review.append(f"{where}: the answer is not the one graded by hand (it had {was['manual_score']:g} of its points)")
            elif grade.auto_score != was["auto_score"]:
                review.append(f"{where}: the autograder now gives {grade.auto_score}, before {was['auto_score']}")
            else:
                grade.manual_score, grade.extra_credit, grade.needs_manual_grade = was["manual_score"], was["extra_credit"], False
                kept.append(f"{where}: {was['manual_score']:g} point{'' if was['manual_score'] == 1 else 's'}")
        gb.db.commit()
    return kept, review


def regrade(course: Path, assignment: str, student: str | None = None) -> tuple[int, list[str], list[str]]:
    """``nbgrader autograde <assignment> --force``, keeping the confirmed hand grades of unchanged answers.

    Returns autograde's exit code and :func:`restore_hand_grades`'s two lists.

    Raises
    ------
    ValueError
        ``course`` has no ``nbgrader_config.py``, or ``assignment`` is not in its gradebook.
    """
    before = hand_grades(course, assignment, student)
    command = [sys.executable, "-m", "nbgrader", "autograde", assignment, "--force", *(["--student", student] if student else [])]
    code = subprocess.run(command, cwd=course).returncode
    kept, review = restore_hand_grades(course, assignment, before)
    return code, kept, review


# --- the gradebook on a server, and autograding in parallel -------------------------------


def check_db_url(url: str, argument: str = "--db-url") -> str:
    """``url`` if it names a gradebook nbgrader can use here: ``sqlite:///FILE`` or ``postgresql+psycopg://...``.

    Parameters
    ----------
    url : str
        A SQLAlchemy database URL.
    argument : str
        The name of the argument or variable ``url`` came from, for the error message.

    Returns
    -------
    str
        ``url`` unchanged.

    Raises
    ------
    ValueError
        ``url`` is not a database URL, names another driver, or names no database.
    """
    from sqlalchemy.engine import make_url
    from sqlalchemy.exc import ArgumentError

    hint = "give postgresql+psycopg://USER@HOST/DATABASE (or ...@/DATABASE?host=/socket/folder) or sqlite:////path/gradebook.db"
    try:
        parsed = make_url(url)
    except (ArgumentError, ValueError, TypeError):
        raise ValueError(f"{argument} {url!r} is not a database URL: {hint}") from None
    if parsed.drivername not in GRADEBOOK_DRIVERS:
        raise ValueError(f"{argument} {url!r} names the driver {parsed.drivername!r}: {hint}")
    if not parsed.database:
        raise ValueError(f"{argument} {url!r} names no database: {hint}")
    return url


def gradebook_url(course: Path, db_url: str | None = None) -> str:
    """The URL of the course's gradebook: ``db_url`` if given, else ``COURSE_GRADEBOOK_URL``, else nbgrader_config.py's.

    Raises
    ------
    ValueError
        The URL is not one :func:`check_db_url` accepts, or ``course`` has no ``nbgrader_config.py``.
    """
    if db_url is not None:
        return check_db_url(db_url)
    cfg = course_config(course)
    return check_db_url(str(cfg.CourseDirectory.db_url), GRADEBOOK_ENV if os.environ.get(GRADEBOOK_ENV) else "c.CourseDirectory.db_url")


def open_gradebook(course: Path, db_url: str | None = None):
    """nbgrader's ``Gradebook`` of the course (its tables made if the database is empty).

    Raises
    ------
    ValueError
        The URL is refused (:func:`check_db_url`), or the database cannot be reached (the reason is given).
    """
    from nbgrader.api import Gradebook
    from sqlalchemy.exc import SQLAlchemyError

    url = gradebook_url(course, db_url)
    course_id = str(course_config(course).CourseDirectory.course_id) or "default_course"
    try:
        return Gradebook(url, course_id=course_id)
    except SQLAlchemyError as exc:
        reason = str(exc.orig if getattr(exc, "orig", None) is not None else exc).strip().splitlines()[0]
        raise ValueError(f"the gradebook {url} cannot be opened: {reason}") from None


def gradebook_summary(course: Path, db_url: str | None = None) -> str:
    """One paragraph on the gradebook: its URL, its kind, and how many students, assignments and submissions it holds.

    Raises
    ------
    ValueError
        As :func:`open_gradebook`.
    """
    url = gradebook_url(course, db_url)
    with open_gradebook(course, db_url) as gb:
        subs = sum(len(a.submissions) for a in gb.assignments)
        kind = "PostgreSQL" if url.startswith("postgresql") else "sqlite"
        return f"gradebook: {url} ({kind}): {len(gb.students)} student(s), {len(gb.assignments)} assignment(s), {subs} submission(s)"


def submission_fingerprint(folder: Path) -> str:
    """The SHA-256 of a submission folder: every file's path and contents.

    Raises
    ------
    ValueError
        ``folder`` is not a folder.
    """
    if not Path(folder).is_dir():
        raise ValueError(f"{folder} is not a submission folder")
    digest = hashlib.sha256()
    for path in sorted(p for p in Path(folder).rglob("*") if p.is_file()):
        digest.update(path.relative_to(folder).as_posix().encode() + b"\0")
        digest.update(hashlib.sha256(path.read_bytes()).digest())
    return digest.hexdigest()


def pending_submissions(course: Path, assignment: str) -> tuple[list[tuple[str, str]], list[str]]:
    """The submissions of ``assignment`` to grade (never graded by ``course.py autograde``, or changed since), and the rest.

    Returns
    -------
    tuple
        ``[(student, fingerprint), ...]`` to grade, and the students whose submission is graded as it is.

    Raises
    ------
    ValueError
        ``assignment`` has no submissions in ``submitted/``.
    """
    folders = sorted(f for f in (course / "submitted").glob(f"*/{assignment}") if f.is_dir())
    if not folders:
        raise ValueError(f"no submissions of {assignment} in {course / 'submitted'}: collect or place them first")
    todo, done = [], []
    for folder in folders:
        student, fingerprint = folder.parent.name, submission_fingerprint(folder)
        try:
            graded = json.loads((course / STATE / assignment / f"{student}.json").read_text()).get("fingerprint")
        except (OSError, ValueError, AttributeError):
            graded = None
        (done.append(student) if graded == fingerprint else todo.append((student, fingerprint)))
    return todo, done


def autograde_events(course: Path, assignment: str | None = None) -> list[dict]:
    """Every grading ``course.py autograde`` finished, oldest first (``{"assignment", "student", "fingerprint", "time", "seconds"}``).

    ``seconds`` is the wall time of the submission's ``nbgrader autograde`` process (absent in older logs).

    Raises
    ------
    ValueError
        The event log has a line that is not JSON (it names the line).
    """
    path = course / STATE / EVENTS
    if not path.exists():
        return []
    events = []
    for number, line in enumerate(path.read_text().splitlines(), 1):
        try:
            event = json.loads(line)
        except ValueError:
            raise ValueError(f"{path} line {number} is not JSON: {line[:80]!r}") from None
        if assignment is None or event.get("assignment") == assignment:
            events.append(event)
    return events


def _record_graded(course: Path, assignment: str, student: str, fingerprint: str, seconds: float) -> None:
    """Note a finished grading: the student's state file (replaced at once), then one line of the event log (under a lock)."""
    folder = course / STATE / assignment
    folder.mkdir(parents=True, exist_ok=True)
    event = {"assignment": assignment, "student": student, "fingerprint": fingerprint, "time": time.time(), "seconds": round(seconds, 3)}
    partial = folder / f".{student}.json.{os.getpid()}"
    partial.write_text(json.dumps(event) + "\n")
    os.replace(partial, folder / f"{student}.json")
    with open(course / STATE / EVENTS, "a") as log:
        fcntl.flock(log, fcntl.LOCK_EX)
        log.write(json.dumps(event) + "\n")


def parse_shard(text: str) -> tuple[int, int]:
    """``"I/N"`` as ``(I, N)``: shard I of N, whole numbers with ``0 <= I < N``.

    Parameters
    ----------
    text : str
        For example ``"3/8"``; Kubernetes' Indexed Job gives I as ``$JOB_COMPLETION_INDEX``.

    Returns
    -------
    tuple of int
        ``(index, count)``.

    Raises
    ------
    ValueError
        ``text`` is not two whole numbers I/N with ``0 <= I < N`` (the message names ``--shard``).
    """
    found = re.fullmatch(r"\s*(\d+)\s*/\s*(\d+)\s*", text) if isinstance(text, str) else None
    if not found or not int(found[1]) < int(found[2]):
        raise ValueError(f"--shard must be I/N, two whole numbers with 0 <= I < N (for example 0/4), not {text!r}")
    return int(found[1]), int(found[2])


def shard_of(student: str, count: int) -> int:
    """The shard (0 to ``count - 1``) that ``student``'s submissions belong to: a hash of the id, the same on every machine.

    A student stays in their shard when others join the roster, so each machine's part of the
    ``autograde-state`` record stays its own.

    Raises
    ------
    ValueError
        ``count`` is not a whole number of at least 1, or ``student`` is not a non-empty string.
    """
    if isinstance(count, bool) or not isinstance(count, int) or count < 1:
        raise ValueError(f"count must be a whole number of at least 1, not {count!r}")
    if not isinstance(student, str) or not student:
        raise ValueError(f"student must be a non-empty roster id, not {student!r}")
    return int.from_bytes(hashlib.sha256(student.encode()).digest()[:8], "big") % count


def autograde(
    course: Path, assignment: str, workers: int = 1, db_url: str | None = None, report=print, shard: tuple[int, int] | None = None
) -> dict[str, list]:
    """Autograde the missing and changed submissions of ``assignment`` in ``workers`` processes at once.

    Each submission is one ``nbgrader autograde ASSIGNMENT --student ID --force``
    process (the course's preprocessors, so students' code runs in the grading
    sandbox), all writing to the one gradebook. A submission counts as graded
    once its process has finished: its fingerprint is then written to
    ``autograde-state/ASSIGNMENT/ID.json`` and one line to
    ``autograde-state/events.jsonl``. A worker killed mid-submission records
    nothing, so the next run grades that submission again (``--force`` clears
    what it left), and a submission changed after its grading is graded again;
    the others are skipped. With sqlite and several workers each process waits
    up to 60 s for the file's write lock.

    Parameters
    ----------
    course : Path
        The nbgrader course folder.
    assignment : str
        For example ``ch06``.
    workers : int
        How many submissions are graded at once (at least 1).
    db_url : str, optional
        The gradebook's URL (default: ``COURSE_GRADEBOOK_URL``, else the course's ``nbgrader_config.py``).
    report : callable
        Called with one line of progress per submission.
    shard : tuple of int, optional
        ``(I, N)``: grade only the students of shard I of N (:func:`shard_of`), for N machines grading at once
        into one PostgreSQL gradebook (default: every student).

    Returns
    -------
    dict
        ``graded`` and ``skipped`` (student ids), ``failed`` (``(student, exit code, last lines of its log)``).

    Raises
    ------
    ValueError
        ``workers`` is not a whole number of at least 1; ``shard`` is not ``(I, N)`` with ``0 <= I < N``;
        the gradebook URL is refused or cannot be opened; ``assignment`` is not in the gradebook or has no submissions.
    """
    from nbgrader.api import MissingEntry

    if isinstance(workers, bool) or not isinstance(workers, int) or workers < 1:
        raise ValueError(f"--workers must be a whole number of at least 1, not {workers!r}")
    if shard is not None:
        if not (isinstance(shard, tuple) and len(shard) == 2 and all(type(v) is int for v in shard) and 0 <= shard[0] < shard[1]):
            raise ValueError(f"--shard must be I/N, two whole numbers with 0 <= I < N (for example 0/4), not {shard!r}")
    url = gradebook_url(course, db_url)
    with open_gradebook(course, url) as gb:  # the tables and the course row exist before the workers start
        try:
            gb.find_assignment(assignment)
        except MissingEntry:
            raise ValueError(
                f"assignment {assignment!r} is not in the gradebook {url}: run `nbgrader generate_assignment {assignment}`"
            ) from None
    todo, skipped = pending_submissions(course, assignment)
    if shard is not None:
        todo = [job for job in todo if shard_of(job[0], shard[1]) == shard[0]]
        skipped = [s for s in skipped if shard_of(s, shard[1]) == shard[0]]
    if url.startswith("sqlite") and workers > 1 and "timeout=" not in url:
        url += ("&" if "?" in url else "?") + "timeout=60"
    logs = course / STATE / assignment / "logs"
    logs.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, GRADEBOOK_ENV: url, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"}
    for student in skipped:
        report(f"skipped {student}: graded already, unchanged since")

    def grade(job: tuple[str, str]) -> tuple[str, int, str]:
        student, fingerprint = job
        command = [sys.executable, "-m", "nbgrader", "autograde", assignment, "--student", student, "--force",
                   f"--CourseDirectory.db_url={url}"]
        began = time.perf_counter()
        with open(logs / f"{student}.log", "w") as log:
            code = subprocess.run(command, cwd=course, env=env, stdout=log, stderr=subprocess.STDOUT).returncode
        if code == 0:
            _record_graded(course, assignment, student, fingerprint, time.perf_counter() - began)
        tail = "" if code == 0 else "\n".join((logs / f"{student}.log").read_text(errors="replace").splitlines()[-5:])
        report(f"graded {student}" if code == 0 else f"FAILED {student} (exit code {code}; log {logs / f'{student}.log'})")
        return student, code, tail

    with ThreadPoolExecutor(max_workers=workers) as pool:
        results = list(pool.map(grade, todo))
    return {
        "graded": [s for s, code, _ in results if code == 0],
        "skipped": skipped,
        "failed": [(s, code, tail) for s, code, tail in results if code != 0],
    }


#: What ``course.py sandbox`` tries from inside the sandbox: (what, Python expression over the course folder ``c``).
SANDBOX_TRIES = [
    ("read the course secret", "open(c + '/course_secret.txt').read()"),
    ("list the course folder (submissions, gradebook)", "os.listdir(c)"),
    ("write into the course folder", "open(c + '/sandbox-probe.txt', 'w').write('x')"),
    ("write into the book's clone", "open(book + '/attnlib/sandbox-probe.txt', 'w').write('x')"),
    ("open a network connection", "socket.create_connection(('127.0.0.1', 22), timeout=2)"),
    ("fill the scratch folder past its cap (1 MiB files)", "[open(f'fill{i}', 'wb').write(b'x' * (1 << 20)) for i in range(1 << 16)]"),
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



def _report(done: list[str], done_prefix: str, problems: list[str], problem_prefix: str, summary: str) -> None:
    """Print each line of ``done`` (standard output) and of ``problems`` (standard error), then ``summary`` if any problem."""
    for line in done:
        print(f"{done_prefix} {line}")
    for line in problems:
        print(f"{problem_prefix} {line}", file=sys.stderr)
    if problems:
        print(summary, file=sys.stderr)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--course", type=Path, default=Path.cwd(), help="the nbgrader course folder (default: here)")
    parser.add_argument(
        "--db-url",
        help=f"the gradebook: postgresql+psycopg://USER@HOST/DATABASE or sqlite:///FILE (default: ${GRADEBOOK_ENV}, "
        "else nbgrader_config.py's)",
    )
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
    again = sub.add_parser("regrade", help="autograde an assignment again (--force), keeping the grades given by hand")
    again.add_argument("assignment")
    again.add_argument("--student", help="only this student's submission (default: all)")
    book = sub.add_parser("gradebook", help="say which gradebook the course uses and what it holds")
    book.set_defaults(assignment=None)
    grade_cmd = sub.add_parser("autograde", help="autograde the missing and changed submissions, several at once")
    grade_cmd.add_argument("assignment")
    grade_cmd.add_argument("--workers", default="1", help="how many submissions to grade at once (default 1)")
    grade_cmd.add_argument("--shard", help="I/N: only shard I of N of the students (0 <= I < N), one machine's part")
    args = parser.parse_args(argv)
    course = args.course.resolve()
    try:
        if args.db_url is not None:
            os.environ[GRADEBOOK_ENV] = check_db_url(args.db_url)
        if args.command == "gradebook":
            print(gradebook_summary(course))
            return 0
        if args.command == "autograde":
            try:
                workers = int(args.workers)
            except ValueError:
                raise ValueError(f"--workers must be a whole number of at least 1, not {args.workers!r}") from None
            shard = parse_shard(args.shard) if args.shard is not None else None
            done = autograde(course, args.assignment, workers, shard=shard)
            for student, code, tail in done["failed"]:
                print(f"course.py autograde: {student} failed (exit code {code}):\n{tail}", file=sys.stderr)
            part = f" (shard {shard[0]}/{shard[1]})" if shard else ""
            print(
                f"{args.assignment}{part}: {len(done['graded'])} graded, {len(done['skipped'])} unchanged since graded, "
                f"{len(done['failed'])} failed" + (" (run the same command again to grade them)" if done["failed"] else "")
            )
            return 1 if done["failed"] else 0
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
            _report(
                placed, "placed", problems, "could not place",
                f"course.py place: nothing placed, {len(problems)} download(s) could not be placed. Add the number "
                "the LMS puts in its names as a column lms_user_id of the roster, or rename the files, and run it again.",
            )
            return 1 if problems else 0
        if args.command == "regrade":
            code, kept, review = regrade(course, args.assignment, args.student)
            _report(
                kept, "kept the hand grade of", review, "grade again in the Formgrader:",
                f"course.py regrade: {len(review)} hand-graded part(s) need grading again (Formgrader, Manual Grading); "
                "until then the LMS export leaves their submissions ungraded.",
            )
            return code
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

#!/usr/bin/env python3
"""Rewrite the visible check cells of the chapters' exercises; safe to run again.

* an implement exercise's check ``assert checks.check_x(fn, seed=seed)``
  becomes ``checks.check_x(fn, seed=seed).require()``, which fails with one
  line under the check's report instead of an ``AssertionError`` traceback;
* a by-hand exercise's check, which tested only the shape of the answer,
  becomes ``checks.check_by_hand("4.1", globals(), seed=seed).require()``,
  which says per number whether it is right, without the expected value.

Only the test cells (grade ids ``chNN-exK-test``) of by-hand and implement
exercises change, and only their code after the first comment line;
nbgrader's hidden tests are added to these cells later by
``instructor/make_assignments.py``, after the visible check.

    python3 tools/exercise_checks.py          # rewrite chapters/*.ipynb
    python3 tools/exercise_checks.py --check  # exit 1 if a chapter is not rewritten yet
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

import nbformat

from attnlib.variants import EXERCISES

ROOT = Path(__file__).resolve().parent.parent
#: By-hand exercises: their answer cells define numbers that check_by_hand knows.
BY_HAND = tuple(n for n, e in EXERCISES.items() if e.kind == "by-hand")
_ASSERT_CHECK = re.compile(r"^assert (checks\.check_\w+\((?:[^()]|\([^()]*\))*\))\s*$", re.S | re.M)


def exercise_of(grade_id: str) -> str | None:
    """``"ch04-ex1-test"`` -> ``"4.1"``; None for other cells."""
    m = re.fullmatch(r"ch(\d\d)-ex(\d+)-test", grade_id)
    return f"{int(m.group(1))}.{m.group(2)}" if m else None


def rewritten(source: str, exercise: str) -> str:
    """The new source of one test cell (unchanged if it is already rewritten or is no check)."""
    head, _, body = source.partition("\n")
    if not head.startswith("#"):
        head, body = "", source
    if exercise in BY_HAND:
        new = f'checks.check_by_hand("{exercise}", globals(), seed=seed).require()'
    else:
        m = _ASSERT_CHECK.search(body)
        if not m:
            return source
        new = _ASSERT_CHECK.sub(lambda m: m.group(1) + ".require()", body).rstrip("\n")
    return f"{head}\n{new}" if head else new


def with_checks_import(source: str) -> str:
    """A setup cell that imports ``variants`` from attnlib imports ``checks`` too."""
    if re.search(r"^from attnlib import .*\bchecks\b", source, re.M):
        return source
    return re.sub(r"^from attnlib import variants$", "from attnlib import checks, variants", source, flags=re.M)


def new_sources(nb: nbformat.NotebookNode) -> list[tuple[nbformat.NotebookNode, str]]:
    """(cell, its new source) for every exercise cell this script changes."""
    out = []
    for cell in nb.cells:
        grade_id = cell.metadata.get("nbgrader", {}).get("grade_id", "")
        if cell.cell_type != "code":
            continue
        if re.fullmatch(r"ch\d\d-setup", grade_id):
            new = with_checks_import(cell.source)
        elif (exercise := exercise_of(grade_id)) is not None:
            new = rewritten(cell.source, exercise)
        else:
            continue
        if new != cell.source:
            out.append((cell, new))
    return out


def rewrite(path: Path) -> bool:
    """Rewrite one chapter in place; True if it changed."""
    nb = nbformat.read(path, as_version=4)
    changed = False
    for cell, new in new_sources(nb):
        cell.source, changed = new, True
    if changed:
        path.write_text(nbformat.writes(nb) + "\n", encoding="utf-8")
    return changed


def main(argv: list[str]) -> int:
    check_only = "--check" in argv
    stale = []
    for path in sorted((ROOT / "chapters").glob("[0-9][0-9]-*.ipynb")):
        if check_only:
            nb = nbformat.read(path, as_version=4)
            stale += [f"{path.name}: {cell.metadata['nbgrader']['grade_id']}" for cell, _ in new_sources(nb)]
        elif rewrite(path):
            print(f"rewrote {path.relative_to(ROOT)}")
    if stale:
        print("not rewritten yet (run python3 tools/exercise_checks.py):\n  " + "\n  ".join(stale))
    return 1 if stale else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

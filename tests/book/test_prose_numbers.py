"""Every number the prose states is one the notebook computed.

For each chapter (every ``chapters/NN-*.ipynb``, plus the cheat sheet) the test
reads the Markdown cells and collects

* every decimal number with two or more decimals (``0.4555``, ``1.4142``), and
* every integer written with thousands separators (``1,048,576`` or the LaTeX
  ``1{,}048{,}576``): the counts of the post's checks,

and asserts that each appears in the same notebook's executed outputs.

Exercises print nothing that would give their answers away, so a number in an
exercise's text may instead come from the exercise's own code: a literal of
its solution or grading cells, or a value its solution cells compute. Those
values are held to attnlib by the hidden tests that tests/grading/test_nbgrader.py
runs (for example ``masked_row = [0.5875, 0.0, 0.4125]`` must match
``attnlib.attention`` to 5e-4), so the chain from prose to attnlib stays closed.

The only other exceptions are listed in :data:`QUOTED_ROUNDED_VALUES`: the
source post's own hand-rounded values, which a chapter quotes in order to
explain where they came from (the exact value next to them is printed).
"""

from __future__ import annotations

import re
from pathlib import Path

import nbformat
import numpy as np
import pytest
from support.notebooks import chapter_notebooks, output_text
from support.paths import CHAPTERS

NOTEBOOKS = [*chapter_notebooks(), CHAPTERS / "cheatsheet.ipynb"]

#: Per chapter: numbers quoted from the post as the post rounded them by hand.
#: Each is discussed in the chapter next to the exact value, which is printed.
QUOTED_ROUNDED_VALUES: dict[str, set[str]] = {
    # the post's first weight, which chapter 4 explains (the code prints 0.4555)
    "04-full-formula": {"0.4556"},
    # the post's e^0.3536 and row 1 of A, rounded by hand (chapter 6 recomputes them)
    "06-walkthrough": {"1.4240", "0.4556", "0.2247"},
    "07-unscaled-vs-scaled": {"0.4556", "0.2247"},
    "12-one-story": {"0.4556", "0.2247", "0.616", "0.385"},
}

DECIMAL = re.compile(r"(?<![\w.])(\d+\.\d{2,})(?![\d])")
GROUPED_INTEGER = re.compile(r"(?<![\w.,}])(\d{1,3}(?:(?:,|\{,\})\d{3})+)(?![\d])")


def prose_numbers(markdown: str) -> set[str]:
    """Decimals with two or more places and thousands-grouped integers in a Markdown text.

    Link targets, inline code and raw HTML style blocks are skipped: they name files,
    calls and layout, not results.

    >>> sorted(prose_numbers("weights $[0.4555, 0.2246]$, $1{,}048{,}576$ and 20,000 draws; `f(0.25)`"))
    ['0.2246', '0.4555', '1,048,576', '20,000']
    """
    text = re.sub(r"<style>.*?</style>", " ", markdown, flags=re.S)
    text = re.sub(r"`[^`]*`", " ", text)
    text = re.sub(r"\]\([^)]*\)", "]", text)
    found = set(DECIMAL.findall(text))
    found |= {m.replace("{,}", ",") for m in GROUPED_INTEGER.findall(text)}
    return found


def appears_in(number: str, outputs: str) -> bool:
    """A prose number is shown by the outputs if its digits appear there as printed.

    An integer may be printed with or without its thousands separators.
    """
    if "," in number:
        return number in outputs or re.search(rf"(?<![\d,]){number.replace(',', '')}(?!\d)", outputs) is not None
    # further digits may follow only if they are zeros: 0.25 is shown by 0.2500, not by 0.2513
    return re.search(rf"(?<!\d){re.escape(number)}(?!\d*[1-9])", outputs) is not None


def markdown_text(path: Path, exercises: bool | None = None) -> str:
    """The Markdown of a notebook: all of it, only the exercises' cells, or only the rest."""
    nb = nbformat.read(path, as_version=4)
    cells = [c for c in nb.cells if c.cell_type == "markdown"]
    if exercises is not None:
        cells = [c for c in cells if is_exercise_cell(c) == exercises]
    return "\n".join(c.source for c in cells)


def is_exercise_cell(cell) -> bool:
    return "-exercise-" in cell.get("id", "")


def exercise_code_numbers(path: Path) -> str:
    """The exercises' code and every number their solution cells compute, as one searchable text.

    The setup and solution cells are run in a fresh namespace (they are plain
    numpy and attnlib code); each number they leave behind is written at 1 to 6
    decimals and as an integer with and without thousands separators.
    """
    nb = nbformat.read(path, as_version=4)
    cells = [c for c in nb.cells if c.cell_type == "code" and is_exercise_cell(c)]
    namespace: dict = {}
    for c in cells:
        if c.id.endswith(("-exercise-01", "-exercise-seed")) or "### BEGIN SOLUTION" in c.source:
            if "def " not in c.source:
                exec(compile(c.source, f"{path.name}:{c.id}", "exec"), namespace)  # noqa: S102
    shown = [c.source for c in cells]
    for name, value in namespace.items():
        if name.startswith("_"):
            continue
        try:
            values = np.asarray(value, dtype=float).ravel()
        except (TypeError, ValueError):
            continue
        for v in values[:1000]:
            shown += [f"{v:.{k}f}" for k in range(1, 7)]
            if float(v).is_integer():
                shown += [f"{int(v)}", f"{int(v):,}"]
    return "\n".join(shown)


def test_the_chapters_state_numbers_the_test_reads():
    """A guard against a parser that silently finds nothing."""
    found = {path.stem: prose_numbers(markdown_text(path)) for path in NOTEBOOKS if path.exists()}
    assert sum(len(v) for v in found.values()) > 80, found
    assert {"0.4555", "0.6155", "1,048,576"} <= set().union(*found.values())


def test_the_parser_finds_decimals_and_grouped_integers():
    assert prose_numbers("$e^{0.7071} \\approx 2.0281$, 0.5, 3 tokens, 67,108,864 each") == {"0.7071", "2.0281", "67,108,864"}
    assert prose_numbers("<style>\np { font-size: 0.78rem; }\n</style>\nweight 0.3302") == {"0.3302"}
    assert appears_in("1,048,576", "P = 1048576") and appears_in("1,048,576", "1,048,576 parameters")
    assert not appears_in("0.4556", "[0.4555 0.2246]")
    assert not appears_in("1,024", "10240")
    assert appears_in("0.25", "[0.2500 0.75]") and not appears_in("0.25", "0.2513")


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_every_prose_number_is_in_the_outputs(path, executed):
    numbers = prose_numbers(markdown_text(path, exercises=False))
    nb, _ = executed(path)
    shown = output_text(nb)
    allowed = QUOTED_ROUNDED_VALUES.get(path.stem, set())
    missing = sorted(n for n in numbers - allowed if not appears_in(n, shown))
    assert not missing, f"{path.name}: the prose states numbers its outputs never show: {missing}"

    in_exercises = prose_numbers(markdown_text(path, exercises=True))
    shown_with_solutions = shown + "\n" + exercise_code_numbers(path)
    missing = sorted(n for n in in_exercises - allowed if not appears_in(n, shown_with_solutions))
    assert not missing, f"{path.name}: the exercises state numbers that neither the outputs nor their solutions give: {missing}"


def test_quoted_rounded_values_are_quoted_and_not_computed(executed):
    """Each exception is really in its chapter's prose and really differs from what the code prints."""
    for stem, values in QUOTED_ROUNDED_VALUES.items():
        path = CHAPTERS / f"{stem}.ipynb"
        assert values <= prose_numbers(markdown_text(path)), f"{stem}: an exception is no longer quoted"
        shown = output_text(executed(path)[0])
        assert not [v for v in values if appears_in(v, shown)], f"{stem}: an exception is computed after all; drop it"

"""Exercises in the web book that do not look solved: the model solution and the check's result folded.

The chapters hold the model solutions (nbgrader's ``### BEGIN SOLUTION`` blocks), and the book build
runs them, so every self-check printed ``RIGHT …`` or ``PASS …`` on the page before the reader had done
anything, and the solution sat under myst-nb's generic "Show code cell source" toggle. This extension
changes only what the HTML builders (the web book and the single page the PDF is printed from) make
of two kinds of code cell, found by their nbgrader metadata (the notebooks are not changed):

* an answer cell (``"solution": true``): its source goes into a closed toggle labelled
  :data:`SOLUTION_LABEL`;
* a check cell (``"grade": true``): its source and its output each go into a closed toggle of
  their own (:data:`CHECK_SOURCE_LABEL`, :data:`CHECK_OUTPUT_LABEL`), so that what the check printed
  for the model solution is shown only to a reader who opens it.

The toggles are ``<details>`` elements in myst-nb's own style (classes ``hide`` and ``above-input``
or ``below-input``), with the label as the summary's text and accessible name, and the cell gets the
class :data:`SOLUTION_CLASS` or :data:`CHECK_CLASS`. A closed ``<details>`` prints nothing, and
``pdf/print.css`` leaves these cells out, so the PDF prints neither the code solutions nor the checks'
results (``tests/book/test_pdf.py``). The written model answers and the "Solution" boxes are MyST dropdowns, closed in the web
book already; the PDF prints them open, at the end of each exercise, as a printed textbook does.
"""

from __future__ import annotations

from html import escape
from typing import Any

from docutils import nodes
from sphinx.application import Sphinx
from sphinx.transforms.post_transforms import SphinxPostTransform

#: The summary of a folded model solution, closed and open.
SOLUTION_LABEL = "Solution (try the exercise first)"
SOLUTION_LABEL_OPEN = "Hide the solution"
#: The summary of a check's folded source, closed and open.
CHECK_SOURCE_LABEL = "Show the self-check's code"
CHECK_SOURCE_LABEL_OPEN = "Hide the self-check's code"
#: The summary of a check's folded result, closed and open.
CHECK_OUTPUT_LABEL = "What the self-check prints for the model solution (run yours first)"
CHECK_OUTPUT_LABEL_OPEN = "Hide the self-check's result"
#: The summary of what an answer cell itself prints, folded likewise.
SOLUTION_OUTPUT_LABEL = "What the model solution prints"
#: Class of an answer cell's container, and of its toggle.
SOLUTION_CLASS = "exercise-solution"
#: Class of a check cell's container.
CHECK_CLASS = "exercise-check"


class ExerciseToggle(nodes.Element):
    """A closed ``<details>`` with a label of its own (``prompt_show``, ``prompt_hide``)."""


def _visit_toggle(self: Any, node: ExerciseToggle) -> None:
    classes = " ".join(["admonition", "hide", *node["classes"]])
    self.body.append(
        f'<details class="{classes}">\n<summary>\n'
        f'<p class="collapsed admonition-title">{escape(node["prompt_show"])}</p>\n'
        f'<p class="expanded admonition-title">{escape(node["prompt_hide"])}</p>\n'
        "</summary>\n"
    )


def _depart_toggle(self: Any, node: ExerciseToggle) -> None:
    self.body.append("</details>\n")


def exercise_role(metadata: dict[str, Any]) -> str | None:
    """``"solution"``, ``"check"`` or ``None`` for a code cell with this metadata.

    Parameters
    ----------
    metadata : dict
        The cell's metadata, as myst-nb keeps it on the cell's container.

    Returns
    -------
    str or None
        ``"solution"`` for nbgrader's answer cells, ``"check"`` for its graded test cells.

    Raises
    ------
    TypeError
        If ``metadata`` is not a mapping.

    Examples
    --------
    >>> exercise_role({"nbgrader": {"solution": True, "grade": False}})
    'solution'
    >>> exercise_role({"nbgrader": {"solution": False, "grade": True}}), exercise_role({"tags": ["exercise"]})
    ('check', None)
    """
    if not isinstance(metadata, dict):
        raise TypeError(f"metadata must be a dict, got {type(metadata).__name__}")
    grader = metadata.get("nbgrader") or {}
    if grader.get("solution"):
        return "solution"
    if grader.get("grade"):
        return "check"
    return None


def _fold(cell: nodes.Element, part: nodes.Element, show: str, hide: str, where: str, extra: list[str]) -> None:
    toggle = ExerciseToggle(prompt_show=show, prompt_hide=hide)
    toggle["classes"] += [where, *extra]
    cell.replace(part, toggle)
    toggle.append(part)


class FoldExercises(SphinxPostTransform):
    """Fold answer cells' sources and check cells' sources and results (before myst-nb's own folding)."""

    default_priority = 198  # myst-nb's HideInputCells is 199: the cells folded here leave it nothing to do
    formats = ("html",)

    def run(self, **kwargs: Any) -> None:
        for cell in list(self.document.findall(nodes.container)):
            if cell.get("nb_element") != "cell_code" or not cell.children:
                continue
            role = exercise_role(cell.get("cell_metadata") or {})
            if role is None:
                continue
            cell.attributes.pop("hide_mode", None)
            source = cell.children[0] if cell.children[0].get("nb_element") == "cell_code_source" else None
            output = cell.children[-1] if cell.children[-1].get("nb_element") == "cell_code_output" else None
            if role == "solution":
                cell["classes"].append(SOLUTION_CLASS)
                if source is not None:
                    _fold(cell, source, SOLUTION_LABEL, SOLUTION_LABEL_OPEN, "above-input", [SOLUTION_CLASS])
                if output is not None:
                    _fold(cell, output, SOLUTION_OUTPUT_LABEL, CHECK_OUTPUT_LABEL_OPEN, "below-input", [])
            else:
                cell["classes"].append(CHECK_CLASS)
                if source is not None:
                    _fold(cell, source, CHECK_SOURCE_LABEL, CHECK_SOURCE_LABEL_OPEN, "above-input", [])
                if output is not None:
                    _fold(cell, output, CHECK_OUTPUT_LABEL, CHECK_OUTPUT_LABEL_OPEN, "below-input", [CHECK_CLASS])


def setup(app: Sphinx) -> dict[str, Any]:
    app.add_node(ExerciseToggle, html=(_visit_toggle, _depart_toggle))
    app.add_post_transform(FoldExercises)
    return {"parallel_read_safe": True, "parallel_write_safe": True, "version": "1"}

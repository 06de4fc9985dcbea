"""The positional explorer (chapter 11): the sinusoidal encoding of one position, for a chosen d_model.

Front end: ``static/positional.js``.

Examples
--------
>>> ex = positional_explorer()
>>> ex.table().round(4)[:3].tolist()
[[0.0, 1.0], [0.8415, 0.5403], [0.9093, -0.4161]]
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
from traitlets import Dict, Int, List

from ...core import NO_SCALING, scaled_scores
from ...positional import positional_frequencies, sinusoidal_encoding
from ..base import Explorer, checked_trait
from ..registry import factory
from ..settings import check_choice
from ..snapshot import facts, flex, fmt, matrix_text, table_html

__all__ = ["D_MODEL_CHOICES", "N_POSITIONS", "PositionalExplorer", "check_position", "positional_data", "positional_explorer",
           "positional_similarity"]  # fmt: skip

N_POSITIONS = 12
D_MODEL_CHOICES = (2, 4, 6, 8, 10, 12, 14, 16)


def check_position(value: Any) -> int:
    """A position ``0 ... N_POSITIONS - 1``.

    Raises
    ------
    ValueError
        ``value`` is not a position of the table; the message (of a ``SettingError``, a ``ValueError``) starts with the
        setting's name.
    """
    return check_choice("position", value, tuple(range(N_POSITIONS)))


def positional_data() -> dict[str, Any]:
    """PE tables ``(N_POSITIONS, d_model)`` and frequencies for every d_model choice, keyed by ``str(d_model)``."""
    return {
        "tables": {str(d): sinusoidal_encoding(N_POSITIONS, d).tolist() for d in D_MODEL_CHOICES},
        "frequencies": {str(d): positional_frequencies(d).tolist() for d in D_MODEL_CHOICES},
    }


def positional_similarity(table: np.ndarray, position: int) -> np.ndarray:
    """Dot products of ``PE(position)`` with every row of the table, shape ``(N_POSITIONS,)``.

    Raises
    ------
    ValueError
        Never for the settings its explorer has checked: this is the explorer's plumbing, which checks nothing itself
        (call it with other input and numpy's own errors may come). Use the explorer's settings instead.
    """
    return scaled_scores(table[position : position + 1], table, scale=NO_SCALING)[0]


def positional_snapshot(position: int, d_model: int, pe: np.ndarray, freqs: Sequence[float], similarity: np.ndarray) -> tuple[str, str]:
    """The PE table (row t outlined), the dot products with PE(t), and the text summary."""
    n = pe.shape[0]
    cols = [f"{'sin' if c % 2 == 0 else 'cos'} \u03c9{c // 2}" for c in range(d_model)]
    rows = [f"t={p}" for p in range(n)]
    tables = flex(
        table_html(
            pe,
            rows,
            cols,
            name="pe",
            title=f"PE for positions 0\u2013{n - 1}, d_model = {d_model} (row t outlined)",
            vmin=-1.0,
            vmax=1.0,
            highlight_row=position,
        ),  # fmt: skip
        table_html(
            np.asarray(similarity)[:, None], rows, [f"PE(t={position})\u00b7PE"], name="similarity", title="dot product with every position"
        ),
    )
    text = (
        f"PE(t={position}) = (" + ", ".join(fmt(float(v)) for v in pe[position]) + "). "
        "Frequencies \u03c9 = " + ", ".join(fmt(float(w)) for w in freqs) + "."
    )
    return facts(text) + tables, text + "\n" + matrix_text(pe, rows)


class PositionalExplorer(Explorer, kind="positional", module="positional.js"):
    """Chapter 11: the sinusoidal encoding of one position, for a chosen d_model."""

    STATE = ("position", "d_model")
    SETTABLE = ("title", "position", "d_model")
    N_POSITIONS = N_POSITIONS

    tables = Dict().tag(sync=True)
    frequencies = Dict().tag(sync=True)
    d_model_choices = List(Int()).tag(sync=True)
    position = checked_trait(1)
    d_model = checked_trait(2)

    def __init__(self) -> None:
        super().__init__(title="Sinusoidal positions", d_model_choices=list(D_MODEL_CHOICES), position=1, d_model=2, **positional_data())

    def _check_position(self, value: Any, now: Callable[[str], Any]) -> int:
        return check_position(value)

    def _check_d_model(self, value: Any, now: Callable[[str], Any]) -> int:
        return check_choice("d_model", value, D_MODEL_CHOICES)

    def table(self) -> np.ndarray:
        """``sinusoidal_encoding(N_POSITIONS, d_model)``."""
        return np.array(self.tables[str(self.d_model)], dtype=float)

    @property
    def result(self) -> np.ndarray:
        """Dot products of ``PE(position)`` with every position, shape ``(N_POSITIONS,)``."""
        return self._similarity

    def _update(self) -> str:
        self._similarity = positional_similarity(self.table(), self.position)
        return ""

    def _snapshot(self) -> tuple[str, str]:
        return positional_snapshot(self.position, self.d_model, self.table(), self.frequencies[str(self.d_model)], self._similarity)

    @classmethod
    def golden_cases(cls) -> list[dict[str, Any]]:
        """``positionalViews`` for every d_model and position."""
        cases = []
        for table in positional_data()["tables"].values():
            for p in range(N_POSITIONS):
                ref = positional_similarity(np.asarray(table), p)
                cases.append({"fn": "positionalViews", "args": [table, p], "expected": {"similarity": ref.tolist()}})
        return cases


@factory
def positional_explorer() -> PositionalExplorer:
    """Chapter 11: move the position t and the width d_model of the sinusoidal encoding.

    Examples
    --------
    >>> ex = positional_explorer()
    >>> ex.table().round(4)[:3].tolist()
    [[0.0, 1.0], [0.8415, 0.5403], [0.9093, -0.4161]]
    """
    return PositionalExplorer()

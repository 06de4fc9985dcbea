"""The scale comparison explorer (chapter 7): stretch the running example, compare unscaled with scaled weights.

Front end: ``static/scale_comparison.js``.

Examples
--------
>>> raw, scaled = scale_comparison_explorer().results()
>>> raw.weights.round(4)[0].tolist(), scaled.weights.round(4)[0].tolist()
([0.5065, 0.1863, 0.3072], [0.4555, 0.2246, 0.3199])
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
from traitlets import Dict, List, Unicode

from ...core import NO_SCALING, SQRT_D_K, TOKENS, AttentionResult, attention, running_example
from ..base import Explorer, checked_trait, matrix_trait
from ..registry import factory
from ..settings import check_real_range, check_tokens, check_X, same_shape
from ..snapshot import facts, flex, fmt, matrix_text, table_html

__all__ = ["LENGTH_RANGE", "ScaleComparisonExplorer", "check_length", "scale_comparison_explorer", "stretched_attention"]

#: Range and step of the length factor.
LENGTH_RANGE = {"min": 0.25, "max": 6.0, "step": 0.25}


def check_length(value: Any) -> float:
    """The stretch factor: a finite number in [0.25, 6].

    Raises
    ------
    ValueError
        ``value`` is not a finite number in the slider's range; the message (of a ``SettingError``, a ``ValueError``)
        starts with the setting's name.

    Examples
    --------
    >>> check_length(2)
    2.0
    """
    return check_real_range("length", value, LENGTH_RANGE["min"], LENGTH_RANGE["max"])


def stretched_attention(X: Any, length: float) -> tuple[AttentionResult, AttentionResult]:
    """Attention of ``length * X`` with itself (W = I): without scaling, and divided by sqrt(d_k).

    Raises
    ------
    ValueError
        Never for the settings its explorer has checked: this is the explorer's plumbing, which checks nothing itself
        (call it with other input and numpy's own errors may come). Use the explorer's settings instead.

    Examples
    --------
    >>> raw, scaled = stretched_attention(running_example(), 2.0)
    >>> round(float(raw.weights.max()), 4) > round(float(scaled.weights.max()), 4)
    True
    """
    Xc = np.asarray(X, dtype=float) * length
    return attention(Xc, Xc, Xc, scale=NO_SCALING), attention(Xc, Xc, Xc, scale=SQRT_D_K)


def scale_comparison_snapshot(length: float, tokens: Sequence[str], raw: AttentionResult, scaled: AttentionResult) -> tuple[str, str]:
    """The two weight tables and the text summary."""
    toks = list(tokens)
    text = (
        f"Vectors stretched by {length:.2f}: the scores grow by {length**2:.4f}. "
        f"Largest weight per row, unscaled: {', '.join(fmt(float(v)) for v in raw.weights.max(axis=1))}; "
        f"scaled: {', '.join(fmt(float(v)) for v in scaled.weights.max(axis=1))}."
    )
    tables = flex(
        table_html(raw.weights, toks, toks, name="unscaled", title="weights without scaling", vmin=0.0, vmax=1.0, row_sums=True),
        table_html(
            scaled.weights,
            toks,
            toks,
            name="scaled",
            title=f"weights, scores divided by \u221a2 = {scaled.divisor:.4f}",
            vmin=0.0,
            vmax=1.0,
            row_sums=True,
        ),  # fmt: skip
    )
    summary = "\n".join(
        [text, "weights without scaling:", matrix_text(raw.weights, toks), "weights with scaling:", matrix_text(scaled.weights, toks)]
    )
    return facts(text) + tables, summary


class ScaleComparisonExplorer(Explorer, kind="scale_comparison", module="scale_comparison.js"):
    """Chapter 7: the running example stretched by a factor, unscaled against scaled weights."""

    STATE = ("length",)
    SETTABLE = ("title", "X", "tokens", "length")

    X = matrix_trait()
    tokens = List(Unicode()).tag(sync=True)
    length_range = Dict().tag(sync=True)
    length = checked_trait(1.0)

    def __init__(self) -> None:
        super().__init__(
            title="Unscaled against scaled, as the vectors grow",
            X=running_example(),
            tokens=list(TOKENS),
            length_range=dict(LENGTH_RANGE),
            length=1.0,
        )

    def _check_length(self, value: Any, now: Callable[[str], Any]) -> float:
        return check_length(value)

    def _check_X(self, value: Any, now: Callable[[str], Any]) -> np.ndarray:
        return same_shape("X", check_X(value), self.X)

    def _check_tokens(self, value: Any, now: Callable[[str], Any]) -> list[str]:
        return check_tokens(value, self.X.shape[0])

    def results(self) -> tuple[AttentionResult, AttentionResult]:
        """Attention of ``length * X`` with itself (W = I): without scaling, and divided by sqrt(d_k)."""
        return self._results

    @property
    def result(self) -> tuple[AttentionResult, AttentionResult]:
        """The same as ``results``."""
        return self._results

    def _update(self) -> str:
        self._results = stretched_attention(self.X, self.length)
        return ""

    def _snapshot(self) -> tuple[str, str]:
        return scale_comparison_snapshot(self.length, self.tokens, *self._results)

    @classmethod
    def golden_cases(cls) -> list[dict[str, Any]]:
        """``scaleComparisonViews`` of the running example at every step of the length slider."""
        X = running_example()
        lengths = np.arange(LENGTH_RANGE["min"], LENGTH_RANGE["max"] + 1e-9, LENGTH_RANGE["step"]).tolist()
        cases = []
        for c in lengths:
            raw, scaled = stretched_attention(X, c)
            expected = {"raw": {"weights": raw.weights.tolist()}, "scaled": {"weights": scaled.weights.tolist()}}
            cases.append({"fn": "scaleComparisonViews", "args": [X.tolist(), c], "expected": expected})
        return cases


@factory
def scale_comparison_explorer() -> ScaleComparisonExplorer:
    """Chapter 7: stretch the running example and compare unscaled with scaled weights.

    Examples
    --------
    >>> raw, scaled = scale_comparison_explorer().results()
    >>> raw.weights.round(4)[0].tolist(), scaled.weights.round(4)[0].tolist()
    ([0.5065, 0.1863, 0.3072], [0.4555, 0.2246, 0.3199])
    """
    return ScaleComparisonExplorer()

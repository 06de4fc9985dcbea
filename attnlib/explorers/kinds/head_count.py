"""The head count explorer (chapter 8): a seeded 4-token example of width 8 split across 1, 2, 4 or 8 heads.

Front end: ``static/head_count.js``.

Examples
--------
>>> ex = head_count_explorer()
>>> ex.n_heads = 4
>>> ex.results()[1].shape
(4, 4, 4)
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
from traitlets import Dict, Int, List, Unicode

from ..._validate import as_seed
from ...core import attention_parameter_count, multi_head_attention
from ..base import Explorer, checked_trait, matrix_trait
from ..registry import factory
from ..settings import check_choice, check_seed, check_tokens, float_matrix, frozen, same_shape
from ..snapshot import facts, flex, matrix_text, table_html

__all__ = ["D_MODEL", "HEAD_CHOICES", "TOKENS", "HeadCountExplorer", "head_count_data", "head_count_explorer", "head_count_result"]

HEAD_CHOICES = (1, 2, 4, 8)
D_MODEL = 8
TOKENS = ("t1", "t2", "t3", "t4")
_DATA = ("X", "W_Q", "W_K", "W_V", "W_O")


def head_count_data(seed: int = 0) -> dict[str, Any]:
    """The seeded example: X (4 x 8), W_Q, W_K, W_V (scaled by 1/sqrt(8)), W_O = I, and the parameter counts.

    Raises
    ------
    ValueError
        ``seed`` is not a seed by the seed rule (a non-negative integer or a ``numpy.random.Generator``). The message
        names the argument.

    Examples
    --------
    >>> d = head_count_data()
    >>> d["X"].shape, d["param_counts"]["2"]
    ((4, 8), 256)
    """
    rng = np.random.default_rng(as_seed("seed", seed))
    X = rng.standard_normal((len(TOKENS), D_MODEL))
    W_Q, W_K, W_V = (rng.standard_normal((D_MODEL, D_MODEL)) / math.sqrt(D_MODEL) for _ in range(3))
    return {
        "X": X,
        "W_Q": W_Q,
        "W_K": W_K,
        "W_V": W_V,
        "W_O": np.eye(D_MODEL),
        "param_counts": {str(h): attention_parameter_count(D_MODEL, h) for h in HEAD_CHOICES},
    }


def head_count_result(data: dict[str, Any], n_heads: int) -> tuple[np.ndarray, np.ndarray]:
    """``attnlib.multi_head_attention`` of the example with ``n_heads`` heads: output and per-head weights.

    Raises
    ------
    ValueError
        Never for the settings its explorer has checked: this is the explorer's plumbing, which checks nothing itself
        (call it with other input and numpy's own errors may come). Use the explorer's settings instead.
    """
    return multi_head_attention(data["X"], data["X"], data["W_Q"], data["W_K"], data["W_V"], data["W_O"], n_heads=n_heads)


def head_count_snapshot(n_heads: int, params: int, tokens: Sequence[str], weights: np.ndarray) -> tuple[str, str]:
    """One weight table per head and the text summary."""
    d_head = D_MODEL // n_heads
    toks = list(tokens)
    tables = flex(
        *[
            table_html(
                weights[r],
                toks,
                toks,
                name=f"head{r}",
                title=f"head {r + 1}: weights (columns {r * d_head + 1}\u2013{(r + 1) * d_head})",
                vmin=0.0,
                vmax=1.0,
            )  # fmt: skip
            for r in range(n_heads)
        ]
    )
    text = (
        f"Heads: {n_heads}, each of width d_head = {D_MODEL} / {n_heads} = {d_head} and with its own row of weights for each token. "
        f"Parameters of the block: 4 \u00b7 {D_MODEL}\u00b2 = {params}, whatever the number of heads."
    )
    summary = "\n".join([text] + [f"head {r + 1} weights:\n" + matrix_text(weights[r], toks) for r in range(n_heads)])
    return facts(text) + tables, summary


class HeadCountExplorer(Explorer, kind="head_count", module="head_count.js"):
    """Chapter 8: four tokens of width 8 split across 1, 2, 4 or 8 heads; the parameter count stays 4 d_model^2.

    Raises
    ------
    ValueError
        ``seed`` is not a seed by the seed rule (a non-negative integer or a ``numpy.random.Generator``). The error is
        an ``InvalidSetting`` (a ``ValueError``) whose message starts with the argument's name.
    """

    STATE = ("n_heads",)
    SETTABLE = ("title", "tokens", "X", "W_Q", "W_K", "W_V", "W_O", "n_heads")
    D_MODEL = D_MODEL
    TOKENS = TOKENS

    tokens = List(Unicode()).tag(sync=True)
    X = matrix_trait()
    W_Q = matrix_trait()
    W_K = matrix_trait()
    W_V = matrix_trait()
    W_O = matrix_trait()
    head_choices = List(Int()).tag(sync=True)
    param_counts = Dict().tag(sync=True)
    n_heads = checked_trait(2)

    def __init__(self, seed: int = 0) -> None:
        data = head_count_data(self._checked(check_seed, "seed", seed))
        super().__init__(
            title="Number of heads",
            tokens=list(TOKENS),
            head_choices=list(HEAD_CHOICES),
            n_heads=2,
            **{k: frozen(v) if isinstance(v, np.ndarray) else v for k, v in data.items()},
        )

    def _check_n_heads(self, value: Any, now: Callable[[str], Any]) -> int:
        return check_choice("n_heads", value, self.head_choices)

    def _check_tokens(self, value: Any, now: Callable[[str], Any]) -> list[str]:
        return check_tokens(value, self.X.shape[0])

    def _data_matrix(self, name: str, value: Any) -> np.ndarray:
        old = getattr(self, name)
        return same_shape(name, frozen(float_matrix(name, value, f"a finite real matrix of shape {old.shape}")), old)

    def _check_X(self, value: Any, now: Callable[[str], Any]) -> np.ndarray:
        return self._data_matrix("X", value)

    def _check_W_Q(self, value: Any, now: Callable[[str], Any]) -> np.ndarray:
        return self._data_matrix("W_Q", value)

    def _check_W_K(self, value: Any, now: Callable[[str], Any]) -> np.ndarray:
        return self._data_matrix("W_K", value)

    def _check_W_V(self, value: Any, now: Callable[[str], Any]) -> np.ndarray:
        return self._data_matrix("W_V", value)

    def _check_W_O(self, value: Any, now: Callable[[str], Any]) -> np.ndarray:
        return self._data_matrix("W_O", value)

    def results(self) -> tuple[np.ndarray, np.ndarray]:
        """``attnlib.multi_head_attention`` of the seeded example: output and per-head weights."""
        return self._results

    @property
    def result(self) -> tuple[np.ndarray, np.ndarray]:
        """The same as ``results``."""
        return self._results

    def _update(self) -> str:
        self._results = head_count_result({k: getattr(self, k) for k in _DATA}, self.n_heads)
        return ""

    def _snapshot(self) -> tuple[str, str]:
        return head_count_snapshot(self.n_heads, int(self.param_counts[str(self.n_heads)]), self.tokens, self._results[1])

    @classmethod
    def golden_cases(cls) -> list[dict[str, Any]]:
        """``multiHead`` of the seeded example for every number of heads."""
        data = head_count_data()
        plain = [np.asarray(data[k]).tolist() for k in _DATA]
        cases = []
        for h in HEAD_CHOICES:
            output, weights = head_count_result(data, h)
            cases.append({"fn": "multiHead", "args": [*plain, h], "expected": {"output": output.tolist(), "weights": weights.tolist()}})
        return cases


@factory
def head_count_explorer() -> HeadCountExplorer:
    """Chapter 8: choose 1, 2, 4 or 8 heads for a seeded 4-token example with d_model = 8.

    Examples
    --------
    >>> ex = head_count_explorer()
    >>> ex.n_heads = 4
    >>> ex.results()[1].shape
    (4, 4, 4)
    """
    return HeadCountExplorer()

"""The scaling explorer (chapter 5): a d_k slider over 1 ... 1024 for seeded random queries and keys.

The samples and spreads of every d_k are computed once by attnlib
(:func:`scaling_samples`), seeded; the page divides the scores of the chosen d_k by
sqrt(d_k) and takes both softmaxes. Front end: ``static/scaling.js``.

Examples
--------
>>> ex = scaling_explorer()
>>> ex.d_k = 512
>>> raw, scaled = ex.spread()
>>> 18 < raw < 27 and 0.8 < scaled < 1.2
True
"""

from __future__ import annotations

import copy
import functools
import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
from traitlets import Dict, Int, List

from ..._validate import as_seed
from ...core import NO_SCALING, SQRT_D_K, scale_divisor, scaled_scores, softmax
from ..base import Explorer, checked_trait
from ..registry import factory
from ..settings import check_choice, check_seed
from ..snapshot import facts, flex, fmt, table_html

__all__ = ["DK_CHOICES", "N_KEYS", "N_SAMPLES", "ScalingExplorer", "query_keys", "scaling_explorer", "scaling_samples", "scaling_view"]

#: The d_k choices, keys per query, and samples per side for the spread.
DK_CHOICES = (1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024)
N_KEYS = 6
N_SAMPLES = 200


def query_keys(seed: int, d_k: int) -> tuple[np.ndarray, np.ndarray]:
    """One query ``(1, d_k)`` and ``N_KEYS`` keys with standard-normal entries, seeded by ``(seed, d_k)``.

    Raises
    ------
    ValueError
        Never for the settings its explorer has checked: this is the explorer's plumbing, which checks nothing itself
        (call it with other input and numpy's own errors may come). Use the explorer's settings instead.
    """
    rng = np.random.default_rng([seed, d_k])
    return rng.standard_normal((1, d_k)), rng.standard_normal((N_KEYS, d_k))


def scaling_samples(seed: int = 0) -> dict[str, dict[str, Any]]:
    """Per d_k: the scores of one seeded query with six seeded keys, and the spreads.

    ``spread_raw`` and ``spread_scaled`` are the standard deviations of
    ``N_SAMPLES**2`` scores of seeded standard-normal vectors,
    unscaled and divided by sqrt(d_k).

    Raises
    ------
    ValueError
        ``seed`` is not a seed by the seed rule (a non-negative integer or a ``numpy.random.Generator``). The message
        names the argument.

    Examples
    --------
    >>> s = scaling_samples()["512"]
    >>> len(s["raw_scores"]), 18 < s["spread_raw"] < 27, 0.8 < s["spread_scaled"] < 1.2
    (6, True, True)
    """
    return copy.deepcopy(_scaling_samples(as_seed("seed", seed)))  # checked first: the cache is keyed by equality


@functools.cache
def _scaling_samples(seed: int) -> dict[str, dict[str, Any]]:
    # drawn once per seed (about a second for all eleven d_k); callers get a copy
    out = {}
    for d_k in DK_CHOICES:
        q, k = query_keys(seed, d_k)
        rng = np.random.default_rng([seed, d_k, 1])
        qs = rng.standard_normal((N_SAMPLES, d_k))
        ks = rng.standard_normal((N_SAMPLES, d_k))
        out[str(d_k)] = {
            "raw_scores": [float(x) for x in scaled_scores(q, k, scale=NO_SCALING)[0]],
            "spread_raw": float(scaled_scores(qs, ks, scale=NO_SCALING).std()),
            "spread_scaled": float(scaled_scores(qs, ks, scale=SQRT_D_K).std()),
        }
    return out


def scaling_view(raw_scores: Sequence[float], d_k: int) -> dict[str, np.ndarray]:
    """Raw and scaled scores ``(1, n_keys)`` of one query and their softmax weights.

    Raises
    ------
    ValueError
        Never for the settings its explorer has checked: this is the explorer's plumbing, which checks nothing itself
        (call it with other input and numpy's own errors may come). Use the explorer's settings instead.

    Examples
    --------
    >>> scaling_view([2.0, 0.0], 4)["scaled"].tolist()
    [[1.0, 0.0]]
    """
    raw = np.asarray([raw_scores], dtype=float)
    scaled = raw / scale_divisor(d_k)
    return {"raw": raw, "scaled": scaled, "raw_weights": softmax(raw), "scaled_weights": softmax(scaled)}


def scaling_snapshot(d_k: int, view: dict[str, np.ndarray], spread: tuple[float, float]) -> tuple[str, str]:
    """The scaling explorer's tables and its text summary."""
    raw, scaled, w_raw, w_scaled = view["raw"], view["scaled"], view["raw_weights"], view["scaled_weights"]
    keys = [f"k{j + 1}" for j in range(raw.shape[1])]
    text = (
        f"d_k = {d_k}. Spread (standard deviation) of {N_SAMPLES**2} scores of random vectors: "
        f"{spread[0]:.4f} unscaled (about \u221ad_k = {math.sqrt(d_k):.4f}), {spread[1]:.4f} after dividing by \u221ad_k. "
        f"Largest weight of the query: {w_raw.max():.4f} unscaled, {w_scaled.max():.4f} scaled."
    )
    tables = flex(
        table_html(
            np.vstack([raw, scaled]), ["q\u00b7k", "q\u00b7k/\u221ad_k"], keys, name="scores", title="scores of one query against six keys"
        ),
        table_html(
            np.vstack([w_raw, w_scaled]),
            ["unscaled", "scaled"],
            keys,
            name="weights",
            title="softmax weights",
            vmin=0.0,
            vmax=1.0,
            row_sums=True,
        ),  # fmt: skip
    )
    summary = "\n".join(
        [
            text,
            "scores (unscaled): " + "  ".join(fmt(float(v)) for v in raw[0]),
            "scores (scaled):   " + "  ".join(fmt(float(v)) for v in scaled[0]),
            "weights (unscaled): " + "  ".join(fmt(float(v)) for v in w_raw[0]),
            "weights (scaled):   " + "  ".join(fmt(float(v)) for v in w_scaled[0]),
        ]
    )
    return facts(text) + tables, summary


class ScalingExplorer(Explorer, kind="scaling", module="scaling.js"):
    """Chapter 5: seeded random q and k of dimension d_k; the spread of q·k grows like sqrt(d_k).

    Raises
    ------
    ValueError
        ``seed`` is not a seed by the seed rule (a non-negative integer or a ``numpy.random.Generator``). The error is
        an ``InvalidSetting`` (a ``ValueError``) whose message starts with the argument's name.
    """

    STATE = ("dk",)
    SETTABLE = ("title", "dk")
    N_KEYS = N_KEYS
    N_SAMPLES = N_SAMPLES

    dk_choices = List(Int()).tag(sync=True)
    samples = Dict().tag(sync=True)
    dk = checked_trait(2)

    def __init__(self, seed: int = 0) -> None:
        seed = self.seed = self._checked(check_seed, "seed", seed)
        super().__init__(
            title="Scaling: the dimension d_k of queries and keys", dk_choices=list(DK_CHOICES), samples=scaling_samples(seed), dk=2
        )

    def _check_dk(self, value: Any, now: Callable[[str], Any]) -> int:
        return check_choice("d_k", value, self.dk_choices)

    @property
    def d_k(self) -> int:
        """The dimension of the seeded queries and keys."""
        return int(self.dk)

    @d_k.setter
    def d_k(self, value: int) -> None:
        self._apply({"dk": value})

    def sample(self) -> tuple[np.ndarray, np.ndarray]:
        """One query ``(1, d_k)`` and ``N_KEYS`` keys with standard-normal entries, seeded by ``(seed, d_k)``."""
        return query_keys(self.seed, self.d_k)

    def spread(self) -> tuple[float, float]:
        """Standard deviation of ``N_SAMPLES**2`` seeded scores ``q·k``: unscaled, and divided by sqrt(d_k)."""
        s = self.samples[str(self.d_k)]
        return s["spread_raw"], s["spread_scaled"]

    @property
    def result(self) -> dict[str, np.ndarray]:
        """Scores of the seeded query against its keys (``raw``, ``scaled``) and their softmax weights."""
        return self._view

    def _update(self) -> str:
        self._view = scaling_view(self.samples[str(self.d_k)]["raw_scores"], self.d_k)
        return ""

    def _snapshot(self) -> tuple[str, str]:
        return scaling_snapshot(self.d_k, self._view, self.spread())

    @classmethod
    def golden_cases(cls) -> list[dict[str, Any]]:
        """``scalingViews`` for every d_k of the seeded samples."""
        cases = []
        for dk, s in scaling_samples().items():
            ref = scaling_view(s["raw_scores"], int(dk))
            expected = {"scaled": ref["scaled"][0].tolist(), "weightsRaw": ref["raw_weights"][0].tolist(),
                        "weightsScaled": ref["scaled_weights"][0].tolist()}  # fmt: skip
            cases.append({"fn": "scalingViews", "args": [s["raw_scores"], int(dk)], "expected": expected})
        return cases


@factory
def scaling_explorer() -> ScalingExplorer:
    """Chapter 5: a d_k slider over 1 ... 1024 for seeded random queries and keys.

    Examples
    --------
    >>> ex = scaling_explorer()
    >>> ex.d_k = 512
    >>> raw, scaled = ex.spread()
    >>> 18 < raw < 27 and 0.8 < scaled < 1.2
    True
    """
    return ScalingExplorer()

"""Live explorers: move W_Q, W_K, W_V, d_k or the mask and watch attention respond.

Every explorer is an anywidget model (``widget``) whose
state is checked in Python (``state``) and whose
numbers come from :mod:`attnlib.core`. Its front end (``static/*.js``,
composed by ``frontend``) runs the same in JupyterLab,
Binder, JupyterLite and the static web book; a page without JavaScript shows
the static snapshot (``snapshot``).

Examples
--------
>>> ex = attention_explorer()
>>> ex.result.weights.round(4)[0].tolist()
[0.4555, 0.2246, 0.3199]
>>> ex.W_V = [[1, 0], [1, 1]]
>>> ex.result.output.round(4)[2].tolist()
[1.0, 0.5]
>>> ex.mask = "causal"
>>> ex.result.weights.round(4)[1].tolist()
[0.3302, 0.6698, 0.0]
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from .snapshot import CSS, SNAPSHOT_NOTE, matrix_html
from .state import MAX_D_MODEL, MAX_TOKENS, SettingError, reference_views
from .widget import (
    AttentionExplorer,
    BlockMemoryExplorer,
    HeadCountExplorer,
    InvalidSetting,
    PositionalExplorer,
    ScaleComparisonExplorer,
    ScalingExplorer,
    TrainingExplorer,
)

__all__ = [
    "AttentionExplorer",
    "ScalingExplorer",
    "ScaleComparisonExplorer",
    "HeadCountExplorer",
    "PositionalExplorer",
    "TrainingExplorer",
    "BlockMemoryExplorer",
    "InvalidSetting",
    "SettingError",
    "attention_explorer",
    "value_projection_explorer",
    "mask_explorer",
    "scaling_explorer",
    "scale_comparison_explorer",
    "head_count_explorer",
    "positional_explorer",
    "training_explorer",
    "block_memory_explorer",
    "reference_views",
    "matrix_html",
    "SNAPSHOT_NOTE",
    "CSS",
    "MAX_TOKENS",
    "MAX_D_MODEL",
]


def attention_explorer(X: Any = None, tokens: Sequence[str] | None = None) -> AttentionExplorer:
    """The full explorer: sliders for ``W_Q``, ``W_K``, ``W_V``, presets, a d_k control and a mask.

    Parameters
    ----------
    X:
        Up to 8 token vectors of width up to 4 as rows (default: the running example).
    tokens:
        Their labels (default ``x1, x2, ...``).

    Examples
    --------
    >>> ex = attention_explorer()
    >>> ex.set(d_k=None).result.weights.round(4)[0].tolist()
    [0.5065, 0.1863, 0.3072]
    """
    return AttentionExplorer(X, tokens)


def value_projection_explorer() -> AttentionExplorer:
    """Chapter 3: only ``W_V`` moves. The values and outputs change; the weights never do.

    Examples
    --------
    >>> ex = value_projection_explorer()
    >>> before = ex.result.weights.copy()
    >>> ex.W_V = [[1, 0], [1, 1]]
    >>> ex.result.V.tolist(), bool((ex.result.weights == before).all())
    ([[1.0, 0.0], [1.0, 1.0], [1.0, 0.5]], True)
    """
    return AttentionExplorer(controls=("W_V", "presets"), views=("V", "weights", "output", "plane"), title="Values move, weights stay")


def mask_explorer() -> AttentionExplorer:
    """Chapter 9: the mask is the only control. Tick which key each query may attend to.

    Examples
    --------
    >>> ex = mask_explorer()
    >>> ex.mask = "causal"
    >>> ex.result.weights.round(4)[0].tolist()
    [1.0, 0.0, 0.0]
    """
    return AttentionExplorer(controls=("mask",), views=("scaled", "weights", "output"), title="Masking")


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


def scale_comparison_explorer() -> ScaleComparisonExplorer:
    """Chapter 7: stretch the running example and compare unscaled with scaled weights.

    Examples
    --------
    >>> raw, scaled = scale_comparison_explorer().results()
    >>> raw.weights.round(4)[0].tolist(), scaled.weights.round(4)[0].tolist()
    ([0.5065, 0.1863, 0.3072], [0.4555, 0.2246, 0.3199])
    """
    return ScaleComparisonExplorer()


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


def positional_explorer() -> PositionalExplorer:
    """Chapter 11: move the position t and the width d_model of the sinusoidal encoding.

    Examples
    --------
    >>> ex = positional_explorer()
    >>> ex.table().round(4)[:3].tolist()
    [[0.0, 1.0], [0.8415, 0.5403], [0.9093, -0.4161]]
    """
    return PositionalExplorer()


def training_explorer() -> TrainingExplorer:
    """Chapter 14: a slider over the recorded steps of the previous-token training run.

    Examples
    --------
    >>> ex = training_explorer()
    >>> ex.step = 300
    >>> round(ex.result["previous"], 3), ex.result["weights"].shape
    (0.969, (6, 6))
    """
    return TrainingExplorer()

def block_memory_explorer() -> BlockMemoryExplorer:
    """Chapter 15: choose n, the block size, the number format and a causal mask; memory of dense against blocked.

    Examples
    --------
    >>> ex = block_memory_explorer()
    >>> ex.result["dense"], ex.result["blocked"]
    ('64.0 MiB', '6.0 MiB')
    >>> ex.n = 131072
    >>> ex.result["dense"], ex.block_at(2).keys
    ('64.0 GiB', (128, 256))
    """
    return BlockMemoryExplorer()

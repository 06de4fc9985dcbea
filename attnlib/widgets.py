"""The book's explorers under their first name: ``attnlib.widgets`` re-exports :mod:`attnlib.explorers`.

Chapters and exercises call ``attnlib.widgets.attention_explorer()`` and
``from attnlib.widgets import mask_explorer``; both keep working. New code
can import from :mod:`attnlib.explorers`.

Examples
--------
>>> from attnlib import explorers
>>> attention_explorer is explorers.attention_explorer
True
"""

from __future__ import annotations

from .explorers import (
    CSS,
    MAX_D_MODEL,
    MAX_TOKENS,
    SNAPSHOT_NOTE,
    AttentionExplorer,
    HeadCountExplorer,
    InvalidSetting,
    PositionalExplorer,
    ScaleComparisonExplorer,
    ScalingExplorer,
    SettingError,
    attention_explorer,
    head_count_explorer,
    mask_explorer,
    matrix_html,
    positional_explorer,
    scale_comparison_explorer,
    scaling_explorer,
    value_projection_explorer,
)

__all__ = [
    "AttentionExplorer",
    "ScalingExplorer",
    "ScaleComparisonExplorer",
    "HeadCountExplorer",
    "PositionalExplorer",
    "InvalidSetting",
    "SettingError",
    "attention_explorer",
    "value_projection_explorer",
    "mask_explorer",
    "scaling_explorer",
    "scale_comparison_explorer",
    "head_count_explorer",
    "positional_explorer",
    "matrix_html",
    "SNAPSHOT_NOTE",
    "CSS",
    "MAX_TOKENS",
    "MAX_D_MODEL",
]

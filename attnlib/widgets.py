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

# ruff: noqa: F401
from __future__ import annotations

# re-exports without an ``__all__``, so the API page documents each explorer once, in attnlib.explorers
from .explorers import (
    CSS,
    MAX_D_MODEL,
    MAX_TOKENS,
    SNAPSHOT_NOTE,
    AttentionExplorer,
    BlockMemoryExplorer,
    HeadCountExplorer,
    InvalidSetting,
    PositionalExplorer,
    ScaleComparisonExplorer,
    ScalingExplorer,
    SettingError,
    TrainingExplorer,
    attention_explorer,
    block_memory_explorer,
    head_count_explorer,
    mask_explorer,
    matrix_html,
    positional_explorer,
    scale_comparison_explorer,
    scaling_explorer,
    training_explorer,
    value_projection_explorer,
)

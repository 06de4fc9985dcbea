"""Exercises that send the reader to an explorer ask only for settings that explorer offers.

Each test reads the explorer call from the exercise's own cell, builds that
explorer, makes the setting the exercise asks for and checks the effect the
model answer describes.
"""

from __future__ import annotations

import nbformat
import numpy as np
from support.paths import CHAPTERS

import attnlib
from attnlib import explorers


def exercise_explorer(chapter: str, cell_id: str):
    """Build the explorer the exercise cell ``cell_id`` of ``chapter`` creates."""
    (path,) = CHAPTERS.glob(f"{chapter}-*.ipynb")
    cell = next(c for c in nbformat.read(path, as_version=4).cells if c.get("id") == cell_id)
    call = cell.source.strip()
    assert call.startswith("attnlib.explorers.") and call.endswith("()"), f"unexpected explorer cell: {call!r}"
    return getattr(explorers, call.removeprefix("attnlib.explorers.").removesuffix("()"))()


def test_exercise_6_3_triples_W_Q_within_the_sliders():
    explorer = exercise_explorer("06", "ch06-exercise-10")
    before = explorer.result.weights[0].copy()
    explorer.set(W_Q=3 * np.eye(2))  # the exercise: both diagonal sliders of W_Q at 3
    after = explorer.result.weights[0]
    assert np.allclose(explorer.result.weights, attnlib.attention(3 * explorer.X, explorer.X, explorer.X).weights)
    assert after.argmax() == before.argmax() == 0, "token 1 keeps the largest weight"
    assert after.max() > before.max(), "the row gets sharper"


def test_exercise_7_2_has_a_d_k_of_128_to_try():
    explorer = exercise_explorer("07", "ch07-exercise-07")
    assert 128 in explorer.dk_choices, "the exercise asks for d_k = 128"
    explorer.d_k = 2
    q, k = explorer.sample()
    soft_unscaled = attnlib.softmax(attnlib.scaled_scores(q, k, scale=False)).max()
    explorer.d_k = 128
    q, k = explorer.sample()
    assert q.shape == (1, 128) and k.shape[1] == 128, "d_k is the true length of the vectors there"
    unscaled = attnlib.softmax(attnlib.scaled_scores(q, k, scale=False)).max()
    scaled = attnlib.softmax(attnlib.scaled_scores(q, k)).max()
    spread_raw, spread_scaled = explorer.spread()
    assert unscaled > 0.9 > soft_unscaled, "at d_k = 128 the unscaled row is close to one-hot"
    assert scaled < 0.8, "the scaled row stays soft"
    assert 9 < spread_raw < 14 and 0.8 < spread_scaled < 1.2, "spread about sqrt(128) unscaled, about 1 scaled"

"""The front page's opening picture, ``_static/og-image.png``, is what ``tools/og_image.py`` draws from attnlib.

The picture shows the running example's attention weights (identity projections, scores divided by
sqrt(2), two decimals). So that its numbers come from code, like every other number of the book, the
committed PNG must equal, pixel for pixel, what the tool draws now; and the numbers written in its
cells must be attnlib's weights rounded to two decimals, with the rows and columns labelled.
After a change to the running example or to the heatmap: ``.venv/bin/python tools/og_image.py``.
"""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")
import matplotlib.image as mpimg  # noqa: E402
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
from support.paths import ROOT  # noqa: E402

import attnlib  # noqa: E402
from tools import og_image  # noqa: E402

FIX = "run `.venv/bin/python tools/og_image.py` to draw it again"


def test_cells_hold_the_running_examples_weights_to_two_decimals():
    X = attnlib.running_example()
    expected = attnlib.attention(X @ np.eye(2), X @ np.eye(2), X @ np.eye(2), scale=np.sqrt(2)).weights
    fig = og_image.figure()
    try:
        ax = fig.axes[0]
        cells = [float(t.get_text()) for t in ax.texts]
        rows = [t.get_text() for t in ax.get_yticklabels()]
        cols = [t.get_text() for t in ax.get_xticklabels()]
        labels = (ax.get_ylabel(), ax.get_xlabel())
    finally:
        plt.close(fig)
    assert cells == [round(float(w), 2) for w in expected.ravel()]
    assert cells[:3] == [0.46, 0.22, 0.32] and cells[6:] == [0.33, 0.33, 0.33]
    assert rows == cols == ["$x_1$", "$x_2$", "$x_3$"]
    assert labels == ("query", "key")


def test_committed_picture_is_what_the_tool_draws(tmp_path):
    committed = ROOT / "_static" / "og-image.png"
    drawn = og_image.write(tmp_path / "og-image.png")
    old, new = mpimg.imread(committed), mpimg.imread(drawn)
    assert old.shape == new.shape == (630, 1200, 4), f"the picture must be 1200 x 630; {FIX}"
    differing = int(np.any(old != new, axis=-1).sum())
    assert differing == 0, f"{differing} pixels of _static/og-image.png differ from what the tool draws; {FIX}"
